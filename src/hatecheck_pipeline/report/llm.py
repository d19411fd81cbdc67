"""Report section: prompted LLMs on the ETHOS sets ("Detecting Hate Speech
with GPT-3", Chiu, Collins, Alexander 2022): per backend the paper's Tables
1-3 (yes/no settings, with the Overall rows), 4 and 7 (mixed settings per
example set and All), 5 (distinct answers, out of scope marked), section
4.5's with/without-instruction contrast, 6 (label x answer) and Appendix B
(confusion counts per setting summed over iterations), each of
our cells with its provenance next to the paper's figure
(``resources/published.yaml``)."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.llm_answers import (
    APPENDIX_B,
    COUNTS,
    PAPER_TABLES,
    MIXED_CLASSES,
    NO_CASES,
    answer_key,
    metrics_from_counts,
)
from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import html_table, json_td, published_td
from hatecheck_pipeline.report.paper_tables import published_cell

SETTING_NAMES = {
    "zero_shot": "zero-shot",
    "one_shot": "one-shot",
    "few_shot_single": "few-shot, single category",
    "mixed": "few-shot, mixed category",
    "mixed_instruction": "few-shot, mixed category, with instruction",
}
YES_NO = ("zero_shot", "one_shot", "few_shot_single")
MIXED = ("mixed", "mixed_instruction")
METRICS = ("accuracy", "precision", "recall", "f1")
CATEGORY_NAMES = {"racist": "racist", "sexist": "sexist", "overall": "overall (racist + sexist pooled)"}
# Table 6's answer columns; any other answer goes to "other".
T6_ANSWERS = ("neither", "racist", "sexist", "both", "racist and sexist")
MIXED_RULE = (
    "Category c (racist, sexist) is scored over the comments labelled c or neither, as the paper's section 4.4 does: "
    "labelled c and the answer contains c = true positive ('sexist, racist' on a racist comment counts), labelled c and "
    "any other answer = false negative ('transphobic', 'neither', 'I don't know'), labelled neither and the answer "
    "contains c = false positive, otherwise true negative; out-of-scope answers (anything but 'racist', 'sexist' or "
    "'neither') are counted, not omitted. With the instruction (section 4.5) only the answers 'both' and 'racist and "
    "sexist' are omitted (column 'omitted')."
)
CONSTRAINED_NOTE = (
    "constrained answers are one of racist / sexist / neither by construction: nothing can be out of scope, "
    "so this variant cannot show what Table 5 and section 4.5 are about (the backend's mixed_answers: free "
    "generates the answers as the paper did)"
)


def _paper(published: Mapping[str, Any], table: str) -> dict[tuple[str, str], tuple[float, str, str]]:
    return P.lookup(table, "GPT-3", published)


def _paper_td(paper: Mapping[tuple[str, str], tuple[float, str, str]], row: str, column: str) -> str:
    value, table, source = paper.get((row, column), (None, "", ""))
    return published_td(table, "GPT-3", row, column, value, source)


def _ms(m: Mapping[str, Any], metric: str, cid: str, source: str, stage: str) -> str:
    """Mean ± sd over the iterations where the figure is defined (the
    tooltip says over how many when some were not); n/a when none."""
    v = m.get(metric) or {}
    note = f" ± {v.get('sd', 0):.1f} (sd)" if v.get("sd") is not None else ""
    defined, iterations = v.get("defined"), v.get("iterations")
    if defined is not None and iterations and defined < iterations and v.get("mean") is not None:
        note += f", mean over the {defined} of {iterations} iterations where it is defined"
    return json_td(v.get("mean"), cid, source, stage, 1, note, undefined=v.get("undefined") or (NO_CASES if defined == 0 else None))


def overall_check(published: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The paper's Overall rows of Tables 1-3 recomputed from its own
    figures: F1 from the printed overall precision and recall (2PR/(P+R)),
    and the same with the sexism recall in the numerator (what the authors'
    ``paper.Rmd`` computes: ``2*zero_hate_precision*zero_sexism_recall``).

    >>> [(r["table"], r["printed_f1"], round(r["f1_from_pr"], 1), round(r["f1_authors_code"], 1)) for r in overall_check(P.load())]
    [('gpt3_detection_t1', 70, 61.2, 70.1), ('gpt3_detection_t2', 55, 57.4, 55.5), ('gpt3_detection_t3', 62, 67.5, 61.5)]
    """
    out = []
    for setting in YES_NO:
        table = PAPER_TABLES[setting]
        paper = {k: v[0] for k, v in _paper(published, table).items()}
        if ("overall", "f1") not in paper:
            continue
        p, r, rs = paper[("overall", "precision")], paper[("overall", "recall")], paper[("sexist", "recall")]
        out.append(
            {
                "setting": setting,
                "table": table,
                "printed_f1": paper[("overall", "f1")],
                "precision": p,
                "recall": r,
                "f1_from_pr": 2 * p * r / (p + r),
                "f1_authors_code": 2 * p * rs / (p + r),
                "category_f1": (paper[("racist", "f1")], paper[("sexist", "f1")]),
            }
        )
    return out


def yes_no_table(backend: str, doc: Mapping[str, Any], source: str, stage: str, published: Mapping[str, Any]) -> str:
    """Tables 1-3: the yes/no settings, racist / sexist / overall rows."""
    rows = []
    for setting in YES_NO:
        paper = _paper(published, PAPER_TABLES[setting])
        for variant, d in ((doc.get("by_setting") or {}).get(setting) or {}).items():
            for category in ("racist", "sexist", "overall"):
                m = (d.get("by_category") or {}).get(category)
                if m is None:  # not asked in this run: the paper's figures alone
                    tds = ['<td class="missing">–</td>'] * 6 + [_paper_td(paper, category, metric) for metric in METRICS]
                    rows.append(
                        f'<tr><td class="rowhead">{escape(SETTING_NAMES[setting])}</td><td class="rowhead">{escape(variant)}</td>'
                        f'<td class="rowhead">{escape(CATEGORY_NAMES[category])} (not run)</td>{"".join(tds)}</tr>'
                    )
                    continue
                cid = lambda *p: cell_id("llm", backend, setting, variant, category, *p)  # noqa: E731
                tds = [
                    json_td(m.get("n"), cid("n"), source, stage, 0),
                    json_td(m.get("unparsed_share"), cid("unparsed_share"), source, stage, 1, f", {m.get('unparsed')} unparsed"),
                ]
                tds += [_ms(m, metric, cid(metric), source, stage) for metric in METRICS]
                tds += [_paper_td(paper, category, metric) for metric in METRICS]
                rows.append(
                    f'<tr><td class="rowhead">{escape(SETTING_NAMES[setting])}</td><td class="rowhead">{escape(variant)}</td>'
                    f'<td class="rowhead">{escape(CATEGORY_NAMES[category])}</td>{"".join(tds)}</tr>'
                )
    if not rows:
        return ""
    head = ["setting", "variant", "category", "answers", "unparsed %", *METRICS, *(f"{m} (paper)" for m in METRICS)]
    checks = overall_check(published)
    note = ""
    if checks:
        computed = ", ".join(f"{c['f1_authors_code']:.1f}" for c in checks)
        parts = "; ".join(
            f"{SETTING_NAMES[c['setting']]} (Table {c['table'][-1]}): printed {c['printed_f1']}, "
            f"2PR/(P+R) from its printed P {c['precision']} and R {c['recall']} = {c['f1_from_pr']:.1f}, "
            f"racist / sexist F1 {c['category_f1'][0]} / {c['category_f1'][1]}"
            for c in checks
        )
        note = (
            "<p class='note'><b>The paper's Overall rows are not consistent with its category rows:</b> the Overall F1 does not "
            f"follow from the Overall precision and recall printed beside it ({escape(parts)}). Each printed value equals "
            f"2·P·R<sub>sexism</sub>/(P+R) ({computed}): the authors' "
            "<code>paper.Rmd</code> computes the overall F1 with the sexism recall in the numerator. Our overall row is the "
            "racist and sexist prompts pooled per iteration, F1 from its own precision and recall (computed here from "
            "<code>published.yaml</code>, not typed in).</p>"
        )
    return (
        "<h4>Tables 1–3: zero-shot, one-shot, single-category few-shot (yes/no; first word parsed, other answers "
        "counted and omitted)</h4>" + html_table(f"llm-ethos-{backend}", head, rows) + note
    )


def _per_set(block: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per example set: the counts of its iterations (``<set>`` or
    ``<set>.<repeat>``) summed, the metrics from the summed counts."""
    sums: dict[str, dict[str, int]] = {}
    for it, c in (block.get("per_iteration") or {}).items():
        s = sums.setdefault(str(it).split(".")[0], dict.fromkeys(COUNTS, 0))
        for k in COUNTS:
            s[k] += c.get(k, 0)
    return {
        k: {**metrics_from_counts(*(v[c] for c in COUNTS)), **v}
        for k, v in sorted(sums.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0)
    }


def set_label(key: str, sets: Mapping[str, Any] | None) -> str:
    """What example set ``key`` is, from the ethos_sets stage's report: the
    paper's set, the paper's set with comments not found in ETHOS (built
    from the ones found), or not the paper's (redraw).

    >>> sets = {"source": "paper", "sets": {"1": {"paper_set": True, "not_found": []},
    ...         "2": {"paper_set": True, "not_found": ["racist"]}}}
    >>> set_label("1", sets), set_label("2", sets)
    ("1 (the paper's set)", "2 (the paper's set; NOT FOUND in ETHOS: its racist example; built from the 2 examples found)")
    >>> set_label("1", {"source": "redraw", "sets": {"1": {"paper_set": False, "not_found": []}}})
    "1 (redraw: not the paper's set 1)"
    """
    if not sets:
        return key
    info = (sets.get("sets") or {}).get(key)
    if sets.get("source") == "redraw":
        return f"{key} (redraw: not the paper's set {key})"
    if info is None or not info.get("paper_set"):
        return f"{key} (not one of the paper's sets)"
    missing = info.get("not_found") or []
    if not missing:
        return f"{key} (the paper's set)"
    return (
        f"{key} (the paper's set; NOT FOUND in ETHOS: its {' and '.join(missing)} example"
        f"{'s' if len(missing) > 1 else ''}; built from the {3 - len(missing)} example{'s' if 3 - len(missing) != 1 else ''} found)"
    )


def sets_note(sets: Mapping[str, Any] | None, file: str = "") -> str:
    """One line above Tables 4 and 7: where the example sets come from and
    which of the paper's comments were not found."""
    if not sets:
        return ""
    where = f" (<code>{escape(file)}</code>)" if file else ""
    if sets.get("source") == "redraw":
        return (
            f"<p class='note'>Example sets: a seeded redraw (<code>llm.ethos.example_source: redraw</code>){where}; "
            "set i is <b>not</b> the paper's set i.</p>"
        )
    counts = sets.get("match_counts") or {}
    found = ", ".join(f"{counts[k]} {k}" for k in ("exact", "normalised", "fuzzy") if counts.get(k))
    missing = sets.get("not_found") or []
    line = (
        f"<p class='note'>Example sets: the paper's (Appendix A, Table 8), each comment found in the ETHOS table by "
        f"its text{where}: {found} (fuzzy: difflib ratio of the normalised texts ≥ {sets.get('fuzzy_threshold')})."
    )
    if missing:
        line += (
            " <b>Not found:</b> "
            + "; ".join(f"set {m['set']} {escape(m['pool'])}: ‘{escape(m['paper_text'][:80])}’" for m in missing)
            + " (their sets are built from the comments found)."
        )
    return line + "</p>"


def mixed_table(
    backend: str,
    setting: str,
    doc: Mapping[str, Any],
    source: str,
    stage: str,
    published: Mapping[str, Any],
    set_info: Mapping[str, Any] | None = None,
    sets_file: str = "",
) -> str:
    """Table 4 (no instruction) or 7 (with instruction): per example set and
    the "All" row (pooled counts), racist and sexist, ours next to GPT-3's;
    each set's row says what the set is (``set_info``: the ethos_sets stage's
    report, :func:`set_label`)."""
    paper = _paper(published, PAPER_TABLES[setting])
    out = ""
    for variant, d in ((doc.get("by_setting") or {}).get(setting) or {}).items():
        m = (d.get("by_category") or {}).get(setting)
        if not m:
            continue
        rows = []
        by_class = m.get("by_class") or {}
        # every example set of ours or the paper's (a set we did not run shows the paper's figures alone)
        theirs = {r.split(":")[0] for r, _ in paper if not r.startswith("all:")}
        sets = sorted({k for b in by_class.values() for k in _per_set(b)} | theirs, key=lambda k: int(k) if k.isdigit() else 0)
        for key in [*sets, "all", "mean"]:
            for category in ("racist", "sexist"):
                b = by_class.get(category) or {}
                cid = lambda *p: cell_id("llm", backend, setting, variant, key, category, *p)  # noqa: E731
                if key == "mean":
                    tds = ["<td></td>"] + [_ms(b, metric, cid(metric), source, stage) for metric in METRICS]
                    tds += ['<td class="missing">–</td>'] * 4
                else:
                    fig = b.get("pooled") if key == "all" else _per_set(b).get(key)
                    if fig is None:
                        tds = ['<td class="missing">–</td>'] * 5 + [_paper_td(paper, f"{key}:{category}", metric) for metric in METRICS]
                        rows.append(
                            f'<tr><td class="rowhead">{escape(set_label(key, set_info))} (not run)</td><td class="rowhead">{category}</td>{"".join(tds)}</tr>'
                        )
                        continue
                    n = sum(fig.get(k, 0) for k in COUNTS)
                    counts = f", TP {fig['tp']} FP {fig['fp']} FN {fig['fn']} TN {fig['tn']}"
                    tds = [json_td(n, cid("n"), source, stage, 0, counts)]
                    tds += [
                        json_td(
                            None if fig.get(metric) is None else float(fig[metric]),
                            cid(metric),
                            source,
                            stage,
                            1,
                            counts,
                            undefined=(fig.get("undefined") or {}).get(metric, NO_CASES),
                        )
                        for metric in METRICS
                    ]
                    tds += [_paper_td(paper, f"{key}:{category}", metric) for metric in METRICS]
                label = {"all": "All", "mean": "mean ± sd over sets"}.get(key) or set_label(key, set_info)
                rows.append(f'<tr><td class="rowhead">{escape(label)}</td><td class="rowhead">{category}</td>{"".join(tds)}</tr>')
        head = ["example set", "category", "answers scored", *METRICS, *(f"{x} (paper)" for x in METRICS)]
        cid = lambda *p: cell_id("llm", backend, setting, variant, setting, *p)  # noqa: E731
        share = (m.get("accuracy") or {}).get("mean")
        out += (
            f"<h5>{escape(variant)}: {m.get('n')} answers, {json_span(m.get('omitted'), cid('omitted'), source, stage)} omitted, "
            f"{json_span(m.get('out_of_scope'), cid('out_of_scope'), source, stage)} out of scope (neither racist, "
            "sexist nor neither); "
            f"answers naming exactly the comment's class (Figure 1): {json_span(share, cid('accuracy'), source, stage)}% "
            "(mean over sets)</h5>" + html_table(f"llm-{setting.replace('_', '-')}-{backend}-{variant}", head, rows)
        )
    if not out:
        return ""
    number = 4 if setting == "mixed" else 7
    return (
        f"<h4>Table {number}: {escape(SETTING_NAMES[setting])}, per example set</h4><p class='note'>{escape(MIXED_RULE)}</p>"
        + sets_note(set_info, sets_file)
        + out
    )


def json_span(value: Any, cid: str, source: str, stage: str) -> str:
    """An inline figure with its provenance (a one-cell table would break the sentence)."""
    return json_td(value, cid, source, stage, 1).replace("<td", "<span", 1).replace("</td>", "</span>")


def answers_table(backend: str, doc: Mapping[str, Any], source: str, stage: str, published: Mapping[str, Any]) -> str:
    """Table 5: the distinct answers of the mixed setting (no instruction)
    with their counts (counted from the stage's answers file when it scored
    them), each marked in or out of scope (section 4.4), beside the paper's
    list of 143."""
    entry = published.get("gpt3_detection_t5") or {}
    theirs = {answer_key(a) for a in entry.get("answers") or []}
    paper = _paper(published, "gpt3_detection_t5")
    out = ""
    for variant, d in ((doc.get("by_setting") or {}).get("mixed") or {}).items():
        m = (d.get("by_category") or {}).get("mixed") or {}
        answers = m.get("answers") or {}
        rows = []
        for answer, count in answers.items():
            cid = cell_id("llm", backend, "mixed", variant, "answers", answer or "(empty)")
            rows.append(
                f'<tr><td class="rowhead">{escape(answer or "(empty)")}</td>{json_td(count, cid, source, stage, 0)}'
                f"<td>{'in scope' if answer in MIXED_CLASSES else 'out of scope'}</td>"
                f"<td>{'yes' if answer in theirs else 'no'}</td></tr>"
            )
        count_cid = cell_id("llm", backend, "mixed", variant, "answers", "distinct")
        oos = cell_id("llm", backend, "mixed", variant, "mixed", "out_of_scope")
        note = f"<p class='note'>{escape(CONSTRAINED_NOTE)}.</p>" if variant == "constrained" else ""
        out += (
            f"<h5>{escape(variant)}: {json_span(len(answers), count_cid, source, stage)} distinct answers, "
            f"{json_span(m.get('out_of_scope'), oos, source, stage)} of {m.get('n')} answers out of scope "
            f"(GPT-3: {_paper_td(paper, 'distinct', 'answers').replace('<td', '<span', 1).replace('</td>', '</span>')} "
            "distinct answers)</h5>"
            + note
            + html_table(f"llm-t5-{backend}-{variant}", ["answer", "count", "section 4.4", "in the paper's Table 5"], rows)
        )
    if not out:
        return ""
    listed = " | ".join(escape(a) for a in entry.get("answers") or [])
    return (
        "<h4>Table 5: distinct answers, mixed-category few-shot without instruction</h4>"
        f"<p class='note'>Every answer of the stage's answers file (<code>{escape(paths.llm_answers(backend))}</code>), "
        "lower-cased, whitespace collapsed, surrounding quotes and final full stops stripped, with its count. Out of "
        "scope (section 4.4): anything but racist, sexist or neither; such answers are counted and scored by the "
        "contains rule above, never dropped. The paper prints its list without counts.</p>"
        + out
        + f"<details><summary>The paper's Table 5 ({escape(entry.get('source', ''))})</summary><p>{listed}</p></details>"
    )


CONTRAST_ROWS = (
    ("n", "answers", None),
    ("distinct", "distinct answers", "distinct"),
    ("out_of_scope", "out of scope (count)", "out_of_scope"),
    ("out_of_scope_share", "out of scope (%)", None),
    ("omitted", "omitted (both / racist and sexist)", None),
    ("correct_share", "naming exactly the comment's class (%, Figure 1, mean over sets)", "correct_share"),
    ("f1_racist", "racist F1, All row", None),
    ("f1_sexist", "sexist F1, All row", None),
)


def contrast_table(backend: str, doc: Mapping[str, Any], source: str, stage: str, published: Mapping[str, Any]) -> str:
    """Section 4.5: the mixed settings without and with the instruction,
    computed on this run's answers (``instruction_contrast`` of the metrics),
    GPT-3's figures beside them (``gpt3_detection_s45``; the All rows' F1
    are in Tables 4 and 7)."""
    paper = _paper(published, "gpt3_detection_s45")
    out = ""
    for variant, c in (doc.get("instruction_contrast") or {}).items():
        rows = []
        for key, label, theirs in CONTRAST_ROWS:
            tds = []
            for side, setting in (("without", "mixed"), ("with", "mixed_instruction")):
                digits = 0 if key in ("n", "distinct", "out_of_scope", "omitted") else 1
                tds.append(
                    json_td((c.get(side) or {}).get(key), cell_id("llm", backend, "contrast", variant, side, key), source, stage, digits)
                )
                tds.append(_paper_td(paper, setting, theirs) if theirs else '<td class="missing">–</td>')
            change = (c.get("change") or {}).get(key)
            tds.append(
                json_td(change, cell_id("llm", backend, "contrast", variant, "change", key), source, stage, 1)
                if key in (c.get("change") or {})
                else '<td class="missing">–</td>'
            )
            rows.append(f'<tr><td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
        head = ["", "without", "without (paper)", "with", "with (paper)", "with − without"]
        note = f"<p class='note'>{escape(CONSTRAINED_NOTE)}.</p>" if variant == "constrained" else ""
        out += f"<h5>{escape(variant)}</h5>{note}" + html_table(f"llm-contrast-{backend}-{variant}", head, rows)
    if not out:
        return ""
    return (
        "<h4>Section 4.5: mixed-category few-shot without and with the instruction</h4>"
        "<p class='note'>The same comments and example sets answered without and with the instruction line, on this "
        "run's answers. The paper: the instruction cut the out-of-scope answers from 143 distinct answers to three "
        "answers ('both' twice, 'racist and sexist' once, omitted) and raised the share of answers matching the label "
        "(Figure 1); its counts are over two runs of the prompts with the instruction (Table 6's 4,800 answers).</p>" + out
    )


def confusion_table(backend: str, doc: Mapping[str, Any], source: str, stage: str, published: Mapping[str, Any]) -> str:
    """Table 6: comment label x answer of the mixed setting with instruction
    (every answer, the omitted ones included), ours next to GPT-3's."""
    paper = _paper(published, "gpt3_detection_t6")
    out = ""
    for variant, d in ((doc.get("by_setting") or {}).get("mixed_instruction") or {}).items():
        m = (d.get("by_category") or {}).get("mixed_instruction") or {}
        confusion = m.get("confusion") or {}
        rows = []
        for label in ("neither", "racist", "sexist"):
            got = confusion.get(label) or {}
            cols = {a: got.get(a, 0) for a in T6_ANSWERS}
            cols["other"] = sum(v for a, v in got.items() if a not in T6_ANSWERS)
            tds = []
            for a, v in cols.items():
                tds.append(json_td(v, cell_id("llm", backend, "mixed_instruction", variant, "confusion", label, a), source, stage, 0))
                tds.append(_paper_td(paper, label, a) if a != "other" else '<td class="missing">–</td>')
            rows.append(f'<tr><td class="rowhead">{label}</td>{"".join(tds)}</tr>')
        head = ["label \\ answer", *(x for a in (*T6_ANSWERS, "other") for x in (a, f"{a} (paper)"))]
        out += f"<h5>{escape(variant)}</h5>" + html_table(f"llm-t6-{backend}-{variant}", head, rows)
    if not out:
        return ""
    return (
        "<h4>Table 6: mixed-category few-shot with instruction, comment label × answer (counts)</h4>"
        "<p class='note'>The paper's counts are 4,800 answers (two runs of the 10 × 240 prompts); ours are this run's.</p>" + out
    )


APPB_COUNTS = ("tn", "fp", "fn", "tp")
APPB_NAMES = {"tn": "TN", "fp": "FP", "fn": "FN", "tp": "TP"}


def appendix_b_table(backend: str, doc: Mapping[str, Any], source: str, stage: str, published: Mapping[str, Any]) -> str:
    """Appendix B: confusion counts per setting and category summed over the
    iterations (the mixed settings' All rows, then per example set), ours
    next to GPT-3's (``gpt3_detection_appb``)."""
    appb = doc.get("appendix_b")
    if appb is None:
        return (
            (
                "<h4>Appendix B: confusion counts per setting</h4><p class='fail'>This metrics file predates the confusion "
                "counts (no <code>appendix_b</code>): re-run its llm_ethos stage.</p>"
            )
            if doc.get("by_setting")
            else ""
        )
    paper = _paper(published, APPENDIX_B)
    rows, per_set = [], []
    for setting in (*YES_NO, *MIXED):
        for variant, cats in (appb.get(setting) or {}).items():
            for category, block in cats.items():
                parts = [("all", block.get("all") or {})]
                parts += [(k, v) for k, v in (block.get("by_example_set") or {}).items()]
                for key, counts in parts:
                    prow = f"{setting}:{category}" if setting in YES_NO else f"{setting}:{key}:{category}"
                    cid = lambda k: cell_id("llm", backend, setting, variant, "appendix_b", category, key, k)  # noqa: E731
                    tds = [json_td(counts.get("n"), cid("n"), source, stage, 0)]
                    tds += [json_td(counts.get(k), cid(k), source, stage, 0) for k in APPB_COUNTS]
                    tds += [published_cell(APPENDIX_B, "GPT-3", prow, k, *paper.get((prow, k), (None, "", ""))[::2]) for k in APPB_COUNTS]
                    label = CATEGORY_NAMES.get(category, category) if key == "all" else f"{category}, example set {key}"
                    if setting in MIXED and key == "all":
                        label += ", All"
                    row = (
                        f'<tr><td class="rowhead">{escape(SETTING_NAMES[setting])}</td><td class="rowhead">{escape(variant)}</td>'
                        f'<td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>'
                    )
                    (rows if key == "all" else per_set).append(row)
    if not rows:
        return ""
    head = [
        "setting",
        "variant",
        "category",
        "answers scored",
        *(APPB_NAMES[k] for k in APPB_COUNTS),
        *(f"{APPB_NAMES[k]} (paper)" for k in APPB_COUNTS),
    ]
    out = (
        "<h4>Appendix B: confusion counts per setting (summed over iterations)</h4>"
        "<p class='note'>Tables 9–21 of the paper: per setting and category the answers' true negatives, false positives, "
        "false negatives and true positives summed over every iteration (the paper: 6,000 classifications per category in the "
        "yes/no settings, 'not applicable' answers omitted; ours: the parsed answers, the unparsed ones omitted). The "
        "overall rows are the paper's 'hate speech' tables (racist and sexist prompts pooled). Mixed settings: category c "
        "over the comments labelled c or neither (section 4.4's rule), the All row over every example set. Our counts are "
        "this run's iterations and prompts, so they compare with the paper's as proportions, not as totals.</p>"
        + html_table(f"llm-appb-{backend}", head, rows)
    )
    if per_set:
        out += (
            "<details><summary>Mixed settings per example set (Tables 18–21)</summary>"
            + html_table(f"llm-appb-sets-{backend}", head, per_set)
            + "</details>"
        )
    return out


def llm_section(
    docs: Mapping[str, Mapping[str, Any] | None],
    files: Mapping[str, str],
    published: Mapping[str, Any] | None = None,
    misspelling: Mapping[str, Any] | None = None,
    sets: Mapping[str, Any] | None = None,
) -> str:
    """The ETHOS tables of every configured backend (Tables 1-7 of the
    paper) and the misspelling test (section 5, Table 23); ``sets``: the
    ethos_sets stage's report ({"doc", "file"}), which example sets ran."""
    sets_doc = ((sets or {}).get("doc") or {}).get("examples")
    sets_file = (sets or {}).get("file", "")
    published = P.load() if published is None else published
    out = (
        "<p class='note'>Prompted LLMs as classifiers on the ETHOS evaluation sets of Chiu et al. (2022): "
        "accuracy, precision, recall and F1 of the category asked about (percent; mean ± sample sd over iterations, "
        "the spread the paper prints in its 'Standard Error' column: its code divides the sd by sqrt(n()) with n() = 1). "
        "<b>free</b> = generated text, parsed; <b>constrained</b> = the allowed answer with the highest log-probability. "
        "Paper figures (GPT-3 davinci, temperature 0.3) in italics. <b>n/a</b>: the figure is undefined, its denominator "
        "zero (recall with no gold positive among the prompts scored, precision with no positive answer; the tooltip "
        "says which); it is left out of every mean, never counted as 0.</p>"
    )
    for backend, doc in docs.items():
        source, stage = files.get(backend, ""), f"llm_ethos_{backend}"
        if doc is None:
            out += f"<h3>{escape(backend)}</h3><p class='fail'>not run (no {escape(source)})</p>"
            continue
        who = doc.get("stand_in") or doc.get("model")
        out += f"<h3>{escape(backend)}: {escape(str(who))}</h3>"
        if doc.get("stand_in"):
            out += (
                f"<p class='note'><b>Stand-in, not the paper's model:</b> {escape(doc['stand_in'])}; its figures sit next to "
                "GPT-3's for orientation only.</p>"
            )
        out += (
            f"<p class='note'>{doc.get('answers')} answers to {doc.get('prompts')} prompts in {doc.get('seconds')} s "
            f"({doc.get('prompts_per_second')} answers/s, {doc.get('threads')} threads); mixed example sets: "
            f"{doc.get('example_sets') or 'all'}; prompts per setting: {doc.get('max_prompts_per_setting') or 'all'}.</p>"
        )
        out += yes_no_table(backend, doc, source, stage, published)
        for setting in MIXED:
            out += mixed_table(backend, setting, doc, source, stage, published, sets_doc, sets_file)
        out += answers_table(backend, doc, source, stage, published)
        out += contrast_table(backend, doc, source, stage, published)
        out += confusion_table(backend, doc, source, stage, published)
        out += appendix_b_table(backend, doc, source, stage, published)
    if misspelling:
        from hatecheck_pipeline.report.llm_misspelling import misspelling_section

        out += misspelling_section(misspelling["docs"], misspelling["files"], published)
    return out


def prompted_card(spec: Mapping[str, Any], backends: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What the models table shows for an ``llm`` model (it has no training
    stage and so no model card): its backend's model, stand-in and prompt.

    >>> card = prompted_card({"kind": "llm", "backend": "b", "template": "suite_zero_shot", "prompt_language": "suite"},
    ...                      {"b": {"model": "pkg:x", "stand_in": "a small LM"}})
    >>> card["base_model"]["stand_in"], card["budget_note"]
    ('a small LM', "no training: prompted with suite_zero_shot_<language>, the instruction in each suite's language")
    """
    backend = backends.get(spec["backend"], {})
    where = "the instruction in English" if spec["prompt_language"] == "english" else "the instruction in each suite's language"
    return {
        "base_model": {
            "ref": backend.get("model", spec["backend"]),
            "description": f"{spec['backend']}: {backend.get('model', 'backend not configured')} (prompted LLM)",
            "stand_in": backend.get("stand_in"),
        },
        "budget_note": f"no training: prompted with {spec['template']}_<language>, {where}",
    }


def functional_llm_section(
    models: Mapping[str, Mapping[str, Any]], hatecheck_t2, mhc_t7, below_mark: float, max_ci_width: float | None = None
) -> str:
    """The ``llm`` model kind on the functional suites: HateCheck accuracy
    and MHC macro F1 per language, one column per prompted model (an
    English instruction next to the suite's own language: zero-shot
    prompting either way, the model was never trained on the task). Cells
    are the HateCheck / MHC tables' cells, with their lineage; a capped
    profile's are on a handful of cases, so a cell whose interval is wider
    than ``max_ci_width`` points is marked too few cases to compare."""
    import polars as pl

    from hatecheck_pipeline.report.cells import pivot

    if not models:
        return ""
    names = list(models)
    langs = ", ".join(f"{m}: {'English' if s['prompt_language'] == 'english' else 'each suite’s language'}" for m, s in models.items())
    out = (
        "<h3>Functional tests of prompted LLMs (the <code>llm</code> model kind)</h3>"
        f"<p class='note'>Every case asked as a yes/no question (instruction language — {escape(langs)}); "
        "p(hateful) is the probability of the yes answer among yes/no (a local model's constrained variant) or the "
        "parsed answer (an endpoint). Scored by the same stages as the fine-tuned models; their per-functionality "
        "accuracy is in the HateCheck and MHC tables above.</p>"
    )
    hc = hatecheck_t2.filter(pl.col("model").is_in(names) & (pl.col("row") == "total"))
    if not hc.is_empty():
        out += "<h4>HateCheck accuracy (%)</h4>" + pivot(hc, "llm-hatecheck", "row", "model", below_mark, max_ci_width=max_ci_width)
    mhc = mhc_t7.filter(pl.col("model").is_in(names))
    if not mhc.is_empty():
        out += "<h4>MHC macro F1 per language, by instruction language</h4>" + pivot(
            mhc, "llm-mhc", "row", "model", None, max_ci_width=max_ci_width
        )
    return out
