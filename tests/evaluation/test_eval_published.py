"""The papers' published tables (transcription checks) and `compare`, which
says whether scoring a third party's predictions reproduces them."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from conftest import REPO
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.data.sources import SOURCES_FILE
from hatecheck_pipeline.evaluation import published

PUB = published.load()


@pytest.mark.parametrize("model", ["B-D", "B-F", "Perspective", "SiftNinja"])
def test_hatecheck_table1_transcription_adds_up_to_table2(model):
    """Table 1's per-test accuracies, weighted by the published n, give
    Table 2's per-label and total accuracies (catches a misplaced value)."""
    n = PUB["hatecheck_t1"]["n"]
    t1 = PUB["hatecheck_t1"]["values"][model]
    t2 = PUB["hatecheck_t2"]["values"][model]
    assert list(t1) == list(n) == list(published.functionalities("hatecheck"))
    for label, codes in [
        ("hateful", [c for c in n if not c.endswith("_nh")]),
        ("non-hateful", [c for c in n if c.endswith("_nh")]),
        ("total", list(n)),
    ]:
        weighted = sum(n[c] * t1[c]["accuracy"] for c in codes) / sum(n[c] for c in codes)
        assert round(weighted, 1) == t2[label]["accuracy"], (model, label)
    assert sum(n.values()) == 3728


def test_reclaimed_slurs_table3_adds_up_to_f9():
    sizes = {"nigga": 19, "fag": 16, "faggot": 16, "queer": 15, "bitch": 15}
    for model, rows in PUB["hatecheck_t3"]["values"].items():
        correct = sum(round(rows[s]["accuracy"] * k / 100) for s, k in sizes.items())
        assert round(100 * correct / 81, 1) == PUB["hatecheck_t1"]["values"][model]["slur_reclaimed_nh"]["accuracy"], model


def test_mhc_table1_covers_each_language_tests():
    xtc = PUB["mhc_t1"]["values"]["XTC"]
    assert list(xtc) == list(published.functionalities("mhc"))
    assert set(xtc["spell_pinyin_h"]) == {"mandarin"} and set(xtc["spell_sent_arabazi_h"]) == {"arabic"}
    assert len(xtc["derog_neg_emote_h"]) == 10 and "mandarin" not in xtc["spell_leet_h"]


@pytest.fixture
def hatecheck_project(workdir, mirror):
    """The real HateCheck suite (mirror -> ingest -> prepare) in a scratch project."""
    shutil.copy(REPO / "params.yaml", workdir / "params.yaml")
    (workdir / "workflow" / "schemas").mkdir(parents=True)
    shutil.copy(REPO / "workflow/schemas/params.schema.yaml", workdir / "workflow/schemas/params.schema.yaml")
    (workdir / SOURCES_FILE).parent.mkdir(parents=True)  # the ingest stage's params file
    shutil.copy(REPO / SOURCES_FILE, workdir / SOURCES_FILE)
    runner = CliRunner()
    for args in (["--set", f"ingest.mirror={mirror}", "run", "ingest_hatecheck"], ["run", "prepare_hatecheck"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    return workdir


def paper_like_predictions(model: str) -> pl.DataFrame:
    """A SYNTHETIC predictions file (not a reproduction): per functional test
    (and per reclaimed slur) the first round(accuracy x n) cases right and
    the rest wrong, so that its counts equal the paper's Tables 1-3."""
    cases = pl.read_parquet("data/interim/hatecheck/table.parquet")
    t1, t3 = PUB["hatecheck_t1"]["values"][model], PUB["hatecheck_t3"]["values"][model]
    group = pl.when(pl.col("functionality") == "slur_reclaimed_nh").then(pl.col("focus_lemma")).otherwise(pl.col("functionality"))
    cases = cases.with_columns(group.alias("_group"), pl.int_range(pl.len()).over(group).alias("_rank"), pl.len().over(group).alias("_n"))
    accuracy = {**{k: v["accuracy"] for k, v in t1.items()}, **{k: v["accuracy"] for k, v in t3.items()}}
    cases = cases.with_columns(pl.col("_group").replace_strict(accuracy, return_dtype=pl.Float64).alias("_acc"))
    right = pl.col("_rank") < (pl.col("_acc") * pl.col("_n") / 100).round(0)
    flipped = pl.when(pl.col("label") == "hateful").then(pl.lit("non-hateful")).otherwise(pl.lit("hateful"))
    return cases.select("case_id", pl.when(right).then(pl.col("label")).otherwise(flipped).alias("pred"))


def test_compare_reproduces_tables_1_to_3_and_names_a_differing_cell(hatecheck_project):
    runner = CliRunner()
    preds = paper_like_predictions("Perspective")
    preds.write_csv("perspective.csv")
    result = runner.invoke(app, ["score", "--suite", "hatecheck", "--predictions", "perspective.csv", "--out", "m.json"])
    assert result.exit_code == 0, result.output
    doc = json.loads((hatecheck_project / "m.json").read_text())
    assert {k: v["n"] for k, v in doc["by_functionality"].items()} == PUB["hatecheck_t1"]["n"]  # the suite's n = the paper's

    result = runner.invoke(app, ["compare", "--metrics", "m.json", "--model", "Perspective", "--out", "cmp.csv"])
    assert "hatecheck_t1: 29/29 cells equal" in result.output
    assert "hatecheck_t2: 3/3 cells equal" in result.output
    assert "hatecheck_t3: 5/5 cells equal" in result.output
    cells = pl.read_csv("cmp.csv")
    # Table 4 (targets) is not constrained by this construction: compare lists its cells either way.
    assert cells.filter(pl.col("table") == "hatecheck_t4").height == 7
    assert result.exit_code == 0

    # one case of F1 flipped: exactly that Table 1 cell (and Table 2's hateful/total) differ
    wrong = "non-hateful" if preds["pred"][0] == "hateful" else "hateful"  # the suite's first case is an F1 case, predicted right
    preds.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(wrong)).otherwise(pl.col("pred")).alias("pred")).write_csv(
        "off.csv"
    )
    assert runner.invoke(app, ["score", "--suite", "hatecheck", "--predictions", "off.csv", "--out", "off.json"]).exit_code == 0
    result = runner.invoke(app, ["compare", "--metrics", "off.json", "--model", "Perspective"])
    assert result.exit_code == 0  # differences are reported; only --check fails on them
    assert "differs: hatecheck_t1 derog_neg_emote_h / accuracy" in result.output
    result = runner.invoke(app, ["compare", "--metrics", "off.json", "--model", "Perspective", "--check"])
    assert result.exit_code == 1
    assert "hatecheck_t1: 28/29 cells equal" in result.output
    assert "differs: hatecheck_t1 derog_neg_emote_h / accuracy" in result.output


def test_compare_unknown_model_is_a_clear_error(hatecheck_project):
    runner = CliRunner()
    paper_like_predictions("B-D").write_csv("p.csv")
    assert runner.invoke(app, ["score", "--suite", "hatecheck", "--predictions", "p.csv", "--out", "m.json"]).exit_code == 0
    result = runner.invoke(app, ["compare", "--metrics", "m.json", "--model", "NoSuchModel"])
    assert result.exit_code != 0
    assert "no published figure of 'NoSuchModel'" in result.output and "Perspective" in result.output


@pytest.mark.parametrize("language", ["french", "italian", "mandarin"])
def test_mhc_table3_rows_are_the_suites_target_groups(mirror, language):
    """The paper's 'Immigrants' row maps to each language's own group name:
    the published rows of a language are exactly its suite's target groups."""
    cases = pl.read_csv(mirror / f"mhc/cases/hatecheck_cases_final_{language}.csv", infer_schema=False)
    groups = set(cases["target_ident"].drop_nulls().unique())
    xtc = PUB["mhc_t3"]["values"]["XTC"]
    assert {row for row, cols in xtc.items() if language in cols} == groups


def test_hatexplain_table6_transcription():
    """HateXplain Table 6: a model's performance and bias columns do not
    depend on the token method (the paper repeats them per row)."""
    t6 = PUB["hatexplain_t6"]["values"]
    assert t6["BERT"]["Attn"]["token_f1"] == 0.497 and t6["BERT"]["LIME"]["sufficiency"] == 0.008
    assert t6["BERT-HateXplain"]["Attn"]["gmb_subgroup"] == 0.807
    perf = ("accuracy", "macro_f1", "auroc", "gmb_subgroup", "gmb_bpsn", "gmb_bnsp")
    for model, rows in t6.items():
        assert len({tuple(r[k] for k in perf) for r in rows.values()}) == 1, model
        assert all(len(r) == 11 for r in rows.values()), model
