"""The misspelling and censorship test (GPT-3 detection paper, section 5,
Appendix C): the selection and edits of Table 22 on a synthetic ETHOS-like
table, the changed classifications counted by hand, the stage end to end
against the loopback fake endpoint (temperature 0, both settings) and its
report subsection with lineage next to the paper's Table 23 figures."""

import json
import re

import polars as pl
import pytest
from conftest import REPO
from fake_openai import fake_chat_server

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.data.labels import HATEFUL
from hatecheck_pipeline.evaluation import llm_misspelling as ms
from hatecheck_pipeline.evaluation.published import load
from hatecheck_pipeline.report.llm_misspelling import misspelling_section

PUBLISHED = REPO / "src/hatecheck_pipeline/resources/published.yaml"
EDITS = [("fuck", "fck"), ("fuck", "f*ck"), ("kill", "k1ll"), ("die", "dye")]


def table():
    rows = [  # id, text, race, gender, hateful
        ("e-1", "no profanity here", 0.9, 0.0, True),
        ("e-2", "Fuck them, kill them all", 0.8, 0.0, True),
        ("e-3", "they should die", 0.7, 0.0, True),
        ("e-4", "FUCK is upper case here, not selected", 0.6, 0.0, True),  # case-sensitive selection (authors' code)
        ("e-5", "women: kill and fuck", 0.0, 0.9, True),
        ("e-6", "women cannot drive", 0.0, 0.8, True),
        ("e-7", "fuck this kill", 0.9, 0.0, False),  # not hateful: in no pool
    ]
    return pl.DataFrame(
        [
            {"id": i, "text": t, "race": r, "gender": g, "label": HATEFUL if h else "non-hateful", "is_hate": 1.0 if h else 0.0}
            for i, t, r, g, h in rows
        ]
    )


def test_selection_order_versions_and_one_shot_examples():
    texts = ms.build_texts(table(), 0.5, EDITS, None)
    racist = texts.filter(pl.col("category") == "racist")
    # the comments with 'fuck' first, then 'kill', then 'die' (each once); e-4 not selected (upper case only)
    assert racist.filter(pl.col("status") == "unedited")["ethos_id"].to_list() == ["e-2", "e-3"]
    e2 = racist.filter(pl.col("ethos_id") == "e-2")
    assert e2["edit"].to_list() == [None, "fuck -> fck", "fuck -> f*ck", "kill -> k1ll"]
    assert e2["text"].to_list()[1] == "fck them, kill them all"  # every occurrence, case-insensitive
    # one-shot example: the comment_id-th racist comment without profanity, the same for every version
    assert set(racist["example"]) == {"no profanity here", "FUCK is upper case here, not selected"}
    assert racist.filter(pl.col("comment_id") == 1)["example"].to_list() == ["FUCK is upper case here, not selected"] * 2
    sexist = texts.filter(pl.col("category") == "sexist")
    assert sexist["text"].to_list() == ["women: kill and fuck", "women: kill and fck", "women: kill and f*ck", "women: k1ll and fuck"]
    assert ms.build_texts(table(), 0.5, EDITS, 3).group_by("category").len().sort("category")["len"].to_list() == [3, 3]


def test_table22_edits_come_from_the_papers_figures():
    edits = ms.load_edits(PUBLISHED)
    assert ("nigg", "n*gg") in edits and ("bitch", "bithc") in edits and edits[-1] == ("phuck", "fuck")
    assert len(edits) == 4 + 4 + 5 + 4 + 6 + 6 + 6 + 1


def answers(rows):
    return pl.DataFrame(
        [
            {
                "setting": "zero_shot",
                "variant": "free",
                "category": "racist",
                "comment_id": c,
                "status": s,
                "edit": e,
                "text": f"t{c}{e or ''}",
                "answer": a,
                "verdict": ms.verdict(a, "racist"),
            }
            for c, s, e, a in rows
        ]
    )


def test_changed_comments_are_counted_by_their_parsed_answers():
    doc = ms.summarise(
        answers(
            [
                (0, "unedited", None, "Yes."),
                (0, "edited", "a", "No"),
                (0, "edited", "b", "Yes"),  # changed: yes -> no once
                (1, "unedited", None, "No."),
                (1, "edited", "a", "No,"),  # 'No.' vs 'No,': not changed
                (2, "unedited", None, "no"),
                (2, "edited", "a", "yes"),
                (2, "edited", "b", "maybe"),  # changed: no -> yes, no -> unparsed
            ]
        ),
        {"racist": 3},
    )
    m = doc["zero_shot"]["free"]["racist"]
    assert (m["comments"], m["versions"], m["edited_versions"], m["unparsed"]) == (3, 8, 5, 1)
    assert m["changed"] == 2 and m["changed_comments"] == [0, 2]
    assert m["flipped_versions"] == {"yes_to_no": 1, "no_to_yes": 1, "other": 1}
    assert [(r["comment_id"], r["status"], r["verdict"]) for r in m["rows"]] == [
        (0, "unedited", "yes"),
        (0, "edited", "no"),
        (2, "unedited", "no"),
        (2, "edited", "yes"),
        (2, "edited", "unparsed"),
    ]
    assert m["yes_share_unedited"] == pytest.approx(100 / 3, abs=1e-4)


def test_stage_asks_both_settings_at_temperature_zero_and_reports_next_to_table23(tmp_path):
    table_path = tmp_path / "table.parquet"
    table().write_parquet(table_path)
    calls: list = []

    def reply(body):  # the fake is fooled by the censored spelling, as GPT-3 was by 'fck'
        return " No" if "fck" in body["prompt"] or "f*ck" in body["prompt"] else " Yes"

    cfg = {
        "kind": "openai",
        "enabled": True,
        "model": "davinci-002",
        "stand_in": None,
        "api": "completions",
        "api_key_env": None,
        "timeout_s": 5,
        "temperature": 0.3,
        "iterations": 100,
        "max_new_tokens": 2,
    }
    with fake_chat_server(reply, calls) as url:
        msg = ms.run_misspelling(
            "fake",
            table_path,
            PUBLISHED,
            tmp_path / "a.csv",
            tmp_path / "m.json",
            {**cfg, "base_url": url},
            0.5,
            0,
            1,
            2,
            str(tmp_path / "cache"),
            Profile("p", {"base_models": {}, "llm_misspelling_max_texts": None}),
        )
    n_texts = ms.build_texts(table(), 0.5, ms.load_edits(PUBLISHED), None).height
    assert len(calls) == 2 * n_texts  # zero- and one-shot, one iteration each
    assert {c["body"]["temperature"] for c in calls} == {0.0} and {c["path"] for c in calls} == {"/v1/completions"}
    assert sum(c["body"]["prompt"].startswith("The following text in quotes is") for c in calls) == n_texts
    doc = json.loads((tmp_path / "m.json").read_text())
    racist = doc["by_setting"]["zero_shot"]["free"]["racist"]
    assert racist["changed"] == 1 and racist["comments"] == 2  # e-2 (its 'fuck' edits), not e-3 (no 'fuck')
    assert racist["flipped_versions"]["yes_to_no"] == 2  # fck and f*ck
    assert doc["by_setting"]["zero_shot"]["free"]["sexist"]["changed"] == 1
    assert "racist 1/2 changed" in msg
    html = misspelling_section({"fake": doc, "gone": None}, {"fake": "results/llm/fake/misspelling.json", "gone": "x.json"}, load())
    assert re.search(
        r'data-cell-id="llm_misspelling:fake:zero_shot:free:racist:changed" data-metrics="results/llm/fake/misspelling.json"'
        r' data-stage="llm_misspelling_fake"[^>]*>1<',
        html,
    )
    assert re.search(r'data-cell-id="published:gpt3_detection_t23:GPT-3:racist:changed"[^>]*>6.0<', html)
    assert re.search(r'data-cell-id="published:gpt3_detection_t23:GPT-3:racist:comments"[^>]*>27.0<', html)
    assert "fck them, kill them all" in html and "Fuck off niggers WV is full" in html  # ours and the paper's Table 23 rows
    assert "not run" in html


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(ms)
    assert result.attempted >= 2 and result.failed == 0
