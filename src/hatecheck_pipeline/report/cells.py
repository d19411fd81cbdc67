"""Table cells of the report: every cell carries its provenance
(``data-cell-id`` accepted by ``hatecheck-pipeline lineage``, ``data-metrics``,
``data-stage``, a tooltip), next to the published figure where one exists."""

from __future__ import annotations

from html import escape
from typing import Any, Collection, Iterable, Mapping

import polars as pl

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import SEEN_IN_TRAINING, cell_id


NA = "n/a"  # an undefined figure (zero denominator), as opposed to a missing one ("–")


def fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


UNIT_WORDS = {"template": ("template-level", "templates"), "case": ("case-level", "cases")}


def resampling(cell: Mapping[str, Any]) -> str:
    """How the cell's interval was bootstrapped (empty for cells from
    metrics files that do not say).

    >>> resampling({"resampling_unit": "template", "n_clusters": 845})
    ', template-level bootstrap over 845 templates'
    >>> resampling({"resampling_unit": "template", "n_clusters": 8, "n_fillers": 18})
    ', two-way bootstrap over 8 templates and 18 slurs'
    >>> resampling({"resampling_unit": None})
    ''
    """
    unit = cell.get("resampling_unit")
    if not unit:
        return ""
    level, plural = UNIT_WORDS.get(str(unit), (f"{unit}-level", f"{unit}s"))
    count, slurs = cell.get("n_clusters"), cell.get("n_fillers")
    if slurs and count is not None:  # a null in a table is NaN or None
        try:
            slurs = int(slurs)
        except (TypeError, ValueError):
            slurs = 0
        if slurs > 0:
            return f", two-way bootstrap over {count} {plural} and {slurs} slurs"
    return f", {level} bootstrap" + ("" if count is None else f" over {count} {plural}")


# --------------------------------------------------------- interval levels
# Each cell's interval is at its metrics file's bootstrap level (``ci_level``:
# evaluation.ci_level when it was scored); a page names the level its cells
# share, or says that each is at its own.

MIXED_LEVELS = "(at each cell's own level)"


def _known(level: Any) -> float | None:
    """A level, or None for a missing one (None or NaN)."""
    return None if level is None or level != level else float(level)


def level_pct(level: float | None) -> str:
    """A confidence level as a percentage ('' when it is not known).

    >>> level_pct(0.95), level_pct(0.9), level_pct(0.975), level_pct(None)
    ('95%', '90%', '97.5%', '')
    """
    level = _known(level)
    return "" if level is None else f"{100 * level:g}%"


def ci_name(level: float | None, noun: str = "CI") -> str:
    """An interval named with its level (the bare noun when it is not known).

    >>> ci_name(0.9), ci_name(0.95, "interval"), ci_name(None)
    ('90% CI', '95% interval', 'CI')
    """
    pct = level_pct(level)
    return f"{pct} {noun}" if pct else noun


def levels(*tables: pl.DataFrame | Iterable[Mapping[str, Any]]) -> set[float]:
    """The distinct levels of the cells' intervals (long-table frames, or
    cells as dicts); a table without the ``ci_level`` column adds none.

    >>> sorted(levels([{"ci_level": 0.9}, {"ci_level": None}], pl.DataFrame({"ci_level": [0.95, 0.9]})))
    [0.9, 0.95]
    """
    found: set[float] = set()
    for table in tables:
        if isinstance(table, pl.DataFrame):
            rows: Iterable[Any] = table["ci_level"].to_list() if "ci_level" in table.columns else []
        else:
            rows = (cell.get("ci_level") for cell in table)
        found |= {level for level in map(_known, rows) if level is not None}
    return found


def page_ci(found: Collection[float], fallback: float | None = None, noun: str = "interval") -> str:
    """A page's name for its intervals: with their level when they share
    one, saying each is at its own when they differ; ``fallback`` (the
    configured ``evaluation.ci_level``) when no cell has one, else no number.

    >>> page_ci({0.9}), page_ci({0.9, 0.95}, 0.95, "CI"), page_ci(set(), 0.9), page_ci(set())
    ('90% interval', "CI (at each cell's own level)", '90% interval', 'interval')
    """
    if len(found) > 1:
        return f"{noun} {MIXED_LEVELS}"
    return ci_name(next(iter(found)) if found else fallback, noun)


TOO_FEW = "too few cases to compare"


def too_wide(low: float | None, high: float | None, max_width: float | None, level: float | None = None) -> str:
    """The marker's tooltip text when an interval (at ``level``) is wider
    than ``max_width`` percentage points ('' when it is not, or has no
    interval, or there is no threshold).

    >>> too_wide(20.0, 80.0, 30, 0.95)
    'Too few cases to compare: the 95% interval is 60.0 points wide (threshold 30). '
    >>> too_wide(20.0, 80.0, 30, 0.9)
    'Too few cases to compare: the 90% interval is 60.0 points wide (threshold 30). '
    >>> too_wide(60.0, 70.0, 30), too_wide(None, None, 30), too_wide(20.0, 80.0, None)
    ('', '', '')
    """
    if max_width is None or low is None or high is None or high - low <= max_width:
        return ""
    return (
        f"{TOO_FEW[0].upper()}{TOO_FEW[1:]}: the {ci_name(level, 'interval')} is {high - low:.1f} points wide (threshold {max_width:g}). "
    )


def cell_too_wide(cell: Mapping[str, Any], max_width: float | None) -> str:
    """:func:`too_wide` of a long-table cell, at its own level."""
    return too_wide(cell.get("ci_low"), cell.get("ci_high"), max_width, cell.get("ci_level"))


def provenance(cell: Mapping[str, Any]) -> str:
    """Tooltip text of a cell: figure (or why it is undefined), interval
    (at its level), n, what a mean left out, and where it came from."""
    ci = (
        ""
        if cell.get("ci_low") is None
        else f" [{ci_name(cell.get('ci_level'))} {fmt(cell['ci_low'])}–{fmt(cell['ci_high'])}{resampling(cell)}]"
    )
    n = "" if cell.get("n") is None else f", n={cell['n']}"
    value, why = cell.get("value"), cell.get("undefined")
    shown = f"{NA}: undefined ({why})" if value is None and why else fmt(value) + (f" ({why})" if why else "")
    return f"{shown}{ci}{n}. From {cell['metrics_file']} (stage {cell['stage']}); lineage: hatecheck-pipeline lineage {cell['cell_id']}"


SEEN_NOTE = " Not a held-out figure: the model was trained on this dataset (these cases may be its training data)."


def shown_ci(cell: Mapping[str, Any]) -> str:
    """A cell's interval and n as visible text under its figure (hover
    titles are invisible in print and on touch screens).

    >>> shown_ci({"ci_low": 65.0, "ci_high": 79.21, "n": 140})
    '<span class="ci">[65.0, 79.2] n=140</span>'
    >>> shown_ci({"ci_low": None, "ci_high": None, "n": None})
    ''
    """
    parts = ([] if cell.get("ci_low") is None else [f"[{fmt(cell['ci_low'])}, {fmt(cell['ci_high'])}]"]) + (
        [] if cell.get("n") is None else [f"n={cell['n']}"]
    )
    return f'<span class="ci">{" ".join(parts)}</span>' if parts else ""


def td(cell: Mapping[str, Any] | None, below_mark: float | None, max_ci_width: float | None = None, show_ci: bool = False) -> str:
    """A table cell with its provenance: marked below ``below_mark``, as
    training data, as too few cases to compare when its interval is wider
    than ``max_ci_width`` points, and n/a when the figure is undefined;
    ``show_ci``: its interval and n shown under the figure."""
    if cell is None:
        return '<td class="missing">–</td>'
    value = cell.get("value")
    seen = cell.get("setting") == SEEN_IN_TRAINING
    undefined = value is None and bool(cell.get("undefined"))
    wide = cell_too_wide(cell, max_ci_width)
    classes = [
        "seen" if seen else "below" if below_mark is not None and value is not None and value < below_mark else "",
        "undefined" if undefined else "",
        "too-few" if wide else "",
    ]
    cls = " ".join(c for c in classes if c)
    cls = f' class="{cls}"' if cls else ""
    return (
        f'<td{cls} data-cell-id="{escape(cell["cell_id"])}" data-metrics="{escape(cell["metrics_file"])}"'
        f' data-stage="{escape(cell["stage"])}" title="{escape(wide + provenance(cell) + (SEEN_NOTE if seen else ""))}">'
        f"{NA if undefined else fmt(value)}{' (training data)' if seen else ''}{shown_ci(cell) if show_ci else ''}</td>"
    )


def published_td(table: str, model: str, row: str, column: str, value: float | None, source: str) -> str:
    if value is None:
        return '<td class="missing">–</td>'
    cid = cell_id("published", table, model, row, column)
    return f'<td class="published" data-cell-id="{escape(cid)}" data-metrics="published" data-stage="{escape(source)}" title="{escape("Published: " + source)}">{value:.1f}</td>'


def pivot(
    cells: pl.DataFrame,
    table_id: str,
    rows: str,
    columns: str,
    below_mark: float | None,
    caption: str = "",
    published: dict[tuple[str, str], tuple[float | None, str, str]] | None = None,
    functionalities_of: str | None = None,
    max_ci_width: float | None = None,
    show_ci: bool = False,
) -> str:
    """An HTML table: one row per ``rows`` value, one column per ``columns``
    value, each cell with provenance; ``published`` adds a paper column per
    column key: (row, column) -> (value, table, source); ``max_ci_width``:
    cells whose interval is wider are marked too few cases to compare.
    ``functionalities_of`` (``hatecheck`` / ``mhc``): rows are functionality
    codes, shown as the paper's ``F<i> description (code)`` in its order;
    ``show_ci``: each cell's interval and n shown under its figure."""
    if cells.is_empty():
        return f'<p class="note" id="{escape(table_id)}">No results for this table.</p>'
    row_keys = list(dict.fromkeys(cells[rows].to_list()))
    if functionalities_of:
        row_keys.sort(key=lambda code: P.functionality_order(code, functionalities_of))
    col_keys = list(dict.fromkeys(cells[columns].to_list()))
    lookup = {(r[rows], r[columns]): r for r in cells.iter_rows(named=True)}
    head = "".join(f"<th>{escape(str(c))}</th>" + (f"<th>{escape(str(c))} (paper)</th>" if published is not None else "") for c in col_keys)
    body = []
    for rk in row_keys:
        tds = []
        for ck in col_keys:
            tds.append(td(lookup.get((rk, ck)), below_mark, max_ci_width, show_ci))
            if published is not None:
                value, table, source = published.get((rk, ck), (None, "", ""))
                model = (lookup.get((rk, ck)) or {}).get("model", "")
                tds.append(published_td(table, model, str(rk), str(ck), value, source))
        label = P.functionality_label(rk, functionalities_of) if functionalities_of else str(rk)
        body.append(f'<tr><td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return (
        f'<table id="{escape(table_id)}">{cap}<thead><tr><th class="rowhead"></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def undefined_td(reason: str, cid: str, source: str, stage: str, note: str = "") -> str:
    """A figure whose denominator is zero: ``n/a``, the reason in its tooltip."""
    tip = f"{NA}: undefined ({reason}){note}. From {source} (stage {stage}); lineage: hatecheck-pipeline lineage {cid}"
    return (
        f'<td class="undefined" data-cell-id="{escape(cid)}" data-metrics="{escape(source)}" data-stage="{escape(stage)}"'
        f' title="{escape(tip)}">{NA}</td>'
    )


def json_td(
    value: Any, cid: str, source: str, stage: str, digits: int = 1, note: str = "", cls: str = "", undefined: str | None = None
) -> str:
    """A cell of a figure read from a JSON artifact, with its provenance;
    ``undefined``: why a None figure is undefined (shown as n/a, not as
    missing)."""
    if value is None:
        return '<td class="missing">–</td>' if undefined is None else undefined_td(undefined, cid, source, stage, note)
    text = f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    tip = f"{text}{note}. From {source} (stage {stage}); lineage: hatecheck-pipeline lineage {cid}"
    c = f' class="{cls}"' if cls else ""
    return (
        f'<td{c} data-cell-id="{escape(cid)}" data-metrics="{escape(source)}" data-stage="{escape(stage)}"'
        f' title="{escape(tip)}">{escape(text)}</td>'
    )


def html_table(table_id: str, head: list[str], rows: list[str], caption: str = "") -> str:
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    ths = "".join(f'<th class="rowhead">{escape(h)}</th>' if i == 0 else f"<th>{escape(h)}</th>" for i, h in enumerate(head))
    return f'<table id="{escape(table_id)}">{cap}<thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def slug(*parts: str) -> str:
    return "-".join(cell_id(p).replace(":", "-").replace("_", "-").lower() for p in parts)


def per_model(cells: pl.DataFrame, fn) -> str:
    return "".join(fn(model, cells.filter(pl.col("model") == model)) for model in dict.fromkeys(cells["model"].to_list()))
