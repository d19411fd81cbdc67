"""Expanded suites in evaluation and the bias summary in
the report: scores per source functionality, the original-vs-expanded table,
registry stages, report sections."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from conftest import REPO
from eval_synthetic import (
    GENERATORS,
    ExpandedSuite,
    bias_summary_doc,
    expanded_sources,
    expansion_reports,
    hatecheck_like,
    perturbed_like,
)

from hatecheck_pipeline.audits.crows import crows_pair_cap
from hatecheck_pipeline.core import config, paths
from hatecheck_pipeline.evaluation import expanded_tables, scoring, tables
from hatecheck_pipeline.pipeline import audits as ph_bias
from hatecheck_pipeline.pipeline import evaluate as ph
from hatecheck_pipeline.pipeline import report as ph_report
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.suites.sample import sample_cases


def test_expanded_suite_scored_per_source_functionality(workdir):
    srcs = expanded_sources(workdir)
    doc = json.loads(Path(srcs[1].metrics).read_text())
    assert set(doc["by_source_functionality"]) == {"derog_neg_emote_h", "threat_dir_h"}
    assert set(doc["by_generator"]) == set(GENERATORS)
    assert doc["by_source_functionality"]["threat_dir_h"]["n"] == 2 * 12
    assert set(doc["by_functionality"]) == {f"spell_{g}_h" for g in GENERATORS}


def test_original_vs_expanded_table(workdir):
    srcs = expanded_sources(workdir)
    cells = tables.run("expanded", srcs, "tables_expanded")["expanded_functionality"]
    assert cells["cell_id"].n_unique() == cells.height
    assert set(cells["suite"]) == {"perturbed_hatecheck", "perturbed_mhc_german"}
    bd = cells.filter((pl.col("model") == "B-D") & (pl.col("row") == "threat_dir_h"))
    by = {r["column"]: r for r in bd.iter_rows(named=True)}
    assert by["original"]["metrics_file"] == "results/B-D/hatecheck/metrics.json"
    assert by["original"]["stage"] == "score_B-D_hatecheck"
    assert by["expanded"]["metrics_file"] == "results/B-D/perturbed_hatecheck/metrics.json"
    assert by["change"]["stage"] == "tables_expanded"
    assert abs(by["change"]["value"] - (by["expanded"]["value"] - by["original"]["value"])) < 0.051
    # 90% vs 50% accurate synthetic predictions: the expansion is harder
    hateful = cells.filter((pl.col("model") == "B-D") & (pl.col("row") == "hateful cases") & (pl.col("column") == "change"))
    assert hateful["value"][0] < -15
    de = cells.filter(pl.col("model") == "XTC")
    assert set(de["setting"]) == {"mhc_german"} and set(de["language"]) == {"german"}
    doc = json.loads((workdir / paths.table_summary("expanded")).read_text())
    assert set(doc["change"]["XTC"]["perturbed_mhc_german"]) == {"derog_neg_emote_h", "threat_dir_h", "hateful cases"}
    plot = pl.read_csv(paths.plot_data("expanded_functionality"))
    assert plot.columns[-1] == "accuracy" and set(plot["setting"]) == {"original", "expanded"}


def test_pairing_keeps_expanded_out_of_paper_tables():
    assert expanded_tables.original_suite("perturbed_mhc_hindi") == "mhc_hindi"
    assert expanded_tables.original_suite("extended_german") == "mhc_german"
    assert expanded_tables.original_suite("heldout_davidson2017") is None
    params = config.load_params(REPO / "params.yaml")
    stages = {s.name: s for s in ph.stages(params)}
    for name in ("tables_hatecheck", "tables_mhc", "tables_shots", "tables_contrast"):
        assert not [d for d in stages[name].deps if "perturbed" in d or "extended" in d], name
    exp = stages["tables_expanded"]
    assert paths.metrics("B-D", "perturbed_hatecheck") in exp.deps and paths.metrics("B-D", "hatecheck") in exp.deps
    assert paths.metrics("XTC", "perturbed_mhc_german") in exp.deps and paths.metrics("XTC", "mhc_german") in exp.deps
    assert paths.metrics("B-D", "extended_german") not in exp.deps  # B-D has no mhc_german to compare with
    assert len(exp.deps) == len(set(exp.deps))
    score = stages["score_B-D_perturbed_hatecheck"]
    assert paths.expanded_table("perturbed_hatecheck") in score.deps
    assert paths.expanded_table("extended") in stages["score_B-D_extended_english"].deps
    rep = next(s for s in ph_report.stages(params) if s.name == "report")
    for dep in (
        paths.table("expanded_functionality"),
        paths.bias_summary(),
        paths.expansion_file("reports", "perturbation_coverage.json"),
        paths.expansion_file("regenerated", "reproduction.json"),
    ):
        assert dep in rep.deps, dep


def test_scores_draw_the_same_sample_as_predict_on_an_expanded_suite(workdir):
    """A capped profile: predict samples from the scheme table, score from the
    expanded table; both must hold the same ids in the same order."""
    suite = ExpandedSuite("perturbed_hatecheck", "perturbed_hatecheck", "id")
    frame = perturbed_like(hatecheck_like(), "case_id")
    Path(paths.expanded_table(suite.dataset)).parent.mkdir(parents=True, exist_ok=True)
    frame.sample(fraction=1.0, shuffle=True, seed=3).write_parquet(paths.expanded_table(suite.dataset))
    frame.write_parquet(paths.expanded_processed(suite.dataset, "bert"))
    predicted = sample_cases(suite.load("bert").select(pl.col("id").cast(pl.Utf8), "text").collect().sort("id"), 10, 42)
    scored = sample_cases(scoring.gold_cases(suite).select("id").sort("id"), 10, 42)
    assert predicted["id"].to_list() == scored["id"].to_list()


def test_crows_pairs_cap_from_profile():
    assert crows_pair_cap(None, 20) == 20 and crows_pair_cap(10, 20) == 10 and crows_pair_cap(None, None) is None
    params = config.load_params(REPO / "params.yaml")
    assert params["profiles"]["smoke"]["crows_max_pairs"] == 20
    assert params["profiles"]["paper"]["crows_max_pairs"] is None
    for s in ph_bias.stages(params):
        if s.name.startswith("crows_pairs_"):
            assert {"profile", f"profiles.{params['profile']}.crows_max_pairs"} <= set(s.param_keys), s.name


def test_report_sections_from_expansion_and_bias(workdir):
    srcs = expanded_sources(workdir)
    tables.run("expanded", srcs, "tables_expanded")
    files = expansion_reports(workdir)
    summary_file = bias_summary_doc(workdir)
    html = report.run(
        workdir / "r.html",
        "t",
        "smoke",
        {"B-D": {"train": [], "suites": []}},
        {},
        {},
        {"expanded_functionality": paths.table("expanded_functionality")},
        None,
        50,
        expansion_files=files,
        bias_summary_file=paths.bias_summary(),
    ).read_text("utf-8")
    assert summary_file.exists()
    assert 'id="expanded"' in html and 'id="bias"' in html
    assert 'data-cell-id="expanded_functionality:B-D:perturbed_hatecheck:threat_dir_h:change"' in html
    assert 'data-cell-id="expansion:coverage:mandarin:leet"' in html and "mandarin/leet" in html
    assert 'data-cell-id="expansion:reproduction:german:share_reproduced"' in html
    assert "95.0" in html
    assert 'data-cell-id="bias:crows:smollm2-135m:metric_score"' in html
    assert "incomplete run" in html and "causal variant" in html and "BERT-base (paper Table 2" in html
    assert "tfidf-lr-standin (baseline: TF-IDF + logistic regression, not BERT) [occlusion]" in html
    assert "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [Attn]" in html
    assert 'data-cell-id="bias:hatexplain:hatexplain:lime:token_f1"' in html
    assert 'data-cell-id="bias:hatexplain:hatexplain:integrated_gradients:token_f1"' in html
    # each of our rows is followed by the paper's row of the same kind of model and method; integrated gradients by none
    assert (
        html.index("[Attn]</td>")
        < html.index("paper: BERT [Attn]")
        < html.index("[LIME]</td>")
        < html.index("paper: BERT [LIME]")
        < html.index("[integrated gradients]</td>")
    )
    assert "paper: BERT [LIME]" not in html.split("[integrated gradients]</td>")[1].split("</table>")[0]
    assert 'data-cell-id="published:hatexplain_t6:BERT:Attn:accuracy"' in html
    assert 'data-cell-id="published:hatexplain_t6:BERT-HateXplain:Attn:token_f1"' in html
    assert "hatexplain-supervised (BERT-HateXplain, attention-supervised)" in html and "did not run: not trained" in html
    assert 'data-cell-id="bias:targets:XTC:mhc_hindi:Muslims:bpsn_auc"' in html
    assert f'data-metrics="{workdir / "tgt.json"}"' in html and 'data-stage="target_bias_XTC"' in html
    assert html.count("data:image/png;base64,") >= 3  # expanded bars (2 models) + target heatmaps


def test_report_without_bias_summary_says_so(workdir):
    html = report.build("t", "smoke", {}, {}, {}, {}, {}, 50, published={}, bias={"doc": None, "file": "results/bias/summary.json"})
    assert "results/bias/summary.json not found" in html
