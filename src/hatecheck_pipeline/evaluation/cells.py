"""The long tables' cell schema and the cell builders every table uses.

Every table is written in long form, one row per cell, and every cell
carries its provenance: the metrics file and the stage that produced it
(``metrics_file``, ``stage``) and a stable ``cell_id`` that the report puts
on the cell and ``hatecheck-pipeline lineage`` accepts. A :class:`Source` is
one scored (model, suite) whose METRICS.json the cells are read from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import polars as pl

from hatecheck_pipeline.suites.registry import EXPANDED, FUNCTIONAL, HELDOUT

CELL_COLUMNS = {
    "table": pl.String,
    "model": pl.String,
    "suite": pl.String,
    "language": pl.String,
    "row": pl.String,
    "column": pl.String,
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,
    "setting": pl.String,
    "metrics_file": pl.String,
    "stage": pl.String,
    "cell_id": pl.String,
    # the interval's bootstrap: template (functional / expanded suites) or case (held-out sets), and how many were resampled
    "resampling_unit": pl.String,
    # the interval's confidence level (its metrics file's bootstrap.level: evaluation.ci_level when it was scored)
    "ci_level": pl.Float64,
    "n_clusters": pl.Int64,
    # how many slurs were resampled beside the templates (HateCheck, MHC: templates crossed with slurs)
    "n_fillers": pl.Int64,
    # why a null value is undefined (a zero denominator), or which parts a mean left out as undefined
    "undefined": pl.String,
}


@dataclass(frozen=True)
class Source:
    """One scored (model, suite): where its metrics are and who wrote them."""

    model: str
    suite: str
    dataset: str
    language: str | None
    metrics: str
    stage: str
    kind: str = FUNCTIONAL  # the suite's kind: heldout | functional | expanded
    replicates: str | None = None  # its score stage's bootstrap values (groups with intervals of differences)

    @property
    def heldout(self) -> bool:
        return self.kind == HELDOUT

    @property
    def expanded(self) -> bool:
        return self.kind == EXPANDED


def cell_id(*parts: str) -> str:
    """Stable id of a report cell (no spaces or quotes).

    >>> cell_id("mhc_t7", "XTC", "german", "macro_f1")
    'mhc_t7:XTC:german:macro_f1'
    >>> cell_id("hatecheck_t4", "B-D", "trans people", "accuracy")
    'hatecheck_t4:B-D:trans_people:accuracy'
    """
    return ":".join(re.sub(r"[^A-Za-z0-9_.\-]+", "_", str(p)) for p in parts)


def boot(doc: Mapping[str, Any], figures: Mapping[str, Any] | None) -> dict[str, Any]:
    """A figure's resampling unit and confidence level (its metrics file's
    ``bootstrap``) and number of resampled units (``n_clusters``), for
    :func:`_cell`.

    >>> boot({"bootstrap": {"resampling_unit": "template", "level": 0.9}}, {"n": 7, "n_clusters": 1, "n_fillers": 3})
    {'unit': 'template', 'level': 0.9, 'n_clusters': 1, 'n_fillers': 3}
    """
    return {
        "unit": (doc.get("bootstrap") or {}).get("resampling_unit"),
        "level": (doc.get("bootstrap") or {}).get("level"),
        "n_clusters": (figures or {}).get("n_clusters"),
        "n_fillers": (figures or {}).get("n_fillers"),
    }


def _cell(
    table: str, src: Source, row: str, column: str, figure: dict[str, Any] | float | None, n: int | None, **extra: Any
) -> dict[str, Any]:
    fig = figure if isinstance(figure, dict) else {"value": figure}
    interval = fig.get("ci_low") is not None
    return {
        "table": table,
        "model": src.model,
        "suite": src.suite,
        "language": src.language,
        "row": row,
        "column": column,
        "value": fig.get("value"),
        "ci_low": fig.get("ci_low"),
        "ci_high": fig.get("ci_high"),
        "n": n,
        "setting": extra.get("setting"),
        "metrics_file": extra.get("metrics_file", src.metrics),
        "stage": extra.get("stage", src.stage),
        "resampling_unit": extra.get("unit") if interval else None,
        "ci_level": extra.get("level") if interval else None,
        "n_clusters": extra.get("n_clusters") if interval else None,
        "n_fillers": extra.get("n_fillers") if interval else None,
        "undefined": fig.get("undefined"),
        "cell_id": cell_id(table, src.model, *([src.language] if src.language and extra.get("per_language", True) else []), row, column),
    }


def frame(cells: Iterable[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(cells), schema=CELL_COLUMNS)


def section_cells(table: str, loaded: list[tuple[Source, dict]], section: str, metric: str, per_language: bool = True) -> pl.DataFrame:
    """One cell per (source, group) of a METRICS.json section."""
    out = []
    for src, doc in loaded:
        for group, figures in doc.get(section, {}).items():
            out.append(
                _cell(table, src, group, metric, figures.get(metric), figures.get("n"), per_language=per_language, **boot(doc, figures))
            )
    return frame(out)


# The ``setting`` of a held-out cell whose cases may be the model's own
# training data (a classifier trained elsewhere on that dataset): shown
# marked, never set beside the others as a held-out figure.
SEEN_IN_TRAINING = "seen in training"


def overall_cells(
    table: str, loaded: list[tuple[Source, dict]], metrics: list[str], row_of=lambda s: s.language or s.suite
) -> pl.DataFrame:
    out = []
    for src, doc in loaded:
        seen = {"setting": SEEN_IN_TRAINING} if doc.get("seen_in_training") else {}
        for metric in metrics:
            out.append(
                _cell(
                    table,
                    src,
                    row_of(src),
                    metric,
                    doc["overall"].get(metric),
                    doc["overall"]["n"],
                    per_language=False,
                    **boot(doc, doc["overall"]),
                    **seen,
                )
            )
    return frame(out)
