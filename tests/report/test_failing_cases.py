"""Failing cases wherever a verdict is shown: under each functional test
below the mark, the model page and the report list the first three cases
of the score stage's failures.csv and link the file; the stages that build
them declare those files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
from conftest import REPO
from eval_synthetic import hatecheck_like

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation import scoring, tables
from hatecheck_pipeline.evaluation.cells import Source
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.pipeline import evaluate as ph
from hatecheck_pipeline.pipeline import report as ph_report
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.report.failing_cases import SHOWN
from hatecheck_pipeline.report.model_page import model_page
from hatecheck_pipeline.suites.registry import hatecheck
from hatecheck_pipeline.evaluation.scoring import model_failures

RESOURCES = REPO / "src/hatecheck_pipeline/resources"
SUITE = hatecheck()


WRONG = {"derog_neg_emote_h": 8, "threat_dir_h": 7, "slur_reclaimed_nh": 1, "ident_neutral_nh": 2, "negate_neg_nh": 0}  # of 12 each


def scored(model: str, wrong: dict[str, int], seed: int = 0) -> tuple[Source, pl.DataFrame]:
    """A synthetic HateCheck table scored as a score stage scores it: its
    metrics file and failures.csv in the pipeline's layout; ``wrong``: how
    many cases of each functional test the model gets wrong (seeded draw)."""
    frame = hatecheck_like()
    table = Path(SUITE.raw_table())
    table.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(table)
    rng = np.random.default_rng(seed)
    flip = np.zeros(frame.height, dtype=bool)
    for code, k in wrong.items():
        where = np.flatnonzero((frame["functionality"] == code).to_numpy())
        flip[rng.choice(where, size=k, replace=False)] = True
    truth = (frame["label"] == "hateful").to_numpy()
    hateful = truth ^ flip
    preds = pl.DataFrame(
        {
            "case_id": frame["case_id"],
            "p_hateful": np.where(hateful, 0.5, 0.0) + rng.random(frame.height) / 2,
            "pred": np.where(hateful, "hateful", "non-hateful"),
        }
    )
    preds.write_parquet(f"{model}.parquet")
    scoring.run(SUITE, f"{model}.parquet", paths.metrics(model, SUITE.name), boot=Bootstrap(20), failures=model_failures(model, SUITE.name))
    src = Source(model, SUITE.name, SUITE.dataset, None, paths.metrics(model, SUITE.name), ph.score_stage_name(model, SUITE.name))
    return src, frame.join(preds, on="case_id")


def below_mark_tests(model: str) -> dict[str, float]:
    doc = json.loads(Path(paths.metrics(model, SUITE.name)).read_text())
    return {f: v["accuracy"]["value"] for f, v in doc["by_functionality"].items()}


def listed(html: str, code: str) -> list[str]:
    """The case ids listed under one functional test's heading."""
    m = re.search(rf"<h5>[^<]*\({code}\):[^<]*</h5>(.*?)(?=<h5>|</details>)", html, re.S)
    return re.findall(r"\(id ([^)]+)\)", m.group(1)) if m else []


def test_the_model_page_lists_three_failing_cases_under_each_test_below_the_mark(workdir):
    src, cases = scored("m", WRONG)
    accuracy = below_mark_tests("m")
    failing = [f for f, v in accuracy.items() if v < 50]
    passing = [f for f, v in accuracy.items() if v >= 50]
    assert failing == ["derog_neg_emote_h", "threat_dir_h"] and len(passing) == 3
    card = Path("card.json")
    card.write_text(json.dumps({"kind": "python", "base_model": {"description": "a rule"}, "identity": {}, "profile": "smoke"}))
    page = Path(paths.model_page("m"))
    model_page(
        "m",
        {src.stage: SUITE},
        card,
        {src.stage: Path(src.metrics)},
        page,
        below_mark=50,
        failures={src.stage: Path(model_failures("m", SUITE.name))},
    )
    html = page.read_text()
    wrong = cases.filter(pl.col("label") != pl.col("pred"))
    for code in failing:
        ids = wrong.filter(pl.col("functionality") == code)["case_id"].to_list()
        assert listed(html, code) == ids[:SHOWN], code  # the first three, in the suite's order
        first = wrong.filter(pl.col("case_id") == ids[0]).row(0, named=True)
        assert f"gold {first['label']}, predicted {first['pred']}, p(hateful) {first['p_hateful'] * 100:.1f}%" in html
        assert f"{len(ids)} failing case{'s' if len(ids) != 1 else ''} in all" in html
    for code in passing:
        assert listed(html, code) == [], code
    assert "href='../../results/m/hatecheck/failures.csv'" in html
    assert (page.parent / "../../results/m/hatecheck/failures.csv").resolve() == Path(model_failures("m", "hatecheck")).resolve()


def test_a_model_that_fails_no_test_lists_no_cases(workdir):
    src, _ = scored("good", {code: min(k, 2) for code, k in WRONG.items()})
    assert min(below_mark_tests("good").values()) >= 50
    card = Path("card.json")
    card.write_text(json.dumps({"kind": "python", "identity": {}, "profile": "smoke"}))
    page = Path(paths.model_page("good"))
    model_page(
        "good",
        {src.stage: SUITE},
        card,
        {src.stage: Path(src.metrics)},
        page,
        below_mark=50,
        failures={src.stage: Path(model_failures("good", SUITE.name))},
    )
    assert "failing-tests" not in page.read_text()


def test_the_report_lists_failing_cases_under_table_1(workdir):
    src, cases = scored("B-D", WRONG, seed=3)
    tables.run("hatecheck", [src], "tables_hatecheck")
    failing = [f for f, v in below_mark_tests("B-D").items() if v < 50]
    assert len(failing) == 2
    out = Path("reports/r.html")
    report.report(
        tables={t: Path(paths.table(t)) for t in tables.GROUPS["hatecheck"].tables},
        cards={},
        validation={},
        published=RESOURCES / "published.yaml",
        functionalities=RESOURCES / "functionalities.yaml",
        out=out,
        title="r",
        below_mark=50,
        profile=Profile("smoke", {}),
        models={"B-D": {"suites": ["hatecheck"]}},
        failures={src.stage: Path(model_failures("B-D", SUITE.name))},
    )
    html = out.read_text("utf-8")
    section = html[html.index("Table 1: accuracy per functional test") : html.index("Table 2: accuracy per gold label")]
    wrong = cases.filter(pl.col("label") != pl.col("pred"))
    for code in failing:
        assert listed(section, code) == wrong.filter(pl.col("functionality") == code)["case_id"].to_list()[:SHOWN]
    assert "href='../results/B-D/hatecheck/failures.csv'" in section


def test_the_stages_that_show_verdicts_read_the_failures(params):
    pages = ph_report.model_page_stages(params)
    assert pages
    for stage in pages:
        model = stage.args["model"]
        assert set(stage.inputs["failures"]) == set(stage.inputs["metrics"])
        assert all(path == model_failures(model, stage.args["scored"][k].name) for k, path in stage.inputs["failures"].items())
    rep = next(s for s in ph_report.stages(params) if s.name == "report")
    functional = [s for s in ph.sources(params) if s.dataset in ("hatecheck", "mhc") and s.kind == "functional"]
    assert functional and rep.inputs["failures"] == {s.stage: model_failures(s.model, s.suite) for s in functional}
    outs = {o for s in ph.stages(params) for o in s.all_outs}
    assert set(rep.inputs["failures"].values()) <= outs  # each one a score stage's output
