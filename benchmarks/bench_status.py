"""Cost of asking DVC which stages are up to date (``dvc_adapter.changed_stages``).

Snakemake asks it at the start of a run whenever some output looks older
than an input (after a parameter change, `dvc pull`, `git checkout`:
``runners/compose.align_to_record``), then re-stamps the outputs DVC finds up to
date. This times the question in one process, alternately with DVC's own
reads (``plain``: params.yaml re-parsed for every stage) and with them
memoised (``memoised``, what the pipeline runs: the reads of its
``dvc.lock`` recording), and checks that both answer the same stages. Run
it in a complete workspace, or one with a parameter changed.

    python benchmarks/bench_status.py [--project DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path

from hatecheck_pipeline.runners import dvc_adapter, dvc_speedups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=Path.cwd())
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.chdir(args.project)
    memoised = dvc_speedups._memoised_reads
    variants = {"plain": lambda *args, **kwargs: contextlib.nullcontext(), "memoised": memoised}
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    answers: set[tuple[str, ...]] = set()
    print(
        f"project: {Path.cwd()}  cores: {len(os.sched_getaffinity(0))}  load: {os.getloadavg()[0]:.2f}  rounds: {args.repeat} (alternating)"
    )
    try:
        for r in range(args.repeat):
            for name, reads in variants.items():
                dvc_speedups._memoised_reads = reads
                start = time.perf_counter()
                changed = dvc_adapter.changed_stages(".")
                seconds[name].append(time.perf_counter() - start)
                answers.add(tuple(sorted(changed)))
                print(f"round {r + 1} {name:9s} {seconds[name][-1]:6.2f} s  stages changed: {len(changed)}", flush=True)
    finally:
        dvc_speedups._memoised_reads = memoised
    if len(answers) != 1:
        raise SystemExit(f"the variants answered different stages: {sorted(answers)}")
    print(f"the same stages from both: True ({', '.join(next(iter(answers))) or 'none'})")
    for name, values in seconds.items():
        print(f"{name:9s} median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
