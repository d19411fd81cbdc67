"""The warm stage worker (cli/stage_worker.py): a stage command forked
from a process with torch and transformers imported runs as it would in a
fresh process (same output streams, exit status, files), falls back to its
own process where no worker is ready, and nothing of the stage outlives a
killed command."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import MIRROR, REPO
from pipeline_utils import BIN, env

from hatecheck_pipeline.cli import stage_worker

# The probe calls the command's own first step and prints what it returned
# (None: the stage did not run in a worker); the stage's own lines reach
# the probe's stdout and stderr through the descriptors the worker's child
# writes to.
PROBE = (
    "import sys\n"
    "from hatecheck_pipeline.cli.stage_worker import run_in_worker\n"
    "code = run_in_worker(['hatecheck-pipeline', 'run', sys.argv[1]], 'hatecheck_pipeline.cli.main:dispatch')\n"
    "print('returned', code, flush=True)\n"
)


def project(tmp_path: Path, name: str = "project") -> Path:
    root = tmp_path / name
    for name in ("params.yaml", "workflow/schemas/params.schema.yaml", "src/hatecheck_pipeline/resources/raw_sources.yaml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text((REPO / name).read_text())
    return root


def worker_env(tmp_path: Path, mirror: Path = MIRROR) -> dict[str, str]:
    e = env()
    run_dir = short_dir()
    (tmp_path / "run").symlink_to(run_dir)
    e["XDG_RUNTIME_DIR"] = str(run_dir)  # this test's workers, apart from any other
    e["HATECHECK_PIPELINE_MIRROR"] = str(mirror)
    e.pop(stage_worker.ENV_SWITCH, None)
    e.pop("SLURM_JOB_ID", None)
    return e


SHORT_DIRS: list[Path] = []


def short_dir() -> Path:
    """A folder of this test's own with a short path (a socket's path holds
    about 100 bytes; pytest's temp folders are longer), removed after it."""
    path = Path(tempfile.mkdtemp(prefix="hcw", dir="/tmp"))
    SHORT_DIRS.append(path)
    return path


@pytest.fixture(autouse=True)
def remove_short_dirs():
    yield
    while SHORT_DIRS:
        shutil.rmtree(SHORT_DIRS.pop(), ignore_errors=True)


def probe(stage: str, cwd: Path, e: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "python"), "-c", PROBE, stage], cwd=cwd, env=e, capture_output=True, text=True, **kw)


def wait_for_worker(tmp_path: Path, timeout: float = 120) -> int:
    """The worker's pid once it listens (it writes it into its lock file)."""
    deadline = time.time() + timeout
    run_dir = tmp_path / "run" / f"hatecheck-pipeline-{os.getuid()}"
    while time.time() < deadline:
        socks = list(run_dir.glob("*.sock")) if run_dir.exists() else []
        if socks:
            return int(socks[0].with_suffix(".lock").read_text().strip())
        time.sleep(0.2)
    raise AssertionError(f"no worker listening under {run_dir} after {timeout} s")


def children_of(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except FileNotFoundError:
        return set()


@pytest.fixture
def stop_workers():
    pids = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def test_the_key_separates_what_a_library_reads_when_imported():
    base = {"PATH": "/usr/bin", "OMP_NUM_THREADS": "2"}
    key = stage_worker.worker_key("/venv/bin/python", base)
    # the variables that name a DVC stage or belong to the shell do not matter
    assert stage_worker.worker_key("/venv/bin/python", {**base, "DVC_STAGE": "train_B-D", "PWD": "/x"}) == key
    # threads (read by OpenMP and OpenBLAS when loaded) and the interpreter do
    assert stage_worker.worker_key("/venv/bin/python", {**base, "OMP_NUM_THREADS": "1"}) != key
    assert stage_worker.worker_key("/other/python", base) != key


def test_it_is_off_when_asked_and_under_slurm():
    assert stage_worker.enabled({})
    assert not stage_worker.enabled({"HATECHECK_PIPELINE_WORKER": "off"})
    assert not stage_worker.enabled({"SLURM_JOB_ID": "42"})


def test_a_stage_runs_in_the_worker_as_it_would_in_its_own_process(tmp_path, mirror, stop_workers):
    root, e = project(tmp_path), worker_env(tmp_path)
    # no worker yet: the caller runs the stage; a one-off command starts none, a second one soon after does
    first = probe("ingest_davidson2017", root, e)
    assert first.returncode == 0 and "returned None" in first.stdout, first.stdout + first.stderr
    time.sleep(1)
    assert not list((tmp_path / "run").glob("*/*.lock")), "a one-off stage command started a worker"
    again = probe("ingest_davidson2017", root, e)
    assert again.returncode == 0 and "returned None" in again.stdout, again.stdout + again.stderr
    stop_workers.append(wait_for_worker(tmp_path))

    second = probe("ingest_davidson2017", root, e)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().splitlines()[-1] == "returned 0", second.stdout + second.stderr
    out = root / "data/raw/davidson2017/labeled_data.csv"
    assert (
        hashlib.sha256(out.read_bytes()).hexdigest() == hashlib.sha256((mirror / "davidson2017/labeled_data.csv").read_bytes()).hexdigest()
    )
    assert (root / "logs/benchmarks/ingest_davidson2017.json").exists()

    # another project started with the same environment: the same worker, in that project's folder
    other = project(tmp_path, "other")
    assert probe("ingest_davidson2017", other, e).stdout.strip().splitlines()[-1] == "returned 0"
    assert (other / "data/raw/davidson2017/labeled_data.csv").exists()

    # an error is the same one line on the command's stderr, and its exit status
    bad = probe("no_such_stage", root, e)
    assert bad.stdout.strip() == "returned 1", bad.stdout + bad.stderr
    assert bad.stderr.strip() == "error: no stage named 'no_such_stage' in the pipeline (see `hatecheck-pipeline dag list`)"

    # the console command itself goes through it, and says the same
    proc = subprocess.run([str(BIN / "hatecheck-pipeline"), "run", "no_such_stage"], cwd=root, env=e, capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.strip() == bad.stderr.strip()

    # off: the command runs the stage in its own process
    off = probe("no_such_stage", root, {**e, stage_worker.ENV_SWITCH: "off"})
    assert off.stdout.strip() == "returned None"


def test_nothing_of_a_stage_outlives_its_killed_command(tmp_path, stop_workers):
    """A stage blocked on its input (a FIFO in place of the mirror's file):
    a runner's SIGTERM reaches it through the command, which then ends as
    the stage did, and kill -9 of the command ends the stage too."""
    mirror = tmp_path / "mirror"
    (mirror / "davidson2017").mkdir(parents=True)
    os.mkfifo(mirror / "davidson2017/labeled_data.csv")
    (mirror / "SHA256SUMS").write_text("")
    root, e = project(tmp_path), worker_env(tmp_path, mirror)
    probe("no_such_stage", root, e)
    probe("no_such_stage", root, e)  # a second command soon after the first starts the worker
    worker = wait_for_worker(tmp_path)
    stop_workers.append(worker)

    for sig in (signal.SIGTERM, signal.SIGKILL):
        command = subprocess.Popen(
            [str(BIN / "hatecheck-pipeline"), "run", "ingest_davidson2017"], cwd=root, env=e, stderr=subprocess.PIPE, text=True
        )
        deadline = time.time() + 60
        while not children_of(worker):
            assert time.time() < deadline and command.poll() is None, "the stage did not start in the worker"
            time.sleep(0.1)
        (child,) = children_of(worker)
        time.sleep(1.0)  # blocked opening the FIFO
        command.send_signal(sig)
        code = command.wait(timeout=30)
        assert code == -sig, command.stderr.read()
        deadline = time.time() + 10
        while Path(f"/proc/{child}").exists() and Path(f"/proc/{child}/stat").read_text().split()[2] != "Z":
            assert time.time() < deadline, f"the stage's process {child} outlived its command ({sig!r})"
            time.sleep(0.05)


def test_a_socket_folder_others_can_enter_is_not_used(monkeypatch):
    """A command hands the worker its environment (API keys included) and
    its output streams: only through a folder that is the user's alone."""
    base = short_dir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    monkeypatch.delenv(stage_worker.ENV_SWITCH, raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    folder = base / f"hatecheck-pipeline-{os.getuid()}"
    folder.mkdir()
    folder.chmod(0o777)
    assert stage_worker.private_dir() is None
    assert stage_worker.run_in_worker(["hatecheck-pipeline", "run", "no_such_stage"], "hatecheck_pipeline.cli.main:dispatch") is None
    assert sorted(p.name for p in folder.iterdir()) == []  # nothing noted, nothing started
    folder.chmod(0o700)
    assert stage_worker.private_dir() == str(folder)


def test_the_files_of_keys_long_unused_are_swept_and_a_live_workers_kept(monkeypatch):
    """Each environment a build or a test ran in leaves its key's files in
    the socket folder; a worker's start removes those untouched for a day
    that no worker holds, and never a live worker's (it holds its lock)."""
    import fcntl

    base = short_dir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    folder = Path(stage_worker.private_dir())
    day = stage_worker.STALE_SECONDS
    now = time.time()
    for key, age in (("gone", day + 60), ("alive", day + 60), ("recent", day - 60)):
        for suffix in (".seen", ".lock", ".sock"):
            f = folder / f"{key}{suffix}"
            f.write_text("")
            os.utime(f, (now - age, now - age))
    os.utime(folder / "recent.seen", (now - 10, now - 10))  # one file touched lately keeps the key
    (folder / "only.seen").write_text("")  # a key whose worker never started
    os.utime(folder / "only.seen", (now - day - 1, now - day - 1))
    with open(folder / "alive.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live worker's lock
        assert stage_worker.sweep(now) == 4
    left = sorted(p.name for p in folder.iterdir())
    assert left == ["alive.lock", "alive.seen", "alive.sock", "recent.lock", "recent.seen", "recent.sock"]
    assert stage_worker.sweep(now) == 3  # once no worker holds it
