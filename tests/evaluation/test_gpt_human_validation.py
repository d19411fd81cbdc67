"""GPT-HateCheck's human validation (Table 7): the stratified export, the
checks on the returned file, Table 7's figures and Fleiss' kappa on a
hand-computed example, and the whole round trip export -> fill -> read
through the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from hatecheck_pipeline.core.files import InputError
from hatecheck_pipeline.evaluation import gpt_human as H

FUNCS = ["derog_neg_emote_h", "slur_homonym_nh", "profanity_nh"]


def generated(n_per_cell: int = 5):
    """Kept and rejected tables of a validate stage: three functionalities
    x (women, trans people) and profanity_nh without a target; every
    second case rejected."""
    rows = []
    for func in FUNCS:
        for target in [None] if func == "profanity_nh" else ["women", "trans people"]:
            for k in range(n_per_cell):
                rows.append(
                    {
                        "id": f"gpt-english-{len(rows)}",
                        "text": f"{func} {target} {k}",
                        "functionality": func,
                        "target_ident": target,
                        "label": "hateful" if func.endswith("_h") else "non-hateful",
                    }
                )
    frame = pl.DataFrame(rows)
    kept = frame.filter(pl.int_range(pl.len()) % 2 == 0)
    rejected = frame.filter(pl.int_range(pl.len()) % 2 == 1).with_columns(pl.lit("identity").alias("failed_test"))
    return kept, rejected


# -------------------------------------------------------- export


def test_sample_is_every_case_of_the_papers_targets_by_default_and_a_seeded_draw_per_cell():
    cands = H.candidates_of(*generated())
    assert cands.height == 25 and cands["nli_kept"].sum() == 13
    every = H.sample_cases(cands)  # trans people (3 functionalities... 2 targeted) + none: 2 x 5 + 5
    assert every.height == 15
    assert set(every["target"]) == {"trans people", "none"}
    drawn = H.sample_cases(cands, per_cell=2, seed=1)
    counts = drawn.group_by(["functionality", "target"]).len().sort("functionality", "target")
    assert counts.rows() == [("derog_neg_emote_h", "trans people", 2), ("profanity_nh", "none", 2), ("slur_homonym_nh", "trans people", 2)]
    assert H.sample_cases(cands, per_cell=2, seed=1).equals(drawn)  # seeded
    assert not H.sample_cases(cands, per_cell=2, seed=2)["id"].to_list() == drawn["id"].to_list()
    # the input's row order does not change the sample
    assert H.sample_cases(cands.reverse(), per_cell=2, seed=1)["id"].to_list() == drawn["id"].to_list()
    women = H.sample_cases(cands, targets=("women",))
    assert women.height == 10 and set(women["target"]) == {"women"}


def test_export_writes_blank_columns_per_annotator_a_key_apart_and_the_guidelines(tmp_path):
    out = tmp_path / "to_annotate.csv"
    doc = H.export(H.candidates_of(*generated()), out, annotators=3, seed=0)
    assert doc["cases"] == 15 and doc["cells"] == 3
    frame = pl.read_csv(out, infer_schema_length=0)
    assert frame.columns == [
        "case_id",
        "functionality",
        "functionality_description",
        "target",
        "text",
        "hateful_1",
        "hateful_2",
        "hateful_3",
        "consistent_1",
        "consistent_2",
        "consistent_3",
        "consistent_expert",
    ]
    assert "label" not in frame.columns and "nli_kept" not in frame.columns  # annotators do not see the answer
    assert frame.filter(pl.col("functionality") == "slur_homonym_nh")["functionality_description"][0] == "F8: Non-hateful homonyms of slurs"
    assert all(v is None or v == "" for c in frame.columns[5:] for v in frame[c])
    key = pl.read_csv(H.key_path(out))
    assert key.columns == list(H.KEY_COLUMNS) and key.height == 15
    text = H.readme_path(out).read_text("utf-8")
    assert "how hateful it is to the target group" in text and "consistent with the given functionality" in text
    assert "5 (Extremely hateful. Should be censored)" in text


# -------------------------------------------------------- Table 7 on a hand-computed example

# Four cases, three annotators.            binarised (>3)   mean   label from mean  intended  agrees
#  c1 [5, 5, 4] yes yes yes  expert yes    [3 h, 0 nh]      4.67   hateful          hateful   yes
#  c2 [1, 2, 1] yes no  yes  expert yes    [0, 3]           1.33   non-hateful      non-h.    yes
#  c3 [5, 4, 2] no  no  yes  expert no     [2, 1]           3.67   hateful          hateful   yes
#  c4 [1, 1, 4] no  no  yes  expert yes    [1, 2]           2.00   non-hateful      hateful   no   (rejected by NLI)
# Hateful kappa: P_i = 1, 1, 1/3, 1/3 -> P_bar = 2/3; p_h = 6/12 -> P_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
# Consistency: counts [3,0] [2,1] [1,2] [1,2]: P_i = 1, 1/3, 1/3, 1/3 -> P_bar = 1/2;
#   p_yes = 7/12 -> P_e = (49 + 25) / 144 = 74/144; kappa = (72/144 - 74/144) / (70/144) = -1/35.
# Majority consistent: yes, yes, no, no. All three agree: hateful c1, c2 (50%); consistency c1 (25%).
# GPT-HC (c1-c3): hateful 3/3, func_crowd 2/3, expert 2/3, valid 2/3.
# GPT-HC -filter (all): hateful 3/4, func_crowd 2/4, expert 3/4, valid 2/4.
HAND = [
    ("c1", "hateful", True, [5, 5, 4], ["yes", "yes", "yes"], "yes"),
    ("c2", "non-hateful", True, [1, 2, 1], ["yes", "no", "yes"], "yes"),
    ("c3", "hateful", True, [5, 4, 2], ["no", "no", "yes"], "no"),
    ("c4", "hateful", False, [1, 1, 4], ["no", "no", "yes"], "yes"),
]


def write_hand(tmp_path: Path, expert: bool = True) -> tuple[Path, Path]:
    returned, key = tmp_path / "back.csv", tmp_path / "back.key.csv"
    with returned.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "case_id",
                "functionality",
                "functionality_description",
                "target",
                "text",
                "hateful_1",
                "hateful_2",
                "hateful_3",
                "consistent_1",
                "consistent_2",
                "consistent_3",
                "consistent_expert",
            ]
        )
        for cid, _, _, scores, votes, exp in HAND:
            w.writerow([cid, "derog_impl_h", "F4", "trans people", "t", *scores, *votes, exp if expert else ""])
    with key.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(H.KEY_COLUMNS)
        for cid, label, kept, *_ in HAND:
            w.writerow([cid, "derog_impl_h", "trans people", label, "true" if kept else "false"])
    return returned, key


def test_table7_of_a_hand_computed_example(tmp_path):
    doc = H.table7(H.read_annotations(*write_hand(tmp_path)), {"values": {"GPT-3.5": {"GPT-HC": {"hateful": 92.65}}}})
    ours = doc["ours"]
    assert ours["annotators_per_case"] == 3 and ours["cases"] == 4
    assert ours["agreement"]["hateful"] == {"fleiss_kappa": pytest.approx(1 / 3, abs=1e-4), "all_agree_pct": 50.0}
    assert ours["agreement"]["functionality"] == {"fleiss_kappa": pytest.approx(-1 / 35, abs=1e-4), "all_agree_pct": 25.0}
    assert ours["rows"]["GPT-HC"] == {"n": 3, "hateful": 100.0, "func_crowd": 66.67, "func_expert": 66.67, "valid": 66.67}
    assert ours["rows"]["GPT-HC -filter"] == {"n": 4, "hateful": 75.0, "func_crowd": 50.0, "func_expert": 75.0, "valid": 50.0}
    assert doc["paper"]["values"]["GPT-3.5"]["GPT-HC"]["hateful"] == 92.65


def test_no_expert_column_gives_no_expert_figure(tmp_path):
    ours = H.table7(H.read_annotations(*write_hand(tmp_path, expert=False)))["ours"]
    assert ours["rows"]["GPT-HC"]["func_expert"] is None
    assert ours["rows"]["GPT-HC"]["hateful"] == 100.0


def test_hateful_label_is_the_mean_above_three_and_a_tie_is_not_a_majority():
    assert H.hateful_label([3, 3, 4]) == "hateful"  # mean 3.33
    assert H.hateful_label([3, 3, 3]) == "non-hateful"  # exactly 3 is not above
    assert H.majority([True, False]) is False and H.majority([True, True, False]) is True


# -------------------------------------------------------- bad returned files: one line naming file, line, rule


def edit(path: Path, line: int, column: str, value: str) -> None:
    rows = list(csv.DictReader(path.open(newline="")))
    header = list(rows[0])
    rows[line - 2][column] = value
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, header)
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize(
    "line, column, value, message",
    [
        (3, "hateful_2", "", r"back\.csv: line 3: hateful_2 = '' \(rule: a hateful score 1-5"),
        (4, "hateful_1", "6", r"back\.csv: line 4: hateful_1 = '6' \(rule: a hateful score 1-5"),
        (2, "consistent_3", "maybe", r"back\.csv: line 2: consistent_3 = 'maybe' \(rule: yes or no"),
        (5, "consistent_expert", "", r"back\.csv: line 5: consistent_expert = '' \(rule: yes or no, the expert column is filled"),
        (3, "case_id", "c9", r"back\.csv: line 3: case_id 'c9' is not in the answer key back\.key\.csv"),
        (3, "case_id", "c1", r"back\.csv: line 3: case_id c1 repeats line 2 \(rule: one row per case\)"),
    ],
)
def test_a_bad_returned_file_is_one_line_naming_file_line_and_rule(tmp_path, line, column, value, message):
    returned, key = write_hand(tmp_path)
    edit(returned, line, column, value)
    with pytest.raises(InputError, match=message) as err:
        H.read_annotations(returned, key)
    assert "\n" not in str(err.value)


def test_a_missing_row_and_a_missing_column_are_errors(tmp_path):
    returned, key = write_hand(tmp_path)
    lines = returned.read_text().splitlines()
    returned.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(InputError, match=r"1 case\(s\) of the answer key missing, e.g. \['c4'\]"):
        H.read_annotations(returned, key)
    returned.write_text("case_id,hateful_1,consistent_1\nc1,5,yes\n")
    with pytest.raises(InputError, match=r"line 1: columns .* missing"):
        H.read_annotations(returned, key)


# -------------------------------------------------------- the round trip through the CLI


def test_round_trip_export_fill_read_through_the_cli(tmp_path):
    from hatecheck_pipeline.cli.app import app

    kept, rejected = generated()
    kept.write_parquet(tmp_path / "table.parquet")
    rejected.write_parquet(tmp_path / "rejected.parquet")
    out = tmp_path / "sample.csv"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "human-validation",
            "export",
            "--out",
            str(out),
            "--kept",
            str(tmp_path / "table.parquet"),
            "--rejected",
            str(tmp_path / "rejected.parquet"),
            "--per-cell",
            "4",
            "--seed",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "12 cases" in res.output
    # annotators: every hateful case scored 5,5,1 (mean 3.67: hateful), every non-hateful 1,1,5 (2.33: non-hateful);
    # consistent yes,yes,no on kept... they cannot see it: yes,yes,no on every row, the expert no on profanity_nh only.
    rows = list(csv.DictReader(out.open(newline="")))
    for r in rows:
        hateful = r["functionality"].endswith("_h")
        r.update(
            hateful_1="5" if hateful else "1",
            hateful_2="5" if hateful else "1",
            hateful_3="1" if hateful else "5",
            consistent_1="yes",
            consistent_2="yes",
            consistent_3="no",
            consistent_expert="no" if r["functionality"] == "profanity_nh" else "yes",
        )
    back = tmp_path / "returned.csv"
    with back.open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = runner.invoke(app, ["human-validation", "read", "--annotations", str(back), "--out", str(tmp_path / "t7.json")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "t7.json").read_text())
    ours = doc["ours"]
    # 12 cases, 4 per cell: every hateful label agrees; all consistent by majority; expert no on 4 of 12
    assert ours["rows"]["GPT-HC -filter"] == {"n": 12, "hateful": 100.0, "func_crowd": 100.0, "func_expert": 66.67, "valid": 100.0}
    # every case 2 vs 1 on both tasks: P_bar = 1/3. Hateful: 4 hateful cases (2 h each) + 8 non-hateful (1 h each)
    # -> p_h = 16/36 = 4/9, P_e = 16/81 + 25/81 = 41/81, kappa = (27/81 - 41/81) / (40/81) = -0.35;
    # consistency p_yes = 2/3 -> P_e = 5/9, kappa = (1/3 - 5/9) / (4/9) = -1/2
    assert ours["agreement"]["hateful"]["fleiss_kappa"] == pytest.approx(-0.35, abs=1e-4)
    assert ours["agreement"]["functionality"]["fleiss_kappa"] == pytest.approx(-0.5, abs=1e-4)
    assert ours["agreement"]["hateful"]["all_agree_pct"] == 0.0
    key = pl.read_csv(H.key_path(out))
    assert ours["rows"]["GPT-HC"]["n"] == key["nli_kept"].sum()
    assert doc["paper"]["agreement"]["hateful"]["fleiss_kappa"] == 0.63
    assert doc["paper"]["values"]["GPT-3.5"]["GPT-HC"] == {"hateful": 92.65, "func_crowd": 78.57, "func_expert": 88.57}
    # a broken return through the CLI: exit 1 and one line
    rows[0]["hateful_1"] = "x"
    with back.open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = runner.invoke(app, ["human-validation", "read", "--annotations", str(back), "--out", str(tmp_path / "t7.json")])
    assert res.exit_code != 0
    assert "returned.csv: line 2: hateful_1 = 'x'" in str(res.exception or res.output)
