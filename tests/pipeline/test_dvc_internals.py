"""The DVC internals behind the Snakemake-to-DVC recording exist, with the
parameters we pass, in the installed DVC; and a real commit through them
leaves a project `dvc status` calls clean. On a DVC whose internals differ
this fails, naming the call (issue 31): bump the pin in pyproject.toml only
together with pipeline/dvc_internals.py."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as md
import inspect
import re
import subprocess
import sys

import pytest
from conftest import REPO

from hatecheck_pipeline.pipeline import dvc_internals


def resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize("where, name", sorted(dvc_internals.RELIED_ON), ids=lambda x: str(x))
def test_each_internal_exists_in_the_installed_dvc(where, name):
    why = dvc_internals.RELIED_ON[(where, name)]
    try:
        obj = resolve(where)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"DVC {md.version('dvc')}: {where} is gone ({exc}); needed for: {why}")
    if callable(obj) and not isinstance(obj, type) and name in inspect.signature(obj).parameters:
        return  # a parameter of a function
    assert hasattr(obj, name), f"DVC {md.version('dvc')}: {where} has no {name!r}; needed for: {why}"


def test_the_installed_dvc_is_the_pinned_one():
    pin = re.search(r'"dvc==([^"]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    assert md.version("dvc") == pin, f"dvc {md.version('dvc')} installed, pyproject pins {pin}"


def _git_dvc_project() -> list[str]:
    """git init and dvc init in the working directory; returns the dvc command."""
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*dvc, "init", "-q"], check=True)
    return dvc


def test_commit_through_the_internals_records_a_clean_stage(workdir):
    dvc = _git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 5.0e-5}\n")
    (workdir / "in.txt").write_text("input\n")
    (workdir / "dvc.yaml").write_text("stages:\n  s:\n    cmd: cp in.txt out.txt\n    deps: [in.txt]\n"
                                      "    params: [x]\n    outs: [out.txt]\n")
    (workdir / "out.txt").write_text("input\n")  # as if Snakemake had run the command
    before = (workdir / "out.txt").stat().st_ino
    assert dvc_internals.changed_stages() == {"s"}
    dvc_internals.commit_stages(["s"])
    assert dvc_internals.changed_stages() == set()
    assert "lr: 5e-05" in (workdir / "dvc.lock").read_text()
    assert (workdir / "out.txt").stat().st_ino == before  # not re-linked
    status = subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    assert "up to date" in status
    with pytest.raises(RuntimeError, match="no stage"):
        dvc_internals.commit_stages(["nope"])
    lock, error = dvc_internals.repository_lock(workdir / ".dvc/tmp/lock")
    lock.lock()
    other, _ = dvc_internals.repository_lock(workdir / ".dvc/tmp/lock")
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

    dvc = _git_dvc_project()
    text = "profile: a\nprofiles:\n  a: {n: 1}\n  b: {n: 2}\n"
    (workdir / "params.yaml").write_text(text)
    (workdir / "dvc.yaml").write_text("stages:\n  s:\n    cmd: cp in.txt out.txt\n    deps: [in.txt]\n"
                                      "    params: [profile, 'profiles.${profile}.n']\n    outs: [out.txt]\n")
    (workdir / "in.txt").write_text("input\n")
    (workdir / "out.txt").write_text("input\n")
    loaders = serialize.load_path, param.load_path
    dvc_internals.commit_stages(["s"], overrides={"profile": "b"})
    assert (serialize.load_path, param.load_path) == loaders  # put back
    assert (workdir / "params.yaml").read_text() == text
    import yaml

    recorded = yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]["s"]["params"]["params.yaml"]
    assert recorded == {"profile": "b", "profiles.b.n": 2}
    assert dvc_internals.changed_stages(overrides={"profile": "b"}) == set()
    assert dvc_internals.changed_stages() == {"s"}
    assert "modified:           profile" in subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    # a nested override, and without overrides the lock follows params.yaml again
    dvc_internals.commit_stages(["s"], overrides={"profile": "b", "profiles.b.n": 7})
    assert yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]["s"]["params"]["params.yaml"] == {"profile": "b", "profiles.b.n": 7}
    dvc_internals.commit_stages(["s"])
    assert yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]["s"]["params"]["params.yaml"] == {"profile": "a", "profiles.a.n": 1}
    assert dvc_internals.changed_stages() == set()


def test_a_commit_parses_the_params_file_once_and_answers_tracked_as_git_does(workdir, monkeypatch):
    from dvc.dependency import param
    from scmrepo.git import Git

    _git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 2}\n")
    stages = "".join(f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [x, y]\n"
                     f"    outs: [o{i}.txt]\n" for i in range(3))
    (workdir / "dvc.yaml").write_text("stages:\n" + stages)
    for name in ("in.txt", "o0.txt", "o1.txt", "o2.txt", "sub/kept.txt"):
        (workdir / name).parent.mkdir(exist_ok=True)
        (workdir / name).write_text("input\n")
    subprocess.run(["git", "add", "in.txt", "sub/kept.txt"], check=True)
    parses = []
    real = param.load_path
    monkeypatch.setattr(param, "load_path", lambda path, fs, **kw: parses.append(path) or real(path, fs, **kw))
    dvc_internals.commit_stages(["s0", "s1", "s2"])
    assert [p for p in parses if p.endswith("params.yaml")] == [str(workdir / "params.yaml")]  # 3 stages, 1 parse
    assert param.load_path.__name__ == "<lambda>"  # put back after the commit
    assert dvc_internals.changed_stages() == set()
    git = Git(str(workdir))
    answer = dvc_internals._tracked_in(str(workdir))
    for path in ("in.txt", "sub", "sub/kept.txt", "o0.txt", "su", "sub/other.txt"):
        assert answer(str(workdir / path)) == git.is_tracked(str(workdir / path)), path


def _three_recorded_stages(workdir):
    """A git + DVC project whose stages s0, s1 (param x.lr) and s2 (y.n)
    are recorded up to date; returns the dvc command."""
    dvc = _git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 2}\n")
    (workdir / "dvc.yaml").write_text("stages:\n" + "".join(
        f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [{'x.lr' if i < 2 else 'y.n'}]\n"
        f"    outs: [o{i}.txt]\n" for i in range(3)))
    for name in ("in.txt", "o0.txt", "o1.txt", "o2.txt"):
        (workdir / name).write_text("input\n")
    dvc_internals.commit_stages(["s0", "s1", "s2"])
    return dvc


def test_the_status_parses_the_params_file_once_and_finds_what_dvc_finds(workdir, monkeypatch):
    """changed_stages (asked before Snakemake re-stamps a pulled or edited
    workspace) reads params.yaml once for all stages, and still answers
    what `dvc status` answers: nothing, then exactly the stages whose
    declared key changed."""
    from dvc.dependency import param

    dvc = _three_recorded_stages(workdir)
    parses = []
    real = param.load_path
    monkeypatch.setattr(param, "load_path", lambda path, fs, **kw: parses.append(path) or real(path, fs, **kw))
    index_reads = []
    monkeypatch.setattr(dvc_internals, "_tracked_in", lambda root: index_reads.append(root))
    assert dvc_internals.changed_stages() == set()
    assert [p for p in parses if p.endswith("params.yaml")] == [str(workdir / "params.yaml")]  # 3 stages, 1 parse
    assert index_reads == []  # a status never asks is_tracked: git's index is not read for it
    assert param.load_path.__name__ == "<lambda>"  # put back after the status
    (workdir / "params.yaml").write_text("x: {lr: 0.5}\ny: {n: 2}\n")
    assert dvc_internals.changed_stages() == {"s0", "s1"}
    status = subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    assert "s0:" in status and "s1:" in status and "s2:" not in status


def test_the_recording_benchmark_runs_both_ways_on_a_small_project(workdir):
    _git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\n")
    (workdir / "dvc.yaml").write_text("stages:\n" + "".join(
        f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [x]\n    outs: [o{i}.txt]\n" for i in range(2)))
    for name in ("in.txt", "o0.txt", "o1.txt"):
        (workdir / name).write_text("input\n")
    dvc_internals.commit_stages(["s0", "s1"])
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/bench_dvc_record.py"), "--repeat", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "stages: 2" in proc.stdout and "dvc.lock identical across runs: True" in proc.stdout
    assert re.search(r"^plain\s+median\s+[\d.]+ s", proc.stdout, re.M) and re.search(r"^memoised\s+median", proc.stdout, re.M)


def test_a_project_outside_git_commits_too(workdir):
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], check=True)
    (workdir / "params.yaml").write_text("x: 1\n")
    (workdir / "dvc.yaml").write_text("stages:\n  s:\n    cmd: cp a b\n    deps: [a]\n    params: [x]\n    outs: [b]\n")
    (workdir / "a").write_text("a\n")
    (workdir / "b").write_text("a\n")
    dvc_internals.commit_stages(["s"])
    assert dvc_internals.changed_stages() == set()


def test_the_dry_run_benchmark_finds_the_same_stages_under_every_variant(workdir):
    """bench_dvc_dry.py's patched variants (params read once, no rwlock)
    must see what DVC as installed sees: nothing on an up-to-date project,
    and every stage whose declared param changed, the others left alone."""
    _three_recorded_stages(workdir)

    def bench() -> str:
        proc = subprocess.run([sys.executable, str(REPO / "benchmarks/bench_dvc_dry.py"), "--rounds", "1", "--stage", "s2"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    out = bench()
    assert "dry-run output identical across variants and rounds: True; stages it would run: 0" in out
    for row in ("stock", "params-once", "params-once-no-rwlock", "dvc status s2", "dvc --version"):
        assert re.search(rf"^{re.escape(row)}\s+[\d.]+\s+[\d.]+\s+[\d.]+$", out, re.M), row
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 3}\n")  # s2's param only
    assert "dry-run output identical across variants and rounds: True; stages it would run: 1" in bench()


def test_the_status_benchmark_answers_the_same_both_ways(workdir):
    _three_recorded_stages(workdir)
    (workdir / "params.yaml").write_text("x: {lr: 0.5}\ny: {n: 2}\n")  # s0 and s1's param
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/bench_status.py"), "--repeat", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the same stages from both: True (s0, s1)" in proc.stdout
    assert re.search(r"^plain\s+median [\d.]+ s", proc.stdout, re.M) and re.search(r"^memoised\s+median", proc.stdout, re.M)


def test_walked_keys_are_what_dvc_looks_up(workdir):
    """The walk that replaces `dpath` for plain dotted keys returns what
    DVC's own read_param_file(flatten=True) returns; any other key (a glob,
    a list index, a missing one) is left to DVC."""
    from dvc.dependency.param import read_param_file
    from dvc.fs import LocalFileSystem

    (workdir / "params.yaml").write_text(
        "a: {b: {c: 1, d: [1, 2]}, e: null}\nprofile: x\nprofiles:\n  x: {n: 2, 'm': {k: v}}\nlst: [{q: 1}]\n")
    fs, path = LocalFileSystem(), str(workdir / "params.yaml")
    config = read_param_file(fs, path)
    plain = ["a.b.c", "a.b.d", "a.e", "profile", "profiles.x.n", "profiles.x.m", "a.b"]
    assert dvc_internals._walked(config, plain) == read_param_file(fs, path, plain, flatten=True)
    for other in (["a.b.c", "a.nope"], ["lst.0.q"], ["a.*.c"], ["a..b"]):
        assert dvc_internals._walked(config, other) is None, other
    assert read_param_file(fs, path, ["lst.0.q"], flatten=True) == {"lst.0.q": 1}  # what DVC answers there


def _lock_project(workdir):
    _git_dvc_project()
    (workdir / "params.yaml").write_text(
        "x: {lr: 5.0e-5, flag: 'yes', none: null, text: \"Complex & Intelligent: a 'quoted' word\\nsecond line\", "
        "uni: Zürich – «»}\ny: {n: 2, list: [1, '2', 3.0]}\n")
    (workdir / "dvc.yaml").write_text("stages:\n" + "".join(
        f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [x.lr, x.flag, x.none, x.text, x.uni, y]\n"
        f"    outs: [o{i}.txt]\n" for i in range(2)))
    for name in ("in.txt", "o0.txt", "o1.txt"):
        (workdir / name).write_text("input\n")


def test_a_commit_writes_the_lock_bytes_dvc_writes(workdir, monkeypatch):
    """The lock read with the safe parser before the rewrite: the same bytes
    as DVC's round-trip read gives; a lock with a comment keeps it."""
    _lock_project(workdir)
    with monkeypatch.context() as m:  # DVC's own reads of the lock
        m.setattr(dvc_internals, "_lock_read_plain", contextlib.nullcontext)
        dvc_internals.commit_stages(["s0"])
        first = (workdir / "dvc.lock").read_bytes()
        dvc_internals.commit_stages(["s1"])
        by_dvc = (workdir / "dvc.lock").read_bytes()
    from dvc.utils.serialize import _yaml

    round_trips = []
    real = _yaml.parse_yaml_for_update
    monkeypatch.setattr(_yaml, "parse_yaml_for_update", lambda text, path: round_trips.append(path) or real(text, path))
    (workdir / "dvc.lock").write_bytes(first)
    dvc_internals.commit_stages(["s1"])
    assert (workdir / "dvc.lock").read_bytes() == by_dvc
    assert b"s1:" in by_dvc and b"Complex & Intelligent" in by_dvc
    assert round_trips == []  # read with the safe parser
    (workdir / "dvc.lock").write_bytes(first.replace(b"stages:\n", b"stages:\n  # kept by the round-trip read\n", 1))
    dvc_internals.commit_stages(["s1"])
    assert b"# kept by the round-trip read" in (workdir / "dvc.lock").read_bytes()
    assert len(round_trips) == 1 and _yaml.parse_yaml_for_update.__name__ == "<lambda>"  # put back
    assert dvc_internals.changed_stages() == set()


def _chain_project(workdir):
    """s0 (param x.lr) -> s1 -> s3, and s2 (param y.n); all recorded by `dvc repro`."""
    dvc = _git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 2}\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n"
        "  s0: {cmd: cp in.txt o0.txt, deps: [in.txt], params: [x.lr], outs: [o0.txt]}\n"
        "  s1: {cmd: cp o0.txt o1.txt, deps: [o0.txt], outs: [o1.txt]}\n"
        "  s2: {cmd: cp in2.txt o2.txt, deps: [in2.txt], params: [y.n], outs: [o2.txt]}\n"
        "  s3: {cmd: test -f ok.txt && cp o1.txt o3.txt, deps: [o1.txt], outs: [o3.txt]}\n")
    for name in ("in.txt", "in2.txt", "ok.txt"):
        (workdir / name).write_text("input\n")
    subprocess.run([*dvc, "repro", "-q"], check=True)
    return dvc


def test_repro_runs_what_dvc_repro_runs_and_writes_the_same_lock(workdir):
    """`hatecheck-pipeline repro` (dvc_internals.reproduce): after an input
    and a parameter change, the same stages run as under `dvc repro` and the
    lock is the same, byte for byte, though written once; run again, nothing
    runs; a stage that fails leaves the stages that ran before it recorded."""
    import shutil

    dvc = _chain_project(workdir)
    (workdir / "in.txt").write_text("changed\n")
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 3}\n")
    twin = workdir.parent / (workdir.name + "_dvc")
    shutil.copytree(workdir, twin, symlinks=True)
    subprocess.run([*dvc, "repro", "-q"], check=True, cwd=twin)
    assert sorted(dvc_internals.reproduce()) == ["s0", "s1", "s2", "s3"]
    assert (workdir / "dvc.lock").read_bytes() == (twin / "dvc.lock").read_bytes()
    assert (workdir / "o3.txt").read_text() == "changed\n"
    assert dvc_internals.reproduce() == [] and dvc_internals.changed_stages() == set()
    (workdir / "ok.txt").unlink()
    (workdir / "in.txt").write_text("again\n")
    with pytest.raises(Exception, match="s3"):
        dvc_internals.reproduce()
    assert dvc_internals.changed_stages() == {"s3"}  # s0 and s1 ran and were recorded
    status = subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    assert "s3:" in status and "s0:" not in status and "s1:" not in status


def test_the_repro_command_reports_what_ran(workdir):
    """The command prints DVC's own messages as `dvc repro` does, then what
    ran; --dry runs nothing."""
    cli = [sys.executable, "-c", "from hatecheck_pipeline.cli.app import cli; cli()", "repro"]
    _chain_project(workdir)
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 5}\n")
    dry = subprocess.run([*cli, "--dry"], capture_output=True, text=True)
    assert dry.returncode == 0 and "Running stage 's2'" in dry.stdout, dry.stderr
    assert dvc_internals.changed_stages() == {"s2"}  # a dry run runs nothing
    done = subprocess.run(cli, capture_output=True, text=True)
    assert done.returncode == 0 and "1 stage(s) ran and are recorded in dvc.lock" in done.stdout, done.stderr
    assert "Running stage 's2'" in done.stdout and "Stage 's0' didn't change, skipping" in done.stdout
    assert dvc_internals.changed_stages() == set()
    again = subprocess.run(cli, capture_output=True, text=True)
    assert again.returncode == 0 and "up to date" in again.stdout
