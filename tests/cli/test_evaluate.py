"""`hatecheck-pipeline evaluate MODEL` in a fresh clone, as a user with a
classifier of their own runs it: a function and an ONNX file (a keyword rule
built here: its figures check the code, they are no results) tested on
HateCheck through the same registry, the data stages the suite needs built
and recorded in dvc.lock, the model's own stages not (it is not in
params.yaml), its page written; bad input is one line and leaves no page."""

from __future__ import annotations

import json

import polars as pl
import pytest
import yaml
from pipeline_utils import BIN, copy_project, git_commit_all, run, set_param

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = copy_project(tmp_path_factory.mktemp("evaluate"))
    set_param(project, "profile", "smoke")
    git_commit_all(project, "fresh clone")
    (project / "userclf.py").write_text(
        "def predict(texts):\n    return ['hateful' if 'hate' in t.lower() else 'non-hateful' for t in texts]\n"
        "def short(texts):\n    return [0]\n"
    )
    return project


def evaluate(project, *args, check=True):
    return run([str(BIN / "hatecheck-pipeline"), "evaluate", *args], project, check=check, timeout=1800)


def test_a_function_is_tested_through_the_registry_and_gets_its_page(project):
    evaluate(project, "userclf:predict", "--suites", "hatecheck", "--name", "kw")
    page = (project / "reports/models/kw.html").read_text()
    assert 'data-cell-id="hatecheck_t1:kw:' in page and "userclf.py" in page
    doc = json.loads((project / "results/kw/hatecheck/metrics.json").read_text())
    preds = pl.read_parquet(project / "results/kw/hatecheck/predictions.parquet")
    gold = pl.read_parquet(project / "data/interim/hatecheck/table.parquet").select(pl.col("case_id").cast(pl.Utf8).alias("id"), "text")
    joined = preds.join(gold, on="id")
    # the texts as published, the function's own labels
    assert joined.height == doc["overall"]["n"] == preds.height
    expected = ["hateful" if "hate" in t.lower() else "non-hateful" for t in joined["text"]]
    assert joined["pred"].to_list() == expected
    lock = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    assert "validate_hatecheck" in lock and not any(name.endswith("_kw") or "_kw_" in name for name in lock)
    again = evaluate(project, "userclf:predict", "--suites", "hatecheck", "--name", "kw")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_an_onnx_file_is_tested_with_its_classes(project):
    from models.test_classifiers import keyword_onnx

    from hatecheck_pipeline.core.files import sha256sum

    onnx_file = keyword_onnx(project / "kw.onnx")
    evaluate(project, str(onnx_file), "--suites", "hatecheck", "--classes", "neither,hateful", "--name", "kwonnx")
    card = json.loads((project / "models/kwonnx/model_card.json").read_text())
    assert card["kind"] == "onnx" and card["identity"]["content_sha256"] == sha256sum(onnx_file)
    preds = pl.read_parquet(project / "results/kwonnx/hatecheck/predictions.parquet")
    by_function = pl.read_parquet(project / "results/kw/hatecheck/predictions.parquet")
    # the same rule as the function of the test above, so the same labels
    assert preds.select("id", "pred").equals(by_function.select("id", "pred"))
    assert (project / "reports/models/kwonnx.html").exists()


def test_a_model_directory_is_tested_with_its_labels(project, tmp_path):
    """A tiny random BERT sequence classifier (no results: a check of the
    code) saved as a user would save theirs; its hateful class is read from
    its labels."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification
    from models_helpers import tiny_bert

    base = tiny_bert(tmp_path / "base")
    config = BertConfig.from_pretrained(base, num_labels=2, id2label={0: "normal", 1: "hateful"}, label2id={"normal": 0, "hateful": 1})
    folder = tmp_path / "my-classifier"
    BertForSequenceClassification(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    evaluate(project, str(folder), "--suites", "hatecheck")
    card = json.loads((project / "models/my-classifier/model_card.json").read_text())
    assert card["kind"] == "pretrained" and card["hateful"] == ["hateful"] and card["identity"]["content_sha256"]
    preds = pl.read_parquet(project / "results/my-classifier/hatecheck/predictions.parquet")
    assert preds["p_hateful"].is_between(0, 1).all() and (project / "reports/models/my-classifier.html").exists()
    assert pl.read_parquet_metadata(project / "results/my-classifier/hatecheck/predictions.parquet")["hatecheck_pipeline.precision"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["userclf:short", "--suites", "hatecheck", "--name", "short"], "returned 1 answers for"),
        (["userclf.py", "--suites", "hatecheck", "--name", "notonnx", "--classes", "a,hateful"], "onnxruntime cannot load it"),
        (["userclf:predict", "--suites", "nosuchsuite", "--name", "nosuite"], "'nosuchsuite' is not a suite"),
    ],
)
def test_bad_input_is_one_clear_line_and_no_page(project, args, message):
    done = evaluate(project, *args, check=False)
    assert done.returncode == 1
    assert message in done.stdout + done.stderr
    assert not (project / f"reports/models/{args[args.index('--name') + 1]}.html").exists()


def test_export_then_score_one_file_covering_several_suites(project):
    """The route for a model run elsewhere: export the suites' cases, add a
    `pred` column, score every suite from that one file."""
    run([str(BIN / "hatecheck-pipeline"), "export", "--suite", "hatecheck,mhc:german", "--out", "cases.csv"], project)
    cases = pl.read_csv(project / "cases.csv", infer_schema=False)
    assert set(cases.columns) == {"suite", "id", "text", "language", "functionality", "gold_label"}
    assert set(cases["suite"]) == {"hatecheck", "mhc_german"}
    # a perfect "model": its predictions are the gold labels
    cases.with_columns(pl.col("gold_label").alias("pred")).select("suite", "id", "pred").write_csv(project / "preds.csv")
    out = run(
        [str(BIN / "hatecheck-pipeline"), "score", "--suite", "hatecheck,mhc:german", "--predictions", "preds.csv", "--out", "scored"],
        project,
    ).stdout
    for suite in ("hatecheck", "mhc_german"):
        doc = json.loads((project / f"scored/{suite}.json").read_text())
        assert doc["overall"]["accuracy"]["value"] == 100.0 and doc["overall"]["n"] == (cases["suite"] == suite).sum()
        assert f"{suite}: n=" in out
    done = run(
        [
            str(BIN / "hatecheck-pipeline"),
            "score",
            "--suite",
            "hatecheck,mhc:german",
            "--predictions",
            "cases.csv",
            "--out",
            "x",
            "--pred-column",
            "nope",
        ],
        project,
        check=False,
    )
    assert done.returncode == 1 and "no prediction column 'nope'" in done.stdout + done.stderr
