"""Builders of the annotated datasets: HateXplain (official split, majority
label, targets, rationales) and ETHOS (hate share, multi-label scores)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import (
    REASON,
    ROW,
    SOURCE,
    InputError,
    read_jsonl,
    read_records,
)
from hatecheck_pipeline.core.paths import raw as raw_path
from hatecheck_pipeline.data.harmonise import (
    CORE_COLUMNS,
    QUARANTINE_SCHEMA,
    Harmonised,
    flag,
    harmonise,
    quarantine_checks,
    split_off,
)
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL


HATEXPLAIN_CLASSES = {0: "hatespeech", 1: "normal", 2: "offensive"}


def majority_vote(votes: pl.Expr, classes: list[int]) -> pl.Expr:
    """The class named by at least two annotators, else null."""
    expr = pl.lit(None, dtype=pl.Int64)
    for c in reversed(classes):
        expr = pl.when(votes.list.count_matches(c) >= 2).then(pl.lit(c, dtype=pl.Int64)).otherwise(expr)
    return expr


def _targets(per_annotator: list[list[str]], min_votes: int) -> list[str]:
    votes: dict[str, int] = {}
    for targets in per_annotator:
        for t in set(targets):
            votes[t] = votes.get(t, 0) + 1
    return sorted(t for t, n in votes.items() if n >= min_votes and t not in ("None", ""))


def hatexplain(params: Mapping[str, Any]) -> Harmonised:
    """HateXplain: official split, 3-class majority label, targets, rationales."""
    min_votes = params["target_min_votes"]
    divisions = json.loads(Path(raw_path("hatexplain", "post_id_divisions.json")).read_text("utf-8"))
    rows: list[dict[str, Any]] = []
    for split, name in (("test", "hatexplain_test.jsonl"), ("dev", "hatexplain_val.jsonl")):
        path = raw_path("hatexplain", name)
        for rec in read_jsonl(path):
            j = rec["_json"] or {}
            ann = j.get("annotators", {})
            votes = list(ann.get("label", []))
            rows.append(
                {
                    "id": j.get("id"),
                    "text": " ".join(j.get("post_tokens", [])),
                    "votes": votes,
                    "targets": _targets(ann.get("target", []), min_votes),
                    "rationales": j.get("rationales", []),
                    "post_tokens": j.get("post_tokens", []),
                    "split": split,
                    ROW: rec[ROW],
                    REASON: rec[REASON],
                    SOURCE: path,
                    "_line": rec["_line"],
                }
            )
    train_path = raw_path("hatexplain", "hatexplain_train_labels.csv")
    train = read_records(train_path, ["text", "labels", "targets"])
    train_ids = divisions["train"]
    if train.height != len(train_ids):
        raise InputError(f"{train_path}: {train.height} rows but post_id_divisions.json lists {len(train_ids)} train ids")
    for post_id, rec in zip(train_ids, train.iter_rows(named=True)):
        votes = [int(v) for v in (rec["labels"] or "").split(",") if v.strip().isdigit()]
        targets = [t.strip() for t in (rec["targets"] or "").split(",")]
        rows.append(
            {
                "id": post_id,
                "text": rec["text"],
                "votes": votes,
                "targets": sorted(set(targets) - {"None", ""}),
                "rationales": [],
                "post_tokens": (rec["text"] or "").split(),
                "split": "train",
                ROW: rec[ROW],
                REASON: rec[REASON],
                SOURCE: train_path,
                "_line": None,
            }
        )
    schema = {
        "id": pl.String, "text": pl.String, "votes": pl.List(pl.Int64), "targets": pl.List(pl.String),
        "rationales": pl.List(pl.List(pl.Int64)), "post_tokens": pl.List(pl.String), "split": pl.String,
        ROW: pl.Int64, REASON: pl.String, SOURCE: pl.String, "_line": pl.String,
    }  # fmt: skip
    raw = pl.DataFrame(rows, schema=schema)
    majority = majority_vote(pl.col("votes"), list(HATEXPLAIN_CLASSES))
    label3 = majority.replace_strict(HATEXPLAIN_CLASSES, default=None, return_dtype=pl.String)
    frame = (
        raw.lazy()
        .with_columns(
            label3.alias("label3"),
            pl.lit("english").alias("language"),
            pl.lit("hatexplain").alias("dataset"),
        )
        .with_columns(
            pl.col("label3")
            .fill_null(pl.format("no_majority:{}", pl.col("votes").cast(pl.List(pl.String)).list.join("|")))
            .alias("label_original"),
            pl.when(pl.col("label3") == "hatespeech")
            .then(pl.lit(HATEFUL))
            .when(pl.col("label3").is_not_null())
            .then(pl.lit(NON_HATEFUL))
            .alias("label"),
        )
    )
    # The official split repeats a few texts across train and test: the
    # train copy is quarantined so that the official test set stays whole.
    in_test = pl.col("text").is_in(pl.col("text").filter(pl.col("split") == "test").implode())
    frame = (
        quarantine_checks(frame, dedupe_text=False)
        .with_columns(flag(pl.lit("text_also_in_test_split"), (pl.col("split") == "train") & in_test))
        .collect()
    )
    keep = [*CORE_COLUMNS, "label3", "votes", "targets", "rationales", "post_tokens"]
    return split_off(frame, "hatexplain", ["id", "text", "votes", "split", "_line"], keep)


ETHOS_LABELS = ["violence", "directed_vs_generalized", "gender", "race", "national_origin", "disability", "religion", "sexual_orientation"]


def text_key(column: str) -> pl.Expr:
    """Join key of an ETHOS comment: whitespace runs (including the
    non-breaking spaces one file has where the other has spaces) -> one space."""
    return pl.col(column).str.replace_all(r"\s+", " ").str.strip_chars()


def ethos(params: Mapping[str, Any]) -> Harmonised:
    """ETHOS (Mollas et al. 2022): 998 comments, ``isHate`` = share of
    annotators calling it hate; ``>= hate_threshold`` -> hateful. The
    multi-label scores (8 columns) are joined on the comment text (whitespace
    normalised) for the hateful comments; a hateful comment without scores,
    or a score row matching no hateful comment, is quarantined."""
    binary_path = raw_path("ethos", "Ethos_Dataset_Binary.csv")
    multi_path = raw_path("ethos", "Ethos_Dataset_Multi_Label.csv")
    raw = read_records(binary_path, ["comment", "isHate"], delimiter=";")
    multi = read_records(multi_path, ["comment", *ETHOS_LABELS], delimiter=";")
    scores = (
        multi.filter(pl.col(REASON).is_null())
        .select(
            text_key("comment").alias("_key"),
            *[pl.col(c).cast(pl.Float64, strict=False) for c in ETHOS_LABELS],
            pl.col(ROW).alias("_multi_row"),
        )
        .unique("_key", keep="first", maintain_order=True)
    )
    is_hate = pl.col("isHate").cast(pl.Float64, strict=False)
    label = pl.when(is_hate >= params["hate_threshold"]).then(pl.lit(HATEFUL)).when(is_hate.is_not_null()).then(pl.lit(NON_HATEFUL))
    frame = raw.with_columns(text_key("comment").alias("_key")).join(scores, on="_key", how="left")
    h = harmonise(
        frame,
        "ethos",
        "english",
        {
            "id": pl.format("ethos-{}", pl.col(ROW)),
            "text": pl.col("comment"),
            "label_original": pl.col("isHate"),
            "label": label,
            "is_hate": is_hate,
            "split": pl.lit("test"),
        },
        extras=["split", "is_hate", *ETHOS_LABELS],
    )
    # Scores belong to hateful comments only.
    missing = (pl.col("label") == HATEFUL) & pl.col("_multi_row").is_null()
    bad = h.kept.join(frame.select(pl.format("ethos-{}", pl.col(ROW)).alias("id"), "_multi_row"), on="id").filter(missing)
    if bad.height:
        more = bad.select(
            pl.lit("ethos").alias("dataset"),
            pl.lit(str(binary_path)).alias("source_file"),
            pl.col("id").str.strip_prefix("ethos-").cast(pl.Int64).alias("row"),
            pl.lit("missing_multi_label").alias("reason"),
            pl.struct("id", "text").struct.json_encode().alias("record"),
        ).cast(QUARANTINE_SCHEMA)
        h.quarantine = pl.concat([h.quarantine, more])
        h.kept = h.kept.filter(~pl.col("id").is_in(bad["id"].implode()))
    h.kept = h.kept.with_columns([pl.when(pl.col("label") == HATEFUL).then(pl.col(c)).alias(c) for c in ETHOS_LABELS])
    matched = set(frame.filter(is_hate >= params["hate_threshold"])["_multi_row"].drop_nulls().to_list())
    orphans = multi.filter(~pl.col(ROW).is_in(list(matched)))
    if orphans.height:
        h.quarantine = pl.concat(
            [
                h.quarantine,
                orphans.select(
                    pl.lit("ethos").alias("dataset"),
                    pl.lit(str(multi_path)).alias("source_file"),
                    pl.col(ROW).alias("row"),
                    pl.lit("multi_label_without_hateful_comment").alias("reason"),
                    pl.struct("comment").struct.json_encode().alias("record"),
                ).cast(QUARANTINE_SCHEMA),
            ]
        )
        h.raw_rows += orphans.height
    return h
