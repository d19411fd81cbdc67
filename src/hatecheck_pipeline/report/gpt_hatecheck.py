"""The report's GPT-HateCheck section (Jin et al. 2024): who generated and
who judged (stand-ins named as such), Table 4 (candidates and kept cases
per target group), Figure 3 (pass rates per functionality over the target
groups, plotted), the bad outputs of the generator per functionality,
Table 6 (Self-BLEU, perplexity), Figure 4 and Tables 8-9 (the fine-tuned
models on HateCheck versus the generated suite), each next to the paper's
figures from ``published.yaml``. Every figure carries its provenance."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.cells import html_table, json_td, published_td
from hatecheck_pipeline.report.figures import figure, png

TARGET_ORDER = ["women", "trans people", "gay people", "black people", "disabled people", "Muslims", "immigrants", "none"]


def _paper(published: Mapping[str, Any], table: str, model: str) -> dict[tuple[str, str], tuple[float, str, str]]:
    return P.lookup(table, model, published)


def _ptd(paper: Mapping[tuple[str, str], tuple[float, str, str]], model: str, row: str, column: str) -> str:
    """The paper's figure as printed (counts whole, fractions with 3 digits)."""
    value, table, source = paper.get((row, column), (None, "", ""))
    cell = published_td(table, model, row, column, value, source)
    if value is None:
        return cell
    text = str(value) if isinstance(value, int) else (f"{value:.2f}" if value >= 10 else f"{value:.3f}")
    return cell.replace(f">{value:.1f}</td>", f">{text}</td>")


def pass_rate_plot(cells: list[Mapping[str, Any]], lowest: list[str]) -> str:
    """Figure 3: one box per functionality of its pass rates over the target
    groups (the points drawn over it; the paper's five lowest in red)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    funcs = sorted({c["functionality"] for c in cells}, key=lambda f: P.functionality_order(f, "hatecheck"))
    data = [[c["pass_rate"] for c in cells if c["functionality"] == f] for f in funcs]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(funcs) + 2), 3.2))
    ax.boxplot(data, showfliers=False)
    for i, vals in enumerate(data, start=1):
        ax.scatter([i] * len(vals), vals, s=10, color="#555", zorder=3)
    labels = [P.functionality_label(f, "hatecheck", short=True).split(":")[0] for f in funcs]
    ax.set_xticks(range(1, len(funcs) + 1), labels, fontsize=8)
    for tick, f in zip(ax.get_xticklabels(), funcs):
        if f in lowest:
            tick.set_color("#b00020")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("hypothesis-test pass rate")
    ax.set_title("Pass rate per functionality over the target groups (red: the paper's five lowest)")
    return png(fig)


def section(
    generation: Mapping[str, Any] | None,
    validation: Mapping[str, Any] | None,
    quality: Mapping[str, Any] | None,
    compare: Mapping[str, Any] | None,
    files: Mapping[str, str],
    published: Mapping[str, Any],
) -> str:
    """``files``: generation / validation / quality / compare -> the JSON
    each figure is read from (the stage that wrote it is named with it)."""
    stages = {
        "generation": "expand_llm_generate_english",
        "validation": "expand_llm_validate_english",
        "quality": "expand_quality",
        "compare": "gpt_hatecheck_compare",
    }
    if generation is None or validation is None:
        return (
            "<p class='note'>GPT-HateCheck has not run (<code>expansion.llm.enabled</code> is false, or its "
            "stages have not produced their reports).</p>"
        )
    out = []
    gen_src, val_src = files["generation"], files["validation"]
    complete = generation.get("complete")
    out.append(
        f"<p><b>Generator</b>: {escape(generation['generator'])}. <b>Judge</b>: {escape(validation['judge'])}. "
        "The paper: gpt-3.5-turbo-0613 generating, facebook/bart-large-mnli judging.</p>"
        f"<p class='note'>{generation['cells']} of the {generation['cells_possible']} (functionality, target group) cells "
        f"(a seeded draw: <code>max_cells</code> {generation.get('max_cells')}), {generation['n_per_cell']} messages asked per "
        f"cell (paper: 40), temperature {generation['temperature']}, at most {generation['max_requests_per_cell']} requests "
        f"per cell; {generation['queried']} requests asked, {generation['cached']} answered from the cache. "
        + (
            "This is the paper's full design."
            if complete
            else "A capped run: the paper generates all 144 cells at 40 messages each (<code>snakemake gpt_hatecheck_full</code>)."
        )
        + " A stand-in model's output says nothing about what GPT-3.5 or an NLI model would do.</p>"
    )

    # Table 4
    paper4 = _paper(published, "gpt_hatecheck_t4", "GPT-3.5")
    per_target = {r["target_ident"]: r for r in validation.get("per_target", [])}
    rows = []
    for t in [t for t in TARGET_ORDER if t in per_target] + [t for t in per_target if t not in TARGET_ORDER] + ["total"]:
        r = per_target.get(t) or {"candidates": validation["candidates"], "kept": validation["kept"]}
        cid = f"gpt_hatecheck:t4:{t}"
        rows.append(
            f"<tr><td class='rowhead'>{escape(t)}</td>"
            + json_td(r["kept"], f"{cid}:kept", val_src, stages["validation"])
            + json_td(r["candidates"], f"{cid}:candidates", val_src, stages["validation"])
            + _ptd(paper4, "GPT-3.5", t, "HC")
            + _ptd(paper4, "GPT-3.5", t, "GPT-HC")
            + _ptd(paper4, "GPT-3.5", t, "-Filter")
            + "</tr>"
        )
    out.append(
        "<h3>Table 4: cases per target group</h3>"
        + html_table(
            "gpt-hatecheck-t4",
            ["target group", "kept (ours)", "candidates (ours)", "HC (paper)", "GPT-HC (paper)", "-Filter (paper)"],
            rows,
            caption=f"kept = passed every hypothesis test; duplicates of an earlier message: {validation.get('duplicates', 0)}",
        )
    )

    # bad outputs
    rows = []
    for r in generation.get("per_functionality", []):
        cid = f"gpt_hatecheck:generation:{r['functionality']}"
        rows.append(
            f"<tr><td class='rowhead'>{escape(P.functionality_label(r['functionality'], 'hatecheck', short=True))}</td>"
            + "".join(
                json_td(r[k], f"{cid}:{k}", gen_src, stages["generation"])
                for k in ("cells", "requests", "candidates", "bad_outputs", "empty", "refusal", "not_json", "wrong_format", "bad_items")
            )
            + "</tr>"
        )
    out.append(
        "<h3>Generator output per functionality (bad outputs counted, never dropped silently)</h3>"
        "<p class='note'>not_json: no JSON object in the answer (a numbered list, or JSON cut off at the token "
        'limit); wrong_format: JSON but not <code>{"messages": [...]}</code> of strings; bad_items: some '
        "items empty or not strings (left out, the rest kept). Every request and its answer: "
        f"<code>{escape(files.get('requests', ''))}</code>.</p>"
        + html_table(
            "gpt-hatecheck-generation",
            [
                "functionality",
                "cells",
                "requests",
                "candidates",
                "bad outputs",
                "empty",
                "refusal",
                "not_json",
                "wrong_format",
                "bad_items",
            ],
            rows,
        )
    )

    # Figure 3
    cells = [c for c in validation.get("per_functionality_target", []) if c.get("candidates")]
    lowest = (published.get("gpt_hatecheck_fig3") or {}).get("lowest", [])
    if cells:
        out.append(
            "<h3>Figure 3: hypothesis-test pass rates per functionality</h3>"
            + figure(pass_rate_plot(cells, lowest), "Pass rates per functionality over the target groups", "fig-gpt-hatecheck-pass-rates")
        )
    rows = []
    for r in validation.get("per_functionality", []):
        cid = f"gpt_hatecheck:fig3:{r['functionality']}"
        rows.append(
            f"<tr><td class='rowhead'>{escape(P.functionality_label(r['functionality'], 'hatecheck', short=True))}"
            f"{' (paper: among the five lowest)' if r['functionality'] in lowest else ''}</td>"
            + json_td(r["candidates"], f"{cid}:candidates", val_src, stages["validation"])
            + json_td(r["kept"], f"{cid}:kept", val_src, stages["validation"])
            + json_td(r["pass_rate"], f"{cid}:pass_rate", val_src, stages["validation"], 2)
            + "</tr>"
        )
    out.append(
        html_table(
            "gpt-hatecheck-fig3",
            ["functionality", "candidates", "kept", "pass rate"],
            rows,
            caption="pass rate over all target groups; the paper prints no values for Figure 3",
        )
    )

    # Table 6
    if quality:
        q_src = files["quality"]
        lm = quality.get("lm_stand_in") or quality.get("lm")
        rows = []
        names = {"hatecheck": "HateCheck", **{k: "GPT-HateCheck" for k in quality["suites"] if k != "hatecheck"}}
        for suite, doc in quality["suites"].items():
            paper = _paper(published, "gpt_hatecheck_t6", names[suite])
            cid = f"gpt_hatecheck:t6:{suite}"
            draws = "" if suite == "hatecheck" else f" ({doc.get('draws')} draw(s) of {doc.get('subsample_size')})"
            cells_ = "".join(
                json_td(
                    doc.get(k),
                    f"{cid}:{k}",
                    q_src,
                    stages["quality"],
                    3 if k != "perplexity" else 2,
                    f" (sd {doc[k + '_sd']})" if doc.get(k + "_sd") is not None else "",
                )
                + _ptd(paper, names[suite], "all", k)
                for k in ("self_bleu_2", "self_bleu_3", "self_bleu_4", "perplexity")
            )
            rows.append(
                f"<tr><td class='rowhead'>{escape(suite)}{escape(draws)}</td>"
                + json_td(doc.get("cases"), f"{cid}:cases", q_src, stages["quality"])
                + cells_
                + "</tr>"
            )
        out.append(
            "<h3>Table 6: lexical diversity (Self-BLEU) and naturalness (perplexity)</h3>"
            f"<p class='note'>Perplexity LM: {escape(str(lm))} (the paper: gpt2-large; not comparable in "
            "absolute value). HateCheck: every case outside the spelling functionalities, duplicates dropped; a "
            "generated suite: the mean over ten seeded subsamples of HateCheck's size, or the whole suite once "
            "when it is smaller (then its Self-BLEU is not comparable: fewer references)."
            + (
                f" This profile measures a seeded sample of {quality['reference_cap']} HateCheck cases, not all."
                if quality.get("reference_cap")
                else ""
            )
            + "</p>"
            + html_table(
                "gpt-hatecheck-t6",
                ["suite", "cases", "Self-BLEU-2", "paper", "Self-BLEU-3", "paper", "Self-BLEU-4", "paper", "perplexity", "paper"],
                rows,
            )
        )

    # Figure 4, Tables 8-9
    if compare and compare.get("models"):
        c_src = files["compare"]
        paper8, paper9 = _paper(published, "gpt_hatecheck_t8", "HateBERT"), _paper(published, "gpt_hatecheck_t9", "HateBERT")
        out.append(
            "<p class='note'>The paper tests HateBERT; here the pipeline's fine-tuned models listing both suites, "
            "on the cases their predict stage drew. Accuracy in percent.</p>"
        )
        for model, doc in compare["models"].items():
            rows = []
            for r in doc["by_functionality"]:
                cid = f"gpt_hatecheck:fig4:{model}:{r['functionality']}"
                rows.append(
                    f"<tr><td class='rowhead'>{escape(P.functionality_label(r['functionality'], 'hatecheck', short=True))}</td>"
                    + json_td(r["HC"], f"{cid}:HC", c_src, stages["compare"], 1, f", n={r['HC_n']}")
                    + json_td(r["GPT-HC"], f"{cid}:GPT-HC", c_src, stages["compare"], 1, f", n={r['GPT-HC_n']}")
                    + "</tr>"
                )
            out.append(
                f"<h3>{escape(model)}: accuracy per functionality, HateCheck vs GPT-HateCheck (Figure 4)</h3>"
                + html_table(f"gpt-hatecheck-fig4-{model}", ["functionality", "HC", "GPT-HC"], rows)
            )
            rows = []
            for label in ("hateful", "non-hateful", "combined"):
                cid = f"gpt_hatecheck:t8:{model}:{label}"
                rows.append(
                    f"<tr><td class='rowhead'>{label}</td>"
                    + "".join(
                        json_td(doc["table8"][label][k], f"{cid}:{k}", c_src, stages["compare"]) + _ptd(paper8, "HateBERT", label, k)
                        for k in ("HC", "GPT-HC", "Tie")
                    )
                    + "</tr>"
                )
            out.append(
                f"<h4>{escape(model)}: Table 8, functionalities where accuracy is lower on each suite "
                f"({doc['functionalities_compared']} with cases in both)</h4>"
                + html_table(f"gpt-hatecheck-t8-{model}", ["label", "HC", "paper", "GPT-HC", "paper", "Tie", "paper"], rows)
            )
            rows = []
            for label in ("hateful", "non-hateful"):
                cid = f"gpt_hatecheck:t9:{model}:{label}"
                cells_ = ""
                for suite in ("HC", "GPT-HC"):
                    m = doc["table9"][suite][label]
                    cells_ += json_td(
                        m["mean_prediction"],
                        f"{cid}:{suite}",
                        c_src,
                        stages["compare"],
                        3,
                        f", n={m['n']}, mean p(hateful) {m['mean_p_hateful']}",
                    )
                    cells_ += _ptd(paper9, "HateBERT", label, suite)
                rows.append(f"<tr><td class='rowhead'>{label}</td>{cells_}</tr>")
            out.append(
                f"<h4>{escape(model)}: Table 9, mean prediction (1 = hateful)</h4>"
                + html_table(f"gpt-hatecheck-t9-{model}", ["label", "HC", "paper (HateBERT)", "GPT-HC", "paper (HateBERT)"], rows)
            )
    return "".join(out)
