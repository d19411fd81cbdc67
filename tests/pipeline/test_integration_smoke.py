"""The user's day, end to end on the `smoke` profile (tiny subsample, one
epoch, real offline stand-in models): Snakemake builds the report and DVC
records it at once; a parameter change through `dvc exp run` and through an
edit + `dvc repro` re-runs exactly the stages downstream of that key;
metrics and plots diffs show the change; one report number is traced back
to the raw files; Snakemake then has nothing to do."""

import json
import re

import polars as pl
import pytest
import yaml
from pipeline_utils import (
    BIN,
    copy_project,
    downstream,
    dvc_ran_stages,
    git_commit_all,
    require_free_disk,
    run,
    set_param,
)

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.pipeline.registry import build_stages

pytestmark = pytest.mark.integration
REPORT = "reports/mhc_xtc.html"
# The smoke workspace's models and DVC cache, with the other integration
# modules' workspaces beside it, peaked at 8 GiB under pytest's temp folder
# in a whole `.ci/run`; the rest is a margin.
SMOKE_DISK_GIB = 10


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    require_free_disk(tmp_path_factory.getbasetemp(), SMOKE_DISK_GIB, "the smoke run")
    project = copy_project(tmp_path_factory.mktemp("smoke"))
    set_param(project, "profile", "smoke")
    git_commit_all(project, "fresh clone")
    run([str(BIN / "snakemake"), "--cores", "2", REPORT], project, timeout=3600)
    return project


def snakemake_is_a_noop(project) -> bool:
    again = run([str(BIN / "snakemake"), "--cores", "2", REPORT], project)
    return "Nothing to be done" in again.stdout + again.stderr


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
    seen = re.search(r'<td class="seen(?: [^"]*)?" data-cell-id="hatecheck_heldout:hatesonar:davidson2017:macro_f1"[^>]*>([^<]*)</td>', html)
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


def test_a_parameter_change_reruns_exactly_what_depends_on_it(smoke):
    git_commit_all(smoke, "baseline: the smoke report, its metrics and dvc.lock")
    stages = build_stages(load_params(smoke / "params.yaml"))
    readers = {s.name for s in stages if any(k.startswith("datasets.davidson2017") for k in s.param_keys)}
    assert readers == {"prepare_davidson2017"}
    allowed = downstream(stages, readers)

    exp = run([str(BIN / "dvc"), "exp", "run", "-S", "datasets.davidson2017.seed=7", "report"], smoke, timeout=3600)
    ran = dvc_ran_stages(exp.stdout)
    assert readers <= ran <= allowed, sorted(ran - allowed)
    assert {"validate_davidson2017", "preprocess_davidson2017_bert", "train_B-D", "report"} <= ran  # the new split flows down
    assert not any(name.endswith(("XTC", "B-F")) or "_XTC_" in name or "_B-F_" in name for name in ran)

    # the changed numbers show in the diffs against the baseline commit
    metrics = run([str(BIN / "dvc"), "metrics", "diff", "--json"], smoke).stdout
    diff = json.loads(metrics)
    assert "results/B-D/heldout_davidson2017/metrics.json" in diff
    assert "results/XTC/mhc_german/metrics.json" not in diff
    plots = run([str(BIN / "dvc"), "plots", "diff", "--json"], smoke).stdout
    assert "hatecheck_functionality.csv" in plots

    # both runners agree that nothing is left to do
    assert "Data and pipelines are up to date" in run([str(BIN / "dvc"), "status", "report"], smoke).stdout
    assert snakemake_is_a_noop(smoke)

    # what the new split changed in B-D, per functional test, against the baseline commit (DVC's cache at HEAD)
    out = run([str(BIN / "hatecheck-pipeline"), "diff", "B-D", "--rev", "HEAD", "--suite", "hatecheck", "--out", "rev_diff.json"], smoke).stdout
    doc = json.loads((smoke / "rev_diff.json").read_text())
    assert doc["a"]["model"] == "B-D@HEAD" and doc["b"]["model"] == "B-D" and "flagged:" in out
    (smoke / "rev_diff.json").unlink()

    # a plain edit of params.yaml and `dvc repro`: only the report reads report.title
    set_param(smoke, "report.title", "Smoke report, retitled")
    repro = run([str(BIN / "dvc"), "repro", "report"], smoke, timeout=3600)
    assert dvc_ran_stages(repro.stdout) == {"report"}
    assert "Smoke report, retitled" in (smoke / REPORT).read_text()
    assert snakemake_is_a_noop(smoke)

    # one key of the active profile: only the stages that read it, and what
    # they feed, re-run (each stage declares the profile keys it reads)
    stages = build_stages(load_params(smoke / "params.yaml"))
    readers = {s.name for s in stages if "profiles.smoke.crows_max_pairs" in s.param_keys}
    assert readers and all(name.startswith("crows_pairs_") for name in readers)
    set_param(smoke, "profiles.smoke.crows_max_pairs", 10)
    ran = dvc_ran_stages(run([str(BIN / "dvc"), "repro", "report"], smoke, timeout=3600).stdout)
    assert readers <= ran <= downstream(stages, readers), sorted(ran)
    assert "report" in ran and not any(name.startswith(("train_", "predict_", "score_")) for name in ran)
    assert snakemake_is_a_noop(smoke)
