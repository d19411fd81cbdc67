"""Integrated gradients of the explainability audit (audits/explain.py)
with the classifier's parameters requiring gradients (as loaded) and
frozen (what ``integrated_gradients`` does): the same posts timed both
ways, rounds alternating, and how far the attributions move.

Run in a workspace where ``train_hatexplain`` has run::

    python benchmarks/bench_explain.py [--model-dir models/hatexplain/final] [--n 32] [--rounds 2]

``--steps``, ``--max-length`` and ``--batch-size`` default to the stage's
values in the embedded profile (bias.hatexplain.explain in params.yaml).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch

from bench_onednn import cpu_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", type=Path, default=Path("models/hatexplain/final"))
    ap.add_argument("--table", type=Path, default=Path("data/interim/hatexplain/table.parquet"))
    ap.add_argument("--n", type=int, default=32, help="test posts (the first n by id)")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--max-length", type=int, default=96)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    from hatecheck_pipeline.audits import explain
    from hatecheck_pipeline.core.cpu import machine_cores

    torch.set_num_threads(args.threads)
    model, tok = explain.load_classifier(args.model_dir)
    posts = pl.read_parquet(args.table).filter(pl.col("split") == "test").sort("id")["post_tokens"].to_list()[: args.n]
    ids, _ = explain.encode_words(tok, posts, args.max_length)
    special = set(tok.all_special_ids) - {tok.pad_token_id}
    print(
        f"# {cpu_model()}, {machine_cores()} cores, {args.threads} threads; {args.model_dir}: {len(ids)} HateXplain test posts, "
        f"{args.steps} steps, max_length {args.max_length}, batch {args.batch_size}; "
        f"parameters requiring gradients as loaded: {all(p.requires_grad for p in model.parameters())}"
    )

    def attribute(freeze: bool):
        frozen = explain.frozen_parameters
        if not freeze:  # the path before: captum's backward with the parameters as loaded
            explain.frozen_parameters = lambda m: contextlib.nullcontext(m)
        try:
            t0 = time.perf_counter()
            out = explain.integrated_gradients(model, ids, [1] * len(ids), tok.pad_token_id, special, args.steps, args.batch_size)
            return time.perf_counter() - t0, out
        finally:
            explain.frozen_parameters = frozen

    walls: dict[str, list[float]] = {"requiring gradients": [], "frozen": []}
    outs = {}
    for r in range(args.rounds):
        for name, freeze in (("requiring gradients", False), ("frozen", True)):
            wall, outs[name] = attribute(freeze)
            walls[name].append(wall)
            print(f"round {r + 1}: parameters {name}: {wall:.1f} s")
    diff = max(float(np.abs(a - b).max()) for a, b in zip(outs["requiring gradients"], outs["frozen"]))
    best = {k: min(v) for k, v in walls.items()}
    print(
        f"best of {args.rounds}: requiring gradients {best['requiring gradients']:.1f} s, frozen {best['frozen']:.1f} s "
        f"= {best['frozen'] / best['requiring gradients']:.2f}x; largest |attribution difference| {diff:.2e}"
    )


if __name__ == "__main__":
    main()
