"""Validation of HateCheck's gold labels (the HateCheck paper, section 2.5).

The paper: each of the 3,901 generated cases was labelled by exactly five of
ten trained annotators; Fleiss' kappa 0.93; "for 3,879 (99.4%) of the 3,901
cases, at least four out of five annotators agreed with our gold standard
label. For 22 cases, agreement was less than four out of five. [...] we
exclude these 22 cases. We also exclude all cases generated from the same
templates as these 22 cases [...] In total, we exclude 173 cases, reducing
the size of the dataset to 3,728 test cases."

Computed here from the released annotation file ``all_annotations.csv``
(one row per generated case: ``case_id``, ``templ_id``, ``functionality``,
``label_gold`` and ``label_1`` .. ``label_10``, the five annotators who
labelled the case filled, the others empty) and the released suite
``test_suite_cases.csv`` (the 3,728 cases kept):

- Fleiss' kappa over the two labels (:func:`fleiss_kappa`);
- the cases where at least 4 of the 5 annotators agree with the gold label;
- the exclusion rule as the paper states it (every case of a template that
  holds a case below 4 of 5), and whether it leaves exactly the released
  cases: the cases it keeps that the release lacks (and the reverse) are
  named;
- per functional test: cases, cases with at least 4 of 5, the share of all
  annotator labels equal to the gold label and the cases released. (No
  kappa per test: every case of a test has the same gold label, so nearly
  every rating falls in one category and kappa is near 0 however well the
  annotators agree.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import polars as pl

from hatecheck_pipeline.core.files import InputError, write_json
from hatecheck_pipeline.data.labels import LABELS

SOURCE = "HateCheck (Röttger et al., 2021), section 2.5"
ANNOTATOR_COLUMNS = tuple(f"label_{i}" for i in range(1, 11))
MIN_AGREEING = 4  # "at least four out of five annotators agreed with our gold standard label"


def fleiss_kappa(counts: Sequence[Sequence[int]] | np.ndarray) -> float | None:
    """Fleiss' kappa of ``counts`` (one row per subject, one column per
    category: how many raters chose it; every subject rated by the same
    number of raters). None when the expected agreement is 1 (every rating
    in one category: kappa is undefined).

    The example of Wikipedia's "Fleiss' kappa" article (10 subjects, 14
    raters, 5 categories) gives 0.210:

    >>> table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    ...          [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    >>> round(fleiss_kappa(table), 3)
    0.21
    >>> fleiss_kappa([[5, 0], [5, 0]]) is None
    True
    """
    m = np.asarray(counts, dtype=float)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError("fleiss_kappa: counts must be a non-empty subjects x categories table")
    raters = m.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError(f"fleiss_kappa: every subject needs the same number (>= 2) of raters; got {sorted(set(raters.tolist()))}")
    n = raters[0]
    p_j = m.sum(axis=0) / m.sum()
    p_i = ((m * m).sum(axis=1) - n) / (n * (n - 1))
    p_bar, p_e = p_i.mean(), float((p_j * p_j).sum())
    if p_e >= 1.0:
        return None
    return float((p_bar - p_e) / (1.0 - p_e))


def annotations_of(frame: pl.DataFrame, table: str = "all_annotations.csv") -> list[dict[str, Any]]:
    """One record per case: case_id, templ_id, functionality, gold and the
    annotators' labels (the filled ``label_<i>`` columns). A label other
    than hateful / non-hateful, or a case without annotators, is an error
    naming the case."""
    missing = [c for c in ("case_id", "templ_id", "functionality", "label_gold", *ANNOTATOR_COLUMNS) if c not in frame.columns]
    if missing:
        raise InputError(f"{table}: missing column(s) {missing}")
    out = []
    for r in frame.iter_rows(named=True):
        filled = [c for c in ANNOTATOR_COLUMNS if r[c] not in (None, "")]
        labels = [r[c] for c in filled]
        bad = [x for x in [r["label_gold"], *labels] if x not in LABELS]
        if bad or not labels:
            raise InputError(f"{table}: case {r['case_id']}: labels {bad or 'none'} (expected annotator labels among {list(LABELS)})")
        out.append(
            {
                "case_id": str(r["case_id"]),
                "templ_id": str(r["templ_id"]),
                "functionality": r["functionality"],
                "gold": r["label_gold"],
                "labels": labels,
                "annotators": filled,
            }
        )
    return out


def _counts(cases: Iterable[Mapping[str, Any]]) -> np.ndarray:
    return np.array([[sum(x == lab for x in c["labels"]) for lab in LABELS] for c in cases], dtype=float)


def _pct(k: int, n: int) -> float | None:
    return round(100.0 * k / n, 2) if n else None


def _id_order(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=lambda s: (0, int(s)) if s.isdigit() else (1, s))


def agreement(cases: Sequence[Mapping[str, Any]], released: Iterable[str]) -> dict[str, Any]:
    """Section 2.5's figures of ``cases`` (:func:`annotations_of`) and the
    exclusion rule checked against the ``released`` case ids."""
    raters = {len(c["labels"]) for c in cases}
    if len(raters) != 1:
        raise InputError(f"all_annotations.csv: cases have {sorted(raters)} annotators; section 2.5 has five per case")
    agreeing = {c["case_id"]: sum(x == c["gold"] for x in c["labels"]) for c in cases}
    below = [c for c in cases if agreeing[c["case_id"]] < MIN_AGREEING]
    bad_templates = {c["templ_id"] for c in below}
    kept = {c["case_id"] for c in cases if c["templ_id"] not in bad_templates}
    released = {str(x) for x in released}
    by_id = {c["case_id"]: c for c in cases}
    unknown = released - set(by_id)
    if unknown:
        raise InputError(f"test_suite_cases.csv: case(s) {_id_order(unknown)[:10]} are not in all_annotations.csv")

    def described(ids: Iterable[str]) -> list[dict[str, Any]]:
        return [
            {"case_id": i, "templ_id": by_id[i]["templ_id"], "functionality": by_id[i]["functionality"], "agreeing": agreeing[i]}
            for i in _id_order(ids)
        ]

    per_functionality = {}
    for code in dict.fromkeys(c["functionality"] for c in cases):
        part = [c for c in cases if c["functionality"] == code]
        k = sum(agreeing[c["case_id"]] >= MIN_AGREEING for c in part)
        labels = sum(len(c["labels"]) for c in part)
        per_functionality[code] = {
            "n_cases": len(part),
            "n_agree_4of5": k,
            "pct_agree_4of5": _pct(k, len(part)),
            "pct_labels_agreeing": _pct(sum(agreeing[c["case_id"]] for c in part), labels),
            "n_released": sum(c["case_id"] in released for c in part),
        }
    n, n_ok = len(cases), len(cases) - len(below)
    excluded = n - len(kept)
    return {
        "table": "hatecheck_s25",
        "paper": SOURCE,
        "n_cases": n,
        "annotators_per_case": raters.pop(),
        "annotators": len({a for c in cases for a in c.get("annotators", ())}),
        "fleiss_kappa": round(fleiss_kappa(_counts(cases)), 4),
        "n_agree_4of5": n_ok,
        "pct_agree_4of5": _pct(n_ok, n),
        "n_below_4of5": len(below),
        "below_4of5": described(c["case_id"] for c in below),
        "exclusion": {
            "rule": "exclude every case whose template (templ_id) holds a case where fewer than 4 of its 5 annotators "
            "agree with the gold label (section 2.5)",
            "templates": _id_order(bad_templates),
            "n_excluded": excluded,
            "n_kept": len(kept),
            "n_released": len(released),
            "matches_release": kept == released,
            "kept_not_released": described(kept - released),
            "released_not_kept": described(released - kept),
        },
        "per_functionality": per_functionality,
    }


def hatecheck_agreement(annotations: Path, released: Path, out: Path) -> str:
    """Stage ``hatecheck_agreement``: section 2.5 of the HateCheck paper
    from the raw annotation file of all 3,901 generated cases and the
    released suite (its case ids) -> ``out`` (JSON)."""
    frame = pl.read_csv(annotations, infer_schema_length=0)
    cases = annotations_of(frame, str(annotations))
    ids = pl.read_csv(released, infer_schema_length=0)
    if "case_id" not in ids.columns:
        raise InputError(f"{released}: no case_id column")
    doc = agreement(cases, ids["case_id"].to_list())
    doc["files"] = {"annotations": str(annotations), "released": str(released)}
    write_json(doc, out)
    e = doc["exclusion"]
    return (
        f"HateCheck gold-label validation: Fleiss' kappa {doc['fleiss_kappa']}, {doc['n_agree_4of5']} of {doc['n_cases']} "
        f"cases with >= 4 of 5 agreeing; the exclusion rule keeps {e['n_kept']} (released {e['n_released']}) -> {out}"
    )
