"""The data stages run for real on the mirror through Snakemake and DVC;
a second run of each is a no-op; a dataset's parameter change re-runs
exactly that dataset's stages."""

import json
import os
import re

import polars as pl
import pytest
import yaml
from pipeline_utils import (
    BIN,
    DATA_PHASES,
    copy_project,
    downstream,
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
    counts = {
        d: json.loads((project / paths.counts(d)).read_text())
        for d in ("davidson2017", "hateval2019_es", "haspeede2020", "fortuna2019", "hatecheck", "mhc", "crows_pairs")
    }
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
    assert set(re.findall(r"rule (\S+):", nested.stdout)) == {
        "prepare_davidson2017",
        "validate_davidson2017",
        "preprocess_davidson2017_bert",
    }
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
    # the code fingerprints (refreshed by Snakemake when it read the Snakefile) are recorded too
    assert "Data and pipelines are up to date" in run([str(BIN / "dvc"), "status", dag.FINGERPRINT_STAGE], project).stdout
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
    """Code deps are each stage's code fingerprint (its import closure with
    the hash of each module's normalised code): after a recorded run, a real
    edit of one module makes `dvc status` report exactly the stages whose
    closure contains it once the fingerprints are refreshed, and Snakemake
    re-run those; a comment, docstring or formatting edit re-runs nothing in
    either runner (`dvc repro` runs the fingerprint stage only)."""
    stages = {s.name: s for s in data_stages(params) if s.name.endswith("crows_pairs")}
    targets = [o for s in stages.values() for o in s.all_outs]
    project = copy_project(tmp_path / "fresh")  # DVC alone builds them from an empty workspace
    assert dvc_ran_stages(run([str(BIN / "dvc"), "repro", *stages], project).stdout) == {*stages, dag.FINGERPRINT_STAGE}
    assert "changed" not in run([str(BIN / "dvc"), "status", *stages, dag.FINGERPRINT_STAGE], project).stdout
    assert dry_run_jobs(project, *targets) == {}

    def changed() -> set[str]:
        out = run([str(BIN / "dvc"), "status", "--json", *stages], project).stdout
        return set(json.loads(out[out.index("{") :] if "{" in out else "{}"))

    fingerprints = sorted((project / "code").glob("*.txt"))
    before = {p: p.read_bytes() for p in fingerprints}
    stamps = {p: p.stat().st_mtime_ns for p in fingerprints}

    # a comment, a docstring and a formatting edit: nothing re-runs
    file = project / "src/hatecheck_pipeline/data/specs.py"
    original = file.read_text()
    edited = original.replace('"""The dataset registry', '"""Edited. The dataset registry', 1)  # the module docstring
    edited = edited.replace("from dataclasses import dataclass\n", "from dataclasses import (\n    dataclass,  # frozen specs\n)\n", 1)
    assert edited.count("Edited.") == 1 and "dataclass,  # frozen" in edited
    file.write_text("# a comment\n" + edited + "\n\n# the end\n")
    ran = run([str(BIN / "dvc"), "repro", *stages], project)
    assert dvc_ran_stages(ran.stdout) == {dag.FINGERPRINT_STAGE}
    assert {p: p.read_bytes() for p in fingerprints} == before
    assert {p: p.stat().st_mtime_ns for p in fingerprints} == stamps
    assert changed() == set()
    assert dry_run_jobs(project, *targets) == {}  # Snakemake: nothing to do
    file.write_text(original)
    run([str(BIN / "dvc"), "repro", dag.FINGERPRINT_STAGE], project)

    # a real edit: exactly the stages whose closure holds the module
    for module in ("hatecheck_pipeline.data.specs", "hatecheck_pipeline.data.validate"):
        file = project / "src" / (module.replace(".", "/") + ".py")
        original = file.read_text()
        file.write_text(original + "\nTOUCHED = 1\n")
        try:
            run([str(BIN / "dvc"), "repro", dag.FINGERPRINT_STAGE], project)
            expected = {n for n, s in stages.items() if module in codedeps.closure(s.module)}
            assert changed() == expected, module
            assert expected and expected != set(stages), module
            assert set(dry_run_jobs(project, *targets)) == downstream(stages.values(), expected), module
        finally:
            file.write_text(original)
            run([str(BIN / "dvc"), "repro", dag.FINGERPRINT_STAGE], project)
            assert {p: p.read_bytes() for p in fingerprints} == before
            for p, ns in stamps.items():  # byte-identical again: as Snakemake saw them
                os.utime(p, ns=(ns, ns))
        assert changed() == set()
