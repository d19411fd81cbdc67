"""Builders of the test-case suites: HateCheck and Multilingual HateCheck
(functional tests, with their annotations and templates) and CrowS-Pairs
(minimal pairs, its own schema)."""

from __future__ import annotations

from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import REASON, ROW, SOURCE, read_records
from hatecheck_pipeline.core.paths import raw as raw_path
from hatecheck_pipeline.data.harmonise import (
    HATEFUL,
    NON_HATEFUL,
    Harmonised,
    binary_label,
    flag,
    harmonise,
    quarantine_checks,
    split_off,
)


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

