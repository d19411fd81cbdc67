"""GPT-HateCheck generation and validation on plain values: ask a chat
client (an endpoint or a local LLM, :mod:`.llm`) for the messages of every
(functionality, target group) cell, keep every request's outcome (bad
outputs counted per functionality, never dropped silently), validate the
candidates with a judge (:mod:`.nli`) and count what was kept (Table 4,
Figure 3). The stages that load the models are in
``evaluation/gpt_hatecheck.py``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import polars as pl
from tqdm import tqdm

from hatecheck_pipeline.expansion import SUITE_COLUMNS, llm, nli
from hatecheck_pipeline.expansion.prompts import Cell

CANDIDATE_SCHEMA = {
    "id": pl.Utf8,
    "text": pl.Utf8,
    "functionality": pl.Utf8,
    "target_ident": pl.Utf8,
    "label": pl.Utf8,
    "language": pl.Utf8,
    "request": pl.Int64,
    "k": pl.Int64,
    "cache_key": pl.Utf8,
}
REQUEST_SCHEMA = {
    "functionality": pl.Utf8,
    "target_ident": pl.Utf8,
    "request": pl.Int64,
    "cache_key": pl.Utf8,
    "problem": pl.Utf8,
    "messages": pl.Int64,
    "kept": pl.Int64,
    "answer": pl.Utf8,
}
NO_TARGET = "none"  # Table 4's row of the functionalities without a protected target


def label_of(functionality: str) -> str:
    return "hateful" if functionality.endswith("_h") else "non-hateful"


def generate(
    client,
    model: str,
    cells: Sequence[Cell],
    n_per_cell: int,
    per_request: int,
    max_requests: int,
    temperature: float,
    max_tokens: int,
    seed: int,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(candidates, requests): ask each cell's prompt (it asks for
    ``per_request`` messages) until ``n_per_cell`` messages are in or
    ``max_requests`` requests were made (the authors' loop, bounded); request
    i of a cell carries seed ``seed + i`` (its own cache entry). Every
    request is a row of ``requests`` with its problem (``llm.parse_messages``)
    and how many of its messages were kept (the rest: over the cap).

    The loop runs in rounds: round i asks request i of every cell still
    short, all at once (``client.complete_many``: a local LLM generates them
    batched). A request's answer depends on its body only, so the rows are
    those of asking cell after cell, in the same order."""
    got = [0] * len(cells)
    cand: list[list[dict]] = [[] for _ in cells]
    reqs: list[list[dict]] = [[] for _ in cells]
    rounds = tqdm(range(max_requests), desc="generate (request rounds)")
    for i in rounds:
        short = [c for c in range(len(cells)) if got[c] < n_per_cell]
        if not short:
            break
        rounds.set_postfix(cells=len(short))
        bodies = [llm.request_body(model, cells[c].system, cells[c].prompt, temperature, max_tokens, seed + i) for c in short]
        for c, body, response in zip(short, bodies, client.complete_many(bodies)):
            cell, key = cells[c], llm.cache_key(client.base_url, body)
            answer = llm.content_of(response)
            messages, problem = llm.parse_messages(answer)
            keep = messages[: n_per_cell - got[c]]
            for k, text in enumerate(keep):
                cand[c].append(
                    {
                        "text": text,
                        "functionality": cell.functionality,
                        "target_ident": cell.target_ident,
                        "label": label_of(cell.functionality),
                        "language": cell.language,
                        "request": i,
                        "k": k,
                        "cache_key": key,
                    }
                )
            got[c] += len(keep)
            reqs[c].append(
                {
                    "functionality": cell.functionality,
                    "target_ident": cell.target_ident,
                    "request": i,
                    "cache_key": key,
                    "problem": problem,
                    "messages": len(messages),
                    "kept": len(keep),
                    "answer": answer,
                }
            )
    rounds.close()
    frame = pl.DataFrame([row for rows in cand for row in rows], schema={k: v for k, v in CANDIDATE_SCHEMA.items() if k != "id"})
    lang = cells[0].language if cells else "english"
    frame = frame.with_columns((pl.lit(f"gpt-{lang}-") + pl.int_range(pl.len()).cast(pl.Utf8)).alias("id"))
    return frame.select(list(CANDIDATE_SCHEMA)), pl.DataFrame([row for rows in reqs for row in rows], schema=REQUEST_SCHEMA)


def generation_report(
    requests: pl.DataFrame, cells: Sequence[Cell], generator: str, settings: Mapping[str, Any], queried: int, cached: int
) -> dict[str, Any]:
    """Per functionality: cells, requests, messages returned and kept, and
    every bad output by kind (``llm.BAD_OUTPUTS``)."""
    per = []
    for func in sorted({c.functionality for c in cells}):
        rows = requests.filter(pl.col("functionality") == func)
        problems = {p: rows.filter(pl.col("problem") == p).height for p in llm.BAD_OUTPUTS}
        per.append(
            {
                "functionality": func,
                "cells": sum(c.functionality == func for c in cells),
                "requests": rows.height,
                "messages": int(rows["messages"].sum() or 0),
                "candidates": int(rows["kept"].sum() or 0),
                "bad_outputs": sum(problems.values()),
                **problems,
            }
        )
    return {
        "generator": generator,
        **settings,
        "cells": len(cells),
        "requests": requests.height,
        "queried": queried,
        "cached": cached,
        "candidates": int(requests["kept"].sum() or 0),
        "bad_outputs": int(requests["problem"].is_not_null().sum()),
        "per_functionality": per,
    }


def validate(
    candidates: pl.DataFrame, spec: Mapping[str, Any], judge, threshold: float, all_targets: Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """(kept cases as a suite table, rejected cases with their first failing
    test, report): duplicates of an earlier message are rejected as such
    (the authors drop them before testing); counts per functionality and
    target group (Figure 3's pass rates) and per target group (Table 4)."""
    first = candidates.with_columns(pl.int_range(pl.len()).alias("_row"))
    dup = first.filter(pl.col("text").is_duplicated() & (pl.col("_row") != pl.col("_row").min().over("text")))
    unique = first.filter(~pl.col("_row").is_in(dup["_row"].implode()))
    results = nli.validate(unique.drop("_row").to_dicts(), spec, judge, threshold, all_targets)
    checked = pl.DataFrame(results, schema={**candidates.schema, "accepted": pl.Boolean, "failed_test": pl.Utf8, "tests": pl.Utf8})
    dups = dup.drop("_row").with_columns(
        pl.lit(False).alias("accepted"), pl.lit("duplicate of an earlier message").alias("failed_test"), pl.lit("[]").alias("tests")
    )
    checked = pl.concat([checked, dups.select(checked.columns)])
    kept = (
        checked.filter(pl.col("accepted"))
        .with_columns(
            pl.lit("gpt_hatecheck").alias("dataset"),
            pl.lit("test").alias("split"),
            pl.lit(None, pl.Utf8).alias("templ_id"),
            pl.lit(None, pl.Utf8).alias("case_templ"),
            pl.lit(None, pl.Utf8).alias("source_id"),
            pl.lit("llm").alias("generator"),
        )
        .select(SUITE_COLUMNS)
    )
    rejected = checked.filter(~pl.col("accepted"))
    target = pl.col("target_ident").fill_null(NO_TARGET)

    def counts(keys):
        return (
            checked.with_columns(target.alias("target_ident"))
            .group_by(keys)
            .agg(pl.len().alias("candidates"), pl.col("accepted").sum().alias("kept"))
            .with_columns((pl.col("kept") / pl.col("candidates")).round(6).alias("pass_rate"))
            .sort(keys)
        )

    report = {
        "judge": judge.name,
        "threshold": threshold,
        "candidates": checked.height,
        "kept": kept.height,
        "duplicates": dups.height,
        "pass_rate": round(kept.height / checked.height, 6) if checked.height else None,
        "per_functionality": counts(["functionality"]).to_dicts(),
        "per_target": counts(["target_ident"]).to_dicts(),
        "per_functionality_target": counts(["functionality", "target_ident"]).to_dicts(),
        "failed_tests": (
            rejected.group_by("functionality", "failed_test").agg(pl.len().alias("cases")).sort("functionality", "failed_test").to_dicts()
        ),
    }
    return kept, rejected, report
