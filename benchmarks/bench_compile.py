"""Benchmark of ``torch.compile`` for the classifiers (a script, not a timed test).

Two measurements, each eager against ``torch.compile(model, dynamic=True)``
(the batch width changes from batch to batch, so shapes are symbolic rather
than compiled once per width), in alternating rounds after a first compiled
round that pays the compilation:

- prediction: the predict stage's batched forward passes
  (``models/runtime.forward_logits``: length-sorted batches, dynamic
  padding, fp32) over ``--cases`` cases of a suite table; prints the
  seconds per round, the largest logit difference and the share of equal
  labels;
- training: ``--steps`` steps of the training loop's step (the recipe's
  parameter groups, AdamW, fp32, word embeddings frozen as the embedded
  profile's ``freeze_embeddings``) on length-bucketed batches of a training
  table (``models/runtime.bucketed_batches``), each variant from the same
  start; prints the seconds per round.

Usage (from the project root of a built workspace):
    python benchmarks/bench_compile.py [--model models/XTC/final] [--cases data/processed/mhc/xlmt.parquet]
        [--base models/base/multilingual-e5-small] [--texts data/processed/hateval2019_es/xlmt.parquet]
        [--rounds 3] [--backend inductor]
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
from hatecheck_pipeline.models.runtime import bucketed_batches, collate, encode, forward_logits  # noqa: E402
from hatecheck_pipeline.models.trainable import load_for_training, param_groups  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def prediction(model, seqs: list[list[int]], pad: int, batch: int, rounds: int, backend: str):
    """(compile round s, [(eager s, compiled s)], largest |logit diff|, equal label share)."""
    compiled = torch.compile(model, dynamic=True, backend=backend)
    first, _ = timed(lambda: forward_logits(compiled, seqs, pad, batch))
    pairs, diff, equal = [], 0.0, 1.0
    for _ in range(rounds):
        e, ref = timed(lambda: forward_logits(model, seqs, pad, batch))
        c, out = timed(lambda: forward_logits(compiled, seqs, pad, batch))
        pairs.append((e, c))
        diff = max(diff, float((out - ref).abs().max()))
        equal = min(equal, float((out.argmax(1) == ref.argmax(1)).float().mean()))
    return first, pairs, diff, equal


def trainer(base: str, batches: list[list[list[int]]], pad: int, compile_backend: str | None):
    """A function running one round of training steps over ``batches`` (the
    model from ``base``, seeded, word embeddings frozen), and the model."""
    model = load_for_training(base, 0.1, 0, freeze_embeddings=True)
    model.train()
    recipe = Recipe("none", lr=1e-4, weight_decay=0.01, dropout=0.1, batch_size=len(batches[0]), epochs=1)
    opt = torch.optim.AdamW(param_groups(model, recipe), lr=recipe.lr)
    run = torch.compile(model, dynamic=True, backend=compile_backend) if compile_backend else model

    def one_round() -> float:
        torch.manual_seed(0)  # dropout
        for b in batches:
            loss = torch.nn.functional.cross_entropy(
                run(**collate(b, pad, torch.device("cpu"))).logits, torch.tensor([len(s) % 2 for s in b])
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return float(loss.detach())

    return one_round, model


def training(base: str, batches, pad: int, rounds: int, backend: str):
    """(compile round s, [(eager s, compiled s)])."""
    eager, _ = trainer(base, batches, pad, None)
    compiled, _ = trainer(base, batches, pad, backend)
    first, _ = timed(compiled)
    return first, [(timed(eager)[0], timed(compiled)[0]) for _ in range(rounds)]


def main() -> None:
    from hatecheck_pipeline.models.base import load_tokenizer
    from hatecheck_pipeline.models.predict import load_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="models/XTC/final", help="a trained classifier (prediction)")
    ap.add_argument("--cases", default="data/processed/mhc/xlmt.parquet", help="a suite table (prediction)")
    ap.add_argument("--n-cases", type=int, default=600)
    ap.add_argument("--base", default="models/base/multilingual-e5-small", help="a base model (training)")
    ap.add_argument("--texts", default="data/processed/hateval2019_es/xlmt.parquet", help="a training table")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backend", default="inductor")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, backend {args.backend}, dynamic shapes, threads {args.threads}, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    model, tok = load_model(args.model)
    texts = pl.read_parquet(args.cases, columns=["text"])["text"].sample(args.n_cases, seed=1).to_list()
    seqs = encode(tok, texts, args.max_length)
    first, pairs, diff, equal = prediction(model, seqs, tok.pad_token_id, 64, args.rounds, args.backend)
    print(f"prediction: {args.model} on {len(seqs)} cases of {args.cases} (mean {sum(map(len, seqs)) / len(seqs):.1f} tokens), batch 64")
    print(f"prediction: first compiled round (compiles) {first:.1f} s")
    for r, (e, c) in enumerate(pairs):
        print(f"prediction round {r}: eager {e:.2f} s, compiled {c:.2f} s, eager/compiled {e / c:.2f}x", flush=True)
    print(f"prediction: largest |logit difference| {diff:.1e}; labels equal {equal:.2%}")

    btok = load_tokenizer(args.base)
    train_texts = pl.read_parquet(args.texts, columns=["text"])["text"].head(args.batch * args.steps).to_list()
    enc = encode(btok, train_texts, args.max_length)
    order = bucketed_batches([len(s) for s in enc], args.batch, torch.Generator().manual_seed(1))
    batches = [[enc[i] for i in b.tolist()] for b in order]
    first, pairs = training(args.base, batches, btok.pad_token_id, args.rounds, args.backend)
    print(
        f"training: {args.base}, {len(batches)} steps of {args.batch} from {args.texts} "
        f"(mean {sum(map(len, enc)) / len(enc):.1f} tokens), fp32, word embeddings frozen"
    )
    print(f"training: first compiled round (compiles) {first:.1f} s")
    for r, (e, c) in enumerate(pairs):
        print(f"training round {r}: eager {e:.1f} s, compiled {c:.1f} s, eager/compiled {e / c:.2f}x", flush=True)


if __name__ == "__main__":
    main()
