"""The prompted-LLM page of the generated documentation: the ETHOS figures
of each prompted backend (GPT-3 detection paper, Tables 1-4 and 7, the
distinct answers of Table 5, section 4.5's contrast and Appendix B's
confusion counts) and
GPT-HateCheck's generation, validation, quality (Table 6) and the
fine-tuned models on it (Table 9), with the papers' figures beside ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.llm_answers import APPENDIX_B, MIXED_CLASSES
from hatecheck_pipeline.docsite import runs
from hatecheck_pipeline.report.cells import NA
from hatecheck_pipeline.docsite.formatting import md_table, num, paper_figure, path_cell, read_json, page
from hatecheck_pipeline.report.llm import APPB_COUNTS, APPB_NAMES, CATEGORY_NAMES, CONTRAST_ROWS, MIXED, SETTING_NAMES, YES_NO

ETHOS_BINARY = ("racist", "sexist", "overall")


def _mean(section: Mapping[str, Any] | None, metric: str) -> float | None:
    fig = (section or {}).get(metric)
    return fig.get("mean") if isinstance(fig, Mapping) else fig


def _with_paper(value: float | None, paper: float | None) -> str:
    return num(value) + ("" if paper is None else f" ({num(paper, 0)})")


def ethos_table(rel: str, doc: Mapping[str, Any], published: Mapping[str, Any]) -> str:
    """One backend's ETHOS figures per setting and variant: F1 and accuracy
    of the yes/no settings (mean over iterations), and of the mixed settings
    per category by the paper's rule (section 4.4, pooled), the paper's
    figure in brackets."""
    tables = doc.get("paper_tables") or {}
    rows = []
    for setting, variants in (doc.get("by_setting") or {}).items():
        table = tables.get(setting, "")
        for variant, scored in variants.items():
            cats = scored.get("by_category") or {}
            cells = []
            for cat in ETHOS_BINARY:
                if cat in cats:
                    f1, acc, row = _mean(cats[cat], "f1"), _mean(cats[cat], "accuracy"), cat
                    pooled = None
                else:  # a mixed setting: the paper's 'All' row of the category
                    mixed = next((cats[k] for k in ("mixed", "mixed_instruction") if k in cats), None)
                    pooled = ((mixed or {}).get("by_class") or {}).get(cat, {}).get("pooled") if cat != "overall" else None
                    f1, acc, row = (pooled or {}).get("f1"), (pooled or {}).get("accuracy"), f"all:{cat}"
                paper_f1, _ = paper_figure((table,), "GPT-3", row, "f1", published)
                paper_acc, _ = paper_figure((table,), "GPT-3", row, "accuracy", published)
                scored_here = cat in cats or pooled is not None
                f1_text = _with_paper(f1, paper_f1) if f1 is not None else NA + ("" if paper_f1 is None else f" ({num(paper_f1, 0)})")
                cells.append(f"{f1_text} / {_with_paper(acc, paper_acc)}" if scored_here else "–")
            unparsed = [c.get("unparsed_share") for c in cats.values() if c.get("unparsed_share") is not None]
            n = sum(c.get("n", 0) for k, c in cats.items() if k != "overall")
            rows.append(
                [
                    setting,
                    variant,
                    f"{n:,}",
                    *cells,
                    num(max(unparsed)) if unparsed else "–",
                    f"`{table}`" if table else "–",
                    path_cell(rel),
                ]
            )
    return md_table(
        [
            "setting",
            "variant",
            "answers",
            "racist F1 / acc.",
            "sexist F1 / acc.",
            "overall F1 / acc.",
            "answers left out %",
            "paper table",
            "source",
        ],
        rows,
    )


def answers_md(doc: Mapping[str, Any], published: Mapping[str, Any]) -> str:
    """Table 5: the distinct answers of the mixed setting without the
    instruction, each with its count and whether it is in scope (section
    4.4), per variant; GPT-3's count of distinct answers beside it."""
    theirs, _ = paper_figure(("gpt3_detection_t5",), "GPT-3", "distinct", "answers", published)
    parts = []
    for variant, d in ((doc.get("by_setting") or {}).get("mixed") or {}).items():
        m = (d.get("by_category") or {}).get("mixed") or {}
        answers = m.get("answers") or {}
        if not answers:
            continue
        rows = [[f"`{a or '(empty)'}`", f"{count:,}", "in scope" if a in MIXED_CLASSES else "out of scope"] for a, count in answers.items()]
        parts.append(
            f"Variant `{variant}`: {len(answers)} distinct answers, {m.get('out_of_scope')} of {m.get('n')} out of "
            f"scope (GPT-3: {num(theirs, 0)} distinct answers).\n\n" + md_table(["answer", "count", "section 4.4"], rows)
        )
    return "\n\n".join(parts)


def contrast_md(doc: Mapping[str, Any], published: Mapping[str, Any]) -> str:
    """Section 4.5: the mixed settings without and with the instruction on
    this run's answers, GPT-3's figures in brackets where the paper gives
    them."""
    parts = []
    for variant, c in (doc.get("instruction_contrast") or {}).items():
        rows = []
        for key, label, theirs in CONTRAST_ROWS:
            cells = []
            for side, setting in (("without", "mixed"), ("with", "mixed_instruction")):
                paper = paper_figure(("gpt3_detection_s45",), "GPT-3", setting, theirs, published)[0] if theirs else None
                digits = 0 if key in ("n", "distinct", "out_of_scope", "omitted") else 1
                cells.append(num((c.get(side) or {}).get(key), digits) + ("" if paper is None else f" ({num(paper, digits)})"))
            change = (c.get("change") or {}).get(key)
            rows.append([label, *cells, num(change, digits) if key in (c.get("change") or {}) else "–"])
        parts.append(f"Variant `{variant}`:\n\n" + md_table(["", "without", "with", "with − without"], rows))
    return "\n\n".join(parts)


def appendix_b_md(doc: Mapping[str, Any], published: Mapping[str, Any]) -> str:
    """Appendix B (Tables 9-21): per setting, variant and category the
    answers' confusion counts summed over the iterations (the metrics
    file's ``appendix_b``), GPT-3's count in brackets; the mixed settings'
    All rows in the first table, their example sets in a second. A metrics
    file without the counts says so."""
    appb = doc.get("appendix_b")
    if appb is None:
        return (
            "Not in this record: this metrics file has no confusion counts (`appendix_b`): its llm_ethos stage ran "
            "before they were written."
            if doc.get("by_setting")
            else ""
        )
    rows, per_set = [], []
    for setting in (*YES_NO, *MIXED):
        for variant, cats in (appb.get(setting) or {}).items():
            for category, block in cats.items():
                parts = [("all", block.get("all") or {}), *(block.get("by_example_set") or {}).items()]
                for key, counts in parts:
                    prow = f"{setting}:{category}" if setting in YES_NO else f"{setting}:{key}:{category}"
                    cells = []
                    for k in APPB_COUNTS:
                        paper, _ = paper_figure((APPENDIX_B,), "GPT-3", prow, k, published)
                        cells.append(num(counts.get(k), 0) + ("" if paper is None else f" ({num(paper, 0)})"))
                    label = CATEGORY_NAMES.get(category, category) if key == "all" else f"{category}, example set {key}"
                    if setting in MIXED and key == "all":
                        label += ", All"
                    (rows if key == "all" else per_set).append(
                        [SETTING_NAMES.get(setting, setting), variant, label, num(counts.get("n"), 0), *cells]
                    )
    if not rows:
        return ""
    head = ["setting", "variant", "category", "answers scored", *(APPB_NAMES[k] for k in APPB_COUNTS)]
    out = (
        "Counts summed over every iteration; GPT-3's in brackets (Chiu et al. 2022, Appendix B: 6,000 classifications per "
        "category in the yes/no settings, 'not applicable' answers omitted; ours: the parsed answers, the unparsed ones "
        "omitted). The overall rows are the paper's 'hate speech' tables (racist and sexist prompts pooled); mixed "
        "settings: category c over the comments labelled c or neither (section 4.4's rule), the All row over every example "
        "set. **Deviation:** our counts are this run's iterations and prompts (a seeded sample unless the run says the "
        "whole protocol), so they compare with the paper's as proportions, not as totals; with the instruction the "
        "omitted answers ('both', 'racist and sexist') are left out of ours, while the paper's Tables 20-21 count 180 "
        "answers per example set.\n\n" + md_table(head, rows)
    )
    if per_set:
        out += "\n\nThe mixed settings per example set (Tables 18-21):\n\n" + md_table(head, per_set)
    return out


def ethos_record_page(source: Path) -> str:
    """The ETHOS table of one prompted-LLM metrics file kept as a benchmark
    record (``benchmarks/records/local_llm_whole_protocol_*.json``)."""
    return ethos_table(Path(source).as_posix(), read_json(Path(source)), P.load()) + "\n"


def ethos_section(record: Path, published: Mapping[str, Any]) -> str:
    parts = []
    for path in sorted(record.glob("results/llm/*/metrics.json")):
        rel, doc = path.relative_to(record).as_posix(), read_json(path)
        scope = (
            "the whole protocol"
            if doc.get("complete")
            else (
                f"a seeded sample: {doc.get('max_prompts_per_setting')} prompts per setting, {doc.get('example_sets')} mixed example set(s)"
            )
        )
        parts.append(
            f"#### Backend `{doc.get('backend')}`: {doc.get('model')}\n\n"
            f"{doc.get('stand_in') or 'the paper model'}; {doc.get('prompts', 0):,} prompts, {doc.get('answers', 0):,} answers "
            f"in {num(doc.get('seconds'), 0)} s; {scope}.\n\n"
            + ethos_table(rel, doc, published)
            + "".join(
                f"\n\n##### {title}\n\n{body}"
                for title, body in (
                    ("Table 5: distinct answers, mixed-category few-shot without instruction", answers_md(doc, published)),
                    ("Section 4.5: mixed-category few-shot without and with the instruction", contrast_md(doc, published)),
                    ("Appendix B: confusion counts per setting (summed over iterations)", appendix_b_md(doc, published)),
                )
                if body
            )
        )
    if not parts:
        return "No prompted-LLM run in this record."
    return (
        "In percent; GPT-3's figure in brackets (Chiu et al. 2022; mixed settings: the 'All' row of Tables 4 / 7, "
        "category c scored over the comments labelled c or neither). A stand-in is not GPT-3: compare shapes, "
        "not levels.\n\n" + "\n\n".join(parts)
    )


QUALITY = ("self_bleu_2", "self_bleu_3", "self_bleu_4", "perplexity")


def _quality_cell(value: float | None, paper: float | None, key: str) -> str:
    digits = 1 if key == "perplexity" else 3
    return ("–" if value is None else f"{value:.{digits}f}") + ("" if paper is None else f" ({paper})")


def gpt_hatecheck_section(record: Path, published: Mapping[str, Any]) -> str:
    parts = []
    for gen_path in sorted(record.glob("data/expanded/gpt_hatecheck_*/generation.json")):
        gen = read_json(gen_path)
        val_path = gen_path.with_name("validation.json")
        val = read_json(val_path) if val_path.is_file() else {}
        name = gen_path.parent.name
        rows = [
            ["generator", str(gen.get("generator")), path_cell(gen_path.relative_to(record).as_posix())],
            ["cells asked (of all)", f"{gen.get('cells')} (of {gen.get('cells_possible')})", "`generation.json`"],
            ["requests / bad outputs", f"{gen.get('requests')} / {gen.get('bad_outputs')}", "`generation.json`"],
            ["candidates", str(gen.get("candidates")), "`generation.json`"],
        ]
        if val:
            rows += [
                ["judge", str(val.get("judge")), path_cell(val_path.relative_to(record).as_posix())],
                [
                    "kept after the hypothesis tests (pass rate)",
                    f"{val.get('kept')} ({num(100 * val['pass_rate']) + '%' if val.get('pass_rate') is not None else '–'})",
                    "`validation.json`",
                ],
            ]
        paper = (published.get("gpt_hatecheck_t4") or {}).get("values", {}).get("GPT-3.5", {}).get("total", {})
        parts.append(
            f"#### `{name}`\n\n"
            + md_table(["", "figure", "source"], rows)
            + f"\n\nThe paper (Table 4, all 144 cells x 40): {paper.get('-Filter', '–')} candidates, "
            f"{paper.get('GPT-HC', '–')} kept."
        )
    quality = record / "data/expanded/reports/quality.json"
    if quality.is_file():
        doc = read_json(quality)
        paper = (published.get("gpt_hatecheck_t6") or {}).get("values", {})
        rows = []
        for suite, q in (doc.get("suites") or {}).items():
            ref = paper.get("HateCheck" if suite == "hatecheck" else "GPT-HateCheck", {}).get("all", {})
            rows.append([suite, str(q.get("cases", "–")), *[_quality_cell(q.get(k), ref.get(k), k) for k in QUALITY]])
        parts.append(
            "#### Diversity and fluency (GPT-HateCheck Table 6)\n\n"
            f"Perplexity under `{doc.get('lm')}` ({doc.get('lm_stand_in') or 'the paper LM'}); the paper's figure "
            "(gpt2-large) in brackets.\n\n"
            + md_table(["suite", "cases", "Self-BLEU-2", "Self-BLEU-3", "Self-BLEU-4", "perplexity"], rows)
            + f"\n\nSource: `{quality.relative_to(record).as_posix()}`."
        )
    compare = record / "data/expanded/reports/gpt_hatecheck_compare.json"
    if compare.is_file():
        rows = []
        for model, d in (read_json(compare).get("models") or {}).items():
            t9 = d.get("table9") or {}
            rows.append(
                [
                    model,
                    f"{d['cases']['HC']} / {d['cases']['GPT-HC']}",
                    str(d.get("functionalities_compared")),
                    *[
                        num((t9.get(s) or {}).get(lab, {}).get("mean_prediction"), 3)
                        for lab in ("hateful", "non-hateful")
                        for s in ("HC", "GPT-HC")
                    ],
                ]
            )
        parts.append(
            "#### The fine-tuned models on HateCheck (HC) and GPT-HateCheck (GPT-HC) (Table 9)\n\n"
            "Mean prediction (1 = hateful) on the cases each model predicted.\n\n"
            + md_table(
                [
                    "model",
                    "cases HC / GPT-HC",
                    "functionalities on both",
                    "hateful: HC",
                    "hateful: GPT-HC",
                    "non-hateful: HC",
                    "non-hateful: GPT-HC",
                ],
                rows,
            )
            + f"\n\nSource: `{compare.relative_to(record).as_posix()}`."
        )
    return "\n\n".join(parts) if parts else "No GPT-HateCheck run in this record."


def llm_page(record: Path, published: Mapping[str, Any] | None = None) -> str:
    record = Path(record)
    published = P.load() if published is None else published
    info = runs.load(record)
    return page(
        info,
        record,
        [
            "### Prompted LLM on ETHOS (GPT-3 detection paper, Tables 1-5 and 7, section 4.5, Appendix B)\n\n"
            + ethos_section(record, published),
            "### GPT-HateCheck (Jin et al. 2024): generation, validation, quality\n\n" + gpt_hatecheck_section(record, published),
        ],
    )
