"""Per-stage and per-phase time and memory of a pipeline run.

Every ``hatecheck-pipeline run STAGE`` (under Snakemake or ``dvc repro``)
writes ``logs/benchmarks/<stage>.json`` (wall and CPU seconds, peak RSS;
``hatecheck_pipeline.core.usage``). This script reads those records and
prints Markdown tables: the stages sorted by wall time with their share of
the summed stage time, and the phases. With ``--run TARGET`` it first builds
TARGET with Snakemake from the current state of the workspace and also
prints the run's wall-clock time (parallel stages overlap, so it is less
than the summed stage time); ``--run data`` builds every data stage
(ingest, prepare, validate, preprocess of every dataset and suite). The
whole report and the data stages are checked against the default
profile's targets: <= 60 minutes and <= 30 seconds of wall
time from an empty workspace on the 2-core machine.

    python benchmarks/bench_pipeline.py [--project DIR] [--run reports/mhc_xtc.html --cores 8] [--top 25]
    python benchmarks/bench_pipeline.py --run data        # time the data stages alone
    python benchmarks/bench_pipeline.py --phases data     # tables of the data stages' records
    python benchmarks/bench_pipeline.py --baseline ../old-clone   # against another workspace's records

``--baseline DIR`` compares the records with those of another complete
workspace (an older commit built the same way on the same machine): summed
stage wall time per phase, and over the stages both have (the baseline's
set of stages, by name) apart from those only this workspace has. Summed
stage time leaves out what parallel stages overlap and each process's
start, so the whole run's wall time (``--run``) is the figure to compare
first; the summed split says where the difference comes from.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from hatecheck_pipeline.core.usage import DATA_PHASES, load_records, phase_rows, span_s

BIN = Path(sys.executable).parent
REPORT = "reports/mhc_xtc.html"
# Wall-clock targets of a build from an empty workspace (seconds).
TARGETS = {REPORT: 3600.0, "data": 30.0}


def data_stages(project: Path) -> list[str]:
    """Names of every stage in the data phases, from the registry."""
    listing = subprocess.run(
        [str(BIN / "hatecheck-pipeline"), "dag", "list"], cwd=project, check=True, capture_output=True, text=True
    ).stdout
    return [cols[1] for line in listing.splitlines() if len(cols := line.split()) >= 2 and cols[0] in DATA_PHASES]


def phases_of(names: list[str]) -> list[str]:
    """``data`` stands for the four data phases."""
    return [p for n in names for p in (DATA_PHASES if n == "data" else (n,))]


def fmt_s(seconds: float) -> str:
    return f"{seconds:,.1f}"


def stage_table(records: list[dict], top: int | None) -> list[str]:
    total = sum(r["wall_s"] for r in records) or 1.0
    rows = sorted(records, key=lambda r: -r["wall_s"])
    lines = ["| stage | phase | wall s | CPU s | peak RSS MiB | share |", "|---|---|---|---|---|---|"]
    for r in rows[:top] if top else rows:
        lines.append(
            f"| {r['stage']} | {r['phase']} | {fmt_s(r['wall_s'])} | {fmt_s(r['cpu_s'])} | {r['max_rss_mb']:,.0f} | {100 * r['wall_s'] / total:.1f}% |"
        )
    if top and len(rows) > top:
        rest = rows[top:]
        lines.append(
            f"| ({len(rest)} more stages) | | {fmt_s(sum(r['wall_s'] for r in rest))} | {fmt_s(sum(r['cpu_s'] for r in rest))} | | {100 * sum(r['wall_s'] for r in rest) / total:.1f}% |"
        )
    return lines


def phase_table(records: list[dict]) -> list[str]:
    lines = [
        "| phase | stages | wall s (summed) | CPU s | peak RSS MiB (max) | share | span s (first start to last end) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in phase_rows(records):
        lines.append(
            f"| {row['phase']} | {row['stages']} | {fmt_s(row['wall_s'])} | {fmt_s(row['cpu_s'])} | {row['max_rss_mb']:,.0f} | {100 * row['share']:.1f}% | {fmt_s(row['span_s'])} |"
        )
    lines.append(
        f"| **all** | {len(records)} | {fmt_s(sum(r['wall_s'] for r in records))} | {fmt_s(sum(r['cpu_s'] for r in records))} | | 100% | {fmt_s(span_s(records))} |"
    )
    return lines


LOG_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
LOG_START = re.compile(r"^(?:local)?rule (\S+):$")
LOG_END = re.compile(r"^Finished jobid: \d+ \(Rule: (\S+)\)$")
LOG_CORES = re.compile(r"^\s+resources: .*\bcpu_cores=(\d+)")
TIMELINE_WINDOW = 60  # s: --timeline lists the windows of this length that lost a quarter of their cores


def log_jobs(text: str) -> dict[str, tuple[datetime, datetime, int]]:
    """Each job's (start, end, cpu_cores reserved) from a Snakemake log: the
    time stamp above its ``rule NAME:`` block, the one above ``Finished
    jobid: N (Rule: NAME)`` (one-second resolution), and the block's
    ``cpu_cores`` resource (a job without one counts one core).

    >>> log = "[Fri Nov 27 08:53:00 2026]\\nlocalrule a:\\n    resources: tmpdir=/tmp, cpu_cores=2, mem_mb=1\\n[Fri Nov 27 08:53:06 2026]\\nFinished jobid: 3 (Rule: a)"
    >>> {k: ((e - s).total_seconds(), c) for k, (s, e, c) in log_jobs(log).items()}
    {'a': (6.0, 2)}
    """
    jobs, started, cores, stamp, current = {}, {}, {}, None, None
    for line in text.splitlines():
        if m := LOG_STAMP.match(line):
            stamp = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif (m := LOG_START.match(line)) and stamp is not None:
            current = m.group(1)
            started[current] = stamp
        elif (m := LOG_CORES.match(line)) and current is not None:
            cores[current] = int(m.group(1))
            current = None
        elif (m := LOG_END.match(line)) and stamp is not None and m.group(1) in started:
            jobs[m.group(1)] = (started.pop(m.group(1)), stamp, cores.get(m.group(1), 1))
    return jobs


def log_walls(text: str) -> dict[str, float]:
    """Each job's wall seconds from a Snakemake log (:func:`log_jobs`: start
    to end, the job's process start included).
    For records a later run has overwritten: a stage re-run after the
    build replaces its ``logs/benchmarks`` record, not the build's log.

    >>> log_walls("[Fri Nov 27 08:53:00 2026]\\nlocalrule a:\\n  x\\n[Fri Nov 27 08:53:06 2026]\\nFinished jobid: 3 (Rule: a)")
    {'a': 6.0}
    """
    return {name: (end - start).total_seconds() for name, (start, end, _) in log_jobs(text).items()}


def idle_core_seconds(
    jobs: dict[str, tuple[datetime, datetime, int]], cores: int, window: int = 60
) -> tuple[int, int, list[tuple[int, int, list[str]]]]:
    """(span s, core-seconds no job had reserved, the windows of ``window``
    s with a quarter of their cores or more idle: (start s, idle core-s,
    the jobs running)), in 1 s steps from the first job's start.

    >>> t = datetime(2026, 11, 27)
    >>> from datetime import timedelta as td
    >>> idle_core_seconds({"a": (t, t + td(seconds=10), 2), "b": (t + td(seconds=10), t + td(seconds=20), 1)}, 2, 10)
    (20, 10, [(10, 10, ['b'])])
    """
    if not jobs:
        return 0, 0, []
    t0 = min(s for s, _, _ in jobs.values())
    at = {k: (int((s - t0).total_seconds()), int((e - t0).total_seconds()), c) for k, (s, e, c) in jobs.items()}
    span = max(e for _, e, _ in at.values())
    used = [0] * span
    for s, e, c in at.values():
        for k in range(s, e):
            used[k] += c
    idle = [max(0, cores - u) for u in used]
    windows = []
    for w in range(0, span, window):
        lost = sum(idle[w : w + window])
        if lost * 4 >= cores * window:
            windows.append((w, lost, sorted(k for k, (s, e, _) in at.items() if s < w + window and e > w)))
    return span, sum(idle), windows


def with_log_walls(records: list[dict], log: Path) -> list[dict]:
    """The records with ``wall_s`` from a Snakemake log (``log_walls``);
    stages the log does not show are left out."""
    walls = log_walls(log.read_text("utf-8", errors="replace"))
    return [{**r, "wall_s": walls[r["stage"]]} for r in records if r["stage"] in walls]


def baseline_table(records: list[dict], baseline: list[dict]) -> list[str]:
    """Summed stage wall per phase against a baseline's, and over the
    stages both workspaces have."""

    def summed(rows: list[dict], phase: str | None = None) -> float:
        return sum(r["wall_s"] for r in rows if phase is None or r["phase"] == phase)

    def ratio(new: float, old: float) -> str:
        return f"{new / old:.2f}x" if old else "–"

    lines = ["| phase | stages (baseline / here) | summed wall s, baseline | here | here / baseline |", "|---|---|---|---|---|"]
    for phase in sorted({r["phase"] for r in records + baseline}, key=lambda p: -summed(baseline, p)):
        n_old, n_new = sum(r["phase"] == phase for r in baseline), sum(r["phase"] == phase for r in records)
        lines.append(
            f"| {phase} | {n_old} / {n_new} | {fmt_s(summed(baseline, phase))} | {fmt_s(summed(records, phase))} | {ratio(summed(records, phase), summed(baseline, phase))} |"
        )
    names = {r["stage"] for r in baseline}
    common = [r for r in records if r["stage"] in names]
    common_names = {r["stage"] for r in common}
    common_base = [r for r in baseline if r["stage"] in common_names]
    extra = [r for r in records if r["stage"] not in names]
    gone = names - common_names
    lines.append(
        f"| **all** | {len(baseline)} / {len(records)} | {fmt_s(summed(baseline))} | {fmt_s(summed(records))} | {ratio(summed(records), summed(baseline))} |"
    )
    lines.append("")
    lines.append(
        f"the baseline's stages found here ({len(common)} of {len(names)}): summed wall {fmt_s(summed(common))} s against "
        f"{fmt_s(summed(common_base))} s = {ratio(summed(common), summed(common_base))}"
    )
    lines.append(
        f"stages only here ({len(extra)}): summed wall {fmt_s(summed(extra))} s"
        + (f" ({', '.join(sorted(r['stage'] for r in extra)[:12])}{', ...' if len(extra) > 12 else ''})" if extra else "")
    )
    if gone:
        lines.append(f"baseline stages not here ({len(gone)}): {', '.join(sorted(gone)[:12])}{', ...' if len(gone) > 12 else ''}")
    return lines


def verdict(what: str, seconds: float) -> str:
    target = TARGETS.get(what)
    if target is None:
        return ""
    return (
        f" -- target <= {target / 60:.0f} min: {'met' if seconds <= target else 'NOT met'}"
        if target >= 600
        else f" -- target <= {target:.0f} s: {'met' if seconds <= target else 'NOT met'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", type=Path, default=Path("."))
    ap.add_argument(
        "--run",
        metavar="TARGET",
        nargs="+",
        help="build the TARGET(s) with snakemake first and time the whole run ('data' = every data stage)",
    )
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--phases", nargs="*", help="only these phases ('data' = ingest, prepare, validate, preprocess)")
    ap.add_argument("--top", type=int, default=25, help="stages listed (0 = all)")
    ap.add_argument("--baseline", type=Path, help="another complete workspace whose records to compare with")
    ap.add_argument("--log", type=Path, help="with --baseline: this build's Snakemake log; stage wall times are read from it (log_walls)")
    ap.add_argument("--baseline-log", type=Path, help="with --baseline: the baseline build's Snakemake log, likewise")
    ap.add_argument(
        "--timeline",
        type=Path,
        nargs="+",
        metavar="LOG",
        help="only this: per Snakemake log, the core-seconds no job had reserved (of --cores) and the minutes that lost a quarter or more",
    )
    args = ap.parse_args()
    if args.timeline:
        for log in args.timeline:
            span, idle, windows = idle_core_seconds(log_jobs(log.read_text("utf-8", errors="replace")), args.cores, TIMELINE_WINDOW)
            print(
                f"{log}: {span} s from the first job's start to the last job's end; {idle} of {args.cores * span} core-seconds "
                f"({idle / max(1, args.cores * span):.1%}) reserved by no job"
            )
            for w, lost, running in windows:
                print(f"  {w:5d}-{w + TIMELINE_WINDOW:5d} s: {lost} idle core-s; running: {', '.join(running)}")
        return
    project = args.project.resolve()
    run_wall = None
    if args.run:
        targets = [t for name in args.run for t in (data_stages(project) if name == "data" else [name])]
        start = time.perf_counter()
        proc = subprocess.run([str(BIN / "snakemake"), "--cores", str(args.cores), *targets], cwd=project)
        run_wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"snakemake failed ({proc.returncode}) after {run_wall:.0f} s")
    records = load_records(project / "logs" / "benchmarks")
    if args.phases:
        records = [r for r in records if r["phase"] in phases_of(args.phases)]
    if not records:
        raise SystemExit(f"no stage records under {project / 'logs/benchmarks'}: run the pipeline first")
    if run_wall is not None:
        what = args.run[0] if len(args.run) == 1 else f"{len(args.run)} targets"
        print(f"snakemake --cores {args.cores} ({what}): {run_wall:.1f} s wall ({run_wall / 60:.1f} min){verdict(what, run_wall)}\n")
    print("\n".join(phase_table(records)))
    data = [r for r in records if r["phase"] in DATA_PHASES]
    if data:
        print(f"\ndata stages ({len(data)}): {span_s(data):.1f} s from the first start to the last end{verdict('data', span_s(data))}")
    if args.baseline:
        base = load_records(args.baseline.resolve() / "logs" / "benchmarks")
        if args.phases:
            base = [r for r in base if r["phase"] in phases_of(args.phases)]
        mine = records
        if args.log and args.baseline_log:
            mine, base = with_log_walls(records, args.log), with_log_walls(base, args.baseline_log)
            print(f"\nstage wall times from the Snakemake logs {args.log} ({len(mine)} stages) and {args.baseline_log} ({len(base)})")
        print(f"\nagainst the baseline {args.baseline}:\n")
        print("\n".join(baseline_table(mine, base)))
    print()
    print("\n".join(stage_table(records, args.top or None)))


if __name__ == "__main__":
    main()
