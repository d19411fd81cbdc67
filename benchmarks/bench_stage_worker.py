"""A whole tiny build with the warm stage worker and without it: the smoke
report built from nothing by ``snakemake --cores 2 reports/mhc_xtc.html``
in two fresh clones of a commit (``profile: smoke``), the first with
``HATECHECK_PIPELINE_WORKER=off`` (every stage in its own process), the
second with the worker (``cli/stage_worker.py``). Each run's wall time and
its CPU time in all: Snakemake and every process it waited for
(``RUSAGE_CHILDREN``) plus the detached workers and the stage processes
they forked (each worker's ``utime + stime + cutime + cstime`` from
``/proc``, read after the build, before the worker's idle end). The two
builds' metrics must be the same (a sha256 over every
``results/**/metrics.json`` is printed; the report holds the stage
records' timings, so it differs between any two builds), and the stage
records' ``cpu_s`` are summed too (a forked stage's excludes the imports
the worker did once).

    HATECHECK_PIPELINE_MIRROR=../shared/datasets python benchmarks/bench_stage_worker.py --repo . --out /tmp/bench-worker
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = "reports/mhc_xtc.html"


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def workers_cpu(run_dir: Path) -> tuple[float, int]:
    """CPU seconds of the workers listening under ``run_dir`` and of their
    reaped children, and how many workers there were."""
    tick = os.sysconf("SC_CLK_TCK")
    total, count = 0.0, 0
    for lock in run_dir.glob("hatecheck-pipeline-*/*.lock"):
        text = lock.read_text().strip()
        if not text:
            continue
        try:
            fields = Path(f"/proc/{int(text)}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            sys.exit(f"worker {text} ended before it was measured ({lock})")
        total += sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick  # utime stime cutime cstime
        count += 1
    return total, count


def build(repo: Path, where: Path, worker: bool) -> dict:
    subprocess.run(["git", "clone", "-q", str(repo), str(where)], check=True)
    params = where / "params.yaml"
    params.write_text(params.read_text().replace("\nprofile: embedded\n", "\nprofile: smoke\n", 1))
    fixed = {
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    }  # one commit id in both clones
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qam", "smoke"]
    subprocess.run(git, cwd=where, env={**os.environ, **fixed}, check=True)
    run_dir = Path(tempfile.mkdtemp(prefix="hcb", dir="/tmp"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(run_dir)}
    env["HATECHECK_PIPELINE_WORKER"] = "on" if worker else "off"
    before, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.run(["snakemake", "--cores", "2", TARGET], cwd=where, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    own = children_cpu() - before
    if proc.returncode != 0:
        sys.exit(f"build failed in {where}:\n{proc.stderr[-3000:]}")
    forked, workers = workers_cpu(run_dir)
    records = [json.loads(p.read_text()) for p in (where / "logs" / "benchmarks").glob("*.json")]
    for lock in run_dir.glob("hatecheck-pipeline-*/*.lock"):
        if lock.read_text().strip():
            try:
                os.kill(int(lock.read_text().strip()), 15)
            except ProcessLookupError:
                pass
    shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "worker": worker,
        "wall_s": round(wall, 1),
        "cpu_s": round(own + forked, 1),
        "runner_cpu_s": round(own, 1),
        "workers_cpu_s": round(forked, 1),
        "workers": workers,
        "stages": len(records),
        "stage_records_cpu_s": round(sum(r["cpu_s"] for r in records), 1),
        "metrics_sha256": metrics_digest(where),
    }


def metrics_digest(where: Path) -> str:
    """sha256 over every ``results/**/metrics.json`` (path and bytes): the
    report itself holds the stage records' timings, which differ run to run."""
    h = hashlib.sha256()
    for path in sorted((where / "results").rglob("metrics.json")):
        h.update(str(path.relative_to(where)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=Path("."))
    ap.add_argument("--out", type=Path, required=True, help="an empty folder for the two clones (removed after)")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    cpu = " ".join(os.popen("lscpu | grep 'Model name'").read().split())
    print(f"commit {commit}, {cpu}, cores: {os.cpu_count()}, smoke profile, snakemake --cores 2 {TARGET} from nothing", flush=True)
    rows = []
    for worker in (False, True):
        where = args.out / ("with-worker" if worker else "without-worker")
        rows.append(build(repo, where, worker))
        print(json.dumps(rows[-1]), flush=True)
        shutil.rmtree(where)
    off, on = rows
    print(
        f"with the worker: wall {on['wall_s']} s against {off['wall_s']} s ({on['wall_s'] / off['wall_s'] - 1:+.0%}), "
        f"CPU {on['cpu_s']} s against {off['cpu_s']} s ({on['cpu_s'] / off['cpu_s'] - 1:+.0%}); "
        f"same metrics: {on['metrics_sha256'] == off['metrics_sha256']}"
    )


if __name__ == "__main__":
    main()
