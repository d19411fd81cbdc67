"""The pipeline under a real scheduler: a single-node Slurm started from the
Debian packages (scripts/slurm-up.sh), the smoke profile's data stages for
Davidson 2017 and the B-D train -> predict -> score chain run through
`snakemake --profile workflow/profiles/slurm`; every job ran as a Slurm job,
the outputs equal a local run's, and `dvc status` is clean afterwards (the
main process recorded the run in dvc.lock). The daemons are stopped by the
pids slurm-up.sh recorded, on success or failure.

Needs root (munged, slurmctld and slurmd): skipped otherwise, and failed
in one line where a user without root lacks the packages too."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import REPO
from pipeline_utils import BIN, assert_same_predictions, copy_project, env, git_commit_all, set_param
from system_packages import missing_packages, require

pytestmark = [pytest.mark.integration, pytest.mark.slurm]

TARGET = "results/B-D/heldout_davidson2017/metrics.json"
CHAIN = {
    "ingest_davidson2017",
    "prepare_davidson2017",
    "validate_davidson2017",
    "preprocess_davidson2017_bert",
    "train_B-D",
    "predict_B-D_heldout_davidson2017",
    "score_B-D_heldout_davidson2017",
}
SNAKEMAKE_TIMEOUT_S = 900  # both runs together (a hard cap: ~4 min on an idle 2-core machine)

# The Debian packages scripts/slurm-up.sh starts (command -> package); as
# root it installs those missing itself.
SLURM_PACKAGES = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client"}

if os.geteuid() != 0 and not missing_packages(SLURM_PACKAGES):
    pytest.skip(
        "the Slurm test starts munged, slurmctld and slurmd, which needs root (run it as root, as .ci/run does)", allow_module_level=True
    )


@pytest.fixture(autouse=True, scope="module")
def slurm_packages():
    """Not root and a package missing: one line saying how to install them."""
    if os.geteuid() != 0:
        require(SLURM_PACKAGES, "the Slurm test (a single-node Slurm, run as root)")


def free_port_pair() -> int:
    """A port p with p and p + 1 free (slurmctld, slurmd)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 65000:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


def daemon_pids(state: Path) -> dict[str, int]:
    pids = state / "pids"
    if not pids.exists():
        pids = state / "pids.stopped"
    return {name: int(pid) for name, pid in (line.split() for line in pids.read_text().splitlines())}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@pytest.fixture(scope="module")
def slurm():
    """A single-node Slurm in a private state directory on free ports,
    stopped by slurm-down.sh (by the recorded pids) whatever happens."""
    # scripts/setup.sh installs the executor plugin where sbatch is, which its
    # Slurm packages put there when it runs as root (as this test does).
    assert importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None, (
        "Snakemake's Slurm executor plugin is not installed: bash scripts/setup.sh --slurm"
    )
    state = Path(tempfile.mkdtemp(prefix="hatecheck-slurm-", dir="/tmp"))
    os.chmod(state, 0o755)  # munged runs as the munge user
    e = env() | {"HATECHECK_SLURM_DIR": str(state), "HATECHECK_SLURM_PORT": str(free_port_pair())}
    try:
        up = subprocess.run(["bash", str(REPO / "scripts/slurm-up.sh")], env=e, capture_output=True, text=True, timeout=600)
        assert up.returncode == 0, f"slurm-up.sh failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        assert "idle" in up.stdout, up.stdout
        yield state, e | {"SLURM_CONF": str(state / "slurm.conf")}
    finally:
        pids = daemon_pids(state) if (state / "pids").exists() else {}
        down = subprocess.run(["bash", str(REPO / "scripts/slurm-down.sh")], env=e, capture_output=True, text=True, timeout=120)
        print(down.stdout, down.stderr)
        still = {name: pid for name, pid in pids.items() if alive(pid)}
        shutil.rmtree(state, ignore_errors=True)
        assert not still, f"slurm-down.sh left {still} running"


def snakemake(project: Path, e: dict[str, str], *args: str) -> tuple[subprocess.Popen, Path]:
    """Start a Snakemake run of TARGET; its output goes to ``<project>.out``."""
    log = project.with_suffix(".out")
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(BIN / "snakemake"), *args, TARGET], cwd=project, env=e, stdout=fh, stderr=subprocess.STDOUT)
    return proc, log


def finish(run: tuple[subprocess.Popen, Path], timeout: float) -> str:
    """The run's output; a failure or a run over ``timeout`` s fails the test."""
    proc, log = run
    try:
        proc.wait(timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    out = log.read_text()
    assert proc.returncode == 0, f"{' '.join(proc.args)} failed or ran over its time ({proc.returncode}):\n{out[-8000:]}"
    return out


def smoke_project(root: Path) -> Path:
    project = copy_project(root)
    set_param(project, "profile", "smoke")
    git_commit_all(project, "fresh clone, smoke profile")
    return project


def file_hashes(project: Path, stages: set[str]) -> dict[str, str]:
    """sha256 of every file the chain wrote (outputs and their folders)."""
    from hatecheck_pipeline.core.config import load_params
    from hatecheck_pipeline.pipeline.registry import build_stages

    outs = [o for s in build_stages(load_params(project / "params.yaml")) if s.name in stages for o in s.snakemake_outs]
    hashes = {}
    for o in outs:
        root = project / o.path
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for f in files:
            hashes[str(f.relative_to(project))] = hashlib.sha256(comparable_bytes(f)).hexdigest()
    return hashes


# Fields that record how long a run took (training log, model card): they
# differ between any two runs; everything else must be byte-identical.
TIMING_KEYS = {"train_seconds"}


def comparable_bytes(f: Path) -> bytes:
    if f.suffix != ".json":
        return f.read_bytes()
    doc = json.loads(f.read_text("utf-8"))
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if k not in TIMING_KEYS}
    return json.dumps(doc, sort_keys=True).encode()


def test_the_chain_runs_as_slurm_jobs_with_the_local_results_and_a_clean_dvc_status(slurm, tmp_path):
    state, slurm_env = slurm
    started = time.monotonic()

    # the same chain on one machine and through Slurm, at once (the Slurm run
    # mostly waits for its status checks)
    local, cluster = smoke_project(tmp_path / "local"), smoke_project(tmp_path / "cluster")
    on_slurm = snakemake(
        cluster,
        slurm_env,
        "--profile",
        "workflow/profiles/slurm",
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--slurm-keep-successful-logs",
    )
    try:
        finish(snakemake(local, env(), "--profile", "workflow/profiles/local"), SNAKEMAKE_TIMEOUT_S)
        out = finish(on_slurm, SNAKEMAKE_TIMEOUT_S - (time.monotonic() - started))
    finally:
        if on_slurm[0].poll() is None:
            on_slurm[0].kill()
            on_slurm[0].wait()
    print(f"local and Slurm runs done in {time.monotonic() - started:.0f} s")

    # every stage of the chain ran, each as one Slurm job that Slurm completed
    ran = {p.name[: -len(".log")] for p in (cluster / "logs").glob("*.log")}
    assert ran == CHAIN
    job_logs = {p.parent.name.removeprefix("rule_"): p for p in (cluster / ".snakemake/slurm_logs").glob("rule_*/**/*.log")}
    assert set(job_logs) == CHAIN, sorted(job_logs)
    job_ids = {rule: int(p.stem) for rule, p in job_logs.items()}
    completed = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^JobId=(\d+) .*?Name=(\S+) JobState=COMPLETED ", (state / "jobcomp.log").read_text(), re.M)
    }
    assert set(job_ids.values()) <= set(completed), (job_ids, completed)
    assert len({completed[i] for i in job_ids.values()}) == 1  # one Snakemake run's jobs (its run id)
    for rule, jid in job_ids.items():
        assert f"SLURM jobid {jid} " in out, rule

    # the same bytes as on one machine
    local_hashes, cluster_hashes = file_hashes(local, CHAIN), file_hashes(cluster, CHAIN)
    assert TARGET in cluster_hashes
    differ = sorted(k for k in local_hashes if local_hashes[k] != cluster_hashes.get(k))
    # under native bf16 the probabilities of two runs may differ within bf16's rounding (assert_same_predictions)
    for rel in [k for k in differ if k.endswith("/predictions.parquet")]:
        assert_same_predictions(cluster / rel, local / rel)
        differ = [k for k in differ if k not in (rel, rel.replace("predictions.parquet", "failures.csv"))]
    assert set(cluster_hashes) == set(local_hashes) and not differ, differ

    # recorded once by the main process: DVC sees nothing to do
    status = subprocess.run(
        [str(BIN / "dvc"), "status", "score_B-D_heldout_davidson2017"], cwd=cluster, env=env(), capture_output=True, text=True, timeout=120
    )
    assert "Data and pipelines are up to date" in status.stdout, status.stdout + status.stderr
    assert "dvc.lock: recorded 7 stage(s) that ran" in out
