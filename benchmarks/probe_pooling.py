"""Linear probe of a base encoder's poolings (a script, not a test).

Encodes a seeded sample of one processed training table's train and test
rows with the base model as pretrained (no fine-tuning), pools the last
hidden states three ways (the attention-masked mean, the last real token
as transformers' generic classifier reads it, the first token) and fits a
logistic regression (scikit-learn) on each: test accuracy and macro F1,
with the features' mean norm and their mean per-dimension spread across
inputs. It tells whether a pooling's features carry the label before
fine-tuning, apart from how a recipe trains a head on them (the mean-pooled
EmbeddingGemma screens: docs/models.md).

Run it in a workspace whose data stages are built:

    python benchmarks/probe_pooling.py --base pinned:embeddinggemma-300m \\
        --table data/processed/hateval2019_es/xlmt.parquet [--train 400 --test 300 --seed 0] [--record FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np
import polars as pl
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score

from hatecheck_pipeline.models import base as basemodels
from hatecheck_pipeline.models.pooled import masked_mean


def pooled_features(model, tokenizer, texts: list[str], max_length: int, batch_size: int = 16) -> dict[str, np.ndarray]:
    out: dict[str, list[np.ndarray]] = {"mean": [], "last token": [], "first token": []}
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            enc = tokenizer(texts[i : i + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            hidden = model(**enc).last_hidden_state.float()
            mask = enc["attention_mask"]
            last = mask.sum(dim=1) - 1  # right padding: the last real token
            out["mean"].append(masked_mean(hidden, mask).numpy())
            out["last token"].append(hidden[torch.arange(len(hidden)), last].numpy())
            out["first token"].append(hidden[:, 0].numpy())
    return {k: np.concatenate(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="a base model reference (as a profile's base_models names one)")
    ap.add_argument("--table", type=Path, required=True, help="a processed table (columns text, label, split)")
    ap.add_argument("--train", type=int, default=400)
    ap.add_argument("--test", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-length", type=int, default=96)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--record", type=Path)
    args = ap.parse_args()

    from transformers import AutoModel

    torch.set_num_threads(args.threads)
    resolved = basemodels.resolve(args.base, None)
    tokenizer = basemodels.load_tokenizer(resolved)
    tokenizer.padding_side = "right"  # pooled_features reads the last real token at mask.sum() - 1
    model = AutoModel.from_pretrained(resolved).eval()
    table = pl.read_parquet(args.table)
    train = table.filter(pl.col("split") == "train").sample(args.train, seed=args.seed)
    test = table.filter(pl.col("split") == "test").sample(args.test, seed=args.seed)
    y_train = (train["label"] == "hateful").to_numpy()
    y_test = (test["label"] == "hateful").to_numpy()
    x_train = pooled_features(model, tokenizer, train["text"].to_list(), args.max_length)
    x_test = pooled_features(model, tokenizer, test["text"].to_list(), args.max_length)
    rows = {}
    for name in x_train:
        clf = LogisticRegression(max_iter=5000).fit(x_train[name], y_train)
        pred = clf.predict(x_test[name])
        rows[name] = {
            "accuracy": round(float((pred == y_test).mean()) * 100, 1),
            "macro_f1": round(float(f1_score(y_test, pred, average="macro")) * 100, 1),
            "mean_norm": round(float(np.linalg.norm(x_train[name], axis=1).mean()), 2),
            "mean_spread": round(float(x_train[name].std(axis=0).mean()), 3),
        }
    print(
        f"{args.base} on {args.table} ({args.train} train / {args.test} test rows, seed {args.seed}; frozen encoder, logistic regression)"
    )
    print("| pooling | accuracy | macro F1 | mean norm | mean per-dimension spread |\n|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['accuracy']} | {r['macro_f1']} | {r['mean_norm']} | {r['mean_spread']} |")
    if args.record:
        doc = {
            "base": args.base,
            "base_description": basemodels.describe(args.base),
            "table": str(args.table),
            "train": args.train,
            "test": args.test,
            "seed": args.seed,
            "max_length": args.max_length,
            "test_hateful_share": round(float(y_test.mean()) * 100, 1),
            "machine": platform.processor() or platform.machine(),
            "poolings": rows,
        }
        args.record.write_text(json.dumps(doc, indent=1) + "\n", "utf-8")
        print(f"wrote {args.record}")


if __name__ == "__main__":
    main()
