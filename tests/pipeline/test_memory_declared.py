"""Declared memory matches measured memory: every stage of the recorded
run (docs/runs/*/logs/benchmarks/<stage>.json, its peak resident memory)
declares at least that peak plus a margin as its ``mem_mb`` (what the
local memory bound counts and what Slurm is asked for, --mem), so a
declaration that goes stale against a new record fails here."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.pipeline.registry import build_stages

RECORDS = sorted(p for p in (REPO / "docs" / "runs").glob("*/run.json"))
MARGIN = 1.10  # a declaration covers the recorded peak with 10% to spare
FLOOR_MB = 256  # and at least this much above it (small stages' peaks move with the libraries they import)


def needed_mb(peak_mb: float) -> float:
    return max(peak_mb * MARGIN, peak_mb + FLOOR_MB)


@pytest.mark.parametrize("run", RECORDS, ids=[p.parent.name for p in RECORDS])
def test_every_recorded_stage_declares_at_least_its_recorded_peak_memory(run):
    profile = json.loads(run.read_text())["profile"]
    stages = {s.name: s for s in build_stages(load_params(REPO / "params.yaml", {"profile": profile}))}
    peaks = {r["stage"]: r["max_rss_mb"] for r in (json.loads(p.read_text()) for p in (run.parent / "logs" / "benchmarks").glob("*.json"))}
    assert peaks, f"{run.parent}: no stage records"
    short = {n: (stages[n].mem_mb, round(needed_mb(mb))) for n, mb in peaks.items() if n in stages and stages[n].mem_mb < needed_mb(mb)}
    assert not short, f"stages declaring less memory than their recorded peak + margin (declared, needed): {short}"


def test_a_declaration_below_a_recorded_peak_is_caught():
    assert needed_mb(7200) > 7200 * 1.09 and needed_mb(100) == 356
