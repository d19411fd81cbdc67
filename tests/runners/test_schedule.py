"""Snakemake starts the ready stage with the longest expected work ahead of
it first (runners/schedule.py): the upward rank of each stage from recorded
stage times, through files and output folders."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from pipeline_utils import copy_project

from hatecheck_pipeline.core.stage import Out, Stage
from hatecheck_pipeline.runners import schedule


def stage(name, phase="train", reads=(), writes=(), folder=False):
    return Stage(
        name,
        phase,
        "m:f",
        inputs={f"i{n}": p for n, p in enumerate(reads)},
        outputs={f"o{n}": Out(p, directory=folder) for n, p in enumerate(writes)},
    )


def chain():
    # a long model chain (train_long -> predict_long) and a short audit beside it, both from one data stage
    return [
        stage("data", "prepare", writes=["data/t.parquet"]),
        stage("train_long", reads=["data/t.parquet"], writes=["models/long"], folder=True),
        stage("predict_long", "predict", reads=["models/long/final/config.json"], writes=["results/long.parquet"]),
        stage("audit", "audits", reads=["data/t.parquet"], writes=["results/audit.json"]),
        stage("report", "report", reads=["results/long.parquet", "results/audit.json"], writes=["reports/r.html"]),
    ]


def write_records(folder, walls):
    folder.mkdir(parents=True, exist_ok=True)
    for name, wall in walls.items():
        (folder / f"{name}.json").write_text(json.dumps({"stage": name, "wall_s": wall}))


def test_edges_follow_files_and_files_inside_output_folders():
    down = schedule.downstream_of(chain())
    assert down == {
        "data": {"train_long", "audit"},
        "train_long": {"predict_long"},  # reads a file inside the model folder
        "predict_long": {"report"},
        "audit": {"report"},
        "report": set(),
    }


def test_the_long_chain_outranks_a_longer_single_stage_beside_it(tmp_path):
    # the audit alone (500 s) is longer than training (300 s), but training
    # has prediction (400 s) behind it: train first, or one core idles at the end
    write_records(tmp_path / "logs/benchmarks", {"data": 10, "train_long": 300, "predict_long": 400, "audit": 500, "report": 5})
    p = schedule.priorities(chain(), "embedded", tmp_path)
    assert p == {"data": 715, "train_long": 705, "predict_long": 405, "audit": 505, "report": 5}
    assert p["train_long"] > p["audit"]


def test_times_come_from_the_workspace_else_the_profiles_record_else_the_phase_median(tmp_path):
    stages = chain() + [stage("train_other", reads=["data/t.parquet"], writes=["models/other"], folder=True)]
    write_records(tmp_path / "docs/runs/embedded/logs/benchmarks", {"data": 1, "train_long": 100, "train_other": 300, "audit": 7})
    seconds = schedule.expected_seconds(stages, "embedded", tmp_path)
    assert seconds["train_long"] == 100 and seconds["audit"] == 7
    assert seconds["predict_long"] == schedule.UNKNOWN_S  # no predict stage recorded
    assert schedule.expected_seconds(stages, "smoke", tmp_path)["train_long"] == schedule.UNKNOWN_S  # no smoke record
    write_records(tmp_path / "logs/benchmarks", {"train_long": 50})  # the workspace's own records win
    seconds = schedule.expected_seconds(stages, "embedded", tmp_path)
    assert seconds["train_long"] == 50 and seconds["train_other"] == 50  # the train phase's median of what is known


def test_every_snakemake_rule_carries_its_stages_priority(tmp_path):
    """The rules of the real workflow (dry run): the XTC chain, the longest in
    the committed record, is ahead of the HateXplain explanations."""
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--forceall", "reports/mhc_xtc.html"],
        cwd=copy_project(tmp_path / "project"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = dict(re.findall(r"rule (\S+):\n(?:    .*\n)*?    priority: (\d+)", out))
    assert "train_XTC" in found and "hatexplain_explain_hatexplain" in found, sorted(found)[:20]
    assert int(found["train_XTC"]) > int(found["hatexplain_explain_hatexplain"])
