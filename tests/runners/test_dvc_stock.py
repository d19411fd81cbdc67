"""The environment's own `dvc` with the read speed-ups (runners/dvc_stock.py):
setup installed the hook, it fires for a script named `dvc` only, and what
DVC runs, records and prints is what stock DVC (`python -m dvc`, or the
switch off) does: a repro, a status, a params diff against a revision (a
file read from git, never memoised), and the rwlock's check still finding a
live holder and releasing a dead one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pipeline_utils
import pytest
from dvc_projects import three_stages

from hatecheck_pipeline.runners import dvc_speedups, dvc_stock

BIN = Path(sys.executable).parent


def _probe(folder: Path, name: str, env: dict[str, str]) -> str:
    """Whether the speed-ups were on in a script called ``name`` of this
    environment's interpreter, as site.py left them before the script ran."""
    script = folder / name
    script.write_text(
        f"#!{sys.executable}\nfrom hatecheck_pipeline.runners import dvc_stock\nprint(bool(dvc_stock._HELD))\n", encoding="utf-8"
    )
    script.chmod(0o755)
    return subprocess.run([str(script)], capture_output=True, text=True, check=True, env=env).stdout.strip()


def test_setup_installed_the_hook_and_it_fires_for_dvc_only(tmp_path):
    pth = dvc_stock.site_packages() / dvc_stock.PTH_NAME
    assert pth.read_text("utf-8").strip() == dvc_stock.PTH_LINE, "run scripts/setup.sh (it writes the hook)"
    env = {k: v for k, v in os.environ.items() if k != dvc_stock.ENV_SWITCH}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _probe(tmp_path / "a", "dvc", env) == "True"
    assert _probe(tmp_path / "b", "notdvc", env) == "False"
    assert _probe(tmp_path / "a", "dvc", {**env, dvc_stock.ENV_SWITCH: "off"}) == "False"


def _run(dvc: list[str], *args: str, off: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != dvc_stock.ENV_SWITCH}
    if off:
        env[dvc_stock.ENV_SWITCH] = "off"
    return subprocess.run([*dvc, *args], capture_output=True, text=True, check=True, env=env)


def test_the_hooked_dvc_runs_records_and_prints_what_stock_dvc_does(workdir):
    three_stages(workdir)
    for out in workdir.glob("o*.txt"):  # made by the repro below
        out.unlink()
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "commit", "-qm", "project"], check=True, env=pipeline_utils.env())
    stock = workdir.parent / "stock"
    shutil.copytree(workdir, stock)
    hooked = [str(BIN / "dvc")]
    plain = [sys.executable, "-m", "dvc"]
    outputs = {}
    for name, folder, dvc, off in (("hooked", workdir, hooked, False), ("stock", stock, plain, True)):
        os.chdir(folder)
        repro = _run(dvc, "repro", off=off).stdout
        (folder / "params.yaml").write_text("x: {lr: 0.5}\ny: {n: 2}\n")
        status = _run(dvc, "status", off=off).stdout
        diff = json.loads(_run(dvc, "params", "diff", "--json", off=off).stdout)  # HEAD's file from git, the workspace's from disk
        again = _run(dvc, "repro", off=off).stdout
        # DVC names the files to `git add` in a set's order, which differs from run to run
        outputs[name] = (_words(repro), status, diff, _words(again), (folder / "dvc.lock").read_bytes())
    os.chdir(workdir)
    assert outputs["hooked"] == outputs["stock"]
    repro, status, diff, again, _ = outputs["hooked"]
    assert "s0:" in status and "s2:" not in status
    assert diff["params.yaml"]["x.lr"] == {"old": 1.0, "new": 0.5, "diff": -0.5}
    assert "'s0':" in again and "'s2':" not in again


def _words(log: str) -> list[str]:
    return sorted(log.split())


@pytest.fixture
def speedups_off_after():
    yield
    dvc_stock.uninstall()


def test_the_rwlock_check_is_skipped_only_where_every_entry_is_this_process_own(tmp_path, speedups_off_after):
    from dvc import rwlock
    from dvc.lock import LockError

    checked = []
    real = rwlock._check_blockers
    rwlock._check_blockers = lambda *a, **kw: checked.append(kw["mode"]) or real(*a, **kw)
    try:
        with dvc_speedups._rwlock_own_skipped():
            me = {"pid": os.getpid(), "cmd": "me"}
            own = {"write": {"/p/a": me}, "read": {"/p/b": [me]}}
            rwlock._check_blockers(str(tmp_path), own, me, mode="write", waiters=["/p/a"])
            rwlock._check_blockers(str(tmp_path), own, me, mode="read", waiters=["/p/b"])
            assert checked == []  # nothing but this process's entries: no check
            live = {"pid": os.getppid(), "cmd": "parent"}
            with pytest.raises(LockError, match="is busy"):
                rwlock._check_blockers(str(tmp_path), {"write": {"/p/a": live}, "read": {}}, me, mode="write", waiters=["/p/a"])
            dead_pid = _a_dead_pid()
            held = {"write": {}, "read": {"/p/b": [me, {"pid": dead_pid, "cmd": "gone"}]}}
            rwlock._check_blockers(str(tmp_path), held, me, mode="read", waiters=["/p/b"])
            assert held["read"]["/p/b"] == [me]  # the dead process's entry released, as DVC does
            assert checked == ["write", "read"]
    finally:
        rwlock._check_blockers = real


def _a_dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_params_file_of_another_file_system_is_read_every_time(tmp_path):
    """A params file at a git revision has the path of the workspace's (DVC's
    git file system mirrors the tree): memoised under the workspace file's
    size and time it would answer the workspace's values. Only the local
    file system's reads are memoised."""
    import io

    from dvc.dependency import param
    from dvc.fs import LocalFileSystem

    path = tmp_path / "params.yaml"
    path.write_text("x: {lr: 1.0}\n")

    class AtRevision:  # answers another content for the same path, as a revision's tree does
        def __init__(self):
            self.reads = 0

        def suffix(self, p):
            return Path(p).suffix

        def open(self, p, **kwargs):
            self.reads += 1
            return io.StringIO(f"x: {{lr: {self.reads}.5}}\n")

    with dvc_speedups._memoised_params():
        rev = AtRevision()
        answers = [param.read_param_file(rev, str(path), ["x.lr"], flatten=True) for _ in range(2)]
        assert answers == [{"x.lr": 1.5}, {"x.lr": 2.5}] and rev.reads == 2
        local = LocalFileSystem()
        assert param.read_param_file(local, str(path), ["x.lr"], flatten=True) == {"x.lr": 1.0}
        assert param.load_path(str(path), rev) == {"x": {"lr": 3.5}}
