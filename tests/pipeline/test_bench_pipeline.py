"""benchmarks/bench_pipeline.py --baseline: summed stage time against an
older workspace's records, per phase and over the stages both have."""

from __future__ import annotations

import pytest
from pipeline_utils import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_pipeline")


def rec(stage: str, phase: str, wall: float) -> dict:
    return {"stage": stage, "phase": phase, "wall_s": wall, "cpu_s": wall}


def test_baseline_table_splits_the_shared_stages_from_the_new_ones(bench):
    old = [rec("predict_A", "predict", 100.0), rec("train_A", "train", 50.0), rec("gone", "audits", 5.0)]
    new = [rec("predict_A", "predict", 25.0), rec("train_A", "train", 50.0), rec("llm_B", "llm", 40.0)]
    text = "\n".join(bench.baseline_table(new, old))
    assert "| predict | 1 / 1 | 100.0 | 25.0 | 0.25x |" in text
    assert "| llm | 0 / 1 | 0.0 | 40.0 | – |" in text
    assert "| **all** | 3 / 3 | 155.0 | 115.0 | 0.74x |" in text
    assert "the baseline's stages found here (2 of 3): summed wall 75.0 s against 150.0 s = 0.50x" in text
    assert "stages only here (1): summed wall 40.0 s (llm_B)" in text and "baseline stages not here (1): gone" in text


def test_timeline_counts_the_cores_no_job_reserved(bench):
    """--timeline: a 2-thread job, then a 1-thread job alone (one core idle
    for its 30 s), then two 1-thread jobs side by side (none idle)."""
    log = "\n".join(
        [
            "[Fri Nov 27 08:00:00 2026]",
            "localrule train_a:",
            "    resources: tmpdir=/tmp, runtime=30, cpu_cores=2, mem_mb=1",
            "[Fri Nov 27 08:01:00 2026]",
            "Finished jobid: 1 (Rule: train_a)",
            "[Fri Nov 27 08:01:00 2026]",
            "localrule predict_a:",
            "    resources: tmpdir=/tmp, cpu_cores=1, mem_mb=1",
            "[Fri Nov 27 08:01:30 2026]",
            "localrule predict_b:",
            "    resources: tmpdir=/tmp, cpu_cores=1, mem_mb=1",
            "[Fri Nov 27 08:02:00 2026]",
            "Finished jobid: 2 (Rule: predict_a)",
            "[Fri Nov 27 08:02:00 2026]",
            "localrule score_a:",
            "    resources: tmpdir=/tmp, cpu_cores=1, mem_mb=1",
            "[Fri Nov 27 08:02:30 2026]",
            "Finished jobid: 3 (Rule: predict_b)",
            "[Fri Nov 27 08:02:30 2026]",
            "Finished jobid: 4 (Rule: score_a)",
        ]
    )
    jobs = bench.log_jobs(log)
    assert {k: c for k, (_, _, c) in jobs.items()} == {"train_a": 2, "predict_a": 1, "predict_b": 1, "score_a": 1}
    span, idle, windows = bench.idle_core_seconds(jobs, 2)
    assert (span, idle) == (150, 30)
    assert windows == [(60, 30, ["predict_a", "predict_b"])]  # the second minute lost a quarter of its core-seconds
