"""The processed schema and the steps every dataset builder shares.

Every builder returns a :class:`Harmonised`: the kept table, the quarantine
(every dropped row with its reason and raw record) and the raw row count, so
that ``raw_rows == kept + quarantined`` holds for every dataset. The shared
steps map raw columns onto the schema (:func:`harmonise`, :func:`binary_label`),
quarantine bad rows (:func:`quarantine_checks`, :func:`split_off`) and draw
seeded stratified splits (:func:`stratified_split`, :func:`with_split`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import REASON, ROW, SOURCE
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL

CORE_COLUMNS = ["id", "text", "label", "label_original", "language", "dataset", "split"]
QUARANTINE_SCHEMA = {"dataset": pl.String, "source_file": pl.String, "row": pl.Int64, "reason": pl.String, "record": pl.String}


@dataclass
class Harmonised:
    kept: pl.DataFrame
    quarantine: pl.DataFrame
    raw_rows: int

    def counts(self) -> dict[str, Any]:
        by_reason = self.quarantine.group_by(pl.col("reason").str.split(":").list.first()).len().sort("reason").rows()
        out: dict[str, Any] = {
            "raw_rows": self.raw_rows,
            "kept": self.kept.height,
            "quarantined": self.quarantine.height,
            "quarantined_by_reason": dict(by_reason),
        }
        if "split" in self.kept.columns:
            out["by_split"] = dict(self.kept.group_by("split").len().sort("split").rows())
        if "label" in self.kept.columns and self.kept.height:
            out["hateful_share"] = round(float((self.kept["label"] == HATEFUL).mean()), 6)
        return out


# --------------------------------------------------------------------------
# Shared steps


def flag(reason: pl.Expr, condition: pl.Expr) -> pl.Expr:
    """Set ``_reason`` where it is still empty and ``condition`` holds."""
    return pl.when(pl.col(REASON).is_null() & condition).then(reason).otherwise(pl.col(REASON)).alias(REASON)


def first_only(key: str, reason: str) -> pl.Expr:
    """Flag every repeat of ``key`` among rows not flagged yet (first one kept)."""
    ok = pl.col(REASON).is_null()
    repeat = pl.int_range(pl.len()).over(pl.col(key), ok) > 0
    first_row = pl.col(ROW).first().over(pl.col(key), ok)
    first_file = pl.col(SOURCE).first().over(pl.col(key), ok)
    elsewhere = pl.when(first_file != pl.col(SOURCE)).then(pl.format(" of {}", first_file)).otherwise(pl.lit(""))
    return flag(pl.format(reason + ": first seen at row {}{}", first_row, elsewhere), repeat)


MAX_TEXT_CHARS = 10_000  # longest text kept (the longest in the mirrored datasets: 846 characters, HatEval)


def conflicting_labels() -> pl.Expr:
    """Flag every copy of an id that appears with different labels: which
    label is right cannot be told, so none is kept."""
    ok = pl.col(REASON).is_null()
    labels = pl.col("label_original").unique().sort().over(pl.col("id"), ok, mapping_strategy="join")
    rows = pl.col(ROW).sort().over(pl.col("id"), ok, mapping_strategy="join")
    conflict = pl.col("label").n_unique().over(pl.col("id"), ok) > 1
    return flag(
        pl.format(
            "conflicting_labels: id {} has labels {} (rows {})",
            pl.col("id"),
            labels.list.join(" | "),
            rows.cast(pl.List(pl.String)).list.join(", "),
        ),
        conflict,
    )


def quarantine_checks(frame: pl.LazyFrame, dedupe_text: bool) -> pl.LazyFrame:
    """Empty text, NUL characters, over-long text, unknown label,
    conflicting labels of one id, duplicate id, optionally duplicate text."""
    missing = pl.col("label_original").is_null() | (pl.col("label_original").str.strip_chars() == "")
    shown = pl.when(missing).then(pl.lit("<missing>")).otherwise(pl.col("label_original"))
    length = pl.col("text").str.len_chars()
    steps = [
        flag(pl.lit("empty_text"), pl.col("text").is_null() | (pl.col("text").str.strip_chars() == "")),
        flag(
            pl.format("nul_character: text holds {} NUL character(s)", pl.col("text").str.count_matches("\x00", literal=True)),
            pl.col("text").str.contains("\x00", literal=True),
        ),
        flag(pl.format("text_too_long: {} characters (limit {})", length, pl.lit(MAX_TEXT_CHARS)), length > MAX_TEXT_CHARS),
        flag(pl.format("unknown_label: {}", shown), pl.col("label").is_null()),
    ]
    frame = frame.with_columns(pl.col(REASON).cast(pl.String))
    for step in steps:
        frame = frame.with_columns(step)
    frame = frame.with_columns(conflicting_labels())
    frame = frame.with_columns(first_only("id", "duplicate_id"))
    if dedupe_text:
        frame = frame.with_columns(first_only("text", "duplicate_text"))
    return frame


def split_off(frame: pl.DataFrame, dataset: str, raw_columns: list[str], keep: list[str]) -> Harmonised:
    """Separate kept rows from quarantined ones, keeping each raw record."""
    quarantine = frame.filter(pl.col(REASON).is_not_null()).select(
        pl.lit(dataset).alias("dataset"),
        pl.col(SOURCE).alias("source_file"),
        pl.col(ROW).alias("row"),
        pl.col(REASON).alias("reason"),
        pl.struct([c for c in raw_columns if c in frame.columns]).struct.json_encode().alias("record"),
    )
    kept = frame.filter(pl.col(REASON).is_null()).select(keep)
    return Harmonised(kept, quarantine.cast(QUARANTINE_SCHEMA), frame.height)


def stratified_split(frame: pl.LazyFrame, seed: int, fractions: Mapping[str, float], by: str = "label") -> pl.LazyFrame:
    """Seeded stratified split: within each label, a seeded shuffle decides
    the order and the cumulative fractions cut it into train/dev/test."""
    rank = pl.int_range(pl.len()).shuffle(seed=seed).over(by)
    size = pl.len().over(by)
    train_end = (size * fractions["train"]).round()
    dev_end = (size * (fractions["train"] + fractions["dev"])).round()
    split = pl.when(rank < train_end).then(pl.lit("train")).when(rank < dev_end).then(pl.lit("dev")).otherwise(pl.lit("test"))
    return frame.with_columns(split.alias("split"))


def harmonise(
    raw: pl.DataFrame,
    dataset: str,
    language: str,
    columns: dict[str, pl.Expr],
    extras: list[str],
    dedupe_text: bool = True,
) -> Harmonised:
    """Map raw columns onto the schema, then quarantine bad rows."""
    raw_columns = [c for c in raw.columns if c not in (ROW, REASON, SOURCE)]
    frame = (
        raw.lazy()
        .with_columns(**columns)
        .with_columns(pl.lit(language).alias("language"), pl.lit(dataset).alias("dataset"))
        .pipe(quarantine_checks, dedupe_text)
        .collect()
    )
    keep = ["id", "text", "label", "label_original", "language", "dataset", *extras]
    return split_off(frame, dataset, raw_columns, keep)


def binary_label(column: str, hateful_values: list[str], non_hateful_values: list[str]) -> pl.Expr:
    mapping = {**{v: HATEFUL for v in hateful_values}, **{v: NON_HATEFUL for v in non_hateful_values}}
    return pl.col(column).str.strip_chars().replace_strict(mapping, default=None, return_dtype=pl.String)


def with_split(h: Harmonised, seed: int, fractions: Mapping[str, float]) -> Harmonised:
    h.kept = stratified_split(h.kept.lazy(), seed, fractions).collect()
    return h
