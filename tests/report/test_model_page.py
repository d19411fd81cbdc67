"""A model's page: every suite with its interval, per functional test the
model's accuracy beside the papers' models, the tests below the mark listed
and marked, and a held-out set the model was trained on marked as such."""

from __future__ import annotations

import json
import re

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.model_page import model_page
from hatecheck_pipeline.suites.registry import hatecheck, heldout, mhc


def fig(value, n=10):
    return {"value": value, "ci_low": value - 5, "ci_high": value + 5, "n": n, "n_clusters": 4}


def metrics_doc(suite, accuracies=None, seen=False):
    doc = {"suite": suite.name, "dataset": suite.dataset, "language": suite.language,
           "bootstrap": {"resampling_unit": "template" if suite.functional else "case"},
           "overall": {"n": 100, "accuracy": fig(60.0), "macro_f1": fig(55.0), "f1_hateful": fig(50.0), "f1_non_hateful": fig(60.0)}}
    if accuracies:
        doc["by_functionality"] = {code: {"n": 10, "accuracy": fig(v)} for code, v in accuracies.items()}
    if seen:
        doc["seen_in_training"] = True
    return doc


def test_the_page_lists_what_fails_beside_the_papers_and_marks_training_data(tmp_path):
    suites = {"score_m_hatecheck": hatecheck(), "score_m_mhc_german": mhc("german"), "score_m_heldout_davidson2017": heldout("davidson2017")}
    docs = {
        "score_m_hatecheck": metrics_doc(hatecheck(), {"derog_neg_emote_h": 20.0, "slur_h": 80.0, "counter_quote_nh": 49.9}),
        "score_m_mhc_german": metrics_doc(mhc("german"), {"threat_dir_h": 70.0}),
        "score_m_heldout_davidson2017": metrics_doc(heldout("davidson2017"), seen=True),
    }
    files = {}
    for stage, doc in docs.items():
        files[stage] = tmp_path / f"{stage}.json"
        files[stage].write_text(json.dumps(doc))
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"kind": "onnx", "base_model": {"description": "a keyword rule"}, "identity": {"content_sha256": "ab" * 32},
                                "trained_on": ["davidson2017"], "profile": "smoke"}))
    page = tmp_path / "m.html"
    model_page("m", suites, card, files, page, below_mark=50)
    html = page.read_text()
    failing = re.search(r"<ul id='failing'>(.*?)</ul>", html).group(1)
    assert "derog_neg_emote_h" in failing and "counter_quote_nh" in failing
    assert "slur_h" not in failing and "threat_dir_h" not in failing
    # the papers' models beside it: HateCheck Table 1's B-D figure for F1, MHC Table 1's XTC for German
    bd = P.lookup("hatecheck_t1", "B-D")[("derog_neg_emote_h", "accuracy")][0]
    xtc = P.lookup("mhc_t1", "XTC")[("threat_dir_h", "german")][0]
    assert f">{bd:.1f}</td>" in html and f">{xtc:.1f}</td>" in html
    # cells carry the main report's ids and their interval
    assert 'data-cell-id="hatecheck_t1:m:derog_neg_emote_h:accuracy"' in html and "15.0–25.0" in html
    assert 'class="below"' in html
    # the held-out set it was trained on: marked, not shown as a held-out figure
    row = re.search(r"<tr><td class='rowhead'>heldout_davidson2017</td>(.*?)</tr>", html).group(1)
    assert "training data" in row and 'class="seen"' in row
    assert "ab" * 32 in html and "a keyword rule" in html
    # every interval here is 10 points wide: none is marked without a threshold, every one under a 5-point threshold
    assert 'class="too-few"' not in html
    model_page("m", suites, card, files, page, below_mark=50, max_ci_width=5)
    marked = page.read_text()
    assert 'too-few" data-cell-id="hatecheck_t1:m:slur_h:accuracy"' in marked and "Too few cases to compare" in marked


def test_a_suite_outside_the_apis_languages_is_listed_not_run_and_unanswered_cases_are_noted(tmp_path):
    doc = metrics_doc(hatecheck(), {"slur_h": 80.0})
    doc["overall"]["n_unanswered"] = 3
    files = {"score_p_hatecheck": tmp_path / "h.json"}
    files["score_p_hatecheck"].write_text(json.dumps(doc))
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"kind": "http", "base_model": {"ref": "http://127.0.0.1:9/x"}, "identity": {}, "profile": "smoke"}))
    page = tmp_path / "p.html"
    why = "not run: language hi not in the API's languages (en, de)"
    model_page("p", {"score_p_hatecheck": hatecheck()}, card, files, page, below_mark=50, not_run={"mhc_hindi": why})
    html = page.read_text()
    assert re.search(r"<td class='rowhead'>mhc_hindi</td><td class='fail' colspan='6'>not run: language hi not in the API&#x27;s languages", html)
    row = re.search(r"<tr><td class='rowhead'>hatecheck</td>(.*?)</tr>", html).group(1)
    assert "3 unanswered by the API, not scored" in row
