"""DVC's work made cheaper (runners/dvc_speedups.py): each private object
it relies on exists, with the parameters passed, in the installed DVC; the
lock and the status are what stock DVC gives, in fewer reads; and on a DVC
without one of those objects, one warning and stock DVC's slower path,
which records the same lock."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import re
import subprocess
import sys

import pytest
from conftest import REPO
from dvc_projects import chain_project, git_dvc_project, lock_project, three_recorded_stages

from hatecheck_pipeline.runners import dvc_adapter, dvc_speedups


def test_a_commit_parses_the_params_file_once_and_answers_tracked_as_git_does(workdir, monkeypatch):
    from dvc.dependency import param
    from scmrepo.git import Git

    git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 2}\n")
    stages = "".join(
        f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [x, y]\n    outs: [o{i}.txt]\n" for i in range(3)
    )
    (workdir / "dvc.yaml").write_text("stages:\n" + stages)
    for name in ("in.txt", "o0.txt", "o1.txt", "o2.txt", "sub/kept.txt"):
        (workdir / name).parent.mkdir(exist_ok=True)
        (workdir / name).write_text("input\n")
    subprocess.run(["git", "add", "in.txt", "sub/kept.txt"], check=True)
    parses = []
    real = param.load_path
    monkeypatch.setattr(param, "load_path", lambda path, fs, **kw: parses.append(path) or real(path, fs, **kw))
    dvc_adapter.commit_stages(["s0", "s1", "s2"])
    assert [p for p in parses if p.endswith("params.yaml")] == [str(workdir / "params.yaml")]  # 3 stages, 1 parse
    assert param.load_path.__name__ == "<lambda>"  # put back after the commit
    assert dvc_adapter.changed_stages() == set()
    git = Git(str(workdir))
    answer = dvc_speedups._tracked_in(str(workdir))
    for path in ("in.txt", "sub", "sub/kept.txt", "o0.txt", "su", "sub/other.txt"):
        assert answer(str(workdir / path)) == git.is_tracked(str(workdir / path)), path


def test_the_status_parses_the_params_file_once_and_finds_what_dvc_finds(workdir, monkeypatch):
    """changed_stages (asked before Snakemake re-stamps a pulled or edited
    workspace) reads params.yaml once for all stages, and still answers
    what `dvc status` answers: nothing, then exactly the stages whose
    declared key changed."""
    from dvc.dependency import param

    dvc = three_recorded_stages(workdir)
    parses = []
    real = param.load_path
    monkeypatch.setattr(param, "load_path", lambda path, fs, **kw: parses.append(path) or real(path, fs, **kw))
    index_reads = []
    monkeypatch.setattr(dvc_speedups, "_tracked_in", lambda root: index_reads.append(root))
    assert dvc_adapter.changed_stages() == set()
    assert [p for p in parses if p.endswith("params.yaml")] == [str(workdir / "params.yaml")]  # 3 stages, 1 parse
    assert index_reads == []  # a status never asks is_tracked: git's index is not read for it
    assert param.load_path.__name__ == "<lambda>"  # put back after the status
    (workdir / "params.yaml").write_text("x: {lr: 0.5}\ny: {n: 2}\n")
    assert dvc_adapter.changed_stages() == {"s0", "s1"}
    status = subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
    assert "s0:" in status and "s1:" in status and "s2:" not in status


def test_the_recording_benchmark_runs_both_ways_on_a_small_project(workdir):
    git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n"
        + "".join(f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [x]\n    outs: [o{i}.txt]\n" for i in range(2))
    )
    for name in ("in.txt", "o0.txt", "o1.txt"):
        (workdir / name).write_text("input\n")
    dvc_adapter.commit_stages(["s0", "s1"])
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/bench_dvc_record.py"), "--repeat", "1"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "stages: 2" in proc.stdout and "dvc.lock identical across runs: True" in proc.stdout
    assert re.search(r"^plain\s+median\s+[\d.]+ s", proc.stdout, re.M) and re.search(r"^memoised\s+median", proc.stdout, re.M)


def test_the_status_benchmark_answers_the_same_both_ways(workdir):
    three_recorded_stages(workdir)
    (workdir / "params.yaml").write_text("x: {lr: 0.5}\ny: {n: 2}\n")  # s0 and s1's param
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/bench_status.py"), "--repeat", "1"], capture_output=True, text=True)
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
        "a: {b: {c: 1, d: [1, 2]}, e: null}\nprofile: x\nprofiles:\n  x: {n: 2, 'm': {k: v}}\nlst: [{q: 1}]\n"
    )
    fs, path = LocalFileSystem(), str(workdir / "params.yaml")
    config = read_param_file(fs, path)
    plain = ["a.b.c", "a.b.d", "a.e", "profile", "profiles.x.n", "profiles.x.m", "a.b"]
    assert dvc_speedups._walked(config, plain) == read_param_file(fs, path, plain, flatten=True)
    for other in (["a.b.c", "a.nope"], ["lst.0.q"], ["a.*.c"], ["a..b"]):
        assert dvc_speedups._walked(config, other) is None, other
    assert read_param_file(fs, path, ["lst.0.q"], flatten=True) == {"lst.0.q": 1}  # what DVC answers there


def test_a_commit_writes_the_lock_bytes_dvc_writes(workdir, monkeypatch):
    """The lock read with the safe parser before the rewrite: the same bytes
    as DVC's round-trip read gives; a lock with a comment keeps it."""
    lock_project(workdir)
    with monkeypatch.context() as m:  # DVC's own reads of the lock
        m.setattr(dvc_speedups, "_lock_read_plain", contextlib.nullcontext)
        dvc_adapter.commit_stages(["s0"])
        first = (workdir / "dvc.lock").read_bytes()
        dvc_adapter.commit_stages(["s1"])
        by_dvc = (workdir / "dvc.lock").read_bytes()
    from dvc.utils.serialize import _yaml

    round_trips = []
    real = _yaml.parse_yaml_for_update
    monkeypatch.setattr(_yaml, "parse_yaml_for_update", lambda text, path: round_trips.append(path) or real(text, path))
    (workdir / "dvc.lock").write_bytes(first)
    dvc_adapter.commit_stages(["s1"])
    assert (workdir / "dvc.lock").read_bytes() == by_dvc
    assert b"s1:" in by_dvc and b"Complex & Intelligent" in by_dvc
    assert round_trips == []  # read with the safe parser
    (workdir / "dvc.lock").write_bytes(first.replace(b"stages:\n", b"stages:\n  # kept by the round-trip read\n", 1))
    dvc_adapter.commit_stages(["s1"])
    assert b"# kept by the round-trip read" in (workdir / "dvc.lock").read_bytes()
    assert len(round_trips) == 1 and _yaml.parse_yaml_for_update.__name__ == "<lambda>"  # put back
    assert dvc_adapter.changed_stages() == set()


@pytest.mark.parametrize("where, name", sorted(dvc_speedups.SPEED), ids=lambda x: str(x))
def test_each_speed_internal_exists_in_the_installed_dvc(where, name):
    why = dvc_speedups.SPEED[(where, name)]
    try:
        assert dvc_speedups.has(where, name), f"DVC {md.version('dvc')}: {where} has no {name!r}; relied on for: {why}"
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"DVC {md.version('dvc')}: {where} is gone ({exc}); relied on for: {why}")


@pytest.mark.parametrize("where", sorted(dvc_speedups.SIGNATURES))
def test_each_replaced_function_takes_what_the_replacement_passes(where):
    import inspect

    params = dvc_speedups.SIGNATURES[where]
    found = tuple(inspect.signature(dvc_speedups.resolve(where)).parameters)[: len(params)]
    assert found == params, f"DVC {md.version('dvc')}: {where}{found}, the speed-ups pass {params}"


def test_the_speedups_are_on_with_the_installed_dvc():
    assert dvc_speedups.differences() == []
    assert dvc_speedups.check() is True and dvc_speedups.ACTIVE


@pytest.fixture
def dvc_without(monkeypatch):
    """``dvc_without(where, name, kept_away)``: a DVC without one of the
    objects the speed-ups rely on, as the check at import sees it: the
    attribute removed, check() run again (it must warn, naming the DVC
    version and the object, and turn the speed-ups off). ``kept_away``: the
    object stays removed for the test (one stock DVC does without), else it
    is put back after the check (one DVC calls itself). The check runs again
    afterwards with everything back."""

    def without(where: str, name: str, kept_away: bool) -> None:
        patch = monkeypatch if kept_away else pytest.MonkeyPatch()
        patch.delattr(dvc_speedups.resolve(where), name)
        try:
            with pytest.warns(RuntimeWarning, match=rf"^DVC {re.escape(md.version('dvc'))}: {re.escape(where)}\.{name} "):
                assert dvc_speedups.check() is False
        finally:
            if not kept_away:
                patch.undo()
        assert dvc_speedups.ACTIVE is False
        assert isinstance(dvc_speedups.memoised_reads(None), contextlib.nullcontext)
        assert isinstance(dvc_speedups.lock_read_plain(), contextlib.nullcontext)

    yield without
    monkeypatch.undo()
    assert dvc_speedups.check() is True


def _profile_project(workdir):
    git_dvc_project()
    (workdir / "params.yaml").write_text("profile: a\nprofiles:\n  a: {n: 1}\n  b: {n: 2}\nx: {lr: 5.0e-5, s: 'a: b'}\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n"
        + "".join(
            f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n"
            f"    params: [profile, 'profiles.${{profile}}.n', x]\n    outs: [o{i}.txt]\n"
            for i in range(3)
        )
    )
    for name in ("in.txt", "o0.txt", "o1.txt", "o2.txt"):
        (workdir / name).write_text("input\n")


@pytest.mark.parametrize(
    "where, name, kept_away",
    [
        ("dvc.repo.reproduce", "_reproduce", True),  # a commit never calls it: away for the whole test
        ("dvc.dependency.param", "read_param_file", False),  # DVC's own lookup: back once checked
    ],
)
def test_a_dvc_without_a_speed_internal_warns_and_records_the_same_lock(workdir, monkeypatch, dvc_without, where, name, kept_away):
    """Recording with overrides, then without: the speed-ups off (one
    warning) give the same dvc.lock, byte for byte, as with them on, and
    leave a project `dvc status` calls clean; only slower."""
    import shutil

    _profile_project(workdir)
    twin = workdir.parent / (workdir.name + "_on")
    shutil.copytree(workdir, twin, symlinks=True)
    on = []
    with monkeypatch.context() as m:
        m.chdir(twin)
        for overrides in ({"profile": "b"}, None):
            dvc_adapter.commit_stages(["s0", "s1", "s2"], overrides=overrides)
            on.append((twin / "dvc.lock").read_bytes())
    dvc_without(where, name, kept_away)
    memoised = []
    monkeypatch.setattr(dvc_speedups, "_memoised_reads", lambda *a, **k: memoised.append(a))
    dvc_adapter.commit_stages(["s0", "s1", "s2"], overrides={"profile": "b"})
    assert (workdir / "dvc.lock").read_bytes() == on[0]
    assert b"profiles.b.n: 2" in on[0]
    assert dvc_adapter.changed_stages(overrides={"profile": "b"}) == set()
    dvc_adapter.commit_stages(["s0", "s1", "s2"])
    assert (workdir / "dvc.lock").read_bytes() == on[1]
    assert memoised == []  # stock DVC's reads
    status = subprocess.run([sys.executable, "-m", "dvc", "status"], capture_output=True, text=True, check=True).stdout
    assert "up to date" in status


def test_a_dvc_without_a_speed_internal_reproduces_as_dvc_repro(workdir, monkeypatch, dvc_without):
    """`hatecheck-pipeline repro` on a DVC the speed-ups do not know: one
    warning, then `dvc repro` as it is: the same stages run and the same
    lock as with the speed-ups on."""
    import shutil

    dvc = chain_project(workdir)
    (workdir / "in.txt").write_text("changed\n")
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 3}\n")
    twin = workdir.parent / (workdir.name + "_on")
    shutil.copytree(workdir, twin, symlinks=True)
    with monkeypatch.context() as m:
        m.chdir(twin)
        assert sorted(dvc_adapter.reproduce()) == ["s0", "s1", "s2", "s3"]
    dvc_without("dvc.utils.serialize._yaml", "parse_yaml_for_update", False)
    assert dvc_adapter.reproduce(dry=True) == []
    assert sorted(dvc_adapter.reproduce()) == ["s0", "s1", "s2", "s3"]
    assert (workdir / "dvc.lock").read_bytes() == (twin / "dvc.lock").read_bytes()
    assert dvc_adapter.reproduce() == [] and dvc_adapter.changed_stages() == set()
    assert "up to date" in subprocess.run([*dvc, "status"], capture_output=True, text=True, check=True).stdout
