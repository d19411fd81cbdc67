"""Flip rates of the perturbed suites (CheckList INV/DIR): a known set of
source cases, one of whose perturbed copies changes the prediction, scored
through the score stage's function, the expanded tables and the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
from conftest import REPO

from hatecheck_pipeline.core import config, paths
from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation import invariance as INV
from hatecheck_pipeline.evaluation import metrics as M
from hatecheck_pipeline.evaluation import scoring, tables
from hatecheck_pipeline.evaluation.cells import Source
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.expansion.perturb import perturb
from hatecheck_pipeline.pipeline import evaluate as ph
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.suites.registry import EXPANDED, Suite, hatecheck

GENERATORS = ["char_swap", "leet"]
WRONG = "3"  # the one hateful source case the model gets wrong (on every copy too)
FLIPPED = "1~char_swap"  # the one perturbed copy predicted differently from its source case
BOOT = Bootstrap(200, seed=0)


def source_table() -> pl.DataFrame:
    """10 hateful cases from 5 templates (2 cases each) and 2 non-hateful ones."""
    rows = [
        {
            "case_id": str(i),
            "text": f"I really hate those {t} people so much",
            "label": "hateful",
            "functionality": "derog_neg_emote_h",
            "case_templ": f"template {(i - 1) // 2}",
            "target_ident": t,
        }
        for i, t in zip(range(1, 11), ["women", "Muslims"] * 5)
    ]
    rows += [
        {
            "case_id": str(i),
            "text": "I really love those people",
            "label": "non-hateful",
            "functionality": "ident_neutral_nh",
            "case_templ": f"template {i}",
            "target_ident": "women",
        }
        for i in (11, 12)
    ]
    frame = pl.DataFrame(rows)
    return frame.with_columns(
        pl.col("case_id").alias("id"),
        pl.lit("english").alias("language"),
        pl.lit("hatecheck").alias("dataset"),
        pl.lit("test").alias("split"),
    )


def write_suites(workdir: Path, drop_source: tuple[str, ...] = ()) -> dict[str, Path]:
    """The source table, its perturbed copies (expansion.perturb) and both
    prediction files; ``drop_source``: source cases without a prediction."""
    src = source_table()
    src_file = workdir / "hatecheck.parquet"
    src.write_parquet(src_file)
    pert, _ = perturb(src.select("id", "text", "label", "language", "functionality", "target_ident"), GENERATORS, 0, "perturbed_hatecheck")
    assert pert.height == 20  # every hateful case changed by both generators
    pert_file = workdir / "perturbed.parquet"
    pert.write_parquet(pert_file)
    src_pred = src.select(
        "case_id",
        pl.when((pl.col("label") == "hateful") & (pl.col("case_id") != WRONG))
        .then(pl.lit("hateful"))
        .otherwise(pl.lit("non-hateful"))
        .alias("pred"),
    )
    src_pred = src_pred.filter(~pl.col("case_id").is_in(list(drop_source)))
    src_pred_file = workdir / "pred_hatecheck.csv"
    src_pred.write_csv(src_pred_file)
    pert_pred = pert.select(
        "id",
        pl.when((pl.col("source_id") != WRONG) & (pl.col("id") != FLIPPED))
        .then(pl.lit("hateful"))
        .otherwise(pl.lit("non-hateful"))
        .alias("pred"),
    )
    pert_pred_file = workdir / "pred_perturbed.csv"
    pert_pred.write_csv(pert_pred_file)
    return {"source": src_file, "perturbed": pert_file, "source_pred": src_pred_file, "perturbed_pred": pert_pred_file}


def perturbed_suite() -> Suite:
    return Suite("perturbed_hatecheck", "perturbed_hatecheck", "id", EXPANDED, source="hatecheck")


def score_both(workdir: Path, files: dict[str, Path], source: bool = True, boot: Bootstrap = BOOT) -> list[Source]:
    """The score stage's function on the source suite (unless not
    ``source``) and on the perturbed one."""
    out = []
    for suite, pred, table, extra in (
        *([(hatecheck(), files["source_pred"], files["source"], {})] if source else []),
        (
            perturbed_suite(),
            files["perturbed_pred"],
            files["perturbed"],
            {"source_suite": hatecheck(), "source_predictions": files["source_pred"], "source_table": files["source"]},
        ),
    ):
        metrics = workdir / paths.metrics("B-D", suite.name)
        scoring.score(
            suite, "B-D", pred, table, metrics, workdir / f"{suite.name}_reps.parquet", boot, None, Profile("test", {}), 42, **extra
        )
        out.append(
            Source(
                "B-D",
                suite.name,
                suite.dataset,
                suite.language,
                paths.metrics("B-D", suite.name),
                ph.score_stage_name("B-D", suite.name),
                suite.kind,
            )
        )
    return out


def test_one_flipped_case_gives_the_hand_computed_flip_rate(workdir):
    score_both(workdir, write_suites(workdir))
    doc = json.loads((workdir / paths.metrics("B-D", "perturbed_hatecheck")).read_text())
    inv = doc["invariance"]
    assert inv["source_suite"] == "hatecheck" and inv["n_perturbed"] == 20 and inv["n_paired"] == 20
    assert inv["n_without_source_prediction"] == 0
    assert inv["label_changing_generators"] == []  # spelling perturbations keep the label: no DIR test
    swap = inv["by_generator"]["char_swap"]
    assert swap["label_changing"] is None
    inv_swap = swap["label_preserving"]
    # 1 of 10 source cases flipped (hateful -> non-hateful); source 9/10 right, perturbed 8/10
    assert (inv_swap["n"], inv_swap["n_clusters"], inv_swap["n_flipped"]) == (10, 5, 1)
    assert (inv_swap["flipped_to_non_hateful"], inv_swap["flipped_to_hateful"]) == (1, 0)
    assert inv_swap["flip_rate"]["value"] == 10.0
    assert inv_swap["flip_rate"]["ci_low"] <= 10.0 <= inv_swap["flip_rate"]["ci_high"]
    assert inv_swap["flip_rate"]["ci_low"] < inv_swap["flip_rate"]["ci_high"]
    assert inv_swap["accuracy_source"]["value"] == 90.0 and inv_swap["accuracy_perturbed"]["value"] == 80.0
    leet = inv["by_generator"]["leet"]["label_preserving"]
    assert leet["flip_rate"] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}  # the wrong case stays wrong: no flip
    assert leet["accuracy_perturbed"]["value"] == 90.0
    assert inv["any"]["n"] == 10 and inv["any"]["n_flipped"] == 1 and inv["any"]["flip_rate"]["value"] == 10.0
    # the scores themselves are unchanged by the pairing
    assert doc["overall"]["accuracy"]["value"] == 85.0  # 17 of 20 perturbed cases right


def test_interval_resamples_source_templates(workdir):
    """The interval is the project's bootstrap over the 5 source templates
    (cases 1-2, 3-4, ...: the flipped case's template mate drawn with it),
    not over the 10 cases: under 50 resamples the two differ."""
    boot = Bootstrap(50, seed=0)
    score_both(workdir, write_suites(workdir), boot=boot)
    doc = json.loads((workdir / paths.metrics("B-D", "perturbed_hatecheck")).read_text())
    fig = doc["invariance"]["by_generator"]["char_swap"]["label_preserving"]["flip_rate"]
    flipped, ones = np.array([1] + [0] * 9), np.ones(10, dtype=int)
    templates = M.bootstrap_ci(ones, flipped, ["accuracy"], boot, np.repeat(np.arange(5), 2))["accuracy"]
    cases = M.bootstrap_ci(ones, flipped, ["accuracy"], boot)["accuracy"]
    assert templates != cases
    assert (fig["ci_low"], fig["ci_high"]) == templates
    assert fig["ci_low"] == 0.0 < 10.0 < fig["ci_high"]


def test_source_cases_without_prediction_are_counted_not_paired(workdir):
    score_both(workdir, write_suites(workdir, drop_source=("2",)), source=False)
    inv = json.loads((workdir / paths.metrics("B-D", "perturbed_hatecheck")).read_text())["invariance"]
    assert inv["n_without_source_prediction"] == 2 and inv["n_paired"] == 18
    swap = inv["by_generator"]["char_swap"]["label_preserving"]
    assert swap["n"] == 9 and swap["flip_rate"]["value"] == 11.1  # 1 of 9


def test_label_changing_perturbation_gives_the_directional_share():
    """A perturbation that turns hateful cases non-hateful (none of the
    spelling generators does): 4 pairs, moved to the new label in pairs 1
    and 4 (pair 2 keeps 'hateful', pair 3's source was already wrong)."""
    perturbed = pl.DataFrame({"source_id": ["a", "b", "c", "d"], "generator": ["negate"] * 4, "gold": [0, 0, 0, 0], "pred": [0, 1, 0, 0]})
    source = pl.DataFrame({"id": ["a", "b", "c", "d"], "gold": [1, 1, 1, 1], "pred": [1, 1, 0, 1]})
    inv = INV.invariance(perturbed, source, Bootstrap(100))
    assert inv["label_changing_generators"] == ["negate"]
    neg = inv["by_generator"]["negate"]
    assert neg["label_preserving"] is None
    assert neg["label_changing"]["n_moved"] == 2 and neg["label_changing"]["directional"]["value"] == 50.0
    assert neg["label_changing"]["accuracy_source"]["value"] == 75.0 and neg["label_changing"]["accuracy_perturbed"]["value"] == 75.0
    assert inv["any"]["n"] == 0 and inv["any"]["flip_rate"]["value"] is None  # no label-preserving pair


def test_report_shows_the_flip_rate(workdir):
    sources = score_both(workdir, write_suites(workdir))
    cells = tables.run("expanded", sources, "tables_expanded")["expanded_invariance"]
    cell = cells.filter((pl.col("row") == "char_swap") & (pl.col("column") == "flip_rate")).row(0, named=True)
    assert cell["value"] == 10.0 and cell["n"] == 10 and cell["setting"] == "hatecheck"
    assert cell["metrics_file"] == paths.metrics("B-D", "perturbed_hatecheck") and cell["stage"] == "score_B-D_perturbed_hatecheck"
    assert cell["resampling_unit"] == "template" and cell["n_clusters"] == 5
    assert cells["cell_id"].n_unique() == cells.height
    assert "directional" not in set(cells["column"])
    summary = json.loads((workdir / paths.table_summary("expanded")).read_text())
    assert summary["flip_rate"]["B-D"]["perturbed_hatecheck"] == {"char_swap": 10.0, "leet": 0.0, INV.ANY: 10.0}
    html = report.run(
        workdir / "r.html",
        "t",
        "smoke",
        {"B-D": {"train": [], "suites": []}},
        {},
        {},
        {t: paths.table(t) for t in ("expanded_functionality", "expanded_invariance")},
        None,
        50,
        expansion_files={},
    ).read_text("utf-8")
    assert 'id="invariance-b-d-perturbed-hatecheck"' in html
    start = html.index('data-cell-id="expanded_invariance:B-D:perturbed_hatecheck:char_swap:flip_rate"')
    assert html[html.index(">", start) + 1 :].startswith('10.0<span class="ci">[0.0, ')
    assert 'data-cell-id="expanded_invariance:B-D:perturbed_hatecheck:char_swap:accuracy_perturbed"' in html
    assert "Ribeiro et al. 2020" in html and "no directional (DIR) test" in html


def test_score_stage_of_a_perturbed_suite_reads_the_source_predictions():
    params = config.load_params(REPO / "params.yaml")
    stages = {s.name: s for s in ph.stages(params)}
    bd = stages["score_B-D_perturbed_hatecheck"]
    assert paths.predictions("B-D", "hatecheck") in bd.deps and paths.interim_table("hatecheck") in bd.deps
    xtc = stages["score_XTC_perturbed_mhc_german"]
    assert paths.predictions("XTC", "mhc_german") in xtc.deps and paths.predictions("XTC", "mhc_hindi") not in xtc.deps
    for name in ("score_B-D_extended_english", "score_B-D_hatecheck", "score_XTC_mhc_german"):
        assert not [d for d in stages[name].deps if "predictions" in d and d != paths.predictions(*name[len("score_") :].split("_", 1))], (
            name
        )
