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
    frame = pl.DataFrame({"id": [str(i) for i in range(len(preds))], "p_hateful": [0.9 if p == "hateful" else 0.1 for p in preds], "pred": preds})
    write_parquet(frame, root / "results/M/s/predictions.parquet", metadata={PRECISION_KEY: ran})
    return root


def test_inside_the_intervals_passes_and_a_move_out_or_a_label_flip_fails(bench, tmp_path, monkeypatch, capsys):
    labels = ["hateful"] * 300 + ["non-hateful"] * 700
    fp32 = workspace(tmp_path / "fp32", [55.0, 75.0, 120.0], labels, "fp32")
    near = workspace(tmp_path / "near", [59.9, 70.5, 120.0], labels, "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(near)])
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "inside the fp32 interval: 2/2" in out and "without an interval, equal: 1/1" in out and "verdict: PASS" in out
    assert "candidate ['bf16 autocast (CPU)']" in out

    out_of_ci = workspace(tmp_path / "out", [60.5, 75.0, 120.0], labels, "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(out_of_ci)])
    assert bench.main() == 1 and "inside the fp32 interval: 1/2" in capsys.readouterr().out

    flipped = workspace(tmp_path / "flip", [55.0, 75.0, 120.0], ["non-hateful"] * 6 + labels[6:], "bf16 autocast (CPU)")
    monkeypatch.setattr(sys, "argv", ["x", "--fp32", str(fp32), "--candidate", str(flipped)])
    assert bench.main() == 1  # 99.4% agreement: under the 99.5% gate
    assert "labels agree on 99.400% pooled" in capsys.readouterr().out
