"""Sharing a run (docs/sharing.md): a colleague's day in two fresh
clones against a real SSH server (Debian's openssh-server on 127.0.0.1,
started and stopped by scripts/remote-up.sh / remote-down.sh) as the
project's DVC remote, on the smoke profile.

Clone A builds a part of the pipeline with Snakemake (Davidson 2017's data
stages and the B-D model: a partial run, to keep CI short), commits the
record (`git add dvc.lock params.yaml`), pushes it to git and the outputs to
the remote. Clone B clones, pulls the record and the outputs: the files are
there, `dvc status` is clean, `snakemake -n` has nothing to do (pulled files
carry the time DVC wrote them; Snakemake is aligned to DVC's record),
`hatecheck-pipeline lineage` answers; then a training parameter change (a
learning rate: a float DVC writes without a dot, `2e-05`) makes Snakemake
plan exactly the training stage, `dvc repro` runs exactly it, and Snakemake
then has nothing to do. (One training re-run, not one per runner: CI time;
Snakemake's re-run and record are tested on the whole smoke report.)"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO
from pipeline_utils import BIN, compile_sources, copy_project, dvc_ran_stages, env, git_commit_all, set_param
from system_packages import require

pytestmark = pytest.mark.integration

TARGET = "models/B-D/model_card.json"
CHAIN = {"ingest_davidson2017", "prepare_davidson2017", "validate_davidson2017", "preprocess_davidson2017_bert", "train_B-D"}
LR = "training.recipes.hatecheck.lr"


@pytest.fixture(autouse=True, scope="module")
def openssh_server():
    """As root, scripts/remote-up.sh installs openssh-server where it is
    missing; anyone else without it gets one line saying how to install it."""
    if os.geteuid() != 0:
        require({"sshd": "openssh-server"}, "the sharing test (an SSH server as the DVC remote)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def remote(tmp_path):
    """A real SSH server as the team's DVC remote; the test's HOME trusts
    its host key. Stopped by the pid remote-up.sh recorded, whatever happens."""
    state = tmp_path / "remote"
    e = env() | {"HATECHECK_REMOTE_DIR": str(state), "HATECHECK_REMOTE_PORT": str(free_port())}
    up = subprocess.run(["bash", str(REPO / "scripts/remote-up.sh")], env=e, capture_output=True, text=True, timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    settings = dict(line.split("=", 1) for line in (state / "remote.env").read_text().splitlines())
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(settings["HATECHECK_REMOTE_KNOWN_HOSTS"], home / ".ssh/known_hosts")
    pid = int((state / "pids").read_text().split()[1])
    try:
        yield settings | {"HOME": str(home)}
    finally:
        down = subprocess.run(["bash", str(REPO / "scripts/remote-down.sh")], env=e, capture_output=True, text=True)
        assert down.returncode == 0, down.stdout + down.stderr
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)
        assert not Path(f"/proc/{pid}").exists(), f"sshd {pid} still running"


def test_a_colleague_pulls_a_partial_run_and_both_runners_agree(tmp_path, remote):
    started = time.time()
    e = env() | {"HOME": remote["HOME"]}

    def sh(cwd: Path, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(cmd), cwd=cwd, env=e, capture_output=True, text=True, timeout=1200)
        if check and proc.returncode:
            raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    snakemake, dvc, hp = str(BIN / "snakemake"), str(BIN / "dvc"), str(BIN / "hatecheck-pipeline")

    # The team's repository: the project on the smoke profile, the remote configured.
    source = copy_project(tmp_path / "source")
    set_param(source, "profile", "smoke")
    sh(source, dvc, "remote", "add", "-d", "team", remote["HATECHECK_REMOTE_URL"])
    git_commit_all(source, "project, smoke profile, the team's DVC remote")
    sh(tmp_path, "git", "clone", "-q", "--bare", str(source), "origin.git")
    origin = str(tmp_path / "origin.git")

    # Clone A: a partial Snakemake build, the record committed and pushed.
    a = tmp_path / "a"
    sh(tmp_path, "git", "clone", "-q", origin, str(a))
    compile_sources(a)
    sh(a, dvc, "remote", "modify", "--local", "team", "keyfile", remote["HATECHECK_REMOTE_KEY"])
    sh(a, snakemake, "--cores", "2", TARGET)
    lock_a = (a / "dvc.lock").read_text()
    assert all(f"  {name}:" in lock_a for name in CHAIN)
    # the record: dvc.lock, params.yaml and the small metrics files git tracks (not cached)
    sh(a, "git", "add", "dvc.lock", "params.yaml", *[d for d in ("data", "models", "results") if (a / d).exists()])
    assert "models/B-D/training_log.json" in sh(a, "git", "diff", "--cached", "--name-only").stdout
    sh(a, "git", "commit", "-q", "-m", "record of a partial smoke run (B-D)")
    sh(a, "git", "push", "-q", "origin", "HEAD")
    pushed = sh(a, dvc, "push")
    assert "pushed" in pushed.stdout, pushed.stdout
    # kept, never cached nor pushed (models/checkpoints.py, a code dep, is in the lock: not a checkpoint folder)
    assert (a / "models/B-D/checkpoints").is_dir() and "models/B-D/checkpoints" not in lock_a
    assert not re.search(r"path: models/[^/\s]+/checkpoints\b", lock_a)
    built_a = time.time()
    print(f"\nsharing test: clone A build + push {built_a - started:.0f} s", flush=True)

    # Clone B: clone, pull the record's outputs; both runners see them up to date.
    b = tmp_path / "b"
    sh(tmp_path, "git", "clone", "-q", origin, str(b))
    compile_sources(b)
    sh(b, dvc, "remote", "modify", "--local", "team", "keyfile", remote["HATECHECK_REMOTE_KEY"])
    pulled = sh(b, hp, "pull")
    assert "stage(s) of the pipeline are not recorded" in pulled.stdout, pulled.stdout
    for path in (TARGET, "models/B-D/final", "data/processed/davidson2017/bert.parquet"):
        assert (b / path).exists(), path
    assert (a / "models/B-D/model_card.json").read_bytes() == (b / TARGET).read_bytes()
    status = sh(b, dvc, "status", *sorted(CHAIN))
    assert "up to date" in status.stdout, status.stdout
    dry = sh(b, snakemake, "-n", "--cores", "2", TARGET)
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout + dry.stderr
    trace = sh(b, hp, "lineage", TARGET)
    assert "train_B-D" in trace.stdout and "davidson2017" in trace.stdout, trace.stdout
    print(f"sharing test: clone B pull and checks {time.time() - built_a:.0f} s", flush=True)

    # A training parameter changes: Snakemake plans exactly the training stage ...
    set_param(b, LR, 3.0e-5)
    dry = sh(b, snakemake, "-n", "--cores", "2", TARGET)
    assert "rule train_B-D:" in dry.stdout and not any(f"rule {n}:" in dry.stdout for n in CHAIN - {"train_B-D"}), dry.stdout
    # ... and `dvc repro` of another value runs exactly it; then Snakemake has nothing
    # to do: dvc.lock's `lr: 2e-05` (no dot) is read as the float params.yaml holds.
    set_param(b, LR, 2.0e-5)
    repro = sh(b, dvc, "repro", "train_B-D")
    assert dvc_ran_stages(repro.stdout) == {"train_B-D"}, repro.stdout
    assert "lr: 2e-05" in (b / "dvc.lock").read_text()  # as DVC writes it
    dry = sh(b, snakemake, "-n", "--cores", "2", TARGET)
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout + dry.stderr
    status = sh(b, dvc, "status", *sorted(CHAIN))
    assert "up to date" in status.stdout, status.stdout
    print(f"sharing test: whole test {time.time() - started:.0f} s", flush=True)
