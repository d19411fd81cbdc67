"""HateCheck section 2.5 (validation of the gold labels): Fleiss' kappa on
known examples, the 4-of-5 rule and the template exclusion on a hand-made
table, and the paper's figures from the released annotation file."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from hatecheck_pipeline.core.files import InputError
from hatecheck_pipeline.evaluation import agreement
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.paper_tables import hatecheck_agreement_section

# Wikipedia's "Fleiss' kappa" example: 10 subjects, 14 raters, 5 categories; kappa = 0.210.
WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_of_the_wikipedia_example():
    # P_bar = 0.378022, P_e = 0.213491 -> (0.378022 - 0.213491) / (1 - 0.213491) = 0.209930
    assert agreement.fleiss_kappa(WIKIPEDIA) == pytest.approx(0.209930, abs=1e-6)


def test_fleiss_kappa_undefined_when_every_rating_is_one_category_and_rejects_unequal_raters():
    assert agreement.fleiss_kappa([[5, 0], [5, 0]]) is None
    with pytest.raises(ValueError, match="same number"):
        agreement.fleiss_kappa([[5, 0], [3, 1]])


H, N = "hateful", "non-hateful"


def table() -> pl.DataFrame:
    """4 cases, 2 templates, 6 annotators (5 per case, one empty column each)."""
    rows = [  # case, template, functionality, gold, label_1..label_6 ('' = not assigned)
        ("1", "A", "f_one", H, [H, H, H, H, H, ""]),
        ("2", "A", "f_one", H, [H, H, "", H, N, N]),  # 3 of 5 agree: below 4 of 5
        ("3", "B", "f_two", N, [N, "", N, N, N, H]),  # 4 of 5
        ("4", "B", "f_two", H, ["", H, H, H, H, H]),
    ]
    return pl.DataFrame(
        [
            {
                "case_id": c,
                "templ_id": t,
                "functionality": f,
                "label_gold": g,
                **{f"label_{i}": (labels[i - 1] if i <= 6 else "") for i in range(1, 11)},
            }
            for c, t, f, g, labels in rows
        ]
    )


def test_agreement_of_a_hand_made_table():
    cases = agreement.annotations_of(table())
    doc = agreement.agreement(cases, ["3", "4"])
    # counts (hateful, non-hateful): (5,0) (3,2) (1,4) (5,0); P_i = 1, .4, .6, 1 -> P_bar .75;
    # p = (.7, .3) -> P_e = .58; kappa = .17 / .42 = 0.404762
    assert doc["fleiss_kappa"] == pytest.approx(0.4048, abs=1e-4)
    assert (doc["n_cases"], doc["annotators"], doc["annotators_per_case"]) == (4, 6, 5)
    assert (doc["n_agree_4of5"], doc["pct_agree_4of5"], doc["n_below_4of5"]) == (3, 75.0, 1)
    assert [c["case_id"] for c in doc["below_4of5"]] == ["2"]
    e = doc["exclusion"]
    assert (e["templates"], e["n_excluded"], e["n_kept"], e["matches_release"]) == (["A"], 2, 2, True)
    assert doc["per_functionality"] == {
        "f_one": {"n_cases": 2, "n_agree_4of5": 1, "pct_agree_4of5": 50.0, "pct_labels_agreeing": 80.0, "n_released": 0},
        "f_two": {"n_cases": 2, "n_agree_4of5": 2, "pct_agree_4of5": 100.0, "pct_labels_agreeing": 90.0, "n_released": 2},
    }
    # a release lacking case 4 is named as kept by the rule but not released
    other = agreement.agreement(cases, ["3"])["exclusion"]
    assert other["matches_release"] is False and [c["case_id"] for c in other["kept_not_released"]] == ["4"]
    assert other["released_not_kept"] == []


def test_a_label_outside_the_two_names_the_case():
    bad = table().with_columns(pl.when(pl.col("case_id") == "3").then(pl.lit("offensive")).otherwise(pl.col("label_1")).alias("label_1"))
    with pytest.raises(InputError, match="case 3: labels \\['offensive'\\]"):
        agreement.annotations_of(bad)


def test_section_25_from_the_released_files(mirror, tmp_path):
    out = tmp_path / "metrics.json"
    agreement.hatecheck_agreement(mirror / "hatecheck/all_annotations.csv", mirror / "hatecheck/test_suite_cases.csv", out)
    doc = json.loads(out.read_text())
    paper = P.load()["hatecheck_s25"]["values"]["annotators"]["all"]
    assert round(doc["fleiss_kappa"], 2) == paper["fleiss_kappa"] == 0.93
    assert (doc["n_cases"], doc["annotators"], doc["annotators_per_case"]) == (3901, 10, 5)
    assert (doc["n_agree_4of5"], round(doc["pct_agree_4of5"], 1), doc["n_below_4of5"]) == (3879, 99.4, 22)
    e = doc["exclusion"]
    # the rule as stated excludes 154 cases of 19 templates; the release lacks 19 more (template 822 whole, case 3081 of template 745)
    assert (len(e["templates"]), e["n_excluded"], e["n_kept"], e["n_released"]) == (19, 154, 3747, 3728)
    assert e["matches_release"] is False and e["released_not_kept"] == []
    assert [c["case_id"] for c in e["kept_not_released"]] == ["3081", *map(str, range(3488, 3506))]
    assert {c["templ_id"] for c in e["kept_not_released"]} == {"745", "822"}
    assert e["n_excluded"] + len(e["kept_not_released"]) == paper["n_excluded"] == 173
    assert sum(f["n_released"] for f in doc["per_functionality"].values()) == 3728
    html = hatecheck_agreement_section(doc, str(out), P.load())
    assert (
        'data-cell-id="hatecheck_s25:all:fleiss_kappa"' in html
        and 'data-cell-id="published:hatecheck_s25:annotators:all:fleiss_kappa"' in html
    )
    assert "does not give the released suite" in html and "template 822 (spell_space_del_h)" in html
    assert re.search(r'data-cell-id="hatecheck_s25:spell_space_del_h:n_released"[^>]*>141<', html)
    assert doc["per_functionality"]["spell_space_del_h"]["n_cases"] == 173


def test_section_not_run_says_so():
    assert "hatecheck_agreement stage has not run" in hatecheck_agreement_section(None, "results/x.json", P.load())


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(agreement)
    assert result.attempted > 0 and result.failed == 0
