"""Epoch time of the MHC paper's XTC recipe on a GPU (the `paper` profile's
setting), for comparison with the paper's hardware note (appendix G: one
NVIDIA T4, "around 3 seconds" wall time per training step).

Two steps, so that the GPU machine needs only torch, transformers and
pyarrow (no project install, no hub):

    # here: tokenize XTC's real training and dev splits (HatEval ES,
    # HaSpeeDe IT, Fortuna PT, the pipeline's processed xlmt tables) with
    # the pipeline's XLM-R tokenizer, paper max length 128
    python benchmarks/bench_gpu_epoch.py prepare --out .gpu/xtc_tokens.parquet
    # on the GPU machine: one epoch per precision, printed as JSON
    python benchmarks/bench_gpu_epoch.py run --tokens .gpu/xtc_tokens.parquet

The model is XLM-T's architecture (XLM-RoBERTa base: 12 layers, hidden 768,
12 heads, FFN 3072, 250,002 pieces, 278M parameters) with RANDOM weights:
XLM-T's weights cannot be had on these machines. Step time does not depend
on the weights' values, so the timing is the recipe's; no quality figure
comes from this script. Recipe (params.yaml `training.recipes.mhc`): AdamW
lr 5e-5, weight decay 0.01, dropout 0.1, batch 32, unweighted
cross-entropy, shuffled batches padded to their longest post (the
pipeline's collate), dev evaluation after the epoch. Precisions: fp32 and
bf16 autocast (the pipeline's `training.amp` on CUDA).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

DATASETS = ("hateval2019_es", "haspeede2020", "fortuna2019")


def prepare(out: Path, max_length: int = 128) -> None:
    import polars as pl
    from transformers import XLMRobertaTokenizerFast

    tok = XLMRobertaTokenizerFast(tokenizer_file="models/base/multilingual-e5-small/tokenizer.json")
    frames = [
        pl.read_parquet(f"data/processed/{d}/xlmt.parquet").filter(pl.col("split").is_in(["train", "dev"])).select("text", "label", "split")
        for d in DATASETS
    ]
    df = pl.concat(frames)
    ids = tok(df["text"].to_list(), truncation=True, max_length=max_length)["input_ids"]
    out.parent.mkdir(parents=True, exist_ok=True)
    df.select("label", "split").with_columns(pl.Series("input_ids", ids, dtype=pl.List(pl.Int32))).write_parquet(out)
    print(json.dumps({"rows": df.height, "train": int((df["split"] == "train").sum()), "max_length": max_length, "out": str(out)}))


def run(tokens: Path, epochs: int, precisions: list[str], seed: int = 42) -> None:
    import pyarrow.parquet as pq
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

    table = pq.read_table(tokens).to_pydict()
    rows = list(zip(table["input_ids"], [int(y == "hateful") for y in table["label"]], table["split"]))
    train = [(i, y) for i, y, s in rows if s == "train"]
    dev = [(i, y) for i, y, s in rows if s == "dev"]
    device = torch.device("cuda")
    config = XLMRobertaConfig(
        vocab_size=250002,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        num_labels=2,
    )

    def collate(batch):
        width = max(len(i) for i, _ in batch)
        ids = torch.full((len(batch), width), 1, dtype=torch.long)
        for r, (i, _) in enumerate(batch):
            ids[r, : len(i)] = torch.tensor(i)
        return ids.to(device), (ids != 1).to(device), torch.tensor([y for _, y in batch], device=device)

    results = []
    for prec in precisions:
        torch.manual_seed(seed)
        model = XLMRobertaForSequenceClassification(config).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
        dtype = {"fp32": None, "bf16": torch.bfloat16}[prec]
        ctx = (lambda: torch.autocast("cuda", dtype=dtype)) if dtype else (lambda: torch.autocast("cuda", enabled=False))
        g = torch.Generator().manual_seed(seed)
        for epoch in range(epochs):
            order = torch.randperm(len(train), generator=g).tolist()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step_times = []
            model.train()
            for b in range(0, len(order), 32):
                s0 = time.perf_counter()
                ids, mask, y = collate([train[i] for i in order[b : b + 32]])
                with ctx():
                    loss = torch.nn.functional.cross_entropy(model(input_ids=ids, attention_mask=mask).logits.float(), y)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
                step_times.append(time.perf_counter() - s0)
            t_train = time.perf_counter() - t0
            model.eval()
            t1 = time.perf_counter()
            with torch.inference_mode(), ctx():
                for b in range(0, len(dev), 64):
                    ids, mask, _ = collate(dev[b : b + 64])
                    model(input_ids=ids, attention_mask=mask)
            torch.cuda.synchronize()
            t_dev = time.perf_counter() - t1
            steady = sorted(step_times[5:])
            results.append(
                {
                    "precision": prec,
                    "epoch": epoch + 1,
                    "train_examples": len(train),
                    "steps": len(step_times),
                    "train_s": round(t_train, 2),
                    "dev_eval_s": round(t_dev, 2),
                    "epoch_s": round(t_train + t_dev, 2),
                    "step_s_median": round(steady[len(steady) // 2], 4),
                    "samples_per_s": round(len(train) / t_train, 1),
                }
            )
            print(json.dumps(results[-1]), flush=True)
        del model, opt
        torch.cuda.empty_cache()
    print(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": results}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("--out", type=Path, default=Path(".gpu/xtc_tokens.parquet"))
    a.add_argument("--max-length", type=int, default=128)
    b = sub.add_parser("run")
    b.add_argument("--tokens", type=Path, default=Path(".gpu/xtc_tokens.parquet"))
    b.add_argument("--epochs", type=int, default=2)
    b.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    args = p.parse_args()
    if args.cmd == "prepare":
        prepare(args.out, args.max_length)
    else:
        run(args.tokens, args.epochs, args.precisions)


if __name__ == "__main__":
    main()
