"""The performance page's critical path: the chain of stages that bounded a
recorded run's wall time, from the stage records and the dependency graph
written with the record (``dag.json``), on hand-made runs whose answer is
known."""

from __future__ import annotations

import json
from pathlib import Path

from hatecheck_pipeline.docsite import critical_path as cp, performance, runs


def _rec(stage: str, start: int, end: int, cpu: float | None = None, phase: str = "p") -> dict:
    """A stage record on a clock of seconds after 12:00:00."""

    def at(s: int) -> str:
        return f"2026-01-01T12:{s // 60:02d}:{s % 60:02d}+00:00"

    return {"stage": stage, "phase": phase, "wall_s": float(end - start), "cpu_s": cpu if cpu is not None else float(end - start),
            "max_rss_mb": 100.0, "started": at(start), "finished": at(end)}  # fmt: skip


# ingest -> prep -> train -> predict -> report, and ingest -> audit -> report;
# train waited 40 s for a core after prep ended; audit ended before predict
DAG = {"ingest": [], "prep": ["ingest"], "train": ["prep"], "predict": ["train"], "audit": ["ingest"], "report": ["predict", "audit"]}
RECORDS = [
    _rec("ingest", 3, 10),
    _rec("prep", 12, 30),
    _rec("audit", 12, 150),
    _rec("train", 70, 200, cpu=260.0),
    _rec("predict", 201, 230),
    _rec("report", 232, 240),
]


def test_the_path_steps_to_the_dependency_that_finished_last_and_counts_the_waits():
    path = cp.critical_path(DAG, RECORDS)
    assert [s["stage"] for s in path] == ["ingest", "prep", "train", "predict", "report"]
    assert [s["after"] for s in path] == [None, "ingest", "prep", "train", "predict"]
    # the first stage waits from the run's first stage start (its own here), the others from their dependency's end
    assert [s["wait_s"] for s in path] == [0.0, 2.0, 40.0, 1.0, 2.0]
    assert [(s["start_s"], s["end_s"]) for s in path] == [(0.0, 7.0), (9.0, 27.0), (67.0, 197.0), (198.0, 227.0), (229.0, 237.0)]
    # walls and waits add up to the span (first stage start to last stage end)
    assert sum(s["wall_s"] + s["wait_s"] for s in path) == 237.0


def test_the_path_follows_a_slower_side_branch_and_breaks_ties_by_length():
    late_audit = [r if r["stage"] != "audit" else _rec("audit", 12, 231) for r in RECORDS]
    assert [s["stage"] for s in cp.critical_path(DAG, late_audit)] == ["ingest", "audit", "report"]
    # predict and audit both end at second 230: the longer one (predict, 29 s against 18 s) is taken
    tie = [r if r["stage"] != "audit" else _rec("audit", 212, 230) for r in RECORDS]
    assert [s["stage"] for s in cp.critical_path(DAG, tie)][-2:] == ["predict", "report"]


def test_a_path_from_records_without_a_graph_entry_or_of_other_runs_ends():
    # a stage the graph does not know stops the path there; a cycle (records of two runs) is not followed twice
    assert [s["stage"] for s in cp.critical_path({}, RECORDS)] == ["report"]
    assert [s["stage"] for s in cp.critical_path({"report": ["predict"], "predict": ["report"]}, RECORDS)] == ["predict", "report"]
    assert cp.critical_path(DAG, []) == []


def test_upstream_edges_match_reads_to_outputs_and_step_through_stages_not_run():
    stages = [
        ("ingest", ["code/ingest.txt"], ["data/raw/a.csv"]),
        ("prep", ["data/raw/a.csv"], ["data/interim/a/"]),
        ("train", ["data/interim/a/train.parquet", "resources/x.yaml"], ["models/m"]),
        ("report", ["models/m/card.json", "data/raw/a.csv"], ["reports/r.html"]),
    ]
    assert cp.upstream_of(stages, ["ingest", "prep", "train", "report"]) == {
        "ingest": [],
        "prep": ["ingest"],
        "train": ["prep"],
        "report": ["ingest", "train"],
    }
    # prep did not run (up to date): train reads what ingest made through it; a record the registry lacks gets no entry
    assert cp.upstream_of(stages, ["ingest", "train", "gone"]) == {"ingest": [], "train": ["ingest"]}


def _record(tmp_path: Path, cores: int | None = 2) -> Path:
    record = tmp_path / "rec"
    for r in RECORDS:
        path = record / "logs/benchmarks" / f"{r['stage']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))
    info = {"name": "t", "label": "a test run", "profile": "smoke", "commit": "abc", "machine": {"cores": cores}}
    info |= {"started": RECORDS[0]["started"], "finished": RECORDS[-1]["finished"]}
    (record / runs.RUN_FILE).write_text(json.dumps(info))
    return record


def test_the_performance_page_shows_the_path_its_totals_and_the_cpu_floor(tmp_path):
    record = _record(tmp_path)
    runs.write_dag(record, {**DAG, "gone": []}, {"parameters": "params.yaml", "profile": "smoke"})
    assert runs.load_dag(record)["upstream"]["report"] == ["audit", "predict"]
    page = performance.performance_page(record)
    section = page[page.index("### Critical path") : page.index("### Memory")]
    assert "starting from the stage that finished last, step to its dependency" in section
    assert "(`dag.json`: parameters `params.yaml`, profile `smoke`)" in section
    assert "| train | p | 67 | 197 | 130.0 | 260.0 | 40 | `logs/benchmarks/train.json` |" in section
    assert "| stages on the path | 5 |" in section
    assert "| stage wall time on the path, summed | 192.0 s (81% of the span) |" in section
    assert "| waits on the path, summed | 45 s |" in section
    assert "| the run's span: first stage start to last stage end | 237 s |" in section
    # CPU: 7 + 18 + 138 + 260 + 29 + 8 = 460 s on 2 cores: 230 s, above the path's 192 s
    assert "| CPU floor: stage CPU time, summed, over the cores | 230.0 s (460.0 s / 2 cores; 97% of the span) |" in section
    assert "the run is bound by the CPU rather than by the path" in section
    assert "gone" not in section  # a stage of the graph without a record

    # one core more and the path is the longer bound
    record = _record(tmp_path, cores=4)
    runs.write_dag(record, DAG, {})
    section = performance.performance_page(record).split("### Critical path")[1]
    assert "the run is bound by the path rather than by the CPU" in section and "(`dag.json`)" in section


def test_a_record_without_a_graph_says_so_in_one_line(tmp_path):
    record = _record(tmp_path)
    page = performance.performance_page(record)
    section = page[page.index("### Critical path") : page.index("### Memory")].strip()
    assert section.splitlines()[1:] == [
        "",
        "This record has no dependency graph (`dag.json`; it was recorded before `docs record` wrote one), so no critical path.",
    ]


def test_recorded_stages_the_registry_lacks_are_named(tmp_path):
    record = _record(tmp_path)
    runs.write_dag(record, {k: v for k, v in DAG.items() if k != "audit"}, {})
    assert "1 recorded stage(s) were not in the registry when the run was recorded" in performance.performance_page(record)
