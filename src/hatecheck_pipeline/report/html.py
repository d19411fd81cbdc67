"""The self-contained HTML report (``reports/mhc_xtc.html``; stage
function :func:`report`).

One file, no network: inline CSS, plots as base64 PNG (matplotlib, Agg).
Every table cell carries its provenance: ``data-cell-id`` (accepted by
``hatecheck-pipeline lineage``), ``data-metrics`` and ``data-stage``
attributes, and a ``title`` tooltip naming the metrics file and stage.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any, Mapping

import polars as pl
import yaml

from hatecheck_pipeline.core.kinds import is_llm
from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.files import InputError, write_text
from hatecheck_pipeline.core.usage import load_records
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report import cells as C
from hatecheck_pipeline.report.cells import fmt, per_model, published_td, td  # noqa: F401  (td, published_td: used by tests)
from hatecheck_pipeline.report import glance as G
from hatecheck_pipeline.report.figures import figure, grouped_bars
from hatecheck_pipeline.report.diff_view import diff_section
from hatecheck_pipeline.report.failing_cases import hrefs as failure_hrefs, table_block as failing_cases
from hatecheck_pipeline.report.gpt_hatecheck import section as gpt_hatecheck_section
from hatecheck_pipeline.report.llm import functional_llm_section, llm_section, prompted_card
from hatecheck_pipeline.report.paper_tables import appf_section, hatecheck_agreement_section, label_heldout, mhc_t5_section
from hatecheck_pipeline.report.style import CSS
from hatecheck_pipeline.report.sections import (
    bias_section,
    expanded_section,
    models_section,
    usage_section,
    validation_section,
)

# The documentation page that explains each section and paper table: the
# Markdown sources, relative to reports/mhc_xtc.html (the built site has
# the same page names and anchors). Anchors are the headings of
# docs/evaluation.md (a test checks that each exists).
DOCS_PAGE = "../docs/evaluation.md"
DOCS_ANCHORS = {
    "summary": "summary",
    "models": "models-that-ran",
    "hatecheck": "hatecheck-english",
    "mhc": "multilingual-hatecheck",
    "shots": "zero-shot-versus-many-shot",
    "contrast": "contrast-consistency",
    "other": "other-scores",
    "expanded": "expanded-suites-original-versus-expanded",
    "bias": "bias-and-explainability-audits",
    "llm": "prompted-llms-as-classifiers",
    "validation": "data-validation",
    "usage": "run-time-and-memory",
    "diffs": "what-changed-between-models-per-functional-test",
}
GPT_DOCS = "../docs/gpt-hatecheck.md"


def docs_link(sid: str) -> str:
    """A link from a section or paper table to its documentation.

    >>> docs_link("mhc")
    ' <a class="docs" href="../docs/evaluation.md#multilingual-hatecheck">(what this is)</a>'
    """
    return f' <a class="docs" href="{DOCS_PAGE}#{DOCS_ANCHORS[sid]}">(what this is)</a>'


def read_cells(table_files: Mapping[str, str | Path]) -> dict[str, pl.DataFrame]:
    """Long tables by name; a table not produced (no such models) is empty."""
    from hatecheck_pipeline.evaluation.cells import CELL_COLUMNS

    out = {}
    for name, path in table_files.items():
        path = Path(path)
        table = (
            pl.read_csv(path, schema_overrides=CELL_COLUMNS) if path.exists() and path.stat().st_size else pl.DataFrame(schema=CELL_COLUMNS)
        )
        # a table written before a column existed (e.g. ci_level) has it, null, in the schema's order
        missing = [pl.lit(None, dtype).alias(c) for c, dtype in CELL_COLUMNS.items() if c not in table.columns]
        out[name] = table.with_columns(missing).select(*CELL_COLUMNS, *(c for c in table.columns if c not in CELL_COLUMNS))
    return out


def build(
    title: str,
    profile: str,
    models: Mapping[str, Mapping[str, Any]],
    cards: Mapping[str, Mapping[str, Any] | None],
    validation: Mapping[str, Mapping[str, Any] | None],
    cells: Mapping[str, pl.DataFrame],
    training_languages: Mapping[str, list[str]],
    below_mark: float,
    published: Mapping[str, Any] | None = None,
    expansion: Mapping[str, Any] | None = None,
    bias: Mapping[str, Any] | None = None,
    llm: Mapping[str, Any] | None = None,
    llm_backends: Mapping[str, Mapping[str, Any]] | None = None,
    usage: Mapping[str, Any] | None = None,
    paper_tables: Mapping[str, Any] | None = None,
    gpt: Mapping[str, Any] | None = None,
    diffs: Mapping[str, Mapping[str, Any]] | None = None,
    model_pages: Mapping[str, str] | None = None,
    max_ci_width: float | None = None,
    failures: Mapping[str, tuple[str, str]] | None = None,
    ci_level: float | None = None,
) -> str:
    """The report as one HTML string.

    ``expansion``: {coverage, coverage_file, reproduction, reproduction_file,
    suites: {"<suite>/<scheme>": (file, rows)}} (documents may be None); ``bias``: {doc, file} of results/bias/summary.json.
    Either None leaves its section out (the pipeline always passes both).
    ``usage``: {records, folder} of the stage time and memory records (None
    = no such section); ``paper_tables``: {name: {doc, file}} of the
    papers' further tables (``mhc_t5``: MHC Table 5; ``hatecheck_s25``:
    HateCheck section 2.5, the annotators' agreement; ``appf``: HateCheck
    appendix F, {model: {doc, file, stage}}); None = not shown.
    ``gpt``: {docs: {generation, validation, quality, compare}, files: the
    same keys -> their paths} (None = no GPT-HateCheck section).
    ``max_ci_width``: a table cell whose interval is wider (percentage
    points) is marked too few cases to compare (None = no marker).
    ``failures``: score stage -> (its failures.csv, the link to it): the
    failing cases listed under each functional test below the mark.
    ``ci_level``: the configured ``evaluation.ci_level``, named in the notes
    only when no cell records its interval's level (each cell's own level
    is in its tooltip; notes name the level the cells share)."""
    from functools import partial

    pivot = partial(C.pivot, max_ci_width=max_ci_width)
    published = P.load() if published is None else published
    paper_tables = paper_tables or {}
    from hatecheck_pipeline.evaluation.cells import CELL_COLUMNS

    empty = pl.DataFrame(schema=next(iter(cells.values())).schema) if cells else pl.DataFrame(schema=CELL_COLUMNS)
    get = lambda name: cells.get(name, empty)  # noqa: E731
    parts: list[str] = []
    nav = []

    def paper_cols(table: str) -> dict:
        """(row, model) -> published value: each of our models' columns next to the paper's same-named model."""
        return {(r, model): v for model in models for (r, c), v in P.lookup(table, model, published).items()}

    def section(sid: str, heading: str, body: str) -> None:
        nav.append(f'<a href="#{sid}">{escape(heading)}</a>')
        parts.append(f'<section id="{sid}"><h2>{escape(heading)}{docs_link(sid) if sid in DOCS_ANCHORS else ""}</h2>{body}</section>')

    # summary
    found = C.levels(*cells.values())  # the levels of every interval in the tables
    t7, t2h = get("mhc_t7"), get("hatecheck_t2")
    lines = G.summary_items(t2h, t7, get("shots_summary"), max_ci_width)  # each with its n, interval and too-few mark
    failed = [d for d, doc in validation.items() if not doc or not doc.get("success")]
    summary = (
        f"<p>Profile <b>{escape(profile)}</b>. Cells below {below_mark:g}% are <span class='below' style='background:#f8d7da'>marked</span>, "
        "as in the papers. "
        + (
            f"Cells whose {C.page_ci(found, ci_level)} is wider than {max_ci_width:g} points are <span class='too-few'>underlined</span>: "
            f"{C.TOO_FEW} (their n and interval are in the tooltip, and under the figure in the tables of accuracy per functional test; "
            f"a heat map marks them {G.DAGGER}). "
            if max_ci_width is not None
            else ""
        )
        + "<b>n/a</b>: the figure is undefined, its denominator zero (an F1 of a class with no gold and no predicted "
        "case); it is left out of every mean, never counted as 0. Hover a cell for its confidence interval and provenance; every cell's "
        "<code>data-cell-id</code> can be traced with <code>hatecheck-pipeline lineage CELL_ID</code>.</p>"
        f"<p class='note'>Intervals: {C.page_ci(found, ci_level, 'percentile bootstrap')}. On HateCheck, MHC and the expanded suites it resamples "
        "<b>templates</b> (all cases generated from one template, e.g. one per target group, are drawn together; "
        "a case without a template is its own cluster); on HateCheck and MHC it also resamples the <b>slurs</b> crossed with "
        "the slur templates (two-way: a case counts as often as its template was drawn times as often as its slur; the "
        "target groups are the tests' design, not resampled); on the held-out test sets it resamples cases; "
        "each cell's tooltip names its resampling units and how many there were.</p>"
        f"<ul>{''.join(lines) or '<li>No results.</li>'}</ul>"
        f"<p>Data validation: {'all datasets passed' if not failed else 'FAILED for ' + escape(', '.join(failed))}.</p>"
        "<p class='note'>The HateCheck paper's Tables 1, 2 and 4 can be reproduced exactly only from the original models' "
        "predictions: score such a file with <code>hatecheck-pipeline score</code>, then <code>hatecheck-pipeline compare --model Perspective</code> "
        "(or SiftNinja, B-D, B-F) checks it cell by cell. The published figures below (italic columns) are shown for comparison.</p>"
    )
    section("summary", "Summary", summary)
    cards = {**cards, **{m: prompted_card(spec, llm_backends or {}) for m, spec in models.items() if is_llm(spec)}}
    pages = "".join(f'<li><a href="{escape(href)}">{escape(m)}</a></li>' for m, href in (model_pages or {}).items())
    section(
        "models",
        "Models that ran",
        models_section(models, cards, profile, training_languages)
        + (
            f"<p>Pages of the classifiers trained elsewhere (every suite, each functional test beside the papers' models):</p>"
            f"<ul id='model-pages'>{pages}</ul>"
            if pages
            else ""
        ),
    )

    # HateCheck
    hc = ""
    if not get("hatecheck_t2").is_empty():
        hc += (
            "<h3>Table 1: accuracy per functional test"
            + docs_link("hatecheck")
            + "</h3>"
            + G.legend(below_mark, max_ci_width, C.levels(get("hatecheck_t1")), ci_level)
            + G.side_by_side(
                G.view(
                    get("hatecheck_t1"),
                    "hatecheck",
                    "heat-hatecheck",
                    below_mark,
                    "hatecheck",
                    G.papers_for("hatecheck", None, published),
                    max_ci_width,
                ),
                pivot(
                    get("hatecheck_t1"),
                    "hatecheck-t1",
                    "row",
                    "model",
                    below_mark,
                    published=paper_cols("hatecheck_t1"),
                    functionalities_of="hatecheck",
                    show_ci=True,
                ),
            )
        )
        hc += failing_cases(get("hatecheck_t1"), "hatecheck", failures or {}, below_mark)
        hc += (
            "<h3>Table 2: accuracy per gold label"
            + docs_link("hatecheck")
            + "</h3>"
            + pivot(get("hatecheck_t2"), "hatecheck-t2", "row", "model", below_mark, published=paper_cols("hatecheck_t2"))
        )
        hc += (
            "<h3>Table 3: accuracy per reclaimed slur (F9)"
            + docs_link("hatecheck")
            + "</h3>"
            + pivot(get("hatecheck_t3"), "hatecheck-t3", "row", "model", below_mark, published=paper_cols("hatecheck_t3"))
        )
        hc += (
            "<h3>Table 4: accuracy per target group (identity-template cases)"
            + docs_link("hatecheck")
            + "</h3>"
            + pivot(get("hatecheck_t4"), "hatecheck-t4", "row", "model", below_mark, published=paper_cols("hatecheck_t4"))
        )
        if not get("hatecheck_t4").is_empty():
            hc += figure(
                grouped_bars(get("hatecheck_t4"), "row", "model", "HateCheck accuracy per target group", "accuracy (%)", below_mark),
                "HateCheck accuracy per target group",
                "fig-hatecheck-targets",
            )
        held, held_pub = label_heldout(get("hatecheck_heldout"), paper_cols("hatecheck_heldout"))
        hc += (
            "<h3>Held-out test sets: binary macro F1 (hateful vs non-hateful)"
            + docs_link("hatecheck")
            + "</h3>"
            + pivot(held, "hatecheck-heldout", "row", "model", None, published=held_pub)
        )
        if "appf" in paper_tables:
            hc += appf_section(paper_tables["appf"], published, max_ci_width)
    if "hatecheck_s25" in paper_tables:  # section 2.5: a property of the suite, shown whichever models ran
        hc += hatecheck_agreement_section(
            paper_tables["hatecheck_s25"].get("doc"), paper_tables["hatecheck_s25"].get("file", ""), published
        )
    if hc:
        section("hatecheck", "HateCheck (English)", hc)

    # MHC
    if not get("mhc_t7").is_empty():
        m = ""
        m += (
            "<h3>Table 7: macro F1 per model and MHC language"
            + docs_link("mhc")
            + "</h3>"
            + pivot(get("mhc_t7"), "mhc-t7", "row", "model", below_mark, published=paper_cols("mhc_t7"))
        )
        m += "<h3>Table 2: F1 per class and macro F1 per language" + docs_link("mhc") + "</h3>"
        m += per_model(
            get("mhc_t2"),
            lambda model, c: (
                f"<h4>{escape(model)}</h4>"
                + pivot(c, f"mhc-t2-{model}", "row", "column", below_mark, published=P.lookup("mhc_t2", model, published) or None)
            ),
        )
        m += "<h3>Table 1: accuracy per functionality and language" + docs_link("mhc") + "</h3>"
        m += G.mhc_views(
            get("mhc_t1"),
            below_mark,
            published,
            max_ci_width,
            lambda c, tid: pivot(c, tid, "row", "model", below_mark, functionalities_of="mhc", show_ci=True),
        )
        m += (
            "<details><summary>Per model, languages as columns (the paper's layout, its XTC figures beside)</summary>"
            + per_model(
                get("mhc_t1"),
                lambda model, c: (
                    f"<h4>{escape(model)}</h4>"
                    + pivot(
                        c,
                        f"mhc-t1-{model}",
                        "row",
                        "column",
                        below_mark,
                        published=P.lookup("mhc_t1", model, published) or None,
                        functionalities_of="mhc",
                        show_ci=True,
                    )
                ),
            )
            + "</details>"
        )
        for model in dict.fromkeys(get("mhc_t1")["model"].to_list()):
            m += failing_cases(get("mhc_t1").filter(pl.col("model") == model), "mhc", failures or {}, below_mark, group="column")
        m += "<h3>Table 3: macro F1 per target group (identity-template cases) and language" + docs_link("mhc") + "</h3>"
        m += per_model(
            get("mhc_t3"),
            lambda model, c: (
                f"<h4>{escape(model)}</h4>"
                + pivot(c, f"mhc-t3-{model}", "row", "column", below_mark, published=P.lookup("mhc_t3", model, published) or None)
            ),
        )
        t3 = get("mhc_t3")
        if not t3.is_empty():
            mean = t3.group_by(["model", "row"], maintain_order=True).agg(pl.col("value").mean().round(1))
            m += figure(
                grouped_bars(mean, "row", "model", "MHC macro F1 per target group (mean over languages)", "macro F1", below_mark),
                "MHC macro F1 per target group",
                "fig-mhc-targets",
            )
        held, held_pub = label_heldout(get("mhc_t6"), paper_cols("mhc_t6"))
        m += (
            "<h3>Table 6: held-out macro F1 per training dataset"
            + docs_link("mhc")
            + "</h3>"
            + pivot(held, "mhc-t6", "row", "model", None, published=held_pub)
        )
        if "mhc_t5" in paper_tables:
            m += mhc_t5_section(paper_tables["mhc_t5"].get("doc"), paper_tables["mhc_t5"].get("file", ""), published)
        section("mhc", "Multilingual HateCheck", m)

    # zero vs many-shot
    if not get("shots_languages").is_empty():
        s = (
            "<p class='note'>Each (model, language) is tagged many-shot when the language occurs in the model's training data (its <code>language</code> column), zero-shot otherwise. "
            "The intervals of each setting's mean and of the gap combine the languages' template-level bootstrap values, "
            "each language resampled independently.</p>"
        )
        s += pivot(get("shots_summary"), "shots-summary", "model", "column", below_mark, caption="mean macro F1 over MHC languages")
        s += figure(
            grouped_bars(
                get("shots_languages").with_columns(
                    pl.concat_str([pl.col("row"), pl.lit(" ("), pl.col("setting"), pl.lit(")")]).alias("label")
                ),
                "row",
                "model",
                "MHC macro F1 per language (many-shot languages in the table above)",
                "macro F1",
                below_mark,
            ),
            "Zero- vs many-shot macro F1",
            "fig-shots",
        )
        s += pivot(
            get("shots_languages").with_columns(pl.concat_str([pl.col("row"), pl.lit(" ("), pl.col("setting"), pl.lit(")")]).alias("row")),
            "shots-languages",
            "row",
            "model",
            below_mark,
            caption="macro F1 per language and setting",
        )
        gap = get("shots_class_gap")
        s += "<h3>Gap per functionality class</h3>"
        s += per_model(gap, lambda model, c: f"<h4>{escape(model)}</h4>" + pivot(c, f"shots-class-gap-{model}", "row", "column", None))
        section("shots", "Zero-shot versus many-shot", s)

    if not get("contrast").is_empty():
        section(
            "contrast",
            "Contrast consistency",
            "<p class='note'>Share of (hateful case, non-hateful contrast) pairs linked by <code>ref_case_id</code> where the model gets both right.</p>"
            + pivot(get("contrast"), "contrast-table", "row", "model", below_mark),
        )

    if not get("other_scores").is_empty():
        section(
            "other",
            "Other scores",
            "<p class='note'>Macro F1 of every scored (model, suite) that no table above reads "
            "(for example a held-out test set of a model tested on no functional suite).</p>"
            + pivot(
                label_heldout(get("other_scores"))[0],
                "other-scores",
                "row",
                "model",
                None,
                caption="macro F1 (each row says what it scores)",
            ),
        )

    if diffs:
        section("diffs", "What changed between models, per functional test", diff_section(diffs))

    if expansion is not None:
        section(
            "expanded",
            "Expanded suites: original versus expanded",
            expanded_section(
                get("expanded_functionality"),
                below_mark,
                expansion.get("coverage"),
                expansion.get("coverage_file", ""),
                expansion.get("reproduction"),
                expansion.get("reproduction_file", ""),
                expansion.get("suites"),
                max_ci_width,
                get("expanded_invariance"),
            ),
        )
    if gpt is not None:
        d = gpt["docs"]
        section(
            "gpt",
            "GPT-HateCheck: generated and validated test cases",
            f'<p class="note">Jin et al. 2024; what each table is: <a href="{GPT_DOCS}">docs/gpt-hatecheck.md</a>.</p>'
            + gpt_hatecheck_section(d.get("generation"), d.get("validation"), d.get("quality"), d.get("compare"), gpt["files"], published),
        )
    if bias is not None:
        section("bias", "Bias and explainability audits", bias_section(bias.get("doc"), bias.get("file", ""), published))
    prompted = [m for m, spec in models.items() if is_llm(spec)]
    if llm or prompted:
        body = llm_section(llm["docs"], llm["files"], published, llm.get("misspelling"), llm.get("sets")) if llm else ""
        body += functional_llm_section({m: models[m] for m in prompted}, get("hatecheck_t2"), get("mhc_t7"), below_mark, max_ci_width)
        section("llm", "Prompted LLMs as classifiers (ETHOS; GPT-3 detection paper)", body)

    section("validation", "Data validation", validation_section(validation))
    if usage is not None:
        section("usage", "Run time and memory", usage_section(usage["records"], usage["folder"]))
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


def _rows(path: str | Path) -> int | None:
    """Row count of a Parquet file (None: not there)."""
    return pl.scan_parquet(path).select(pl.len()).collect().item() if Path(path).exists() else None


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
    expansion_files: Mapping[str, str | Path] | None = None,
    bias_summary_file: str | Path | None = None,
    published: Mapping[str, Any] | None = None,
    llm_files: Mapping[str, str | Path] | None = None,
    llm_backends: Mapping[str, Mapping[str, Any]] | None = None,
    usage_dir: str | Path | None = None,
    expanded_suite_files: Mapping[str, str | Path] | None = None,
    mhc_t5_file: str | Path | None = None,
    hatecheck_agreement_file: str | Path | None = None,
    multiclass_files: Mapping[str, str | Path] | None = None,
    llm_misspelling_files: Mapping[str, str | Path] | None = None,
    gpt_files: Mapping[str, str | Path] | None = None,
    diff_files: Mapping[str, str | Path] | None = None,
    model_pages: Mapping[str, str | Path] | None = None,
    ethos_sets_file: str | Path | None = None,
    max_ci_width: float | None = None,
    failure_files: Mapping[str, str | Path] | None = None,
    ci_level: float | None = None,
) -> Path:
    """Read the tables, model cards and validation results; write the HTML.

    ``expansion_files``: {"coverage": ..., "reproduction": ...} (the expand
    phase's reports; None = no expansion section); ``expanded_suite_files``:
    the expanded suites' processed files; ``bias_summary_file``:
    results/bias/summary.json (None = no bias section); ``published``: the
    papers' tables (default: the package's ``published.yaml``);
    ``usage_dir``: the stage time and memory records (None = no section);
    ``mhc_t5_file``: MHC Table 5 (annotator disagreement);
    ``hatecheck_agreement_file``: HateCheck section 2.5 (stage
    hatecheck_agreement); ``multiclass_files``:
    "<model>/<dataset>" -> a multiclass model's all-class held-out metrics
    (written by stage ``heldout_multiclass_<model>_<dataset>``);
    ``failure_files``: score stage -> its failures.csv (the failing cases
    under the functional tests below the mark); ``ci_level``: the configured
    level, named where no cell records one."""
    paper_tables: dict[str, Any] = {}
    if mhc_t5_file is not None:
        paper_tables["mhc_t5"] = {"doc": _maybe_json(mhc_t5_file), "file": str(mhc_t5_file)}
    if hatecheck_agreement_file is not None:
        paper_tables["hatecheck_s25"] = {"doc": _maybe_json(hatecheck_agreement_file), "file": str(hatecheck_agreement_file)}
    if multiclass_files:
        paper_tables["appf"] = {
            key: {
                "model": key.split("/")[0],
                "dataset": key.split("/")[1],
                "doc": _maybe_json(p),
                "file": str(p),
                "stage": "heldout_multiclass_" + key.replace("/", "_"),
            }
            for key, p in multiclass_files.items()
        }
    expansion = None
    if expansion_files is not None:
        cov, rep = expansion_files.get("coverage", ""), expansion_files.get("reproduction", "")
        expansion = {
            "coverage": _maybe_json(cov) if cov else None,
            "coverage_file": str(cov),
            "reproduction": _maybe_json(rep) if rep else None,
            "reproduction_file": str(rep),
            "suites": {k: (str(p), _rows(p)) for k, p in (expanded_suite_files or {}).items()},
        }
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
        published=published,
        expansion=expansion,
        bias=bias,
        llm={
            "docs": {b: _maybe_json(p) for b, p in llm_files.items()},
            "files": {b: str(p) for b, p in llm_files.items()},
            "misspelling": {
                "docs": {b: _maybe_json(p) for b, p in (llm_misspelling_files or {}).items()},
                "files": {b: str(p) for b, p in (llm_misspelling_files or {}).items()},
            }
            if llm_misspelling_files
            else None,
            "sets": {"doc": _maybe_json(ethos_sets_file), "file": str(ethos_sets_file)} if ethos_sets_file else None,
        }
        if llm_files
        else None,
        llm_backends=llm_backends,
        usage=None if usage_dir is None else {"records": load_records(Path(usage_dir)), "folder": str(usage_dir)},
        paper_tables=paper_tables,
        gpt=None
        if gpt_files is None
        else {
            "docs": {k: _maybe_json(p) for k, p in gpt_files.items() if str(p).endswith(".json")},
            "files": {k: str(p) for k, p in gpt_files.items()},
        },
        diffs={stage: {"doc": _maybe_json(p), "file": str(p), "stage": stage} for stage, p in (diff_files or {}).items()},
        # links relative to the report's own folder
        model_pages={m: os.path.relpath(p, Path(out).parent) for m, p in (model_pages or {}).items()},
        max_ci_width=max_ci_width,
        failures=failure_hrefs(failure_files or {}, out),
        ci_level=ci_level,
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
    below_mark: float,
    profile: Profile,
    models: Mapping[str, Mapping[str, Any]],
    training_languages: Path | None = None,
    expansion: Mapping[str, Path] | None = None,
    bias_summary: Path | None = None,
    llm: Mapping[str, Path] | None = None,
    llm_backends: Mapping[str, Mapping[str, Any]] | None = None,
    usage_dir: Path | None = None,
    expanded_suites: Mapping[str, Path] | None = None,
    mhc_t5: Path | None = None,
    hatecheck_agreement: Path | None = None,
    multiclass: Mapping[str, Path] | None = None,
    llm_misspelling: Mapping[str, Path] | None = None,
    gpt_hatecheck: Mapping[str, Path] | None = None,
    diffs: Mapping[str, Path] | None = None,
    model_pages: Mapping[str, Path] | None = None,
    ethos_sets: Path | None = None,
    max_ci_width: float | None = None,
    failures: Mapping[str, Path] | None = None,
    ci_level: float | None = None,
) -> str:
    """Stage ``report``: the self-contained HTML report from the long
    ``tables``, the model ``cards``, the ``validation`` results, the
    models' ``training_languages``, the expand phase's reports
    (``expansion``: coverage / reproduction; None = no expansion section)
    and the bias summary (None = no bias section), the prompted LLMs'
    ETHOS metrics per backend (``llm``; None = no section) and their misspelling
    test (``llm_misspelling``), next to the papers'
    ``published`` tables (``functionalities``: the papers' F-numbering, read
    through the package's resources); ``llm_backends``: ``llm.backends``
    (what an ``llm`` model kind's backend is); ``usage_dir``: the stage
    time and memory records shown in the section "Run time and memory" (a
    record of the run read as it is, not a tracked input); ``expanded_suites``:
    "<suite>/<scheme>" -> the expanded suites' processed files (listed with
    their row counts); ``mhc_t5``: MHC Table 5 (annotator disagreement);
    ``hatecheck_agreement``: HateCheck section 2.5 (the gold labels' validation);
    ``multiclass``: "<model>/<dataset>" -> the all-class held-out metrics
    of the multiclass models (HateCheck appendix F).
    ``gpt_hatecheck``: GPT-HateCheck's generation, validation, quality and
    comparison reports (None = no such section); ``diffs``: stage name ->
    the per-functionality comparison of two models (``evaluation.diffs``);
    ``model_pages``: model -> its page (linked from the models section);
    ``ethos_sets``: the ethos_sets stage's report (which example sets ran,
    the paper's comments not found; named next to Tables 4 and 7's rows);
    ``max_ci_width``: cells with a wider interval are marked too few cases
    to compare; ``failures``: score stage -> its failures.csv (HateCheck
    and MHC suites), listed under each functional test below the mark;
    ``ci_level``: ``evaluation.ci_level``, named in the notes where no cell
    records its interval's level."""
    for resource in (published, functionalities):
        if not Path(resource).exists():
            raise InputError(f"{resource}: package resource not found")
    written = run(
        out,
        title,
        profile.name,
        models,
        cards,
        validation,
        tables,
        training_languages,
        below_mark,
        expansion_files=expansion,
        bias_summary_file=bias_summary,
        llm_files=llm,
        llm_misspelling_files=llm_misspelling,
        published=yaml.safe_load(Path(published).read_text("utf-8")),
        llm_backends=llm_backends,
        usage_dir=usage_dir,
        expanded_suite_files=expanded_suites,
        mhc_t5_file=mhc_t5,
        hatecheck_agreement_file=hatecheck_agreement,
        multiclass_files=multiclass,
        gpt_files=gpt_hatecheck,
        diff_files=diffs,
        model_pages=model_pages,
        ethos_sets_file=ethos_sets,
        max_ci_width=max_ci_width,
        failure_files=failures,
        ci_level=ci_level,
    )
    return f"wrote {written}"
