"""Scoring raw LLM answers as "Detecting Hate Speech with GPT-3" does
(Chiu, Collins, Alexander 2022, section 4).

Input layout (CSV or Parquet): ``category`` (the category asked about:
``sexist``, ``racist`` or ``mixed``), ``label`` (gold: ``sexist`` /
``not-sexist``, ``racist`` / ``not-racist``; for mixed ``sexist`` /
``racist`` / ``neither``), ``answer`` (the model's raw text) and an optional
``iteration`` (repeated runs of the same prompts).

Parsing: the first word of the answer (case and punctuation ignored):
``yes`` / ``no`` or the class word (``sexist``, ``not-sexist`` or ``not
sexist``; for mixed ``sexist`` / ``racist`` / ``neither``). Anything else is
unparsed: counted and omitted, as the paper omits its "not applicable"
answers.

Metrics, in percent: accuracy, and precision / recall / F1 of the positive
class (the category; for mixed the macro average over the three classes),
computed per iteration, then the mean and the sample standard deviation
over iterations (one iteration: sd 0). For mixed, ``by_class`` adds the
paper's per-category figures (Tables 4 and 7): for class ``c`` in racist,
sexist the comments labelled ``c`` or ``neither``, positive = answered ``c``.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any, Iterable

import polars as pl

from hatecheck_pipeline.core.errors import PipelineError

MIXED_CLASSES = ("racist", "sexist", "neither")
BINARY_CATEGORIES = ("racist", "sexist")
CATEGORIES = (*BINARY_CATEGORIES, "mixed")
METRICS = ("accuracy", "precision", "recall", "f1")
WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


class AnswersError(PipelineError, ValueError):
    """An answers file that does not follow the layout."""


def gold_labels(category: str) -> tuple[str, ...]:
    return MIXED_CLASSES if category == "mixed" else (category, f"not-{category}")


def parse_answer(answer: str | None, category: str) -> str | None:
    """The label an answer gives, or None when it is unparsed.

    >>> [parse_answer(a, "sexist") for a in ("Yes.", " no", "not-sexist.", "Not sexist", "sexist, racist", "maybe")]
    ['sexist', 'not-sexist', 'not-sexist', 'not-sexist', 'sexist', None]
    >>> [parse_answer(a, "mixed") for a in ("racist.", "Neither", "sexist and misogynistic", "both", "")]
    ['racist', 'neither', 'sexist', None, None]
    """
    words = WORD.findall((answer or "").lower())
    if not words:
        return None
    first = words[0]
    if category == "mixed":
        return first if first in MIXED_CLASSES else None
    if first in ("yes", category):
        return category
    if first in ("no", f"not-{category}") or (first == "not" and words[1:2] == [category]):
        return f"not-{category}"
    return None


def read_answers(path: Path) -> pl.DataFrame:
    """The answers file, checked: required columns, known categories, gold
    labels that fit their category (a bad row is a one-line error naming
    file, row and rule)."""
    if not Path(path).exists():
        raise AnswersError(f"{path}: answers file not found")
    frame = pl.read_parquet(path) if str(path).endswith(".parquet") else pl.read_csv(path, infer_schema=False)
    missing = [c for c in ("category", "label", "answer") if c not in frame.columns]
    if missing:
        raise AnswersError(f"{path}: missing column(s) {missing} (need category, label, answer[, iteration])")
    if "iteration" not in frame.columns:
        frame = frame.with_columns(pl.lit("0").alias("iteration"))
    frame = frame.with_columns(pl.col("category", "label", "iteration").cast(pl.String), pl.col("answer").cast(pl.String))
    for row, rec in enumerate(frame.select("category", "label").iter_rows(), start=1):
        category, label = rec
        if category not in CATEGORIES:
            raise AnswersError(f"{path}: row {row}: category {category!r} is not one of {list(CATEGORIES)}")
        if label not in gold_labels(category):
            raise AnswersError(f"{path}: row {row}: label {label!r} is not a gold label of category {category!r} "
                               f"({list(gold_labels(category))})")
    return frame


def with_predictions(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        pl.struct("answer", "category").map_elements(lambda r: parse_answer(r["answer"], r["category"]), return_dtype=pl.String).alias("parsed")
    )


def _binary(gold: list[str], pred: list[str], positive: str) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=[positive], average=None, zero_division=0)
    return {"accuracy": 100 * accuracy_score(gold, pred), "precision": 100 * p[0], "recall": 100 * r[0], "f1": 100 * f[0]}


def _macro(gold: list[str], pred: list[str]) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    p, r, f, _ = precision_recall_fscore_support(gold, pred, labels=list(MIXED_CLASSES), average="macro", zero_division=0)
    return {"accuracy": 100 * accuracy_score(gold, pred), "precision": 100 * p, "recall": 100 * r, "f1": 100 * f}


def summarise(values: Iterable[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean and sample standard deviation of every metric over iterations."""
    values = list(values)
    out = {}
    for m in METRICS:
        xs = [v[m] for v in values]
        out[m] = {
            "mean": round(statistics.fmean(xs), 6) if xs else None,
            "sd": round(statistics.stdev(xs), 6) if len(xs) > 1 else (0.0 if xs else None),
        }
    return out


def score_category(frame: pl.DataFrame, category: str) -> dict[str, Any]:
    """Metrics of one category (rows already parsed: column ``parsed``)."""
    part = frame.filter(pl.col("category") == category)
    parsed = part.filter(pl.col("parsed").is_not_null())
    per_iteration = []
    iterations = sorted(part["iteration"].unique().to_list())
    for it in iterations:
        rows = parsed.filter(pl.col("iteration") == it)
        if rows.height == 0:
            continue
        gold, pred = rows["label"].to_list(), rows["parsed"].to_list()
        per_iteration.append(_macro(gold, pred) if category == "mixed" else _binary(gold, pred, category))
    out: dict[str, Any] = {
        "n": part.height,
        "unparsed": part.height - parsed.height,
        "unparsed_share": round(100 * (part.height - parsed.height) / part.height, 6) if part.height else None,
        "iterations": len(iterations),
        **summarise(per_iteration),
    }
    if category == "mixed":
        out["by_class"] = {}
        for cls in BINARY_CATEGORIES:
            values = []
            for it in iterations:
                rows = parsed.filter((pl.col("iteration") == it) & pl.col("label").is_in([cls, "neither"]))
                if rows.height:  # any answer other than cls is a negative (paper: TN)
                    gold = [g if g == cls else "other" for g in rows["label"].to_list()]
                    pred = [p if p == cls else "other" for p in rows["parsed"].to_list()]
                    values.append(_binary(gold, pred, cls))
            out["by_class"][cls] = summarise(values)
    return out


def score_frame(frame: pl.DataFrame) -> dict[str, Any]:
    """``{"by_category": {category: metrics}}`` for every category present."""
    frame = with_predictions(frame)
    present = [c for c in CATEGORIES if c in set(frame["category"].to_list())]
    return {"by_category": {c: score_category(frame, c) for c in present}}


def score_file(answers: Path, out: Path) -> dict[str, Any]:
    """``hatecheck-pipeline score-llm``: score an answers file, write METRICS.json."""
    from hatecheck_pipeline.core.files import write_json

    doc = score_frame(read_answers(answers))
    doc["answers"] = str(answers)
    write_json(doc, out)
    return doc
