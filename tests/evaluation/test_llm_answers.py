"""score-llm: answers parsed and scored as the GPT-3 detection paper does,
checked against figures computed by hand (in the comments)."""

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
    ("sexist", "sexist", "Yes.", "1"), ("sexist", "sexist", "no", "1"), ("sexist", "not-sexist", "Yes", "1"),
    ("sexist", "not-sexist", "No.", "1"), ("sexist", "not-sexist", "maybe", "1"),
    ("sexist", "sexist", "yes", "2"), ("sexist", "sexist", "sexist.", "2"), ("sexist", "not-sexist", "not-sexist", "2"),
    ("sexist", "not-sexist", "Yes, it is", "2"),
]
# Mixed, one iteration: racist->racist, racist->sexist, sexist->sexist, neither->neither, neither->racist, sexist->"both" (unparsed)
#   acc 3/5 = 60; per class P/R/F1: racist 1/2, 1/2, 1/2; sexist 1/2, 1/1, 2/3; neither 1/1, 1/2, 2/3
#   macro P = (50+50+100)/3 = 66.667, R = (50+100+50)/3 = 66.667, F1 = (50+66.667+66.667)/3 = 61.111
#   paper-style racist (labels racist|neither): r->r TP, r->s FN, n->n TN, n->r FP: 50/50/50/50
#   paper-style sexist (labels sexist|neither): s->s TP, n->n TN, n->r TN: acc 100, P 100, R 100, F1 100
MIXED = [
    ("mixed", "racist", "racist.", "1"), ("mixed", "racist", "Sexist", "1"), ("mixed", "sexist", "sexist, racist", "1"),
    ("mixed", "neither", "neither.", "1"), ("mixed", "neither", "racist", "1"), ("mixed", "sexist", "both", "1"),
]


def frame(rows):
    return pl.DataFrame(rows, schema=["category", "label", "answer", "iteration"], orient="row")


def test_binary_category_per_iteration_then_mean_and_sample_sd():
    m = la.score_frame(frame(SEXIST))["by_category"]["sexist"]
    assert (m["n"], m["unparsed"], m["iterations"]) == (9, 1, 2)
    assert m["accuracy"] == {"mean": 62.5, "sd": pytest.approx(17.677670, abs=1e-5)}  # stdev(50, 75)
    assert m["precision"]["mean"] == pytest.approx(58.333333, abs=1e-5)
    assert m["precision"]["sd"] == pytest.approx(11.785113, abs=1e-5)  # stdev(50, 66.667)
    assert m["recall"] == {"mean": 75.0, "sd": pytest.approx(35.355339, abs=1e-5)}
    assert m["f1"] == {"mean": 65.0, "sd": pytest.approx(21.213203, abs=1e-5)}


def test_mixed_is_macro_over_classes_with_the_papers_per_class_figures():
    m = la.score_frame(frame(MIXED))["by_category"]["mixed"]
    assert (m["n"], m["unparsed"], m["iterations"]) == (6, 1, 1)
    assert m["accuracy"] == {"mean": 60.0, "sd": 0.0}
    assert m["precision"]["mean"] == pytest.approx(66.666667, abs=1e-5)
    assert m["recall"]["mean"] == pytest.approx(66.666667, abs=1e-5)
    assert m["f1"]["mean"] == pytest.approx(61.111111, abs=1e-5)
    assert {k: v["mean"] for k, v in m["by_class"]["racist"].items()} == {"accuracy": 50, "precision": 50, "recall": 50, "f1": 50}
    assert {k: v["mean"] for k, v in m["by_class"]["sexist"].items()} == {"accuracy": 100, "precision": 100, "recall": 100, "f1": 100}


def test_no_iteration_column_means_one_iteration_with_sd_zero(tmp_path):
    path = tmp_path / "answers.csv"
    frame(SEXIST[:5]).drop("iteration").write_csv(path)
    doc = la.score_file(path, tmp_path / "m.json")
    m = doc["by_category"]["sexist"]
    assert m["iterations"] == 1 and m["f1"] == {"mean": 50.0, "sd": 0.0}
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
    proc = subprocess.run([str(BIN / "hatecheck-pipeline"), "score-llm", "--answers", str(path), "--out", str(out)],
                          cwd=REPO, env=env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert set(doc["by_category"]) == {"sexist", "mixed"}
    assert doc["by_category"]["mixed"]["f1"]["mean"] == pytest.approx(61.111111, abs=1e-5)
    missing = subprocess.run([str(BIN / "hatecheck-pipeline"), "score-llm", "--answers", str(tmp_path / "nope.csv"), "--out", str(out)],
                             cwd=REPO, env=env(), capture_output=True, text=True)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr and "answers file not found" in missing.stderr
