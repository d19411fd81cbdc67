"""Cost of recording a Snakemake run in ``dvc.lock`` (``runners/compose.record_in_dvc``).

Commits every stage recorded in the workspace's ``dvc.lock`` again through
``runners/dvc_adapter.commit_stages``, alternately with DVC's own reads
(``--variants plain``: each stage re-parses ``params.yaml``, looks its keys up
three times, reads git's index once per output) and with them memoised for
the commit (``memoised``, what the pipeline runs: ``runners/dvc_speedups``).
Prints the seconds of each run and checks that both write the same
``dvc.lock`` bytes. Run it in a complete workspace (the stages' outputs
exist); it rewrites ``dvc.lock`` with what it held.

    python benchmarks/bench_dvc_record.py [--project DIR] [--repeat 2]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import statistics
import time
from pathlib import Path

import yaml

from hatecheck_pipeline.runners import dvc_adapter, dvc_speedups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=Path.cwd())
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    os.chdir(args.project)
    names = list(yaml.safe_load(Path("dvc.lock").read_text())["stages"])
    memoised = dvc_speedups._memoised_reads
    variants = {"plain": lambda *args, **kwargs: contextlib.nullcontext(), "memoised": memoised}
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    digests: set[str] = set()
    print(f"project: {Path.cwd()}  stages: {len(names)}  cores: {len(os.sched_getaffinity(0))}  load: {os.getloadavg()[0]:.2f}")
    try:
        for rep in range(args.repeat):
            for name, reads in variants.items():
                dvc_speedups._memoised_reads = reads
                start = time.perf_counter()
                dvc_adapter.commit_stages(names)
                seconds[name].append(time.perf_counter() - start)
                digests.add(hashlib.sha256(Path("dvc.lock").read_bytes()).hexdigest())
                print(f"  {name:9s} run {rep + 1}: {seconds[name][-1]:6.2f} s", flush=True)
    finally:
        dvc_speedups._memoised_reads = memoised
    for name, runs in seconds.items():
        print(f"{name:9s} median {statistics.median(runs):6.2f} s  (best {min(runs):.2f})")
    print(
        f"ratio plain/memoised: {statistics.median(seconds['plain']) / statistics.median(seconds['memoised']):.2f}x; "
        f"dvc.lock identical across runs: {len(digests) == 1}"
    )
    if len(digests) != 1:
        raise SystemExit("the two ways of reading wrote different dvc.lock files")


if __name__ == "__main__":
    main()
