"""Every interval the report and the model pages show is named at the level
its metrics file's bootstrap recorded (``bootstrap.level``, set by
``evaluation.ci_level``): a cell's tooltip at its own level, a page's notes
and table headers at the level its cells share (saying so when they
differ), never a fixed 95%."""

from __future__ import annotations

import json
import re
from html import unescape

import polars as pl
import pytest

from hatecheck_pipeline.evaluation.cells import CELL_COLUMNS, Source, overall_cells, section_cells
from hatecheck_pipeline.report import cells as C
from hatecheck_pipeline.report import glance as G
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.report.diff_view import diff_section
from hatecheck_pipeline.report.model_page import model_page
from hatecheck_pipeline.suites.registry import hatecheck, mhc


def fig(value, half=5.0, n=140):
    return {"value": value, "ci_low": value - half, "ci_high": value + half, "n": n, "n_clusters": 20}


def doc(accuracies, level, suite="hatecheck", language=None, half=5.0):
    """A metrics document scored at ``level``: functional test -> accuracy."""
    return {
        "suite": suite,
        "dataset": "mhc" if language else "hatecheck",
        "language": language,
        "bootstrap": {"samples": 100, "seed": 0, "level": level, "resampling_unit": "template"},
        "by_functionality": {code: {"n": 140, "accuracy": fig(v, half)} for code, v in accuracies.items()},
        "overall": {"n": 140, "accuracy": fig(60.0, half), "macro_f1": fig(55.0, half)},
    }


def src(model, suite="hatecheck", dataset="hatecheck", language=None):
    return Source(model, suite, dataset, language, f"results/{model}/{suite}/metrics.json", f"score_{model}_{suite}")


def t1(level, model="A", half=5.0):
    return section_cells("hatecheck_t1", [(src(model), doc({"derog_neg_emote_h": 40.0}, level, half=half))], "by_functionality", "accuracy")


def titles(html):
    return [unescape(t) for t in re.findall(r'title="([^"]*)"', html)]


def test_cells_carry_their_metrics_files_level_beside_the_resampling_unit():
    names = list(CELL_COLUMNS)
    assert CELL_COLUMNS["ci_level"] == pl.Float64 and names.index("ci_level") == names.index("resampling_unit") + 1
    cells = t1(0.9)
    assert cells["ci_level"].to_list() == [0.9] and cells["resampling_unit"].to_list() == ["template"]
    # a figure without an interval has no level (as it has no resampling unit)
    no_ci = doc({"derog_neg_emote_h": 40.0}, 0.9)
    no_ci["overall"]["accuracy"] = {"value": 60.0}
    plain = overall_cells("hatecheck_t2", [(src("A"), no_ci)], ["accuracy", "macro_f1"], row_of=lambda s: "total")
    assert dict(zip(plain["column"], plain["ci_level"])) == {"accuracy": None, "macro_f1": 0.9}


@pytest.mark.parametrize(("level", "shown"), [(0.9, "90%"), (0.95, "95%"), (0.975, "97.5%")])
def test_a_cells_tooltip_and_too_few_text_name_its_own_level(level, shown):
    html = C.pivot(t1(level, half=20.0), "t", "row", "model", 50, max_ci_width=30)
    (tip,) = [t for t in titles(html) if "lineage" in t]
    assert f"[{shown} CI 20.0–60.0" in tip and f"the {shown} interval is 40.0 points wide" in tip
    assert "95%" not in tip or shown == "95%"


def test_the_legend_names_the_level_the_cells_share_or_says_they_differ():
    assert "90% interval" in G.legend(50, 30, C.levels(t1(0.9))) and "95%" not in G.legend(50, 30, C.levels(t1(0.9)))
    assert "95% interval" in G.legend(50, 30, C.levels(t1(0.95)))
    mixed = G.legend(50, 30, C.levels(t1(0.9), t1(0.95, "B")))
    assert "the interval (at each cell's own level) is wider" in mixed and "90%" not in mixed and "95%" not in mixed
    # no cell with a level: the configured one, else no number at all
    assert "80% interval" in G.legend(50, 30, set(), 0.8)
    assert "interval is wider" in G.legend(50, 30) and "95%" not in G.legend(50, 30)


def build(cells, **kw):
    return report.build("t", "smoke", {}, {}, {}, cells, {}, 50, max_ci_width=30, **kw)


def summary(html):
    return re.search(r'<section id="summary">(.*?)</section>', html, re.S).group(1)


def test_the_reports_notes_name_the_level_of_its_cells():
    t2 = overall_cells("hatecheck_t2", [(src("A"), doc({}, 0.9))], ["accuracy"], row_of=lambda s: "total")
    html = build({"hatecheck_t1": t1(0.9, half=20.0), "hatecheck_t2": t2})
    s = summary(html)
    assert "Cells whose 90% interval is wider than 30 points" in s and "Intervals: 90% percentile bootstrap." in s
    assert "The table beside gives each figure's 90% interval and n." in html
    assert "[90% CI 20.0–60.0" in " ".join(titles(html)) and "90% interval is 40.0 points wide" in " ".join(titles(html))
    assert "95%" not in html
    # the configured level does not override what the cells record
    assert "95%" not in build({"hatecheck_t1": t1(0.9), "hatecheck_t2": t2}, ci_level=0.95)
    # at 0.95, 95%
    at95 = build({"hatecheck_t1": t1(0.95), "hatecheck_t2": t2.with_columns(pl.lit(0.95).alias("ci_level"))})
    assert "Intervals: 95% percentile bootstrap." in summary(at95) and "90%" not in at95


def test_cells_at_different_levels_are_not_given_one_and_no_cells_fall_back_to_the_params():
    mixed = summary(build({"hatecheck_t1": pl.concat([t1(0.9), t1(0.95, "B")])}))
    assert "Intervals: percentile bootstrap (at each cell's own level)." in mixed
    assert "Cells whose interval (at each cell's own level) is wider" in mixed and "90%" not in mixed and "95%" not in mixed
    empty = pl.DataFrame(schema=CELL_COLUMNS)
    assert "Intervals: 90% percentile bootstrap." in summary(build({"hatecheck_t1": empty}, ci_level=0.9))
    bare = summary(build({"hatecheck_t1": empty}))
    assert "Intervals: percentile bootstrap." in bare and "Cells whose interval is wider" in bare and "95%" not in bare


def test_a_table_written_before_the_level_column_reads_with_it_null(tmp_path):
    path = tmp_path / "hatecheck_t1.csv"
    t1(0.9).drop("ci_level").write_csv(path)
    read = report.read_cells({"hatecheck_t1": path})["hatecheck_t1"]
    assert read.columns == list(CELL_COLUMNS) and read["ci_level"].to_list() == [None]
    # its interval is named without a level rather than with an invented one
    assert "95%" not in C.provenance(read.row(0, named=True)) and "[CI 35.0–45.0" in C.provenance(read.row(0, named=True))


def page(tmp_path, level):
    suites = {"score_m_hatecheck": hatecheck(), "score_m_mhc_german": mhc("german")}
    docs = {
        "score_m_hatecheck": doc({"derog_neg_emote_h": 20.0, "slur_h": 80.0}, level, half=20.0),
        "score_m_mhc_german": doc({"threat_dir_h": 70.0}, level, "mhc_german", "german"),
    }
    files = {}
    for stage, d in docs.items():
        files[stage] = tmp_path / f"{stage}.json"
        files[stage].write_text(json.dumps(d))
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"kind": "onnx", "profile": "smoke"}))
    out = tmp_path / "m.html"
    model_page("m", suites, card, files, out, below_mark=50, max_ci_width=30)
    return out.read_text()


def test_the_model_page_headers_and_notes_name_its_level(tmp_path):
    html = page(tmp_path, 0.9)
    assert "<th>90% CI (templates)</th>" in html and html.count("<th>90% CI</th>") == 2
    assert "Intervals: 90% percentile bootstrap;" in html and "Cells whose 90% interval is wider than 30 points" in html
    assert "[90% CI 0.0–40.0" in " ".join(titles(html))
    assert "95%" not in html
    html = page(tmp_path, 0.95)
    assert "<th>95% CI (templates)</th>" in html and "Intervals: 95% percentile bootstrap;" in html and "90%" not in html


def diff_doc(level):
    test = {
        "n": 10,
        "accuracy_a": 90.0,
        "accuracy_b": 40.0,
        "difference": -50.0,
        "ci_low": -60.0,
        "ci_high": -40.0,
        "p_value": 0.001,
        "p_holm": 0.001,
        "flagged": True,
        "worse": True,
    }
    return {
        "suite": "hatecheck",
        "dataset": "hatecheck",
        "a": {"model": "A"},
        "b": {"model": "B"},
        "bootstrap": {"level": level, "paired": True, "resampling_unit": "template", "samples": 100, "seed": 0},
        "by_functionality": {"derog_neg_emote_h": test},
        "flagged": ["derog_neg_emote_h"],
    }


def test_the_diff_tables_name_the_level_and_alpha_their_document_records():
    html = diff_section({"diff_A_B_hatecheck": {"doc": diff_doc(0.9), "file": "d.json", "stage": "diff_A_B_hatecheck"}})
    assert "<th>90% CI</th>" in html and "[90% CI -60.0–-40.0" in " ".join(titles(html))
    assert "the 90% interval is the differences" in html and "p ≤ 0.1" in html and "at most 0.1;" in html
    assert "95%" not in html and "0.05" not in html
    at95 = diff_section({"d": {"doc": diff_doc(0.95), "file": "d.json", "stage": "d"}})
    assert "<th>95% CI</th>" in at95 and "p ≤ 0.05" in at95
    both = diff_section({k: {"doc": diff_doc(v), "file": "d.json", "stage": k} for k, v in (("d1", 0.9), ("d2", 0.95))})
    assert "at each comparison" in both and "<th>90% CI</th>" in both and "<th>95% CI</th>" in both


def test_appendix_f_and_crows_pairs_name_their_documents_level():
    from hatecheck_pipeline.evaluation import multiclass
    from hatecheck_pipeline.evaluation.metrics import Bootstrap
    from hatecheck_pipeline.report.paper_tables import appf_section
    from hatecheck_pipeline.report.sections import bias_section

    def appf(level):
        gold, pred = ["hateful", "offensive", "neither", "offensive"], ["hateful", "offensive", "offensive", "offensive"]
        d = multiclass.evaluate(gold, pred, ["hateful", "offensive", "neither"], "hateful", Bootstrap(10, level=level))
        entry = {"model": "B-D-multiclass", "dataset": "davidson2017", "doc": {**d, "complete": True}, "file": "m.json", "stage": "s"}
        return appf_section({"B-D-multiclass/davidson2017": entry}, {}, max_ci_width=0)

    at90 = appf(0.9)
    assert "Hover for the case-level 90% interval." in at90 and "[90% CI " in " ".join(titles(at90)) and "95%" not in at90
    assert "90% interval is" in " ".join(titles(at90))  # the too-few text, at the document's level
    assert "case-level 95% interval" in appf(0.95)

    def crows(level):
        entry = {
            "variant": "causal",
            "model": "m",
            "n_pairs": 1508,
            "complete": True,
            "metric_score": 55.0,
            "metric_ci": [52.5, 57.5],
            "bias_types": {},
            "bootstrap": {"samples": 100, "seed": 0, "level": level, "resampling_unit": "pair"},
            "source": "c.json",
        }
        html = bias_section({"crows_pairs": {"m": entry}}, "s.json", {})
        return html[: html.index("</table>")]

    at90 = crows(0.9)
    assert "<th>metric score 90% CI</th>" in at90 and "(90% CI 52.5-57.5" in " ".join(titles(at90)) and "95%" not in at90
    assert "<th>metric score 95% CI</th>" in crows(0.95)
