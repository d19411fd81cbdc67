"""Tables from synthetic metrics: provenance per cell, zero/many-shot tagging, registry stages."""

from __future__ import annotations

import json

import polars as pl

from eval_synthetic import hatecheck_like, predictions
from hatecheck_pipeline import config, dag, paths, scoring, tables
from hatecheck_pipeline.phases import evaluate as ph
from hatecheck_pipeline.suites import Suite
from conftest import REPO


def make_metrics(workdir, model: str, suite: Suite, accuracy: float, seed: int) -> tables.Source:
    frame = hatecheck_like(language=suite.language or "english", id_prefix=f"{suite.language}-" if suite.language else "")
    gold = frame.select(
        pl.col(suite.id_column if suite.id_column in frame.columns else "case_id").alias("id"),
        (pl.col("label") == "hateful").cast(pl.Int8).alias("gold"),
        "functionality", "target_ident", "from_identity_template", "focus_lemma", "ref_case_id", "language",
    ).with_row_index("_order")
    pred_file = workdir / f"{model}_{suite.name}.parquet"
    predictions(frame, accuracy, seed, id_column=suite.id_column).write_parquet(pred_file)
    out = paths.metrics(model, suite.name)
    scoring.run(suite, pred_file, out, samples=50, gold=gold)
    return tables.Source(model, suite.name, suite.dataset, suite.language, out, ph.score_stage_name(model, suite.name))


def test_tables_from_metrics(workdir):
    srcs = [
        make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.8, 1),
        make_metrics(workdir, "B-D", Suite("heldout_davidson2017", "davidson2017", "case_id", split="test"), 0.9, 2),
    ]
    for i, lang in enumerate(["spanish", "hindi", "german"]):
        srcs.append(make_metrics(workdir, "XTC", Suite(f"mhc_{lang}", "mhc", "mhc_case_id", language=lang), 0.9 - 0.2 * i, 3 + i))
    hc = tables.run("hatecheck", [s for s in srcs if s.model == "B-D"], "tables_hatecheck")
    t2 = hc["hatecheck_t2"]
    assert set(t2["row"]) == {"hateful", "non-hateful", "total"}
    assert (t2["metrics_file"] == "results/B-D/hatecheck/metrics.json").all()
    assert (t2["stage"] == "score_B-D_hatecheck").all()
    assert t2["cell_id"].n_unique() == t2.height
    assert hc["hatecheck_heldout"]["row"].to_list() == ["davidson2017"]
    assert set(hc["hatecheck_t3"]["row"]) == {"queer", "fag"}
    mhc = tables.run("mhc", [s for s in srcs if s.model == "XTC"], "tables_mhc")
    assert set(mhc["mhc_t1"]["column"]) == {"spanish", "hindi", "german"}
    assert mhc["mhc_t7"].height == 3
    shots = tables.run("shots", [s for s in srcs if s.model == "XTC"], "tables_shots", {"XTC": ["spanish"]})
    lang = dict(zip(shots["shots_languages"]["row"], shots["shots_languages"]["setting"]))
    assert lang == {"spanish": "many-shot", "hindi": "zero-shot", "german": "zero-shot"}
    summary = {r["column"]: r["value"] for r in shots["shots_summary"].iter_rows(named=True)}
    t7 = dict(zip(mhc["mhc_t7"]["row"], mhc["mhc_t7"]["value"]))
    assert abs(summary["many-shot"] - t7["spanish"]) < 0.051
    assert abs(summary["zero-shot"] - (t7["hindi"] + t7["german"]) / 2) < 0.051
    assert abs(summary["gap"] - (summary["many-shot"] - summary["zero-shot"])) < 0.11
    assert (shots["shots_summary"]["stage"] == "tables_shots").all()
    assert set(shots["shots_class_gap"]["row"]) == {"derog", "threat", "slur", "ident", "negate"}
    doc = json.loads((workdir / paths.table_summary("shots")).read_text())
    assert set(doc["macro_f1"]["XTC"]) == {"zero-shot", "many-shot", "gap"}
    plot = pl.read_csv(paths.plot_data("zero_many_shot"))
    assert plot.columns[-1] == "macro_f1"
    # dvc plots draws every written plot file on axes that are columns of it
    for name in ["hatecheck_functionality", "mhc_macro_f1", "zero_many_shot"]:
        entry = dag.plot_entry(paths.plot_data(name))[paths.plot_data(name)]
        header = pl.read_csv(paths.plot_data(name)).columns
        assert entry["x"] in header and entry["y"] in header and entry["template"] == "bar_horizontal", name
    ct = tables.run("contrast", [s for s in srcs if not s.suite.startswith("heldout_")], "tables_contrast")["contrast"]
    assert ct.height == 4
    assert (ct["n"] == 12).all()


def test_training_languages_read_from_tables(workdir):
    pl.DataFrame({"language": ["italian", "italian"]}).write_parquet("a.parquet")
    pl.DataFrame({"language": ["spanish"]}).write_parquet("b.parquet")
    assert tables.training_languages(["a.parquet", "b.parquet"]) == ["italian", "spanish"]


def test_registry_stages_declare_metrics_and_plots():
    params = config.load_params(REPO / "params.yaml")
    stages = {s.name: s for s in ph.stages(params)}
    s = stages["score_XTC_mhc_german"]
    assert s.metrics == (paths.metrics("XTC", "mhc_german"),)
    assert paths.predictions("XTC", "mhc_german") in s.deps
    shots = stages["tables_shots"]
    assert paths.plot_data("zero_many_shot") in shots.plots
    assert paths.interim_table("hateval2019_es") in shots.deps
    assert paths.metrics("XTC", "mhc_german") in shots.deps
    assert paths.metrics("B-D", "hatecheck") in stages["tables_hatecheck"].deps
    assert paths.metrics("XTC", "heldout_fortuna2019") in stages["tables_mhc"].deps
