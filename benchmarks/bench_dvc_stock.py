"""The environment's own ``dvc`` with the read speed-ups of
``runners/dvc_stock.py`` (params.yaml parsed once per command, the lock read
with the safe parser, the rwlock's check skipped where this process holds
every entry) against the same command with them off
(``HATECHECK_PIPELINE_DVC_SPEEDUPS=off``): wall and CPU seconds of each
command, the two ways taking turns, and whether they printed the same
(the words of the output, sorted: DVC names files to ``git add`` in a set's
order).

Run it in a complete workspace (a built report: nothing to do), with the
environment's ``dvc`` first on PATH:

    python benchmarks/bench_dvc_stock.py --project DIR --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (("status",), ("repro", "--dry"), ("repro", "report"))
SWITCH = "HATECHECK_PIPELINE_DVC_SPEEDUPS"


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(dvc: str, args: tuple[str, ...], project: Path, on: bool) -> tuple[float, float, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != SWITCH}
    if not on:
        env[SWITCH] = "off"
    before, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.run([dvc, *args], cwd=project, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - before
    if proc.returncode != 0:
        sys.exit(f"dvc {' '.join(args)} failed in {project}: {proc.stderr.strip()[-500:]}")
    return wall, cpu, sorted((proc.stdout + proc.stderr).split())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", type=Path, default=Path("."))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    project = args.project.resolve()
    dvc = shutil.which("dvc") or sys.exit("no dvc on PATH")
    cpu = " ".join(os.popen("lscpu | grep 'Model name'").read().split())
    import yaml

    stages = len(yaml.safe_load((project / "dvc.yaml").read_text("utf-8"))["stages"])
    print(f"project: {project}  dvc: {dvc}  rounds: {args.rounds} (alternating)  {cpu}  cores: {os.cpu_count()}")
    print(f"dvc.yaml: {stages} stages; the speed-ups on (the hook) against off ({SWITCH}=off)")
    print(f"{'command':22s} {'off wall s':>10s} {'off CPU-s':>10s} {'on wall s':>10s} {'on CPU-s':>10s} {'CPU saved':>10s}  same output")
    for command in COMMANDS:
        runs: dict[bool, list[tuple[float, float, list[str]]]] = {False: [], True: []}
        for _ in range(args.rounds):
            for on in (False, True):
                runs[on].append(one(dvc, command, project, on))
        med = {on: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)) for on, rows in runs.items()}
        same = all(r[2] == runs[False][0][2] for rows in runs.values() for r in rows)
        saved = 1 - med[True][1] / med[False][1]
        print(
            f"dvc {' '.join(command):18s} {med[False][0]:10.2f} {med[False][1]:10.2f} {med[True][0]:10.2f} {med[True][1]:10.2f}"
            f" {saved:10.0%}  {same}"
        )


if __name__ == "__main__":
    main()
