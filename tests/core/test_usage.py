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
    """Summed and wall-clock (first start to last end) time per phase; the
    data stages' span is checked against the 60 s target; ``--phases data``
    selects the four data phases."""
    folder = tmp_path / "logs" / "benchmarks"
    folder.mkdir(parents=True)
    rows = [  # stage, phase, wall, start, end (seconds past 12:00:00)
        ("ingest_a", "ingest", 1.0, 0, 1),
        ("validate_a", "validate", 6.0, 1, 7),
        ("validate_b", "validate", 3.0, 2, 5),
        ("train_m", "train", 70.0, 7, 77),
    ]
    for stage, phase, wall, start, end in rows:
        rec = {
            "stage": stage,
            "phase": phase,
            "wall_s": wall,
            "cpu_s": wall / 2,
            "max_rss_mb": 100.0,
            "started": f"2026-01-01T12:{start // 60:02d}:{start % 60:02d}+00:00",
            "finished": f"2026-01-01T12:{end // 60:02d}:{end % 60:02d}+00:00",
        }
        (folder / f"{stage}.json").write_text(json.dumps(rec))
    bench = [sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"), "--project", str(tmp_path)]
    out = subprocess.run(bench, capture_output=True, text=True, check=True).stdout
    assert "| validate | 2 | 9.0 | 4.5 | 100 | 11.2% | 6.0 |" in out  # overlapping stages: 6 s of wall clock, 9 s summed
    assert "| **all** | 4 | 80.0 | 40.0 | | 100% | 77.0 |" in out
    assert "data stages (3): 7.0 s from the first start to the last end -- target <= 30 s: met" in out
    assert out.index("train_m") < out.index("validate_a") < out.index("validate_b") < out.index("ingest_a")  # slowest first
    only = subprocess.run([*bench, "--phases", "ingest"], capture_output=True, text=True, check=True).stdout
    assert "validate_a" not in only and "| **all** | 1 | 1.0 |" in only
    data = subprocess.run([*bench, "--phases", "data"], capture_output=True, text=True, check=True).stdout
    assert "train_m" not in data and "| **all** | 3 | 10.0 |" in data
