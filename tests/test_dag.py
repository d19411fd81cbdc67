"""One DAG, two runners: dvc.yaml and the Snakemake rules agree."""

import subprocess

import yaml

from conftest import REPO
from hatecheck_pipeline import dag
from pipeline_utils import BIN, dry_run_jobs


def test_dvc_yaml_is_rendered_from_the_registry():
    proc = subprocess.run([str(BIN / "hatecheck-pipeline"), "dag", "write", "--check"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_snakemake_rules_match_dvc_stages(params):
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    jobs = dry_run_jobs(REPO, "all", forceall=True)
    jobs.pop("all", None)
    assert set(jobs) == set(dvc), "stage names differ"
    for name, entry in dvc.items():
        persisted = {next(iter(o)) for o in entry.get("outs", []) if isinstance(o, dict) and next(iter(o.values())).get("persist")}
        outs = {next(iter(o)) if isinstance(o, dict) else o for key in ("outs", "metrics", "plots") for o in entry.get(key, [])}
        outs -= persisted  # checkpoints: DVC keeps them, Snakemake must not delete them
        assert jobs[name]["output"] == outs, name
        assert jobs[name]["input"] == set(entry["deps"]), name


def test_each_stage_declares_the_params_snakemake_tracks(params):
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for s in dag.build_stages(params):
        declared = set()
        for item in dvc[s.name].get("params", []):
            if isinstance(item, dict):
                declared |= {f"{f}:{k}" for f, keys in item.items() for k in keys}
            else:
                declared.add(item)
        assert declared == set(s.param_values(params)), s.name


def test_only_the_changed_dataset_is_downstream_of_its_params(params):
    stages = dag.build_stages(params)
    for s in stages:
        if s.name.startswith("prepare_"):
            assert s.params == (f"datasets.{s.name[len('prepare_'):]}",), s.name
    readers = {s.name for s in stages if any(k.startswith("datasets.davidson2017") for k in s.params)}
    assert readers == {"prepare_davidson2017"}


def test_snakemake_lint_is_clean():
    proc = subprocess.run([str(BIN / "snakemake"), "--lint"], cwd=REPO, capture_output=True, text=True)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout[-3000:]


def test_dag_does_not_depend_on_the_active_profile(params):
    """`dvc exp run -S profile=...` needs no new dvc.yaml."""
    rendered = {name: dag.to_dvc(dag.build_stages({**params, "profile": name})) for name in params["profiles"]}
    first = next(iter(rendered.values()))
    assert all(doc == first for doc in rendered.values())
