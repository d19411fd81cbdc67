"""Sections of the report: models, data validation, expanded suites, bias
and explainability audits."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import html_table, json_td, page_ci, published_td, slug, td
from hatecheck_pipeline.report.figures import auc_heatmaps, expanded_bars, figure
from hatecheck_pipeline.report.paper_tables import ci_text, doc_bootstrap

CROWS_TOTAL = 1508


def models_section(
    models: Mapping[str, Mapping[str, Any]],
    cards: Mapping[str, Mapping[str, Any] | None],
    profile: str,
    training_languages: Mapping[str, list[str]],
) -> str:
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
        if card.get("classifier"):
            kind = f"classifier trained elsewhere ({card.get('kind')}), tested as it is"
        elif not card:
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
            f"<td class='rowhead'>{escape(str(card.get('profile', profile)))}</td><td class='rowhead'>{escape(training_data(spec))}</td>"
            f"<td class='rowhead'>{escape(langs)}</td><td class='rowhead'>{escape(', '.join(spec.get('suites', [])))}</td>"
            f"<td class='rowhead'>{escape(str(card.get('budget_note', '–')))}</td>"
            f"<td>{escape(training_time(card))}</td></tr>"
        )
    return (
        '<table id="models"><thead><tr><th class="rowhead">model</th><th class="rowhead">base model</th><th class="rowhead">paper model or stand-in</th>'
        '<th class="rowhead">profile</th><th class="rowhead">training data</th><th class="rowhead">training languages</th><th class="rowhead">suites</th><th class="rowhead">training budget</th><th>training time</th></tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )


def training_data(spec: Mapping[str, Any]) -> str:
    """The training data column: what the pipeline trained the model on, or
    what a classifier trained elsewhere was trained on.

    >>> training_data({"train": ["davidson2017"]}), training_data({"kind": "onnx", "trained_on": ["davidson2017"]})
    ('davidson2017', 'davidson2017 (trained elsewhere)')
    """
    if spec.get("train"):
        return ", ".join(spec["train"])
    seen = spec.get("trained_on") or []
    return f"{', '.join(seen)} (trained elsewhere)" if seen else ""


def training_time(card: Mapping[str, Any]) -> str:
    """How long the model's training stage took, from its card.

    >>> training_time({"train_seconds": 612.4, "device": "cpu"})
    '10.2 min (cpu)'
    >>> training_time({})
    '–'
    """
    seconds = card.get("train_seconds")
    if seconds is None:
        return "–"
    return f"{seconds / 60:.1f} min ({card.get('device', '?')})"


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
        + "".join(rows)
        + "</tbody></table>"
    )


def expanded_section(
    cells: pl.DataFrame,
    below_mark: float | None,
    coverage: Mapping[str, Any] | None,
    coverage_file: str,
    reproduction: Mapping[str, Any] | None,
    reproduction_file: str,
    suites: Mapping[str, tuple[str, int | None]] | None = None,
    max_ci_width: float | None = None,
    invariance: pl.DataFrame | None = None,
) -> str:
    """Original vs expanded per functionality, flip rates of the perturbed
    suites (``invariance``: the cells of table ``expanded_invariance``),
    perturbation coverage, template reproduction, and the expanded suite
    files ("<suite>/<scheme>" -> (file, rows)); ``max_ci_width``: cells with
    a wider interval are marked too few cases to compare."""
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
        out += figure(
            expanded_bars(mc, f"{model}: original vs expanded suites"),
            f"{model}: accuracy per functionality, original vs expanded suite",
            f"fig-expanded-{slug(model)}",
        )
        for suite in dict.fromkeys(mc["suite"].to_list()):
            sc = mc.filter(pl.col("suite") == suite)
            lookup = {(r["row"], r["column"]): r for r in sc.iter_rows(named=True)}
            rows = []
            for func in dict.fromkeys(sc["row"].to_list()):
                tds = "".join(
                    td(lookup.get((func, c)), below_mark if c != "change" else None, max_ci_width)
                    for c in ("original", "expanded", "change")
                )
                rows.append(f'<tr><td class="rowhead">{escape(func)}</td>{tds}</tr>')
            orig = sc["setting"][0]
            out += html_table(
                f"expanded-{slug(model, suite)}",
                ["functionality", f"original ({orig})", f"expanded ({suite})", "change (pp)"],
                rows,
                caption=f"{model}: {suite} vs {orig}, accuracy (%)",
            )
    if invariance is not None:
        out += invariance_block(invariance, max_ci_width)
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
                tds.append(
                    json_td(
                        share,
                        cell_id("expansion", "coverage", lang, g),
                        coverage_file,
                        "expand_coverage_report",
                        note=f"% of {r.get('source_cases')} hateful cases changed ({r.get('changed')}; {r.get('unchanged')} unchanged, not counted as tests)",
                        cls="below" if not r.get("changed") else "",
                    )
                )
            rows.append(f'<tr><td class="rowhead">{escape(lang)}</td>{"".join(tds)}</tr>')
        out += "<p class='note'>Share (%) of each language's hateful cases a spelling generator actually changed; unchanged cases are dropped, never counted as tests.</p>"
        out += html_table("perturbation-coverage", ["language", *gens], rows, caption="perturbation coverage (% of source cases changed)")
        without = coverage.get("generators_without_effect") or []
        out += f"<p>Generators without effect: <b>{escape(', '.join(without)) if without else 'none'}</b>.</p>"
    out += "<h3>Template regeneration: share of published cases reproduced</h3>"
    if reproduction is None:
        out += f"<p class='fail'>{escape(reproduction_file)} not found.</p>"
    else:
        cols = [
            ("published_template_cases", "published template cases", 0),
            ("generated", "generated", 0),
            ("reproduced", "reproduced", 0),
            ("generated_not_published", "generated, not published", 0),
            ("share_reproduced", "share reproduced (%)", 1),
        ]
        entries = [*reproduction.get("per_language", {}).items(), ("overall", reproduction.get("overall", {}))]
        rows = []
        for lang, e in entries:
            tds = []
            for key, _, digits in cols:
                v = e.get(key)
                v = 100.0 * v if key == "share_reproduced" and v is not None else v
                tds.append(json_td(v, cell_id("expansion", "reproduction", lang, key), reproduction_file, "expand_templates", digits))
            rows.append(f'<tr><td class="rowhead">{escape(lang)}</td>{"".join(tds)}</tr>')
        out += html_table("template-reproduction", ["language", *(h for _, h, _ in cols)], rows)
    if suites:
        out += "<h3>Expanded suite files</h3><p class='note'>Every expanded suite in every preprocessing scheme, for scoring any model on it.</p>"
        rows = [
            f'<tr><td class="rowhead">{escape(name)}</td><td><code>{escape(file)}</code></td><td>{"—" if n is None else f"{n:,}"}</td></tr>'
            for name, (file, n) in suites.items()
        ]
        out += html_table("expanded-suite-files", ["suite / scheme", "file", "rows"], rows)
    return out


INVARIANCE_HEADINGS = {
    "flip_rate": "flip rate (%)",
    "accuracy_source": "accuracy, source cases (%)",
    "accuracy_perturbed": "accuracy, perturbed cases (%)",
    "directional": "directional (%)",
}


def invariance_block(cells: pl.DataFrame, max_ci_width: float | None = None) -> str:
    """Flip rates per model, perturbed suite and perturbation type (CheckList
    INV; DIR where a perturbation changes the label), each beside the
    accuracy of the same pairs, with its interval and n shown."""
    out = (
        "<h3>Invariance under perturbation (flip rates)</h3><p class='note'>Beyond the papers: CheckList's invariance "
        "test (INV; Ribeiro et al. 2020). Each perturbed case is paired with the case it was perturbed from and the "
        "model's two predictions compared. <i>Flip rate</i>: share of source cases whose prediction changes under a "
        "label-preserving perturbation (lower is better); <i>any perturbation</i>: share of source cases flipped by at "
        "least one generator. Accuracy of the same pairs on the source and on the perturbed cases beside it. "
        "Intervals resample the source cases' templates."
    )
    directional = not cells.filter(pl.col("column") == "directional").is_empty()
    out += (
        " Directional (DIR): share of a label-changing perturbation's pairs whose prediction moves to the new label.</p>"
        if directional
        else " Every perturbation type keeps the gold label (a misspelt hateful case is still hateful): "
        "there is no directional (DIR) test.</p>"
    )
    if cells.is_empty():
        return out + "<p class='note'>No model is scored on both a perturbed suite and the suite it perturbs.</p>"
    columns = [c for c in INVARIANCE_HEADINGS if c != "directional" or directional]
    for model in dict.fromkeys(cells["model"].to_list()):
        mc = cells.filter(pl.col("model") == model)
        for suite in dict.fromkeys(mc["suite"].to_list()):
            sc = mc.filter(pl.col("suite") == suite)
            lookup = {(r["row"], r["column"]): r for r in sc.iter_rows(named=True)}
            rows = [
                f'<tr><td class="rowhead">{escape(gen)}</td>'
                + "".join(td(lookup.get((gen, c)), None, max_ci_width, show_ci=True) for c in columns)
                + "</tr>"
                for gen in dict.fromkeys(sc["row"].to_list())
            ]
            source = sc["setting"][0]
            out += html_table(
                f"invariance-{slug(model, suite)}",
                ["perturbation", *(INVARIANCE_HEADINGS[c] for c in columns)],
                rows,
                caption=f"{model}: {suite} against {source}",
            )
    return out


HX_PERFORMANCE = [("accuracy", "Acc."), ("macro_f1", "macro F1"), ("auroc", "AUROC")]
HX_BIAS = [("gmb_subgroup", "GMB-Sub."), ("gmb_bpsn", "GMB-BPSN"), ("gmb_bnsp", "GMB-BNSP")]
# the 3-class model's own 1 - p(normal) figures: an extra, labelled column group (not the paper's protocol)
HX_BIAS3 = [(f"{k}_3class", f"{h} (3-class)") for k, h in HX_BIAS]
HX_EXPLAIN = [("iou_f1", "IOU F1"), ("token_f1", "token F1"), ("auprc", "AUPRC"), ("comprehensiveness", "Comp."), ("sufficiency", "Suff.")]


def hatexplain_name(clf: str, e: Mapping[str, Any]) -> str:
    """A HateXplain classifier's row label: what really ran."""
    if "standin" in clf:
        return f"{clf} (baseline: TF-IDF + logistic regression, not BERT)"
    return str(e.get("model") or clf)


def posts_covered(x: Mapping[str, Any]) -> str | None:
    """How many test posts an explanation row's figures cover, of those
    with a rationale (``50 of 1142`` marks a sample).

    >>> posts_covered({"n_posts": 50, "n_posts_available": 1142}), posts_covered({"n_posts": 7})
    ('50 of 1142', '7')
    """
    n, available = x.get("n_posts"), x.get("n_posts_available")
    if n is None:
        return None
    return str(n) if available is None else f"{n} of {available}"


def supervision_target_note(supervised: Mapping[str, Any] | None) -> str | None:
    """What BERT-HateXplain's attention-supervision target was built from,
    where it is not the paper's (Mathew et al. 2021, "Ground truth
    attention": softmax of the annotators' averaged rationale masks).

    >>> supervision_target_note({"model": "m", "ran": True, "train_rationales": "eraser"}).startswith("union")
    True
    >>> supervision_target_note({"model": "m", "ran": True, "train_rationales": "masks.json"}) is None
    True
    """
    if not supervised or not supervised.get("ran") or supervised.get("train_rationales") != "eraser":
        return None
    return (
        "union of the annotators' rationales, not the paper's mean: HateXplain's ERASER files, the only training "
        "rationales the mirror has, carry one combined mask per post (the union), so the target is softmax(temperature x "
        "union), which puts a word one annotator of three marked on a par with one all marked; the paper (and its code, "
        "Preprocess/attentionCal.py) takes softmax(temperature x mean of the annotators' masks). A file of per-annotator "
        "masks (bias.hatexplain.supervised.train_rationales) gives the paper's target"
    )


# How Table 6 names an explanation method: the paper's [Attn] and [LIME], the others spelled out.
METHOD_NAMES = {"attention": "Attn", "lime": "LIME", "integrated_gradients": "integrated gradients", "occlusion": "occlusion"}


def hatexplain_table6(
    hx: Mapping[str, Any], supervised: Mapping[str, Any] | None, summary_file: str, published: Mapping[str, Any] | None
) -> str:
    """The paper's Table 6 layout: one row per classifier and explanation
    method, each followed by the paper's row for the same kind of model."""
    from hatecheck_pipeline.evaluation import published as P

    pub = P.load() if published is None else published
    t6 = pub.get("hatexplain_t6") or {}
    source = t6.get("source", "HateXplain (Mathew et al., 2021), Table 6")
    out = "<h3>HateXplain: performance, bias and explainability (test set), next to the paper's Table 6</h3>"
    out += (
        "<p class='note'>Each of our rows is followed by the paper's row (italic) for the same kind of model and token method: "
        "[Attn] = attention, [LIME] = LIME run as the authors ran it (lime 0.2.0.1, their testing_with_lime.py settings; the "
        "number of perturbed samples is in the method's tooltip). Integrated gradients (and the TF-IDF baseline's occlusion) are "
        "extra rows: the paper has none, so no paper row follows them. The paper's models are bert-base-uncased fine-tuned on the "
        "full training split; ours name the base model that ran (a stand-in says so) and the profile's budget. The TF-IDF model is "
        "a cheap baseline, not BERT. Explainability covers the explained test posts (hate speech or offensive, with rationales): "
        "attention every one of them in every profile, LIME and integrated gradients the same seeded sample of "
        "<code>hatexplain_max_explain</code> posts (column posts). "
        "Bias: the paper's GMB columns come from 2-class models (toxic = hate speech or offensive vs normal; the authors' "
        "testing_for_bias.py), and so do ours where a 2-class model is paired with the row (bias.hatexplain.two_class); "
        "a row without one leaves them empty. The '(3-class)' columns are each row's own 3-class model scored with "
        "1 - p(normal): not the paper's protocol, shown for comparison.</p>"
    )
    cols = HX_PERFORMANCE + HX_BIAS + HX_EXPLAIN
    rows = []
    target_note = supervision_target_note(supervised)

    def paper_tr(row: str) -> str:
        model, _, method = row.partition(" [")
        vals = (t6.get("values") or {}).get(model, {}).get(method.rstrip("]"), {})
        tds = "".join(
            '<td class="missing">–</td>'
            if vals.get(k) is None
            else f'<td class="published" data-cell-id="{escape(cell_id("published", "hatexplain_t6", model, method.rstrip("]"), k))}" '
            f'data-metrics="published" data-stage="{escape(source)}" title="{escape("Published: " + source)}">{vals[k]:.3f}</td>'
            for k, _ in cols
        )
        tds += '<td class="missing">–</td>'  # posts: the paper's test set, not given per row
        tds += '<td class="missing">–</td>' * len(HX_BIAS3)  # the paper reports its bias figures from 2-class models only
        return f'<tr><td class="rowhead published">paper: {escape(row)} (bert-base-uncased, full data)</td>{tds}</tr>'

    for clf, e in hx.items():
        src, stage = e.get("source") or summary_file, f"hatexplain_metrics_{clf}"
        perf = "".join(json_td(e.get(k), cell_id("bias", "hatexplain", clf, k), src, stage, 3) for k, _ in HX_PERFORMANCE)
        if e.get("bias_classes", 3) == 2:
            note = f" (2-class model {e.get('bias_model')}: p(toxic), the paper's protocol)"
            bias = "".join(json_td(e.get(k), cell_id("bias", "hatexplain", clf, k), src, stage, 3, note) for k, _ in HX_BIAS)
        else:
            bias = "".join(
                '<td class="missing" title="no 2-class model is paired with this row: its 3-class figure is in the '
                '(3-class) columns">–</td>'
                for _ in HX_BIAS
            )
        bias3 = "".join(
            json_td(e.get(k), cell_id("bias", "hatexplain", clf, k), src, stage, 3, " (this 3-class model: 1 - p(normal))")
            for k, _ in HX_BIAS3
        )
        for x in e.get("explanations") or []:
            method = x.get("method") or "?"
            note = f" ({x.get('method_label') or method}, top {x.get('top_k')}, n={x.get('n_posts')} posts)"
            tds = "".join(json_td(x.get(k), cell_id("bias", "hatexplain", clf, method, k), src, stage, 3, note) for k, _ in HX_EXPLAIN)
            tds += json_td(
                posts_covered(x),
                cell_id("bias", "hatexplain", clf, method, "n_posts"),
                src,
                stage,
                note=" test posts the plausibility and faithfulness figures average over, of those with a rationale",
            )
            label = f"{escape(hatexplain_name(clf, e))} [{escape(METHOD_NAMES.get(method, method))}]"
            if target_note and supervised and clf == supervised.get("model"):
                label = (
                    f'<span title="{escape("Supervision target: " + target_note)}">{label} (BERT-HateXplain; supervision '
                    "target: union of the annotators' rationales, the paper averages them)</span>"
                )
            rows.append(f'<tr><td class="rowhead">{label}</td>{perf}{bias}{tds}{bias3}</tr>')
            if x.get("paper_row"):
                rows.append(paper_tr(str(x["paper_row"])))
    if supervised and not supervised.get("ran"):
        rows.append(
            f'<tr><td class="rowhead">{escape(str(supervised.get("model")))} (BERT-HateXplain, attention-supervised)</td>'
            f'<td class="missing" colspan="{len(cols) + 1 + len(HX_BIAS3)}">did not run: {escape(str(supervised.get("reason", "")))}</td></tr>'
        )
        rows.append(paper_tr("BERT-HateXplain [Attn]"))
    out += html_table("hatexplain-table6", ["model [token method]", *(h for _, h in cols), "posts", *(h for _, h in HX_BIAS3)], rows)
    if target_note:
        out += f"<p class='note'><b>BERT-HateXplain's supervision target:</b> {escape(target_note)}.</p>"
    return out


def crows_value(entry: Mapping[str, Any], key: str) -> Any:
    """A CrowS-Pairs table figure; the interval as text "[low, high]".

    >>> crows_value({"metric_ci": [55.0, 61.25]}, "metric_ci"), crows_value({"metric_ci": None}, "metric_ci")
    ('[55.0, 61.2]', None)
    """
    value = entry.get(key)
    if key == "metric_ci":
        return f"[{value[0]:.1f}, {value[1]:.1f}]" if value else None
    return value


def bias_section(doc: Mapping[str, Any] | None, summary_file: str, published: Mapping[str, Any] | None = None) -> str:
    """CrowS-Pairs, HateXplain (stand-in) and target-group bias from results/bias/summary.json."""
    if doc is None:
        return f"<p class='fail'>{escape(summary_file)} not found: the bias stages have not run.</p>"
    out = ""
    # CrowS-Pairs
    crows = doc.get("crows_pairs") or {}
    out += "<h3>CrowS-Pairs (share of pairs where the more-stereotyping sentence scores higher; ideal 50%)</h3>"
    found = {level for e in crows.values() if (level := doc_bootstrap(e).get("level")) is not None}  # each scorer's bootstrap
    cols = [
        ("metric_score", "metric score"),
        ("metric_ci", f"metric score {page_ci(found, noun='CI')}"),
        ("stereo_score", "stereo"),
        ("antistereo_score", "anti-stereo"),
        ("n_pairs", "pairs"),
    ]
    rows = []
    for name, e in crows.items():
        stage = f"crows_pairs_{name}"
        source = e.get("source") or summary_file
        if e.get("ran") is False:  # a scorer another profile runs (the paper profile's masked LMs)
            label = f"{name} ({e.get('variant')} variant; model {e.get('model')})"
            rows.append(
                f'<tr><td class="rowhead">{escape(label)}</td><td class="missing" colspan="{len(cols)}" '
                f'data-metrics="{escape(source)}" data-stage="{escape(stage)}">{escape(str(e.get("reason")))}</td></tr>'
            )
            continue
        n = e.get("n_pairs")
        incomplete = not e.get("complete")
        note = f" (INCOMPLETE: {n} of {CROWS_TOTAL:,} pairs, a seeded sample)" if incomplete else ""
        tds = "".join(
            json_td(
                crows_value(e, k),
                cell_id("bias", "crows", name, k),
                source,
                stage,
                1 if k != "n_pairs" else 0,
                note + (f" ({ci_text(e.get('metric_ci'), e)})" if k == "metric_ci" and e.get("metric_ci") else ""),
                "incomplete" if incomplete else "",
            )
            for k, _ in cols
        )
        label = f"{name} ({e.get('variant')} variant; model {e.get('model')})" + (" — incomplete run" if incomplete else "")
        rows.append(f'<tr><td class="rowhead">{escape(label)}</td>{tds}</tr>')
    for model, vals in (doc.get("crows_pairs_paper_table2") or {}).items():
        tds = "".join(
            published_td("crows_pairs_t2", model, "paper", k, vals.get(k), "Nangia et al. 2020, Table 2 (masked LM metric)")
            if k != "metric_ci"
            else '<td class="missing">–</td>'
            for k, _ in cols[:4]
        )
        rows.append(f'<tr><td class="rowhead">{escape(model)} (paper Table 2, masked)</td>{tds}<td class="missing">1,508</td></tr>')
    out += html_table("crows-pairs", ["scorer", *(h for _, h in cols)], rows)
    out += (
        "<p class='note'>The <b>masked</b> variant is the paper's pseudo-log-likelihood metric (its authors' metric.py); the "
        "<b>causal</b> variant scores whole-sentence log-likelihood as lm-evaluation-harness does and is not comparable with the "
        "paper's masked-LM figures. Each profile scores the scorers its <code>crows_scorers</code> lists: the paper profile the "
        "paper's three masked LMs from the model hub, the offline profiles only the causal stand-in (no masked LM with its MLM "
        "head is available offline). Runs over fewer than all 1,508 pairs (e.g. the smoke profile's "
        "<code>crows_max_pairs</code>) are marked incomplete. The metric score's interval is a percentile bootstrap "
        "over the pairs (<code>evaluation.bootstrap_samples</code> resamples, <code>evaluation.seed</code>, "
        "<code>evaluation.ci_level</code>, the settings of every other interval of the report); the paper gives none.</p>"
    )
    crows = {n: e for n, e in crows.items() if e.get("ran") is not False}  # Table 2 columns: the scorers that ran
    if crows:  # the paper's Table 2 rows: subsets and the nine bias types, next to its three masked LMs
        from hatecheck_pipeline.evaluation import published as P
        from hatecheck_pipeline.report.paper_tables import crows_confidence, crows_table2

        out += crows_table2(crows, summary_file, P.load() if published is None else published, CROWS_TOTAL, doc.get("winobias"))
        out += crows_confidence(crows, summary_file, P.load() if published is None else published)
    # HateXplain
    hx = doc.get("hatexplain") or {}
    out += hatexplain_table6(hx, doc.get("hatexplain_supervised"), summary_file, published)
    for clf, e in hx.items():
        comm = e.get("communities") or []
        rows = []
        for r in comm:
            tds = "".join(
                json_td(
                    r.get(k),
                    cell_id("bias", "hatexplain", clf, r["community"], k),
                    e.get("source") or summary_file,
                    f"hatexplain_metrics_{clf}",
                    3,
                    f", n={r.get('n')}",
                )
                for k in ("subgroup_auc", "bpsn_auc", "bnsp_auc")
            )
            rows.append(f'<tr><td class="rowhead">{escape(r["community"])}</td>{tds}</tr>')
        out += html_table(
            f"hatexplain-communities-{slug(clf)}",
            ["community", "Subgroup AUC", "BPSN AUC", "BNSP AUC"],
            rows,
            caption=f"{hatexplain_name(clf, e)}: bias AUCs per community (toxic = hate speech or offensive)",
        )
    # target groups of the functional suites
    targets = doc.get("targets") or {}
    out += (
        "<h3>Target-group bias on the functional suites</h3><p class='note'>Subgroup / BPSN / BNSP AUCs with <code>target_ident</code> "
        "as the community and p(hateful) as the score, per model and suite; GMB = generalised power mean (p = −5) over communities.</p>"
    )
    for model, e in targets.items():
        source, stage = e.get("source") or summary_file, f"target_bias_{model}"
        suites = e.get("suites") or {}
        rows, flat = [], []
        for suite, s in suites.items():
            tds = "".join(
                json_td(s.get(k), cell_id("bias", "targets", model, suite, k), source, stage, 3 if k != "n_cases" else 0)
                for k in ("n_cases", "overall_auc", "gmb_subgroup", "gmb_bpsn", "gmb_bnsp")
            )
            rows.append(f'<tr><td class="rowhead">{escape(suite)}</td>{tds}</tr>')
            flat += [{"suite": suite, **r} for r in s.get("communities") or []]
        out += f"<h4>{escape(model)}</h4>"
        out += html_table(f"target-bias-{slug(model)}", ["suite", "cases", "overall AUC", "GMB-Subgroup", "GMB-BPSN", "GMB-BNSP"], rows)
        if flat:
            out += figure(
                auc_heatmaps(flat, f"{model}: target-group bias AUCs"),
                f"{model}: Subgroup / BPSN / BNSP AUC per target group and suite",
                f"fig-target-bias-{slug(model)}",
            )
            crow = []
            for r in flat:
                tds = "".join(
                    json_td(
                        r.get(k), cell_id("bias", "targets", model, r["suite"], r["community"], k), source, stage, 3, f", n={r.get('n')}"
                    )
                    for k in ("subgroup_auc", "bpsn_auc", "bnsp_auc")
                )
                crow.append(f'<tr><td class="rowhead">{escape(r["suite"])}</td><td class="rowhead">{escape(r["community"])}</td>{tds}</tr>')
            out += (
                "<details><summary>per target group</summary>"
                + html_table(
                    f"target-bias-communities-{slug(model)}", ["suite", "target group", "Subgroup AUC", "BPSN AUC", "BNSP AUC"], crow
                )
                + "</details>"
            )
    return out


def usage_section(records: list[dict], folder: str, slowest: int = 10) -> str:
    """Time and memory of the stages that built this report, per phase and
    the slowest stages, from the stage records (``core.usage``): a record of
    the run, not a result (no lineage; it differs between runs).

    >>> rec = {"stage": "train_X", "phase": "train", "wall_s": 60.0, "cpu_s": 110.0, "max_rss_mb": 900.0,
    ...        "started": "2026-01-01T12:00:00+00:00", "finished": "2026-01-01T12:01:00+00:00"}
    >>> html = usage_section([rec], "logs/benchmarks")
    >>> "<td class='rowhead'>train_X</td>" in html and "1 stages" in html
    True
    """
    from hatecheck_pipeline.core.usage import phase_rows, span_s

    note = (
        f"<p class='note'>Measured when each stage last ran (<code>{escape(folder)}/&lt;stage&gt;.json</code>, written by "
        "<code>hatecheck-pipeline run</code> under Snakemake or <code>dvc repro</code>): wall and CPU seconds and peak memory. "
        "A record of the run, not a result: these figures have no lineage and differ between runs and machines. "
        "<code>python benchmarks/bench_pipeline.py</code> prints the same tables.</p>"
    )
    if not records:
        return note + "<p>No stage records (stages built before records were kept, or run elsewhere).</p>"
    total = sum(r["wall_s"] for r in records)
    head = (
        f"<p>{len(records)} stages: {total / 60:,.1f} minutes of stage time summed, "
        f"{span_s(records) / 60:,.1f} minutes from the first stage's start to the last one's end.</p>"
    )

    def rec(value: str, source: str) -> str:
        return f"<td class='record' data-record='{escape(source)}' title='run record: {escape(source)}'>{value}</td>"

    phases = []
    for r in phase_rows(records):
        src = f"{folder}/<{r['phase']} stages>.json"
        cols = (f"{r['stages']}", f"{r['wall_s']:,.1f}", f"{r['cpu_s']:,.1f}", f"{r['max_rss_mb']:,.0f}", f"{100 * r['share']:.1f}%")
        phases.append(f"<tr><td class='rowhead'>{escape(r['phase'])}</td>{''.join(rec(c, src) for c in cols)}</tr>")
    stages = []
    for r in sorted(records, key=lambda r: -r["wall_s"])[:slowest]:
        src = f"{folder}/{r['stage']}.json"
        cols = (f"{r['wall_s']:,.1f}", f"{r['cpu_s']:,.1f}", f"{r['max_rss_mb']:,.0f}", f"{100 * r['wall_s'] / (total or 1):.1f}%")
        stages.append(
            f"<tr><td class='rowhead'>{escape(r['stage'])}</td><td class='rowhead'>{escape(r['phase'])}</td>{''.join(rec(c, src) for c in cols)}</tr>"
        )
    return (
        note
        + head
        + html_table("usage-phases", ["phase", "stages", "wall s (summed)", "CPU s", "peak RSS MiB (max)", "share"], phases, "Per phase")
        + html_table(
            "usage-stages",
            ["stage", "phase", "wall s", "CPU s", "peak RSS MiB", "share"],
            stages,
            f"The {min(slowest, len(records))} slowest stages",
        )
    )
