"""``diff`` as a user meets it in a fresh clone and as a CI job uses it
(``--check``): the suite's gold table is built from the raw data first; a
model whose predictions are flipped on one functional test fails the gate
naming that test and the cases that went from right to wrong; a model
against itself passes; a file that cannot be compared is one line, exit 2."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
from conftest import MIRROR, REPO
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app


@pytest.fixture
def fresh_clone(workdir, mirror, monkeypatch):
    """A workspace with the configuration and nothing built (the package's
    resources where a clone has them: stage params name their files)."""
    (workdir / "src").symlink_to(REPO / "src")
    shutil.copy(REPO / "params.yaml", workdir / "params.yaml")
    (workdir / "workflow" / "schemas").mkdir(parents=True)
    shutil.copy(REPO / "workflow/schemas/params.schema.yaml", workdir / "workflow/schemas/params.schema.yaml")
    monkeypatch.setenv("HATECHECK_PIPELINE_MIRROR", str(mirror))
    return workdir


def test_diff_in_a_fresh_clone_builds_the_suite_and_gates_a_release(fresh_clone):
    runner = CliRunner()
    # A: right everywhere; B: wrong on every case of one functional test
    suite = pl.read_csv(MIRROR / "hatecheck" / "test_suite_cases.csv")
    a = suite.select(pl.col("case_id"), pl.col("label_gold").alias("pred"))
    wrong = pl.when(pl.col("label_gold") == "hateful").then(pl.lit("non-hateful")).otherwise(pl.lit("hateful"))
    b = suite.select(
        pl.col("case_id"), pl.when(pl.col("functionality") == "derog_neg_emote_h").then(wrong).otherwise(pl.col("label_gold")).alias("pred")
    )
    a.write_csv("a.csv")
    b.write_csv("b.csv")
    assert not (fresh_clone / "data/interim/hatecheck/table.parquet").exists()

    result = runner.invoke(app, ["diff", "a.csv", "b.csv", "--suite", "hatecheck", "--check", "--out", "d.json"])
    assert result.exit_code == 1, result.output
    assert (fresh_clone / "data/interim/hatecheck/table.parquet").exists()  # built from the raw data, as `score` does
    doc = json.loads((fresh_clone / "d.json").read_text())
    assert doc["worse"] == ["derog_neg_emote_h"] == doc["flagged"]
    t = doc["by_functionality"]["derog_neg_emote_h"]
    assert t["accuracy_b"] == 0.0 and t["n_went_wrong"] == t["n"] == len(t["went_wrong"])
    assert "WORSE" in result.output and "I hate women." in result.output and "right for a.csv, wrong for b.csv" in result.output
    # every printed p-value and Holm value agrees with the file
    assert f"p={t['p_value']:.4g} holm={t['p_holm']:.4g}" in result.output

    same = runner.invoke(app, ["diff", "a.csv", "a.csv", "--suite", "hatecheck", "--check"])
    assert same.exit_code == 0, same.output
    assert "worse: none" in same.output

    # better on a test is flagged, but it does not fail the gate
    better = runner.invoke(app, ["diff", "b.csv", "a.csv", "--suite", "hatecheck", "--check"])
    assert better.exit_code == 0 and "FLAGGED" in better.output and "worse: none" in better.output

    pl.DataFrame({"case_id": [1, 1], "pred": ["hateful", "hateful"]}).write_csv("dupes.csv")
    bad = runner.invoke(app, ["diff", "a.csv", "dupes.csv", "--suite", "hatecheck", "--check"])
    assert bad.exit_code == 2 and "duplicate id" in bad.output and "Traceback" not in bad.output
    missing = runner.invoke(app, ["diff", "a.csv", "nope.csv", "--suite", "hatecheck", "--check"])
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    assert np.isfinite(t["ci_low"]) and t["ci_high"] < 0
