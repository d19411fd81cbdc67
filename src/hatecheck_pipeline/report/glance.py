"""Results at a glance: accuracy per functional test for every model scored
on a suite, as a heat map (functional tests as rows, models as columns),
coloured and marked as the papers mark their Table 1: the best figure of a
row in bold, a figure below random choice (the report's mark, 50%) in
italic red. The background shades the figure: red below the mark (the
lower, the deeper), green above it (the higher, the deeper).

A heat map sits beside the table of the same figures, whose cells show the
interval and n (:func:`hatecheck_pipeline.report.cells.td` with
``show_ci``). A heat-map cell whose interval (at its metrics file's
``bootstrap.level``, as the notes say) is wider than
``evaluation.max_ci_width`` carries a visible dagger (too few cases to
compare) as well as the report's dotted underline.

Every heat-map cell is a report cell: ``data-cell-id`` (``heat:`` and the
table cell's id), ``data-metrics`` and ``data-stage`` (the score stage's
metrics file), so ``hatecheck-pipeline lineage <cell id>`` traces it; a
paper's figure is ``data-metrics="published"``.

:func:`summary_items` writes the report's summary bullets with their n, the
interval and the too-few-cases mark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any, Collection, Mapping

import polars as pl

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import NA, TOO_FEW, cell_too_wide, fmt, levels, page_ci, provenance

GLANCE_CSS = """
.glance{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start}
table.heat td{text-align:center;min-width:3.2em}table.heat td.rowhead{text-align:left}
table.heat td.heat-best{font-weight:700}
table.heat td.heat-below{color:#b00020;font-style:italic}
table.heat th.paper{font-style:italic;font-weight:normal}
span.ci{display:block;font-size:.78em;color:#555;font-weight:normal;font-style:normal;white-space:nowrap}
.legend span{display:inline-block;padding:0 .5em;margin-right:.3em;border:1px solid #ccc}
@media print{*{-webkit-print-color-adjust:exact;print-color-adjust:exact}.glance{display:block}}
"""

DAGGER = "†"
# background at 0% (red) and 100% (green); the mark itself is white
LOW, HIGH, MID = (0xF1, 0x9A, 0x9A), (0x7F, 0xC9, 0x7F), (0xFF, 0xFF, 0xFF)


def shade(value: float | None, below_mark: float) -> str | None:
    """The background of a figure: white at the mark, deepening to red at 0
    and to green at 100 (None: no figure).

    >>> shade(50.0, 50), shade(0.0, 50), shade(100.0, 50), shade(None, 50)
    ('#ffffff', '#f19a9a', '#7fc97f', None)
    >>> shade(25.0, 50)
    '#f8cccc'
    """
    if value is None:
        return None
    if value < below_mark:
        far, end = (below_mark - value) / below_mark if below_mark else 1.0, LOW
    else:
        far, end = (value - below_mark) / (100 - below_mark) if below_mark < 100 else 0.0, HIGH
    far = min(max(far, 0.0), 1.0)
    return "#" + "".join(f"{round(m + (e - m) * far):02x}" for m, e in zip(MID, end))


@dataclass
class Column:
    """One column of a heat map: a scored model (cells: functional test ->
    a long-table cell) or a paper's model (``paper``: functional test ->
    (value, n), ``source``: the paper's table)."""

    label: str
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    paper: dict[str, tuple[float | None, int | None]] | None = None
    source: str = ""
    table: str = ""

    def value(self, row: str) -> float | None:
        if self.paper is not None:
            return self.paper.get(row, (None, None))[0]
        return (self.cells.get(row) or {}).get("value")


def scored_columns(cells: pl.DataFrame, column: str = "model") -> list[Column]:
    """A column per ``column`` value (the models) of a long table's cells
    (one suite's: rows are functional tests)."""
    out: dict[str, Column] = {}
    for r in cells.iter_rows(named=True):
        out.setdefault(str(r[column]), Column(str(r[column]))).cells[r["row"]] = r
    return list(out.values())


def paper_columns(table: str, models: list[str] | tuple[str, ...], published: Mapping[str, Any], column: str | None = None) -> list[Column]:
    """A column per paper's model of a published table (HateCheck Table 1:
    its column ``accuracy``; MHC Table 1: the language ``column``), with the
    paper's n per functional test where it gives one; a model without
    figures there has no column."""
    entry = published.get(table) or {}
    ns = entry.get("n") or {}
    out = []
    for model in models:
        values = {r: v for (r, c), (v, _, _) in P.lookup(table, model, published).items() if column is None or c == column}
        if values:
            out.append(
                Column(
                    f"{model} (paper)",
                    paper={r: (v, ns.get(r)) for r, v in values.items()},
                    source=P.source_of(table, model, published),
                    table=table,
                )
            )
    return out


def heat_td(col: Column, row: str, suite: str, below_mark: float, max_ci_width: float | None, best: float | None) -> str:
    """One heat-map cell with its provenance (a paper's figure: published)."""
    value = col.value(row)
    if col.paper is not None:
        if value is None:
            return '<td class="missing">–</td>'
        n = col.paper[row][1]
        cid = cell_id("heat", "published", col.table, col.label.removesuffix(" (paper)"), suite, row)
        tip = f"{fmt(value)}{'' if n is None else f', n={n}'}. Published: {col.source}"
        attrs = f'data-cell-id="{escape(cid)}" data-metrics="published" data-stage="{escape(col.source)}"'
        wide = ""
    else:
        cell = col.cells.get(row)
        if cell is None:
            return '<td class="missing">–</td>'
        wide = cell_too_wide(cell, max_ci_width)
        cid = "heat:" + cell["cell_id"]  # the table cell's id (already safe)
        tip = wide + provenance({**cell, "cell_id": cid})
        attrs = f'data-cell-id="{escape(cid)}" data-metrics="{escape(cell["metrics_file"])}" data-stage="{escape(cell["stage"])}"'
        if value is None:
            return f'<td class="undefined" {attrs} title="{escape(tip)}">{NA}</td>'
    classes = [
        "heat-best" if best is not None and value == best else "",
        "heat-below" if value < below_mark else "",
        "too-few" if wide else "",
    ]
    cls = " ".join(c for c in classes if c) or "heat"
    style = f"background:{shade(value, below_mark)}"
    return f'<td class="{cls}" style="{style}" {attrs} title="{escape(tip)}">{fmt(value)}{DAGGER if wide else ""}</td>'


def heatmap(
    columns: list[Column],
    table_id: str,
    suite: str,
    below_mark: float,
    functionalities_of: str,
    max_ci_width: float | None = None,
    caption: str = "",
) -> str:
    """The heat map: one row per functional test the scored columns have
    (in the paper's order), one column per model (the papers' after ours)."""
    rows = sorted(
        {r for c in columns if c.paper is None for r in c.cells}, key=lambda code: P.functionality_order(code, functionalities_of)
    )
    if not rows:
        return f'<p class="note" id="{escape(table_id)}">No results for this heat map.</p>'
    paper = ' class="paper"'
    head = "".join(f"<th{paper if c.paper is not None else ''}>{escape(c.label)}</th>" for c in columns)
    body = []
    for row in rows:
        values = [v for c in columns if (v := c.value(row)) is not None]
        best = max(values) if len(values) > 1 else None
        tds = "".join(heat_td(c, row, suite, below_mark, max_ci_width, best) for c in columns)
        label = P.functionality_label(row, functionalities_of, short=True)
        body.append(
            f'<tr><td class="rowhead" title="{escape(P.functionality_label(row, functionalities_of))}">{escape(label)}</td>{tds}</tr>'
        )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return (
        f'<table class="heat" id="{escape(table_id)}">{cap}<thead><tr><th class="rowhead">functional test</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def legend(below_mark: float, max_ci_width: float | None, found: Collection[float] = (), fallback: float | None = None) -> str:
    """What the colours and marks of a heat map mean; ``found``: the levels
    of its cells' intervals (:func:`hatecheck_pipeline.report.cells.levels`;
    ``fallback`` when there are none)."""
    ci = page_ci(found, fallback)
    return (
        f"<p class='note legend'>Accuracy (%): <span style='background:{shade(0.0, below_mark)}'>0</span>"
        f"<span style='background:{shade(below_mark / 2, below_mark)}'>{below_mark / 2:g}</span>"
        f"<span style='background:{shade(below_mark, below_mark)}'>{below_mark:g}</span>"
        f"<span style='background:{shade((100 + below_mark) / 2, below_mark)}'>{(100 + below_mark) / 2:g}</span>"
        f"<span style='background:{shade(100.0, below_mark)}'>100</span> "
        f"As in the papers' Table 1: the best figure of a row in <b>bold</b>, below {below_mark:g}% (random choice) in "
        "<i style='color:#b00020'>italic red</i>; columns \"(paper)\" are the published figures. "
        + (f"{DAGGER}: {TOO_FEW} (the {ci} is wider than {max_ci_width:g} points). " if max_ci_width is not None else "")
        + f"The table beside gives each figure's {ci} and n.</p>"
    )


def side_by_side(heat: str, table: str) -> str:
    """A heat map beside its table (one above the other where the page is narrow)."""
    return f'<div class="glance">{heat}{table}</div>'


def view(
    cells: pl.DataFrame,
    suite: str,
    table_id: str,
    below_mark: float,
    functionalities_of: str,
    papers: list[Column] | None = None,
    max_ci_width: float | None = None,
    caption: str = "",
) -> str:
    """The heat map of one suite's cells (every model scored on it) and the
    papers' columns."""
    return heatmap(scored_columns(cells) + list(papers or []), table_id, suite, below_mark, functionalities_of, max_ci_width, caption)


# The papers' models whose Table 1 figures stand beside ours: HateCheck's
# four, MHC's XTC (per language).
PAPER_MODELS = {"hatecheck": ("B-D", "B-F", "Perspective", "SiftNinja"), "mhc": ("XTC",)}


def papers_for(dataset: str, language: str | None, published: Mapping[str, Any]) -> list[Column]:
    """The papers' columns for a functional suite: HateCheck Table 1's
    models, or MHC Table 1's XTC in ``language``."""
    if dataset == "hatecheck":
        return paper_columns("hatecheck_t1", PAPER_MODELS["hatecheck"], published)
    return paper_columns("mhc_t1", PAPER_MODELS["mhc"], published, column=language)


def mhc_views(cells: pl.DataFrame, below_mark: float, published: Mapping[str, Any], max_ci_width: float | None, table) -> str:
    """MHC Table 1 at a glance: per language, the heat map of every model
    scored on it (XTC's published figures beside) next to ``table(cells,
    table_id)``, the same figures with their interval and n. The table's
    cells are relabelled ``glance:<cell id>`` (the per-model tables keep the
    plain ids: one id, one cell)."""
    if cells.is_empty():
        return ""
    out = legend(below_mark, max_ci_width, levels(cells))
    for language in sorted(set(cells["language"].to_list())):
        part = cells.filter(pl.col("language") == language)
        suite = f"mhc_{language}"
        heat = view(part, suite, f"heat-{suite}", below_mark, "mhc", papers_for("mhc", str(language), published), max_ci_width)
        relabelled = part.with_columns(pl.concat_str(pl.lit("glance:"), pl.col("cell_id")).alias("cell_id"))
        out += f"<h4>{escape(str(language))}</h4>" + side_by_side(heat, table(relabelled, f"glance-{suite}"))
    return out


# ------------------------------------------------------------ summary bullets


def _interval(cell: Mapping[str, Any]) -> str:
    return "" if cell.get("ci_low") is None else f" [{fmt(cell['ci_low'])}, {fmt(cell['ci_high'])}]"


def _n(n: int | None) -> str:
    return "" if n is None else f", n={n:,}"


def _mark(tip: str) -> str:
    return f" <span class='too-few' title='{escape(tip.strip())}'>({TOO_FEW})</span>" if tip else ""


def summary_items(hatecheck: pl.DataFrame, mhc: pl.DataFrame, shots: pl.DataFrame, max_ci_width: float | None) -> list[str]:
    """The summary's bullets, each with its n, its interval and, where the
    interval is wider than ``max_ci_width``, the too-few-cases mark:
    HateCheck accuracy (``hatecheck``: HateCheck Table 2's total row), the
    mean macro F1 over MHC languages (``mhc``: MHC Table 7; n summed over
    the languages, the mark naming how many languages' intervals are too
    wide) and the many- minus zero-shot gap (``shots``)."""
    lines = []
    for r in hatecheck.filter(pl.col("row") == "total").iter_rows(named=True):
        lines.append(
            f"<li>{escape(r['model'])}: HateCheck accuracy {fmt(r['value'])}%{_interval(r)}{_n(r['n'])}"
            f"{_mark(cell_too_wide(r, max_ci_width))}</li>"
        )
    if not mhc.is_empty():
        # over the languages where it is defined, saying so when one is not
        for (model,), part in mhc.group_by("model", maintain_order=True):
            defined = part.filter(pl.col("value").is_not_null())
            mean = round(defined["value"].mean(), 1) if defined.height else None
            over = "" if defined.height == part.height else f" (over the {defined.height} of {part.height} languages where it is defined)"
            wide = [r["row"] for r in part.iter_rows(named=True) if cell_too_wide(r, max_ci_width)]
            tip = (
                f"{TOO_FEW[0].upper()}{TOO_FEW[1:]} in {len(wide)} of {part.height} languages ({', '.join(wide)}): their "
                f"{page_ci(levels(part.filter(pl.col('row').is_in(wide))), noun='intervals')} are wider than {max_ci_width:g} points."
                if wide
                else ""
            )
            n = part["n"].drop_nulls()
            mark = (
                f" <span class='too-few' title='{escape(tip)}'>({TOO_FEW} in {len(wide)} of {part.height} languages)</span>" if wide else ""
            )
            lines.append(
                f"<li>{escape(str(model))}: mean macro F1 over MHC languages {fmt(mean) if mean is not None else NA}{over}"
                f"{_n(int(n.sum()) if n.len() else None)}{mark}</li>"
            )
    for r in shots.filter(pl.col("column") == "gap").iter_rows(named=True):
        gap = NA if r["value"] is None else f"{r['value']:+.1f} pp"
        lines.append(
            f"<li>{escape(r['model'])}: many-shot minus zero-shot macro F1 {gap}{_interval(r)}{_n(r['n'])}"
            f"{_mark(cell_too_wide(r, max_ci_width))}</li>"
        )
    return lines
