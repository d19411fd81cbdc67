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


DATA_PHASES = ("ingest", "prepare", "validate", "preprocess")


def load_records(root: Path = BENCHMARK_DIR) -> list[dict]:
    """Every stage record under ``root`` (none when it does not exist)."""
    return [json.loads(p.read_text("utf-8")) for p in sorted(Path(root).glob("*.json"))]


def span_s(records: list[dict]) -> float:
    """Wall-clock seconds from the first record's start to the last one's
    end (parallel stages overlap, so this is at most the summed time).

    >>> span_s([{"started": "2026-01-01T12:00:00+00:00", "finished": "2026-01-01T12:00:07+00:00"},
    ...         {"started": "2026-01-01T12:00:02+00:00", "finished": "2026-01-01T12:00:05+00:00"}])
    7.0
    """
    starts = [datetime.fromisoformat(r["started"]) for r in records]
    ends = [datetime.fromisoformat(r["finished"]) for r in records]
    return (max(ends) - min(starts)).total_seconds()


def phase_rows(records: list[dict]) -> list[dict]:
    """One row per phase, most summed wall time first: stages, summed wall
    and CPU seconds, the largest peak RSS, share of the summed wall time,
    and the phase's wall-clock span."""
    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(r["phase"], []).append(r)
    total = sum(r["wall_s"] for r in records) or 1.0
    rows = [
        {
            "phase": phase,
            "stages": len(rs),
            "wall_s": sum(r["wall_s"] for r in rs),
            "cpu_s": sum(r["cpu_s"] for r in rs),
            "max_rss_mb": max(r["max_rss_mb"] for r in rs),
            "share": sum(r["wall_s"] for r in rs) / total,
            "span_s": span_s(rs),
        }
        for phase, rs in by.items()
    ]
    return sorted(rows, key=lambda row: -row["wall_s"])
