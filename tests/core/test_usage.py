"""The per-stage time and memory record, and the benchmark table built from it."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hatecheck_pipeline.core.usage import record_path, recorded

ROOT = Path(__file__).resolve().parents[2]


def test_a_successful_stage_leaves_its_usage_record(tmp_path):
    with recorded("toy_stage", "data", root=tmp_path):
        time.sleep(0.2)
        block = bytearray(64 * 1024 * 1024)  # touch 64 MiB
        block[::4096] = b"x" * len(block[::4096])
    rec = json.loads(record_path("toy_stage", tmp_path).read_text())
    assert rec["stage"] == "toy_stage" and rec["phase"] == "data"
    assert rec["wall_s"] >= 0.2
    assert rec["cpu_s"] >= 0
    assert rec["max_rss_mb"] >= 64
    assert rec["started"] <= rec["finished"]


def test_a_failed_stage_leaves_no_record(tmp_path):
    with pytest.raises(RuntimeError):
        with recorded("broken", "data", root=tmp_path):
            raise RuntimeError("boom")
    assert not record_path("broken", tmp_path).exists()


def test_bench_pipeline_tables_add_up(tmp_path):
    folder = tmp_path / "logs" / "benchmarks"
    folder.mkdir(parents=True)
    rows = [("ingest_a", "ingest", 1.0), ("validate_a", "validate", 6.0), ("validate_b", "validate", 3.0)]
    for stage, phase, wall in rows:
        rec = {"stage": stage, "phase": phase, "wall_s": wall, "cpu_s": wall / 2, "max_rss_mb": 100.0}
        (folder / f"{stage}.json").write_text(json.dumps(rec))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"), "--project", str(tmp_path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "| validate | 2 | 9.0 | 4.5 | 100 | 90.0% |" in out
    assert "| **all** | 3 | 10.0 | 5.0 | | 100% |" in out
    assert out.index("validate_a") < out.index("validate_b") < out.index("ingest_a")  # slowest first
    only = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"), "--project", str(tmp_path), "--phases", "ingest"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "validate_a" not in only and "| **all** | 1 | 1.0 |" in only
