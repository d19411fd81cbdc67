"""Tables from synthetic metrics: provenance per cell, zero/many-shot tagging, registry stages."""

from __future__ import annotations

import json

import polars as pl
from conftest import REPO
from eval_synthetic import make_metrics

from hatecheck_pipeline.core import config, paths
from hatecheck_pipeline.core.stage import signature_mismatch
from hatecheck_pipeline.evaluation import shot_tables, tables
from hatecheck_pipeline.pipeline import evaluate as ph
from hatecheck_pipeline.pipeline.registry import to_dvc
from hatecheck_pipeline.suites.registry import HELDOUT, Suite


def test_tables_from_metrics(workdir):
    srcs = [
        make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.8, 1),
        make_metrics(workdir, "B-D", Suite("heldout_davidson2017", "davidson2017", "case_id", HELDOUT, split="test"), 0.9, 2),
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
    # every interval says how it was bootstrapped: templates on the functional suite, cases on held-out sets
    assert set(t2["resampling_unit"]) == {"template"} and (t2["n_clusters"] > 0).all()
    assert set(t2["ci_level"]) == {0.95}  # at the level the metrics files record (Bootstrap's default)
    assert hc["hatecheck_heldout"]["resampling_unit"].to_list() == ["case"]
    assert hc["hatecheck_heldout"]["n_clusters"].to_list() == hc["hatecheck_heldout"]["n"].to_list()
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
    # every mean and gap has a template-level interval from the languages' bootstrap values
    for table in ("shots_summary", "shots_class_gap"):
        cells = shots[table]
        assert cells["ci_low"].null_count() == 0 and set(cells["resampling_unit"]) == {"template"}, table
        assert set(cells["ci_level"]) == {0.95}, table  # the level the languages' intervals were drawn at
        assert ((cells["ci_low"] <= cells["value"] + 0.05) & (cells["value"] <= cells["ci_high"] + 0.05)).all(), table
    gap = shots["shots_summary"].filter(pl.col("column") == "gap").row(0, named=True)
    many = shots["shots_summary"].filter(pl.col("column") == "many-shot").row(0, named=True)
    assert gap["ci_high"] - gap["ci_low"] > many["ci_high"] - many["ci_low"]  # a difference of independent estimates is wider
    assert set(shots["shots_class_gap"]["row"]) == {"derog", "threat", "slur", "ident", "negate"}
    doc = json.loads((workdir / paths.table_summary("shots")).read_text())
    assert set(doc["macro_f1"]["XTC"]) == {"zero-shot", "many-shot", "gap"}
    plot = pl.read_csv(paths.plot_data("zero_many_shot"))
    assert plot.columns[-1] == "macro_f1"
    # dvc plots draws every written plot file on axes that are columns of it
    axes = {p.name: dict(p.axes) for g in tables.GROUPS.values() for p in g.plots}
    for name in ["hatecheck_functionality", "mhc_macro_f1", "zero_many_shot"]:
        entry = axes[name]
        header = pl.read_csv(paths.plot_data(name)).columns
        assert entry["x"] in header and entry["y"] in header and entry["template"] == "bar_horizontal", name
    ct = tables.run("contrast", [s for s in srcs if not s.suite.startswith("heldout_")], "tables_contrast")["contrast"]
    assert ct.height == 4
    assert set(ct["resampling_unit"]) == {"template"}
    assert (ct["n"] == 12).all()


def test_training_languages_read_from_tables(workdir):
    pl.DataFrame({"language": ["italian", "italian"]}).write_parquet("a.parquet")
    pl.DataFrame({"language": ["spanish"]}).write_parquet("b.parquet")
    assert shot_tables.training_languages(["a.parquet", "b.parquet"]) == ["italian", "spanish"]


def test_registry_stages_declare_metrics_and_plots():
    params = config.load_params(REPO / "params.yaml")
    stages = {s.name: s for s in ph.stages(params)}
    s = stages["score_XTC_mhc_german"]
    assert [o.path for o in s.outs_of("metrics")] == [paths.metrics("XTC", "mhc_german")]
    assert paths.predictions("XTC", "mhc_german") in s.deps
    assert s.run == "hatecheck_pipeline.evaluation.scoring:score" and s.args["suite"].name == "mhc_german"
    assert {"profile", f"profiles.{params['profile']}.max_cases_per_suite", "models.XTC.seed", "evaluation.threshold"} <= set(s.param_keys)
    shots = stages["tables_shots"]
    assert paths.plot_data("zero_many_shot") in [o.path for o in shots.outs_of("plots")]
    assert paths.interim_table("hateval2019_es") in shots.deps
    assert paths.metrics("XTC", "mhc_german") in shots.deps
    assert paths.metrics("B-D", "hatecheck") in stages["tables_hatecheck"].deps
    assert paths.metrics("XTC", "heldout_fortuna2019") in stages["tables_mhc"].deps


def test_stage_functions_take_exactly_the_declared_arguments():
    params = config.load_params(REPO / "params.yaml")
    for s in ph.stages(params):
        assert signature_mismatch(s) is None, s.name


def test_plot_entries_carry_the_group_axes():
    """Each group's plots are declared once (tables.GROUPS); dvc.yaml's
    plots entries carry their axes."""
    params = config.load_params(REPO / "params.yaml")
    doc = to_dvc(ph.stages(params))["stages"]
    assert doc["tables_hatecheck"]["plots"] == [
        {
            paths.plot_data("hatecheck_functionality"): {
                "cache": False,
                "template": "bar_horizontal",
                "x": "accuracy",
                "y": "functionality",
                "title": "HateCheck accuracy (%) per functional test",
                "x_label": "accuracy (%)",
            }
        }
    ]
    for name, group in tables.GROUPS.items():
        entries = {k: v for e in doc[f"tables_{name}"].get("plots", []) for k, v in e.items()}
        assert entries == {paths.plot_data(p.name): {"cache": False, **p.axes} for p in group.plots}, name
        assert [o for o in doc[f"tables_{name}"]["outs"] if o.endswith(".csv")] == [paths.table(t) for t in group.tables]


def test_tables_stage_function_writes_its_declared_outputs(workdir):
    """tables_<group> reads the metrics keyed by their score stage and the
    training tables, and writes exactly the files it is given."""
    suites = {lang: Suite(f"mhc_{lang}", "mhc", "mhc_case_id", language=lang) for lang in ("spanish", "hindi")}
    srcs = [make_metrics(workdir, "XTC", s, 0.8, i) for i, s in enumerate(suites.values())]
    pl.DataFrame({"language": ["spanish"]}).write_parquet("train.parquet")
    g = tables.GROUPS["shots"]
    out = workdir / "out"
    summary = tables.tables(
        group="shots",
        stage_name="tables_shots",
        scored={s.stage: ("XTC", suites[s.language]) for s in srcs},
        metrics={s.stage: workdir / s.metrics for s in srcs},
        long_tables=[out / f"{t}.csv" for t in g.tables],
        summary=out / "shots.json",
        plots=[out / f"{p.name}.csv" for p in g.plots],
        training={"XTC": [workdir / "train.parquet"]},
        languages=out / "languages.json",
    )
    assert summary.startswith("shots: shots_languages (2 cells)")
    assert json.loads((out / "languages.json").read_text()) == {"XTC": ["spanish"]}
    cells = pl.read_csv(out / "shots_languages.csv")
    assert dict(zip(cells["row"], cells["setting"])) == {"spanish": "many-shot", "hindi": "zero-shot"}
    assert set(cells["stage"]) == {"score_XTC_mhc_spanish", "score_XTC_mhc_hindi"}
    assert pl.read_csv(out / "zero_many_shot.csv").columns == ["model", "language", "setting", "macro_f1"]
    assert not (workdir / paths.table_summary("shots")).exists()  # nothing outside the declared outputs
