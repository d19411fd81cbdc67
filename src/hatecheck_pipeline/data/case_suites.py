"""Builders of the test-case suites: HateCheck and Multilingual HateCheck
(functional tests, with their annotations and templates), CrowS-Pairs
(minimal pairs, its own schema) and WinoBias (pro / anti-stereotyped
sentence pairs in CrowS-Pairs' schema)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import REASON, ROW, SOURCE, read_records
from hatecheck_pipeline.core.paths import raw as raw_path
from hatecheck_pipeline.data.harmonise import (
    Harmonised,
    binary_label,
    flag,
    harmonise,
    quarantine_checks,
    split_off,
)
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL


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


# WinoBias (Zhao et al. 2018) as CrowS-Pairs' Table 2 scores it: each line of
# a pro-stereotyped file against the same line of its anti-stereotyped file.
WINOBIAS_TYPES = (1, 2)  # 1 = WinoBias-knowledge, 2 = WinoBias-syntax
WINOBIAS_SPLITS = ("dev", "test")


def winobias_files(wino_type: int, split: str) -> tuple[str, str]:
    """(pro, anti) file names of one type and split in the raw source.

    >>> winobias_files(2, "test")
    ('pro_stereotyped_type2.txt.test', 'anti_stereotyped_type2.txt.test')
    """
    return f"pro_stereotyped_type{wino_type}.txt.{split}", f"anti_stereotyped_type{wino_type}.txt.{split}"


def winobias_file_names() -> list[str]:
    """Every raw file the WinoBias builder reads."""
    return [f for t in WINOBIAS_TYPES for s in WINOBIAS_SPLITS for f in winobias_files(t, s)]


def winobias_line(line: str) -> tuple[str | None, str]:
    """(leading line number, sentence) of a WinoBias line: the number split
    off, the ``[...]`` mention brackets removed, spaces collapsed.

    >>> winobias_line("12 [The chief] hired the assistant because [he] needed help.")
    ('12', 'The chief hired the assistant because he needed help.')
    >>> winobias_line("no number here")
    (None, 'no number here')
    """
    m = re.match(r"\s*(\d+)\s+(.*)", line)
    number, text = (m.group(1), m.group(2)) if m else (None, line)
    return number, " ".join(text.replace("[", "").replace("]", "").split())


def read_winobias_pairs(pro: str | Path, anti: str | Path, wino_type: int, split: str) -> pl.DataFrame:
    """One row per line of the pro-stereotyped file paired with the same line
    of the anti-stereotyped one (string columns, as ``read_records`` gives,
    with ``_row``, ``_reason`` and ``_source``): a pair whose line numbers
    differ, whose files differ in length, or whose two sentences are equal is
    given a reason (quarantined)."""
    texts = [Path(p).read_text("utf-8").splitlines() for p in (pro, anti)]
    texts = [[line for line in lines if line.strip()] for lines in texts]
    rows = []
    for i in range(max(len(texts[0]), len(texts[1]))):
        raw_pro = texts[0][i] if i < len(texts[0]) else ""
        raw_anti = texts[1][i] if i < len(texts[1]) else ""
        (n_pro, s_pro), (n_anti, s_anti) = winobias_line(raw_pro), winobias_line(raw_anti)
        reason = None
        if i >= len(texts[0]) or i >= len(texts[1]):
            reason = f"unpaired_line: line {i + 1} is in only one of the pro / anti files"
        elif n_pro != n_anti:
            reason = f"misaligned_pair: pro line number {n_pro} != anti line number {n_anti}"
        elif s_pro == s_anti:
            reason = "identical_pair: the pro and anti sentences are equal"
        rows.append(
            {
                ROW: i + 1,
                REASON: reason,
                SOURCE: f"{Path(pro).name} + {Path(anti).name}",
                "line": n_pro or n_anti,
                "pro": raw_pro,
                "anti": raw_anti,
                "sent_more": s_pro,
                "sent_less": s_anti,
                "winobias_type": wino_type,
                "split": split,
            }
        )
    schema = {
        ROW: pl.Int64,
        REASON: pl.String,
        SOURCE: pl.String,
        "line": pl.String,
        "pro": pl.String,
        "anti": pl.String,
        "sent_more": pl.String,
        "sent_less": pl.String,
        "winobias_type": pl.Int64,
        "split": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def winobias(params: Mapping[str, Any]) -> Harmonised:
    """WinoBias type 1 (knowledge) and type 2 (syntax), dev and test: pairs
    in CrowS-Pairs' schema (the pro-stereotyped sentence is ``sent_more``,
    the anti-stereotyped one ``sent_less``; every pair ``stereo``, bias type
    ``gender``), plus ``winobias_type``, ``split`` and the files' ``line``."""
    parts = []
    for t in WINOBIAS_TYPES:
        for s in WINOBIAS_SPLITS:
            pro, anti = winobias_files(t, s)
            parts.append(read_winobias_pairs(raw_path("winobias", pro), raw_path("winobias", anti), t, s))
    raw = pl.concat(parts)
    raw_columns = ["line", "pro", "anti", "winobias_type", "split"]
    frame = (
        raw.lazy()
        .with_columns(
            id=pl.format("type{}-{}-{}", "winobias_type", "split", pl.col("line").fill_null(pl.col(ROW).cast(pl.String))),
            text=pl.col("sent_more"),
            stereo_antistereo=pl.lit("stereo"),
            bias_type=pl.lit("gender"),
        )
        .with_columns(label_original=pl.col("stereo_antistereo"), label=pl.col("stereo_antistereo"))
        .pipe(quarantine_checks, False)
        .with_columns(flag(pl.lit("empty_text: sent_less"), pl.col("sent_less").fill_null("").str.strip_chars() == ""))
        .collect()
    )
    keep = ["id", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "winobias_type", "split", "line"]
    return split_off(frame, "winobias", raw_columns, keep)
