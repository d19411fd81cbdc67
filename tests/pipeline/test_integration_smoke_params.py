"""A parameter change on the built smoke report (a copy of the build that
test_integration_smoke.py reads): through an edit of params.yaml and
`hatecheck-pipeline repro` (a dataset's split: every phase from preparing
it to the report), `dvc exp run -S` (the report's title) and plain
`dvc repro` (a profile key), exactly the stages downstream of the key
re-run; the metrics and plots diffs show the change, `diff --rev` compares
with the baseline commit, and both runners then have nothing to do."""

import json

import pytest
from pipeline_utils import BIN, downstream, dvc_ran_stages, git_commit_all, run, set_param
from smoke_build import REPORT, smoke_workspaces, snakemake_is_a_noop

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.pipeline.registry import build_stages

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return smoke_workspaces(tmp_path_factory)["smoke-params"]


def test_a_parameter_change_reruns_exactly_what_depends_on_it(smoke):
    git_commit_all(smoke, "baseline: the smoke report, its metrics and dvc.lock")
    stages = build_stages(load_params(smoke / "params.yaml"))
    readers = {s.name for s in stages if any(k.startswith("datasets.davidson2017") for k in s.param_keys)}
    assert readers == {"prepare_davidson2017"}
    allowed = downstream(stages, readers)

    # DVC's repro with the lock written once (docs/pipeline.md); stock `dvc exp run`
    # and `dvc repro` come below, on keys with shorter downstreams
    set_param(smoke, "datasets.davidson2017.seed", 7)
    repro = run([str(BIN / "hatecheck-pipeline"), "repro", "report"], smoke, timeout=3600)
    ran = dvc_ran_stages(repro.stdout + repro.stderr)
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
    out = run(
        [str(BIN / "hatecheck-pipeline"), "diff", "B-D", "--rev", "HEAD", "--suite", "hatecheck", "--out", "rev_diff.json"], smoke
    ).stdout
    doc = json.loads((smoke / "rev_diff.json").read_text())
    assert doc["a"]["model"] == "B-D@HEAD" and doc["b"]["model"] == "B-D" and "flagged:" in out
    (smoke / "rev_diff.json").unlink()

    # `dvc exp run -S` (quoted for its override grammar, where a comma makes a sweep): only the report reads report.title
    exp = run([str(BIN / "dvc"), "exp", "run", "-S", "report.title='Smoke report, retitled'", "report"], smoke, timeout=3600)
    assert dvc_ran_stages(exp.stdout) == {"report"}
    assert "Smoke report, retitled" in (smoke / REPORT).read_text()
    assert snakemake_is_a_noop(smoke)

    # one key of the active profile: only the stage that reads it, and what
    # it feeds, re-run (each stage declares the profile keys it reads)
    stages = build_stages(load_params(smoke / "params.yaml"))
    readers = {s.name for s in stages if "profiles.smoke.llm_misspelling_max_texts" in s.param_keys}
    assert readers == {"llm_misspelling_local"}  # the prompted misspelling rows alone
    set_param(smoke, "profiles.smoke.llm_misspelling_max_texts", 3)  # a plain edit of params.yaml and `dvc repro`
    ran = dvc_ran_stages(run([str(BIN / "dvc"), "repro", "report"], smoke, timeout=3600).stdout)
    assert readers <= ran <= downstream(stages, readers) and "report" in ran, sorted(ran)
    assert snakemake_is_a_noop(smoke)
