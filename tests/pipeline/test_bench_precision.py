"""benchmarks/bench_precision_figures.py: the check that a lower-precision
prediction run leaves every reported figure inside its fp32 interval."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest
from pipeline_utils import load_benchmark

from hatecheck_pipeline.core.files import PRECISION_KEY, write_csv, write_parquet


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_precision_figures")


def workspace(root: Path, values: list[float], preds: list[str], ran: str) -> Path:
    cells = pl.DataFrame({"cell_id": ["t:a", "t:b", "t:n"], "value": values, "ci_low": [50.0, 70.0, None], "ci_high": [60.0, 80.0, None]})
    write_csv(cells, root / "results/tables/t.csv")
    frame = pl.DataFrame(
        {"id": [str(i) for i in range(len(preds))], "p_hateful": [0.9 if p == "hateful" else 0.1 for p in preds], "pred": preds}
    )
    write_parquet(frame, root / "results/M/s/predictions.parquet", metadata={PRECISION_KEY: ran})
    write_parquet(frame, root / "results/LLM/s/predictions.parquet")  # an LLM's: no precision recorded, left out
    return root


def test_inside_the_intervals_passes_and_a_move_out_or_a_label_flip_fails(bench, tmp_path, monkeypatch, capsys):
    labels = ["hateful"] * 300 + ["non-hateful"] * 700
    fp32 = workspace(tmp_path / "fp32", [55.0, 75.0, 120.0], labels, "fp32")
    near = workspace(tmp_path / "near", [59.9, 70.5, 120.0], labels, "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(near)])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "inside the fp32 interval: 2/2" in out and "without an interval: 1/1 equal, 0 moved" in out and "verdict: PASS" in out
    assert "candidate ['bf16 autocast (CPU)']" in out and "# predictions files: 1, 1000 cases" in out

    moved_no_ci = workspace(tmp_path / "moved", [55.0, 75.0, 121.0], labels, "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(moved_no_ci)])
    assert bench.main() == 0  # reported, not gated: the cell has no interval
    assert "without an interval: 0/1 equal, 1 moved (largest |move| 1.00; not gated" in capsys.readouterr().out

    out_of_ci = workspace(tmp_path / "out", [60.5, 75.0, 120.0], labels, "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(out_of_ci)])
    assert bench.main() == 1 and "inside the fp32 interval: 1/2" in capsys.readouterr().out

    flipped = workspace(tmp_path / "flip", [55.0, 75.0, 120.0], ["non-hateful"] * 6 + labels[6:], "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(flipped)])
    assert bench.main() == 1  # 99.4% agreement: under the 99.5% gate
    assert "labels agree on 99.400% pooled" in capsys.readouterr().out


def _metrics(root: Path, macro_f1: float) -> Path:
    import json

    fig = {"value": macro_f1, "ci_low": 50.0, "ci_high": 60.0}
    doc = {"overall": {"macro_f1": fig, "accuracy": {"value": 70.0, "ci_low": 65.0, "ci_high": 75.0}}, "by_label": {}}
    path = root / "results/M/s/metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return root


def test_a_recorded_run_is_compared_by_its_metrics_files(bench, tmp_path, monkeypatch, capsys):
    """docs/runs/NAME keeps no report tables and no predictions: a workspace
    is held against the record's metrics files' intervals."""
    record = _metrics(tmp_path / "record", 55.0)
    inside = workspace(_metrics(tmp_path / "inside", 59.0), [55.0, 75.0, 120.0], ["hateful"], "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(record), "--candidate", str(inside)])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "inside the fp32 interval: 2/2" in out and "labels not compared" in out and "verdict: PASS" in out
    outside = _metrics(tmp_path / "outside", 61.0)
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(record), "--candidate", str(outside)])
    assert bench.main() == 1 and "M:s:overall:macro_f1" in capsys.readouterr().out
