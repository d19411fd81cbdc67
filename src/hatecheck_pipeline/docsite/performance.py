"""The performance page of the generated documentation: the recorded run's
stage records (``logs/benchmarks/*.json``) summed, per phase and for the
slowest stages, the memory and disk the run needed, and the benchmark
outputs kept with the record."""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any, Mapping

from hatecheck_pipeline.core.usage import DATA_PHASES, phase_rows, span_s
from hatecheck_pipeline.docsite import runs
from hatecheck_pipeline.docsite.formatting import md_table, num, path_cell, run_header

SLOWEST = 15


def performance_page(record: Path) -> str:
    from hatecheck_pipeline.core.usage import load_records

    record = Path(record)
    info = runs.load(record)
    folder = "logs/benchmarks"
    records = load_records(record / folder)
    if not records:
        return run_header(info, record.as_posix()) + "\n\nNo stage records in this record.\n"
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
        run_header(info, record.as_posix()),
        "### The run\n\n" + md_table(["", "figure", "source"], summary),
        "### Per phase\n\nWall and CPU seconds summed over the phase's stages, the largest peak resident memory, the share "
        "of the summed wall time, and the phase's span (first start to last end; stages overlap).\n\n"
        + md_table(["phase", "stages", "wall s", "CPU s", "peak RSS MiB", "share", "span s", "source"], phases),
        f"### The {len(slowest)} slowest stages\n\n"
        + md_table(["stage", "phase", "wall s", "CPU s", "peak RSS MiB", "share", "source"], stages),
    ]
    parts.append(memory_section(records, info, folder))
    for bench in sorted((record / "bench").glob("*.txt")):
        rel = bench.relative_to(record).as_posix()
        parts.append(f"### Benchmark output: {bench.stem}\n\nVerbatim from `{rel}`.\n\n```text\n{bench.read_text('utf-8').rstrip()}\n```")
    return "\n\n".join(parts) + "\n"


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
