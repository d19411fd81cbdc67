"""score-llm: answers parsed and scored as the GPT-3 detection paper does,
checked against figures computed by hand (in the comments)."""

import doctest
import json
import subprocess

import polars as pl
import pytest

from conftest import REPO
from hatecheck_pipeline.evaluation import llm_answers as la
from pipeline_utils import BIN, env

# Two iterations of the sexist category.
# it 1: gold sexist -> "Yes." (TP), sexist -> "no" (FN), not -> "Yes" (FP), not -> "No." (TN), not -> "maybe" (unparsed)
#       acc 2/4 = 50, P 1/2 = 50, R 1/2 = 50, F1 50
# it 2: sexist -> "yes" (TP), sexist -> "sexist." (TP), not -> "not-sexist" (TN), not -> "Yes, ..." (FP)
#       acc 3/4 = 75, P 2/3 = 66.667, R 2/2 = 100, F1 2*(2/3)/(5/3) = 80
SEXIST = [
    ("sexist", "sexist", "Yes.", "1"),
    ("sexist", "sexist", "no", "1"),
    ("sexist", "not-sexist", "Yes", "1"),
    ("sexist", "not-sexist", "No.", "1"),
    ("sexist", "not-sexist", "maybe", "1"),
    ("sexist", "sexist", "yes", "2"),
    ("sexist", "sexist", "sexist.", "2"),
    ("sexist", "not-sexist", "not-sexist", "2"),
    ("sexist", "not-sexist", "Yes, it is", "2"),
]
# Mixed-category answers by hand, two example sets (iteration = example set), every case of the
# paper's rule (section 4.4); (row, label, answer, set) -> outcome for racist / sexist:
ROWS = [
    (1, "racist", "racist.", "1"),  # racist TP
    (2, "racist", "sexist, racist", "1"),  # racist TP: the answer contains racist
    (3, "racist", "transphobic", "1"),  # racist FN: out of scope, counted
    (4, "racist", "neither", "1"),  # racist FN
    (5, "racist", "I don't know", "1"),  # racist FN
    (6, "sexist", "sexist and misogynistic", "1"),  # sexist TP
    (7, "sexist", "racist", "1"),  # sexist FN
    (8, "sexist", "both", "1"),  # sexist FN without the instruction; omitted with it
    (9, "neither", "neither.", "1"),  # racist TN, sexist TN
    (10, "neither", "racist", "1"),  # racist FP, sexist TN
    (11, "neither", "sexist, racist", "1"),  # racist FP, sexist FP (never omitted)
    (12, "neither", "hypocritical", "1"),  # TN, TN
    (13, "neither", "", "1"),  # TN, TN (empty answer)
    (14, "racist", "Racist", "2"),  # racist TP (case ignored)
    (15, "sexist", "Sexist.", "2"),  # sexist TP
    (16, "neither", "not sexist", "2"),  # sexist FP (it contains sexist), racist TN
    (17, "racist", "Both.", "1"),  # racist FN without the instruction; omitted with it
    (18, "sexist", "racist and sexist", "2"),  # sexist TP without the instruction; omitted with it
]
# Without the instruction (nothing omitted):
#   racist set 1: rows 1-5, 17, 9-13: TP 2 (1, 2), FN 4 (3, 4, 5, 17), FP 2 (10, 11), TN 3 -> acc 5/11, P 2/4, R 2/6, F1 40
#   sexist set 1: rows 6-8, 9-13: TP 1, FN 2 (7, 8), FP 1 (11), TN 4 -> acc 5/8 = 62.5, P 50, R 33.333, F1 40
#   racist set 2: rows 14, 16: TP 1, TN 1 -> 100 / 100 / 100 / 100
#   sexist set 2: rows 15, 16, 18: TP 2, FP 1 -> acc 66.667, P 66.667, R 100, F1 80
#   pooled racist: TP 3, FN 4, FP 2, TN 4 (13 answers); pooled sexist: TP 3, FN 2, FP 2, TN 4 (11 answers)
# With the instruction rows 8, 17, 18 are omitted:
#   racist set 1: TP 2, FN 3, FP 2, TN 3 -> acc 50, P 50, R 40, F1 44.444
#   sexist set 1: TP 1, FN 1, FP 1, TN 4 -> acc 71.429, P 50, R 50, F1 50
#   sexist set 2: TP 1, FP 1 -> acc 50, P 50, R 100, F1 66.667
MIXED = [("mixed", label, answer, it) for _, label, answer, it in ROWS]


def frame(rows):
    return pl.DataFrame(rows, schema=["category", "label", "answer", "iteration"], orient="row")


def test_binary_category_per_iteration_then_mean_and_sample_sd():
    m = la.score_frame(frame(SEXIST))["by_category"]["sexist"]
    assert (m["n"], m["unparsed"], m["iterations"]) == (9, 1, 2)
    both = {"defined": 2, "iterations": 2}
    assert m["accuracy"] == {"mean": 62.5, "sd": pytest.approx(17.677670, abs=1e-5), **both}  # stdev(50, 75)
    assert m["precision"]["mean"] == pytest.approx(58.333333, abs=1e-5)
    assert m["precision"]["sd"] == pytest.approx(11.785113, abs=1e-5)  # stdev(50, 66.667)
    assert m["recall"] == {"mean": 75.0, "sd": pytest.approx(35.355339, abs=1e-5), **both}
    assert m["f1"] == {"mean": 65.0, "sd": pytest.approx(21.213203, abs=1e-5), **both}


def test_a_category_without_positives_has_undefined_scores_left_out_of_the_mean():
    # iteration 1: the three sexist prompts all negative, answered "no": TP = FP = FN = 0
    # iteration 2: sexist -> yes (TP), not -> no (TN): P = R = F1 = 100
    rows = [("sexist", "not-sexist", "No.", "1")] * 3 + [("sexist", "sexist", "yes", "2"), ("sexist", "not-sexist", "no", "2")]
    m = la.score_frame(frame(rows))["by_category"]["sexist"]
    assert m["accuracy"]["mean"] == 100.0 and m["accuracy"]["defined"] == 2
    for metric in ("precision", "recall", "f1"):
        assert m[metric]["mean"] == 100.0, metric  # the undefined iteration is not averaged in as 0
        assert (m[metric]["defined"], m[metric]["iterations"]) == (1, 2)
    only = la.score_frame(frame(rows[:3]))["by_category"]["sexist"]
    assert only["accuracy"]["mean"] == 100.0
    for metric in ("precision", "recall", "f1"):
        assert only[metric]["mean"] is None and only[metric]["sd"] is None, metric
        assert only[metric]["undefined"]
    # a yes on a negative-only set: precision 0 is defined; recall and F1 are not (nothing to find), never 0
    fp = la.metrics_from_counts(0, 1, 0, 2)
    assert (fp["precision"], fp["recall"], fp["f1"]) == (0.0, None, None) and set(fp["undefined"]) == {"recall", "f1"}
    # gold positives and no yes: precision undefined, recall and F1 are 0 (every positive missed)
    fn = la.metrics_from_counts(0, 0, 2, 1)
    assert (fn["precision"], fn["recall"], fn["f1"]) == (None, 0.0, 0.0) and set(fn["undefined"]) == {"precision"}


def test_mixed_macro_is_over_the_classes_where_the_figure_is_defined():
    # no comment labelled sexist and no answer naming sexist: sexist P, R, F1 undefined
    rows = [("mixed", "racist", "racist", "1"), ("mixed", "neither", "neither", "1")]
    m = la.score_frame(frame(rows))["by_category"]["mixed"]
    assert m["f1"]["mean"] == 100.0  # racist 100, neither 100; sexist left out, not 0 (which would give 66.7)
    pooled = m["by_class"]["sexist"]["pooled"]
    assert pooled["f1"] is None and pooled["recall"] is None and pooled["undefined"]["f1"]
    assert m["by_class"]["sexist"]["f1"]["mean"] is None


def _class(m, cls, it):
    return {k: m["by_class"][cls]["per_iteration"][it][k] for k in ("tp", "fp", "fn", "tn", "accuracy", "precision", "recall", "f1")}


def test_mixed_without_instruction_is_the_papers_contains_rule_case_by_case(tmp_path):
    path = tmp_path / "answers.csv"
    frame(MIXED).write_csv(path)
    m = la.score_file(path, tmp_path / "m.json")["by_category"]["mixed"]
    assert (m["n"], m["omitted"], m["iterations"]) == (18, 0, 2)
    approx = lambda *v: pytest.approx(v, abs=1e-4)  # noqa: E731
    r1 = _class(m, "racist", "1")
    assert (r1["tp"], r1["fp"], r1["fn"], r1["tn"]) == (2, 2, 4, 3)
    assert (r1["accuracy"], r1["precision"], r1["recall"], r1["f1"]) == approx(100 * 5 / 11, 50, 100 / 3, 40)
    s1 = _class(m, "sexist", "1")
    assert (s1["tp"], s1["fp"], s1["fn"], s1["tn"]) == (1, 1, 2, 4)
    assert (s1["accuracy"], s1["precision"], s1["recall"], s1["f1"]) == approx(62.5, 50, 100 / 3, 40)
    r2, s2 = _class(m, "racist", "2"), _class(m, "sexist", "2")
    assert (r2["tp"], r2["fp"], r2["fn"], r2["tn"], r2["f1"]) == (1, 0, 0, 1, 100)
    assert (s2["tp"], s2["fp"], s2["fn"], s2["tn"]) == (2, 1, 0, 0)
    assert (s2["accuracy"], s2["precision"], s2["recall"], s2["f1"]) == approx(200 / 3, 200 / 3, 100, 80)
    # the "All" row: pooled confusion counts; the mean is over the example sets
    pooled = m["by_class"]["racist"]["pooled"]
    assert (pooled["tp"], pooled["fp"], pooled["fn"], pooled["tn"]) == (3, 2, 4, 4)
    assert pooled["f1"] == pytest.approx(2 * 0.6 * 3 / 7 / (0.6 + 3 / 7) * 100, abs=1e-4)
    assert m["by_class"]["racist"]["f1"]["mean"] == pytest.approx(70.0, abs=1e-4)
    # Figure 1's share of answers naming exactly the label: set 1 3/14, set 2 2/4
    assert m["accuracy"]["mean"] == pytest.approx((300 / 14 + 50) / 2, abs=1e-4)
    # Tables 5 and 6: distinct answers and label x answer, every answer counted
    assert m["answers"]["racist"] == 4 and m["answers"]["both"] == 2 and m["answers"][""] == 1
    assert sum(m["answers"].values()) == 18
    assert m["confusion"]["sexist"]["racist and sexist"] == 1 and m["confusion"]["neither"]["sexist, racist"] == 1
    # section 4.4's out-of-scope answers: anything but racist / sexist / neither (rows 2, 3, 5, 6, 8, 11, 12, 13, 16,
    # 17, 18), counted and still scored by the contains rule
    assert m["out_of_scope"] == 11 and m["out_of_scope_share"] == pytest.approx(100 * 11 / 18, abs=1e-4)
    assert m["distinct"] == len(m["answers"]) == 12  # 'racist.', 'Racist' and 'racist' are one answer, as are 'Both.' and 'both'


def test_mixed_with_instruction_omits_only_the_both_answers(tmp_path):
    path = tmp_path / "answers.csv"
    pl.DataFrame(MIXED, schema=["category", "label", "answer", "iteration"], orient="row").with_columns(
        pl.lit("mixed_instruction").alias("setting")
    ).write_csv(path)
    m = la.score_file(path, tmp_path / "m.json")["by_category"]["mixed_instruction"]
    assert (m["n"], m["omitted"]) == (18, 3)  # rows 8, 17, 18
    approx = lambda *v: pytest.approx(v, abs=1e-4)  # noqa: E731
    r1 = _class(m, "racist", "1")
    assert (r1["tp"], r1["fp"], r1["fn"], r1["tn"]) == (2, 2, 3, 3)
    assert (r1["accuracy"], r1["precision"], r1["recall"], r1["f1"]) == approx(50, 50, 40, 400 / 9)
    s1 = _class(m, "sexist", "1")
    assert (s1["tp"], s1["fp"], s1["fn"], s1["tn"]) == (1, 1, 1, 4)  # "sexist, racist" on row 11 still a FP
    assert (s1["accuracy"], s1["f1"]) == approx(500 / 7, 50)
    s2 = _class(m, "sexist", "2")
    assert (s2["tp"], s2["fp"], s2["fn"], s2["tn"], s2["f1"]) == (1, 1, 0, 0, pytest.approx(200 / 3, abs=1e-4))
    # omitted answers stay in the distinct-answer and confusion tables (Table 6 shows them)
    assert m["confusion"]["sexist"]["racist and sexist"] == 1 and m["confusion"]["racist"]["both"] == 1


def test_mixed_rows_of_both_settings_in_one_file_are_scored_apart():
    rows = frame(MIXED).with_columns(pl.lit("mixed").alias("setting"))
    both = pl.concat([rows, rows.with_columns(pl.lit("mixed_instruction").alias("setting"))])
    doc = la.score_frame(both)
    out = doc["by_category"]
    assert out["mixed"]["omitted"] == 0 and out["mixed_instruction"]["omitted"] == 3
    # section 4.5's contrast on the same answers: out of scope alike (the omitted ones are still out of scope);
    # Figure 1's share with the instruction: set 1 3 of 12 (rows 8, 17 omitted), set 2 2 of 3 (row 18 omitted)
    c = doc["instruction_contrast"]
    assert c["without"]["out_of_scope"] == c["with"]["out_of_scope"] == 11 and c["change"]["out_of_scope_share"] == 0
    assert (c["without"]["omitted"], c["with"]["omitted"], c["with"]["distinct"]) == (0, 3, 12)
    assert c["without"]["correct_share"] == pytest.approx((300 / 14 + 50) / 2, abs=1e-4)
    assert c["with"]["correct_share"] == pytest.approx((25 + 200 / 3) / 2, abs=1e-4)
    assert c["change"]["correct_share"] == pytest.approx((25 + 200 / 3) / 2 - (300 / 14 + 50) / 2, abs=1e-4)
    assert c["change"]["f1_racist"] == pytest.approx(
        out["mixed_instruction"]["by_class"]["racist"]["pooled"]["f1"] - out["mixed"]["by_class"]["racist"]["pooled"]["f1"], abs=1e-4
    )
    assert "instruction_contrast" not in la.score_frame(rows)  # one mixed setting: nothing to contrast


def test_overall_pools_racist_and_sexist_prompts_per_iteration():
    racist = [("racist", "racist", "yes", "1"), ("racist", "not-racist", "yes", "1"), ("racist", "racist", "no", "2")]
    sexist = [("sexist", "sexist", "Yes.", "1"), ("sexist", "not-sexist", "no", "1"), ("sexist", "sexist", "yes", "2")]
    m = la.score_frame(frame(racist + sexist))["by_category"]["overall"]
    # it 1: TP 2, FP 1, TN 1 -> acc 75, P 66.667, R 100, F1 80; it 2: TP 1, FN 1 -> acc 50, P 100, R 50, F1 66.667
    assert m["iterations"] == 2 and m["accuracy"]["mean"] == 62.5
    assert m["f1"]["mean"] == pytest.approx((80 + 200 / 3) / 2, abs=1e-4)


def test_no_iteration_column_means_one_iteration_with_sd_zero(tmp_path):
    path = tmp_path / "answers.csv"
    frame(SEXIST[:5]).drop("iteration").write_csv(path)
    doc = la.score_file(path, tmp_path / "m.json")
    m = doc["by_category"]["sexist"]
    assert m["iterations"] == 1 and m["f1"] == {"mean": 50.0, "sd": 0.0, "defined": 1, "iterations": 1}
    assert json.loads((tmp_path / "m.json").read_text())["by_category"]["sexist"]["unparsed"] == 1


def test_a_label_that_does_not_fit_its_category_names_file_row_and_rule(tmp_path):
    path = tmp_path / "answers.csv"
    frame([("racist", "racist", "yes", "1"), ("racist", "sexist", "no", "1")]).write_csv(path)
    with pytest.raises(la.AnswersError, match=r"answers.csv: row 2: label 'sexist' is not a gold label of category 'racist'"):
        la.read_answers(path)


def test_score_llm_command_writes_the_metrics_file(tmp_path):
    path = tmp_path / "answers.csv"
    frame(SEXIST + MIXED).write_csv(path)
    out = tmp_path / "metrics.json"
    proc = subprocess.run(
        [str(BIN / "hatecheck-pipeline"), "score-llm", "--answers", str(path), "--out", str(out)],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert set(doc["by_category"]) == {"sexist", "mixed"}
    assert doc["by_category"]["mixed"]["by_class"]["racist"]["per_iteration"]["1"]["f1"] == pytest.approx(40, abs=1e-4)
    missing = subprocess.run(
        [str(BIN / "hatecheck-pipeline"), "score-llm", "--answers", str(tmp_path / "nope.csv"), "--out", str(out)],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and "Traceback" not in missing.stderr and "answers file not found" in missing.stderr


def test_docstring_examples_run():
    result = doctest.testmod(la)
    assert result.attempted >= 8 and result.failed == 0
