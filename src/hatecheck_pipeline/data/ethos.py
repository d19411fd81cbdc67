"""The evaluation sets of "Detecting Hate Speech with GPT-3" (Chiu, Collins,
Alexander 2022, section 3.1) built from the harmonised ETHOS table.

Pools (seeded draws, ordered by the draw):

- ``racist``: hateful comments with ``race >= threshold`` (76 at the pinned
  commit, as in the paper);
- ``sexist``: hateful comments with ``gender >= threshold`` not drawn as
  racist (86 at the pinned commit; the paper reports 84 for its copy of the
  file);
- ``neither``: comments with ``isHate <= not_hate_max`` (the paper's code:
  ``isHate == 0``, 354 comments).

``per_category + 1`` racist and sexist and ``2 * per_category + 1`` neither
comments are drawn: the first ``per_category`` (60 / 60 / 120) are the
paper's 240 comments, the last one of each pool is the replacement comment
of the mixed-category setting.

Settings (one row per prompt in ``items.parquet``):

- ``zero_shot``, ``one_shot``, ``few_shot_single``: the pools are split in
  half; the first half (30 racist, 30 sexist, 60 neither) are the inputs,
  the second half the examples. Category ``racist`` asks about 30 racist +
  30 neither inputs, ``sexist`` about 30 sexist + the other 30 neither.
  One-shot input ``j`` gets positive example ``j mod 30``; single-category
  few-shot input ``j`` gets examples ``2j``, ``2j+1`` (mod 30) of the
  category and neither-example ``j`` (order: category, not-category,
  category, as in the paper's example prompt).
- ``mixed``, ``mixed_instruction``: example set ``i`` (1..``example_sets``)
  is comment ``i`` of each pool (sexist, racist, neither); its inputs are the
  first ``n + 1`` comments of each pool with comment ``i`` dropped (60 + 60
  + 120 per set); over all sets 61 + 61 + 121 = 243 unique comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_json, write_parquet
from hatecheck_pipeline.data.specs import HATEFUL

SINGLE = ("zero_shot", "one_shot", "few_shot_single")
MIXED = ("mixed", "mixed_instruction")
SETTINGS = (*SINGLE, *MIXED)
CATEGORIES = ("racist", "sexist")
POOLS = ("racist", "sexist", "neither")
EXAMPLE_SCHEMA = pl.List(pl.Struct({"text": pl.String, "label": pl.String}))


class EthosSetsFailed(PipelineError, RuntimeError):
    """An expectation on the ETHOS evaluation sets failed."""


def candidates(table: pl.DataFrame, threshold: float, not_hate_max: float) -> dict[str, pl.DataFrame]:
    """Comments eligible for each pool (sorted by id, so that the draw does
    not depend on the table's row order). ``sexist`` still includes the
    comments that are also racist; :func:`draw_pools` removes the drawn ones."""
    table = table.sort("id")
    hateful = table.filter(pl.col("label") == HATEFUL)
    return {
        "racist": hateful.filter(pl.col("race") >= threshold),
        "sexist": hateful.filter(pl.col("gender") >= threshold),
        "neither": table.filter(pl.col("is_hate") <= not_hate_max),
    }


def draw_pools(cands: Mapping[str, pl.DataFrame], seed: int, per_category: int) -> pl.DataFrame:
    """Seeded draws: ``per_category + 1`` racist, then sexist (not already
    drawn as racist), then ``2 * per_category + 1`` neither comments."""
    sizes = {"racist": per_category + 1, "sexist": per_category + 1, "neither": 2 * per_category + 1}
    taken: list[str] = []
    parts = []
    for offset, pool in enumerate(POOLS):
        frame = cands[pool].filter(~pl.col("id").is_in(taken))
        if frame.height < sizes[pool]:
            raise EthosSetsFailed(f"ethos: pool {pool!r} has {frame.height} candidates, {sizes[pool]} needed "
                                  f"(llm.ethos.per_category = {per_category})")
        drawn = frame.sample(n=sizes[pool], seed=seed + offset, shuffle=True)
        taken += drawn["id"].to_list()
        half = per_category // 2 if pool != "neither" else per_category
        parts.append(
            drawn.select("id", "text").with_row_index("rank").with_columns(
                pl.col("rank").cast(pl.Int64),
                pl.lit(pool).alias("pool"),
                pl.when(pl.col("rank") < half).then(pl.lit("input"))
                .when(pl.col("rank") < sizes[pool] - 1).then(pl.lit("example"))
                .otherwise(pl.lit("replacement")).alias("half"),
            )
        )
    return pl.concat(parts).rename({"id": "comment_id"}).select("pool", "rank", "half", "comment_id", "text")


def _examples(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"text": t, "label": lab} for t, lab in pairs]


def build_items(pools: pl.DataFrame, per_category: int, example_sets: int) -> pl.DataFrame:
    """Every prompt of the five settings (see the module docstring)."""
    half = per_category // 2
    by = {p: pools.filter(pl.col("pool") == p).sort("rank").to_dicts() for p in POOLS}
    rows: list[dict[str, Any]] = []
    for category in CATEGORIES:
        offset = 0 if category == "racist" else half  # which neither inputs / examples a category gets
        positives = by[category][:half]
        pos_examples = by[category][half:per_category]
        negatives = by["neither"][offset : offset + half]
        neg_examples = by["neither"][per_category + offset : per_category + offset + half]
        inputs = [(c, category) for c in positives] + [(c, f"not-{category}") for c in negatives]
        for j, (comment, label) in enumerate(inputs):
            shots = {
                "zero_shot": [],
                "one_shot": _examples((pos_examples[j % half]["text"], category)),
                "few_shot_single": _examples(
                    (pos_examples[(2 * j) % half]["text"], category),
                    (neg_examples[j % half]["text"], f"not-{category}"),
                    (pos_examples[(2 * j + 1) % half]["text"], category),
                ),
            }
            for setting, examples in shots.items():
                rows.append({"setting": setting, "category": category, "label": label, "example_set": None,
                             "comment_id": comment["comment_id"], "text": comment["text"], "examples": examples})
    if example_sets > per_category:
        raise EthosSetsFailed(f"ethos: {example_sets} example sets need at least as many comments per pool ({per_category})")
    for i in range(example_sets):
        examples = _examples(*((by[p][i]["text"], p) for p in ("sexist", "racist", "neither")))
        for pool in POOLS:
            n = per_category if pool != "neither" else 2 * per_category
            for comment in by[pool][: n + 1]:
                if comment["rank"] == i:
                    continue
                for setting in MIXED:
                    rows.append({"setting": setting, "category": "mixed", "label": pool, "example_set": i + 1,
                                 "comment_id": comment["comment_id"], "text": comment["text"], "examples": examples})
    items = pl.DataFrame(
        rows,
        schema={"setting": pl.String, "category": pl.String, "label": pl.String, "example_set": pl.Int64,
                "comment_id": pl.String, "text": pl.String, "examples": EXAMPLE_SCHEMA},
    )
    order = pl.col("setting").replace_strict({s: i for i, s in enumerate(SETTINGS)}, return_dtype=pl.Int64)
    items = items.with_columns(_order=order).sort("_order", "example_set", "category", maintain_order=True).drop("_order")
    return items.with_columns(
        pl.format("{}/{}/{}/{}", "setting", pl.col("example_set").fill_null(0), "category",
                  pl.int_range(pl.len()).over("setting", "example_set", "category")).alias("item_id")
    ).select("item_id", *items.columns)


def expectations_report(
    table: pl.DataFrame, cands: Mapping[str, pl.DataFrame], pools: pl.DataFrame, items: pl.DataFrame,
    per_category: int, example_sets: int, expected: Mapping[str, int],
) -> dict[str, Any]:
    """great-expectations suites on the candidates, pools and prompts."""
    from hatecheck_pipeline.data.validate import load_gx, run_suite

    gx = load_gx()

    E = gx.expectations
    half = per_category // 2
    suites = [
        run_suite(f"ethos_candidates_{pool}", cands[pool], [E.ExpectTableRowCountToEqual(value=expected[f"{pool}_candidates"])])
        for pool in POOLS
        if f"{pool}_candidates" in expected
    ]
    suites.append(run_suite("ethos_pools", pools, [
        E.ExpectColumnValuesToBeUnique(column="comment_id"),
        E.ExpectTableRowCountToEqual(value=4 * per_category + 3),
        E.ExpectColumnValuesToBeInSet(column="pool", value_set=list(POOLS)),
    ]))
    for pool in POOLS:
        n = per_category if pool != "neither" else 2 * per_category
        part = pools.filter(pl.col("pool") == pool)
        suites.append(run_suite(f"ethos_pool_{pool}", part, [E.ExpectTableRowCountToEqual(value=n + 1)]))
    helper = items.with_columns(
        pl.col("examples").list.eval(pl.element().struct.field("text")).list.contains(pl.col("text")).alias("_input_in_examples")
    )
    for setting in SETTINGS:
        part = helper.filter(pl.col("setting") == setting)
        if setting in SINGLE:
            checks = [
                E.ExpectTableRowCountToEqual(value=4 * half),
                E.ExpectColumnUniqueValueCountToBeBetween(column="comment_id", min_value=2 * per_category, max_value=2 * per_category),
                E.ExpectColumnValuesToBeInSet(column="label", value_set=["racist", "not-racist", "sexist", "not-sexist"]),
            ]
        else:
            checks = [
                E.ExpectTableRowCountToEqual(value=example_sets * 4 * per_category),
                E.ExpectColumnValuesToBeInSet(column="label", value_set=list(POOLS)),
            ]
            if example_sets:
                unique = 4 * per_category + 3 if example_sets >= 2 else 4 * per_category + 2  # set 1 drops comment 1 of each pool
                checks.append(E.ExpectColumnUniqueValueCountToBeBetween(column="comment_id", min_value=unique, max_value=unique))
        checks.append(E.ExpectColumnValuesToBeInSet(column="_input_in_examples", value_set=[False]))
        suites.append(run_suite(f"ethos_{setting}", part, checks))
    if "mixed_unique" in expected and example_sets:
        mixed = items.filter(pl.col("setting") == "mixed")
        every = pl.concat([mixed.select("text"), mixed.select(pl.col("examples").list.eval(pl.element().struct.field("text"))).explode("examples").rename({"examples": "text"})])
        suites.append(run_suite("ethos_mixed_unique_comments", every.rename({"text": "comment"}), [
            E.ExpectColumnUniqueValueCountToBeBetween(column="comment", min_value=expected["mixed_unique"], max_value=expected["mixed_unique"]),
        ]))
    return {"dataset": "ethos_sets", "success": all(s["success"] for s in suites), "suites": suites,
            "counts": {"candidates": {p: cands[p].height for p in POOLS}, "pools": dict(pools.group_by("pool").len().sort("pool").rows()),
                       "items": dict(items.group_by("setting").len().sort("setting").rows())}}


def build_sets(
    table: Path,
    validation: Path,
    items: Path,
    pools: Path,
    report: Path,
    seed: int,
    threshold: float,
    not_hate_max: float,
    per_category: int,
    example_sets: int,
    expected: Mapping[str, int],
) -> str:
    """Stage ``ethos_sets``: draw the pools, write every prompt's inputs and
    examples, and check the counts with great-expectations (a failure stops
    the stage naming the suite, expectation and observed value)."""
    from hatecheck_pipeline.core.files import read_json
    from hatecheck_pipeline.data.validate import failure_message

    if not read_json(validation)["success"]:
        raise EthosSetsFailed(f"{validation}: the ETHOS table did not pass validation; not building the sets from {table}")
    frame = pl.read_parquet(table)
    cands = candidates(frame, threshold, not_hate_max)
    drawn = draw_pools(cands, seed, per_category)
    prompts = build_items(drawn, per_category, example_sets)
    result = expectations_report(frame, cands, drawn, prompts, per_category, example_sets, expected)
    write_json(result, report)
    if not result["success"]:
        raise EthosSetsFailed(failure_message(result))
    write_parquet(drawn, pools)
    write_parquet(prompts, items)
    counts = result["counts"]
    return f"ethos sets: candidates {counts['candidates']}, items {counts['items']}"
