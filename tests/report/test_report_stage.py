"""The report stage: declared inputs and parameters, and its function reading
only what it is given."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO
from eval_synthetic import make_metrics

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.stage import signature_mismatch
from hatecheck_pipeline.evaluation import tables
from hatecheck_pipeline.pipeline import report as ph_report
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.suites.registry import HELDOUT, Suite

RESOURCES = REPO / "src/hatecheck_pipeline/resources"


def test_report_stage_declares_what_it_reads(params):
    stage = next(s for s in ph_report.stages(params) if s.name == "report")
    assert stage.run == "hatecheck_pipeline.report.html:report"
    assert signature_mismatch(stage) is None
    assert set(stage.param_keys) == {
        "report.title",
        "evaluation.below_mark",
        "evaluation.max_ci_width",
        "evaluation.ci_level",
        "profile",
        "models",
        "llm.backends",
    }
    assert stage.all_outs == [paths.report()]
    deps = stage.data_deps
    for dep in (
        "src/hatecheck_pipeline/resources/published.yaml",
        "src/hatecheck_pipeline/resources/functionalities.yaml",
        paths.training_languages(),
        paths.validation_json("mhc"),
        paths.validation_json("crows_pairs"),
        paths.table("mhc_t7"),
        paths.table("hatecheck_t1"),
        paths.table("contrast"),
        paths.model_card("XTC"),
    ):
        assert dep in deps, dep
    assert len(deps) == len(set(deps))
    # the stage reads only what it declares: no run records (logs/benchmarks), which
    # differ between runs of identical results
    assert stage.args == {} and "logs/benchmarks" not in " ".join(deps)


def test_no_stage_reads_an_undeclared_path(params):
    """A stage's constants are names, never paths: everything a stage reads
    is a declared input (tracked by both runners)."""
    from hatecheck_pipeline.pipeline.registry import build_stages

    for s in build_stages(params):
        for name, value in s.args.items():
            if isinstance(value, str):
                assert Path(value).parts[:1] not in {("logs",), ("data",), ("models",), ("results",), ("reports",)}, (s.name, name, value)


def test_report_function_writes_the_html_from_its_inputs(workdir):
    srcs = [
        make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.7, 1),
        make_metrics(workdir, "B-D", Suite("heldout_davidson2017", "davidson2017", "case_id", HELDOUT, split="test"), 0.9, 2),
    ]
    tables.run("hatecheck", srcs, "tables_hatecheck")
    Path("val.json").write_text('{"success": true, "counts": {"kept": 60, "quarantined": 0}, "suites": []}')
    summary = report.report(
        tables={t: Path(paths.table(t)) for t in tables.GROUPS["hatecheck"].tables},
        cards={},
        validation={"hatecheck": Path("val.json")},
        published=RESOURCES / "published.yaml",
        functionalities=RESOURCES / "functionalities.yaml",
        out=Path("reports/r.html"),
        title="Stage report",
        below_mark=50,
        profile=Profile("smoke", {}),
        models={"B-D": {"train": ["davidson2017"], "suites": ["hatecheck"]}},
    )
    assert summary == "wrote reports/r.html"
    html = Path("reports/r.html").read_text("utf-8")
    assert 'data-cell-id="hatecheck_t2:B-D:total:accuracy"' in html and "Stage report" in html
    assert 'data-cell-id="published:hatecheck_t1:B-D:derog_neg_emote_h:B-D"' in html
    assert 'id="expanded"' not in html and 'id="bias"' not in html  # not declared: no section
    assert "missing model card" in html
    assert not list(Path("reports").glob("*.tmp"))


def test_report_shows_the_stage_time_and_memory_records(workdir):
    """The section "Run time and memory": per phase and slowest stages from
    the stage records; without records it says so."""
    import json

    srcs = [make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.7, 1)]
    tables.run("hatecheck", srcs, "tables_hatecheck")
    usage_dir = Path("logs/benchmarks")
    usage_dir.mkdir(parents=True)
    for stage, phase, wall, start, end in [
        ("train_B-D", "train", 291.0, "12:00:00", "12:04:51"),
        ("score_B-D_hatecheck", "evaluate", 9.0, "12:04:51", "12:05:00"),
    ]:
        rec = {
            "stage": stage,
            "phase": phase,
            "wall_s": wall,
            "cpu_s": 2 * wall,
            "max_rss_mb": 1234.0,
            "started": f"2026-01-01T{start}+00:00",
            "finished": f"2026-01-01T{end}+00:00",
        }
        (usage_dir / f"{stage}.json").write_text(json.dumps(rec))
    kwargs = dict(
        tables={t: Path(paths.table(t)) for t in tables.GROUPS["hatecheck"].tables},
        cards={},
        validation={},
        published=RESOURCES / "published.yaml",
        functionalities=RESOURCES / "functionalities.yaml",
        out=Path("reports/r.html"),
        title="Stage report",
        below_mark=50,
        profile=Profile("smoke", {}),
        models={"B-D": {"train": ["davidson2017"], "suites": ["hatecheck"]}},
    )
    report.report(**kwargs, usage_dir=usage_dir)
    html = Path("reports/r.html").read_text("utf-8")
    assert 'id="usage"' in html and "2 stages: 5.0 minutes of stage time summed, 5.0 minutes from the first" in html
    train = html[html.index("<td class='rowhead'>train</td>") :]
    assert [c for c in re.findall(r">([^<>]+)</td>", train[: train.index("</tr>")])] == ["train", "1", "291.0", "582.0", "1,234", "97.0%"]
    assert "data-record='logs/benchmarks/train_B-D.json'" in html  # each number names the record it comes from
    assert html.index("<td class='rowhead'>train_B-D</td>") < html.index("<td class='rowhead'>score_B-D_hatecheck</td>")
    report.report(**kwargs, usage_dir=Path("elsewhere"))
    assert "No stage records" in Path("reports/r.html").read_text("utf-8")


def test_report_shows_the_scores_no_table_reads_and_the_expanded_suite_files(workdir):
    """A held-out score of a model tested on no functional suite (the HateXplain
    model's) lands in the ``other`` group and the report's "Other scores";
    every expanded suite file is listed with its row count."""
    hx = make_metrics(workdir, "hatexplain", Suite("heldout_hatexplain", "hatexplain", "case_id", HELDOUT, split="test"), 0.8, 3)
    bd = make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.7, 1)
    assert tables.GROUPS["other"].select([hx, bd]) == [hx]
    assert hx not in tables.GROUPS["hatecheck"].select([hx, bd])
    tables.run("hatecheck", [bd], "tables_hatecheck")
    tables.run("other", [hx], "tables_other")
    suite_file = Path("data/expanded/perturbed_hatecheck/bert.parquet")
    suite_file.parent.mkdir(parents=True)
    import polars as pl

    pl.DataFrame({"case_id": [f"c{i}" for i in range(1234)]}).write_parquet(suite_file)
    Path("val.json").write_text('{"success": true, "counts": {"kept": 60, "quarantined": 0}, "suites": []}')
    report.report(
        tables={t: Path(paths.table(t)) for g in ("hatecheck", "other") for t in tables.GROUPS[g].tables},
        cards={},
        validation={"hatecheck": Path("val.json")},
        published=RESOURCES / "published.yaml",
        functionalities=RESOURCES / "functionalities.yaml",
        out=Path("reports/r.html"),
        title="Stage report",
        below_mark=50,
        profile=Profile("smoke", {}),
        models={"B-D": {"suites": ["hatecheck"]}, "hatexplain": {"suites": ["heldout_hatexplain"]}},
        expansion={},
        expanded_suites={"perturbed_hatecheck/bert": suite_file, "extended/xlmt": Path("data/expanded/extended/xlmt.parquet")},
    )
    html = Path("reports/r.html").read_text("utf-8")
    other = re.search(r'<table id="other-scores">.*?</table>', html, re.S).group(0)
    assert 'data-cell-id="other_scores:hatexplain:heldout_hatexplain:macro_f1"' in other and "B-D" not in other
    files = re.search(r'<table id="expanded-suite-files">.*?</table>', html, re.S).group(0)
    assert "data/expanded/perturbed_hatecheck/bert.parquet</code></td><td>1,234<" in files
    assert "data/expanded/extended/xlmt.parquet</code></td><td>—<" in files  # not there: no count


def test_cells_with_an_interval_wider_than_the_threshold_are_marked_too_few_to_compare(workdir):
    import polars as pl

    srcs = [make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.7, 1)]
    tables.run("hatecheck", srcs, "tables_hatecheck")
    Path("val.json").write_text('{"success": true, "counts": {"kept": 60, "quarantined": 0}, "suites": []}')
    t1 = pl.read_csv(paths.table("hatecheck_t1"))
    widths = dict(zip(t1["cell_id"], t1["ci_high"] - t1["ci_low"]))
    threshold = sorted(widths.values())[len(widths) // 2]  # about half the functionalities wider
    marked = {}
    for max_ci_width in (threshold, None):
        report.report(
            tables={t: Path(paths.table(t)) for t in tables.GROUPS["hatecheck"].tables},
            cards={},
            validation={"hatecheck": Path("val.json")},
            published=RESOURCES / "published.yaml",
            functionalities=RESOURCES / "functionalities.yaml",
            out=Path("reports/r.html"),
            title="Stage report",
            below_mark=50,
            profile=Profile("smoke", {}),
            models={"B-D": {"train": ["davidson2017"], "suites": ["hatecheck"]}},
            max_ci_width=max_ci_width,
        )
        html = Path("reports/r.html").read_text("utf-8")
        marked[max_ci_width] = {
            m.group(2): m.group(3)
            for m in re.finditer(r'<td class="([^"]*\btoo-few\b[^"]*)" data-cell-id="([^"]+)"[^>]*title="([^"]*)"', html)
        }
    wide = {cid for cid, w in widths.items() if w > threshold}
    assert wide and wide != set(widths)
    assert {cid for cid in marked[threshold] if cid.startswith("hatecheck_t1:")} == wide
    assert all("Too few cases to compare" in title for title in marked[threshold].values())
    assert marked[None] == {}
