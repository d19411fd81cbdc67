"""The whole-protocol ETHOS run of the local LLM stand-in (issue: prompted
LLMs as the GPT-3 detection paper runs them): its metrics.json is kept in
benchmarks/records/, and docs/local-llm.md quotes the table that
``report.docs_pages.ethos_table`` renders from it and the time the answer
store summed over the run's pieces. The page changes when the record does."""

from __future__ import annotations

import json

from conftest import REPO

from hatecheck_pipeline.evaluation import published
from hatecheck_pipeline.report import docs_pages

RECORD = REPO / "benchmarks/records/local_llm_whole_protocol_2026-11-26.json"
PAGE = REPO / "docs/local-llm.md"


def test_the_record_is_the_whole_protocol():
    doc = json.loads(RECORD.read_text("utf-8"))
    assert doc["complete"] is True
    assert doc["max_prompts_per_setting"] is None and doc["example_sets"] is None  # no cap: all 10 example sets
    # zero-, one-, single-category few-shot: 120 prompts each; two mixed settings: 10 sets x 240 comments
    assert doc["prompts"] == 3 * 120 + 2 * 10 * 240
    pieces = doc["answer_store"]["all_pieces"]
    assert pieces["prompts"] == doc["prompts"] and pieces["seconds"] > 0


def test_the_local_llm_page_quotes_the_record():
    doc = json.loads(RECORD.read_text("utf-8"))
    text = PAGE.read_text("utf-8")
    table = docs_pages.ethos_table(RECORD.relative_to(REPO).as_posix(), doc, published.load())
    assert table in text, "docs/local-llm.md does not show the record's table (render it with docs_pages.ethos_table)"
    pieces = doc["answer_store"]["all_pieces"]
    timed = pieces["prompts"] - pieces["untimed"]
    assert f"{pieces['seconds'] / 3600:.2f} hours of answering for {timed:,} prompts" in text
    assert f"{pieces['untimed']:,} prompts" in text
