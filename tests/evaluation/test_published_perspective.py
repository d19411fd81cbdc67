"""Perspective's published Multilingual HateCheck figures (Röttger et al.
2022, Table 8 and Appendix H: IDENTITY_ATTACK, German, Italian and
Portuguese only, tested February 2022): transcribed with their source,
found by ``compare --model Perspective`` on an MHC metrics file of those
languages, and absent for the others."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.evaluation import published

PUB = published.load()
TABLE_8 = {"german": (84.1, 54.9, 69.5), "italian": (69.6, 61.2, 65.4), "portuguese": (84.2, 47.6, 65.9)}


def test_table_8_and_appendix_h_are_transcribed_with_their_source():
    rows = PUB["mhc_t2"]["values"]["Perspective"]
    assert {lang: (r["f1_hateful"], r["f1_non_hateful"], r["macro_f1"]) for lang, r in rows.items()} == TABLE_8
    for h, nh, macro in TABLE_8.values():  # macro F1 is the mean of the two F1s, as the paper rounds it
        assert abs((h + nh) / 2 - macro) <= 0.05
    assert PUB["mhc_t6"]["values"]["Perspective"] == {"haspeede2020": {"macro_f1": 70.7}, "fortuna2019": {"macro_f1": 64.1}}
    cell = published.lookup("mhc_t2", "Perspective")[("german", "macro_f1")]
    assert cell[0] == 69.5 and "Table 8" in cell[2] and "February 2022" in cell[2]
    assert "Appendix H" in published.lookup("mhc_t6", "Perspective")[("fortuna2019", "macro_f1")][2]
    # XTC's rows keep their own table's source
    assert published.lookup("mhc_t2", "XTC")[("german", "macro_f1")][2] == PUB["mhc_t2"]["source"]
    assert "Perspective" not in PUB["mhc_t1"]["values"]  # the paper gives no per-functionality Perspective figures on MHC


def mhc_metrics(language: str, f1_h: float, f1_nh: float, macro: float) -> dict:
    fig = lambda v: {"value": v, "ci_low": v - 2, "ci_high": v + 2}  # noqa: E731
    return {
        "suite": f"mhc_{language}",
        "dataset": "mhc",
        "language": language,
        "overall": {"n": 3000, "f1_hateful": fig(f1_h), "f1_non_hateful": fig(f1_nh), "macro_f1": fig(macro), "accuracy": fig(70.0)},
    }


@pytest.mark.parametrize("language", sorted(TABLE_8))
def test_compare_finds_the_perspective_figures_on_an_mhc_file(language, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    (tmp_path / "m.json").write_text(json.dumps(mhc_metrics(language, *TABLE_8[language])))
    result = runner.invoke(app, ["compare", "--metrics", "m.json", "--model", "Perspective", "--check"])
    assert result.exit_code == 0, result.output
    assert "mhc_t2: 3/3 cells equal to the paper" in result.output and "reproduces every published cell of Perspective (3)" in result.output
    off = mhc_metrics(language, TABLE_8[language][0], TABLE_8[language][1], TABLE_8[language][2] - 1.0)
    (tmp_path / "off.json").write_text(json.dumps(off))
    result = runner.invoke(app, ["compare", "--metrics", "off.json", "--model", "Perspective", "--check"])
    assert result.exit_code == 1 and f"differs: mhc_t2 {language} / macro_f1" in result.output


def test_a_language_without_identity_attack_has_no_perspective_figure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.json").write_text(json.dumps(mhc_metrics("french", 80.0, 50.0, 65.0)))
    result = CliRunner().invoke(app, ["compare", "--metrics", "m.json", "--model", "Perspective"])
    assert result.exit_code == 1 and "no published figure of 'Perspective' for suite 'mhc_french'" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert published.compare(mhc_metrics("french", 80.0, 50.0, 65.0), "Perspective").is_empty()
    # XTC's figures for the same file are still found
    assert published.compare(mhc_metrics("french", 82.6, 52.6, 67.6), "XTC").filter(pl.col("table") == "mhc_t2").height == 3
