"""Failing cases under the functional tests a model fails.

Each score stage writes ``results/<model>/<suite>/failures.csv``: every
case the model got wrong, in the suite's order (``evaluation.scoring``).
Wherever the report or a model page shows a functional test whose accuracy
is below the mark (``evaluation.below_mark``, 50% as in the papers), these
functions list the first few of its failing cases (text, gold label,
prediction, p(hateful)) and link the whole file.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Iterable, Mapping

import polars as pl

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.cells import fmt

SHOWN = 3  # failing cases shown per functional test


def read_failures(path: str | Path | None) -> pl.DataFrame | None:
    """A failures.csv as text columns (None: no such file, or empty)."""
    if path is None or not Path(path).exists() or not Path(path).stat().st_size:
        return None
    return pl.read_csv(path, infer_schema_length=0)


def link(path: str | Path, page: str | Path) -> str:
    """``path`` relative to the folder of the page that links it.

    >>> link("results/kw/hatecheck/failures.csv", "reports/models/kw.html")
    '../../results/kw/hatecheck/failures.csv'
    """
    return os.path.relpath(path, Path(page).parent)


def _p(value: Any) -> str:
    try:
        return fmt(float(value) * 100) + "%"
    except (TypeError, ValueError):
        return "–"


def cases_list(failures: pl.DataFrame | None, functionality: str, href: str, k: int = SHOWN) -> str:
    """The first ``k`` failing cases of one functional test (an HTML list),
    then a link to the whole file with how many there are."""
    if failures is None or "functionality" not in failures.columns:
        return f"<p class='note'>No failing cases listed: <a href='{escape(href)}'>failures.csv</a> is missing.</p>"
    wrong = failures.filter(pl.col("functionality") == functionality)
    has_p = "p_hateful" in wrong.columns
    items = "".join(
        f"<li><q>{escape(r.get('text') or '')}</q> <span class='note'>gold {escape(r['gold_label'])}, "
        f"predicted {escape(r['predicted_label'])}{', p(hateful) ' + _p(r['p_hateful']) if has_p else ''} "
        f"(id {escape(str(r['id']))})</span></li>"
        for r in wrong.head(k).iter_rows(named=True)
    )
    more = f"{wrong.height} failing case{'s' if wrong.height != 1 else ''} in all"
    return (
        f"<ul class='failing-cases'>{items}</ul>" if items else ""
    ) + f"<p class='note'>{more}: <a href='{escape(href)}'>failures.csv</a></p>"


def below(cells: Iterable[Mapping[str, Any]], below_mark: float) -> list[Mapping[str, Any]]:
    """The cells (one per functional test) whose accuracy is below the mark.

    >>> [c["row"] for c in below([{"row": "a", "value": 40.0}, {"row": "b", "value": 50.0}, {"row": "c", "value": None}], 50)]
    ['a']
    """
    return [c for c in cells if c.get("value") is not None and c["value"] < below_mark]


def failing_tests_block(
    cells: Iterable[Mapping[str, Any]], dataset: str, failures: pl.DataFrame | None, href: str, below_mark: float, heading: str = ""
) -> str:
    """Under every functional test below the mark (``cells``: one suite's
    accuracy per functionality), its first failing cases; '' when it fails
    none."""
    failing = sorted(below(cells, below_mark), key=lambda c: P.functionality_order(c["row"], dataset))
    if not failing:
        return ""
    parts = [
        f"<details class='failing-tests'><summary>{escape(heading) or 'Failing cases'}: "
        f"{len(failing)} functional test{'s' if len(failing) != 1 else ''} below {below_mark:g}%</summary>"
    ]
    for c in failing:
        parts.append(
            f"<h5>{escape(P.functionality_label(c['row'], dataset))}: {fmt(c['value'])}%</h5>" + cases_list(failures, c["row"], href)
        )
    return "".join(parts) + "</details>"


def hrefs(failure_files: Mapping[str, str | Path], page: str | Path) -> dict[str, tuple[str, str]]:
    """score stage -> (its failures.csv, the link to it from ``page``)."""
    return {stage: (str(path), link(path, page)) for stage, path in failure_files.items()}


def table_block(cells: pl.DataFrame, dataset: str, failures: Mapping[str, tuple[str, str]], below_mark: float, group: str = "model") -> str:
    """A long table's functional-test cells (hatecheck_t1, mhc_t1): for each
    score stage behind them (a model on a suite), the failing cases under
    each test below the mark. ``failures``: score stage -> (its
    failures.csv, the link to it, :func:`hrefs`); ``group``: the cell
    column naming each block (the model, or the MHC language)."""
    if not failures or cells.is_empty() or "stage" not in cells.columns:
        return ""
    out = []
    for (stage,), part in cells.group_by("stage", maintain_order=True):
        if str(stage) not in failures:
            continue
        path, href = failures[str(stage)]
        first = part.row(0, named=True)
        out.append(
            failing_tests_block(part.to_dicts(), dataset, read_failures(path), href, below_mark, heading=str(first.get(group) or stage))
        )
    return "".join(out)
