"""A time and memory record of every stage run, whichever runner ran it.

``hatecheck-pipeline run STAGE`` wraps the stage's function in
:func:`recorded`, which writes ``logs/benchmarks/<stage>.json`` after a
successful run: wall seconds, CPU seconds (user + system, the process and
its children), peak resident memory, start and end time. The record is
written by the stage command itself rather than by Snakemake's
``benchmark:`` directive, so ``dvc repro`` runs are recorded the same way,
and no extra file takes part in Snakemake's up-to-date check (a benchmark
file older than outputs that ``dvc repro`` rewrote would make Snakemake
re-run the job). ``benchmarks/bench_pipeline.py`` turns the records into
per-stage and per-phase tables.
"""

from __future__ import annotations

import json
import os
import resource
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from hatecheck_pipeline.core.files import write_text

BENCHMARK_DIR = Path("logs/benchmarks")


def record_path(stage: str, root: Path = BENCHMARK_DIR) -> Path:
    return root / f"{stage}.json"


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_rss_mb() -> float:
    """Peak resident set size of this process or any waited-for child (MiB;
    Linux reports ru_maxrss in KiB)."""
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return round(peak / 1024, 1)


@contextmanager
def recorded(stage: str, phase: str, root: Path = BENCHMARK_DIR) -> Iterator[None]:
    """Run the body; on success write the stage's usage record."""
    started, wall0, cpu0 = datetime.now(timezone.utc), time.perf_counter(), _cpu_seconds()
    yield
    wall = time.perf_counter() - wall0
    record = {
        "stage": stage,
        "phase": phase,
        "wall_s": round(wall, 3),
        "cpu_s": round(_cpu_seconds() - cpu0, 3),
        "max_rss_mb": _peak_rss_mb(),
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_1min_at_end": round(os.getloadavg()[0], 2),
        "cores": os.cpu_count(),
    }
    write_text(json.dumps(record, indent=1) + "\n", record_path(stage, root))
