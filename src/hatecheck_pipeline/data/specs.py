"""Harmonise raw datasets and suites into one processed schema.

Every builder returns a :class:`Harmonised`: the kept table, the quarantine
(every dropped row with its reason and raw record) and the raw row count, so
that ``raw_rows == kept + quarantined`` holds for every dataset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

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

HATEFUL, NON_HATEFUL = "hateful", "non-hateful"
LABELS = [HATEFUL, NON_HATEFUL]
CORE_COLUMNS = ["id", "text", "label", "label_original", "language", "dataset", "split"]
QUARANTINE_SCHEMA = {"dataset": pl.String, "source_file": pl.String, "row": pl.Int64, "reason": pl.String, "record": pl.String}


class HydrationRequired(InputError):
    """The file holds tweet ids only; its text must be hydrated first."""


@dataclass
class Harmonised:
    kept: pl.DataFrame
    quarantine: pl.DataFrame
    raw_rows: int

    def counts(self) -> dict[str, Any]:
        by_reason = (
            self.quarantine.group_by(pl.col("reason").str.split(":").list.first())
            .len()
            .sort("reason")
            .rows()
        )
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
        pl.format("conflicting_labels: id {} has labels {} (rows {})", pl.col("id"),
                  labels.list.join(" | "), rows.cast(pl.List(pl.String)).list.join(", ")),
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
        flag(pl.format("nul_character: text holds {} NUL character(s)", pl.col("text").str.count_matches("\x00", literal=True)),
             pl.col("text").str.contains("\x00", literal=True)),
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


# --------------------------------------------------------------------------
# Classification datasets


# Davidson et al.'s classes (column `class`) by name, for the multiclass
# models of the HateCheck paper's appendix F (`label_multiclass`).
DAVIDSON_CLASSES = {"0": HATEFUL, "1": "offensive", "2": "neither"}


def davidson2017(params: Mapping[str, Any]) -> Harmonised:
    """Davidson et al. 2017: class 0 hate -> hateful; 1, 2 -> non-hateful.
    ``label_multiclass`` keeps the three classes (hateful, offensive,
    neither) for the HateCheck paper's appendix F models."""
    raw = read_records(raw_path("davidson2017", "labeled_data.csv"), ["class", "tweet"])
    h = harmonise(
        raw,
        "davidson2017",
        "english",
        {
            "id": pl.col("_index"),
            "text": pl.col("tweet"),
            "label_original": pl.col("class"),
            "label": binary_label("class", ["0"], ["1", "2"]),
            "label_multiclass": pl.col("class").str.strip_chars().replace_strict(DAVIDSON_CLASSES, default=None, return_dtype=pl.String),
        },
        extras=["count", "hate_speech", "offensive_language", "neither", "label_multiclass"],
    )
    return with_split(h, params["seed"], params["split"])


def founta_ids_only(path: str | Path) -> bool:
    with open(path, encoding="utf-8", errors="replace") as fh:
        header = fh.readline().strip().lower().split(",")
    return "tweet_id" in header and "text" not in header


def founta2018(params: Mapping[str, Any]) -> Harmonised:
    """Founta et al. 2018 binarised subsample with text (1 = hateful)."""
    if params["source"] == "ids":
        path = raw_path("founta2018", "hatespeech_labels.csv")
        raise HydrationRequired(
            f"{path}: holds tweet ids and labels only (no text). Hydrate the tweets through the Twitter/X API "
            "into a CSV with a `text` column, or set datasets.founta2018.source: text_subsample."
        )
    parts = []
    for split, name in (("train", "fou18_en_train_20065.csv"), ("dev", "fou18_en_dev_500.csv"), ("test", "fou18_en_test_2000.csv")):
        path = raw_path("founta2018", name)
        if founta_ids_only(path):
            raise HydrationRequired(f"{path}: holds tweet ids only; the tweet text must be hydrated first")
        raw = read_records(path, ["text", "label"])
        parts.append(raw.with_columns(pl.lit(split).alias("split"), pl.format(split + "-{}", pl.col(ROW)).alias("id")))
    # Test rows first: a text repeated across splits stays in test.
    raw = pl.concat(parts).sort(pl.col("split").replace_strict({"test": 0, "dev": 1, "train": 2}), ROW)
    return harmonise(
        raw,
        "founta2018",
        "english",
        {"text": pl.col("text"), "label_original": pl.col("label"), "label": binary_label("label", ["1"], ["0"])},
        extras=["split"],
    )


def hateval2019_es(params: Mapping[str, Any]) -> Harmonised:
    """Basile et al. 2019, Spanish, label HS (1 = hateful)."""
    raw = read_records(raw_path("hateval2019", "bas19_es.csv"), ["id", "text", "HS"])
    h = harmonise(
        raw,
        "hateval2019_es",
        "spanish",
        {"id": pl.col("id"), "text": pl.col("text"), "label_original": pl.col("HS"), "label": binary_label("HS", ["1"], ["0"])},
        extras=["TR", "AG"],
    )
    return with_split(h, params["seed"], params["split"])


def haspeede2020(params: Mapping[str, Any]) -> Harmonised:
    """Sanguinetti et al. 2020: original train/test; train split 90/10 into train/dev."""
    raw = read_records(raw_path("haspeede2020", "san20_it.csv"), ["id", "text", "hs", "split"])
    # Test rows first, so that a text repeated across the original splits is
    # kept in the original test set and quarantined from train.
    raw = raw.sort(pl.col("split") != "test", ROW)
    h = harmonise(
        raw.rename({"split": "split_original"}),
        "haspeede2020",
        "italian",
        {"id": pl.col("id"), "text": pl.col("text"), "label_original": pl.col("hs"), "label": binary_label("hs", ["1"], ["0"])},
        extras=["stereotype", "split_original"],
    )
    frac = {"train": 1 - params["dev_fraction"], "dev": params["dev_fraction"], "test": 0.0}
    train = stratified_split(h.kept.lazy().filter(pl.col("split_original") == "train"), params["seed"], frac)
    test = h.kept.lazy().filter(pl.col("split_original") == "test").with_columns(pl.lit("test").alias("split"))
    h.kept = pl.concat([train, test]).collect()
    return h


def fortuna2019(params: Mapping[str, Any]) -> Harmonised:
    """Fortuna et al. 2019, Portuguese, label hatespeech_comb (1 = hateful)."""
    raw = read_records(raw_path("fortuna2019", "portuguese_hate_speech_binary_classification.csv"), ["text", "hatespeech_comb"])
    h = harmonise(
        raw,
        "fortuna2019",
        "portuguese",
        {
            "id": pl.col(ROW).cast(pl.String),
            "text": pl.col("text"),
            "label_original": pl.col("hatespeech_comb"),
            "label": binary_label("hatespeech_comb", ["1"], ["0"]),
        },
        extras=["hatespeech_G1", "hatespeech_G2", "hatespeech_G3"],
    )
    return with_split(h, params["seed"], params["split"])


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
    frame = raw.lazy().with_columns(
        label3.alias("label3"),
        pl.lit("english").alias("language"),
        pl.lit("hatexplain").alias("dataset"),
    ).with_columns(
        pl.col("label3").fill_null(pl.format("no_majority:{}", pl.col("votes").cast(pl.List(pl.String)).list.join("|"))).alias("label_original"),
        pl.when(pl.col("label3") == "hatespeech").then(pl.lit(HATEFUL)).when(pl.col("label3").is_not_null()).then(pl.lit(NON_HATEFUL)).alias("label"),
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
    scores = multi.filter(pl.col(REASON).is_null()).select(
        text_key("comment").alias("_key"), *[pl.col(c).cast(pl.Float64, strict=False) for c in ETHOS_LABELS], pl.col(ROW).alias("_multi_row")
    ).unique("_key", keep="first", maintain_order=True)
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
            pl.lit("ethos").alias("dataset"), pl.lit(str(binary_path)).alias("source_file"),
            pl.col("id").str.strip_prefix("ethos-").cast(pl.Int64).alias("row"), pl.lit("missing_multi_label").alias("reason"),
            pl.struct("id", "text").struct.json_encode().alias("record"),
        ).cast(QUARANTINE_SCHEMA)
        h.quarantine = pl.concat([h.quarantine, more])
        h.kept = h.kept.filter(~pl.col("id").is_in(bad["id"].implode()))
    h.kept = h.kept.with_columns(
        [pl.when(pl.col("label") == HATEFUL).then(pl.col(c)).alias(c) for c in ETHOS_LABELS]
    )
    matched = set(frame.filter(is_hate >= params["hate_threshold"])["_multi_row"].drop_nulls().to_list())
    orphans = multi.filter(~pl.col(ROW).is_in(list(matched)))
    if orphans.height:
        h.quarantine = pl.concat([h.quarantine, orphans.select(
            pl.lit("ethos").alias("dataset"), pl.lit(str(multi_path)).alias("source_file"), pl.col(ROW).alias("row"),
            pl.lit("multi_label_without_hateful_comment").alias("reason"), pl.struct("comment").struct.json_encode().alias("record"),
        ).cast(QUARANTINE_SCHEMA)])
        h.raw_rows += orphans.height
    return h


# --------------------------------------------------------------------------
# Functional test suites


def hatecheck(params: Mapping[str, Any]) -> Harmonised:
    """HateCheck (3,728 cases) joined with its annotations."""
    cases_path = raw_path("hatecheck", "test_suite_cases.csv")
    raw = read_records(cases_path, ["case_id", "functionality", "test_case", "label_gold", "target_ident", "case_templ"])
    annotations = read_records(raw_path("hatecheck", "test_suite_annotations.csv"), ["case_id", "label_annot_maj"])
    ann_cols = [c for c in annotations.columns if c.startswith(("label_", "count_label")) and c != "label_gold"]
    annotations = annotations.select(
        pl.col("case_id"),
        pl.concat_list([pl.col(c) for c in ann_cols if c.startswith("label_") and c[6:].isdigit()])
        .list.eval(pl.element().filter(pl.element().fill_null("") != ""))
        .alias("label_annotated"),
        pl.col("count_label_h").cast(pl.Int64, strict=False),
        pl.col("count_label_nh").cast(pl.Int64, strict=False),
        pl.col("label_annot_maj"),
    )
    raw = raw.join(annotations, on="case_id", how="left")
    extras = [
        "split", "functionality", "target_ident", "direction", "focus_words", "focus_lemma", "ref_case_id",
        "ref_templ_id", "templ_id", "case_templ", "from_identity_template", "label_annotated", "count_label_h",
        "count_label_nh", "label_annot_maj", "case_id",
    ]  # fmt: skip
    h = harmonise(
        raw,
        "hatecheck",
        "english",
        {
            "id": pl.col("case_id"),
            "text": pl.col("test_case"),
            "label_original": pl.col("label_gold"),
            "label": binary_label("label_gold", [HATEFUL], [NON_HATEFUL]),
            "split": pl.lit("test"),
            "from_identity_template": pl.col("case_templ").fill_null("").str.contains(r"\[IDENTITY"),
        },
        extras=extras,
        dedupe_text=False,
    )
    return empty_strings_to_null(h)


def empty_strings_to_null(h: Harmonised) -> Harmonised:
    """Suites mark absent values (e.g. ``ref_case_id``) with empty strings."""
    h.kept = h.kept.with_columns(pl.col(pl.String).exclude("text").replace("", None))
    return h


def mhc(params: Mapping[str, Any]) -> Harmonised:
    """Multilingual HateCheck, all configured languages, all columns."""
    parts = []
    for language in params["languages"]:
        raw = read_records(
            raw_path("mhc", f"cases/hatecheck_cases_final_{language}.csv"),
            ["mhc_case_id", "functionality", "test_case", "label_gold", "target_ident"],
        )
        parts.append(raw.with_columns(pl.lit(language).alias("_language")))
    raw = pl.concat(parts, how="diagonal")
    templates = [pl.col(c).fill_null("") for c in ("case_templ", "gender_male", "gender_female")]
    extras = [
        "split", "functionality", "target_ident", "ref_case_id", "ref_templ_id", "templ_id", "case_templ",
        "gender_male", "gender_female", "label_annotated", "label_annotated_maj", "disagreement_in_case",
        "disagreement_in_template", "from_identity_template", "mhc_case_id",
    ]  # fmt: skip
    h = harmonise(
        raw,
        "mhc",
        "",
        {
            "id": pl.col("mhc_case_id"),
            "text": pl.col("test_case"),
            "label_original": pl.col("label_gold"),
            "label": binary_label("label_gold", [HATEFUL], [NON_HATEFUL]),
            "split": pl.lit("test"),
            "from_identity_template": pl.any_horizontal([t.str.contains("IDENT") for t in templates]),
            "disagreement_in_case": pl.col("disagreement_in_case") == "True",
            "disagreement_in_template": pl.col("disagreement_in_template") == "True",
        },
        extras=[*extras, "_language"],
        dedupe_text=False,
    )
    h.kept = h.kept.with_columns(pl.col("_language").alias("language")).drop("_language")
    return empty_strings_to_null(h)


def crows_pairs(params: Mapping[str, Any]) -> Harmonised:
    """CrowS-Pairs: 1,508 minimal pairs (its own schema, no binary label)."""
    raw = read_records(raw_path("crows_pairs", "crows_pairs_anonymized.csv"), ["sent_more", "sent_less", "stereo_antistereo", "bias_type"])
    raw_columns = [c for c in raw.columns if c not in (ROW, REASON, SOURCE)]
    frame = (
        raw.lazy()
        .with_columns(id=pl.col("_index"), text=pl.col("sent_more"), label_original=pl.col("stereo_antistereo"))
        .with_columns(label=pl.col("stereo_antistereo").replace_strict({"stereo": "stereo", "antistereo": "antistereo"}, default=None))
        .pipe(quarantine_checks, False)
        .with_columns(flag(pl.lit("empty_text: sent_less"), pl.col("sent_less").fill_null("").str.strip_chars() == ""))
        .collect()
    )
    keep = ["id", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "annotations", "anon_writer", "anon_annotators"]
    return split_off(frame, "crows_pairs", raw_columns, keep)


@dataclass(frozen=True)
class DatasetSpec:
    """Everything about one dataset: its raw source, its builder, the raw
    files the builder reads (given the dataset's params) and whether it is
    a functional test suite."""

    name: str
    source: str  # raw source (ingest stage) it reads
    build: Callable[[Mapping[str, Any]], Harmonised]
    files: Callable[[Mapping[str, Any]], list[str]]  # params -> raw file names within the source
    suite: bool = False

    def raw_files(self, params: Mapping[str, Any]) -> list[str]:
        return [raw_path(self.source, f) for f in self.files(params)]


def _fixed(*names: str) -> Callable[[Mapping[str, Any]], list[str]]:
    return lambda params: list(names)


DATASETS: dict[str, DatasetSpec] = {
    s.name: s
    for s in [
        DatasetSpec("davidson2017", "davidson2017", davidson2017, _fixed("labeled_data.csv")),
        DatasetSpec("founta2018", "founta2018", founta2018,
                    _fixed("fou18_en_train_20065.csv", "fou18_en_dev_500.csv", "fou18_en_test_2000.csv", "hatespeech_labels.csv")),
        DatasetSpec("hateval2019_es", "hateval2019", hateval2019_es, _fixed("bas19_es.csv")),
        DatasetSpec("haspeede2020", "haspeede2020", haspeede2020, _fixed("san20_it.csv")),
        DatasetSpec("fortuna2019", "fortuna2019", fortuna2019, _fixed("portuguese_hate_speech_binary_classification.csv")),
        DatasetSpec("hatexplain", "hatexplain", hatexplain,
                    _fixed("hatexplain_test.jsonl", "hatexplain_val.jsonl", "hatexplain_train_labels.csv", "post_id_divisions.json")),
        DatasetSpec("hatecheck", "hatecheck", hatecheck, _fixed("test_suite_cases.csv", "test_suite_annotations.csv"), suite=True),
        DatasetSpec("mhc", "mhc", mhc, lambda p: [f"cases/hatecheck_cases_final_{lang}.csv" for lang in p["languages"]], suite=True),
        DatasetSpec("crows_pairs", "crows_pairs", crows_pairs, _fixed("crows_pairs_anonymized.csv")),
        DatasetSpec("ethos", "ethos", ethos, _fixed("Ethos_Dataset_Binary.csv", "Ethos_Dataset_Multi_Label.csv")),
    ]
}  # fmt: skip


def spec(dataset: str) -> DatasetSpec:
    if dataset not in DATASETS:
        raise KeyError(f"unknown dataset {dataset!r} (known: {', '.join(DATASETS)})")
    return DATASETS[dataset]
