"""The evaluation sets of "Detecting Hate Speech with GPT-3" (Chiu, Collins,
Alexander 2022, section 3.1) built from the harmonised ETHOS table.

Pools (``example_source``):

- ``paper`` (default): the paper's ten example sets (Appendix A, Table 8;
  ``resources/gpt3_example_sets.yaml``), each comment found in the table by
  its normalised text (:func:`match_paper_examples`), are ranks 0-9 of their
  pools; the rest of each pool is the following candidates in the file's
  order (the paper: "the first n + 1 comments from their respective
  datasets"; at the pinned commit the ten listed comments of each pool are
  its first ten in file order). A comment not found leaves its rank to the
  next comment in file order, which is then not shown as an example: that
  set is built from the comments found (:func:`drop_unfound_examples`).
- ``redraw``: seeded draws, ordered by the draw, from the candidates:

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

import difflib
import re
import unicodedata
from pathlib import Path
from typing import Any, Iterable, Mapping

import polars as pl
import yaml

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_json, write_parquet
from hatecheck_pipeline.data.labels import HATEFUL

SINGLE = ("zero_shot", "one_shot", "few_shot_single")
MIXED = ("mixed", "mixed_instruction")
SETTINGS = (*SINGLE, *MIXED)
CATEGORIES = ("racist", "sexist")
POOLS = ("racist", "sexist", "neither")
EXAMPLE_SCHEMA = pl.List(pl.Struct({"text": pl.String, "label": pl.String}))
SOURCES = ("paper", "redraw")
MATCH_KINDS = ("exact", "normalised", "fuzzy", "not_found")
MATCH_SCHEMA = {
    "set": pl.Int64,
    "pool": pl.String,
    "column": pl.String,
    "paper_text": pl.String,
    "match": pl.String,
    "score": pl.Float64,
    "comment_id": pl.String,
    "text": pl.String,
    "file_rank": pl.Int64,
}
# Quotes and dashes the paper's PDF and the ETHOS files spell differently
# (the files also hold mojibake bytes where an apostrophe was).
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


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


def file_order(frame: pl.DataFrame) -> pl.DataFrame:
    """The comments in the order of the ETHOS file (ids are ``ethos-<row>``;
    the multi-label file lists the hateful comments in the binary file's order)."""
    return frame.with_columns(_row=pl.col("id").str.extract(r"(\d+)$").cast(pl.Int64)).sort("_row").drop("_row")


def normalise(text: str) -> str:
    """Comparison key of a comment: Unicode compatibility forms (ligatures,
    the ellipsis), lower case, quotes unified, punctuation and symbols
    dropped, whitespace runs collapsed.

    >>> normalise("The men are turtles...idiots even in uk\u2026 get lost") == normalise("the men are turtles...idiots even in UK. . . get lost")
    True
    >>> normalise("You deserve way more subscribers . The shit")
    'you deserve way more subscribers the shit'
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower()
    return " ".join(re.sub(r"[^\w\s]|_", "", text).split())


def load_paper_examples(path: Path) -> pl.DataFrame:
    """The paper's example sets (``resources/gpt3_example_sets.yaml``): one row
    per comment, ``set``, ``pool``, ``column`` (the paper's header), ``paper_text``."""
    doc = yaml.safe_load(Path(path).read_text("utf-8"))
    rows = [
        {"set": int(entry["set"]), "pool": pool, "column": doc["columns"][pool], "paper_text": entry[pool]}
        for entry in doc["sets"]
        for pool in ("sexist", "racist", "neither")
    ]
    return pl.DataFrame(rows, schema={"set": pl.Int64, "pool": pl.String, "column": pl.String, "paper_text": pl.String})


def _best_match(paper_text: str, texts: list[str], keys: list[str], threshold: float) -> tuple[str, float, int | None]:
    """(match kind, score, index) of the comment that is ``paper_text``:
    equal after whitespace collapsing (``exact``), equal after
    :func:`normalise` (``normalised``), or the highest difflib ratio of the
    normalised texts if at least ``threshold`` (``fuzzy``)."""
    collapsed = " ".join(paper_text.split())
    for i, t in enumerate(texts):
        if " ".join(t.split()) == collapsed:
            return "exact", 1.0, i
    key = normalise(paper_text)
    for i, k in enumerate(keys):
        if k == key:
            return "normalised", 1.0, i
    best, best_i = 0.0, None
    for i, k in enumerate(keys):
        m = difflib.SequenceMatcher(None, key, k, autojunk=False)
        if m.real_quick_ratio() >= threshold and m.quick_ratio() >= threshold:
            r = m.ratio()
            if r > best:
                best, best_i = r, i
    if best_i is not None and best >= threshold:
        return "fuzzy", round(best, 4), best_i
    return "not_found", round(best, 4), None


def match_paper_examples(cands: Mapping[str, pl.DataFrame], examples: pl.DataFrame, fuzzy_threshold: float) -> pl.DataFrame:
    """Each of the paper's example comments found among its pool's candidates
    (:func:`candidates`), in file order: ``match`` (``exact`` | ``normalised``
    | ``fuzzy`` | ``not_found``), ``score`` (1 for exact and normalised, the
    difflib ratio of the normalised texts for fuzzy; for ``not_found`` the
    best ratio seen), the comment's ``comment_id``, ``text`` and ``file_rank``
    (its position among the pool's candidates in file order)."""
    ordered = {p: file_order(c) for p, c in cands.items()}
    keys = {p: [normalise(t) for t in c["text"]] for p, c in ordered.items()}
    rows = []
    for ex in examples.iter_rows(named=True):
        pool = ordered[ex["pool"]]
        kind, score, i = _best_match(ex["paper_text"], pool["text"].to_list(), keys[ex["pool"]], fuzzy_threshold)
        rows.append(
            {
                **ex,
                "match": kind,
                "score": score,
                "comment_id": None if i is None else pool["id"][i],
                "text": None if i is None else pool["text"][i],
                "file_rank": i,
            }
        )
    return pl.DataFrame(rows, schema=MATCH_SCHEMA)


def _pool_part(pool: str, frame: pl.DataFrame, per_category: int, source: pl.Expr) -> pl.DataFrame:
    """Ranks, halves (input / example / replacement) and source of one pool's comments."""
    size = frame.height
    half = per_category // 2 if pool != "neither" else per_category
    return frame.with_row_index("rank").with_columns(
        pl.col("rank").cast(pl.Int64),
        pl.lit(pool).alias("pool"),
        pl.when(pl.col("rank") < half)
        .then(pl.lit("input"))
        .when(pl.col("rank") < size - 1)
        .then(pl.lit("example"))
        .otherwise(pl.lit("replacement"))
        .alias("half"),
        source.alias("source"),
    )


def _sizes(per_category: int) -> dict[str, int]:
    return {"racist": per_category + 1, "sexist": per_category + 1, "neither": 2 * per_category + 1}


def paper_pools(cands: Mapping[str, pl.DataFrame], matches: pl.DataFrame, per_category: int) -> pl.DataFrame:
    """The pools of the ``paper`` source: set i's comment of each pool at rank
    i - 1, the other ranks filled with the pool's next candidates in file
    order (racist, then sexist, then neither; a comment is in one pool only,
    the paper's example comments are never fillers). ``source`` says which:
    ``paper`` or ``file_order``."""
    sizes = _sizes(per_category)
    found = matches.filter(pl.col("comment_id").is_not_null())
    reserved = set(found["comment_id"].to_list())
    taken: set[str] = set()
    parts = []
    for pool in POOLS:
        slots = {r["set"] - 1: r["comment_id"] for r in matches.filter(pl.col("pool") == pool).iter_rows(named=True)}
        frame = file_order(cands[pool])
        fillers = iter(i for i in frame["id"].to_list() if i not in taken and i not in reserved)
        ids, sources = [], []
        for rank in range(sizes[pool]):
            cid = slots.get(rank)
            if cid is not None and cid not in taken:
                ids.append(cid)
                sources.append("paper")
                continue
            nxt = next(fillers, None)
            if nxt is None:
                raise EthosSetsFailed(
                    f"ethos: pool {pool!r} has too few candidates for {sizes[pool]} comments (llm.ethos.per_category = {per_category})"
                )
            ids.append(nxt)
            sources.append("file_order")
        taken.update(ids)
        chosen = pl.DataFrame({"id": ids, "source": sources}).join(frame.select("id", "text"), on="id", how="left", maintain_order="left")
        chosen = chosen.select("id", "text", "source")
        parts.append(_pool_part(pool, chosen, per_category, pl.col("source")))
    return pl.concat(parts).rename({"id": "comment_id"}).select("pool", "rank", "half", "comment_id", "text", "source")


def unfound_examples(matches: pl.DataFrame, example_sets: int) -> list[dict[str, Any]]:
    """The paper's example comments of sets 1..``example_sets`` not found in
    the table (set, pool, the paper's text)."""
    missing = matches.filter((pl.col("match") == "not_found") & (pl.col("set") <= example_sets))
    return missing.select("set", "pool", "paper_text").to_dicts()


def drop_unfound_examples(items: pl.DataFrame, unfound: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """A mixed-setting example set whose paper comment of a pool was not found
    is built from the comments found: that pool's example (the file-order
    comment holding its rank) is removed from the set's examples."""
    drop = {(int(u["set"]), u["pool"]) for u in unfound}
    if not drop:
        return items
    pairs = pl.DataFrame([{"example_set": s, "_pool": p} for s, p in sorted(drop)], schema={"example_set": pl.Int64, "_pool": pl.String})
    dropped = pairs.group_by("example_set").agg(pl.col("_pool").alias("_drop"))
    joined = items.with_row_index("_i").join(dropped, on="example_set", how="left").sort("_i")
    kept = [
        [e for e in examples if e["label"] not in (skip or [])] if setting in MIXED else examples
        for setting, examples, skip in zip(joined["setting"], joined["examples"].to_list(), joined["_drop"].to_list())
    ]
    return joined.with_columns(pl.Series("examples", kept, dtype=EXAMPLE_SCHEMA)).select(items.columns)


def draw_pools(cands: Mapping[str, pl.DataFrame], seed: int, per_category: int) -> pl.DataFrame:
    """The pools of the ``redraw`` source: seeded draws, ``per_category + 1``
    racist, then sexist (not already drawn as racist), then
    ``2 * per_category + 1`` neither comments."""
    sizes = _sizes(per_category)
    taken: list[str] = []
    parts = []
    for offset, pool in enumerate(POOLS):
        frame = cands[pool].filter(~pl.col("id").is_in(taken))
        if frame.height < sizes[pool]:
            raise EthosSetsFailed(
                f"ethos: pool {pool!r} has {frame.height} candidates, {sizes[pool]} needed (llm.ethos.per_category = {per_category})"
            )
        drawn = frame.sample(n=sizes[pool], seed=seed + offset, shuffle=True)
        taken += drawn["id"].to_list()
        parts.append(_pool_part(pool, drawn.select("id", "text"), per_category, pl.lit("redraw")))
    return pl.concat(parts).rename({"id": "comment_id"}).select("pool", "rank", "half", "comment_id", "text", "source")


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
                rows.append(
                    {
                        "setting": setting,
                        "category": category,
                        "label": label,
                        "example_set": None,
                        "comment_id": comment["comment_id"],
                        "text": comment["text"],
                        "examples": examples,
                    }
                )
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
                    rows.append(
                        {
                            "setting": setting,
                            "category": "mixed",
                            "label": pool,
                            "example_set": i + 1,
                            "comment_id": comment["comment_id"],
                            "text": comment["text"],
                            "examples": examples,
                        }
                    )
    items = pl.DataFrame(
        rows,
        schema={
            "setting": pl.String,
            "category": pl.String,
            "label": pl.String,
            "example_set": pl.Int64,
            "comment_id": pl.String,
            "text": pl.String,
            "examples": EXAMPLE_SCHEMA,
        },
    )
    order = pl.col("setting").replace_strict({s: i for i, s in enumerate(SETTINGS)}, return_dtype=pl.Int64)
    items = items.with_columns(_order=order).sort("_order", "example_set", "category", maintain_order=True).drop("_order")
    return items.with_columns(
        pl.format(
            "{}/{}/{}/{}",
            "setting",
            pl.col("example_set").fill_null(0),
            "category",
            pl.int_range(pl.len()).over("setting", "example_set", "category"),
        ).alias("item_id")
    ).select("item_id", *items.columns)


def expectations_report(
    table: pl.DataFrame,
    cands: Mapping[str, pl.DataFrame],
    pools: pl.DataFrame,
    items: pl.DataFrame,
    per_category: int,
    example_sets: int,
    expected: Mapping[str, int],
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
    suites.append(
        run_suite(
            "ethos_pools",
            pools,
            [
                E.ExpectColumnValuesToBeUnique(column="comment_id"),
                E.ExpectTableRowCountToEqual(value=4 * per_category + 3),
                E.ExpectColumnValuesToBeInSet(column="pool", value_set=list(POOLS)),
            ],
        )
    )
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
        every = pl.concat(
            [
                mixed.select("text"),
                mixed.select(pl.col("examples").list.eval(pl.element().struct.field("text")))
                .explode("examples")
                .rename({"examples": "text"}),
            ]
        )
        suites.append(
            run_suite(
                "ethos_mixed_unique_comments",
                every.rename({"text": "comment"}),
                [
                    E.ExpectColumnUniqueValueCountToBeBetween(
                        column="comment", min_value=expected["mixed_unique"], max_value=expected["mixed_unique"]
                    ),
                ],
            )
        )
    return {
        "dataset": "ethos_sets",
        "success": all(s["success"] for s in suites),
        "suites": suites,
        "counts": {
            "candidates": {p: cands[p].height for p in POOLS},
            "pools": dict(pools.group_by("pool").len().sort("pool").rows()),
            "items": dict(items.group_by("setting").len().sort("setting").rows()),
        },
    }


def examples_report(
    source: str, matches: pl.DataFrame | None, unfound: list[dict[str, Any]], fuzzy_threshold: float, example_sets: int
) -> dict[str, Any]:
    """What the sets' examples are: the source, every paper comment's match
    (kind, score, comment id, rank in file order), the ones not found, and
    per example set what it is (the paper's set, built from the comments
    found, or not the paper's)."""
    if matches is None:
        sets = {str(i): {"paper_set": False, "not_found": []} for i in range(1, example_sets + 1)}
        return {"source": source, "sets": sets}
    listed = set(matches["set"].to_list())
    sets = {
        str(i): {"paper_set": i in listed, "not_found": sorted(u["pool"] for u in unfound if u["set"] == i)}
        for i in range(1, example_sets + 1)
    }
    return {
        "source": source,
        "fuzzy_threshold": fuzzy_threshold,
        "matches": matches.drop("text").to_dicts(),
        "match_counts": {k: int((matches["match"] == k).sum()) for k in MATCH_KINDS},
        "not_found": unfound,
        "sets": sets,
    }


def build_sets(
    table: Path,
    validation: Path,
    paper_sets: Path,
    items: Path,
    pools: Path,
    report: Path,
    seed: int,
    threshold: float,
    not_hate_max: float,
    per_category: int,
    example_sets: int,
    expected: Mapping[str, int],
    example_source: str = "paper",
    fuzzy_threshold: float = 0.9,
) -> str:
    """Stage ``ethos_sets``: the pools (the paper's example sets found in the
    table, or the seeded redraw), every prompt's inputs and examples, and
    great-expectations checks of the counts (a failure stops the stage naming
    the suite, expectation and observed value). The paper comments not found
    are named in ``report`` (``examples.not_found``) and in the returned line."""
    from hatecheck_pipeline.core.files import read_json
    from hatecheck_pipeline.data.validate import failure_message

    if example_source not in SOURCES:
        raise EthosSetsFailed(f"ethos: example_source {example_source!r} is not one of {', '.join(SOURCES)}")
    if not read_json(validation)["success"]:
        raise EthosSetsFailed(f"{validation}: the ETHOS table did not pass validation; not building the sets from {table}")
    frame = pl.read_parquet(table)
    cands = candidates(frame, threshold, not_hate_max)
    matches, unfound = None, []
    if example_source == "paper":
        matches = match_paper_examples(cands, load_paper_examples(paper_sets), fuzzy_threshold)
        unfound = unfound_examples(matches, example_sets)
        drawn = paper_pools(cands, matches, per_category)
    else:
        drawn = draw_pools(cands, seed, per_category)
    prompts = drop_unfound_examples(build_items(drawn, per_category, example_sets), unfound)
    result = expectations_report(frame, cands, drawn, prompts, per_category, example_sets, expected)
    result["examples"] = examples_report(example_source, matches, unfound, fuzzy_threshold, example_sets)
    write_json(result, report)
    if not result["success"]:
        raise EthosSetsFailed(failure_message(result))
    write_parquet(drawn, pools)
    write_parquet(prompts, items)
    counts = result["counts"]
    line = f"ethos sets ({example_source}): candidates {counts['candidates']}, items {counts['items']}"
    if matches is not None:
        line += f"; paper examples matched {result['examples']['match_counts']}"
        if unfound:
            line += "; NOT FOUND (their sets built from the comments found): " + "; ".join(
                f"set {u['set']} {u['pool']}: {u['paper_text'][:60]!r}" for u in unfound
            )
    return line
