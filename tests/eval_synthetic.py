"""Synthetic suites, predictions and metrics for the evaluation tests."""

from __future__ import annotations

import numpy as np
import polars as pl

FUNCS = ["derog_neg_emote_h", "threat_dir_h", "slur_reclaimed_nh", "ident_neutral_nh", "negate_neg_nh"]
TARGETS = ["women", "trans people", "Muslims"]


def hatecheck_like(n_per_func: int = 12, language: str = "english", id_prefix: str = "") -> pl.DataFrame:
    """A tiny HateCheck-shaped interim table (labels follow the _h/_nh suffix).

    Every non-hateful ``negate_neg_nh`` case points (``ref_case_id``) at the
    hateful ``derog_neg_emote_h`` case with the same index: contrast pairs.
    """
    rows = []
    i = 0
    for f in FUNCS:
        for k in range(n_per_func):
            i += 1
            rows.append({
                "case_id": f"{id_prefix}{i}",
                "functionality": f,
                "label": "hateful" if f.endswith("_h") else "non-hateful",
                "target_ident": TARGETS[k % len(TARGETS)] if f != "slur_reclaimed_nh" else None,
                "from_identity_template": f != "slur_reclaimed_nh",
                "focus_lemma": ["queer", "fag"][k % 2] if f == "slur_reclaimed_nh" else None,
                "ref_case_id": str(k + 1) if f == "negate_neg_nh" else None,
                "language": language,
                "split": "test",
            })
    frame = pl.DataFrame(rows)
    return frame.with_columns(pl.col("case_id").alias("id"), pl.col("case_id").alias("mhc_case_id"), pl.lit("hatecheck").alias("dataset"), pl.col("case_id").alias("text"))


def predictions(gold: pl.DataFrame, accuracy: float, seed: int = 0, id_column: str = "case_id") -> pl.DataFrame:
    """Predictions that are right with probability ``accuracy`` (seeded)."""
    rng = np.random.default_rng(seed)
    truth = (gold["label"] == "hateful").to_numpy()
    right = rng.random(gold.height) < accuracy
    hateful = np.where(right, truth, ~truth)
    p = np.where(hateful, 0.5 + rng.random(gold.height) / 2, rng.random(gold.height) / 2)
    return pl.DataFrame({
        id_column: gold[id_column],
        "p_hateful": p,
        "pred": np.where(hateful, "hateful", "non-hateful"),
    })
