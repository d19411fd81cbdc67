"""The terminal summary `evaluate` ends with: per suite n, accuracy and
macro F1 with their intervals, the functional tests below the mark and
where the failing cases are (read from the score stages' files)."""

from __future__ import annotations

import json
from pathlib import Path

from hatecheck_pipeline.cli.evaluate import evaluation_summary, summary_lines
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.evaluation.scoring import model_failures


def fig(value, low=None, high=None):
    return {"value": value, "ci_low": low, "ci_high": high}


def doc(dataset, tests=None, macro=fig(48.26, 44.1, 52.0)):
    d = {"suite": dataset, "dataset": dataset, "overall": {"n": 120, "accuracy": fig(55.04, 50.0, 60.0), "macro_f1": macro}}
    if tests is not None:
        d["by_functionality"] = {code: {"n": 10, "accuracy": fig(v, v - 5, v + 5)} for code, v in tests.items()}
    return d


def test_summary_names_each_suite_its_intervals_and_the_tests_below_the_mark():
    docs = {
        "hatecheck": doc("hatecheck", {"derog_neg_emote_h": 20.0, "slur_h": 80.0, "counter_quote_nh": 49.9, "threat_dir_h": 50.0}),
        "heldout_davidson2017": doc("davidson2017", macro=fig(None)),
        "mhc_german": None,
    }
    lines = summary_lines("kw", docs, 50, {"hatecheck": "results/kw/hatecheck/failures.csv"})
    text = "\n".join(lines)
    hc = next(line for line in lines if line.strip().startswith("hatecheck"))
    assert "n=120" in hc and "accuracy 55.0 (50.0–60.0)" in hc and "macro F1 48.3 (44.1–52.0)" in hc
    below = next(line for line in lines if "below 50%:" in line)
    assert "derog_neg_emote_h 20.0" in below and "counter_quote_nh 49.9" in below
    assert "slur_h" not in below and "threat_dir_h" not in below  # at or above the mark
    assert below.index("derog_neg_emote_h") < below.index("counter_quote_nh")  # in the suite's order
    assert "failing cases: results/kw/hatecheck/failures.csv" in text
    held = next(line for line in lines if line.strip().startswith("heldout_davidson2017"))
    assert "macro F1 n/a" in held
    assert text.count("below 50%:") == 1  # a held-out set has no functional tests
    assert "mhc_german" in text and "no metrics written" in text
    # another mark, another verdict
    assert "none" in next(line for line in summary_lines("kw", {"hatecheck": docs["hatecheck"]}, 10, {}) if "below 10%:" in line)


def test_the_header_names_the_level_the_intervals_were_computed_at():
    at90 = doc("hatecheck") | {"bootstrap": {"level": 0.9}}
    assert "with 90% bootstrap intervals" in summary_lines("kw", {"hatecheck": at90, "mhc_german": None}, 50, {})[0]
    at95 = doc("mhc_german") | {"bootstrap": {"level": 0.95}}
    assert "with 95% bootstrap intervals" in summary_lines("kw", {"mhc_german": at95}, 50, {})[0]
    mixed = summary_lines("kw", {"hatecheck": at90, "mhc_german": at95}, 50, {})[0]
    assert "with bootstrap intervals;" in mixed and "% bootstrap" not in mixed


def test_summary_counts_a_scoring_apis_unanswered_cases():
    api = doc("hatecheck", {"slur_h": 80.0})
    api["overall"]["n_unanswered"] = 4
    line = next(line for line in summary_lines("api", {"hatecheck": api}, 50, {}) if line.strip().startswith("hatecheck"))
    assert "(4 unanswered by the API, not scored)" in line
    plain = next(line for line in summary_lines("kw", {"hatecheck": doc("hatecheck")}, 50, {}) if line.strip().startswith("hatecheck"))
    assert "unanswered" not in plain


def test_summary_reads_the_score_stages_files(workdir):
    for suite, tests in (("hatecheck", {"derog_neg_emote_h": 30.0}), ("mhc_german", {"threat_dir_h": 90.0})):
        Path(paths.metrics("kw", suite)).parent.mkdir(parents=True)
        Path(paths.metrics("kw", suite)).write_text(json.dumps(doc("hatecheck" if suite == "hatecheck" else "mhc", tests)))
    Path(model_failures("kw", "hatecheck")).write_text("id,functionality,text,gold_label,predicted_label\n")
    text = "\n".join(evaluation_summary("kw", ["hatecheck", "mhc_german"], 50))
    assert "F1 derog_neg_emote_h 30.0" in text and "threat_dir_h" not in text
    assert f"failing cases: {model_failures('kw', 'hatecheck')}" in text
    assert model_failures("kw", "mhc_german") not in text  # not written: not named


def test_a_failed_stage_is_one_line_from_its_log(workdir, params):
    """After a failed Snakemake run, `evaluate` prints each failed stage's
    `error:` line (not the traceback above it in the log)."""
    import time

    from hatecheck_pipeline.cli.evaluate import failed_stage_lines

    started = time.time() - 1
    Path("logs").mkdir()
    Path("logs/classifier_hatesonar.log").write_text(
        'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom\n'
        "error: model hatesonar: x:f raised ValueError: boom at x.py:1 (traceback in logs/classifier_hatesonar.log)\n"
    )
    Path("logs/score_B-D_hatecheck.log").write_text("Traceback (most recent call last):\nKeyError: 'x'\n")
    lines = failed_stage_lines(params, started)
    assert sorted(lines) == [
        "classifier_hatesonar: model hatesonar: x:f raised ValueError: boom at x.py:1 (traceback in logs/classifier_hatesonar.log)",
        "score_B-D_hatecheck: KeyError: 'x' (log: logs/score_B-D_hatecheck.log)",
    ]
    Path(paths.metrics("B-D", "hatecheck")).parent.mkdir(parents=True)
    for out in ("metrics.json", "bootstrap.parquet", "failures.csv"):  # a stage whose outputs are all there did not fail
        (Path(paths.metrics("B-D", "hatecheck")).parent / out).write_text("{}")
    assert [line.split(":")[0] for line in failed_stage_lines(params, started)] == ["classifier_hatesonar"]
