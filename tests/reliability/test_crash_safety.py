"""Crashes and concurrent runs on the smoke profile, on one model's chain
(Davidson's data stages -> train B-D -> predict -> score its held-out test):

- ``kill -9`` of a whole Snakemake run (its process group) in the middle of a
  data stage, then in the middle of training; each re-run redoes what was
  interrupted and nothing that was complete, and the final metrics are
  byte-identical to an uninterrupted run's;
- the same for ``dvc repro`` killed during training;
- a second run started while one is live refuses, naming the lock.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fault_matrix import outcome  # noqa: F401  (fixture)
from pipeline_utils import BIN, assert_same_predictions, copy_project, dvc_ran_stages, env, git_commit_all, run, set_param

pytestmark = pytest.mark.integration

METRICS = "results/B-D/heldout_davidson2017/metrics.json"
PREDICTIONS = "results/B-D/heldout_davidson2017/predictions.parquet"
DATA_STAGES = {"ingest_davidson2017", "prepare_davidson2017", "validate_davidson2017", "preprocess_davidson2017_bert"}
MODEL_STAGES = {"train_B-D", "predict_B-D_heldout_davidson2017", "score_B-D_heldout_davidson2017"}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def smoke_project(root: Path) -> Path:
    project = copy_project(root)
    set_param(project, "profile", "smoke")
    git_commit_all(project, "fresh clone, smoke profile")
    return project


def snakemake(*args: str) -> list[str]:
    return [str(BIN / "snakemake"), "--cores", "2", *args]


def start(cmd: list[str], project: Path, name: str) -> tuple[subprocess.Popen, Path]:
    """A run in its own process group (so that kill -9 takes its jobs too)."""
    log = project / f"{name}.out"
    fh = open(log, "w")
    environment = {**env(), "PYTHONUNBUFFERED": "1"}  # its output is what says when to kill
    proc = subprocess.Popen(cmd, cwd=project, env=environment, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, log


def kill_when(proc: subprocess.Popen, ready, timeout: float = 900) -> None:
    """``kill -9`` the run's whole process group as soon as ``ready()`` holds."""
    deadline = time.time() + timeout
    while not ready():
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline, "timed out waiting for the moment to kill"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def jobs_in(output: str) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\S+):$", output, flags=re.M))


def finish(project: Path, *targets: str) -> tuple[set[str], str]:
    proc = run(snakemake(*targets), project, timeout=1800)
    out = proc.stdout + proc.stderr
    return jobs_in(out), out


SENTINEL = "sk-sentinel-" + secrets.token_hex(16)  # an API key no file may ever hold (made here: not in any source file)
KEY_VARIABLES = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")
PROJECTS: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def api_keys_in_the_environment():
    """Every run of this module has API keys in its environment."""
    with pytest.MonkeyPatch.context() as mp:
        for name in KEY_VARIABLES:
            mp.setenv(name, SENTINEL)
        yield


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, str]:
    """An uninterrupted run: the metrics and predictions to compare with."""
    project = smoke_project(tmp_path_factory.mktemp("uninterrupted"))
    PROJECTS.append(project)
    finish(project, METRICS)
    kept = project.parent / "uninterrupted-predictions.parquet"  # the dvc repro test below removes the project's results
    kept.write_bytes((project / PREDICTIONS).read_bytes())
    return {"project": project, "metrics": sha(project / METRICS), "predictions": kept}


def test_snakemake_killed_mid_data_stage_then_mid_training_resumes_exactly(tmp_path, reference, outcome):
    project = smoke_project(tmp_path / "crash")
    PROJECTS.append(project)

    # 1. kill -9 while Davidson's prepare stage runs
    proc, _ = start(snakemake(METRICS), project, "run1")
    kill_when(proc, lambda: (project / "logs/prepare_davidson2017.log").exists())
    assert not (project / "data/interim/davidson2017/counts.json").exists(), "prepare finished before the kill"
    assert (project / "data/raw/davidson2017/labeled_data.csv").exists()  # ingest was complete
    assert list((project / ".snakemake/locks").glob("*")), "a killed run leaves Snakemake's locks"
    assert list((project / ".snakemake/incomplete").rglob("*")), "and marks the interrupted job's outputs incomplete"
    ingested = (project / "logs/ingest_davidson2017.log").stat().st_mtime_ns

    # 2. re-run, killed -9 in the middle of training
    proc, log = start(snakemake(METRICS), project, "run2")
    train_log = project / "logs/train_B-D.log"
    kill_when(proc, lambda: train_log.exists() and "epoch 1/" in train_log.read_text(errors="replace"))  # in its training loop
    second = log.read_text()
    assert "removed a stale Snakemake lock left by a killed run" in second  # no `snakemake --unlock` needed
    ran = jobs_in(second)
    assert "ingest_davidson2017" not in ran and {"prepare_davidson2017", "train_B-D"} <= ran, ran
    assert not (project / "models/B-D/model_card.json").exists(), "training finished before the kill"
    assert not (project / METRICS).exists()

    # 3. re-run to the end: only the interrupted work and what follows it;
    #    meanwhile, second runs in the same workspace refuse
    proc, log = start(snakemake(METRICS), project, "run3")
    refusals = second_runs_refuse(project, proc, log)
    assert proc.wait(timeout=1800) == 0, log.read_text()[-3000:]
    out = log.read_text()
    ran = jobs_in(out)
    assert ran == MODEL_STAGES, ran
    assert "removed a stale Snakemake lock" in out
    assert (project / "logs/ingest_davidson2017.log").stat().st_mtime_ns == ingested
    assert sha(project / METRICS) == reference["metrics"]
    assert_same_predictions(project / PREDICTIONS, reference["predictions"])
    assert not list(project.glob("models/B-D.tmp-*")) and not list((project / "models/B-D").glob("*.tmp-*"))
    # nothing left to do, and nothing to be trusted that was partial: a dry run is empty
    assert "Nothing to be done" in run(snakemake("-n", METRICS), project).stdout
    outcome(
        f"killed in prepare, then in training; re-runs ran {sorted(ran)}; metrics sha256 {reference['metrics'][:12]} = uninterrupted; "
        f"concurrent runs meanwhile: {refusals}"
    )


def test_dvc_repro_killed_mid_training_resumes_exactly(reference, outcome):
    project = reference["project"]  # data stages recorded in dvc.lock by the Snakemake run
    # the record's outputs leave the workspace and DVC's cache: a stage whose
    # dvc.lock entry still matches would otherwise be checked out from the
    # cache ("Stage ... is cached - skipping run"), even with --no-run-cache
    for rel in ("models/B-D", "results/B-D", ".dvc/cache"):
        subprocess.run(["rm", "-rf", str(project / rel)], check=True)
    target = "score_B-D_heldout_davidson2017"
    # --no-run-cache: run the commands (not restore outputs from DVC's run cache)
    proc, log = start([str(BIN / "dvc"), "repro", "--no-run-cache", target], project, "dvc1")
    kill_when(proc, lambda: "epoch 1/" in log.read_text(errors="replace").partition("Running stage 'train_B-D'")[2])  # in its training loop
    assert not (project / "models/B-D/model_card.json").exists(), "training finished before the kill"
    again = run([str(BIN / "dvc"), "repro", "--no-run-cache", target], project, timeout=1800)
    ran = dvc_ran_stages(again.stdout)
    # training is redone; no data stage is; predict and score may be restored
    # from DVC's cache (their dependencies came out byte-identical)
    assert "train_B-D" in ran and ran <= MODEL_STAGES, ran
    assert sha(project / METRICS) == reference["metrics"]
    assert_same_predictions(project / PREDICTIONS, reference["predictions"])
    outcome(f"dvc repro killed in training; re-run ran {sorted(ran)}; metrics sha256 equal to the uninterrupted run's")


def second_runs_refuse(project: Path, proc: subprocess.Popen, log: Path) -> str:
    """While ``proc`` trains, a second Snakemake (same or other outputs) and
    a ``dvc repro`` refuse, naming the lock, and write nothing."""
    deadline = time.time() + 900
    while "rule train_B-D:" not in log.read_text():
        assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGSTOP)  # the live run holds its locks, however fast its stages are
    try:
        return _refusals(project, proc)
    finally:
        os.killpg(proc.pid, signal.SIGCONT)


def _refusals(project: Path, proc: subprocess.Popen) -> str:
    # the same outputs: Snakemake's own lock
    same = run(snakemake(METRICS), project, check=False)
    assert same.returncode != 0 and "Directory cannot be locked" in same.stdout + same.stderr
    # other outputs: DVC's repository lock, which the live run holds
    other = run(snakemake("data/interim/hatecheck/table.parquet"), project, check=False)
    errors = [line for line in (other.stdout + other.stderr).splitlines() if line.startswith("error:")]
    assert other.returncode != 0 and len(errors) == 1 and ".dvc/tmp/lock" in errors[0], other.stdout + other.stderr
    # DVC meanwhile
    dvc = run([str(BIN / "dvc"), "repro", "prepare_hatecheck"], project, check=False)
    assert dvc.returncode != 0 and "lock" in (dvc.stdout + dvc.stderr).lower()
    assert not (project / "data/raw/hatecheck").exists() and proc.poll() is None  # nothing written; the live run goes on
    return f"snakemake (same outputs): 'Directory cannot be locked'; snakemake (other outputs): {errors[0][:90]}...; dvc repro: refused"


def test_api_keys_never_reach_an_artifact_log_or_lock(reference, outcome):
    """After every run above (Snakemake, killed runs, dvc repro), no file of
    either workspace holds the key: outputs, logs, dvc.lock, .snakemake,
    .dvc (cache, tmp), git objects."""
    scanned, found = 0, []
    needle = SENTINEL.encode()
    for project in PROJECTS:
        for path in project.rglob("*"):
            if path.is_file() and not path.is_symlink():
                scanned += 1
                if needle in path.read_bytes():
                    found.append(str(path.relative_to(project)))
    assert scanned > 100 and found == []
    outcome(f"{scanned} files of {len(PROJECTS)} workspaces scanned after runs with {', '.join(KEY_VARIABLES)} set: key in none")
