"""The self-contained HTML report (``reports/mhc_xtc.html``; stage
function :func:`report`).

One file, no network: inline CSS, plots as base64 PNG (matplotlib, Agg).
Every table cell carries its provenance: ``data-cell-id`` (accepted by
``hatecheck-pipeline lineage``), ``data-metrics`` and ``data-stage``
attributes, and a ``title`` tooltip naming the metrics file and stage.
"""

from __future__ import annotations

import base64
import io
import json
from html import escape
from pathlib import Path
from typing import Any, Mapping

import polars as pl
import yaml

from hatecheck_pipeline.core.files import InputError, write_text
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.tables import cell_id

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td.rowhead,th.rowhead{text-align:left}
td.below{background:#f8d7da;color:#842029;font-weight:600}
td.published{background:#eef3fb;font-style:italic}
td.missing{color:#999}
td.incomplete{background:#fff3cd}
.ok{color:#0a6b2d;font-weight:600}.fail{color:#b00020;font-weight:600}
.note{color:#555;font-size:.9em}figure{margin:1em 0}figure img{max-width:100%}
nav a{margin-right:1em}
"""


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


def provenance(cell: Mapping[str, Any]) -> str:
    """Tooltip text of a cell: figure, interval, n, and where it came from."""
    ci = "" if cell.get("ci_low") is None else f" [95% CI {_fmt(cell['ci_low'])}–{_fmt(cell['ci_high'])}]"
    n = "" if cell.get("n") is None else f", n={cell['n']}"
    return f"{_fmt(cell.get('value'))}{ci}{n}. From {cell['metrics_file']} (stage {cell['stage']}); lineage: hatecheck-pipeline lineage {cell['cell_id']}"


def td(cell: Mapping[str, Any] | None, below_mark: float | None) -> str:
    if cell is None:
        return '<td class="missing">–</td>'
    value = cell.get("value")
    cls = ' class="below"' if below_mark is not None and value is not None and value < below_mark else ""
    return (
        f'<td{cls} data-cell-id="{escape(cell["cell_id"])}" data-metrics="{escape(cell["metrics_file"])}"'
        f' data-stage="{escape(cell["stage"])}" title="{escape(provenance(cell))}">{_fmt(value)}</td>'
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
) -> str:
    """An HTML table: one row per ``rows`` value, one column per ``columns``
    value, each cell with provenance; ``published`` adds a paper column per
    column key: (row, column) -> (value, table, source).
    ``functionalities_of`` (``hatecheck`` / ``mhc``): rows are functionality
    codes, shown as the paper's ``F<i> description (code)`` in its order."""
    if cells.is_empty():
        return f'<p class="note" id="{escape(table_id)}">No results for this table.</p>'
    row_keys = list(dict.fromkeys(cells[rows].to_list()))
    if functionalities_of:
        row_keys.sort(key=lambda code: P.functionality_order(code, functionalities_of))
    col_keys = list(dict.fromkeys(cells[columns].to_list()))
    lookup = {(r[rows], r[columns]): r for r in cells.iter_rows(named=True)}
    head = "".join(
        f"<th>{escape(str(c))}</th>" + (f'<th>{escape(str(c))} (paper)</th>' if published is not None else "") for c in col_keys
    )
    body = []
    for rk in row_keys:
        tds = []
        for ck in col_keys:
            tds.append(td(lookup.get((rk, ck)), below_mark))
            if published is not None:
                value, table, source = published.get((rk, ck), (None, "", ""))
                model = (lookup.get((rk, ck)) or {}).get("model", "")
                tds.append(published_td(table, model, str(rk), str(ck), value, source))
        label = P.functionality_label(rk, functionalities_of) if functionalities_of else str(rk)
        body.append(f'<tr><td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<table id="{escape(table_id)}">{cap}<thead><tr><th class="rowhead"></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


# ---------------------------------------------------------------- plots


def heatmap(cells: pl.DataFrame, title: str, below_mark: float, functionalities_of: str = "mhc") -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = sorted(dict.fromkeys(cells["row"].to_list()), key=lambda code: P.functionality_order(code, functionalities_of))
    cols = sorted(set(cells["column"].to_list()))
    grid = np.full((len(rows), len(cols)), np.nan)
    for r in cells.iter_rows(named=True):
        if r["value"] is not None:
            grid[rows.index(r["row"]), cols.index(r["column"])] = r["value"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(cols), 1.0 + 0.28 * len(rows)))
    im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), [P.functionality_label(r, functionalities_of, short=True) for r in rows], fontsize=7)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=6,
                        fontweight="bold" if grid[i, j] < below_mark else "normal")
    fig.colorbar(im, ax=ax, label="accuracy (%)")
    ax.set_title(title)
    return _png(fig)


def grouped_bars(cells: pl.DataFrame, x: str, hue: str, title: str, ylabel: str, below_mark: float | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    xs = list(dict.fromkeys(cells[x].to_list()))
    hues = list(dict.fromkeys(cells[hue].to_list()))
    width = 0.8 / max(len(hues), 1)
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(xs) * max(1, len(hues) / 2)), 3.6))
    for k, h in enumerate(hues):
        part = {r[x]: r["value"] for r in cells.filter(pl.col(hue) == h).iter_rows(named=True)}
        vals = [part.get(v) if part.get(v) is not None else np.nan for v in xs]
        ax.bar(np.arange(len(xs)) + k * width - 0.4 + width / 2, vals, width, label=str(h))
    if below_mark is not None:
        ax.axhline(below_mark, color="grey", ls="--", lw=0.8)
    ax.set_xticks(range(len(xs)), xs, rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, ncols=min(len(hues), 4))
    return _png(fig)


def figure(src: str, caption: str, fig_id: str) -> str:
    return f'<figure id="{escape(fig_id)}"><img alt="{escape(caption)}" src="{src}"><figcaption class="note">{escape(caption)}</figcaption></figure>'


# ---------------------------------------------------------------- sections


def read_cells(table_files: Mapping[str, str | Path]) -> dict[str, pl.DataFrame]:
    """Long tables by name; a table not produced (no such models) is empty."""
    from hatecheck_pipeline.evaluation.tables import CELL_COLUMNS

    out = {}
    for name, path in table_files.items():
        path = Path(path)
        out[name] = pl.read_csv(path, schema_overrides=CELL_COLUMNS) if path.exists() and path.stat().st_size else pl.DataFrame(schema=CELL_COLUMNS)
    return out


def models_section(models: Mapping[str, Mapping[str, Any]], cards: Mapping[str, Mapping[str, Any] | None], profile: str, training_languages: Mapping[str, list[str]]) -> str:
    rows = []
    for name, spec in models.items():
        card = cards.get(name) or {}
        base = card.get("base_model") or ("not stated in the model card" if card else "unknown (no model card)")
        if isinstance(base, Mapping):  # the training stage's card: {ref, description, content_sha256, stand_in}
            card = {**card, "stand_in": base.get("stand_in", card.get("stand_in"))}
            sha = str(base.get("content_sha256", ""))[:12]
            base = base.get("description") or base.get("ref") or "not stated"
            base += f" (sha256 {sha}…)" if sha else ""
        stand_in = card.get("stand_in")
        if not card:
            kind = "missing model card"
        elif "stand_in" not in card:
            kind = "not stated in the model card"
        elif stand_in:
            kind = "named stand-in" + (f": {stand_in}" if isinstance(stand_in, str) else "")
        else:
            kind = "paper model"
        langs = ", ".join(training_languages.get(name, [])) or "–"
        rows.append(
            f"<tr><td class='rowhead'>{escape(name)}</td><td class='rowhead'>{escape(str(base))}</td><td class='rowhead'>{escape(kind)}</td>"
            f"<td class='rowhead'>{escape(str(card.get('profile', profile)))}</td><td class='rowhead'>{escape(', '.join(spec.get('train', [])))}</td>"
            f"<td class='rowhead'>{escape(langs)}</td><td class='rowhead'>{escape(', '.join(spec.get('suites', [])))}</td>"
            f"<td class='rowhead'>{escape(str(card.get('budget_note', '–')))}</td></tr>"
        )
    return (
        '<table id="models"><thead><tr><th class="rowhead">model</th><th class="rowhead">base model</th><th class="rowhead">paper model or stand-in</th>'
        '<th class="rowhead">profile</th><th class="rowhead">training data</th><th class="rowhead">training languages</th><th class="rowhead">suites</th><th class="rowhead">training budget</th></tr></thead><tbody>'
        + "".join(rows) + "</tbody></table>"
    )


def validation_section(validation: Mapping[str, Mapping[str, Any] | None]) -> str:
    rows = []
    for dataset, doc in validation.items():
        if doc is None:
            rows.append(f"<tr><td class='rowhead'>{escape(dataset)}</td><td class='fail'>not run</td><td>–</td><td>–</td><td>–</td></tr>")
            continue
        counts = doc.get("counts", {})
        ok = doc.get("success")
        n_checks = sum(len(s.get("checks", [])) for s in doc.get("suites", []))
        rows.append(
            f"<tr><td class='rowhead'>{escape(dataset)}</td><td class='{'ok' if ok else 'fail'}'>{'passed' if ok else 'FAILED'}</td>"
            f"<td>{n_checks}</td><td>{counts.get('kept', '–')}</td><td>{counts.get('quarantined', '–')}</td></tr>"
        )
    return (
        '<table id="validation"><thead><tr><th class="rowhead">dataset</th><th>great-expectations</th><th>expectations</th><th>rows kept</th><th>quarantined</th></tr></thead><tbody>'
        + "".join(rows) + "</tbody></table>"
    )


def per_model(cells: pl.DataFrame, fn) -> str:
    return "".join(fn(model, cells.filter(pl.col("model") == model)) for model in dict.fromkeys(cells["model"].to_list()))


def build(
    title: str,
    profile: str,
    models: Mapping[str, Mapping[str, Any]],
    cards: Mapping[str, Mapping[str, Any] | None],
    validation: Mapping[str, Mapping[str, Any] | None],
    cells: Mapping[str, pl.DataFrame],
    training_languages: Mapping[str, list[str]],
    below_mark: float,
    heatmap_models: list[str],
    published: Mapping[str, Any] | None = None,
    expansion: Mapping[str, Any] | None = None,
    bias: Mapping[str, Any] | None = None,
) -> str:
    """The report as one HTML string.

    ``expansion``: {coverage, coverage_file, reproduction, reproduction_file}
    (documents may be None); ``bias``: {doc, file} of results/bias/summary.json.
    Either None leaves its section out (the pipeline always passes both)."""
    published = P.load() if published is None else published
    from hatecheck_pipeline.evaluation.tables import CELL_COLUMNS

    empty = pl.DataFrame(schema=next(iter(cells.values())).schema) if cells else pl.DataFrame(schema=CELL_COLUMNS)
    get = lambda name: cells.get(name, empty)  # noqa: E731
    parts: list[str] = []
    nav = []

    def paper_cols(table: str) -> dict:
        """(row, model) -> published value: each of our models' columns next to the paper's same-named model."""
        return {(r, model): v for model in models for (r, c), v in P.lookup(table, model, published).items()}

    def section(sid: str, heading: str, body: str) -> None:
        nav.append(f'<a href="#{sid}">{escape(heading)}</a>')
        parts.append(f'<section id="{sid}"><h2>{escape(heading)}</h2>{body}</section>')

    # summary
    t7, t2h = get("mhc_t7"), get("hatecheck_t2")
    lines = []
    for r in t2h.filter(pl.col("row") == "total").iter_rows(named=True):
        lines.append(f"<li>{escape(r['model'])}: HateCheck accuracy {_fmt(r['value'])}%</li>")
    if not t7.is_empty():
        means = t7.group_by("model", maintain_order=True).agg(pl.col("value").mean().round(1).alias("mean"))
        for r in means.iter_rows(named=True):
            lines.append(f"<li>{escape(r['model'])}: mean macro F1 over MHC languages {_fmt(r['mean'])}</li>")
    shots = get("shots_summary")
    for r in shots.filter(pl.col("column") == "gap").iter_rows(named=True):
        lines.append(f"<li>{escape(r['model'])}: many-shot minus zero-shot macro F1 {r['value']:+.1f} pp</li>")
    failed = [d for d, doc in validation.items() if not doc or not doc.get("success")]
    summary = (
        f"<p>Profile <b>{escape(profile)}</b>. Cells below {below_mark:g}% are <span class='below' style='background:#f8d7da'>marked</span>, "
        "as in the papers. Hover a cell for its confidence interval and provenance; every cell's "
        "<code>data-cell-id</code> can be traced with <code>hatecheck-pipeline lineage CELL_ID</code>.</p>"
        f"<ul>{''.join(lines) or '<li>No results.</li>'}</ul>"
        f"<p>Data validation: {'all datasets passed' if not failed else 'FAILED for ' + escape(', '.join(failed))}.</p>"
        "<p class='note'>The HateCheck paper's Tables 1, 2 and 4 can be reproduced exactly only from the original models' "
        "predictions: score such a file with <code>hatecheck-pipeline score</code>, then <code>hatecheck-pipeline compare --model Perspective</code> "
        "(or SiftNinja, B-D, B-F) checks it cell by cell. The published figures below (italic columns) are shown for comparison.</p>"
    )
    section("summary", "Summary", summary)
    section("models", "Models that ran", models_section(models, cards, profile, training_languages))

    # HateCheck
    hc = ""
    if not get("hatecheck_t2").is_empty():
        hc += "<h3>Table 1: accuracy per functional test</h3>" + pivot(get("hatecheck_t1"), "hatecheck-t1", "row", "model", below_mark, published=paper_cols("hatecheck_t1"), functionalities_of="hatecheck")
        hc += "<h3>Table 2: accuracy per gold label</h3>" + pivot(get("hatecheck_t2"), "hatecheck-t2", "row", "model", below_mark, published=paper_cols("hatecheck_t2"))
        hc += "<h3>Table 3: accuracy per reclaimed slur (F9)</h3>" + pivot(get("hatecheck_t3"), "hatecheck-t3", "row", "model", below_mark, published=paper_cols("hatecheck_t3"))
        hc += "<h3>Table 4: accuracy per target group (identity-template cases)</h3>" + pivot(get("hatecheck_t4"), "hatecheck-t4", "row", "model", below_mark, published=paper_cols("hatecheck_t4"))
        if not get("hatecheck_t4").is_empty():
            hc += figure(grouped_bars(get("hatecheck_t4"), "row", "model", "HateCheck accuracy per target group", "accuracy (%)", below_mark), "HateCheck accuracy per target group", "fig-hatecheck-targets")
        hc += "<h3>Held-out test sets: macro F1</h3>" + pivot(get("hatecheck_heldout"), "hatecheck-heldout", "row", "model", None, published=paper_cols("hatecheck_heldout"))
        section("hatecheck", "HateCheck (English)", hc)

    # MHC
    if not get("mhc_t7").is_empty():
        m = ""
        m += "<h3>Table 7: macro F1 per model and MHC language</h3>" + pivot(get("mhc_t7"), "mhc-t7", "row", "model", below_mark, published=paper_cols("mhc_t7"))
        m += "<h3>Table 2: F1 per class and macro F1 per language</h3>"
        m += per_model(get("mhc_t2"), lambda model, c: f"<h4>{escape(model)}</h4>" + pivot(c, f"mhc-t2-{model}", "row", "column", below_mark, published=P.lookup("mhc_t2", model, published) or None))
        chosen = heatmap_models or list(dict.fromkeys(get("mhc_t1")["model"].to_list()))
        m += "<h3>Table 1: accuracy per functionality and language</h3>"
        for model in chosen:
            c = get("mhc_t1").filter(pl.col("model") == model)
            if c.is_empty():
                continue
            m += figure(heatmap(c, f"{model}: accuracy per functionality × language", below_mark), f"{model}: heatmap of accuracy, functionality × language", f"fig-heatmap-{model}")
            m += pivot(c, f"mhc-t1-{model}", "row", "column", below_mark, published=P.lookup("mhc_t1", model, published) or None, functionalities_of="mhc")
        m += "<h3>Table 3: macro F1 per target group (identity-template cases) and language</h3>"
        m += per_model(get("mhc_t3"), lambda model, c: f"<h4>{escape(model)}</h4>" + pivot(c, f"mhc-t3-{model}", "row", "column", below_mark, published=P.lookup("mhc_t3", model, published) or None))
        t3 = get("mhc_t3")
        if not t3.is_empty():
            mean = t3.group_by(["model", "row"], maintain_order=True).agg(pl.col("value").mean().round(1))
            m += figure(grouped_bars(mean, "row", "model", "MHC macro F1 per target group (mean over languages)", "macro F1", below_mark), "MHC macro F1 per target group", "fig-mhc-targets")
        m += "<h3>Table 6: held-out macro F1 per training dataset</h3>" + pivot(get("mhc_t6"), "mhc-t6", "row", "model", None, published=paper_cols("mhc_t6"))
        section("mhc", "Multilingual HateCheck", m)

    # zero vs many-shot
    if not get("shots_languages").is_empty():
        s = "<p class='note'>Each (model, language) is tagged many-shot when the language occurs in the model's training data (its <code>language</code> column), zero-shot otherwise.</p>"
        s += pivot(get("shots_summary"), "shots-summary", "model", "column", below_mark, caption="mean macro F1 over MHC languages")
        s += figure(grouped_bars(get("shots_languages").with_columns(pl.concat_str([pl.col("row"), pl.lit(" ("), pl.col("setting"), pl.lit(")")]).alias("label")), "row", "model", "MHC macro F1 per language (many-shot languages in the table above)", "macro F1", below_mark), "Zero- vs many-shot macro F1", "fig-shots")
        s += pivot(get("shots_languages").with_columns(pl.concat_str([pl.col("row"), pl.lit(" ("), pl.col("setting"), pl.lit(")")]).alias("row")), "shots-languages", "row", "model", below_mark, caption="macro F1 per language and setting")
        gap = get("shots_class_gap")
        s += "<h3>Gap per functionality class</h3>"
        s += per_model(gap, lambda model, c: f"<h4>{escape(model)}</h4>" + pivot(c, f"shots-class-gap-{model}", "row", "column", None))
        section("shots", "Zero-shot versus many-shot", s)

    if not get("contrast").is_empty():
        section("contrast", "Contrast consistency", "<p class='note'>Share of (hateful case, non-hateful contrast) pairs linked by <code>ref_case_id</code> where the model gets both right.</p>" + pivot(get("contrast"), "contrast-table", "row", "model", below_mark))

    if expansion is not None:
        section("expanded", "Expanded suites: original versus expanded", expanded_section(
            get("expanded_functionality"), below_mark, expansion.get("coverage"), expansion.get("coverage_file", ""),
            expansion.get("reproduction"), expansion.get("reproduction_file", ""),
        ))
    if bias is not None:
        section("bias", "Bias and explainability audits", bias_section(bias.get("doc"), bias.get("file", "")))

    section("validation", "Data validation", validation_section(validation))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1><nav>{''.join(nav)}</nav>{''.join(parts)}</body></html>\n"
    )


# ------------------------------------------- expanded suites, bias audits
# Cells read from JSON documents (not the long tables) carry the same
# provenance: data-cell-id, data-metrics (the JSON file), data-stage.

CROWS_TOTAL = 1508


def json_td(value: Any, cid: str, source: str, stage: str, digits: int = 1, note: str = "", cls: str = "") -> str:
    """A cell of a figure read from a JSON artifact, with its provenance."""
    if value is None:
        return '<td class="missing">–</td>'
    text = f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    tip = f"{text}{note}. From {source} (stage {stage}); lineage: hatecheck-pipeline lineage {cid}"
    c = f' class="{cls}"' if cls else ""
    return (
        f'<td{c} data-cell-id="{escape(cid)}" data-metrics="{escape(source)}" data-stage="{escape(stage)}"'
        f' title="{escape(tip)}">{escape(text)}</td>'
    )


def _table(table_id: str, head: list[str], rows: list[str], caption: str = "") -> str:
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    ths = "".join(f'<th class="rowhead">{escape(h)}</th>' if i == 0 else f"<th>{escape(h)}</th>" for i, h in enumerate(head))
    return f'<table id="{escape(table_id)}">{cap}<thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _slug(*parts: str) -> str:
    return "-".join(cell_id(p).replace(":", "-").replace("_", "-").lower() for p in parts)


def expanded_bars(cells: pl.DataFrame, title: str) -> str:
    """Original vs expanded accuracy per functionality, one panel per expanded suite."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    suites = list(dict.fromkeys(cells["suite"].to_list()))
    ncols = 1 if len(suites) == 1 else 2
    nrows = -(-len(suites) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 3.2 * nrows), squeeze=False)
    for ax, suite in zip(axes.flat, suites):
        part = cells.filter(pl.col("suite") == suite)
        funcs = list(dict.fromkeys(part["row"].to_list()))
        for k, (col, colour) in enumerate((("original", "#7f8fa6"), ("expanded", "#e1a33b"))):
            vals = {r["row"]: r["value"] for r in part.filter(pl.col("column") == col).iter_rows(named=True)}
            ys = [vals[f] if vals.get(f) is not None else np.nan for f in funcs]
            ax.bar(np.arange(len(funcs)) + (k - 0.5) * 0.4, ys, 0.4, label=col, color=colour)
        ax.set_xticks(range(len(funcs)), funcs, rotation=60, ha="right", fontsize=6)
        ax.set_ylim(0, 100)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{suite} vs {part['setting'][0]}", fontsize=9)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(suites):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    return _png(fig)


def expanded_section(
    cells: pl.DataFrame,
    below_mark: float | None,
    coverage: Mapping[str, Any] | None,
    coverage_file: str,
    reproduction: Mapping[str, Any] | None,
    reproduction_file: str,
) -> str:
    """Original vs expanded per functionality, perturbation coverage, template reproduction."""
    out = (
        "<p class='note'>Per-functionality accuracy on each published suite and its expansion (as GPT-HateCheck's "
        "Figure 4). Perturbed cases are grouped by the functionality of the case they were perturbed from; "
        "<i>change</i> = expanded − original (percentage points). Expanded suites are never mixed into the "
        "HateCheck / MHC tables above. With a capped profile both suites are seeded samples.</p>"
    )
    if cells.is_empty():
        out += "<p class='note'>No model is scored on both a published suite and its expansion.</p>"
    for model in dict.fromkeys(cells["model"].to_list()):
        mc = cells.filter(pl.col("model") == model)
        out += f"<h3>{escape(model)}</h3>"
        out += figure(expanded_bars(mc, f"{model}: original vs expanded suites"), f"{model}: accuracy per functionality, original vs expanded suite", f"fig-expanded-{_slug(model)}")
        for suite in dict.fromkeys(mc["suite"].to_list()):
            sc = mc.filter(pl.col("suite") == suite)
            lookup = {(r["row"], r["column"]): r for r in sc.iter_rows(named=True)}
            rows = []
            for func in dict.fromkeys(sc["row"].to_list()):
                tds = "".join(td(lookup.get((func, c)), below_mark if c != "change" else None) for c in ("original", "expanded", "change"))
                rows.append(f'<tr><td class="rowhead">{escape(func)}</td>{tds}</tr>')
            orig = sc["setting"][0]
            out += _table(f"expanded-{_slug(model, suite)}", ["functionality", f"original ({orig})", f"expanded ({suite})", "change (pp)"], rows,
                          caption=f"{model}: {suite} vs {orig}, accuracy (%)")
    out += "<h3>Perturbation coverage</h3>"
    if coverage is None:
        out += f"<p class='fail'>{escape(coverage_file)} not found.</p>"
    else:
        rows_in = coverage.get("rows", [])
        gens = list(dict.fromkeys(r["generator"] for r in rows_in))
        by = {(r["language"], r["generator"]): r for r in rows_in}
        rows = []
        for lang in coverage.get("languages") or list(dict.fromkeys(r["language"] for r in rows_in)):
            tds = []
            for g in gens:
                r = by.get((lang, g))
                if r is None:
                    tds.append('<td class="missing">–</td>')
                    continue
                share = 100.0 * (r.get("share_changed") or 0.0)
                tds.append(json_td(share, cell_id("expansion", "coverage", lang, g), coverage_file, "expand_coverage_report",
                                   note=f"% of {r.get('source_cases')} hateful cases changed ({r.get('changed')}; {r.get('unchanged')} unchanged, not counted as tests)",
                                   cls="below" if not r.get("changed") else ""))
            rows.append(f'<tr><td class="rowhead">{escape(lang)}</td>{"".join(tds)}</tr>')
        out += "<p class='note'>Share (%) of each language's hateful cases a spelling generator actually changed; unchanged cases are dropped, never counted as tests.</p>"
        out += _table("perturbation-coverage", ["language", *gens], rows, caption="perturbation coverage (% of source cases changed)")
        without = coverage.get("generators_without_effect") or []
        out += f"<p>Generators without effect: <b>{escape(', '.join(without)) if without else 'none'}</b>.</p>"
    out += "<h3>Template regeneration: share of published cases reproduced</h3>"
    if reproduction is None:
        out += f"<p class='fail'>{escape(reproduction_file)} not found.</p>"
    else:
        cols = [("published_template_cases", "published template cases", 0), ("generated", "generated", 0),
                ("reproduced", "reproduced", 0), ("generated_not_published", "generated, not published", 0),
                ("share_reproduced", "share reproduced (%)", 1)]
        entries = [*reproduction.get("per_language", {}).items(), ("overall", reproduction.get("overall", {}))]
        rows = []
        for lang, e in entries:
            tds = []
            for key, _, digits in cols:
                v = e.get(key)
                v = 100.0 * v if key == "share_reproduced" and v is not None else v
                tds.append(json_td(v, cell_id("expansion", "reproduction", lang, key), reproduction_file, "expand_templates", digits))
            rows.append(f'<tr><td class="rowhead">{escape(lang)}</td>{"".join(tds)}</tr>')
        out += _table("template-reproduction", ["language", *(h for _, h, _ in cols)], rows)
    return out


def auc_heatmaps(rows: list[dict[str, Any]], title: str) -> str:
    """Subgroup / BPSN / BNSP AUC per community (rows) and suite (columns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    suites = list(dict.fromkeys(r["suite"] for r in rows))
    comms = sorted({r["community"] for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(3 + 3 * max(2, 0.55 * len(suites)), 1.5 + 0.3 * len(comms)), squeeze=False)
    for ax, (key, name) in zip(axes[0], (("subgroup_auc", "Subgroup AUC"), ("bpsn_auc", "BPSN AUC"), ("bnsp_auc", "BNSP AUC"))):
        grid = np.full((len(comms), len(suites)), np.nan)
        for r in rows:
            if r.get(key) is not None:
                grid[comms.index(r["community"]), suites.index(r["suite"])] = r[key]
        im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(suites)), suites, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(comms)), comms, fontsize=7)
        ax.set_title(name, fontsize=9)
    fig.colorbar(im, ax=list(axes[0]), label="AUC")
    fig.suptitle(title, y=1.06)
    return _png(fig)


def bias_section(doc: Mapping[str, Any] | None, summary_file: str, published: Mapping[str, Any] | None = None) -> str:
    """CrowS-Pairs, HateXplain (stand-in) and target-group bias from results/bias/summary.json."""
    if doc is None:
        return f"<p class='fail'>{escape(summary_file)} not found: the bias stages have not run.</p>"
    out = ""
    # CrowS-Pairs
    crows = doc.get("crows_pairs") or {}
    out += "<h3>CrowS-Pairs (share of pairs where the more-stereotyping sentence scores higher; ideal 50%)</h3>"
    cols = [("metric_score", "metric score"), ("stereo_score", "stereo"), ("antistereo_score", "anti-stereo"), ("n_pairs", "pairs")]
    rows = []
    for name, e in crows.items():
        stage = f"crows_pairs_{name}"
        source = e.get("source") or summary_file
        n = e.get("n_pairs")
        incomplete = not e.get("complete")
        note = f" (INCOMPLETE: {n} of {CROWS_TOTAL:,} pairs, a seeded sample)" if incomplete else ""
        tds = "".join(json_td(e.get(k), cell_id("bias", "crows", name, k), source, stage, 1 if k != "n_pairs" else 0, note,
                              "incomplete" if incomplete else "") for k, _ in cols)
        label = f"{name} ({e.get('variant')} variant; model {e.get('model')})" + (" — incomplete run" if incomplete else "")
        rows.append(f'<tr><td class="rowhead">{escape(label)}</td>{tds}</tr>')
    for model, vals in (doc.get("crows_pairs_paper_table2") or {}).items():
        tds = "".join(published_td("crows_pairs_t2", model, "paper", k, vals.get(k), "Nangia et al. 2020, Table 2 (masked LM metric)") for k, _ in cols[:3])
        rows.append(f'<tr><td class="rowhead">{escape(model)} (paper Table 2, masked)</td>{tds}<td class="missing">1,508</td></tr>')
    out += _table("crows-pairs", ["scorer", *(h for _, h in cols)], rows)
    out += ("<p class='note'>The <b>masked</b> variant is the paper's pseudo-log-likelihood metric; the <b>causal</b> variant scores "
            "whole-sentence log-likelihood as lm-evaluation-harness does and is not comparable with the paper's masked-LM figures. "
            "Runs over fewer than all 1,508 pairs (e.g. the smoke profile's <code>crows_max_pairs</code>) are marked incomplete.</p>")
    types = sorted({t for e in crows.values() for t in (e.get("bias_types") or {})})
    if types:
        rows = []
        for t in types:
            tds = []
            for name, e in crows.items():
                bt = (e.get("bias_types") or {}).get(t) or {}
                tds.append(json_td(bt.get("score"), cell_id("bias", "crows", name, "bias_type", t), e.get("source") or summary_file,
                                   f"crows_pairs_{name}", note=f", n={bt.get('n')}"))
            rows.append(f'<tr><td class="rowhead">{escape(t)}</td>{"".join(tds)}</tr>')
        out += _table("crows-pairs-bias-types", ["bias type", *crows], rows, caption="CrowS-Pairs metric score per bias type (%)")
    # HateXplain
    hx = doc.get("hatexplain") or {}
    paper6 = doc.get("hatexplain_paper_table6") or {}
    out += "<h3>HateXplain: performance, bias and explainability (test set)</h3>"
    names = {clf: (f"{clf} (stand-in)" if "standin" in clf or "stand-in" in str(e.get("model", "")) else clf) for clf, e in hx.items()}
    standins = [c for c, n in names.items() if n.endswith("(stand-in)")]
    if standins:
        out += ("<p class='note'><b>Stand-in, not the paper's model:</b> " + escape(", ".join(standins)) + " is a TF-IDF + "
                "logistic-regression classifier the pipeline trains on HateXplain's official split, with occlusion attributions; "
                "its figures sit next to the paper's BERT [LIME] row of Table 6 for orientation only, not as a reproduction.</p>")
    metrics6 = [("accuracy", "accuracy"), ("macro_f1", "macro F1"), ("auroc", "AUROC"), ("gmb_subgroup", "GMB-Subgroup"),
                ("gmb_bpsn", "GMB-BPSN"), ("gmb_bnsp", "GMB-BNSP"), ("iou_f1", "IOU F1"), ("token_f1", "token F1"),
                ("auprc", "AUPRC"), ("comprehensiveness", "comprehensiveness"), ("sufficiency", "sufficiency")]
    rows = []
    for key, label in metrics6:
        tds = [json_td(e.get(key), cell_id("bias", "hatexplain", clf, key), e.get("source") or summary_file,
                       f"hatexplain_metrics_{clf}", 3, f" ({e.get('method', '')} attributions, top {e.get('top_k')})" if key in ("iou_f1", "token_f1", "auprc", "comprehensiveness", "sufficiency") else "")
               for clf, e in hx.items()]
        pv = paper6.get(key)
        if pv is None:
            tds.append('<td class="missing">–</td>')
        else:
            cid = cell_id("published", "hatexplain_t6", "BERT", key)
            src = paper6.get("model", "Mathew et al. 2021, Table 6")
            tds.append(f'<td class="published" data-cell-id="{escape(cid)}" data-metrics="published" data-stage="{escape(src)}" title="{escape("Published: " + src)}">{pv:.3f}</td>')
        rows.append(f'<tr><td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
    out += _table("hatexplain-table6", ["metric", *names.values(), str(paper6.get("model", "paper Table 6"))], rows)
    for clf, e in hx.items():
        comm = e.get("communities") or []
        rows = []
        for r in comm:
            tds = "".join(json_td(r.get(k), cell_id("bias", "hatexplain", clf, r["community"], k), e.get("source") or summary_file,
                                  f"hatexplain_metrics_{clf}", 3, f", n={r.get('n')}") for k in ("subgroup_auc", "bpsn_auc", "bnsp_auc"))
            rows.append(f'<tr><td class="rowhead">{escape(r["community"])}</td>{tds}</tr>')
        out += _table(f"hatexplain-communities-{_slug(clf)}", ["community", "Subgroup AUC", "BPSN AUC", "BNSP AUC"], rows,
                      caption=f"{names[clf]}: bias AUCs per community (toxic = hate speech or offensive)")
    # target groups of the functional suites
    targets = doc.get("targets") or {}
    out += ("<h3>Target-group bias on the functional suites</h3><p class='note'>Subgroup / BPSN / BNSP AUCs with <code>target_ident</code> "
            "as the community and p(hateful) as the score, per model and suite; GMB = generalised power mean (p = −5) over communities.</p>")
    for model, e in targets.items():
        source, stage = e.get("source") or summary_file, f"target_bias_{model}"
        suites = e.get("suites") or {}
        rows, flat = [], []
        for suite, s in suites.items():
            tds = "".join(json_td(s.get(k), cell_id("bias", "targets", model, suite, k), source, stage, 3 if k != "n_cases" else 0)
                          for k in ("n_cases", "overall_auc", "gmb_subgroup", "gmb_bpsn", "gmb_bnsp"))
            rows.append(f'<tr><td class="rowhead">{escape(suite)}</td>{tds}</tr>')
            flat += [{"suite": suite, **r} for r in s.get("communities") or []]
        out += f"<h4>{escape(model)}</h4>"
        out += _table(f"target-bias-{_slug(model)}", ["suite", "cases", "overall AUC", "GMB-Subgroup", "GMB-BPSN", "GMB-BNSP"], rows)
        if flat:
            out += figure(auc_heatmaps(flat, f"{model}: target-group bias AUCs"), f"{model}: Subgroup / BPSN / BNSP AUC per target group and suite", f"fig-target-bias-{_slug(model)}")
            crow = []
            for r in flat:
                tds = "".join(json_td(r.get(k), cell_id("bias", "targets", model, r["suite"], r["community"], k), source, stage, 3, f", n={r.get('n')}")
                              for k in ("subgroup_auc", "bpsn_auc", "bnsp_auc"))
                crow.append(f'<tr><td class="rowhead">{escape(r["suite"])}</td><td class="rowhead">{escape(r["community"])}</td>{tds}</tr>')
            out += ("<details><summary>per target group</summary>"
                    + _table(f"target-bias-communities-{_slug(model)}", ["suite", "target group", "Subgroup AUC", "BPSN AUC", "BNSP AUC"], crow)
                    + "</details>")
    return out


def _maybe_json(path: str | Path) -> dict | None:
    path = Path(path)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def run(
    out: str | Path,
    title: str,
    profile: str,
    models: Mapping[str, Mapping[str, Any]],
    card_files: Mapping[str, str],
    validation_files: Mapping[str, str],
    table_files: Mapping[str, str],
    training_languages_file: str | Path | None,
    below_mark: float,
    heatmap_models: list[str],
    expansion_files: Mapping[str, str | Path] | None = None,
    bias_summary_file: str | Path | None = None,
    published: Mapping[str, Any] | None = None,
) -> Path:
    """Read the tables, model cards and validation results; write the HTML.

    ``expansion_files``: {"coverage": ..., "reproduction": ...} (the expand
    phase's reports; None = no expansion section); ``bias_summary_file``:
    results/bias/summary.json (None = no bias section); ``published``: the
    papers' tables (default: the package's ``published.yaml``)."""
    expansion = None
    if expansion_files is not None:
        cov, rep = expansion_files.get("coverage", ""), expansion_files.get("reproduction", "")
        expansion = {"coverage": _maybe_json(cov) if cov else None, "coverage_file": str(cov),
                     "reproduction": _maybe_json(rep) if rep else None, "reproduction_file": str(rep)}
    bias = None if bias_summary_file is None else {"doc": _maybe_json(bias_summary_file), "file": str(bias_summary_file)}
    html = build(
        title,
        profile,
        models,
        {m: _maybe_json(p) for m, p in card_files.items()},
        {d: _maybe_json(p) for d, p in validation_files.items()},
        read_cells(table_files),
        (_maybe_json(training_languages_file) or {}) if training_languages_file else {},
        below_mark,
        heatmap_models,
        published=published,
        expansion=expansion,
        bias=bias,
    )
    return write_text(html, out)


def report(
    tables: Mapping[str, Path],
    cards: Mapping[str, Path],
    validation: Mapping[str, Path],
    published: Path,
    functionalities: Path,
    out: Path,
    title: str,
    heatmap_models: list[str],
    below_mark: float,
    profile: str,
    models: Mapping[str, Mapping[str, Any]],
    training_languages: Path | None = None,
    expansion: Mapping[str, Path] | None = None,
    bias_summary: Path | None = None,
) -> str:
    """Stage ``report``: the self-contained HTML report from the long
    ``tables``, the model ``cards``, the ``validation`` results, the
    models' ``training_languages``, the expand phase's reports
    (``expansion``: coverage / reproduction; None = no expansion section)
    and the bias summary (None = no bias section), next to the papers'
    ``published`` tables (``functionalities``: the papers' F-numbering, read
    through the package's resources)."""
    for resource in (published, functionalities):
        if not Path(resource).exists():
            raise InputError(f"{resource}: package resource not found")
    written = run(
        out, title, profile, models, cards, validation, tables, training_languages, below_mark, heatmap_models,
        expansion_files=expansion, bias_summary_file=bias_summary,
        published=yaml.safe_load(Path(published).read_text("utf-8")),
    )
    return f"wrote {written}"
