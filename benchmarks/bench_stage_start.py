"""What starting one stage process costs: ``hatecheck-pipeline run STAGE``
through the console entry point's short path (``cli/main.py``: no typer
app, no other command's imports) against the same stage run through the
whole command-line app (``cli/app.py``), in CPU seconds of the whole
process (user + system, ``RUSAGE_CHILDREN``) and in the stage function's
own CPU time (its ``logs/benchmarks/<stage>.json``); the difference
between the two is the process's start. Both runners start one such
process per stage, so the saving counts once per stage of a build.

Run it in a workspace where the stage's inputs exist and its fingerprint
is current (a cheap stage is best: its start is most of its cost); the
two ways alternate, ``--rounds`` times each:

    python benchmarks/bench_stage_start.py --project DIR --stage prepare_hatecheck --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

WAYS = {
    "short path (cli/main.py)": "from hatecheck_pipeline.cli.main import cli; cli()",
    "whole app (cli/app.py)": "from hatecheck_pipeline.cli.app import cli; cli()",
}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(code: str, stage: str, project: Path) -> tuple[float, float]:
    """(whole process CPU-s, the stage function's CPU-s) of one run."""
    before = children_cpu()
    # the stage in this process's child, not forked by a warm worker (bench_stage_worker.py measures that)
    env = {**os.environ, "HATECHECK_PIPELINE_WORKER": "off"}
    proc = subprocess.run([sys.executable, "-c", code, "run", stage], cwd=project, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{stage} failed in {project}: {proc.stderr.strip()[-500:]}")
    spent = children_cpu() - before
    record = json.loads((project / "logs" / "benchmarks" / f"{stage}.json").read_text("utf-8"))
    return spent, float(record["cpu_s"])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", type=Path, default=Path("."))
    ap.add_argument("--stage", default="prepare_hatecheck")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    project = args.project.resolve()
    cpu = " ".join(os.popen("lscpu | grep 'Model name'").read().split())
    print(f"project: {project}  stage: {args.stage}  rounds: {args.rounds} (alternating)  {cpu}  cores: {os.cpu_count()}")
    runs: dict[str, list[tuple[float, float]]] = {w: [] for w in WAYS}
    for _ in range(args.rounds):
        for way, code in WAYS.items():
            runs[way].append(one(code, args.stage, project))
    print(f"{'way':28s} {'process CPU-s':>14s} {'stage CPU-s':>12s} {'start CPU-s':>12s}  (medians)")
    medians = {}
    for way, rows in runs.items():
        whole = statistics.median(r[0] for r in rows)
        inside = statistics.median(r[1] for r in rows)
        medians[way] = whole - inside
        print(f"{way:28s} {whole:14.3f} {inside:12.3f} {whole - inside:12.3f}")
    short, full = medians.values()
    print(f"start saved per stage process: {full - short:.3f} CPU-s ({(full - short) / full:.0%} of the whole app's start)")


if __name__ == "__main__":
    main()
