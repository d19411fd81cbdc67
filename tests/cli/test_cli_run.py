"""The generic entry point: `hatecheck-pipeline run STAGE` runs any stage of
the registry; wrong input is one line naming what is wrong, never a traceback."""

import subprocess

from conftest import REPO
from pipeline_utils import BIN, env


def cli(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "hatecheck-pipeline"), *args], cwd=cwd, env=env(), capture_output=True, text=True)


def test_dag_list_names_every_stage_with_its_function():
    proc = cli("dag", "list")
    assert proc.returncode == 0, proc.stderr
    assert "hatecheck_pipeline.data.prepare:prepare" in proc.stdout
    assert "train_XTC" in proc.stdout and "hatecheck_pipeline.models.train:train" in proc.stdout


def test_unknown_stage_is_one_line():
    proc = cli("run", "no_such_stage")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: no stage named 'no_such_stage' in the pipeline (see `hatecheck-pipeline dag list`)"


def test_run_stage_starts_without_the_command_line_app():
    """`run STAGE`, started once per stage by both runners, does not build
    the typer app or import the other commands' modules; `run --help` and
    the global options still go through the app."""
    probe = (
        "import sys; sys.argv = ['hatecheck-pipeline', 'run', 'no_such_stage']\n"
        "from hatecheck_pipeline.cli import main\n"
        "code = main.run(sys.argv[2])\n"
        "print(code, sorted(m for m in ('typer', 'hatecheck_pipeline.cli.app', 'hatecheck_pipeline.cli.evaluate') if m in sys.modules))"
    )
    proc = subprocess.run([str(BIN / "python"), "-c", probe], cwd=REPO, env=env(), capture_output=True, text=True)
    assert proc.stdout.strip() == "1 []", proc.stdout + proc.stderr
    assert "no stage named 'no_such_stage'" in proc.stderr
    helped = cli("run", "--help")
    assert helped.returncode == 0 and "Run one stage of the registry" in helped.stdout


def test_a_stage_whose_input_is_missing_names_the_file_and_the_stage_that_makes_it(tmp_path):
    for name in ("params.yaml", "workflow/schemas/params.schema.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((REPO / name).read_text())
    proc = cli("run", "prepare_davidson2017", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "data/raw/davidson2017/labeled_data.csv" in proc.stderr and "ingest_davidson2017" in proc.stderr


def test_a_bad_override_names_the_key():
    proc = cli("--set", "profile=nonexistent", "dag", "list")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "profile" in proc.stderr


def test_score_in_a_fresh_clone_builds_the_suite_it_needs(tmp_path, mirror):
    """A third party with only a predictions file and the mirror: `score`
    builds HateCheck through the pipeline's own stages, says so, and scores."""
    import csv
    import json

    from pipeline_utils import copy_project

    project = copy_project(tmp_path / "clone")
    with open(mirror / "hatecheck" / "test_suite_cases.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    preds = tmp_path / "third_party.csv"
    with open(preds, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["case_id", "pred"])
        for row in rows:
            writer.writerow([row["case_id"], "hateful"])  # a classifier that flags everything
    proc = cli("score", "--suite", "hatecheck", "--predictions", str(preds), "--out", str(tmp_path / "m.json"), cwd=project)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "running stage ingest_hatecheck" in proc.stderr and "running stage prepare_hatecheck" in proc.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["overall"]["n"] == 3728
    hateful_share = sum(r["label_gold"] == "hateful" for r in rows) / len(rows)  # flagging all is right on these
    accuracy = doc["overall"]["accuracy"]["value"]
    assert abs(accuracy - 100 * hateful_share) < 0.05 or abs(accuracy - hateful_share) < 0.0005
    again = cli("score", "--suite", "hatecheck", "--predictions", str(preds), "--out", str(tmp_path / "m2.json"), cwd=project)
    assert again.returncode == 0 and "running stage" not in again.stderr  # built once


def test_score_and_compare_name_a_missing_file_in_one_line(tmp_path):
    proc = cli("compare", "--metrics", str(tmp_path / "none.json"), "--model", "Perspective")
    assert proc.returncode == 1 and proc.stderr.strip().count("\n") == 0 and "none.json" in proc.stderr


def test_version_prints_the_installed_version():
    from importlib.metadata import version

    from typer.testing import CliRunner

    from hatecheck_pipeline.cli.app import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"hatecheck-pipeline {version('hatecheck-pipeline')}"
