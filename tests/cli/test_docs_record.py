"""``hatecheck-pipeline docs record`` keeps, beside the run's files, the
dependency graph of its recorded stages from the stage registry (dag.json),
which the performance page's critical path reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import REPO
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.core.config import SCHEMA_FILE
from hatecheck_pipeline.docsite.performance import performance_page

# a smoke run's data chain for one dataset and the model trained on it;
# prepare_davidson2017 has no record (up to date from an earlier run)
STAGES = {
    "ingest_davidson2017": ("ingest", 0, 2),
    "validate_davidson2017": ("validate", 3, 5),
    "preprocess_davidson2017_bert": ("preprocess", 6, 9),
    "train_B-D": ("train", 20, 50),
}


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    for stage, (phase, start, end) in STAGES.items():
        path = ws / "logs/benchmarks" / f"{stage}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "stage": stage,
                    "phase": phase,
                    "wall_s": float(end - start),
                    "cpu_s": float(end - start),
                    "max_rss_mb": 100.0,
                    "started": f"2026-01-01T12:00:{start:02d}+00:00",
                    "finished": f"2026-01-01T12:00:{end:02d}+00:00",
                }
            )
        )
    metrics = ws / "results/B-D/hatecheck/metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text("{}")
    card = ws / "models/B-D/model_card.json"
    card.parent.mkdir(parents=True)
    card.write_text(json.dumps({"model": "B-D", "profile": "smoke", "git_commit": "abc123"}))
    # the workspace's own parameters (a profile other than the run's: the cards' profile is taken)
    shutil.copyfile(REPO / "params.yaml", ws / "params.yaml")
    (ws / SCHEMA_FILE).parent.mkdir(parents=True)
    shutil.copyfile(REPO / SCHEMA_FILE, ws / SCHEMA_FILE)
    return ws


def test_record_writes_the_recorded_stages_graph_from_the_registry(workdir):
    ws = _workspace(workdir)
    res = CliRunner().invoke(app, ["docs", "record", "--name", "t", "--label", "t", "--workspace", str(ws), "--out", "rec"])
    assert res.exit_code == 0, res.output
    dag = json.loads((workdir / "rec/dag.json").read_text("utf-8"))
    assert dag["source"] == {"parameters": "params.yaml", "profile": "smoke"}
    assert dag["upstream"] == {
        "ingest_davidson2017": [],
        "validate_davidson2017": ["ingest_davidson2017"],
        # through prepare_davidson2017, which did not run
        "preprocess_davidson2017_bert": ["ingest_davidson2017", "validate_davidson2017"],
        "train_B-D": ["preprocess_davidson2017_bert"],
    }
    text = performance_page(Path("rec"))
    assert "| train_B-D | train | 20 | 50 | 30.0 | 30.0 | 11 | `logs/benchmarks/train_B-D.json` |" in text


def test_record_with_parameters_the_schema_refuses_fails_in_one_line_and_writes_nothing(workdir):
    ws = _workspace(workdir)
    (ws / "params.yaml").write_text("profile: smoke\n")
    res = CliRunner().invoke(app, ["docs", "record", "--name", "t", "--label", "t", "--workspace", str(ws), "--out", "rec"])
    assert res.exit_code == 1 and res.output.startswith("error: ") and len(res.output.strip().splitlines()) == 1, res.output
    assert not (workdir / "rec").exists()
