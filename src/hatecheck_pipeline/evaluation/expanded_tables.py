"""Original vs expanded suites: which published suite each expanded suite
is compared with, the per-functionality accuracy table of the two
(GPT-HateCheck Figure 4) and, for a perturbed suite, its flip rates per
perturbation type beside the accuracy on the same pairs (its metrics'
``invariance`` section, :mod:`.invariance`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from hatecheck_pipeline.evaluation.cells import Source, _cell, boot, cell_id, frame
from hatecheck_pipeline.evaluation.invariance import ANY


def original_suite(suite: str) -> str | None:
    """The published suite an expanded suite is compared with (None: not an
    expanded suite). Language-specific expansions of English go to HateCheck,
    of any other language to that MHC language.

    >>> original_suite("perturbed_hatecheck"), original_suite("perturbed_mhc_german")
    ('hatecheck', 'mhc_german')
    >>> original_suite("extended_english"), original_suite("gpt_hatecheck_polish"), original_suite("mhc_german")
    ('hatecheck', 'mhc_polish', None)
    """
    if suite == "perturbed_hatecheck":
        return "hatecheck"
    if suite.startswith("perturbed_mhc_"):
        return "mhc_" + suite[len("perturbed_mhc_") :]
    for prefix in ("extended_", "gpt_hatecheck_"):
        if suite.startswith(prefix):
            lang = suite[len(prefix) :]
            return "hatecheck" if lang == "english" else f"mhc_{lang}"
    return None


def comparison_pairs(sources: list[Source]) -> list[tuple[Source, Source]]:
    """(original, expanded) sources of the same model, for every expanded
    suite whose original suite the model is also scored on."""
    by_key = {(s.model, s.suite): s for s in sources}
    out = []
    for s in sources:
        orig = original_suite(s.suite) if s.expanded else None
        if orig is not None and (s.model, orig) in by_key:
            out.append((by_key[(s.model, orig)], s))
    return out


def expanded_tables(loaded: list[tuple[Source, dict]], summary_file: str, stage: str) -> dict[str, pl.DataFrame]:
    """Per-functionality accuracy on the original vs the expanded suite
    (GPT-HateCheck Figure 4): one row per functionality of the expanded
    suite's cases (the SOURCE case's functionality for perturbed cases),
    columns ``original`` / ``expanded`` (each from its own metrics file) and
    ``change`` (expanded - original, derived here), plus a ``hateful cases``
    row (accuracy on the hateful cases of both)."""
    docs = {(s.model, s.suite): (s, d) for s, d in loaded}
    rows: list[dict[str, Any]] = []
    table = "expanded_functionality"
    for orig, exp in comparison_pairs([s for s, _ in loaded]):
        o_doc, e_doc = docs[(orig.model, orig.suite)][1], docs[(exp.model, exp.suite)][1]
        o_sec = o_doc.get("by_functionality", {})
        e_sec = e_doc.get("by_source_functionality") or e_doc.get("by_functionality", {})
        pairs = [(f, o_sec.get(f), fig) for f, fig in e_sec.items()]
        o_h, e_h = o_doc.get("by_label", {}).get("hateful"), e_doc.get("by_label", {}).get("hateful")
        if e_h and e_h.get("n"):
            pairs.append(("hateful cases", o_h, e_h))
        lang = exp.language or orig.language
        src = Source(exp.model, exp.suite, exp.dataset, lang, exp.metrics, exp.stage, exp.kind)
        for func, o_fig, e_fig in pairs:
            ids = {c: cell_id(table, exp.model, exp.suite, func, c) for c in ("original", "expanded", "change")}
            o_acc = (o_fig or {}).get("accuracy") or {}
            e_acc = (e_fig or {}).get("accuracy") or {}
            if o_fig is not None:
                rows.append(
                    _cell(
                        table,
                        src,
                        func,
                        "original",
                        o_acc,
                        o_fig.get("n"),
                        setting=orig.suite,
                        metrics_file=orig.metrics,
                        stage=orig.stage,
                        **boot(o_doc, o_fig),
                    )
                    | {"cell_id": ids["original"]}
                )
            rows.append(
                _cell(table, src, func, "expanded", e_acc, e_fig.get("n"), setting=orig.suite, **boot(e_doc, e_fig))
                | {"cell_id": ids["expanded"]}
            )
            if o_acc.get("value") is not None and e_acc.get("value") is not None:
                change = round(e_acc["value"] - o_acc["value"], 1)
                rows.append(
                    _cell(table, src, func, "change", change, None, setting=orig.suite, metrics_file=summary_file, stage=stage)
                    | {"cell_id": ids["change"]}
                )
    return {table: frame(rows), INVARIANCE: invariance_cells(loaded)}


INVARIANCE = "expanded_invariance"
# the columns of the invariance table: label-preserving pairs (INV), then label-changing ones (DIR)
INVARIANCE_COLUMNS = (
    ("label_preserving", "flip_rate"),
    ("label_preserving", "accuracy_source"),
    ("label_preserving", "accuracy_perturbed"),
    ("label_changing", "directional"),
)


def invariance_cells(loaded: list[tuple[Source, dict]]) -> pl.DataFrame:
    """One row per (perturbed suite, generator) and one over all generators
    (``any perturbation``: source cases flipped by at least one): the flip
    rate, the accuracy of the same pairs on the source and on the perturbed
    cases and, for a label-changing generator, the directional share; each
    cell read from the perturbed suite's metrics (``invariance``), its
    ``setting`` the source suite."""
    rows: list[dict[str, Any]] = []
    for src, doc in loaded:
        inv = doc.get("invariance")
        if not inv:
            continue
        entries = [
            (gen, e.get(part), part, column) for gen, e in inv.get("by_generator", {}).items() for part, column in INVARIANCE_COLUMNS
        ]
        entries.append((ANY, inv.get("any"), "label_preserving", "flip_rate"))
        for gen, entry, part, column in entries:
            if not entry:
                continue
            rows.append(
                _cell(INVARIANCE, src, gen, column, entry[column], entry.get("n"), setting=inv.get("source_suite"), **boot(doc, entry))
                | {"cell_id": cell_id(INVARIANCE, src.model, src.suite, gen, column)}
            )
    return frame(rows)
