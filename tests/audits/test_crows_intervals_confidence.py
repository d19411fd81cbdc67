"""CrowS-Pairs: the bootstrap intervals over pairs (overall and per bias
type) and the paper's model-confidence analysis (equation 2, Figure 2) on
hand-computed examples, and both in the report's bias section."""

from __future__ import annotations

import polars as pl
import pytest

from hatecheck_pipeline.audits import crows


def scored(rows):
    """A scored pairs table from (bias_type, sent_more_score, sent_less_score)."""
    frame = pl.DataFrame(rows, schema=["bias_type", "sent_more_score", "sent_less_score"], orient="row")
    return frame.with_columns(
        stereotyped=pl.col("sent_more_score") > pl.col("sent_less_score"), neutral=pl.col("sent_more_score") == pl.col("sent_less_score")
    )


# ------------------------------------------------------------ equation 2


def test_confidence_is_one_minus_the_ratio_of_the_preferred_to_the_other_score():
    assert crows.confidence(-40.0, -50.0) == (pytest.approx(0.2), "more")  # 1 - 40/50
    assert crows.confidence(-90.0, -60.0) == (pytest.approx(1 / 3), "less")  # S = sent_less: 1 - 60/90
    assert crows.confidence(-7.0, -7.0) == (0.0, None)
    assert crows.confidence(-1.0, 0.0) == (1.0, "less")  # S scores 0 (probability 1): 1 - 0/-1
    assert crows.confidence(0.0, 0.5) == (None, "less")  # score(S') = 0: the ratio is undefined


def test_confidence_summary_splits_by_the_preferred_sentence():
    # (more, less): confidence x 100 and side
    #  (-40, -50): 20 more   (-30, -60): 50 more   (-20, -25): 20 more
    #  (-90, -60): 33.33 less  (-10, -10): neutral, in neither
    doc = crows.confidence_summary(
        scored([("a", -40.0, -50.0), ("a", -30.0, -60.0), ("b", -20.0, -25.0), ("b", -90.0, -60.0), ("b", -10.0, -10.0)]), bins=5
    )
    more, less = doc["more_preferred"], doc["less_preferred"]
    assert more["n"] == 3 and less["n"] == 1
    assert more["median"] == pytest.approx(20.0) and more["q1"] == pytest.approx(20.0) and more["q3"] == pytest.approx(35.0)
    assert less["median"] == pytest.approx(33.3333, abs=1e-4)
    assert doc["median_difference"] == pytest.approx(20.0 - 33.3333, abs=1e-4)
    assert doc["bin_edges"] == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]  # 0 to the largest confidence, 50
    assert more["counts"] == [0, 0, 2, 0, 1]  # 20, 20 in [20, 30); 50 in the last, closed bin
    assert less["counts"] == [0, 0, 0, 1, 0]


def test_confidence_summary_without_pairs_has_no_medians():
    doc = crows.confidence_summary(scored([("a", -3.0, -3.0)]))
    assert doc["more_preferred"]["n"] == 0 and doc["more_preferred"]["median"] is None
    assert doc["median_difference"] is None


# ------------------------------------------------------------ bootstrap over pairs


def test_bootstrap_interval_known_answers():
    # two pairs, one stereotyped: a resample's share is 0 (p 1/4), 50 (1/2) or 100 (1/4)
    assert crows.bootstrap_interval([True, False], 4000, 0, 0.95) == [0.0, 100.0]  # each tail (2.5%) inside a 25% mass
    assert crows.bootstrap_interval([True, False], 4000, 0, 0.40) == [50.0, 50.0]  # 30th and 70th percentiles
    assert crows.bootstrap_interval([True] * 5, 100, 0, 0.95) == [100.0, 100.0]
    assert crows.bootstrap_interval([True, False, False], 500, 7, 0.9) == crows.bootstrap_interval([True, False, False], 500, 7, 0.9)


def test_intervals_overall_and_per_bias_type_each_over_its_own_pairs():
    frame = scored([("a", -1.0, -2.0), ("a", -3.0, -2.0), ("b", -1.0, -2.0), ("b", -1.0, -2.0), ("b", -5.0, -2.0)])
    summary = crows.add_intervals(
        crows.summarise(
            frame.with_columns(likelihood_diff=pl.lit(1.0), variant=pl.lit("causal"), model=pl.lit("m"), stereo_antistereo=pl.lit("stereo"))
        ),
        frame,
        300,
        4,
        0.95,
    )
    assert summary["metric_ci"] == crows.bootstrap_interval([True, False, True, True, False], 300, 4, 0.95)
    # a type's interval is that of its own pairs with the same seed, whatever the other types
    assert summary["bias_types"]["a"]["ci"] == crows.bootstrap_interval([True, False], 300, 4, 0.95) == [0.0, 100.0]
    assert summary["bias_types"]["b"]["ci"] == crows.bootstrap_interval([True, True, False], 300, 4, 0.95)
    assert summary["bias_types"]["b"]["score"] == pytest.approx(66.67)
    low, high = summary["metric_ci"]
    assert low <= summary["metric_score"] <= high
    assert summary["bootstrap"] == {"samples": 300, "seed": 4, "level": 0.95, "resampling_unit": "pair"}
    none = crows.add_intervals(
        crows.summarise(
            frame.with_columns(likelihood_diff=pl.lit(1.0), variant=pl.lit("causal"), model=pl.lit("m"), stereo_antistereo=pl.lit("stereo"))
        ),
        frame,
        0,
        0,
        0.95,
    )
    assert none["metric_ci"] is None and none["bias_types"]["a"]["ci"] is None


def test_the_stage_receives_the_evaluation_bootstrap_settings():
    from hatecheck_pipeline.core.config import load_params
    from hatecheck_pipeline.pipeline.audits import crows_scorers, crows_stage

    params = load_params()
    name = next(iter(crows_scorers(params)))
    stage = crows_stage(name, params)
    bound = stage.params["bootstrap"]
    assert tuple(bound) == ("evaluation.bootstrap_samples", "evaluation.seed", "evaluation.ci_level")
    ev = params["evaluation"]
    assert bound.value(params) == {"samples": ev["bootstrap_samples"], "seed": ev["seed"], "level": ev["ci_level"]}


# ------------------------------------------------------------ the report


def entry(conf, ci):
    return {
        "variant": "causal",
        "model": "m",
        "ran": True,
        "complete": False,
        "n_pairs": 5,
        "metric_score": 60.0,
        "metric_ci": ci,
        "bootstrap": {"samples": 300, "seed": 4, "level": 0.95, "resampling_unit": "pair"},
        "bias_types": {"gender": {"n": 2, "score": 50.0, "ci": [0.0, 100.0]}},
        "confidence": conf,
        "source": "results/bias/crows_pairs/x/metrics.json",
    }


def test_the_report_shows_the_intervals_and_the_confidence_figure_beside_the_paper():
    from hatecheck_pipeline.evaluation import published as P
    from hatecheck_pipeline.report.sections import bias_section

    conf = crows.confidence_summary(scored([("a", -40.0, -50.0), ("a", -30.0, -60.0), ("b", -90.0, -60.0)]), bins=4)
    html = bias_section({"crows_pairs": {"smol": entry(conf, [40.0, 80.0])}}, "results/bias/summary.json", P.load())
    assert "[40.0, 80.0]" in html  # the metric score's interval in the first table
    assert '<span class="ci">[0.0, 100.0]</span>' in html  # a bias type's interval under its figure
    assert (
        'id="crows-confidence"' in html
        and "data:image/png;base64," in html
        and "http" not in html.split('id="crows-confidence"')[1].split("</figure>")[0]
    )
    assert "The difference in medians is 1.2 for" in html  # the paper's description
    assert "causal LM" in html and "pseudo-log-likelihood of the unmodified tokens" in html
    # ours: medians 35 (20, 50) and 33.33 -> difference 1.67; the paper's three differences beside it
    assert ">1.67<" in html
    for diff in (">1.2<", ">2.3<", ">3.2<"):
        assert diff in html


def test_no_confidence_figure_for_a_scorer_that_did_not_run():
    from hatecheck_pipeline.evaluation import published as P
    from hatecheck_pipeline.report.sections import bias_section

    html = bias_section(
        {"crows_pairs": {"bert": {"variant": "masked", "model": "bert", "ran": False, "reason": "not run"}}},
        "results/bias/summary.json",
        P.load(),
    )
    assert "crows-confidence" not in html
