"""The GPT-3 detection paper's Appendix B: confusion counts per setting and
category summed over the iterations, from recorded answers (tiny cases whose
tables are known), the paper's transcribed counts (they add up as the paper
says) and the report's table beside them."""

from __future__ import annotations

import re

import polars as pl
import pytest

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.llm import appendix_b_of
from hatecheck_pipeline.evaluation.llm_answers import appendix_b, score_frame
from hatecheck_pipeline.report.llm import appendix_b_table


def yes_no_answers() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "category": ["racist"] * 8 + ["sexist"] * 2,
            "label": ["racist", "racist", "not-racist", "not-racist"] * 2 + ["sexist", "not-sexist"],
            "answer": [
                "Yes",
                "No",
                "Yes",
                "No",  # iteration 1: TP, FN, FP, TN
                "Yes",
                "Yes",
                "No",
                "maybe",  # iteration 2: TP, TP, TN, unparsed (omitted)
                "No",
                "No",
            ],  # sexist, iteration 1: FN, TN
            "iteration": ["1"] * 4 + ["2"] * 4 + ["1"] * 2,
        }
    )


def test_yes_no_counts_are_summed_over_iterations_unparsed_omitted():
    b = appendix_b(score_frame(yes_no_answers())["by_category"], "zero_shot")
    assert b["racist"] == {"all": {"tp": 3, "fp": 1, "fn": 1, "tn": 2, "n": 7}}
    assert b["sexist"] == {"all": {"tp": 0, "fp": 0, "fn": 1, "tn": 1, "n": 2}}
    assert b["overall"] == {"all": {"tp": 3, "fp": 1, "fn": 2, "tn": 3, "n": 9}}  # the "hate speech" table: both pooled


def mixed_answers() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "category": ["mixed"] * 6,
            "label": ["racist", "sexist", "neither"] * 2,
            # set 1: racist TP ("sexist, racist" contains racist), sexist FN, neither -> racist FP / sexist TN
            # set 2: racist FN (out of scope), sexist TP, neither -> TN for both
            "answer": ["sexist, racist", "neither", "racist", "transphobic", "sexist", "neither"],
            "iteration": ["1", "1", "1", "2", "2", "2"],
        }
    )


def test_mixed_counts_per_example_set_and_all_by_the_contains_rule():
    b = appendix_b(score_frame(mixed_answers())["by_category"], "mixed")
    assert b["racist"]["all"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 1, "n": 4}
    assert b["racist"]["by_example_set"] == {
        "1": {"tp": 1, "fp": 1, "fn": 0, "tn": 0, "n": 2},
        "2": {"tp": 0, "fp": 0, "fn": 1, "tn": 1, "n": 2},
    }
    assert b["sexist"]["all"] == {"tp": 1, "fp": 0, "fn": 1, "tn": 2, "n": 4}


PAPER = P.load()["gpt3_detection_appb"]["values"]["GPT-3"]


@pytest.mark.parametrize("setting", ["zero_shot", "one_shot", "few_shot_single"])
def test_papers_hate_speech_tables_are_the_racist_and_sexist_tables_summed(setting):
    r, s, o = (PAPER[f"{setting}:{c}"] for c in ("racist", "sexist", "overall"))
    assert all(o[k] == r[k] + s[k] for k in ("tn", "fp", "fn", "tp"))


def test_papers_counts_agree_with_its_text():
    # section 4.1: sexist 3,231 matches and 2,691 mismatches, racist 3,463 and 2,504; 111 answers omitted of 12,000
    z = {c: PAPER[f"zero_shot:{c}"] for c in ("racist", "sexist")}
    assert (z["sexist"]["tn"] + z["sexist"]["tp"], z["sexist"]["fp"] + z["sexist"]["fn"]) == (3231, 2691)
    assert (z["racist"]["tn"] + z["racist"]["tp"], z["racist"]["fp"] + z["racist"]["fn"]) == (3463, 2504)
    assert 12000 - sum(sum(c.values()) for c in z.values()) == 111
    # section 4.3: racist 3,862 matches / 2,138 mismatches, sexist 4,209 / 1,791
    f = {c: PAPER[f"few_shot_single:{c}"] for c in ("racist", "sexist")}
    assert (f["racist"]["tn"] + f["racist"]["tp"], f["sexist"]["tn"] + f["sexist"]["tp"]) == (3862, 4209)


@pytest.mark.parametrize("setting", ["mixed", "mixed_instruction"])
@pytest.mark.parametrize("category", ["racist", "sexist"])
def test_papers_example_sets_add_up_to_its_all_row(setting, category):
    sets = [PAPER[f"{setting}:{i}:{category}"] for i in range(1, 11)]
    assert all(sum(s.values()) == 180 for s in sets)  # 60 comments of the category + 120 neither per set
    assert {k: sum(s[k] for s in sets) for k in ("tn", "fp", "fn", "tp")} == PAPER[f"{setting}:all:{category}"]


def test_report_table_sets_our_counts_beside_the_papers():
    by_setting = {"zero_shot": {"free": score_frame(yes_no_answers())}, "mixed": {"free": score_frame(mixed_answers())}}
    doc = {"by_setting": by_setting, "appendix_b": appendix_b_of(by_setting)}
    html = appendix_b_table("tiny", doc, "results/llm/tiny/metrics.json", "llm_ethos_tiny", P.load())
    assert re.search(r'data-cell-id="llm:tiny:zero_shot:free:appendix_b:racist:all:tp"[^>]*>3<', html)
    assert re.search(r'data-cell-id="llm:tiny:zero_shot:free:appendix_b:overall:all:fn"[^>]*>2<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_appb:GPT-3:zero_shot_racist:tn"[^>]*>1,688<', html)
    assert re.search(r'data-cell-id="llm:tiny:mixed:free:appendix_b:racist:2:fn"[^>]*>1<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_appb:GPT-3:mixed_all_sexist:fn"[^>]*>127<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_appb:GPT-3:mixed_2_racist:fp"[^>]*>18<', html)
    assert 'data-metrics="results/llm/tiny/metrics.json" data-stage="llm_ethos_tiny"' in html
    # a metrics file written before the counts says to re-run its stage
    assert "re-run its llm_ethos stage" in appendix_b_table("tiny", {"by_setting": by_setting}, "m.json", "s", P.load())
