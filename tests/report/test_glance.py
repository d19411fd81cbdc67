"""Results at a glance: the heat map of accuracy per functional test for
every model scored on a suite (coloured and marked as the papers' Table 1),
the tables' visible interval and n, and the summary bullets' n and
too-few-cases mark, built from small metrics documents."""

from __future__ import annotations

import re

import polars as pl

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import Source, overall_cells, section_cells
from hatecheck_pipeline.report import glance as G
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.report.cells import pivot
from hatecheck_pipeline.report.lineage import cell_source


def fig(value, half=5.0, n=140):
    return {"value": value, "ci_low": value - half, "ci_high": value + half, "n": n, "n_clusters": 20}


def doc(accuracies, suite="hatecheck", language=None, n=140, half=5.0):
    """A metrics document: ``accuracies``: functional test -> accuracy (or (accuracy, interval half-width, n))."""
    by = {}
    for code, v in accuracies.items():
        value, h, k = v if isinstance(v, tuple) else (v, half, n)
        by[code] = {"n": k, "accuracy": fig(value, h, k)}
    total = sum(f["n"] for f in by.values())
    return {
        "suite": suite,
        "language": language,
        "bootstrap": {"resampling_unit": "template"},
        "by_functionality": by,
        "overall": {"n": total, "accuracy": fig(60.0, half, total), "macro_f1": fig(55.0, half, total)},
    }


def src(model, suite="hatecheck", dataset="hatecheck", language=None):
    return Source(model, suite, dataset, language, f"results/{model}/{suite}/metrics.json", f"score_{model}_{suite}")


def hatecheck_cells(docs):
    return section_cells("hatecheck_t1", [(src(m), d) for m, d in docs.items()], "by_functionality", "accuracy")


def cell(html, cid):
    m = re.search(r'<td[^>]*data-cell-id="' + re.escape(cid) + r'"[^>]*>([^<]*)</td>', html)
    assert m, cid
    return m.group(0), m.group(1)


def classes(td):
    return set(re.search(r'class="([^"]*)"', td).group(1).split())


def test_shade_is_white_at_the_mark_red_below_green_above_and_deepens_with_distance():
    def rgb(h):
        return tuple(int(h[i : i + 2], 16) for i in (1, 3, 5))

    assert G.shade(50.0, 50) == "#ffffff" and G.shade(None, 50) is None
    r10, r40 = rgb(G.shade(10.0, 50)), rgb(G.shade(40.0, 50))
    g60, g95 = rgb(G.shade(60.0, 50)), rgb(G.shade(95.0, 50))
    assert r10[0] > r10[1] and r40[0] > r40[1]  # red below the mark
    assert g60[1] > g60[0] and g95[1] > g95[0]  # green above
    assert sum(r10) < sum(r40) and sum(g95) < sum(g60)  # deeper further from the mark
    assert rgb(G.shade(70.0, 80))[0] > rgb(G.shade(70.0, 80))[1]  # the mark is a parameter: 70 is below 80


def test_heat_map_marks_best_below_and_too_few_and_traces_every_cell():
    docs = {
        "A": doc({"derog_neg_emote_h": 80.0, "slur_reclaimed_nh": (30.0, 20.0, 12), "counter_quote_nh": 60.0}),
        "B": doc({"derog_neg_emote_h": 45.0, "slur_reclaimed_nh": 70.0, "counter_quote_nh": 60.0}),
    }
    html = G.view(hatecheck_cells(docs), "hatecheck", "heat-hatecheck", 50, "hatecheck", max_ci_width=30)
    # models as columns, functional tests as rows in the paper's order
    head = re.search(r"<thead>(.*?)</thead>", html).group(1)
    assert head.index(">A<") < head.index(">B<")
    rows = re.findall(r'<tr><td class="rowhead"[^>]*>([^<]*)</td>', html)
    assert rows == [
        P.functionality_label(c, "hatecheck", short=True) for c in ("derog_neg_emote_h", "slur_reclaimed_nh", "counter_quote_nh")
    ]
    a_f1, text = cell(html, "heat:hatecheck_t1:A:derog_neg_emote_h:accuracy")
    assert text == "80.0" and classes(a_f1) == {"heat-best"} and G.shade(80.0, 50) in a_f1
    b_f1, _ = cell(html, "heat:hatecheck_t1:B:derog_neg_emote_h:accuracy")
    assert classes(b_f1) == {"heat-below"} and G.shade(45.0, 50) in b_f1  # italic red, not the best
    # a 40-point interval (n=12): the visible dagger and the underline; a 10-point one not
    a_f9, text = cell(html, "heat:hatecheck_t1:A:slur_reclaimed_nh:accuracy")
    assert text == "30.0" + G.DAGGER and {"too-few", "heat-below"} <= classes(a_f9) and "n=12" in a_f9
    b_f9, text = cell(html, "heat:hatecheck_t1:B:slur_reclaimed_nh:accuracy")
    assert text == "70.0" and "too-few" not in classes(b_f9) and "heat-best" in classes(b_f9)
    # a tie: both best
    assert all("heat-best" in classes(cell(html, f"heat:hatecheck_t1:{m}:counter_quote_nh:accuracy")[0]) for m in "AB")
    # no threshold: no mark
    plain = G.view(hatecheck_cells(docs), "hatecheck", "heat-hatecheck", 50, "hatecheck")
    assert G.DAGGER not in plain and "too-few" not in plain
    # every cell names its metrics file and score stage
    assert 'data-metrics="results/A/hatecheck/metrics.json" data-stage="score_A_hatecheck"' in a_f1


def test_papers_columns_sit_beside_ours_with_their_n_and_mark_the_row_best():
    published = P.load()
    docs = {"mine": doc({"derog_neg_emote_h": 99.9, "spell_leet_h": 10.0})}
    html = G.view(hatecheck_cells(docs), "hatecheck", "h", 50, "hatecheck", G.papers_for("hatecheck", None, published))
    for model in G.PAPER_MODELS["hatecheck"]:
        assert f">{model} (paper)</th>" in html
    bd = P.lookup("hatecheck_t1", "B-D", published)[("spell_leet_h", "accuracy")][0]
    td, text = cell(html, "heat:published:hatecheck_t1:B-D:hatecheck:spell_leet_h")
    assert text == f"{bd:.1f}" and 'data-metrics="published"' in td
    assert f"n={published['hatecheck_t1']['n']['spell_leet_h']}" in td
    assert "heat-best" in classes(cell(html, "heat:hatecheck_t1:mine:derog_neg_emote_h:accuracy")[0])
    # only the suite's tests are rows: the papers' other tests are not added
    assert "derog_dehum_h" not in html
    # MHC: XTC's figure for the language of the suite
    mhc = section_cells(
        "mhc_t1",
        [(src("mine", "mhc_german", "mhc", "german"), doc({"threat_dir_h": 70.0}, "mhc_german", "german"))],
        "by_functionality",
        "accuracy",
    )
    out = G.view(mhc, "mhc_german", "h", 50, "mhc", G.papers_for("mhc", "german", published))
    xtc = P.lookup("mhc_t1", "XTC", published)[("threat_dir_h", "german")][0]
    assert cell(out, "heat:published:mhc_t1:XTC:mhc_german:threat_dir_h")[1] == f"{xtc:.1f}"


def test_table_cells_show_their_interval_and_n():
    cells = hatecheck_cells({"A": doc({"derog_neg_emote_h": 72.1}, half=7.1)})
    shown = pivot(cells, "t", "row", "model", 50, show_ci=True)
    assert '72.1<span class="ci">[65.0, 79.2] n=140</span></td>' in shown
    assert "n=140</span>" not in pivot(cells, "t", "row", "model", 50)


def test_summary_bullets_carry_n_interval_and_the_too_few_mark():
    few = (
        src("LLM-EN"),
        {"bootstrap": {"resampling_unit": "template"}, "by_label": {}, "overall": {"n": 10, "accuracy": fig(70.0, 29.0, 10)}},
    )
    many = (
        src("B-D"),
        {"bootstrap": {"resampling_unit": "template"}, "by_label": {}, "overall": {"n": 3728, "accuracy": fig(47.3, 1.6, 3728)}},
    )
    t2 = overall_cells("hatecheck_t2", [few, many], ["accuracy"], row_of=lambda s: "total")
    mhc = [
        (src("XTC", f"mhc_{lang}", "mhc", lang), {"bootstrap": {}, "overall": {"n": k, "macro_f1": fig(v, h, k)}})
        for lang, v, h, k in (("german", 60.0, 2.0, 3000), ("hindi", 50.0, 25.0, 40))
    ]
    t7 = overall_cells("mhc_t7", mhc, ["macro_f1"])
    empty = pl.DataFrame(schema=t2.schema)
    lines = G.summary_items(t2, t7, empty, max_ci_width=30)
    llm = next(x for x in lines if "LLM-EN" in x)
    bd = next(x for x in lines if "B-D" in x)
    xtc = next(x for x in lines if "XTC" in x)
    assert "70.0%" in llm and "n=10" in llm and "too few cases to compare" in llm and "58.0 points wide" in llm
    assert "47.3%" in bd and "[45.7, 48.9]" in bd and "n=3,728" in bd and "too few" not in bd
    assert "55.0" in xtc and "n=3,040" in xtc and "too few cases to compare in 1 of 2 languages" in xtc and "hindi" in xtc
    assert not any("too few" in x for x in G.summary_items(t2, t7, empty, max_ci_width=None))


def test_report_has_a_heat_map_for_every_model_on_every_suite_and_its_cells_trace(tmp_path):
    hc = hatecheck_cells(
        {
            "B-D": doc({"derog_neg_emote_h": 80.0}),
            "hatesonar": doc({"derog_neg_emote_h": 40.0}),
            "userclf": doc({"derog_neg_emote_h": 60.0}),
        }
    )
    loaded = [
        (src(m, f"mhc_{lang}", "mhc", lang), doc({"threat_dir_h": v}, f"mhc_{lang}", lang))
        for m, lang, v in (("XTC", "german", 70.0), ("hatesonar", "german", 30.0), ("XTC", "hindi", 55.0))
    ]
    mhc_t1 = section_cells("mhc_t1", loaded, "by_functionality", "accuracy").with_columns(pl.col("language").alias("column"))
    t2 = overall_cells("hatecheck_t2", [(src(m), doc({})) for m in ("B-D", "hatesonar", "userclf")], ["accuracy"], row_of=lambda s: "total")
    t7 = overall_cells("mhc_t7", loaded, ["macro_f1"])
    html = report.build(
        "t", "smoke", {}, {}, {}, {"hatecheck_t1": hc, "hatecheck_t2": t2, "mhc_t1": mhc_t1, "mhc_t7": t7}, {}, 50, max_ci_width=30
    )
    for model in ("B-D", "hatesonar", "userclf"):
        assert f'data-cell-id="heat:hatecheck_t1:{model}:derog_neg_emote_h:accuracy"' in html
    assert 'data-cell-id="heat:mhc_t1:hatesonar:german:threat_dir_h:accuracy"' in html
    for language in ("german", "hindi"):
        assert f'id="heat-mhc_{language}"' in html and f'id="glance-mhc_{language}"' in html
    # the heat map beside the table it shades
    assert re.search(r'<div class="glance"><table class="heat" id="heat-hatecheck">.*?</table><table id="hatecheck-t1">', html)
    # the per-language tables: interval and n visible, their own ids (one id, one cell)
    ids = re.findall(r'data-cell-id="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    assert 'data-cell-id="glance:mhc_t1:XTC:hindi:threat_dir_h:accuracy"' in html and "[50.0, 60.0] n=140" in html
    # every model's per-model table (no longer XTC only)
    assert 'id="mhc-t1-hatesonar"' in html and 'id="mhc-t1-XTC"' in html
    # lineage reads a heat-map cell back from the written report
    page = tmp_path / "r.html"
    page.write_text(html)
    found = cell_source("heat:mhc_t1:hatesonar:german:threat_dir_h:accuracy", page)
    assert found["metrics_file"] == "results/hatesonar/mhc_german/metrics.json" and found["stage"] == "score_hatesonar_mhc_german"
    assert cell_source("heat:published:mhc_t1:XTC:mhc_german:threat_dir_h", page)["metrics_file"] == "published"


def test_model_page_has_the_heat_map_of_its_model_beside_the_papers_models(tmp_path):
    import json

    from hatecheck_pipeline.report.model_page import model_page
    from hatecheck_pipeline.suites.registry import hatecheck, mhc

    suites = {"score_m_hatecheck": hatecheck(), "score_m_mhc_german": mhc("german")}
    docs = {
        "score_m_hatecheck": doc({"derog_neg_emote_h": 20.0, "slur_h": (80.0, 30.0, 9)}),
        "score_m_mhc_german": doc({"threat_dir_h": 70.0}, "mhc_german", "german"),
    }
    files = {}
    for stage, d in docs.items():
        files[stage] = tmp_path / f"{stage}.json"
        files[stage].write_text(json.dumps(d))
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"kind": "onnx", "profile": "smoke"}))
    page = tmp_path / "m.html"
    model_page("m", suites, card, files, page, below_mark=50, max_ci_width=30)
    html = page.read_text()
    heat = html[html.index('id="heat-hatecheck"') :]
    heat = heat[: heat.index("</table>")]
    assert ">m</th>" in heat and all(f">{p} (paper)</th>" in heat for p in G.PAPER_MODELS["hatecheck"])
    assert "heat-below" in classes(cell(heat, "heat:hatecheck_t1:m:derog_neg_emote_h:accuracy")[0])
    assert cell(heat, "heat:hatecheck_t1:m:slur_h:accuracy")[1] == "80.0" + G.DAGGER
    german = html[html.index('id="heat-mhc_german"') :]
    assert ">XTC (paper)</th>" in german[: german.index("</table>")]
    # beside the page's own table of the suite
    assert re.search(r'<div class="glance"><table class="heat" id="heat-hatecheck">.*?</table><table id=\'page:m:hatecheck\'>', html)
