"""What `dvc repro --dry` spends its time on, and what a split params.yaml could buy.

Issue 32 asks for `dvc repro --dry report` in 3 s. DVC re-reads and
re-parses params.yaml for every stage it checks and looks each declared key
up with `dpath`; splitting params.yaml into small per-section files is the
one change on the project's side that would cut that. This script measures
what that change could buy at best, before anyone makes it: it runs the
same dry run under DVC as installed and under DVC patched *in this
benchmark's worker process only* (the pipeline never runs patched DVC):

- ``stock``: DVC as installed;
- ``params-once``: each params file parsed once per process and each
  stage's keys looked up once, as the pipeline's own recording of a run in
  dvc.lock has them (``runners/dvc_speedups._memoised_reads``): a lower
  bound on the dry run of any split of params.yaml (small files still cost
  a parse each);
- ``params-once-no-rwlock``: also without the per-stage read/write lock
  edits of ``.dvc/tmp/rwlock`` (DVC takes them even for ``--dry``; no
  configuration turns them off);
- ``dvc status <stage>`` (without ``--with-deps``): DVC loads dvc.yaml and
  dvc.lock and checks that one stage, the floor of a dry run of this
  pipeline's size;
- ``dvc --version``: DVC's start-up, the floor of any ``dvc`` command.

Rounds are interleaved, and every variant's dry-run output must equal the
stock one (the same stages found changed or not), else the script stops.
Run it in a complete workspace (every stage up to date):

    python benchmarks/bench_dvc_dry.py [--project DIR] [--rounds 5] [--stage report]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

VARIANTS = ("stock", "params-once", "params-once-no-rwlock")


def _patch_no_rwlock() -> None:
    import contextlib

    import dvc.rwlock

    dvc.rwlock.rwlock = lambda *args, **kwargs: contextlib.nullcontext()


def worker(variant: str, dvc_args: list[str]) -> int:
    from dvc.cli import main as dvc_main

    if variant == "stock":
        return dvc_main(dvc_args)
    from dvc.repo import Repo

    from hatecheck_pipeline.runners import dvc_speedups

    if variant == "params-once-no-rwlock":
        _patch_no_rwlock()
    # DVC's params reads memoised as the pipeline's own dvc.lock recording has them (module-wide, so the CLI's
    # repository reads through them too)
    with Repo(".") as repo, dvc_speedups._memoised_reads(repo):
        return dvc_main(dvc_args)


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}:\n{proc.stdout[-2000:]}")
    return seconds, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=Path.cwd())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stage", default="report", help="the DVC target of the dry run")
    ap.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    args, rest = ap.parse_known_args()
    if args.worker:
        sys.exit(worker(args.worker, rest))
    bin_dir = Path(sys.executable).parent
    dry = ["repro", "--dry", args.stage]
    commands = {v: [sys.executable, str(Path(__file__).resolve()), "--worker", v, *dry] for v in VARIANTS}
    commands[f"dvc status {args.stage}"] = [str(bin_dir / "dvc"), "status", args.stage]  # dvc.yaml and lock loaded, one stage checked
    commands["dvc --version"] = [str(bin_dir / "dvc"), "--version"]
    print(
        f"project: {args.project.resolve()}  cores: {len(os.sched_getaffinity(0))}  "
        f"load: {os.getloadavg()[0]:.2f}  rounds: {args.rounds} (interleaved)"
    )
    times: dict[str, list[float]] = {name: [] for name in commands}
    outputs: dict[str, str] = {}
    for r in range(args.rounds):
        for name, cmd in commands.items():
            seconds, out = timed(cmd, args.project)
            times[name].append(seconds)
            if name in VARIANTS:
                outputs.setdefault(name, out)
                if out != outputs["stock"]:
                    raise SystemExit(f"round {r + 1}: the {name} dry run printed other stages than the stock one:\n{out[-2000:]}")
        print(f"round {r + 1}: " + "  ".join(f"{name} {times[name][-1]:.2f} s" for name in commands), flush=True)
    changed = outputs["stock"].count("Running stage")
    print(f"dry-run output identical across variants and rounds: True; stages it would run: {changed}")
    print(f"{'variant':24s} {'median s':>9s} {'min s':>7s} {'max s':>7s}")
    for name, values in times.items():
        print(f"{name:24s} {statistics.median(values):9.2f} {min(values):7.2f} {max(values):7.2f}")


if __name__ == "__main__":
    main()
