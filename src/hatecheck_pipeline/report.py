"""The self-contained HTML report (``reports/mhc_xtc.html``).

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
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import polars as pl
import yaml

from .tables import cell_id

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td.rowhead,th.rowhead{text-align:left}
td.below{background:#f8d7da;color:#842029;font-weight:600}
td.published{background:#eef3fb;font-style:italic}
td.missing{color:#999}
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
) -> str:
    """An HTML table: one row per ``rows`` value, one column per ``columns``
    value, each cell with provenance; ``published`` adds a paper column per
    column key: (row, column) -> (value, table, source)."""
    if cells.is_empty():
        return f'<p class="note" id="{escape(table_id)}">No results for this table.</p>'
    row_keys = list(dict.fromkeys(cells[rows].to_list()))
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
        body.append(f'<tr><td class="rowhead">{escape(str(rk))}</td>{"".join(tds)}</tr>')
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<table id="{escape(table_id)}">{cap}<thead><tr><th class="rowhead"></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def load_published() -> dict[str, Any]:
    text = resources.files("hatecheck_pipeline").joinpath("resources/published.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def published_lookup(published: Mapping[str, Any], table: str, model: str, rows_are: str = "row") -> dict:
    """(row, column) -> (value, table, source) for one model of a published table."""
    entry = published.get(table, {})
    out = {}
    for row, cols in entry.get("values", {}).get(model, {}).items():
        for col, value in cols.items():
            out[(row, col)] = (value, table, entry.get("source", ""))
    return out


# ---------------------------------------------------------------- plots


def heatmap(cells: pl.DataFrame, title: str, below_mark: float) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = list(dict.fromkeys(cells["row"].to_list()))
    cols = sorted(set(cells["column"].to_list()))
    grid = np.full((len(rows), len(cols)), np.nan)
    for r in cells.iter_rows(named=True):
        if r["value"] is not None:
            grid[rows.index(r["row"]), cols.index(r["column"])] = r["value"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(cols), 1.0 + 0.28 * len(rows)))
    im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
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
    from .tables import CELL_COLUMNS

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
            f"<td class='rowhead'>{escape(langs)}</td><td class='rowhead'>{escape(', '.join(spec.get('suites', [])))}</td></tr>"
        )
    return (
        '<table id="models"><thead><tr><th class="rowhead">model</th><th class="rowhead">base model</th><th class="rowhead">paper model or stand-in</th>'
        '<th class="rowhead">profile</th><th class="rowhead">training data</th><th class="rowhead">training languages</th><th class="rowhead">suites</th></tr></thead><tbody>'
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
) -> str:
    """The report as one HTML string."""
    published = load_published() if published is None else published
    empty = pl.DataFrame(schema=next(iter(cells.values())).schema) if cells else pl.DataFrame()
    get = lambda name: cells.get(name, empty)  # noqa: E731
    parts: list[str] = []
    nav = []

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
        "predictions (score them with <code>hatecheck-pipeline score</code>); the published figures below are shown for comparison.</p>"
    )
    section("summary", "Summary", summary)
    section("models", "Models that ran", models_section(models, cards, profile, training_languages))

    # HateCheck
    hc = ""
    if not get("hatecheck_t2").is_empty():
        pub = {}
        for model in models:
            pub.update({(r, m): v for (r, c), v in published_lookup(published, "hatecheck_t2", model).items() for m in [model]})
        hc += "<h3>Table 1: accuracy per functionality</h3>" + pivot(get("hatecheck_t1"), "hatecheck-t1", "row", "model", below_mark)
        hc += "<h3>Table 2: accuracy per gold label</h3>" + pivot(get("hatecheck_t2"), "hatecheck-t2", "row", "model", below_mark, published=pub)
        hc += "<h3>Table 3: accuracy per reclaimed slur</h3>" + pivot(get("hatecheck_t3"), "hatecheck-t3", "row", "model", below_mark)
        hc += "<h3>Table 4: accuracy per target group (identity-template cases)</h3>" + pivot(get("hatecheck_t4"), "hatecheck-t4", "row", "model", below_mark)
        if not get("hatecheck_t4").is_empty():
            hc += figure(grouped_bars(get("hatecheck_t4"), "row", "model", "HateCheck accuracy per target group", "accuracy (%)", below_mark), "HateCheck accuracy per target group", "fig-hatecheck-targets")
        pub = {}
        for model in models:
            pub.update({(r, model): v for (r, c), v in published_lookup(published, "hatecheck_heldout", model).items()})
        hc += "<h3>Held-out test sets: macro F1</h3>" + pivot(get("hatecheck_heldout"), "hatecheck-heldout", "row", "model", None, published=pub)
        section("hatecheck", "HateCheck (English)", hc)

    # MHC
    if not get("mhc_t7").is_empty():
        m = ""
        pub = {}
        for model in models:
            pub.update({(r, model): v for (r, c), v in published_lookup(published, "mhc_t7", model).items()})
        m += "<h3>Table 7: macro F1 per model and MHC language</h3>" + pivot(get("mhc_t7"), "mhc-t7", "row", "model", below_mark, published=pub)
        m += "<h3>Table 2: F1 per class and macro F1 per language</h3>"
        m += per_model(get("mhc_t2"), lambda model, c: f"<h4>{escape(model)}</h4>" + pivot(c, f"mhc-t2-{model}", "row", "column", below_mark, published=published_lookup(published, "mhc_t2", model) or None))
        chosen = heatmap_models or list(dict.fromkeys(get("mhc_t1")["model"].to_list()))
        m += "<h3>Table 1: accuracy per functionality and language</h3>"
        for model in chosen:
            c = get("mhc_t1").filter(pl.col("model") == model)
            if c.is_empty():
                continue
            m += figure(heatmap(c, f"{model}: accuracy per functionality × language", below_mark), f"{model}: heatmap of accuracy, functionality × language", f"fig-heatmap-{model}")
            m += pivot(c, f"mhc-t1-{model}", "row", "column", below_mark)
        m += "<h3>Table 3: macro F1 per target group (identity-template cases) and language</h3>"
        m += per_model(get("mhc_t3"), lambda model, c: f"<h4>{escape(model)}</h4>" + pivot(c, f"mhc-t3-{model}", "row", "column", below_mark))
        t3 = get("mhc_t3")
        if not t3.is_empty():
            mean = t3.group_by(["model", "row"], maintain_order=True).agg(pl.col("value").mean().round(1))
            m += figure(grouped_bars(mean, "row", "model", "MHC macro F1 per target group (mean over languages)", "macro F1", below_mark), "MHC macro F1 per target group", "fig-mhc-targets")
        pub = {}
        for model in models:
            pub.update({(r, model): v for (r, c), v in published_lookup(published, "mhc_t6", model).items()})
        m += "<h3>Table 6: held-out macro F1 per training dataset</h3>" + pivot(get("mhc_t6"), "mhc-t6", "row", "model", None, published=pub)
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

    section("validation", "Data validation", validation_section(validation))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1><nav>{''.join(nav)}</nav>{''.join(parts)}</body></html>\n"
    )


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
) -> Path:
    """Report stage: read the tables, model cards and validation results; write the HTML."""
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
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, "utf-8")
    tmp.replace(out)
    return out
