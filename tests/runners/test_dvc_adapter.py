"""The DVC calls the pipeline needs (runners/dvc_adapter.py) exist, with
the parameters passed, in the installed DVC; a real commit through them
leaves a project `dvc status` calls clean; `hatecheck-pipeline repro` runs
what `dvc repro` runs. On a DVC whose internals differ this fails, naming
the call: bump the pin in pyproject.toml only together with
runners/dvc_adapter.py."""

from __future__ import annotations

import ast
import importlib.metadata as md
import inspect
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO
from dvc_projects import chain_project, git_dvc_project

from hatecheck_pipeline.runners import dvc_adapter
from hatecheck_pipeline.runners.dvc_speedups import has, resolve


@pytest.mark.parametrize("where, name", sorted(dvc_adapter.NEEDED), ids=lambda x: str(x))
def test_each_needed_internal_exists_in_the_installed_dvc(where, name):
    why = dvc_adapter.NEEDED[(where, name)]
    try:
        assert has(where, name), f"DVC {md.version('dvc')}: {where} has no {name!r}; needed for: {why}"
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"DVC {md.version('dvc')}: {where} is gone ({exc}); needed for: {why}")


@pytest.mark.parametrize("where", sorted(dvc_adapter.NEEDED_SIGNATURES))
def test_each_wrapped_function_takes_what_the_wrapper_passes(where):
    params = dvc_adapter.NEEDED_SIGNATURES[where]
    found = tuple(inspect.signature(resolve(where)).parameters)[: len(params)]
    assert found == params, f"DVC {md.version('dvc')}: {where}{found}, the adapter passes {params}"


def test_the_installed_dvc_is_the_pinned_one():
    pin = re.search(r'"dvc==([^"]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert md.version("dvc") == pin, f"dvc {md.version('dvc')} installed, pyproject pins {pin}"


def test_commit_through_the_adapter_records_a_clean_stage(workdir):
    dvc = git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 5.0e-5}\n")
    (workdir / "in.txt").write_text("input\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n  s:\n    cmd: cp in.txt out.txt\n    deps: [in.txt]\n    params: [x]\n    outs: [out.txt]\n"
    )
    (workdir / "out.txt").write_text("input\n")  # as if Snakemake had run the command
    before = (workdir / "out.txt").stat().st_ino
    assert dvc_adapter.changed_stages() == {"s"}
    dvc_adapter.commit_stages(["s"])
    assert dvc_adapter.changed_stages() == set()
    assert "lr: 5e-05" in (workdir / "dvc.lock").read_text()
    assert (workdir / "out.txt").stat().st_ino == before  # not re-linked
    status = subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    assert "up to date" in status
    with pytest.raises(RuntimeError, match="no stage"):
        dvc_adapter.commit_stages(["nope"])
    lock, error = dvc_adapter.repository_lock(workdir / ".dvc/tmp/lock")
    lock.lock()
    other, _ = dvc_adapter.repository_lock(workdir / ".dvc/tmp/lock")
    with pytest.raises(error):
        other.lock()
    lock.unlock()


def test_a_commit_records_the_values_a_run_was_given(workdir):
    """`snakemake --config profile=b`: the stages ran with profile b, so the
    lock records b's keys and values (dvc.yaml's `profiles.${profile}.n`
    resolved with the override), not params.yaml's; params.yaml is left as
    it is, and plain DVC then finds the stage changed (params.yaml says a)."""
    from dvc.dependency import param
    from dvc.utils import serialize

    dvc = git_dvc_project()
    text = "profile: a\nprofiles:\n  a: {n: 1}\n  b: {n: 2}\n"
    (workdir / "params.yaml").write_text(text)
    (workdir / "dvc.yaml").write_text(
        "stages:\n  s:\n    cmd: cp in.txt out.txt\n    deps: [in.txt]\n"
        "    params: [profile, 'profiles.${profile}.n']\n    outs: [out.txt]\n"
    )
    (workdir / "in.txt").write_text("input\n")
    (workdir / "out.txt").write_text("input\n")
    loaders = serialize.load_path, param.load_path
    dvc_adapter.commit_stages(["s"], overrides={"profile": "b"})
    assert (serialize.load_path, param.load_path) == loaders  # put back
    assert (workdir / "params.yaml").read_text() == text
    import yaml

    recorded = yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]["s"]["params"]["params.yaml"]
    assert recorded == {"profile": "b", "profiles.b.n": 2}
    assert dvc_adapter.changed_stages(overrides={"profile": "b"}) == set()
    assert dvc_adapter.changed_stages() == {"s"}
    assert "modified:           profile" in subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    # a nested override, and without overrides the lock follows params.yaml again
    dvc_adapter.commit_stages(["s"], overrides={"profile": "b", "profiles.b.n": 7})
    assert yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]["s"]["params"]["params.yaml"] == {"profile": "b", "profiles.b.n": 7}
    dvc_adapter.commit_stages(["s"])
    assert yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]["s"]["params"]["params.yaml"] == {"profile": "a", "profiles.a.n": 1}
    assert dvc_adapter.changed_stages() == set()


def test_a_project_outside_git_commits_too(workdir):
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], check=True)
    (workdir / "params.yaml").write_text("x: 1\n")
    (workdir / "dvc.yaml").write_text("stages:\n  s:\n    cmd: cp a b\n    deps: [a]\n    params: [x]\n    outs: [b]\n")
    (workdir / "a").write_text("a\n")
    (workdir / "b").write_text("a\n")
    dvc_adapter.commit_stages(["s"])
    assert dvc_adapter.changed_stages() == set()


def test_repro_runs_what_dvc_repro_runs_and_writes_the_same_lock(workdir):
    """`hatecheck-pipeline repro` (dvc_adapter.reproduce): after an input
    and a parameter change, the same stages run as under `dvc repro` and the
    lock is the same, byte for byte, though written once; run again, nothing
    runs; a stage that fails leaves the stages that ran before it recorded."""
    import shutil

    dvc = chain_project(workdir)
    (workdir / "in.txt").write_text("changed\n")
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 3}\n")
    twin = workdir.parent / (workdir.name + "_dvc")
    shutil.copytree(workdir, twin, symlinks=True)
    subprocess.run([*dvc, "repro", "-q"], check=True, cwd=twin)
    assert sorted(dvc_adapter.reproduce()) == ["s0", "s1", "s2", "s3"]
    assert (workdir / "dvc.lock").read_bytes() == (twin / "dvc.lock").read_bytes()
    assert (workdir / "o3.txt").read_text() == "changed\n"
    assert dvc_adapter.reproduce() == [] and dvc_adapter.changed_stages() == set()
    (workdir / "ok.txt").unlink()
    (workdir / "in.txt").write_text("again\n")
    with pytest.raises(Exception, match="s3"):
        dvc_adapter.reproduce()
    assert dvc_adapter.changed_stages() == {"s3"}  # s0 and s1 ran and were recorded
    status = subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    assert "s3:" in status and "s0:" not in status and "s1:" not in status


def test_the_repro_command_reports_what_ran(workdir):
    """The command prints DVC's own messages as `dvc repro` does, then what
    ran; --dry runs nothing."""
    cli = [sys.executable, "-c", "from hatecheck_pipeline.cli.app import cli; cli()", "repro"]
    chain_project(workdir)
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 5}\n")
    dry = subprocess.run([*cli, "--dry"], capture_output=True, text=True)
    assert dry.returncode == 0 and "Running stage 's2'" in dry.stdout, dry.stderr
    assert dvc_adapter.changed_stages() == {"s2"}  # a dry run runs nothing
    done = subprocess.run(cli, capture_output=True, text=True)
    assert done.returncode == 0 and "1 stage(s) ran and are recorded in dvc.lock" in done.stdout, done.stderr
    assert "Running stage 's2'" in done.stdout and "Stage 's0' didn't change, skipping" in done.stdout
    assert dvc_adapter.changed_stages() == set()
    again = subprocess.run(cli, capture_output=True, text=True)
    assert again.returncode == 0 and "up to date" in again.stdout


def test_only_the_adapter_and_the_speedups_import_dvc():
    """The seam: every other module goes through runners/dvc_adapter.py."""
    importers = set()
    for path in (REPO / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n.split(".")[0] in ("dvc", "scmrepo", "dulwich") for n in names):
                importers.add(path.relative_to(REPO / "src/hatecheck_pipeline").as_posix())
    assert importers == {"runners/dvc_adapter.py", "runners/dvc_speedups.py"}


def test_a_stage_dvc_runs_is_read_from_the_rwlock_dvc_writes(workdir):
    """While DVC's own rwlock (what `dvc repro` takes around a stage's
    command) holds an output, stage_runs names the process and its command;
    once released, nothing."""
    from dvc.fs import LocalFileSystem
    from dvc.rwlock import rwlock

    tmp = workdir / ".dvc" / "tmp"
    tmp.mkdir(parents=True)
    with rwlock(str(tmp), LocalFileSystem(), "dvc repro prepare_x", [str(workdir / "in.txt")], [str(workdir / "data/x")], False):
        assert dvc_adapter.stage_runs(tmp / "rwlock") == f"PID {os.getpid()}: dvc repro prepare_x"
    assert dvc_adapter.stage_runs(tmp / "rwlock") == ""
    assert dvc_adapter.stage_runs(tmp / "missing") == ""


def test_a_file_is_read_as_it_was_at_a_revision(workdir):
    dvc = git_dvc_project()
    (workdir / "preds.csv").write_text("old\n")
    subprocess.run([*dvc, "add", "-q", "preds.csv"], check=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "preds.csv.dvc", ".gitignore"], check=True)
    subprocess.run([*git, "commit", "-qm", "preds"], check=True)
    (workdir / "preds.csv").write_text("new\n")
    assert dvc_adapter.read_at("preds.csv", "HEAD") == b"old\n"
