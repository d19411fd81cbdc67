"""The whole pipeline end to end on the `smoke` profile (tiny subsample, one
epoch, real offline stand-in models): Snakemake builds the report, DVC
records it, and one report number is traced back to the raw files."""

import json
import re

import polars as pl
import pytest
import yaml

from pipeline_utils import BIN, copy_project, dvc_ran_stages, run, set_param

pytestmark = pytest.mark.integration
REPORT = "reports/mhc_xtc.html"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    project = copy_project(tmp_path_factory.mktemp("smoke"))
    set_param(project, "profile", "smoke")
    run([str(BIN / "snakemake"), "--cores", "2", REPORT], project, timeout=3600)
    return project


def test_report_builds_from_the_smoke_profile(smoke, params):
    html = (smoke / REPORT).read_text()
    assert "<table" in html and "data-cell-id" in html
    assert "smoke" in html
    assert "multilingual-e5-small" in html  # the stand-in is named, not called XLM-T
    assert not re.search(r"""(?:src|href)=["']https?://""", html)
    for model in params["models"]:
        card = json.loads((smoke / f"models/{model}/model_card.json").read_text())
        assert card, model
    preds = pl.read_parquet(smoke / "results/XTC/mhc_hindi/predictions.parquet")
    assert set(preds.columns) >= {"id", "p_hateful", "pred", "model", "suite"}
    assert preds["p_hateful"].is_between(0, 1).all() and set(preds["pred"]) <= {"hateful", "non-hateful"}


def test_second_snakemake_run_does_nothing(smoke):
    again = run([str(BIN / "snakemake"), "--cores", "2", REPORT], smoke)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_lineage_of_a_report_number_reaches_the_raw_files(smoke):
    # DVC records what Snakemake built (no re-run): dvc.lock is the lineage record.
    run([str(BIN / "dvc"), "commit", "--force", "--with-deps", "report"], smoke)
    status = run([str(BIN / "dvc"), "repro", "--dry", "report"], smoke)
    assert dvc_ran_stages(status.stdout) == set()
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
