"""Scoring predictions files: checks with counts, label formats, METRICS.json, the CLI."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
from conftest import REPO
from eval_synthetic import hatecheck_like, predictions
from typer.testing import CliRunner

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.evaluation import scoring
from hatecheck_pipeline.suites.registry import Suite
from hatecheck_pipeline.suites.sample import predicted_subsample
from hatecheck_pipeline.evaluation.scoring import model_failures

SUITE = Suite("hatecheck", "hatecheck", "case_id")


@pytest.fixture
def project(workdir):
    """A scratch project: params, schema and a synthetic HateCheck table."""
    shutil.copy(REPO / "params.yaml", workdir / "params.yaml")
    (workdir / "workflow" / "schemas").mkdir(parents=True)
    shutil.copy(REPO / "workflow/schemas/params.schema.yaml", workdir / "workflow/schemas/params.schema.yaml")
    table = workdir / "data/interim/hatecheck/table.parquet"
    table.parent.mkdir(parents=True)
    hatecheck_like().write_parquet(table)
    return workdir


def test_metrics_document(project):
    frame = hatecheck_like()
    preds = predictions(frame, 0.8)
    preds.write_parquet("p.parquet")
    doc = scoring.run(SUITE, "p.parquet", "m.json", boot=Bootstrap(200, 0))
    on_disk = json.loads((project / "m.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    o = doc["overall"]
    truth = frame["label"] == "hateful"
    hat = preds["pred"] == "hateful"
    assert o["n"] == frame.height
    assert o["accuracy"]["value"] == round(float((truth == hat).mean()) * 100, 1)
    assert set(doc["by_label"]) == {"hateful", "non-hateful"}
    assert doc["by_label"]["hateful"]["n"] == int(truth.sum())
    assert list(doc["by_functionality"]) == ["derog_neg_emote_h", "threat_dir_h", "slur_reclaimed_nh", "ident_neutral_nh", "negate_neg_nh"]
    assert set(doc["by_target"]) == {"women", "trans people", "Muslims"}
    assert sum(v["n"] for v in doc["by_target"].values()) == int(frame["from_identity_template"].sum())
    assert set(doc["by_target"]["women"]) == {"n", "n_clusters", "accuracy", "macro_f1"}  # no slurs: nothing crossed
    assert set(doc["by_reclaimed_slur"]) == {"queer", "fag"}
    assert doc["contrast"]["n_pairs"] == 12
    for fig in [o["accuracy"], o["macro_f1"], doc["by_functionality"]["threat_dir_h"]["accuracy"]]:
        assert fig["ci_low"] <= fig["value"] <= fig["ci_high"]
        assert fig["value"] == round(fig["value"], 1)


def test_contrast_counts_both_right(project):
    frame = hatecheck_like()
    gold = scoring.gold_cases(SUITE)
    # right on every hateful case, wrong on every contrast: consistency 0
    pred = pl.DataFrame({"id": gold["id"], "pred": np.ones(gold.height, dtype=int)})
    cases = scoring.align(gold, pred)
    doc = scoring.score_cases(cases, "case_id", boot=Bootstrap(10))
    assert doc["contrast"]["both_correct"]["value"] == 0.0
    assert doc["contrast"]["hateful_correct"] == 100.0
    assert doc["by_label"]["hateful"]["accuracy"]["value"] == 100.0
    assert frame.height == gold.height


def test_mhc_ref_ids_map_to_language_ids():
    cases = pl.DataFrame(
        {
            "id": ["german-1", "german-2"],
            "gold": [1, 0],
            "pred": [1, 0],
            "ref_case_id": [None, "1.0"],
            "language": ["german", "german"],
        }
    )
    pairs = scoring.contrast_pairs(cases, "mhc_case_id")
    assert pairs.height == 1 and pairs["hateful_correct"][0] and pairs["contrast_correct"][0]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p: pl.concat([p, p.head(3)]), "3 duplicate id(s)"),
        (lambda p: p.slice(5), "5 of 60 suite case(s) have no prediction"),
        (lambda p: pl.concat([p, p.head(2).with_columns(pl.Series("case_id", ["x1", "x2"]))]), "2 unknown id(s)"),
        (
            lambda p: p.with_columns(pl.when(pl.int_range(pl.len()) < 4).then(pl.lit("maybe")).otherwise(pl.col("pred")).alias("pred")),
            "4 prediction(s) are not",
        ),
    ],
)
def test_bad_files_are_clear_errors(project, mutate, message):
    mutate(predictions(hatecheck_like(), 0.9)).write_csv("p.csv")
    with pytest.raises(scoring.ScoringError, match=message.replace("(", r"\(").replace(")", r"\)")):
        scoring.run(SUITE, "p.csv", "m.json", boot=Bootstrap(10))


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("binary.csv", bytes(range(256)) * 8, "binary.csv: line 2 (byte 128): bytes that are not UTF-8 text"),
        ("latin1.csv", "case_id,pred\n1,hateful\n2,caf\xe9\n".encode("latin-1"), "latin1.csv: line 3 (byte 28): bytes that are not UTF-8"),
        ("broken.parquet", b"PAR1 not really parquet", "broken.parquet: not a readable PARQUET predictions file"),
    ],
)
def test_unreadable_predictions_files_are_one_line_errors_naming_the_file(project, name, content, message):
    """A binary or non-UTF-8 file: one line naming the file, not a polars traceback."""
    (project / name).write_bytes(content)
    with pytest.raises(scoring.ScoringError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        scoring.run(SUITE, name, "m.json", boot=Bootstrap(10))
    assert "\n" not in str(info.value)
    result = CliRunner().invoke(app, ["score", "--suite", "hatecheck", "--predictions", name, "--out", "x.json"])
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_label_formats_agree(project):
    preds = predictions(hatecheck_like(), 0.7)
    preds.write_csv("words.csv")
    preds.with_columns((pl.col("pred") == "hateful").cast(pl.Int8).alias("pred")).write_csv("ints.csv")
    a = scoring.run(SUITE, "words.csv", "a.json", boot=Bootstrap(50))
    b = scoring.run(SUITE, "ints.csv", "b.json", boot=Bootstrap(50))
    c = scoring.run(SUITE, "words.csv", "c.json", pred_column="p_hateful", threshold=0.5, boot=Bootstrap(50))
    assert a["overall"] == b["overall"] == c["overall"]
    with pytest.raises(scoring.ScoringError, match="need --threshold"):
        scoring.run(SUITE, "words.csv", "d.json", pred_column="p_hateful", boot=Bootstrap(10))


def test_probabilities_with_a_threshold_name_only_the_bad_rows(project):
    """With --threshold the column holds probabilities: a value that is not
    a number, or not in [0, 1], is named with its row; the valid
    probabilities around it are not (CSV columns are read as text)."""
    preds = predictions(hatecheck_like(), 0.7).with_columns(pl.col("p_hateful").cast(pl.String))
    prob = preds["p_hateful"].to_list()
    prob[2], prob[4] = "abc", "1.7"
    preds.with_columns(pl.Series("p_hateful", prob)).write_csv("bad_prob.csv")
    with pytest.raises(scoring.ScoringError) as info:
        scoring.run(SUITE, "bad_prob.csv", "m.json", pred_column="p_hateful", threshold=0.5, boot=Bootstrap(10))
    message = str(info.value)
    assert "bad_prob.csv: column 'p_hateful': 2 prediction(s) are not probabilities in [0, 1] (--threshold 0.5 given)" in message
    assert "at row(s) 3, 5: 'abc', '1.7'" in message
    result = CliRunner().invoke(
        app,
        [
            "score",
            "--suite",
            "hatecheck",
            "--predictions",
            "bad_prob.csv",
            "--out",
            "x.json",
            "--pred-column",
            "p_hateful",
            "--threshold",
            "0.5",
        ],
    )
    assert result.exit_code == 1 and "row(s) 3, 5" in result.output and "Traceback" not in result.output


def test_score_cli(project):
    predictions(hatecheck_like(), 0.75).rename({"p_hateful": "prob"}).write_csv("third_party.csv")
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "score",
            "--suite",
            "hatecheck",
            "--predictions",
            "third_party.csv",
            "--out",
            "out/m.json",
            "--pred-column",
            "prob",
            "--threshold",
            "0.5",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((project / "out/m.json").read_text())
    assert doc["overall"]["n"] == 60 and doc["bootstrap"]["samples"] == 1000
    pl.DataFrame({"case_id": ["1"], "pred": ["hateful"]}).write_csv("short.csv")
    result = runner.invoke(app, ["score", "--suite", "hatecheck", "--predictions", "short.csv", "--out", "x.json"])
    assert result.exit_code == 1
    assert "59 of 60 suite case(s) have no prediction" in result.output
    result = runner.invoke(app, ["score", "--suite", "mhc:klingon", "--predictions", "short.csv", "--out", "x.json"])
    assert result.exit_code == 1 and "unknown MHC language" in result.output


def test_score_stage_function_scores_the_predicted_subsample(project):
    """The score stage: a capped profile scores exactly the seeded draw the
    predict stage made (``max_cases_per_suite`` cases, the model's seed)."""
    frame = hatecheck_like()
    profiles = {"small": {"max_cases_per_suite": 25}, "all": {"max_cases_per_suite": None}}
    drawn = predicted_subsample(frame, "case_id", 25, 7)
    predictions(drawn, 0.8).write_parquet("p.parquet")
    summary = scoring.score(
        SUITE,
        "B-D",
        "p.parquet",
        "data/interim/hatecheck/table.parquet",
        "m.json",
        "r.parquet",
        bootstrap=Bootstrap(20, 0),
        threshold=None,
        profile=Profile("small", profiles["small"]),
        model_seed=7,
    )
    doc = json.loads((project / "m.json").read_text())
    assert summary == f"B-D/hatecheck: macro F1 {doc['overall']['macro_f1']['value']}"
    assert doc["overall"]["n"] == 25
    assert {k: doc["bootstrap"][k] for k in ("samples", "seed", "level", "resampling_unit")} == {
        "samples": 20,
        "seed": 0,
        "level": 0.95,
        "resampling_unit": "template",
    }
    # the bootstrap values behind the overall and per-class intervals (the shots tables' gaps)
    reps = pl.read_parquet("r.parquet")
    overall = reps.filter((pl.col("section") == "overall") & (pl.col("figure") == "macro_f1"))["value"].to_numpy()
    assert len(overall) == 20 and set(reps["section"]) == {"overall", "by_functionality_class"}
    low, high = np.percentile(overall * 100, [2.5, 97.5])
    assert (round(low, 1), round(high, 1)) == (doc["overall"]["macro_f1"]["ci_low"], doc["overall"]["macro_f1"]["ci_high"])
    with pytest.raises(scoring.ScoringError, match="35 unknown id"):  # the whole suite against the 25 drawn
        predictions(frame, 0.8).write_parquet("all.parquet")
        scoring.score(
            SUITE,
            "B-D",
            "all.parquet",
            "data/interim/hatecheck/table.parquet",
            "x.json",
            "xr.parquet",
            bootstrap=Bootstrap(20, 0),
            threshold=0.5,
            profile=Profile("small", profiles["small"]),
            model_seed=7,
        )
    scoring.score(
        SUITE,
        "B-D",
        "all.parquet",
        "data/interim/hatecheck/table.parquet",
        "x.json",
        "xr.parquet",
        bootstrap=Bootstrap(20, 0),
        threshold=0.5,
        profile=Profile("all", profiles["all"]),
        model_seed=7,
    )
    assert json.loads((project / "x.json").read_text())["overall"]["n"] == 60


def test_expanded_suites_take_their_own_case_cap():
    """Score stages of expanded suites read max_expanded_cases_per_suite,
    the original suites max_cases_per_suite, prompted LLMs their own key."""
    from hatecheck_pipeline.core.config import load_params
    from hatecheck_pipeline.pipeline.registry import build_stages

    stages = {s.name: s for s in build_stages(load_params(REPO / "params.yaml"))}
    assert stages["score_XTC_perturbed_mhc_german"].args["cap_key"] == "max_expanded_cases_per_suite"
    assert stages["score_B-D_extended_english"].args["cap_key"] == "max_expanded_cases_per_suite"
    assert stages["score_XTC_mhc_german"].args["cap_key"] == "max_cases_per_suite"
    assert stages["score_LLM-EN_mhc_german"].args["cap_key"] == "llm_max_cases_per_suite"


def test_score_stage_runs_from_the_registry(project):
    """`hatecheck-pipeline run score_<model>_<suite>` reads the declared
    predictions and gold table and writes the declared metrics file."""
    predictions(hatecheck_like(), 0.8).write_parquet(_mkdir(paths.predictions("B-D", "hatecheck")))
    result = CliRunner().invoke(app, ["run", "score_B-D_hatecheck"])
    assert result.exit_code == 0, result.output
    doc = json.loads((project / paths.metrics("B-D", "hatecheck")).read_text())
    assert result.output.strip() == f"B-D/hatecheck: macro F1 {doc['overall']['macro_f1']['value']}"
    assert doc["suite"] == "hatecheck" and doc["overall"]["n"] == 60


def _mkdir(path: str) -> str:
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return path


def test_score_stage_writes_every_failing_case_in_suite_order(project):
    """failures.csv: exactly the cases whose prediction differs from the
    gold label, in the suite's order, with the published text, both labels
    and p(hateful) from the predictions file."""
    frame = hatecheck_like()
    preds = predictions(frame, 0.7, seed=3).sample(fraction=1.0, shuffle=True, seed=1)  # file order is not suite order
    preds.write_parquet("p.parquet")
    scoring.score(
        SUITE,
        "B-D",
        "p.parquet",
        "data/interim/hatecheck/table.parquet",
        "m.json",
        "r.parquet",
        bootstrap=Bootstrap(10, 0),
        threshold=None,
        profile=Profile("all", {"max_cases_per_suite": None}),
        model_seed=7,
        failures="f.csv",
    )
    failures = pl.read_csv(project / "f.csv", infer_schema_length=0)
    assert failures.columns == ["id", "functionality", "text", "gold_label", "predicted_label", "p_hateful"]
    joined = frame.join(preds, on="case_id")
    wrong = joined.filter(pl.col("label") != pl.col("pred"))
    assert 0 < failures.height == wrong.height < frame.height
    order = {cid: i for i, cid in enumerate(frame["case_id"])}
    assert failures["id"].to_list() == sorted(wrong["case_id"].to_list(), key=order.__getitem__)
    by_id = {r["case_id"]: r for r in joined.iter_rows(named=True)}
    for r in failures.iter_rows(named=True):
        case = by_id[r["id"]]
        assert (r["functionality"], r["text"], r["gold_label"], r["predicted_label"]) == (
            case["functionality"],
            case["text"],
            case["label"],
            case["pred"],
        )
        assert r["gold_label"] != r["predicted_label"]
        assert float(r["p_hateful"]) == pytest.approx(case["p_hateful"])
    doc = json.loads((project / "m.json").read_text())
    n_wrong = sum(round(v["n"] * (100 - v["accuracy"]["value"]) / 100) for v in doc["by_functionality"].values())
    assert n_wrong == failures.height


def test_failures_without_probabilities_or_errors(project):
    """A labels-only file has no p_hateful column; a perfect one leaves a header."""
    frame = hatecheck_like()
    predictions(frame, 0.6).drop("p_hateful").write_csv("labels.csv")
    scoring.run(SUITE, "labels.csv", "m.json", boot=Bootstrap(10), failures="f.csv")
    assert pl.read_csv("f.csv").columns == ["id", "functionality", "text", "gold_label", "predicted_label"]
    predictions(frame, 1.0).write_csv("perfect.csv")
    scoring.run(SUITE, "perfect.csv", "m.json", boot=Bootstrap(10), failures="g.csv")
    assert (project / "g.csv").read_text().splitlines() == ["id,functionality,text,gold_label,predicted_label,p_hateful"]


def test_score_cli_writes_the_failing_cases_beside_the_metrics(project):
    frame = hatecheck_like()
    predictions(frame, 0.75).write_csv("preds.csv")
    result = CliRunner().invoke(app, ["score", "--suite", "hatecheck", "--predictions", "preds.csv", "--out", "out/m.json"])
    assert result.exit_code == 0, result.output
    failures = pl.read_csv(project / "out/m.failures.csv", infer_schema_length=0)
    wrong = frame.join(pl.read_csv("preds.csv", infer_schema_length=0), on="case_id").filter(pl.col("label") != pl.col("pred"))
    assert set(failures["id"]) == set(wrong["case_id"]) and failures.height == wrong.height
    assert "out/m.failures.csv" in result.output


def test_score_stage_declares_its_failures_git_tracked():
    """failures.csv is an output of every score stage, kept in git (cache: false) as metrics.json is."""
    from hatecheck_pipeline.core.config import load_params
    from hatecheck_pipeline.pipeline.registry import build_stages, to_dvc

    stages = [s for s in build_stages(load_params(REPO / "params.yaml")) if s.name.startswith("score_")]
    doc = to_dvc(stages)["stages"]
    assert stages and all({model_failures(s.args["model"], s.args["suite"].name): {"cache": False}} in doc[s.name]["outs"] for s in stages)
