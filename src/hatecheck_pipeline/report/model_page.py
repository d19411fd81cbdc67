"""One self-contained HTML page for one model (stage ``model_page_<model>``,
``reports/models/<model>.html``; what ``hatecheck-pipeline evaluate``
writes): what the model is (its card's identity), every suite's overall
figures, and per functional test its accuracy with the template-level
interval, the papers' models beside it (HateCheck Table 1: B-D, B-F,
Perspective, SiftNinja; MHC Table 1: XTC), the tests where it fails (below
the report's mark, 50% as in the papers) marked and listed, under each of
them its first failing cases from the suite's failures.csv (linked), and a
cell whose interval is wider than ``evaluation.max_ci_width`` marked too few
cases to compare, as in the report. Beside each functional suite's table,
the heat map of :mod:`hatecheck_pipeline.report.glance`: the model and the
papers' models, coloured and marked as the papers' Table 1.

Every figure is a cell of the main report's kind (``data-cell-id``,
``data-metrics``, ``data-stage``, a tooltip with its interval), read from
the score stages' metrics files.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import read_json, write_text
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import SEEN_IN_TRAINING, Source, cell_id, overall_cells, section_cells
from hatecheck_pipeline.report.cells import TOO_FEW, fmt, levels, page_ci, published_td, td
from hatecheck_pipeline.report import glance as G
from hatecheck_pipeline.report.failing_cases import failing_tests_block, link, read_failures
from hatecheck_pipeline.report.style import CSS
from hatecheck_pipeline.suites.registry import FUNCTIONAL, HELDOUT, Suite

HATECHECK_PAPER_MODELS = ("B-D", "B-F", "Perspective", "SiftNinja")


def perspective_style(card: Mapping[str, Any]) -> bool:
    """A scoring API asked for Perspective's IDENTITY_ATTACK, as both papers
    ran Perspective: its page sets the papers' Perspective figures beside it."""
    identity = card.get("identity") or {}
    return card.get("kind") == "http" and "IDENTITY_ATTACK" in str(identity.get("score", ""))


def paper_overall(src: Source, published: Mapping[str, Any], model: str = "Perspective") -> dict[str, tuple[float, str, str, str, str]]:
    """A suite's overall figures the papers published for ``model``:
    column (accuracy, macro_f1) -> (value, table, row, column, source).
    Perspective: HateCheck Table 2's total accuracy; MHC Table 8's macro F1
    (German, Italian, Portuguese: the languages with IDENTITY_ATTACK); the
    held-out macro F1 of HateCheck section 3 and MHC Appendix H."""
    if src.kind not in (FUNCTIONAL, HELDOUT):  # an expanded suite: not the papers' cases
        return {}
    wanted = {
        "hatecheck": [("hatecheck_t2", "total", "accuracy", "accuracy")],
        "mhc": [("mhc_t2", src.language or "", "macro_f1", "macro_f1")],
    }.get(src.dataset, [(t, src.dataset, "macro_f1", "macro_f1") for t in ("hatecheck_heldout", "mhc_t6")])
    out = {}
    for table, row, column, shown in wanted:
        found = P.lookup(table, model, published).get((row, column))
        if found and shown not in out:
            out[shown] = (found[0], table, row, column, found[2])
    return out


def interval(cell: Mapping[str, Any] | None) -> str:
    """A figure's interval as text ('' when it has none).

    >>> interval({"ci_low": 55.0, "ci_high": 69.31})
    '55.0–69.3'
    """
    if not cell or cell.get("ci_low") is None:
        return ""
    return f"{fmt(cell['ci_low'])}–{fmt(cell['ci_high'])}"


ANSWERS_KEY = "answers_"  # as models/kinds/http.py writes a scoring API's predictions' metadata


def answers_span(path: str | Path) -> dict[str, str]:
    """A scoring API's predictions file: its answers' snapshot and first and
    last request (UTC), from its metadata ({} for any other file)."""
    meta = pl.read_parquet_metadata(path)
    return {k[len(ANSWERS_KEY) :]: v for k, v in meta.items() if k.startswith(ANSWERS_KEY)}


def answers_obtained(spans: Mapping[str, Mapping[str, str]]) -> str | None:
    """When a scoring API's answers on the page were obtained: the first and
    last request (UTC) over its suites' predictions files, and their
    snapshot(s); None when no file records it.

    >>> answers_obtained({"a": {"snapshot": "2026-12", "first_request_utc": "2026-12-02T10:00:00Z", "last_request_utc": "2026-12-02T11:00:00Z"},
    ...                   "b": {"snapshot": "2026-12", "first_request_utc": "2026-12-01T09:00:00Z", "last_request_utc": "2026-12-01T09:30:00Z"}})
    '2026-12-01T09:00:00Z to 2026-12-02T11:00:00Z (snapshot 2026-12)'
    """
    firsts = sorted(s["first_request_utc"] for s in spans.values() if s.get("first_request_utc"))
    lasts = sorted(s["last_request_utc"] for s in spans.values() if s.get("last_request_utc"))
    if not firsts:
        return None
    snapshots = sorted({s["snapshot"] for s in spans.values() if s.get("snapshot")})
    return f"{firsts[0]} to {lasts[-1]} (snapshot {', '.join(snapshots)})"


def identity_rows(card: Mapping[str, Any], spans: Mapping[str, Mapping[str, str]] | None = None) -> str:
    base = card.get("base_model") or {}
    rows = [
        ("kind", card.get("kind") or ("fine-tuned here" if card.get("train_seconds") is not None else "–")),
        ("what it is", base.get("description") or base.get("ref") or "–"),
    ]
    rows += [(k, str(v)) for k, v in (card.get("identity") or {}).items() if v is not None]
    if card.get("answers"):  # a scoring API's dated audit, as the register stage wrote it
        a = card["answers"]
        rows.append(("snapshot", f"{a.get('snapshot')} ({a.get('snapshot_from', '')})"))
    obtained = answers_obtained(spans or {})
    if obtained:
        rows.append(("answers obtained (UTC)", obtained))
    if card.get("pinned"):
        for part in card["pinned"]["parts"]:
            rows.append(("fetched from", f"{part['url']} (wheel sha256 {part['wheel_sha256']}, member {part['member']})"))
    if card.get("trained_on"):
        rows.append(("trained on (elsewhere)", ", ".join(card["trained_on"])))
    rows.append(("profile", str(card.get("profile", "–"))))
    return "".join(f"<tr><td class='rowhead'>{escape(k)}</td><td class='rowhead'>{escape(str(v))}</td></tr>" for k, v in rows)


def functional_table(
    model: str,
    suite: Suite,
    cells: list[dict[str, Any]],
    published: Mapping[str, Any],
    below_mark: float,
    max_ci_width: float | None = None,
) -> tuple[str, list[str]]:
    """Per functionality: the model's accuracy (with its interval), the
    papers' models beside it; and the functionalities below the mark."""
    dataset = suite.dataset
    if dataset == "hatecheck":
        paper = {m: {r: v for (r, _), v in P.lookup("hatecheck_t1", m, published).items()} for m in HATECHECK_PAPER_MODELS}
    else:
        paper = {"XTC": {r: v for (r, c), v in P.lookup("mhc_t1", "XTC", published).items() if c == suite.language}}
    paper = {m: v for m, v in paper.items() if v}
    cells = sorted(cells, key=lambda c: P.functionality_order(c["row"], dataset))
    head = "".join(f"<th>{escape(m)} (paper)</th>" for m in paper)
    rows, failing = [], []
    for c in cells:
        code = c["row"]
        if c["value"] is not None and c["value"] < below_mark:
            failing.append(P.functionality_label(code, dataset))
        pubs = "".join(
            published_td(
                "mhc_t1" if dataset == "mhc" else "hatecheck_t1",
                m,
                code,
                suite.language or "accuracy",
                *(paper[m].get(code, (None, "", ""))[::2]),
            )
            for m in paper
        )
        rows.append(
            f"<tr><td class='rowhead'>{escape(P.functionality_label(code, dataset))}</td>{td(c, below_mark, max_ci_width)}"
            f"<td>{escape(interval(c))}</td><td>{c['n'] if c['n'] is not None else '–'}</td>{pubs}</tr>"
        )
    table = (
        f"<table id='{escape(cell_id('page', model, suite.name))}'><thead><tr><th class='rowhead'>functional test</th>"
        f"<th>{escape(model)}</th><th>{escape(page_ci(levels(cells), noun='CI'))} (templates)</th><th>n</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return table, failing


def build(
    model: str,
    card: Mapping[str, Any],
    loaded: list[tuple[Source, dict]],
    suites: Mapping[str, Suite],
    below_mark: float,
    published: Mapping[str, Any] | None = None,
    max_ci_width: float | None = None,
    failures: Mapping[str, tuple[str, str]] | None = None,
    not_run: Mapping[str, str] | None = None,
    spans: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The page as one HTML string (``max_ci_width``: cells with a wider
    interval are marked too few cases to compare; ``failures``: suite ->
    (its failures.csv, the link to it), the failing cases listed under each
    functional test below the mark; ``not_run``: suite -> why it was not
    run, a row each in the table of every suite; ``spans``: a scoring
    API's suite -> its answers' snapshot and first and last request)."""
    published = P.load() if published is None else published
    base = card.get("base_model") or {}
    parts = [
        f"<h1>{escape(model)}: functional tests</h1>",
        f"<p>{escape(base.get('description') or base.get('ref') or '')}</p>",
        f"<table id='identity'><tbody>{identity_rows(card, spans)}</tbody></table>",
    ]
    overall = overall_cells("page_overall", loaded, ["accuracy", "macro_f1"], row_of=lambda s: s.suite)
    beside = perspective_style(card)  # the papers' Perspective figures beside a Perspective-style API's
    sources = {src.suite: src for src, _ in loaded}
    rows = []
    for suite_name in dict.fromkeys(overall["row"].to_list()):
        part = {r["column"]: r for r in overall.filter(pl.col("row") == suite_name).iter_rows(named=True)}
        acc, f1 = part.get("accuracy"), part.get("macro_f1")
        seen = (acc or {}).get("setting") == SEEN_IN_TRAINING
        note = "its training data: not a held-out figure" if seen else ""
        unanswered = next((d.get("overall", {}).get("n_unanswered") for src, d in loaded if src.suite == suite_name), None)
        if unanswered:  # a scoring API's refused texts, left out of the figures
            note = "; ".join(filter(None, [note, f"{unanswered} unanswered by the API, not scored"]))
        paper = ""
        if beside:
            figs = paper_overall(sources[suite_name], published)
            paper = "".join(
                published_td(f[1], "Perspective", f[2], f[3], f[0], f[4]) if f else published_td("", "", "", "", None, "")
                for f in (figs.get("accuracy"), figs.get("macro_f1"))
            )
        rows.append(
            f"<tr><td class='rowhead'>{escape(suite_name)}</td><td>{(acc or {}).get('n', '–')}</td>{td(acc, below_mark, max_ci_width)}"
            f"<td>{escape(interval(acc))}</td>{td(f1, None, max_ci_width)}<td>{escape(interval(f1))}</td>{paper}"
            f"<td class='rowhead'>{escape(note)}</td></tr>"
        )
    rows += [
        f"<tr><td class='rowhead'>{escape(name)}</td><td class='fail' colspan='{8 if beside else 6}'>{escape(why)}</td></tr>"
        for name, why in (not_run or {}).items()
    ]
    paper_head = "<th>Perspective (paper): accuracy</th><th>Perspective (paper): macro F1</th>" if beside else ""
    ci_head = escape(page_ci(levels(overall), noun="CI"))
    parts.append(
        "<h2>Every suite</h2><table id='overall'><thead><tr><th class='rowhead'>suite</th><th>n</th><th>accuracy</th>"
        f"<th>{ci_head}</th><th>macro F1</th><th>{ci_head}</th>{paper_head}<th class='rowhead'></th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + (
            "<p class='note'>Perspective (paper): IDENTITY_ATTACK at a 50% cutoff as the papers ran it: HateCheck Table 2 "
            "(accuracy), Multilingual HateCheck Table 8 (German, Italian and Portuguese only, tested February 2022) and "
            "Appendix H (held-out Italian and Portuguese); the API may have changed since.</p>"
            if beside
            else ""
        )
    )
    fails: list[str] = []
    found = levels(overall)  # the levels of the page's intervals (every figure's metrics file's)
    for src, doc in loaded:
        suite = suites[src.suite]
        if not suite.functional or not doc.get("by_functionality"):
            continue
        frame = section_cells("hatecheck_t1" if suite.dataset == "hatecheck" else "mhc_t1", [(src, doc)], "by_functionality", "accuracy")
        cells = frame.to_dicts()
        found |= levels(frame)
        table, failing = functional_table(model, suite, cells, published, below_mark, max_ci_width)
        fails += [f"{suite.name}: {f}" for f in failing]
        heat = G.view(
            frame,
            suite.name,
            f"heat-{suite.name}",
            below_mark,
            suite.dataset,
            G.papers_for(suite.dataset, suite.language, published),
            max_ci_width,
        )
        parts.append(
            f"<h2>{escape(suite.name)}: accuracy per functional test</h2>{G.legend(below_mark, max_ci_width, levels(frame))}{G.side_by_side(heat, table)}"
        )
        parts.append(failing_cases_html(suite, cells, failures, below_mark))
    listing = "".join(f"<li>{escape(f)}</li>" for f in fails) or "<li>none</li>"
    parts.insert(4, f"<h2>Functional tests it fails (accuracy below {below_mark:g}%)</h2><ul id='failing'>{listing}</ul>")
    parts.append(
        f"<p class='note'>Intervals: {escape(page_ci(found, noun='percentile bootstrap'))}; on functional suites the templates are resampled (on HateCheck "
        "and MHC the slurs crossed with them too), on held-out sets the cases. Hover a cell for its metrics file and stage; <code>hatecheck-pipeline lineage CELL_ID</code> "
        "traces it."
        + (
            ""
            if max_ci_width is None
            else f" Cells whose {escape(page_ci(found))} is wider than {max_ci_width:g} points are <span class='too-few'>underlined</span>: {TOO_FEW}."
        )
        + "</p>"
    )
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{escape(model)}: functional tests</title>"
        f"<style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n"
    )


def failing_cases_html(suite: Suite, cells: list[dict[str, Any]], failures: Mapping[str, tuple[str, str]] | None, below_mark: float) -> str:
    """Under each functional test of ``suite`` below the mark, its first
    failing cases from the suite's failures.csv, and the link to it ('' when
    the page has no failures files or the model fails no test)."""
    if not failures or suite.name not in failures:
        return ""
    path, href = failures[suite.name]
    return failing_tests_block(cells, suite.dataset, read_failures(path), href, below_mark, heading=f"{suite.name}: failing cases")


def page_failures(scored: Mapping[str, Suite], failures: Mapping[str, Path] | None, page: Path) -> dict[str, tuple[str, str]]:
    """suite -> (its failures.csv, the link to it from ``page``), from the
    files keyed by score stage."""
    return {scored[stage].name: (str(path), link(path, page)) for stage, path in (failures or {}).items() if stage in scored}


def model_page(
    model: str,
    scored: Mapping[str, Suite],
    card: Path,
    metrics: Mapping[str, Path],
    page: Path,
    below_mark: float,
    max_ci_width: float | None = None,
    failures: Mapping[str, Path] | None = None,
    not_run: Mapping[str, str] | None = None,
    answers: Mapping[str, Path] | None = None,
) -> str:
    """Stage ``model_page_<model>``: the page from the model's card and the
    metrics files of its suites (``metrics``, ``failures`` and ``scored``
    keyed by the score stage that wrote each file; the papers' figures and
    functional tests are read through the package's resources, a dependency
    only of the stage so that a change re-runs it);
    ``not_run``: suite -> why the model was not run on it (a row each);
    ``answers``: a scoring API's predictions files, keyed as ``metrics``,
    whose metadata say when their answers were obtained."""
    spans = {scored[stage].name: answers_span(path) for stage, path in (answers or {}).items() if stage in scored}
    loaded = [
        (Source(model, s.name, s.dataset, s.language, str(metrics[stage]), stage, s.kind), read_json(metrics[stage]))
        for stage, s in scored.items()
    ]
    write_text(
        build(
            model,
            read_json(card),
            loaded,
            {s.name: s for s in scored.values()},
            below_mark,
            max_ci_width=max_ci_width,
            failures=page_failures(scored, failures, page),
            not_run=not_run,
            spans=spans,
        ),
        page,
    )
    return f"{model}: {len(loaded)} suite(s) -> {page}"
