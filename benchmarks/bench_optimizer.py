"""Benchmark of the fine-tuning step's optimiser (a script, not a timed test).

Trains one base model for ``--steps`` steps three times from the same
start, on the same seeded batches of real texts, with torch's three AdamW
paths: the per-tensor loop (torch's default on a CPU, what the training
loop runs), the multi-tensor ``foreach`` path and the ``fused`` kernel. It prints the
mean forward+backward and optimiser milliseconds per step (the first two
steps left out as warm-up) and the largest weight difference of each path
from the per-tensor loop after the last step. The step is the training
loop's: the recipe's parameter groups, bf16 autocast unless ``--fp32``,
the word embeddings frozen with ``--freeze`` (the embedded profile's
``freeze_embeddings``).

Usage (from the project root, after the base model's stage has run):
    python benchmarks/bench_optimizer.py [--base models/base/multilingual-e5-small]
        [--texts data/processed/hateval2019_es/xlmt.parquet] [--steps 25] [--freeze] [--fp32]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import polars as pl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from hatecheck_pipeline.models.recipe import Recipe  # noqa: E402
from hatecheck_pipeline.models.runtime import collate  # noqa: E402
from hatecheck_pipeline.models.trainable import load_for_training, param_groups  # noqa: E402

PATHS = {"per-tensor loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def run(base: str, enc: list[list[int]], pad: int, kind: str, steps: int, batch: int, freeze: bool, bf16: bool):
    model = load_for_training(base, 0.1, 0, freeze_embeddings=freeze)
    model.train()
    recipe = Recipe("none", lr=1e-4, weight_decay=0.01, dropout=0.1, batch_size=batch, epochs=1)
    opt = torch.optim.AdamW(param_groups(model, recipe), lr=recipe.lr, **PATHS[kind])
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(0)  # dropout
    fwd = upd = 0.0
    for step in range(steps):
        idx = torch.randint(len(enc), (batch,), generator=gen).tolist()
        batch_ids = collate([enc[i] for i in idx], pad, torch.device("cpu"))  # the training loop's dynamic padding
        y = torch.tensor([i % 2 for i in idx])
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(**batch_ids).logits
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t1 = time.perf_counter()
        opt.step()
        t2 = time.perf_counter()
        if step >= 2:
            fwd, upd = fwd + t1 - t0, upd + t2 - t1
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return model, fwd / (steps - 2) * 1000, upd / (steps - 2) * 1000, trained


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="models/base/multilingual-e5-small")
    ap.add_argument("--texts", default="data/processed/hateval2019_es/xlmt.parquet")
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=96)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--freeze", action="store_true", help="word embeddings frozen (freeze_embeddings)")
    ap.add_argument("--fp32", action="store_true", help="no bf16 autocast")
    args = ap.parse_args()
    if args.steps < 3:
        raise SystemExit("--steps must be at least 3 (two warm-up steps are left out)")
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.base)
    texts = pl.read_parquet(args.texts, columns=["text"])["text"].to_list()[: args.batch * 40]
    enc = tok(texts, truncation=True, max_length=args.max_length)["input_ids"]
    print(
        f"base: {args.base}; texts: {args.texts} ({len(texts)}); batch {args.batch}, max_length {args.max_length}, "
        f"threads {args.threads}, {'fp32' if args.fp32 else 'bf16 autocast'}, word embeddings {'frozen' if args.freeze else 'trained'}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    models = {}
    for kind in PATHS:
        models[kind], f, o, n = run(args.base, enc, tok.pad_token_id, kind, args.steps, args.batch, args.freeze, not args.fp32)
        print(
            f"{kind:16s} forward+backward {f:8.1f} ms/step   optimiser {o:7.1f} ms/step   ({n / 1e6:.1f}M trained parameters)", flush=True
        )
    ref = dict(models["per-tensor loop"].named_parameters())
    for kind in ("foreach", "fused"):
        diff = {n: float((p.detach() - ref[n].detach()).abs().max()) for n, p in models[kind].named_parameters()}
        worst = max(diff, key=diff.get)
        print(f"after {args.steps} steps, largest |weight({kind}) - weight(per-tensor loop)|: {diff[worst]:.3e} ({worst})")


if __name__ == "__main__":
    main()
