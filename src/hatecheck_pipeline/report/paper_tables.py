"""Report parts for the papers' remaining tables: MHC Table 5 (annotator
disagreement), HateCheck appendix F (multiclass B-D / B-F on their held-out
sets), CrowS-Pairs Table 2 per bias type, and the labels that say what each
held-out figure is. Every cell of ours carries its provenance (metrics file
and stage, ``data-cell-id``); every paper cell is marked published."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import ci_name, html_table, json_td, page_ci, too_wide


def cases_by_template(items: list[Mapping[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """HateCheck cases (``templ_id``, ``functionality``, ``case_id``) grouped
    by template, in order of first appearance: (template, functionality,
    case ids).

    >>> cases_by_template([{"templ_id": 7, "functionality": "f", "case_id": 1}, {"templ_id": 7, "functionality": "f", "case_id": 2}])
    [('7', 'f', ['1', '2'])]
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for c in items:
        groups.setdefault((str(c["templ_id"]), str(c["functionality"])), []).append(str(c["case_id"]))
    return [(t, f, ids) for (t, f), ids in groups.items()]


# What the binary held-out macro F1 of each training dataset scores: the
# dataset's own labels collapsed to hateful vs non-hateful (data/corpora.py).
HELDOUT_BINARY = {
    "davidson2017": "hate vs offensive + neither (as the HateCheck paper)",
    "founta2018": "hateful vs the rest (the fou18 subsample's binary label: abusive, spam, normal = 0)",
    "hateval2019_es": "HS = 1 vs 0",
    "haspeede2020": "hs = 1 vs 0",
    "fortuna2019": "hatespeech_comb = 1 vs 0",
    "hatexplain": "hate speech vs offensive + normal: p(hatespeech) of the 3-class model at the prediction threshold; "
    "NOT the paper's 3-class figures (those are in Table 6, Bias and explainability)",
}


def heldout_label(row: str) -> str:
    """A held-out row (a dataset, or a suite ``heldout_<dataset>``) with what
    its figure is.

    >>> heldout_label("davidson2017")
    'davidson2017 — binary macro F1: hate vs offensive + neither (as the HateCheck paper)'
    >>> heldout_label("heldout_hatexplain").startswith("heldout_hatexplain — binary macro F1: hate speech vs offensive + normal")
    True
    >>> heldout_label("mhc_german")
    'mhc_german — macro F1 (hateful vs non-hateful)'
    """
    dataset = row[len("heldout_") :] if row.startswith("heldout_") else row
    what = HELDOUT_BINARY.get(dataset)
    return f"{row} — binary macro F1: {what}" if what else f"{row} — macro F1 (hateful vs non-hateful)"


def label_heldout(cells: pl.DataFrame, published: Mapping[tuple[str, str], Any] | None = None) -> tuple[pl.DataFrame, dict | None]:
    """Held-out cells (and the paper's cells keyed by (row, column)) with
    their rows relabelled by :func:`heldout_label` (cell ids unchanged)."""
    if cells.is_empty():
        return cells, published
    out = cells.with_columns(pl.col("row").map_elements(heldout_label, return_dtype=pl.String))
    pub = None if published is None else {(heldout_label(r), c): v for (r, c), v in published.items()}
    return out, pub


def published_cell(table: str, model: str, row: str, column: str, value: float | int | None, source: str, digits: int = 1) -> str:
    if value is None:
        return '<td class="missing">–</td>'
    text = f"{value:.{digits}f}" if isinstance(value, float) else f"{value:,}"
    cid = cell_id("published", table, model, row, column)
    return (
        f'<td class="published" data-cell-id="{escape(cid)}" data-metrics="published" data-stage="{escape(source)}" '
        f'title="{escape("Published: " + source)}">{escape(text)}</td>'
    )


# ------------------------------------------------------------ MHC Table 5


def mhc_t5_section(doc: Mapping[str, Any] | None, file: str, published: Mapping[str, Any], stage: str = "mhc_disagreement") -> str:
    """MHC Table 5: % and number of cases per language where at least 2 of
    3 annotators disagree with the gold label, next to the paper's."""
    out = "<h3>Table 5: annotator disagreement per language</h3>"
    if doc is None:
        return out + f"<p class='fail'>{escape(file)} not found: the mhc_disagreement stage has not run.</p>"
    t5 = published.get("mhc_t5") or {}
    pub = (t5.get("values") or {}).get("annotators") or {}
    source = t5.get("source", "")
    out += (
        "<p class='note'>Cases where at least 2 of their 3 annotators' labels (<code>label_annotated</code>) differ from the "
        "expert gold label, computed from the labels and checked case by case against the authors' "
        "<code>disagreement_in_case</code> flag (they agree on every case). The last column is the share of cases whose "
        "template holds such a case (<code>disagreement_in_template</code>; not in the paper). A property of the suite, not of a model. "
        "Where our count differs from the paper's, the released files differ from the ones the paper counted.</p>"
    )
    rows = []
    entries = [*doc.get("per_language", {}).items(), ("all languages", doc.get("overall", {}))]
    for lang, e in entries:
        p = pub.get(lang) or {}
        tds = [
            json_td(e.get("n_cases"), cell_id("mhc_t5", lang, "n_cases"), file, stage),
            json_td(e.get("pct_disagreement"), cell_id("mhc_t5", lang, "pct_disagreement"), file, stage, 2),
            published_cell("mhc_t5", "annotators", lang, "pct_disagreement", p.get("pct_disagreement"), source, 2),
            json_td(e.get("n_disagreement"), cell_id("mhc_t5", lang, "n_disagreement"), file, stage),
            published_cell("mhc_t5", "annotators", lang, "n_disagreement", p.get("n_disagreement"), source),
            json_td(e.get("pct_in_disagreement_template"), cell_id("mhc_t5", lang, "pct_in_disagreement_template"), file, stage, 2),
        ]
        rows.append(f'<tr><td class="rowhead">{escape(lang)}</td>{"".join(tds)}</tr>')
    return out + html_table(
        "mhc-t5",
        [
            "language",
            "cases",
            "% disagreement",
            "% disagreement (paper)",
            "n disagreement",
            "n disagreement (paper)",
            "% in a template with disagreement",
        ],
        rows,
    )


# ------------------------------------------------- CrowS-Pairs Table 2 rows

CROWS_ROWS = [  # (the paper's row, our key): our keys are bias_types / the overall scores of a crows_pairs_<scorer> metrics file
    ("all", "CrowS-Pairs (all pairs)"),
    ("stereo", "CrowS-Pairs-stereo"),
    ("antistereo", "CrowS-Pairs-antistereo"),
    ("race-color", "Race / Color"),
    ("gender", "Gender / Gender identity"),
    ("socioeconomic", "Socioeconomic status / Occupation"),
    ("nationality", "Nationality"),
    ("religion", "Religion"),
    ("age", "Age"),
    ("sexual-orientation", "Sexual orientation"),
    ("physical-appearance", "Physical appearance"),
    ("disability", "Disability"),
]
OVERALL_KEYS = {
    "all": ("metric_score", "n_pairs"),
    "stereo": ("stereo_score", "n_stereo"),
    "antistereo": ("antistereo_score", "n_antistereo"),
}


WINOBIAS_ROWS = [(1, "winobias-type1", "WinoBias-knowledge (type 1)"), (2, "winobias-type2", "WinoBias-syntax (type 2)")]
STEREOSET_NOT_RUN = "not run here (data not in the mirror)"


def baseline_rows(
    crows: Mapping[str, Mapping[str, Any]], winobias: Mapping[str, Mapping[str, Any]], summary_file: str, t2: Mapping[str, Any]
) -> list[str]:
    """Table 2's rows above CrowS-Pairs: WinoBias-knowledge and -syntax
    (our scorers' WinoBias stages, the same metric), StereoSet (published
    only: its data is not in the mirror), each with the paper's n and
    masked LMs."""
    source, pub, pub_n, labels = t2.get("source", ""), t2.get("values") or {}, t2.get("n") or {}, t2.get("rows") or {}
    rows = []
    for wino_type, key, label in WINOBIAS_ROWS:
        tds = []
        for name in crows:
            e = (winobias.get(name) or {}).get(f"type{wino_type}") or {}
            if not e or e.get("ran") is False:
                tds.append('<td class="missing" title="no WinoBias stage of this scorer ran">–</td>')
                continue
            n, ci, incomplete = e.get("n_pairs"), e.get("metric_ci"), not e.get("complete")
            note = (
                f", n={n} pairs of WinoBias {e.get('split')}"
                + (f", {ci_text(ci, e)}" if ci else "")
                + (f" (INCOMPLETE run: a seeded sample of {n} pairs)" if incomplete else "")
            )
            td = json_td(
                e.get("metric_score"),
                cell_id("bias", "winobias", name, f"type{wino_type}", "metric_score"),
                e.get("source") or summary_file,
                f"winobias_{name}_type{wino_type}",
                1,
                note,
                "incomplete" if incomplete else "",
            )
            tds.append(with_ci(td, ci))
        rows.append(baseline_tr(f"{label} [paper: {labels.get(key, key)}]", tds, key, pub, pub_n, source))
    not_run = [f'<td class="missing">{escape(STEREOSET_NOT_RUN)}</td>' for _ in crows]
    rows.append(baseline_tr(f"{labels.get('stereoset', 'StereoSet')}: {STEREOSET_NOT_RUN}", not_run, "stereoset", pub, pub_n, source))
    return rows


def baseline_tr(label: str, tds: list[str], key: str, pub: Mapping[str, Any], pub_n: Mapping[str, Any], source: str) -> str:
    cells = [*tds, published_cell("crows_pairs_t2", "paper", key, "n", pub_n.get(key), source)]
    cells += [
        published_cell("crows_pairs_t2", model, key, "metric_score", (vals.get(key) or {}).get("metric_score"), source)
        for model, vals in pub.items()
    ]
    return f'<tr><td class="rowhead">{escape(label)}</td>{"".join(cells)}</tr>'


def crows_table2(
    crows: Mapping[str, Mapping[str, Any]],
    summary_file: str,
    published: Mapping[str, Any],
    total: int = 1508,
    winobias: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The paper's Table 2: its baseline rows (:func:`baseline_rows`:
    WinoBias from ``winobias``, ``<scorer> -> type<t> -> metrics``, and
    StereoSet as published), then the CrowS-Pairs rows (all pairs, the
    stereo and anti-stereo subsets, the nine bias types): one column per
    scorer of ours (metric score, n pairs in the tooltip), then the paper's
    n and its three masked LMs."""
    t2 = published.get("crows_pairs_t2") or {}
    source, pub, pub_n = t2.get("source", ""), t2.get("values") or {}, t2.get("n") or {}
    rows = baseline_rows(crows, winobias or {}, summary_file, t2)
    for key, label in CROWS_ROWS:
        tds = []
        for name, e in crows.items():
            stage, src = f"crows_pairs_{name}", e.get("source") or summary_file
            if key in OVERALL_KEYS:
                score_key, n_key = OVERALL_KEYS[key]
                value, n = e.get(score_key), e.get(n_key, e.get("n_pairs") if key == "all" else None)
                ci = e.get("metric_ci") if key == "all" else None
                cid = cell_id("bias", "crows", name, "table2", key)  # the first CrowS table shows the same figure under its own id
            else:
                bt = (e.get("bias_types") or {}).get(key) or {}
                value, n, ci = bt.get("score"), bt.get("n"), bt.get("ci")
                cid = cell_id("bias", "crows", name, "bias_type", key)
            incomplete = not e.get("complete")
            note = (
                f", n={n} pairs"
                + (f", {ci_text(ci, e)}" if ci else "")
                + (f" (INCOMPLETE run: a seeded sample of {e.get('n_pairs')} of {total:,} pairs)" if incomplete else "")
            )
            tds.append(with_ci(json_td(value, cid, src, stage, 1, note, "incomplete" if incomplete else ""), ci))
        tds.append(published_cell("crows_pairs_t2", "paper", key, "n", pub_n.get(key), source))
        for model, vals in pub.items():
            tds.append(published_cell("crows_pairs_t2", model, key, "metric_score", (vals.get(key) or {}).get("metric_score"), source))
        rows.append(f'<tr><td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
    head = ["Table 2 row", *(f"{n} ({e.get('variant')})" for n, e in crows.items()), "n (paper)", *(f"{m} (paper, masked)" for m in pub)]
    return (
        "<h3>CrowS-Pairs Table 2: metric score on WinoBias, StereoSet and CrowS-Pairs per subset and bias type (%)</h3>"
        "<p class='note'>Our scorers' figures (hover for n pairs; an incomplete run is a seeded sample; under each figure "
        "its percentile bootstrap interval over the pairs of that row) next to the paper's "
        "masked LMs. A <b>causal</b> scorer's whole-sentence log-likelihood is not the paper's masked-LM metric: its "
        "column is not comparable with the paper's. WinoBias rows: each line of a pro-stereotyped file as the more "
        'stereotyping sentence against the same line of its anti-stereotyped file (the paper\'s "test sets": '
        "<code>bias.winobias.split</code>), the same metric and scorer as CrowS-Pairs; the paper's table labels its "
        'WinoBias rows "ground" and "knowledge", its caption type 1 "knowledge" and type 2 "syntax" (in '
        "brackets: the paper's row each is set against). StereoSet's intrasentence validation set is not in the "
        "mirror: its row shows the paper's figures only.</p>" + html_table("crows-pairs-bias-types", head, rows)
    )


def ci_text(ci: list[float] | None, entry: Mapping[str, Any]) -> str:
    """A CrowS-Pairs interval as words, with its bootstrap settings.

    >>> ci_text([55.0, 61.25], {"bootstrap": {"samples": 1000, "level": 0.95, "seed": 0}})
    '95% CI 55.0-61.2 (1000 resamples of the pairs, seed 0)'
    >>> ci_text([55.0, 61.25], {"bootstrap": {"samples": 1000, "level": 0.975, "seed": 0}})
    '97.5% CI 55.0-61.2 (1000 resamples of the pairs, seed 0)'
    """
    if not ci:
        return ""
    b = entry.get("bootstrap") or {}
    return f"{ci_name(b.get('level'))} {ci[0]:.1f}-{ci[1]:.1f} ({b.get('samples')} resamples of the pairs, seed {b.get('seed')})"


def with_ci(td_html: str, ci: list[float] | None) -> str:
    """``td_html`` with the interval shown under its figure."""
    if not ci or not td_html.endswith("</td>"):
        return td_html
    return td_html[:-5] + f'<span class="ci">[{ci[0]:.1f}, {ci[1]:.1f}]</span></td>'


CROWS_CAUSAL_NOTE = (
    "How the stand-in differs from the paper: the offline profiles score CrowS-Pairs with a causal LM "
    "(the <b>causal</b> variant), where score(S) is the whole sentence's log-likelihood given only the model's "
    "prefix token, every token included (the modified ones too, each conditioned on the tokens before it). The "
    "paper's score(S) (equation 1) is a masked LM's pseudo-log-likelihood of the unmodified tokens only, each "
    "masked in turn and predicted from both sides. Equation 2's ratio is therefore taken over different quantities: "
    "a causal score also grows with the modified words' own rarity and length, so its confidence distributions "
    "are not comparable with Figure 2's."
)


def crows_confidence(crows: Mapping[str, Mapping[str, Any]], summary_file: str, published: Mapping[str, Any]) -> str:
    """The CrowS-Pairs paper's model-confidence analysis (equation 2,
    Figure 2) for our scorers that ran: the mirrored distributions as a
    figure, a table of the medians per side and their difference next to
    the paper's differences, the paper's description and how a causal
    stand-in differs."""
    from hatecheck_pipeline.report.figures import confidence_distributions, figure

    ran = [(n, e) for n, e in crows.items() if (e.get("confidence") or {}).get("bin_edges")]
    if not ran:
        return ""
    fig2 = published.get("crows_pairs_fig2") or {}
    source, pub = fig2.get("source", ""), fig2.get("values") or {}
    rows = []
    for name, e in ran:
        conf, stage, src = e["confidence"], f"crows_pairs_{name}", e.get("source") or summary_file
        tds = []
        for side in ("more_preferred", "less_preferred"):
            part = conf[side]
            tds.append(json_td(part["n"], cell_id("bias", "crows", name, "confidence", side, "n"), src, stage, 0))
            tds.append(
                json_td(
                    part["median"],
                    cell_id("bias", "crows", name, "confidence", side, "median"),
                    src,
                    stage,
                    2,
                    f" (quartiles {part['q1']}-{part['q3']})" if part["median"] is not None else "",
                )
            )
        tds.append(json_td(conf["median_difference"], cell_id("bias", "crows", name, "confidence", "median_difference"), src, stage, 2))
        label = f"{name} ({e.get('variant')})"
        rows.append(f'<tr><td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
    for model, vals in pub.items():
        diff = (vals.get("all") or {}).get("median_difference")
        rows.append(
            f'<tr><td class="rowhead">{escape(model)} (paper, masked)</td>'
            + '<td class="missing">–</td>' * 4
            + published_cell("crows_pairs_fig2", model, "all", "median_difference", diff, source)
            + "</tr>"
        )
    head = ["scorer", "n (S1 higher)", "median (S1 higher)", "n (S2 higher)", "median (S2 higher)", "difference in medians"]
    img = figure(
        confidence_distributions(
            [(f"{n} ({e.get('variant')})", e["confidence"]) for n, e in ran], "CrowS-Pairs model confidence (equation 2), per scorer"
        ),
        "CrowS-Pairs model confidence: confidence x 100 = 100 (1 - score(S)/score(S')), S the sentence scored "
        "higher; above 0 the pairs where S1 (the more stereotyping sentence) is scored higher, below 0 those "
        "where S2 is; black lines: the medians.",
        "crows-confidence",
    )
    desc = fig2.get("description", "")
    return (
        "<h3>CrowS-Pairs model confidence (the paper's equation 2 and Figure 2)</h3>"
        + img
        + html_table("crows-pairs-confidence", head, rows)
        + f"<p class='note'><b>The paper ({escape(source)}):</b> “{escape(desc)}” Figure 2 prints no values; its text "
        "gives the difference in medians without a unit, read here as confidence x 100. Neutral pairs (equal "
        "scores) are in neither distribution.</p>" + f"<p class='note'>{CROWS_CAUSAL_NOTE}</p>"
    )


# ----------------------------------------- HateCheck appendix F (multiclass)

APPF_COLUMNS = [("micro_f1", "micro F1"), ("weighted_f1", "weighted-avg. F1"), ("macro_f1", "macro F1")]
NO_MULTICLASS_BF = (
    "B-F on Founta et al.'s four classes (hateful / abusive / spam / normal) is not trained: the Founta files with "
    "text in the mirror (fou18_en_train/dev/test) carry only the binarised label (1 = hateful, 0 = the rest), and "
    "the file with the original classes (hatespeech_labels.csv) holds tweet ids without text (the text is "
    "distributed by its authors on request)."
)


def paper_multiclass(model: str, dataset: str, published: Mapping[str, Any]) -> tuple[dict[str, float], str]:
    """The paper's all-class held-out figures (percent) for one of our
    multiclass models: HateCheck appendix F for the Davidson / Founta
    models (our ``<B-D|B-F>-multiclass`` is the paper's multiclass B-D /
    B-F), HateXplain Table 6's BERT row (accuracy = micro F1, macro F1)
    for a model on HateXplain.

    >>> paper_multiclass("B-D-multiclass", "davidson2017", {"hatecheck_appf": {"source": "S", "values": {"B-D": {"davidson2017": {"micro_f1": 91.1}}}}})
    ({'micro_f1': 91.1}, 'S')
    >>> paper_multiclass("hatexplain", "hatexplain", {"hatexplain_t6": {"source": "T", "values": {"BERT": {"Attn": {"accuracy": 0.69, "macro_f1": 0.674}}}}})
    ({'micro_f1': 69.0, 'macro_f1': 67.4}, 'T')
    """
    if dataset == "hatexplain":
        t6 = published.get("hatexplain_t6") or {}
        bert = ((t6.get("values") or {}).get("BERT") or {}).get("Attn") or {}
        vals = {
            k: round(100 * bert[src], 1) for k, src in (("micro_f1", "accuracy"), ("macro_f1", "macro_f1")) if bert.get(src) is not None
        }
        return vals, t6.get("source", "")
    appf = published.get("hatecheck_appf") or {}
    paper_model = model.split("-multiclass")[0]
    return dict(((appf.get("values") or {}).get(paper_model) or {}).get(dataset) or {}), appf.get("source", "")


def doc_bootstrap(doc: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A metrics document's bootstrap settings ({} when it has none)."""
    return (doc or {}).get("bootstrap") or {}


def appf_section(entries: Mapping[str, Mapping[str, Any]], published: Mapping[str, Any], max_ci_width: float | None = None) -> str:
    """Multiclass models on their held-out test sets, all classes (argmax),
    next to the papers' figures. ``entries``: "<model>/<dataset>" ->
    {model, dataset, doc, file, stage}; a figure whose interval is wider
    than ``max_ci_width`` points is marked too few cases to compare. Each
    interval is at its document's ``bootstrap.level``."""
    found = {level for e in entries.values() if (level := doc_bootstrap(e.get("doc")).get("level")) is not None}
    out = (
        "<h3>Appendix F: multiclass models on their held-out test sets (all classes)</h3>"
        "<p class='note'>Models trained on a dataset's original classes (HateCheck appendix F: B-D on Davidson et al.'s "
        "hateful / offensive / neither, unweighted, appendix E's other parameters; the HateXplain model's 3 classes), "
        "scored on every class: the predicted class is the argmax; micro F1 (= accuracy) and weighted-average F1 as "
        "appendix F reports them, macro F1 as HateXplain's Table 6. "
        f"Hover for the case-level {page_ci(found)}. The last "
        "column collapses the same argmax to hateful vs the rest. The held-out tables above score these models as binary "
        "classifiers (p(hateful class) at the threshold).</p>"
    )
    cols = ["model", "held-out set", "classes", "cases"]
    for _, h in APPF_COLUMNS:
        cols += [h, f"{h} (paper)"]
    cols.append("binary macro F1 (argmax: hateful vs rest)")
    rows = []
    for key, e in entries.items():
        doc, file, stage = e.get("doc"), e.get("file", ""), e.get("stage", "")
        model, dataset = e.get("model", key), e.get("dataset", "")
        head = f'<td class="rowhead">{escape(model)}</td><td class="rowhead">{escape(dataset)}</td>'
        if doc is None:
            rows.append(
                f'<tr>{head}<td class="missing" colspan="{len(cols) - 2}">{escape(file)} not found: {escape(stage)} has not run</td></tr>'
            )
            continue
        pub, source = paper_multiclass(model, dataset, published)
        n = doc.get("n")
        note = f", n={n} cases" + ("" if doc.get("complete") else f" (a seeded sample of {doc.get('cases_available')})")
        tds = [
            f'<td class="rowhead">{escape(" / ".join(doc.get("classes") or []))}</td>',
            json_td(n, cell_id("appf", model, dataset, "n"), file, stage, cls="" if doc.get("complete") else "incomplete"),
        ]
        for k, _ in APPF_COLUMNS:
            fig = doc.get(k) or {}
            unit = doc.get("resampling_unit") or doc_bootstrap(doc).get("resampling_unit")
            level = doc_bootstrap(doc).get("level")
            ci = (
                f" [{ci_name(level)} {fig.get('ci_low')}–{fig.get('ci_high')}{f', {unit}-level bootstrap' if unit else ''}]"
                if fig.get("ci_low") is not None
                else ""
            )
            wide = too_wide(fig.get("ci_low"), fig.get("ci_high"), max_ci_width, level)
            tds.append(
                json_td(
                    fig.get("value"),
                    cell_id("appf", model, dataset, k),
                    file,
                    stage,
                    1,
                    ci + note + (f". {wide.strip()}" if wide else ""),
                    cls="too-few" if wide else "",
                )
            )
            tds.append(
                published_cell("hatecheck_appf" if dataset != "hatexplain" else "hatexplain_t6", model, dataset, k, pub.get(k), source)
            )
        tds.append(
            json_td(
                doc.get("binary_macro_f1_from_argmax"), cell_id("appf", model, dataset, "binary_macro_f1_from_argmax"), file, stage, 1, note
            )
        )
        rows.append(f"<tr>{head}{''.join(tds)}</tr>")
    rows.append(
        f'<tr><td class="rowhead">B-F (multiclass)</td><td class="rowhead">founta2018</td>'
        f'<td class="missing" colspan="{len(cols) - 2}">{escape(NO_MULTICLASS_BF)}</td></tr>'
    )
    return out + html_table("hatecheck-appf", cols, rows)


# ------------------------------------- HateCheck section 2.5 (gold labels)


def exclusion_verdict(doc: Mapping[str, Any]) -> str:
    """Whether the paper's exclusion rule gives the released suite, in one
    plain sentence (the report and the docs page both say it)."""
    if (doc.get("exclusion") or {}).get("matches_release"):
        return "The paper's exclusion rule leaves exactly the released cases."
    return "The paper's exclusion rule, as the paper states it, does not give the released suite."


def exclusion_details(doc: Mapping[str, Any]) -> str:
    """Where the exclusion rule and the release differ, case by case, in
    plain text (empty where they agree).

    >>> doc = {"n_cases": 5, "exclusion": {"n_excluded": 2, "n_released": 2, "kept_not_released": [
    ...     {"case_id": "7", "templ_id": "1", "functionality": "f"}]}}
    >>> print(exclusion_details(doc))
    It keeps 1 case(s) the release lacks, none of them below 4 of 5 and none in a template with such a case: template 1 (f): case 7. Cases generated but not released: 3 (the rule's 2, 1 more, 0 fewer).
    """
    e = doc.get("exclusion") or {}
    if e.get("matches_release"):
        return ""
    extra, missing = e.get("kept_not_released") or [], e.get("released_not_kept") or []

    def listed(items: list[Mapping[str, Any]]) -> str:
        return "; ".join(
            f"template {t} ({f}): case{'s' if len(ids) > 1 else ''} {', '.join(ids)}" for t, f, ids in cases_by_template(items)
        )

    return (
        (
            f"It keeps {len(extra)} case(s) the release lacks, none of them below 4 of 5 and none in a template "
            f"with such a case: {listed(extra)}. "
            if extra
            else ""
        )
        + (f"The release holds {len(missing)} case(s) the rule excludes: {listed(missing)}. " if missing else "")
        + f"Cases generated but not released: {doc.get('n_cases', 0) - (e.get('n_released') or 0):,} "
        f"(the rule's {e.get('n_excluded')}, {len(extra)} more, {len(missing)} fewer)."
    )


def hatecheck_agreement_section(
    doc: Mapping[str, Any] | None, file: str, published: Mapping[str, Any], stage: str = "hatecheck_agreement"
) -> str:
    """HateCheck section 2.5: agreement of the five annotators of each
    generated case with its gold label, the exclusion rule against the
    released suite and agreement per functional test, next to the paper's
    figures (``hatecheck_s25`` of published.yaml)."""
    from hatecheck_pipeline.evaluation.published import functionality_label, functionality_order

    out = "<h3>Validation of the gold labels (section 2.5): annotator agreement</h3>"
    if doc is None:
        return out + f"<p class='fail'>{escape(file)} not found: the hatecheck_agreement stage has not run.</p>"
    s25 = published.get("hatecheck_s25") or {}
    pub = ((s25.get("values") or {}).get("annotators") or {}).get("all") or {}
    source = s25.get("source", "")
    e = doc.get("exclusion") or {}
    figures = [
        ("n_cases", "generated cases", 0),
        ("annotators", "annotators", 0),
        ("annotators_per_case", "annotators per case", 0),
        ("fleiss_kappa", "Fleiss' kappa", 2),
        ("n_agree_4of5", "cases with at least 4 of 5 agreeing with gold", 0),
        ("pct_agree_4of5", "% cases with at least 4 of 5 agreeing", 1),
        ("n_below_4of5", "cases below 4 of 5", 0),
    ]
    rows = []
    for key, name, digits in figures:
        rows.append(
            f'<tr><td class="rowhead">{escape(name)}</td>'
            f"{json_td(doc.get(key), cell_id('hatecheck_s25', 'all', key), file, stage, digits)}"
            f"{published_cell('hatecheck_s25', 'annotators', 'all', key, pub.get(key), source, digits)}</tr>"
        )
    for key, name in (
        ("n_excluded", "cases excluded (every case of a template holding a case below 4 of 5)"),
        ("n_kept", "cases kept by that rule (paper: released)"),
    ):
        pkey = "n_released" if key == "n_kept" else key
        rows.append(
            f'<tr><td class="rowhead">{escape(name)}</td>'
            f"{json_td(e.get(key), cell_id('hatecheck_s25', 'exclusion', key), file, stage, 0)}"
            f"{published_cell('hatecheck_s25', 'annotators', 'all', pkey, pub.get(pkey), source, 0)}</tr>"
        )
    rows.append(
        f'<tr><td class="rowhead">cases in the released suite (test_suite_cases.csv)</td>'
        f"{json_td(e.get('n_released'), cell_id('hatecheck_s25', 'exclusion', 'n_released'), file, stage, 0)}"
        f"{published_cell('hatecheck_s25', 'annotators', 'all', 'n_released', pub.get('n_released'), source, 0)}</tr>"
    )
    out += (
        "<p class='note'>Each of the generated cases was labelled by five of ten trained annotators "
        "(<code>all_annotations.csv</code>). Fleiss' kappa over the two labels; a case agrees when at least 4 of its 5 "
        "annotators give the gold label. A property of the suite, not of a model.</p>"
    )
    out += html_table("hatecheck-s25", ["figure", "ours", "paper"], rows)
    if e.get("matches_release"):
        out += f"<p class='note'>{escape(exclusion_verdict(doc))}</p>"
    elif e:
        out += f"<p class='note'><b>{escape(exclusion_verdict(doc))}</b> {escape(exclusion_details(doc))}</p>"
    below = doc.get("below_4of5") or []
    if below:
        out += (
            "<details><summary>The cases below 4 of 5 (the rule's starting point)</summary><p>"
            + escape(", ".join(f"{c['case_id']} ({c['functionality']}, template {c['templ_id']}: {c['agreeing']} of 5)" for c in below))
            + "</p></details>"
        )
    per = doc.get("per_functionality") or {}
    frows = []
    for code in sorted(per, key=lambda c: functionality_order(c, "hatecheck")):
        f = per[code]
        cid = lambda k: cell_id("hatecheck_s25", code, k)  # noqa: E731
        frows.append(
            f'<tr><td class="rowhead">{escape(functionality_label(code, "hatecheck"))}</td>'
            + json_td(f.get("n_cases"), cid("n_cases"), file, stage, 0)
            + json_td(f.get("n_agree_4of5"), cid("n_agree_4of5"), file, stage, 0)
            + json_td(f.get("pct_agree_4of5"), cid("pct_agree_4of5"), file, stage, 1)
            + json_td(f.get("pct_labels_agreeing"), cid("pct_labels_agreeing"), file, stage, 1)
            + json_td(f.get("n_released"), cid("n_released"), file, stage, 0)
            + "</tr>"
        )
    if frows:
        out += "<h4>Agreement per functional test (not in the paper)</h4>" + html_table(
            "hatecheck-s25-functionality",
            [
                "functional test",
                "generated cases",
                "cases with ≥ 4 of 5",
                "% cases with ≥ 4 of 5",
                "% annotator labels = gold",
                "released cases",
            ],
            frows,
        )
    return out
