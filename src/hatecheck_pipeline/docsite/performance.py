"""The performance page of the generated documentation: the recorded run's
stage records (``logs/benchmarks/*.json``) summed, per phase and for the
slowest stages, the run's critical path (:mod:`.critical_path`, from the
record's ``dag.json``) beside its CPU floor, the memory and disk the run
needed, and the benchmark outputs kept with the record."""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any, Mapping

from hatecheck_pipeline.core.usage import DATA_PHASES, phase_rows, span_s
from hatecheck_pipeline.docsite import critical_path as cp, runs
from hatecheck_pipeline.docsite.formatting import md_table, num, path_cell, page

SLOWEST = 15


def performance_page(record: Path) -> str:
    from hatecheck_pipeline.core.usage import load_records

    record = Path(record)
    info = runs.load(record)
    folder = "logs/benchmarks"
    records = load_records(record / folder)
    if not records:
        return page(info, record, ["No stage records in this record."])
    wall = sum(r["wall_s"] for r in records)
    cpu = sum(r["cpu_s"] for r in records)
    summary = [
        ["stages recorded", f"{len(records)}", f"`{folder}/*.json`"],
        ["stage wall time, summed", f"{num(wall / 60)} min", f"`{folder}/*.json` (`wall_s`)"],
        ["stage CPU time, summed", f"{num(cpu / 60)} min", f"`{folder}/*.json` (`cpu_s`)"],
        ["first stage start to last stage end", f"{num(span_s(records) / 60)} min", f"`{folder}/*.json` (`started`, `finished`)"],
    ]
    loads = [r["load_1min_at_end"] for r in records if r.get("load_1min_at_end") is not None]
    if loads:
        summary.append(
            [
                "1-minute load average when a stage ended (mean / max; the machine's other work included)",
                f"{num(mean(loads), 2)} / {num(max(loads), 2)}",
                f"`{folder}/*.json` (`load_1min_at_end`)",
            ]
        )
    if info.get("wall_s") is not None:
        summary.insert(0, ["Snakemake wall time (the command above)", f"{num(info['wall_s'] / 60)} min", "`run.json` (`wall_s`)"])
    data = [r for r in records if r["phase"] in DATA_PHASES]
    if data:
        summary.append(
            [
                "data stages (ingest, prepare, validate, preprocess): first start to last end",
                f"{num(span_s(data))} s ({len(data)} stages)",
                f"`{folder}/*.json` of those stages",
            ]
        )
    phases = [
        [
            r["phase"],
            str(r["stages"]),
            num(r["wall_s"]),
            num(r["cpu_s"]),
            num(r["max_rss_mb"], 0),
            f"{100 * r['share']:.1f}%",
            num(r["span_s"]),
            f"`{folder}/*.json` of the {r['phase']} stages",
        ]
        for r in phase_rows(records)
    ]
    slowest = sorted(records, key=lambda r: -r["wall_s"])[:SLOWEST]
    stages = [
        [
            r["stage"],
            r["phase"],
            num(r["wall_s"]),
            num(r["cpu_s"]),
            num(r["max_rss_mb"], 0),
            f"{100 * r['wall_s'] / (wall or 1):.1f}%",
            path_cell(f"{folder}/{r['stage']}.json"),
        ]
        for r in slowest
    ]
    parts = [
        "### The run\n\n" + md_table(["", "figure", "source"], summary),
        "### Per phase\n\nWall and CPU seconds summed over the phase's stages, the largest peak resident memory, the share "
        "of the summed wall time, and the phase's span (first start to last end; stages overlap).\n\n"
        + md_table(["phase", "stages", "wall s", "CPU s", "peak RSS MiB", "share", "span s", "source"], phases),
        f"### The {len(slowest)} slowest stages\n\n"
        + md_table(["stage", "phase", "wall s", "CPU s", "peak RSS MiB", "share", "source"], stages),
    ]
    parts.append(critical_path_section(records, info, runs.load_dag(record), folder))
    parts.append(memory_section(records, info, folder))
    for bench in sorted((record / "bench").glob("*.txt")):
        rel = bench.relative_to(record).as_posix()
        parts.append(f"### Benchmark output: {bench.stem}\n\nVerbatim from `{rel}`.\n\n```text\n{bench.read_text('utf-8').rstrip()}\n```")
    return page(info, record, parts)


def critical_path_section(records: list[dict[str, Any]], info: Mapping[str, Any], dag: Mapping[str, Any] | None, folder: str) -> str:
    """The chain of stages that bounded the run's wall time
    (:func:`.critical_path.critical_path`), its walls and waits against the
    run's span, and the CPU floor (summed stage CPU over the cores): whichever
    of the path and the floor is longer bounds the run."""
    head = "### Critical path\n\n"
    if dag is None:
        return (
            head
            + f"This record has no dependency graph (`{runs.DAG_FILE}`; it was recorded before `docs record` wrote one), so no critical path."
        )
    steps = cp.critical_path(dag["upstream"], records)
    span = span_s(records)
    source = dag.get("source") or {}
    made = ", ".join(f"{k} `{v}`" for k, v in source.items())
    rows = [
        [
            s["stage"],
            str(s["phase"]),
            num(s["start_s"], 0),
            num(s["end_s"], 0),
            num(s["wall_s"]),
            num(s["cpu_s"]),
            num(s["wait_s"], 0),
            path_cell(f"{folder}/{s['stage']}.json"),
        ]
        for s in steps
    ]
    wall = sum(s["wall_s"] for s in steps)
    wait = sum(s["wait_s"] for s in steps)
    summary = [
        ["stages on the path", str(len(steps)), f"`{runs.DAG_FILE}`, `{folder}/*.json`"],
        [
            "stage wall time on the path, summed",
            f"{num(wall)} s ({100 * wall / (span or 1):.0f}% of the span)",
            f"`{folder}/*.json` (`wall_s`)",
        ],
        ["waits on the path, summed", f"{num(wait, 0)} s", f"`{folder}/*.json` (`started`, `finished`)"],
        ["the run's span: first stage start to last stage end", f"{num(span, 0)} s", f"`{folder}/*.json` (`started`, `finished`)"],
    ]
    cores = (info.get("machine") or {}).get("cores") or max((r.get("cores") or 0 for r in records), default=0)
    verdict = ""
    if cores:
        floor = cp.cpu_floor_s(records, cores)
        summary.append(
            [
                "CPU floor: stage CPU time, summed, over the cores",
                f"{num(floor)} s ({num(sum(r['cpu_s'] for r in records))} s / {cores} cores; {100 * floor / (span or 1):.0f}% of the span)",
                f"`{folder}/*.json` (`cpu_s`), `run.json` (`machine.cores`)",
            ]
        )
        by_path = wall >= floor
        verdict = (
            "\n\nAt the stage times measured, no schedule ends sooner than the longer of two bounds: the path's stage wall "
            "time (its stages run one after another) and the CPU floor (every core busy throughout). Here the "
            f"{'path' if by_path else 'CPU floor'} is the longer ({num(max(wall, floor))} s against {num(min(wall, floor))} s), "
            f"so the run is bound by {'the path rather than by the CPU' if by_path else 'the CPU rather than by the path'}; "
            f"the span is {num(span / (max(wall, floor) or 1), 2)} times that bound. The path's waits ({num(wait, 0)} s, "
            "the span less its stage wall time) are time when its next stage was ready, every dependency finished, but "
            "had not started: Snakemake's scheduling, cores or memory (`mem_mb`) taken by other stages or by the "
            "machine's other work, the stage command's start-up."
        )
    text = (
        head + "The chain of stages that bounded the run's wall time: starting from the stage that finished last, step to its "
        "dependency (the upstream stage whose outputs it reads) that finished last, until a stage with no upstream stage. "
        "Start and end are seconds from the run's first stage start; each stage's wait is its start minus the end of "
        "the stage above it in the table (for the first, minus the run's first stage start): Snakemake's scheduling, "
        "queueing for cores behind other stages, and the stage command's start-up. The walls and waits add up to the span, up "
        f"to the records' whole-second timestamps. The dependencies come from the stage registry when the run was recorded "
        f"(`{runs.DAG_FILE}`{': ' + made if made else ''}).\n\n"
        + md_table(["stage", "phase", "start s", "end s", "wall s", "CPU s", "wait s", "source"], rows)
        + "\n\n"
        + md_table(["", "figure", "source"], summary)
        + verdict
    )
    unknown = sorted({r["stage"] for r in records} - set(dag["upstream"]))
    if unknown:
        text += (
            f"\n\n{len(unknown)} recorded stage(s) were not in the registry when the run was recorded, so the path "
            f"cannot step through them: {', '.join(f'`{n}`' for n in unknown)}."
        )
    return text


MEMORY_LISTED_MIB = 2000  # stages at or above this peak are listed one by one


def memory_section(records: list[dict[str, Any]], info: Mapping[str, Any], folder: str) -> str:
    """How much memory and disk the recorded run needed: the largest stage
    peak (what a machine must have free: the local ``mem_mb`` bound runs a
    stage alone when nothing else fits beside it), the stages at or above
    :data:`MEMORY_LISTED_MIB`, and the workspace's disk use (``run.json``'s
    ``disk_bytes``, when the record has it)."""
    top = max(records, key=lambda r: r["max_rss_mb"])
    big = sorted((r for r in records if r["max_rss_mb"] >= MEMORY_LISTED_MIB), key=lambda r: -r["max_rss_mb"])
    source = path_cell(f"{folder}/{top['stage']}.json")
    text = (
        f"### Memory and disk\n\nThe largest peak resident memory of any stage: **{num(top['max_rss_mb'], 0)} MiB** "
        f"(`{top['stage']}`, {source}). A machine running this profile needs that much "
        "free; Snakemake starts further stages beside it only while their declared `mem_mb` fits in the machine's "
        "available memory ([pipeline](pipeline.md)). Stages peaking at or above "
        f"{MEMORY_LISTED_MIB:,} MiB:\n\n"
        + md_table(
            ["stage", "phase", "peak RSS MiB", "source"],
            [[r["stage"], r["phase"], num(r["max_rss_mb"], 0), path_cell(f"{folder}/{r['stage']}.json")] for r in big],
        )
    )
    disk = info.get("disk_bytes")
    if disk:
        rows = [[f"`{k}/`" if k != "total" else "total", num(v / 2**30, 2)] for k, v in disk.items()]
        text += (
            "\n\nDisk used by the workspace when the run was recorded (GiB; a file linked from DVC's cache into the "
            "workspace counted once; `run.json`, `disk_bytes`):\n\n" + md_table(["folder", "GiB"], rows)
        )
    return text
