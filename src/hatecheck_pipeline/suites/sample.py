"""The seeded case sample shared by prediction and scoring: a profile that
caps the cases per suite (smoke) predicts and scores the same draw."""

from __future__ import annotations

import polars as pl


def sample_cases(cases: pl.DataFrame, cap: int | None, seed: int) -> pl.DataFrame:
    """At most ``cap`` cases, a seeded draw (all when ``cap`` is None)."""
    if cap is None or cases.height <= cap:
        return cases
    return cases.sample(n=cap, seed=seed, shuffle=False)


def drawn_cases(cases: pl.LazyFrame, id_column: str, cap: int | None, seed: int) -> pl.DataFrame:
    """What a predict stage predicts of a suite's cases: ``id`` (the
    suite's ``id_column`` as text) and ``text``, sorted by id, then the
    seeded draw of :func:`sample_cases` (the one :func:`predicted_subsample`
    repeats for scoring)."""
    frame = cases.select(pl.col(id_column).cast(pl.Utf8).alias("id"), pl.col("text")).collect().sort("id")
    return sample_cases(frame, cap, seed)


def predicted_subsample(cases: pl.DataFrame, id_column: str, cap: int | None, seed: int) -> pl.DataFrame:
    """The cases a predict stage capped at ``cap`` (with the model's
    ``seed``) predicted: the same seeded draw over the sorted ids."""
    if not cap:
        return cases
    ids = cases.select(pl.col(id_column).cast(pl.Utf8).alias("id")).sort("id")
    drawn = sample_cases(ids, cap, seed)["id"]
    return cases.filter(pl.col(id_column).cast(pl.Utf8).is_in(drawn.implode()))
