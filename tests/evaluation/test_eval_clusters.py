"""Template-level (cluster) bootstrap of the functional suites."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation import metrics, scoring
from hatecheck_pipeline.report import cells as report_cells
from hatecheck_pipeline.report import sections as report_sections
from hatecheck_pipeline.suites import clusters
from hatecheck_pipeline.suites.registry import Suite, hatecheck, heldout, mhc

NAMES = ["accuracy", "f1_hateful", "f1_non_hateful", "macro_f1"]


@pytest.mark.parametrize("module", [clusters, report_cells, report_sections])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def one_per_template(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, k)
    return gold, np.where(rng.random(k) < 0.7, gold, 1 - gold)


@pytest.mark.parametrize("size", [1, 2, 7, 18])
def test_identical_cases_per_template_give_the_case_interval_of_one_case_per_template(size):
    """Equal-sized templates whose cases are identical
    within each template; the template-level interval equals the case-level
    interval of one case per template (same seed and resample count), exactly."""
    gold, pred = one_per_template(150, seed=size)
    suite_gold, suite_pred = np.repeat(gold, size), np.repeat(pred, size)
    templates = np.repeat(np.arange(150), size)
    clustered = metrics.summarise(suite_gold, suite_pred, NAMES, boot=Bootstrap(1000, 3), clusters=templates)
    single = metrics.summarise(gold, pred, NAMES, boot=Bootstrap(1000, 3))
    for name in NAMES:
        assert clustered[name] == single[name]
    assert clustered["n"] == 150 * size and clustered["n_clusters"] == single["n_clusters"] == 150
    # the replicates themselves, not just their rounded percentiles
    a = metrics.bootstrap_replicates(suite_gold, suite_pred, NAMES, 400, 5, templates)
    b = metrics.bootstrap_replicates(gold, pred, NAMES, 400, 5)
    for name in NAMES:
        assert np.array_equal(a[name], b[name])


def test_the_same_holds_through_the_score_stage_with_template_texts():
    """Same check through scoring.score_cases: the clusters come from the
    suite's ``case_templ`` column (shuffled rows, template texts as data)."""
    gold, pred = one_per_template(120, seed=1)
    rows = pl.DataFrame(
        {
            "id": [f"{t}-{j}" for t in range(120) for j in range(7)],
            "gold": np.repeat(gold, 7).astype(np.int8),
            "pred": np.repeat(pred, 7),
            "case_templ": [f"I hate [IDENTITY_P] number {t}." for t in range(120) for _ in range(7)],
        }
    ).with_row_index("_order")
    one = rows.filter(pl.col("id").str.ends_with("-0"))
    templated = scoring.score_cases(rows, "id", boot=Bootstrap(500, 11), unit=metrics.TEMPLATE)
    single = scoring.score_cases(one.drop("case_templ"), "id", boot=Bootstrap(500, 11), unit=metrics.CASE)
    for name in NAMES:
        assert templated["overall"][name] == single["overall"][name]
    assert templated["overall"]["n_clusters"] == 120 and templated["overall"]["n"] == 840


def test_case_level_bootstrap_is_the_previous_draw():
    """One cluster per case reproduces the case-level bootstrap the score
    stages always computed (``rng.integers(0, n, (samples, n))``)."""
    rng = np.random.default_rng(4)
    gold = rng.integers(0, 2, 500)
    pred = np.where(rng.random(500) < 0.8, gold, 1 - gold)
    idx = np.random.default_rng(9).integers(0, 500, size=(300, 500))
    expected = (gold[idx] == pred[idx]).mean(axis=1)
    got = metrics.bootstrap_replicates(gold, pred, ["accuracy"], 300, 9)["accuracy"]
    assert np.allclose(got, expected, rtol=0, atol=1e-15)


def test_clustered_interval_is_wider_on_clustered_data():
    """Templates that are all right or all wrong: resampling cases pretends
    there are seven times as many independent observations."""
    rng = np.random.default_rng(0)
    k, size = 200, 7
    right = rng.random(k) < 0.63
    gold = rng.integers(0, 2, k * size)
    pred = np.where(np.repeat(right, size), gold, 1 - gold)
    templates = np.repeat(np.arange(k), size)
    case = metrics.summarise(gold, pred, ["accuracy"], boot=Bootstrap(1000, 0))["accuracy"]
    templ = metrics.summarise(gold, pred, ["accuracy"], boot=Bootstrap(1000, 0), clusters=templates)["accuracy"]
    assert case["value"] == templ["value"]
    case_width, templ_width = case["ci_high"] - case["ci_low"], templ["ci_high"] - templ["ci_low"]
    assert templ_width > 2 * case_width  # sqrt(7) ~ 2.6 times wider in expectation


def test_a_case_without_a_template_is_its_own_cluster():
    frame = pl.DataFrame(
        {
            "templ_id": [None, "4", "4", None, None, ""],
            "case_templ": ["t1", None, "x", None, "", None],
            "gender_male": [None, None, None, "m1", None, None],
            "gender_female": [None, None, None, "f1", None, None],
        }
    )
    codes = clusters.template_clusters(frame)
    # rows 1 and 2 share templ_id 4; rows 4 and 5 have nothing (empty strings are nothing): two singletons
    assert codes.tolist() == [0, 1, 1, 2, 3, 4]
    assert clusters.template_clusters(frame.select(pl.lit(None, pl.String).alias("case_templ"), "gender_male")).tolist() == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]
    assert clusters.template_clusters(pl.DataFrame({"text": ["a", "b"]})).tolist() == [0, 1]


def test_gender_inflected_templates_join_through_either_column():
    """MHC Italian/Spanish: empty case_templ; cases sharing the male or the
    female template text are one cluster, also across a chain."""
    frame = pl.DataFrame(
        {
            "case_templ": ["", "", "", "", "Odio [IDENT_P]."],
            "gender_male": ["Odio i [male_IDENT_P].", "Odio i [male_IDENT_P].", "Ama i [male_IDENT_P].", "Ama i [male_IDENT_P]!", None],
            "gender_female": [
                "Odio le [female_IDENT_P].",
                "Odio le [female_IDENT_P].",
                "Ama le [female_IDENT_P].",
                "Ama le [female_IDENT_P].",
                None,
            ],
        }
    )
    assert clusters.template_clusters(frame).tolist() == [0, 0, 1, 1, 2]


def test_contrast_pairs_resample_clusters_of_both_cases():
    # pairs (hateful cluster, contrast cluster): 0-5 and 1-5 share the contrast template
    assert clusters.merge_clusters(np.array([0, 1, 2, 3]), np.array([5, 5, 6, 3])).tolist() == [0, 0, 1, 2]
    cases = pl.DataFrame(
        {
            "id": ["1", "2", "3", "4", "5", "6"],
            "gold": [1, 1, 1, 0, 0, 0],
            "pred": [1, 1, 0, 0, 1, 0],
            "ref_case_id": [None, None, None, "1", "2", "3"],
            "case_templ": ["I hate [A].", "I hate [A].", "Kill [A].", "I don't hate [A].", "I don't hate [A].", "Never kill [A]."],
        }
    ).with_row_index("_order")
    doc = scoring.score_cases(cases, "id", boot=Bootstrap(50), unit=metrics.TEMPLATE)
    assert doc["contrast"]["n_pairs"] == 3 and doc["contrast"]["n_clusters"] == 2
    assert doc["overall"]["n_clusters"] == 4 and doc["by_label"]["hateful"]["n_clusters"] == 2
    assert scoring.score_cases(cases, "id", boot=Bootstrap(50), unit=metrics.CASE)["contrast"]["n_clusters"] == 3


def test_resampling_unit_per_suite_kind():
    assert scoring.resampling_unit(hatecheck()) == metrics.TEMPLATE
    assert scoring.resampling_unit(mhc("italian")) == metrics.TEMPLATE
    assert scoring.resampling_unit(Suite("perturbed_hatecheck", "perturbed_hatecheck", "id", "expanded")) == metrics.TEMPLATE
    assert scoring.resampling_unit(heldout("davidson2017")) == metrics.CASE
    with pytest.raises(ValueError, match="unknown resampling unit"):
        scoring.with_clusters(pl.DataFrame({"gold": [1]}), "post")


MIRROR = Path(os.environ.get("HATECHECK_PIPELINE_MIRROR", "../shared/datasets"))


@pytest.mark.skipif(not (MIRROR / "hatecheck").is_dir(), reason="needs the raw data mirror (HATECHECK_PIPELINE_MIRROR)")
def test_real_suites_cluster_by_template():
    """The real files: HateCheck's 3,728 cases form its 845 templates
    (``templ_id``); every MHC language, Italian and Spanish included (no
    ``case_templ``), forms about as many clusters as it has template ids."""
    hc = pl.read_csv(MIRROR / "hatecheck/test_suite_cases.csv", infer_schema_length=0)
    codes = clusters.template_clusters(hc.drop("templ_id"))  # the texts alone
    assert codes.max() + 1 == hc["templ_id"].n_unique() == 845
    assert pl.DataFrame({"c": codes, "t": hc["templ_id"]}).group_by("c").agg(pl.col("t").n_unique())["t"].max() == 1
    for language in ("italian", "spanish", "german"):
        frame = pl.read_csv(MIRROR / f"mhc/cases/hatecheck_cases_final_{language}.csv", infer_schema_length=0)
        k = int(clusters.template_clusters(frame.drop("templ_id")).max()) + 1
        assert k == int(clusters.template_clusters(frame).max()) + 1  # templ_id joins nothing the texts keep apart
        assert 700 < k <= frame["templ_id"].n_unique() < frame.height / 4


def test_zero_vs_many_shot_gap_resamples_the_languages_independently(workdir):
    """Two MHC languages with identical cases and predictions: the gap is 0.
    Both score stages drew the same template positions (same seed, same
    number of templates); combined as drawn, every replicate's gap would be
    0 too. The shots tables decorrelate the languages' draws, so the
    interval of the gap is as wide as a difference of two independent
    estimates."""
    from eval_synthetic import make_metrics

    from hatecheck_pipeline.evaluation import tables

    srcs = [make_metrics(workdir, "XTC", mhc(lang), 0.7, seed=5) for lang in ("spanish", "german")]
    values = [pl.read_parquet(s.replicates).filter(pl.col("section") == "overall", pl.col("figure") == "macro_f1")["value"] for s in srcs]
    assert values[0].to_list() == values[1].to_list()  # the same draw in both score stages
    shots = tables.run("shots", srcs, "tables_shots", {"XTC": ["spanish"]})["shots_summary"]
    gap = shots.filter(pl.col("column") == "gap").row(0, named=True)
    one = shots.filter(pl.col("column") == "many-shot").row(0, named=True)
    assert gap["value"] == 0.0 and gap["ci_low"] < 0 < gap["ci_high"]
    width, single = gap["ci_high"] - gap["ci_low"], one["ci_high"] - one["ci_low"]
    assert 1.1 * single < width < 1.8 * single  # ~sqrt(2) x a language's own width
    assert gap["n_clusters"] == 2 * one["n_clusters"]
