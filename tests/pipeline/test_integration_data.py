"""The data stages run for real on the mirror through Snakemake and DVC;
a second run of each is a no-op; a dataset's parameter change re-runs
exactly that dataset's stages."""

import json
import re

import polars as pl
import pytest
import yaml
from pipeline_utils import (
    BIN,
    DATA_PHASES,
    copy_project,
    dry_run_jobs,
    dvc_ran_stages,
    run,
    set_param,
)

from hatecheck_pipeline.core import codedeps, paths
from hatecheck_pipeline.pipeline import registry as dag

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return copy_project(tmp_path_factory.mktemp("project"))


def data_stages(params):
    return [s for s in dag.build_stages(params) if s.phase in DATA_PHASES]


def test_snakemake_then_dvc_build_every_table(project, params):
    stages = data_stages(params)
    targets = [o for s in stages for o in s.all_outs]
    first = run([str(BIN / "snakemake"), "--cores", "2", "--verbose", *targets], project)
    # scheduling passes only when jobs start or finish (no job rate limiter,
    # whose timers add a pass per finished job every second: hundreds here)
    log = first.stdout + first.stderr
    passes = log.count("Waiting for running jobs to complete") + log.count("Waiting for more resources")
    assert 0 < passes <= 2 * len(stages) + 5, passes

    # counts and class balances as published
    counts = {d: json.loads((project / paths.counts(d)).read_text()) for d in ("davidson2017", "hateval2019_es", "haspeede2020", "fortuna2019", "hatecheck", "mhc", "crows_pairs")}
    for d, c in counts.items():
        assert c["raw_rows"] == c["kept"] + c["quarantined"], d
    assert abs(counts["davidson2017"]["hateful_share"] - 0.058) < 0.01
    assert abs(counts["hateval2019_es"]["hateful_share"] - 0.415) < 0.01
    assert abs(counts["haspeede2020"]["hateful_share"] - 0.418) < 0.01
    assert abs(counts["fortuna2019"]["hateful_share"] - 0.315) < 0.01
    assert counts["hatecheck"]["kept"] == 3728 and counts["crows_pairs"]["kept"] == 1508
    mhc = pl.read_parquet(project / paths.interim_table("mhc"))
    per_lang = dict(mhc.group_by("language").len().rows())
    assert per_lang == params["validation"]["suite_counts"]["mhc"]
    for d in counts:
        assert json.loads((project / paths.validation_json(d)).read_text())["success"], d

    # second Snakemake run: nothing to do
    again = run([str(BIN / "snakemake"), "--cores", "2", *targets], project)
    assert "Nothing to be done" in again.stdout + again.stderr

    # a nested key overridden from Snakemake's command line reaches only its stages
    nested = run([str(BIN / "snakemake"), "-n", "--cores", "1", *targets, "--config", 'set=["datasets.davidson2017.seed=7"]'], project)
    assert set(re.findall(r"rule (\S+):", nested.stdout)) == {"prepare_davidson2017", "validate_davidson2017", "preprocess_davidson2017_bert"}
    typo = run([str(BIN / "snakemake"), "-n", "--cores", "1", *targets, "--config", "nosuchkey=1"], project, check=False)
    assert typo.returncode != 0 and "nosuchkey" in typo.stdout + typo.stderr

    # a preprocessing parameter of one dataset re-runs only that dataset
    set_param(project, "datasets.davidson2017.seed", 7)
    jobs = set(dry_run_jobs(project, *targets))
    assert jobs == {"prepare_davidson2017", "validate_davidson2017", "preprocess_davidson2017_bert"}
    set_param(project, "datasets.davidson2017.seed", params["datasets"]["davidson2017"]["seed"])

    # DVC: the Snakemake run is already recorded in dvc.lock (no `dvc commit`
    # step), so `dvc status` is clean and a repro is a no-op
    names = [s.name for s in stages]
    assert "Data and pipelines are up to date" in run([str(BIN / "dvc"), "status", *names], project).stdout
    lock = (project / "dvc.lock").read_text()
    assert "data/raw/davidson2017/labeled_data.csv" in lock
    second = run([str(BIN / "dvc"), "repro", *names], project)
    assert dvc_ran_stages(second.stdout) == set()

    # a parameter change through DVC re-runs exactly that dataset's stages ...
    set_param(project, "datasets.davidson2017.seed", 7)
    third = run([str(BIN / "dvc"), "repro", *names], project)
    assert dvc_ran_stages(third.stdout) == {"prepare_davidson2017", "validate_davidson2017", "preprocess_davidson2017_bert"}
    locked = yaml.safe_load((project / "dvc.lock").read_text())["stages"]["prepare_davidson2017"]["params"]
    assert locked["params.yaml"]["datasets.davidson2017"]["seed"] == 7
    # ... after which Snakemake has nothing to do (DVC made those outputs with these values)
    after = run([str(BIN / "snakemake"), "--cores", "2", *targets], project)
    assert "Nothing to be done" in after.stdout + after.stderr

    # a run given a value on Snakemake's command line records that value in
    # dvc.lock (what lineage reads), not params.yaml's, which stays as it is
    davidson = {"prepare_davidson2017", "validate_davidson2017", "preprocess_davidson2017_bert"}
    override = ["--config", 'set=["datasets.davidson2017.seed=11"]']
    given = run([str(BIN / "snakemake"), "--cores", "2", *targets, *override], project)
    assert set(re.findall(r"rule (\S+):", given.stdout + given.stderr)) == davidson
    locked = yaml.safe_load((project / "dvc.lock").read_text())["stages"]["prepare_davidson2017"]["params"]
    assert locked["params.yaml"]["datasets.davidson2017"]["seed"] == 11
    assert yaml.safe_load((project / "params.yaml").read_text())["datasets"]["davidson2017"]["seed"] == 7
    assert "changed" in run([str(BIN / "dvc"), "status", "prepare_davidson2017"], project).stdout  # params.yaml says 7
    same = run([str(BIN / "snakemake"), "--cores", "2", *targets, *override], project)
    assert "Nothing to be done" in same.stdout + same.stderr
    # without the override the outputs made with seed 11 are stale to Snakemake too
    assert set(dry_run_jobs(project, *targets)) == davidson


def test_touching_a_module_flips_exactly_the_stages_whose_code_imports_it(tmp_path, params):
    """Code deps are computed from the import graph: after a recorded run,
    editing one module makes `dvc status` report exactly the stages whose
    import closure contains it."""
    stages = {s.name: s for s in data_stages(params) if s.name.endswith("crows_pairs")}
    fresh = copy_project(tmp_path / "fresh")  # DVC alone builds them from an empty workspace
    assert dvc_ran_stages(run([str(BIN / "dvc"), "repro", *stages], fresh).stdout) == set(stages)
    project = fresh
    assert "changed" not in run([str(BIN / "dvc"), "status", *stages], project).stdout
    for module in ("hatecheck_pipeline.data.specs", "hatecheck_pipeline.data.validate"):
        file = project / "src" / (module.replace(".", "/") + ".py")
        original = file.read_text()
        file.write_text(original + "\n# touched\n")
        try:
            out = run([str(BIN / "dvc"), "status", "--json", *stages], project).stdout
            changed = set(json.loads(out[out.index("{"):] if "{" in out else "{}"))
            expected = {n for n, s in stages.items() if module in codedeps.closure(s.module)}
            assert changed == expected, module
            assert expected and expected != set(stages), module
        finally:
            file.write_text(original)
