"""Report section: prompted LLMs on the ETHOS sets ("Detecting Hate Speech
with GPT-3", Chiu, Collins, Alexander 2022), one table per backend and
answering variant, with the paper's figures next to ours."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from hatecheck_pipeline.evaluation.tables import cell_id
from hatecheck_pipeline.report.cells import html_table, json_td, published_td

SETTING_NAMES = {
    "zero_shot": "zero-shot",
    "one_shot": "one-shot",
    "few_shot_single": "few-shot, single category",
    "mixed": "few-shot, mixed category",
    "mixed_instruction": "few-shot, mixed category, with instruction",
}
METRICS = ("accuracy", "precision", "recall", "f1")


def _rows(doc: Mapping[str, Any]) -> list[tuple[str, str, str, Mapping[str, Any], Mapping[str, Any]]]:
    """(setting, variant, row label, metrics, block) for every table row."""
    out = []
    for setting, variants in (doc.get("by_setting") or {}).items():
        for variant, d in variants.items():
            for category, m in (d.get("by_category") or {}).items():
                if category == "mixed":
                    out.append((setting, variant, "all classes (macro)", m, m))
                    for cls, cm in (m.get("by_class") or {}).items():
                        out.append((setting, variant, f"{cls} (vs neither)", cm, m))
                else:
                    out.append((setting, variant, category, m, m))
    return out


def llm_section(docs: Mapping[str, Mapping[str, Any] | None], files: Mapping[str, str]) -> str:
    """Zero/one/few-shot tables for every configured backend."""
    out = ("<p class='note'>Prompted LLMs as classifiers on the ETHOS evaluation sets of Chiu et al. (2022): "
           "accuracy, precision, recall and F1 of the category asked about (percent; mean ± sample sd over iterations, "
           "for the mixed settings over the example sets), answers parsed as the paper does (first word yes/no or the "
           "class word; other answers are unparsed, counted and omitted). <b>free</b> = generated text, parsed; "
           "<b>constrained</b> = the allowed answer with the highest log-probability (never unparsed). "
           "Paper figures (GPT-3 davinci, temperature 0.3, Tables 1–4 and 7) in italics.</p>")
    for backend, doc in docs.items():
        source, stage = files.get(backend, ""), f"llm_ethos_{backend}"
        if doc is None:
            out += f"<h3>{escape(backend)}</h3><p class='fail'>not run (no {escape(source)})</p>"
            continue
        who = doc.get("stand_in") or doc.get("model")
        out += f"<h3>{escape(backend)}: {escape(str(who))}</h3>"
        if doc.get("stand_in"):
            out += (f"<p class='note'><b>Stand-in, not the paper's model:</b> {escape(doc['stand_in'])}; its figures sit next to "
                    "GPT-3's for orientation only.</p>")
        out += (f"<p class='note'>{doc.get('answers')} answers to {doc.get('prompts')} prompts in {doc.get('seconds')} s "
                f"({doc.get('prompts_per_second')} answers/s, {doc.get('threads')} threads); mixed example sets: "
                f"{doc.get('example_sets') or 'all'}.</p>")
        paper = doc.get("paper") or {}
        rows = []
        for setting, variant, label, m, block in _rows(doc):
            key = label.split(" ")[0] if label != "all classes (macro)" else "mixed"
            cid = lambda *p: cell_id("llm", backend, setting, variant, key, *p)  # noqa: E731
            tds = [json_td(block.get("n"), cid("n"), source, stage, 0), json_td(block.get("unparsed_share"), cid("unparsed_share"), source, stage, 1, f", {block.get('unparsed')} unparsed")]
            for metric in METRICS:
                v = m.get(metric) or {}
                tds.append(json_td(v.get("mean"), cid(metric), source, stage, 1, f" ± {v.get('sd', 0):.1f} (sd)" if v.get("sd") is not None else ""))
            pv = (paper.get(setting) or {}).get(key) or {}
            for metric in METRICS:
                tds.append(published_td("gpt3_detection", "GPT-3", f"{setting}:{key}", metric, pv.get(metric), pv.get("source", "")))
            rows.append(f'<tr><td class="rowhead">{escape(SETTING_NAMES.get(setting, setting))}</td><td class="rowhead">{escape(variant)}</td>'
                        f'<td class="rowhead">{escape(label)}</td>{"".join(tds)}</tr>')
        head = ["setting", "variant", "category", "answers", "unparsed %", *METRICS, *(f"{m} (paper)" for m in METRICS)]
        out += html_table(f"llm-ethos-{backend}", head, rows)
    return out


def prompted_card(spec: Mapping[str, Any], backends: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What the models table shows for an ``llm`` model (it has no training
    stage and so no model card): its backend's model, stand-in and prompt.

    >>> card = prompted_card({"kind": "llm", "backend": "b", "template": "suite_zero_shot", "prompt_language": "suite"},
    ...                      {"b": {"model": "pkg:x", "stand_in": "a small LM"}})
    >>> card["base_model"]["stand_in"], card["budget_note"]
    ('a small LM', 'no training: prompted with suite_zero_shot_<language>, the instruction in each suite's language')
    """
    backend = backends.get(spec["backend"], {})
    where = "the instruction in English" if spec["prompt_language"] == "english" else "the instruction in each suite's language"
    return {
        "base_model": {"ref": backend.get("model", spec["backend"]),
                       "description": f"{spec['backend']}: {backend.get('model', 'backend not configured')} (prompted LLM)",
                       "stand_in": backend.get("stand_in")},
        "budget_note": f"no training: prompted with {spec['template']}_<language>, {where}",
    }


def functional_llm_section(models: Mapping[str, Mapping[str, Any]], hatecheck_t2, mhc_t7, below_mark: float) -> str:
    """The ``llm`` model kind on the functional suites: HateCheck accuracy
    and MHC macro F1 per language, one column per prompted model (an
    English instruction next to the suite's own language: zero-shot
    prompting either way, the model was never trained on the task). Cells
    are the HateCheck / MHC tables' cells, with their lineage."""
    import polars as pl

    from hatecheck_pipeline.report.cells import pivot

    if not models:
        return ""
    names = list(models)
    langs = ", ".join(f"{m}: {'English' if s['prompt_language'] == 'english' else 'each suite’s language'}" for m, s in models.items())
    out = ("<h3>Functional tests of prompted LLMs (the <code>llm</code> model kind)</h3>"
           f"<p class='note'>Every case asked as a yes/no question (instruction language — {escape(langs)}); "
           "p(hateful) is the probability of the yes answer among yes/no (a local model's constrained variant) or the "
           "parsed answer (an endpoint). Scored by the same stages as the fine-tuned models; their per-functionality "
           "accuracy is in the HateCheck and MHC tables above.</p>")
    hc = hatecheck_t2.filter(pl.col("model").is_in(names) & (pl.col("row") == "total"))
    if not hc.is_empty():
        out += "<h4>HateCheck accuracy (%)</h4>" + pivot(hc, "llm-hatecheck", "row", "model", below_mark)
    mhc = mhc_t7.filter(pl.col("model").is_in(names))
    if not mhc.is_empty():
        out += "<h4>MHC macro F1 per language, by instruction language</h4>" + pivot(mhc, "llm-mhc", "row", "model", None)
    return out
