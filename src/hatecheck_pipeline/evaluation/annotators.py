"""Annotator disagreement on Multilingual HateCheck (the MHC paper's
Table 5, appendix D).

The paper: "Proportion of entries and absolute number of entries where at
least 2/3 annotators disagreed with the expert gold label, for each
language in MHC". Every MHC case file carries the three annotators' labels
(``label_annotated``, a Python-list string such as ``['hateful',
'non-hateful', 'hateful']``), their majority (``label_annotated_maj``) and
the authors' flags ``disagreement_in_case`` (the majority differs from the
gold label) and ``disagreement_in_template`` (some case of the same
template is so flagged). The figures are computed here from the annotator
labels themselves (at least 2 of the 3 differ from ``label_gold``, i.e.
``label_original`` of the interim table), and every case is checked
against the authors' flag: a case where the two disagree is an error naming
its id, so the published flags and our reading of "2/3" cannot drift apart
silently. The share of cases whose template holds a disagreement is an
extra column (the paper reports it only as a flag).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import polars as pl

from hatecheck_pipeline.core.files import InputError, read_json, write_json
from hatecheck_pipeline.data.labels import LABELS

SOURCE = "Multilingual HateCheck (Röttger et al., 2022), Table 5 (appendix D)"


def annotator_labels(value: str | None, case_id: str, table: str) -> list[str]:
    """The annotators' labels of one case from its ``label_annotated`` string.

    >>> annotator_labels("['hateful', 'non-hateful', 'hateful']", "french-1", "t.parquet")
    ['hateful', 'non-hateful', 'hateful']
    >>> annotator_labels("hateful", "x-1", "t.parquet")
    Traceback (most recent call last):
    ...
    hatecheck_pipeline.core.files.InputError: t.parquet: case x-1: label_annotated 'hateful' is not a list of annotator labels (hateful / non-hateful)
    """
    try:
        labels = ast.literal_eval(value) if value is not None else None
    except (ValueError, SyntaxError):
        labels = None
    if not isinstance(labels, list) or not labels or any(label not in LABELS for label in labels):
        raise InputError(f"{table}: case {case_id}: label_annotated {value!r} is not a list of annotator labels (hateful / non-hateful)")
    return labels


def disagreement(cases: pl.DataFrame, table: str = "mhc table") -> dict[str, Any]:
    """Table 5 per language (and over all languages): cases, cases where at
    least 2 of the 3 annotators disagree with the gold label (n and %), and
    the share of cases in a template with such a case. ``cases``: columns
    id, language, label_original (gold), label_annotated,
    disagreement_in_case, disagreement_in_template."""
    rows = []
    for r in cases.select(
        "id", "language", "label_original", "label_annotated", "disagreement_in_case", "disagreement_in_template"
    ).iter_rows(named=True):
        labels = annotator_labels(r["label_annotated"], r["id"], table)
        against = sum(label != r["label_original"] for label in labels)
        disagree = 2 * against > len(labels)  # a majority of the annotators (2 of 3) against the gold label
        if bool(r["disagreement_in_case"]) != disagree:
            raise InputError(
                f"{table}: case {r['id']}: {against} of {len(labels)} annotators disagree with the gold label "
                f"{r['label_original']!r} but disagreement_in_case is {r['disagreement_in_case']}"
            )
        rows.append({"language": r["language"], "disagree": disagree, "in_template": bool(r["disagreement_in_template"])})
    frame = pl.DataFrame(rows, schema={"language": pl.String, "disagree": pl.Boolean, "in_template": pl.Boolean})

    def figures(part: pl.DataFrame) -> dict[str, Any]:
        n, k, t = part.height, int(part["disagree"].sum()), int(part["in_template"].sum())
        return {
            "n_cases": n,
            "n_disagreement": k,
            "pct_disagreement": round(100.0 * k / n, 2) if n else None,
            "n_in_disagreement_template": t,
            "pct_in_disagreement_template": round(100.0 * t / n, 2) if n else None,
        }

    per_language = {lang: figures(frame.filter(pl.col("language") == lang)) for lang in dict.fromkeys(frame["language"].to_list())}
    return {
        "table": "mhc_t5",
        "definition": "a case counts when at least 2 of its 3 annotators' labels differ from the expert gold label "
        "(computed from label_annotated; equal to the authors' disagreement_in_case flag for every case)",
        "paper": SOURCE,
        "per_language": per_language,
        "overall": figures(frame),
    }


def mhc_disagreement(table: Path, validation: Path, out: Path) -> str:
    """Stage ``mhc_disagreement``: the MHC paper's Table 5 from the
    validated MHC table (all configured languages) -> ``out`` (JSON)."""
    if not read_json(validation).get("success"):
        raise InputError(f"{validation}: the MHC table did not pass validation; not computing its annotator disagreement")
    cases = pl.read_parquet(table)
    doc = disagreement(cases, str(table))
    write_json(doc, out)
    o = doc["overall"]
    return f"MHC annotator disagreement: {o['n_disagreement']} of {o['n_cases']} cases ({o['pct_disagreement']}%) -> {out}"
