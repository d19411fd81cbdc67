"""The audits page of the generated documentation: what the pipeline
computes beside the models' scores, from a recorded run, each table next to
the paper's figures (``resources/published.yaml``) with its deviations
stated beside it:

- annotator agreement: HateCheck's validation of its gold labels (section
  2.5, ``results/hatecheck_agreement/metrics.json``), overall and per
  functional test, and Multilingual HateCheck's annotator disagreement
  (Table 5, ``results/tables/mhc_t5.json``);
- CrowS-Pairs Table 2 (``results/bias/crows_pairs/<scorer>/metrics.json``)
  with its bootstrap intervals, overall and per bias type, its WinoBias
  rows (``results/bias/winobias/<scorer>/type<t>/metrics.json``) and
  StereoSet's (published only), and the model-confidence analysis
  (equation 2, Figure 2) as a figure drawn from the binned confidences the
  metrics hold and a table of their quartiles;
- HateXplain Table 6 (``results/bias/hatexplain/<model>/metrics.json``):
  performance, bias and explainability per model and token method,
  [Attn] and [LIME] each followed by the paper's row, integrated gradients
  an extra row;
- CheckList-style invariance of the perturbed suites
  (``results/tables/expanded_invariance.csv``): flip rate with its
  interval beside the accuracy of the same pairs, and the directional
  figure of label-changing perturbations.

It reuses the report's names for the rows and methods
(:mod:`hatecheck_pipeline.report.paper_tables`,
:mod:`hatecheck_pipeline.report.sections`). A file the record lacks (a
stage the run did not have, or a record made before ``docs record`` kept
it) gives a line saying so in its section, never an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.docsite import runs
from hatecheck_pipeline.docsite.figures import confidence_svg
from hatecheck_pipeline.docsite.formatting import md_table, num, path_cell, read_json, page, with_ci
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.cells import NA
from hatecheck_pipeline.report.paper_tables import (
    CROWS_CAUSAL_NOTE,
    CROWS_ROWS,
    OVERALL_KEYS,
    STEREOSET_NOT_RUN,
    WINOBIAS_ROWS,
    exclusion_details,
    exclusion_verdict,
)
from hatecheck_pipeline.report.sections import (
    HX_BIAS,
    HX_EXPLAIN,
    HX_PERFORMANCE,
    INVARIANCE_HEADINGS,
    METHOD_NAMES,
    hatexplain_name,
    posts_covered,
    supervision_target_note,
)

# The record's files this page reads (docs record copies them: runs.AUDIT_GLOBS).
AGREEMENT = "results/hatecheck_agreement/metrics.json"
MHC_T5 = "results/tables/mhc_t5.json"
CROWS = "results/bias/crows_pairs/{scorer}/metrics.json"
WINOBIAS = "results/bias/winobias/{scorer}/type{t}/metrics.json"
HATEXPLAIN = "results/bias/hatexplain/{model}/metrics.json"
BIAS_SUMMARY = "results/bias/summary.json"
INVARIANCE = "results/tables/expanded_invariance.csv"


def not_recorded(rel: str, stage: str) -> str:
    """The line a section shows for a file the record lacks.

    >>> not_recorded("results/x.json", "x")
    'Not in this record: the recorded run did not produce `results/x.json` (stage `x`), or was recorded before `docs record` kept it.'
    """
    return f"Not in this record: the recorded run did not produce `{rel}` (stage `{stage}`), or was recorded before `docs record` kept it."


def printed(value: Any, digits: int | None = None) -> str:
    """A published figure as the paper prints it: a count with thousands
    separators, a decimal with ``digits`` decimals (None: as stored), – when
    the paper gives none.

    >>> printed(3879), printed(0.93), printed(62.0, 1), printed(4.2, 2), printed(None)
    ('3,879', '0.93', '62.0', '4.20', '–')
    """
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:g}" if digits is None else f"{value:,.{digits}f}"


def _docs(record: Path, pattern: str) -> dict[str, dict[str, Any]]:
    """Record-relative path -> document of the files matching ``pattern``."""
    return {p.relative_to(record).as_posix(): read_json(p) for p in sorted(record.glob(pattern))}


# ------------------------------------------------------------ annotator agreement

S25_FIGURES = (
    ("n_cases", "generated cases", 0),
    ("annotators", "annotators", 0),
    ("annotators_per_case", "annotators per case", 0),
    ("fleiss_kappa", "Fleiss' kappa", 4),
    ("n_agree_4of5", "cases with at least 4 of 5 annotators agreeing with the gold label", 0),
    ("pct_agree_4of5", "% of cases with at least 4 of 5 agreeing", 2),
    ("n_below_4of5", "cases below 4 of 5", 0),
)


def hatecheck_agreement_md(record: Path, published: Mapping[str, Any]) -> str:
    """HateCheck section 2.5: the annotators' agreement with the gold
    labels, the exclusion rule against the released suite (its deviation
    named), and agreement per functional test."""
    path = record / AGREEMENT
    head = "#### HateCheck: validation of the gold labels (section 2.5)\n\n"
    if not path.is_file():
        return head + not_recorded(AGREEMENT, "hatecheck_agreement")
    doc = read_json(path)
    s25 = published.get("hatecheck_s25") or {}
    pub = ((s25.get("values") or {}).get("annotators") or {}).get("all") or {}
    e = doc.get("exclusion") or {}
    rows = [[name, num(doc.get(key), digits), printed(pub.get(key))] for key, name, digits in S25_FIGURES]
    rows += [
        [
            "cases excluded (every case of a template holding a case below 4 of 5)",
            num(e.get("n_excluded"), 0),
            printed(pub.get("n_excluded")),
        ],
        ["cases kept by that rule (the paper: released)", num(e.get("n_kept"), 0), printed(pub.get("n_released"))],
        ["cases in the released suite (`test_suite_cases.csv`)", num(e.get("n_released"), 0), printed(pub.get("n_released"))],
    ]
    out = (
        head + "Each generated case was labelled by five of ten trained annotators (`all_annotations.csv`); Fleiss' kappa over "
        "the two labels; a case agrees when at least 4 of its 5 annotators give the gold label. A property of the suite, "
        f"not of a model. The paper's figures: {s25.get('source', '')}.\n\n"
        + md_table(["figure", "ours", "paper"], rows)
        + f"\n\nSource: {path_cell(AGREEMENT)}."
    )
    if e.get("matches_release"):
        out += " " + exclusion_verdict(doc)
    elif e:
        out += f"\n\n**Deviation.** {exclusion_verdict(doc)} {exclusion_details(doc)}"
    below = doc.get("below_4of5") or []
    if below:
        out += (
            "\n\nThe cases below 4 of 5 (the rule's starting point): "
            + ", ".join(f"{c['case_id']} (`{c['functionality']}`, template {c['templ_id']}: {c['agreeing']} of 5)" for c in below)
            + "."
        )
    per = doc.get("per_functionality") or {}
    if per:
        frows = [
            [
                P.functionality_label(code, "hatecheck"),
                num(f.get("n_cases"), 0),
                num(f.get("n_agree_4of5"), 0),
                num(f.get("pct_agree_4of5")),
                num(f.get("pct_labels_agreeing")),
                num(f.get("n_released"), 0),
            ]
            for code, f in sorted(per.items(), key=lambda kv: P.functionality_order(kv[0], "hatecheck"))
        ]
        out += (
            "\n\n##### Agreement per functional test (not in the paper)\n\n"
            "The paper gives agreement over all cases only. No kappa per test: every case of a test has the same gold "
            "label, so kappa is near 0 however well the annotators agree.\n\n"
            + md_table(
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
            + f"\n\nSource: {path_cell(AGREEMENT)}."
        )
    return out


def mhc_t5_md(record: Path, published: Mapping[str, Any]) -> str:
    """MHC Table 5: per language the cases where at least 2 of 3 annotators
    disagree with the gold label, beside the paper's; the languages whose
    count differs are named."""
    path = record / MHC_T5
    head = "#### Multilingual HateCheck: annotator disagreement (Table 5)\n\n"
    if not path.is_file():
        return head + not_recorded(MHC_T5, "mhc_disagreement")
    doc = read_json(path)
    t5 = published.get("mhc_t5") or {}
    pub = (t5.get("values") or {}).get("annotators") or {}
    rows, differ = [], []
    for lang, e in [*(doc.get("per_language") or {}).items(), ("all languages", doc.get("overall") or {})]:
        p = pub.get(lang) or {}
        if p.get("n_disagreement") is not None and e.get("n_disagreement") != p["n_disagreement"]:
            differ.append(f"{lang} ({num(e.get('n_disagreement'), 0)} here, {printed(p['n_disagreement'])} in the paper)")
        rows.append(
            [
                lang,
                num(e.get("n_cases"), 0),
                num(e.get("pct_disagreement"), 2),
                printed(p.get("pct_disagreement"), 2),
                num(e.get("n_disagreement"), 0),
                printed(p.get("n_disagreement")),
                num(e.get("pct_in_disagreement_template"), 2),
            ]
        )
    out = (
        head + f"A property of the suite, not of a model; how a case is counted: {doc.get('definition', '–')}. The paper's "
        f"figures: {t5.get('source', '')}.\n\n"
        + md_table(
            [
                "language",
                "cases",
                "% disagreement",
                "% (paper)",
                "n disagreement",
                "n (paper)",
                "% in a template with disagreement (not in the paper)",
            ],
            rows,
        )
        + f"\n\nSource: {path_cell(MHC_T5)}."
    )
    if differ:
        out += (
            f" **Differs from the paper:** {', '.join(differ)}. The counts follow the authors' own per-case flags in the "
            "released files, so the released files differ from the ones the paper counted."
        )
    return out


# ---------------------------------------------------------------- CrowS-Pairs


def score_cell(value: float | None, ci: list[float] | None, complete: bool = True) -> str:
    """A CrowS-Pairs / WinoBias figure with its interval; a seeded sample marked.

    >>> score_cell(56.23, [53.7, 58.81]), score_cell(50.0, None, complete=False), score_cell(None, None)
    ('56.2 [53.7, 58.8]', '50.0 (sample)', '–')
    """
    if value is None:
        return "–"
    return num(value) + (f" [{num(ci[0])}, {num(ci[1])}]" if ci else "") + ("" if complete else " (sample)")


def _crows(record: Path) -> tuple[dict[str, tuple[str, dict]], dict[str, dict[int, tuple[str, dict]]]]:
    """CrowS-Pairs scorer -> (path, metrics), and WinoBias scorer -> type -> (path, metrics)."""
    crows = {Path(rel).parent.name: (rel, doc) for rel, doc in _docs(record, CROWS.format(scorer="*")).items()}
    wino: dict[str, dict[int, tuple[str, dict]]] = {}
    for rel, doc in _docs(record, WINOBIAS.format(scorer="*", t="*")).items():
        kind = Path(rel).parent.name
        if kind.removeprefix("type").isdigit():
            wino.setdefault(Path(rel).parent.parent.name, {})[int(kind.removeprefix("type"))] = (rel, doc)
    return crows, wino


def crows_table2_md(record: Path, published: Mapping[str, Any]) -> str:
    """CrowS-Pairs Table 2: WinoBias type 1 and 2, StereoSet (published
    only), then all pairs, the stereo and anti-stereo subsets and the nine
    bias types; one column per scorer that ran (metric score with its
    bootstrap interval), the pairs scored, then the paper's n and its three
    masked LMs."""
    crows, wino = _crows(record)
    head = "#### CrowS-Pairs Table 2: metric score on WinoBias, StereoSet and CrowS-Pairs (%)\n\n"
    if not crows:
        return head + not_recorded(CROWS.format(scorer="<scorer>"), "crows_pairs_<scorer>")
    ran = {n: v for n, v in crows.items() if v[1].get("ran") is not False}
    skipped = {n: v for n, v in crows.items() if v[1].get("ran") is False}
    t2 = published.get("crows_pairs_t2") or {}
    pub, pub_n, labels = t2.get("values") or {}, t2.get("n") or {}, t2.get("rows") or {}

    def paper_cells(key: str) -> list[str]:
        return [printed(pub_n.get(key)), *(printed((vals.get(key) or {}).get("metric_score"), 1) for vals in pub.values())]

    def pairs(ns: list[int | None]) -> str:
        shown = list(dict.fromkeys(num(n, 0) for n in ns))
        return " / ".join(shown) if shown else "–"

    rows = []
    for wino_type, key, label in WINOBIAS_ROWS:
        cells, ns = [], []
        for name in ran:
            entry = wino.get(name, {}).get(wino_type)
            if entry is None:
                cells.append("not in this record" if not wino else "–")
                continue
            d = entry[1]
            if d.get("ran") is False:
                cells.append("–")
                continue
            cells.append(score_cell(d.get("metric_score"), d.get("metric_ci"), bool(d.get("complete"))))
            ns.append(d.get("n_pairs"))
        rows.append([f"{label} [paper: {labels.get(key, key)}]", *cells, pairs(ns), *paper_cells(key)])
    rows.append(
        [f"{labels.get('stereoset', 'StereoSet')}: {STEREOSET_NOT_RUN}", *(STEREOSET_NOT_RUN for _ in ran), "–", *paper_cells("stereoset")]
    )
    for key, label in CROWS_ROWS:
        cells, ns = [], []
        for _, d in ran.values():
            if key in OVERALL_KEYS:
                score_key, n_key = OVERALL_KEYS[key]
                value, n = d.get(score_key), d.get(n_key, d.get("n_pairs") if key == "all" else None)
                ci = d.get("metric_ci") if key == "all" else None
            else:
                bt = (d.get("bias_types") or {}).get(key) or {}
                value, n, ci = bt.get("score"), bt.get("n"), bt.get("ci")
            cells.append(score_cell(value, ci, bool(d.get("complete"))))
            ns.append(n)
        rows.append([label, *cells, pairs(ns), *paper_cells(key)])
    columns = ["Table 2 row", *(f"{n} ({d.get('variant')}) [95% CI]" for n, (_, d) in ran.items()), "pairs (ours)", "n (paper)"]
    columns += [f"{m} (paper, masked)" for m in pub]
    notes = []
    first = next(iter(ran.values()), None)
    if first and first[1].get("bootstrap"):
        b = first[1]["bootstrap"]
        notes.append(
            f"In brackets the percentile bootstrap {100 * b.get('level', 0.95):.0f}% interval over the pairs of each row "
            f"({b.get('samples')} resamples, seed {b.get('seed')}; the paper gives none)."
        )
    if any(d.get("variant") == "causal" for _, d in ran.values()):
        notes.append(
            "**Deviation:** a **causal** scorer's figure is the share of pairs whose whole-sentence log-likelihood prefers "
            "the more stereotyping sentence, not the paper's masked-LM pseudo-log-likelihood of the unmodified tokens: "
            "its column is not comparable with the paper's."
        )
    if any(not d.get("complete") for _, d in ran.values()):
        notes.append("(sample): a run over a seeded sample of the pairs (the profile's `crows_max_pairs`), not all of them.")
    splits = sorted({str(e[1].get("split")) for types in wino.values() for e in types.values() if e[1].get("split")})
    notes.append(
        "WinoBias rows: each line of a pro-stereotyped file as the more stereotyping sentence against the same line of its "
        f'anti-stereotyped file, split `{", ".join(splits) or "–"}` (the paper\'s "test sets"), the same metric and scorer '
        'as CrowS-Pairs; the paper\'s table labels its rows "ground" and "knowledge" where its caption names type 1 '
        "knowledge and type 2 syntax (in brackets: the paper's row each is set against). StereoSet's intrasentence "
        "validation set is not in the mirror: its row shows the paper's figures only."
    )
    for name, (_, d) in skipped.items():
        notes.append(f"Scorer `{name}` ({d.get('variant')}, model `{d.get('model')}`) did not run: {d.get('reason')}.")
    sources = [path_cell(rel) for rel, _ in ran.values()] + [path_cell(e[0]) for n in ran for e in wino.get(n, {}).values()]
    return (
        head
        + md_table(columns, rows)
        + "\n\n"
        + " ".join(notes)
        + f" The paper's figures: {t2.get('source', '')}. Sources: {', '.join(sources) or '–'}."
    )


def _quartiles(part: Mapping[str, Any]) -> str:
    """A side's median with its quartiles.

    >>> _quartiles({"median": 2.5, "q1": 1.0, "q3": 4.25}), _quartiles({"median": None})
    ('2.50 [1.00, 4.25]', '–')
    """
    if part.get("median") is None:
        return "–"
    return f"{num(part['median'], 2)} [{num(part.get('q1'), 2)}, {num(part.get('q3'), 2)}]"


def crows_confidence_md(record: Path, published: Mapping[str, Any]) -> str:
    """The model-confidence analysis (equation 2, Figure 2) of every scorer
    that ran: the mirrored distributions as an inline SVG, a table of each
    side's pairs, median and quartiles and the difference in medians beside
    the paper's, the paper's description and how a causal scorer differs."""
    crows, _ = _crows(record)
    head = "#### CrowS-Pairs model confidence (equation 2, Figure 2)\n\n"
    if not crows:
        return head + not_recorded(CROWS.format(scorer="<scorer>"), "crows_pairs_<scorer>")
    ran = [(n, rel, d) for n, (rel, d) in crows.items() if (d.get("confidence") or {}).get("bin_edges")]
    if not ran:
        return (
            head + "No scorer of this record has the binned confidences (`confidence` in its metrics): none ran, or the run predates them."
        )
    fig2 = published.get("crows_pairs_fig2") or {}
    rows = []
    for name, _, d in ran:
        conf = d["confidence"]
        more, less = conf["more_preferred"], conf["less_preferred"]
        rows.append(
            [
                f"{name} ({d.get('variant')})",
                num(more.get("n"), 0),
                _quartiles(more),
                num(less.get("n"), 0),
                _quartiles(less),
                num(conf.get("median_difference"), 2),
                num(conf.get("undefined"), 0),
            ]
        )
    for model, vals in (fig2.get("values") or {}).items():
        rows.append([f"{model} (paper, masked)", "–", "–", "–", "–", printed((vals.get("all") or {}).get("median_difference"), 1), "–"])
    caption = (
        "Confidence x 100 = 100 (1 - score(S)/score(S')), S the sentence scored higher; above 0 the pairs where S1 (the more "
        "stereotyping sentence) is scored higher, below 0 those where S2 is; each side's bins scaled to the scorer's fullest "
        "bin; black lines: the medians."
    )
    svg = confidence_svg([(f"{n} ({d.get('variant')})", d["confidence"]) for n, _, d in ran], "CrowS-Pairs model confidence per scorer")
    out = (
        head
        + f"<figure>{svg}<figcaption>{caption}</figcaption></figure>\n\n"
        + md_table(
            [
                "scorer",
                "pairs, S1 scored higher",
                "median [quartiles], S1 higher",
                "pairs, S2 scored higher",
                "median [quartiles], S2 higher",
                "difference in medians",
                "pairs with score(S') = 0",
            ],
            rows,
        )
        + f"\n\n**The paper ({fig2.get('source', '')}):** “{fig2.get('description', '')}” Figure 2 prints no values; its text "
        "gives the difference in medians without a unit, read here as confidence x 100. Pairs with equal scores are in "
        f"neither distribution. Sources: {', '.join(path_cell(rel) for _, rel, _ in ran)} (`confidence`)."
    )
    if any(d.get("variant") == "causal" for _, _, d in ran):
        out += "\n\n**Deviation:** " + CROWS_CAUSAL_NOTE.replace("<b>", "**").replace("</b>", "**")
    return out


# ------------------------------------------------------------ HateXplain Table 6


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def hatexplain_md(record: Path, published: Mapping[str, Any]) -> str:
    """HateXplain Table 6: per model and token method, performance, bias
    (GMB) and explainability (plausibility: IOU F1, token F1, AUPRC;
    faithfulness: comprehensiveness, sufficiency), each [Attn] and [LIME]
    row followed by the paper's row for the same kind of model; integrated
    gradients (and a baseline's occlusion) extra rows without a paper row."""
    found = _docs(record, HATEXPLAIN.format(model="*"))
    head = "### HateXplain Table 6: performance, bias and explainability (test set)\n\n"
    summary_path = record / BIAS_SUMMARY
    supervised = read_json(summary_path).get("hatexplain_supervised") if summary_path.is_file() else None
    if not found and not (supervised and not supervised.get("ran")):
        return head + not_recorded(HATEXPLAIN.format(model="<model>"), "hatexplain_metrics_<model>")
    t6 = published.get("hatexplain_t6") or {}
    cols = HX_PERFORMANCE + HX_BIAS + HX_EXPLAIN

    def paper_row(row: str) -> list[str]:
        model, _, method = row.partition(" [")
        vals = (t6.get("values") or {}).get(model, {}).get(method.rstrip("]"), {})
        return [f"*paper: {row}* (bert-base-uncased, full data)", *(_fraction(vals.get(k)) for k, _ in cols), "–", "–"]

    rows, bias_notes, methods = [], [], {}
    powers = ", ".join(
        sorted({str((d.get("bias") or {}).get("power")) for d in found.values() if (d.get("bias") or {}).get("power") is not None})
    )
    three_class = False
    for rel, doc in found.items():
        clf = Path(rel).parent.name
        perf = [_fraction((doc.get("performance") or {}).get(k)) for k, _ in HX_PERFORMANCE]
        b = doc.get("bias") or {}
        if b.get("classes", 3) == 2:
            bias = [_fraction(b.get(k)) for k, _ in HX_BIAS]
        else:
            three_class = True
            bias = [_fraction(b.get(k)) + (" (3-class)" if b.get(k) is not None else "") for k, _ in HX_BIAS]
        bias_notes.append(f"`{clf}`: {b.get('score', '–')}" + (f", model {b['model']}" if b.get("model") else ""))
        for x in doc.get("explainability") or []:
            method = x.get("method") or "?"
            methods.setdefault(METHOD_NAMES.get(method, method), x.get("method_label") or method)
            label = f"{hatexplain_name(clf, doc)} [{METHOD_NAMES.get(method, method)}]"
            rows.append([label, *perf, *bias, *(_fraction(x.get(k)) for k, _ in HX_EXPLAIN), posts_covered(x) or "–", path_cell(rel)])
            if x.get("paper_row"):
                rows.append(paper_row(str(x["paper_row"])))
    if supervised and not supervised.get("ran"):
        rows.append(
            [f"{supervised.get('model')} (BERT-HateXplain, attention-supervised)", f"did not run: {supervised.get('reason', '')}"]
            + [""] * (len(cols) + 1)
            + [path_cell(BIAS_SUMMARY)]
        )
        rows.append(paper_row("BERT-HateXplain [Attn]"))
    out = head + md_table(["model [token method]", *(h for _, h in cols), "posts", "source"], rows)
    notes = [
        "Fractions, as the paper prints them. Each of our rows is followed by the paper's row (italic) for the same kind of "
        "model and token method; integrated gradients (and the TF-IDF baseline's occlusion) are extra rows without a paper "
        "row. **Deviation:** the paper's models are bert-base-uncased fine-tuned on the full training split; each of our "
        "rows names the model that ran (a stand-in says so) and its profile's budget applies. Plausibility (IOU F1, token "
        "F1, AUPRC) and faithfulness (comprehensiveness, sufficiency) cover the explained test posts (column posts: a "
        "seeded sample where it says `n of N`).",
        "Token methods as they ran: " + "; ".join(f"[{k}] {v}" for k, v in methods.items()) + "." if methods else "",
        f"Bias scores (GMB: the generalised mean of the communities' AUCs, power {powers or '–'}): " + "; ".join(bias_notes) + "."
        if bias_notes
        else "",
        "**Deviation:** a figure marked (3-class) is the row's own 3-class model scored with 1 - p(normal), not the paper's "
        "2-class protocol (no 2-class model is paired with that row)."
        if three_class
        else "",
    ]
    target = supervision_target_note(supervised)
    if target:
        notes.append(f"**Deviation:** BERT-HateXplain's supervision target is the {target} (`{BIAS_SUMMARY}`).")
    notes.append(f"The paper's figures: {t6.get('source', '')}.")
    return out + "\n\n" + " ".join(n for n in notes if n)


# ------------------------------------------------------------------ invariance


def invariance_md(record: Path) -> str:
    """CheckList-style invariance: per model, perturbed suite and
    perturbation type, the flip rate with its interval beside the accuracy
    of the same pairs, and the directional figure where a perturbation
    changes the label."""
    from hatecheck_pipeline.report.html import read_cells

    head = "### Invariance under perturbation (CheckList INV and DIR; not in the papers)\n\n"
    path = record / INVARIANCE
    if not path.is_file():
        return head + not_recorded(INVARIANCE, "tables_expanded")
    cells = read_cells({"invariance": path})["invariance"]
    intro = (
        "CheckList's invariance test (Ribeiro et al. 2020): each perturbed case is paired with the case it was perturbed "
        "from and the model's two predictions compared. Flip rate: the share of source cases whose prediction changes under "
        "a label-preserving perturbation (lower is better); *any perturbation*: the share flipped by at least one "
        "generator. Beside it the accuracy of the same pairs on the source and on the perturbed cases. "
    )
    if cells.is_empty():
        return head + intro + "\n\nNo model is scored on both a perturbed suite and the suite it perturbs in this record."
    directional = not cells.filter(cells["column"] == "directional").is_empty()
    intro += (
        "Directional (DIR): the share of a label-changing perturbation's pairs whose prediction moves to the new label."
        if directional
        else "Every perturbation type of this run keeps the gold label (a misspelt hateful case is still hateful): there is "
        "no directional (DIR) test."
    )
    units = sorted({u for u in cells["resampling_unit"].to_list() if u})
    if units:
        intro += f" In brackets the 95% interval, resampling the source cases' {' / '.join(f'{u}s' for u in units)}."
    columns = [c for c in INVARIANCE_HEADINGS if c != "directional" or directional]
    parts = [head + intro]
    for model in dict.fromkeys(cells["model"].to_list()):
        rows = []
        mc = cells.filter(cells["model"] == model)
        for suite in dict.fromkeys(mc["suite"].to_list()):
            sc = mc.filter(mc["suite"] == suite)
            lookup = {(r["row"], r["column"]): r for r in sc.iter_rows(named=True)}
            for gen in dict.fromkeys(sc["row"].to_list()):
                first = lookup.get((gen, "flip_rate")) or lookup.get((gen, "directional")) or {}
                n = first.get("n")
                templates = f" ({num(first['n_clusters'], 0)})" if first.get("n_clusters") is not None else ""
                figures = []
                for c in columns:
                    cell = lookup.get((gen, c))
                    text = with_ci(cell) if cell else "–"
                    if c == "directional" and cell and cell.get("n") != n:
                        text += f", {num(cell.get('n'), 0)} pairs"
                    figures.append(text)
                rows.append([f"{suite} against {sc['setting'][0]}", gen, "–" if n is None else num(n, 0) + templates, *figures])
        parts.append(
            f"#### {model}\n\n" + md_table(["suite", "perturbation", "pairs (templates)", *(INVARIANCE_HEADINGS[c] for c in columns)], rows)
        )
    parts.append(
        f"Source: {path_cell(INVARIANCE)} (the perturbed suites' `invariance` sections, as the table stage collected them); "
        f"{NA}: undefined (no pair of that kind)."
    )
    return "\n\n".join(parts)


def audits_page(record: Path, published: Mapping[str, Any] | None = None) -> str:
    record = Path(record)
    published = P.load() if published is None else published
    info = runs.load(record)
    return page(
        info,
        record,
        [
            "### Annotator agreement\n\nHow far the suites' annotators agree with the gold labels: properties of the "
            "suites, not of a model.\n\n" + hatecheck_agreement_md(record, published) + "\n\n" + mhc_t5_md(record, published),
            "### Social bias of language models: CrowS-Pairs and WinoBias\n\n"
            "The share of pairs whose more stereotyping sentence a language model scores higher (ideal 50%).\n\n"
            + crows_table2_md(record, published)
            + "\n\n"
            + crows_confidence_md(record, published),
            hatexplain_md(record, published),
            invariance_md(record),
        ],
    )
