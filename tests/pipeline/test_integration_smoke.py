"""The user's day, end to end on the `smoke` profile (tiny subsample, one
epoch, real offline stand-in models): Snakemake builds the report and DVC
records it at once; one report number is traced back to the raw files; a
classifier trained elsewhere and a fine-tuned directory are tested and
diffed; Snakemake then has nothing to do. The parameter changes run in a
copy of this build (test_integration_smoke_params.py), so that a second
test process can run them beside these tests."""

import json
import re

import polars as pl
import pytest
import yaml
from pipeline_utils import BIN, dvc_ran_stages, run
from smoke_build import REPORT, smoke_workspaces, snakemake_is_a_noop

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return smoke_workspaces(tmp_path_factory)["smoke"]


def test_report_builds_from_the_smoke_profile(smoke, params):
    html = (smoke / REPORT).read_text()
    assert "<table" in html and "data-cell-id" in html
    assert "smoke" in html
    assert "multilingual-e5-small" in html  # the stand-in is named, not called XLM-T
    assert not re.search(r"""(?:src|href)=["']https?://""", html)
    for model, spec in params["models"].items():
        if spec.get("kind") == "llm":  # a prompted LLM: no training, its raw answers instead of a card
            answers = pl.read_csv(smoke / f"results/{model}/llm_answers.csv")
            assert answers["parsed"].all() and answers["p_hateful"].is_between(0, 1).all(), model
            continue
        card = json.loads((smoke / f"models/{model}/model_card.json").read_text())
        assert card, model
    # the prompted LLMs' functional results, English vs native instruction, each cell traceable
    assert 'id="llm-mhc"' in html and 'data-cell-id="mhc_t7:LLM-NATIVE:' in html
    preds = pl.read_parquet(smoke / "results/XTC/mhc_hindi/predictions.parquet")
    assert set(preds.columns) >= {"id", "p_hateful", "pred", "model", "suite"}
    assert preds["p_hateful"].is_between(0, 1).all() and set(preds["pred"]) <= {"hateful", "non-hateful"}


def test_snakemake_run_is_recorded_in_dvc_and_a_second_run_does_nothing(smoke):
    # the report and everything upstream of it (the stages this build ran)
    status = run([str(BIN / "dvc"), "status", "report"], smoke)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout[-3000:]
    assert dvc_ran_stages(run([str(BIN / "dvc"), "repro", "--dry", "report"], smoke).stdout) == set()
    assert snakemake_is_a_noop(smoke)


def test_lineage_of_a_report_number_reaches_the_raw_files_right_after_the_build(smoke):
    html = (smoke / REPORT).read_text()
    cells = re.findall(r'data-cell-id="([^"]+)"', html)
    cell = next(c for c in cells if "XTC" in c and "mhc" in c)
    out = run([str(BIN / "hatecheck-pipeline"), "lineage", cell], smoke).stdout
    registry = yaml.safe_load((smoke / "src/hatecheck_pipeline/resources/raw_sources.yaml").read_text())
    mhc_files = registry["mhc"]["files"]
    assert "train_XTC" in out and "predict_XTC" in out
    assert any(meta["url"] in out and meta["sha256"] in out for meta in mhc_files.values())
    es = registry["hateval2019"]["files"]["bas19_es.csv"]
    assert es["url"] in out and es["sha256"] in out  # through XTC's training data
    assert "src/hatecheck_pipeline/models/train.py" in out  # the code that made it, with its hash


def test_a_classifier_trained_elsewhere_stands_beside_the_papers_models(smoke):
    """HateSonar (an ONNX file from its PyPI wheel, pinned): its rows in the
    papers' tables, its Davidson held-out cell marked as its training data,
    its page, the diff against B-D, and its lineage down to the wheel."""
    html = (smoke / REPORT).read_text()
    assert 'data-cell-id="hatecheck_t1:hatesonar:' in html and 'data-cell-id="mhc_t7:hatesonar:' in html
    assert "classifier trained elsewhere (onnx)" in html
    seen = re.search(
        r'<td class="seen(?: [^"]*)?" data-cell-id="hatecheck_heldout:hatesonar:davidson2017:macro_f1"[^>]*>([^<]*)</td>', html
    )
    assert seen and "training data" in seen.group(1)
    founta = re.search(r'<td[^>]*data-cell-id="hatecheck_heldout:hatesonar:founta2018:macro_f1"', html)
    assert founta and 'class="seen' not in founta.group(0)
    assert 'id="diff-B-D-hatesonar-hatecheck"' in html and 'href="models/hatesonar.html"' in html
    page = (smoke / "reports/models/hatesonar.html").read_text()
    assert "hatesonar-0.1.0-py3-none-any.whl" in page and "<ul id='failing'>" in page
    out = run([str(BIN / "hatecheck-pipeline"), "lineage", "hatecheck_t1:hatesonar:slur_h:accuracy"], smoke).stdout
    assert "classifier_hatesonar" in out and "predict_hatesonar_hatecheck" in out
    assert "models/hatesonar/classifier/model.onnx" in out


def test_a_fine_tuned_directory_is_evaluated_as_a_classifier_and_diffed(smoke):
    """The docs' walkthrough: B-D's trained directory tested on the texts as
    published (no preprocessing scheme), then compared with B-D per test."""
    run([str(BIN / "hatecheck-pipeline"), "evaluate", "models/B-D/final", "--suites", "hatecheck", "--name", "B-D-raw"], smoke)
    card = json.loads((smoke / "models/B-D-raw/model_card.json").read_text())
    assert card["kind"] == "pretrained" and card["identity"]["content_sha256"]
    assert (smoke / "reports/models/B-D-raw.html").exists()
    out = run([str(BIN / "hatecheck-pipeline"), "diff", "B-D", "B-D-raw", "--suite", "hatecheck", "--out", "diff.json"], smoke).stdout
    doc = json.loads((smoke / "diff.json").read_text())
    assert "flagged:" in out and doc["correction"] == "holm" and doc["by_functionality"]
    assert "Data and pipelines are up to date" in run([str(BIN / "dvc"), "status", "report"], smoke).stdout
