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
    doc = {
        "suite": suite.name,
        "dataset": suite.dataset,
        "language": suite.language,
        "bootstrap": {"resampling_unit": "template" if suite.functional else "case"},
        "overall": {"n": 100, "accuracy": fig(60.0), "macro_f1": fig(55.0), "f1_hateful": fig(50.0), "f1_non_hateful": fig(60.0)},
    }
    if accuracies:
        doc["by_functionality"] = {code: {"n": 10, "accuracy": fig(v)} for code, v in accuracies.items()}
    if seen:
        doc["seen_in_training"] = True
    return doc


def test_the_page_lists_what_fails_beside_the_papers_and_marks_training_data(tmp_path):
    suites = {
        "score_m_hatecheck": hatecheck(),
        "score_m_mhc_german": mhc("german"),
        "score_m_heldout_davidson2017": heldout("davidson2017"),
    }
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
    card.write_text(
        json.dumps(
            {
                "kind": "onnx",
                "base_model": {"description": "a keyword rule"},
                "identity": {"content_sha256": "ab" * 32},
                "trained_on": ["davidson2017"],
                "profile": "smoke",
            }
        )
    )
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
    assert re.search(
        r"<td class='rowhead'>mhc_hindi</td><td class='fail' colspan='6'>not run: language hi not in the API&#x27;s languages", html
    )
    row = re.search(r"<tr><td class='rowhead'>hatecheck</td>(.*?)</tr>", html).group(1)
    assert "3 unanswered by the API, not scored" in row


def test_a_perspective_style_api_has_the_papers_perspective_figures_beside_it(tmp_path):
    """HateCheck Table 2's total accuracy, MHC Table 8's macro F1 in German,
    Italian and Portuguese, Appendix H's held-out Italian: set beside a
    scoring API asked for IDENTITY_ATTACK; none for French (no
    IDENTITY_ATTACK there), none for a classifier of another kind."""
    suites = {
        "score_p_hatecheck": hatecheck(),
        "score_p_mhc_german": mhc("german"),
        "score_p_mhc_italian": mhc("italian"),
        "score_p_mhc_french": mhc("french"),
        "score_p_heldout_haspeede2020": heldout("haspeede2020"),
    }
    files = {}
    for stage, suite in suites.items():
        files[stage] = tmp_path / f"{stage}.json"
        files[stage].write_text(json.dumps(metrics_doc(suite, {"threat_dir_h": 70.0} if suite.functional else None)))
    identity = {
        "url": "https://example.invalid/v1alpha1/comments:analyze",
        "format": "perspective",
        "score": "attributeScores.IDENTITY_ATTACK.summaryScore.value",
        "snapshot": "2026-12",
    }
    card = tmp_path / "card.json"
    card.write_text(
        json.dumps(
            {
                "kind": "http",
                "base_model": {"description": "Perspective"},
                "identity": identity,
                "profile": "smoke",
                "answers": {"snapshot": "2026-12", "snapshot_from": "given (snapshot)"},
            }
        )
    )
    page = tmp_path / "p.html"
    model_page("p", suites, card, files, page, below_mark=50)
    html = page.read_text()

    def row(suite):
        return re.search(rf"<tr><td class='rowhead'>{suite}</td>(.*?)</tr>", html).group(1)

    assert 'data-cell-id="published:hatecheck_t2:Perspective:total:accuracy"' in row("hatecheck") and ">76.6</td>" in row("hatecheck")
    assert 'data-cell-id="published:mhc_t2:Perspective:german:macro_f1"' in row("mhc_german") and ">69.5</td>" in row("mhc_german")
    assert ">65.4</td>" in row("mhc_italian") and "Table 8" in row("mhc_italian")
    assert ">70.7</td>" in row("heldout_haspeede2020") and "Appendix H" in row("heldout_haspeede2020")
    assert "published" not in row("mhc_french")
    assert "Perspective (paper): macro F1" in html and "2026-12 (given (snapshot))" in html
    other = tmp_path / "card_onnx.json"
    other.write_text(json.dumps({"kind": "onnx", "base_model": {"description": "x"}, "identity": {"content_sha256": "ab" * 32}}))
    model_page("p", suites, other, files, page, below_mark=50)
    assert "Perspective (paper): macro F1" not in page.read_text() and "published:mhc_t2:Perspective" not in page.read_text()
