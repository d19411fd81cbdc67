"""Scoring raw LLM answers as "Detecting Hate Speech with GPT-3" does
(Chiu, Collins, Alexander 2022, section 4).

Input layout (CSV or Parquet): ``category`` (the category asked about:
``sexist``, ``racist`` or ``mixed``), ``label`` (gold: ``sexist`` /
``not-sexist``, ``racist`` / ``not-racist``; for mixed ``sexist`` /
``racist`` / ``neither``), ``answer`` (the model's raw text), an optional
``iteration`` (repeated runs of the same prompts; for the mixed settings the
example set) and an optional ``setting``: on a ``mixed`` row, ``mixed``
(section 4.4, no instruction; the default) or ``mixed_instruction``
(section 4.5, with the instruction line).

Yes/no settings (zero-, one-shot, single-category few-shot; Tables 1-3):
the first word of the answer (case and punctuation ignored), ``yes`` /
``no`` or the class word (``sexist``, ``not-sexist`` or ``not sexist``).
Anything else is unparsed: counted and omitted, as the paper omits its "not
applicable" answers. ``overall`` (the paper's "Overall" rows) pools the
racist and sexist prompts of an iteration (positive = the comment has the
category asked about).

Mixed settings (Tables 4 and 7), the paper's rule of section 4.4, for
category c in racist, sexist, over the comments labelled c or ``neither``
(the comments of the other category are not part of c's figures):

- true positive: labelled c and the answer *contains* c (case-insensitive
  substring: "sexist, racist" on a racist comment is a TP for racist);
- false negative: labelled c and the answer does not contain c, whatever it
  says ("transphobic", "neither", "I don't know", empty);
- false positive: labelled ``neither`` and the answer contains c;
- true negative: labelled ``neither`` and the answer does not contain c.

An answer is *out of scope* (section 4.4: "other than 'sexist', 'racist',
and 'neither'") when, read as :func:`answer_key` gives it, it is not one of
the three class words: ``transphobic``, ``sexist, racist``, ``not sexist``,
an empty answer. Out-of-scope answers are counted (``out_of_scope``), never
omitted, without the instruction.
With the instruction (section 4.5) the paper omits only the answers that
name both categories: ``both`` and ``racist and sexist`` (also ``sexist and
racist``), compared after lower-casing and stripping punctuation; they are
counted in ``omitted``.

Metrics, in percent: accuracy, and precision / recall / F1 of the positive
class, computed per iteration, then the mean and the sample standard
deviation over iterations (one iteration: sd 0). For the mixed settings,
``by_class`` holds the per-category figures above, per iteration (the
example sets of Tables 4 and 7) and ``pooled`` over every answer (the
tables' "All" rows, computed from the pooled confusion counts as the
authors' code does); the top-level mixed figures are the share of answers
naming exactly the comment's class (Figure 1's "percent correctly
categorized") as accuracy and the macro precision / recall / F1 over the
three classes (an answer naming no class, or several, is wrong for every
class). ``answers`` counts the distinct answers (Table 5) and
``confusion`` crosses label and answer (Table 6). A yes/no category's
``counts`` sums its parsed answers' confusion counts over the iterations
(Appendix B; :func:`appendix_b` gathers them per setting). When both mixed settings
are scored, ``instruction_contrast`` sets them side by side (section 4.5:
out-of-scope answers, distinct answers, Figure 1's share, the All rows'
F1), :func:`instruction_contrast`.

A figure whose denominator is zero (recall with no gold positive, precision
with no predicted positive) is undefined: stored as null with the reason
under ``undefined``, never as 0, and left out of every mean (a mean says
over how many iterations or classes it is, ``defined``; null when none).
F1 is undefined with recall (no gold positive), and 0 when there are gold
positives and no true positive.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

import polars as pl

from hatecheck_pipeline.core.errors import PipelineError

# The paper's figures (GPT-3 davinci, temperature 0.3) per setting: the
# tables of resources/published.yaml the report sets beside each setting.
PAPER_TABLES = {
    "zero_shot": "gpt3_detection_t1",
    "one_shot": "gpt3_detection_t2",
    "few_shot_single": "gpt3_detection_t3",
    "mixed": "gpt3_detection_t4",
    "mixed_instruction": "gpt3_detection_t7",
}
APPENDIX_B = "gpt3_detection_appb"  # the paper's confusion counts, every setting (rows <setting>:[<set>:]<category>)

MIXED_CLASSES = ("racist", "sexist", "neither")
BINARY_CATEGORIES = ("racist", "sexist")
CATEGORIES = (*BINARY_CATEGORIES, "mixed")
MIXED_SETTINGS = ("mixed", "mixed_instruction")
METRICS = ("accuracy", "precision", "recall", "f1")
COUNTS = ("tp", "fp", "fn", "tn")
WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")
# Answers the paper omits with the instruction (section 4.5), as answer_key gives them.
BOTH_ANSWERS = ("both", "racist and sexist", "sexist and racist")
# Why a figure is undefined (stored next to its null).
NO_CASES = "no case scored"
NO_PREDICTED_POSITIVE = "no predicted positive (TP + FP = 0)"
NO_GOLD_POSITIVE = "no gold positive (TP + FN = 0)"


class AnswersError(PipelineError, ValueError):
    """An answers file that does not follow the layout."""


def gold_labels(category: str) -> tuple[str, ...]:
    return MIXED_CLASSES if category == "mixed" else (category, f"not-{category}")


def parse_answer(answer: str | None, category: str) -> str | None:
    """The label a yes/no-setting answer gives, or None when it is unparsed
    (the mixed settings are scored by :func:`mixed_outcome` instead; here a
    mixed answer gives the class it names alone, see :func:`named_class`).

    >>> [parse_answer(a, "sexist") for a in ("Yes.", " no", "not-sexist.", "Not sexist", "sexist, racist", "maybe")]
    ['sexist', 'not-sexist', 'not-sexist', 'not-sexist', 'sexist', None]
    """
    if category == "mixed":
        return named_class(answer)
    words = WORD.findall((answer or "").lower())
    if not words:
        return None
    first = words[0]
    if first in ("yes", category):
        return category
    if first in ("no", f"not-{category}") or (first == "not" and words[1:2] == [category]):
        return f"not-{category}"
    return None


def answer_key(answer: str | None) -> str:
    """An answer as the distinct-answer tables count it: lower case,
    whitespace collapsed, surrounding spaces, quotes and final full stops
    stripped.

    >>> [answer_key(a) for a in (" Racist.", "racist and  sexist", "'Neither'", None)]
    ['racist', 'racist and sexist', 'neither', '']
    """
    text = " ".join((answer or "").split()).lower()
    return text.strip(" .'\"")


def in_scope(answer: str | None) -> bool:
    """Whether a mixed-setting answer is one of the three class words
    (section 4.4's in-scope answers), read as :func:`answer_key` gives it.

    >>> [in_scope(a) for a in ("Racist.", " neither", "sexist, racist", "not sexist", "transphobic", "")]
    [True, True, False, False, False, False]
    """
    return answer_key(answer) in MIXED_CLASSES


def mentions(answer: str | None, cls: str) -> bool:
    """Whether the answer contains the category (the paper's "contained a
    category that matched"): a case-insensitive substring test.

    >>> [mentions(a, "racist") for a in ("sexist, racist", "Racist.", "neither", "racists", None)]
    [True, True, False, True, False]
    """
    return cls in (answer or "").lower()


def named_class(answer: str | None) -> str | None:
    """The one class of racist / sexist / neither the answer contains, or
    None when it contains none or several.

    >>> [named_class(a) for a in ("racist.", "Neither, but the", "sexist and misogynistic", "sexist, racist", "both")]
    ['racist', 'neither', 'sexist', None, None]
    """
    named = [c for c in MIXED_CLASSES if mentions(answer, c)]
    return named[0] if len(named) == 1 else None


def omitted(answer: str | None, setting: str) -> bool:
    """With the instruction (section 4.5) the answers naming both
    categories are omitted; without it nothing is.

    >>> [omitted(a, "mixed_instruction") for a in ("Both.", "racist and sexist", "racist", "sexist, racist")]
    [True, True, False, False]
    >>> omitted("both", "mixed")
    False
    """
    return setting == "mixed_instruction" and answer_key(answer) in BOTH_ANSWERS


def mixed_outcome(label: str, answer: str | None, cls: str) -> str | None:
    """``tp`` / ``fn`` / ``fp`` / ``tn`` of one mixed answer for category
    ``cls`` (section 4.4); None when the comment is labelled with the other
    category (not part of ``cls``'s figures).

    >>> [mixed_outcome("racist", a, "racist") for a in ("sexist, racist", "transphobic", "neither", "I don't know")]
    ['tp', 'fn', 'fn', 'fn']
    >>> [mixed_outcome("neither", a, "sexist") for a in ("racist", "sexist.", "hypocritical")], mixed_outcome("sexist", "racist", "racist")
    (['tn', 'fp', 'tn'], None)
    """
    if label not in (cls, "neither"):
        return None
    hit = mentions(answer, cls)
    if label == cls:
        return "tp" if hit else "fn"
    return "fp" if hit else "tn"


def metrics_from_counts(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    """Accuracy, precision, recall, F1 (percent). A figure whose
    denominator is zero is undefined: None, with the reason under
    ``undefined``. F1 is the harmonic mean of precision and recall, as the
    paper computes it (2PR / (P + R)); it is undefined when recall is (no
    gold positive: there is nothing to find, whatever the answers), and 0
    when there are gold positives and no true positive (2TP / (2TP + FP +
    FN), also when no answer was positive and precision is undefined).

    >>> {k: round(v) for k, v in metrics_from_counts(300, 70, 300, 1130).items()}  # Table 21 "All" -> Table 7 "All", sexism
    {'accuracy': 79, 'precision': 81, 'recall': 50, 'f1': 62}
    >>> m = metrics_from_counts(0, 2, 0, 1)  # three negative comments, two answered yes
    >>> m["precision"], m["recall"], m["f1"], m["undefined"]["f1"]
    (0.0, None, None, 'no gold positive (TP + FN = 0)')
    """
    n = tp + fp + fn + tn
    out: dict[str, Any] = {
        "accuracy": 100 * (tp + tn) / n if n else None,
        "precision": 100 * tp / (tp + fp) if tp + fp else None,
        "recall": 100 * tp / (tp + fn) if tp + fn else None,
        "f1": 100 * 2 * tp / (2 * tp + fp + fn) if tp + fn else None,
    }
    reasons = {"accuracy": NO_CASES, "precision": NO_PREDICTED_POSITIVE, "recall": NO_GOLD_POSITIVE, "f1": NO_GOLD_POSITIVE}
    undefined = {m: reasons[m] for m in METRICS if out[m] is None}
    return {**out, "undefined": undefined} if undefined else out


def mean_defined(values: Iterable[float | None]) -> tuple[float | None, int]:
    """The mean of the defined values (None when there is none) and how
    many there were: an undefined figure is left out, never counted as 0.

    >>> mean_defined([60.0, None, 80.0]), mean_defined([None])
    ((70.0, 2), (None, 0))
    """
    xs = [v for v in values if v is not None]
    return (statistics.fmean(xs) if xs else None), len(xs)


def read_answers(path: Path) -> pl.DataFrame:
    """The answers file, checked: required columns, known categories, gold
    labels that fit their category, known mixed settings (a bad row is a
    one-line error naming file, row and rule)."""
    if not Path(path).exists():
        raise AnswersError(f"{path}: answers file not found")
    frame = pl.read_parquet(path) if str(path).endswith(".parquet") else pl.read_csv(path, infer_schema=False)
    missing = [c for c in ("category", "label", "answer") if c not in frame.columns]
    if missing:
        raise AnswersError(f"{path}: missing column(s) {missing} (need category, label, answer[, iteration][, setting])")
    if "iteration" not in frame.columns:
        frame = frame.with_columns(pl.lit("0").alias("iteration"))
    if "setting" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("setting"))
    frame = frame.with_columns(pl.col("category", "label", "iteration", "setting").cast(pl.String), pl.col("answer").cast(pl.String))
    for row, rec in enumerate(frame.select("category", "label", "setting").iter_rows(), start=1):
        category, label, setting = rec
        if category not in CATEGORIES:
            raise AnswersError(f"{path}: row {row}: category {category!r} is not one of {list(CATEGORIES)}")
        if label not in gold_labels(category):
            raise AnswersError(
                f"{path}: row {row}: label {label!r} is not a gold label of category {category!r} ({list(gold_labels(category))})"
            )
        if category == "mixed" and setting not in (None, "", *MIXED_SETTINGS):
            raise AnswersError(f"{path}: row {row}: setting {setting!r} of a mixed row is not one of {list(MIXED_SETTINGS)}")
    return frame


def with_predictions(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        pl.struct("answer", "category")
        .map_elements(lambda r: parse_answer(r["answer"], r["category"]), return_dtype=pl.String)
        .alias("parsed")
    )


def _binary(gold: list[str], pred: list[str], positive: str) -> dict[str, Any]:
    tp = sum(g == positive and p == positive for g, p in zip(gold, pred))
    fp = sum(g != positive and p == positive for g, p in zip(gold, pred))
    fn = sum(g == positive and p != positive for g, p in zip(gold, pred))
    return metrics_from_counts(tp, fp, fn, len(gold) - tp - fp - fn)


def _macro(gold: list[str], pred: list[str | None]) -> dict[str, Any]:
    """Accuracy and the macro precision / recall / F1 over the classes whose
    figure is defined (``defined_classes`` says how many; None when none)."""
    per = [_binary(gold, [p or "" for p in pred], c) for c in MIXED_CLASSES]
    out: dict[str, Any] = {"accuracy": 100 * sum(g == p for g, p in zip(gold, pred)) / len(gold)}
    undefined, counts = {}, {}
    for m in ("precision", "recall", "f1"):
        out[m], counts[m] = mean_defined(x[m] for x in per)
        if counts[m] < len(per):
            undefined[m] = "; ".join(f"{c}: {x['undefined'][m]}" for c, x in zip(MIXED_CLASSES, per) if x[m] is None)
    out["defined_classes"] = counts
    return {**out, "undefined": undefined} if undefined else out


def summarise(values: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mean and sample standard deviation of every metric over the
    iterations where it is defined (``defined``: how many of
    ``iterations``); None with the reason (``undefined``) when it is
    defined in none.

    >>> s = summarise([{"f1": 50.0}, {"f1": None, "undefined": {"f1": "no gold positive"}}, {"f1": 70.0}])["f1"]
    >>> s["mean"], s["defined"], s["iterations"]
    (60.0, 2, 3)
    >>> summarise([{"f1": None, "undefined": {"f1": "no gold positive"}}])["f1"]["undefined"]
    'no gold positive'
    """
    values = list(values)
    out = {}
    for m in METRICS:
        xs = [v[m] for v in values if v.get(m) is not None]
        out[m] = {
            "mean": round(statistics.fmean(xs), 6) if xs else None,
            "sd": round(statistics.stdev(xs), 6) if len(xs) > 1 else (0.0 if xs else None),
            "defined": len(xs),
            "iterations": len(values),
        }
        if not xs and values:
            out[m]["undefined"] = next((v["undefined"][m] for v in values if m in (v.get("undefined") or {})), NO_CASES)
    return out


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    """Floats to 6 places (None, the counts and the reasons as they are)."""
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in d.items()}


def _iterations(part: pl.DataFrame) -> list[str]:
    return sorted(part["iteration"].unique().to_list(), key=lambda s: tuple(int(x) if x.isdigit() else x for x in s.split(".")))


def score_binary(frame: pl.DataFrame, categories: Iterable[str]) -> dict[str, Any]:
    """Metrics of yes/no answers (rows already parsed: column ``parsed``) of
    the given categories, pooled per iteration (one category, or the
    paper's "Overall" over both)."""
    categories = list(categories)
    part = frame.filter(pl.col("category").is_in(categories))
    parsed = part.filter(pl.col("parsed").is_not_null())
    per_iteration = []
    counts: Counter = Counter()
    iterations = _iterations(part)
    for it in iterations:
        rows = parsed.filter(pl.col("iteration") == it)
        if rows.height == 0:
            continue
        gold = ["pos" if not g.startswith("not-") else "neg" for g in rows["label"].to_list()]
        pred = ["pos" if not p.startswith("not-") else "neg" for p in rows["parsed"].to_list()]
        per_iteration.append(_binary(gold, pred, "pos"))
        counts.update(("tp" if p == "pos" else "fn") if g == "pos" else ("fp" if p == "pos" else "tn") for g, p in zip(gold, pred))
    return {
        "n": part.height,
        # Appendix B: the parsed answers' confusion counts summed over the iterations
        "counts": {k: counts[k] for k in COUNTS},
        "unparsed": part.height - parsed.height,
        "unparsed_share": round(100 * (part.height - parsed.height) / part.height, 6) if part.height else None,
        "iterations": len(iterations),
        **summarise(per_iteration),
    }


def score_mixed(part: pl.DataFrame, setting: str) -> dict[str, Any]:
    """Metrics of the answers of one mixed setting (``mixed`` or
    ``mixed_instruction``) by the paper's rule (module docstring)."""
    answers, labels, its = part["answer"].to_list(), part["label"].to_list(), part["iteration"].to_list()
    keep = [not omitted(a, setting) for a in answers]
    iterations = _iterations(part)
    per_iteration, by_class = [], {}
    for it in iterations:
        rows = [(lab, a) for lab, a, i, k in zip(labels, answers, its, keep) if i == it and k]
        if rows:
            per_iteration.append(_macro([lab for lab, _ in rows], [named_class(a) for _, a in rows]))
    for cls in BINARY_CATEGORIES:
        counts = {it: Counter() for it in iterations}
        for lab, a, i, k in zip(labels, answers, its, keep):
            outcome = mixed_outcome(lab, a, cls) if k else None
            if outcome:
                counts[i][outcome] += 1
        pooled = Counter()
        for c in counts.values():
            pooled.update(c)
        per = {
            it: {**_rounded(metrics_from_counts(*(c[k] for k in COUNTS))), **{k: c[k] for k in COUNTS}}
            for it, c in counts.items()
            if sum(c.values())
        }
        by_class[cls] = {
            **summarise(per.values()),
            "pooled": {**_rounded(metrics_from_counts(*(pooled[k] for k in COUNTS))), **{k: pooled[k] for k in COUNTS}},
            "per_iteration": per,
        }
    dropped = len(keep) - sum(keep)
    confusion: dict[str, Counter] = {c: Counter() for c in MIXED_CLASSES}
    for lab, a in zip(labels, answers):
        confusion[lab][answer_key(a)] += 1
    return {
        "setting": setting,
        "n": part.height,
        "omitted": dropped,
        # the report's "unparsed %" column: answers left out of the figures
        "unparsed": dropped,
        "unparsed_share": round(100 * dropped / part.height, 6) if part.height else None,
        # section 4.4: answers other than racist / sexist / neither (counted, scored by the contains rule)
        "out_of_scope": sum(not in_scope(a) for a in answers),
        "out_of_scope_share": round(100 * sum(not in_scope(a) for a in answers) / part.height, 6) if part.height else None,
        "distinct": len({answer_key(a) for a in answers}),
        "iterations": len(iterations),
        **summarise(per_iteration),
        "by_class": by_class,
        "answers": dict(Counter(answer_key(a) for a in answers).most_common()),
        "confusion": {lab: dict(c.most_common()) for lab, c in confusion.items() if c},
    }


def _counts_row(c: Mapping[str, int]) -> dict[str, int]:
    row = {k: int(c.get(k, 0)) for k in COUNTS}
    return {**row, "n": sum(row.values())}


def appendix_b(by_category: Mapping[str, Any], setting: str) -> dict[str, Any]:
    """The paper's Appendix B for one setting (a :func:`score_frame`
    ``by_category``): confusion counts (tp / fp / fn / tn, and n) summed
    over the iterations, per category. Yes/no settings: ``racist``,
    ``sexist`` and ``overall`` (the "hate speech" tables: both pooled), each
    ``{"all": counts}`` over the parsed answers (the unparsed ones omitted,
    as the paper omits its "not applicable" answers); mixed settings:
    ``racist`` and ``sexist`` by the contains rule of section 4.4 over the
    comments labelled c or neither, ``all`` (Tables 18-21's All rows) and
    ``by_example_set`` (the repeats of a set, ``<set>.<repeat>``, summed).

    >>> b = {"racist": {"counts": {"tp": 3, "fp": 1, "fn": 2, "tn": 4}}}
    >>> appendix_b(b, "zero_shot")
    {'racist': {'all': {'tp': 3, 'fp': 1, 'fn': 2, 'tn': 4, 'n': 10}}}
    >>> m = {"mixed": {"by_class": {"racist": {"pooled": {"tp": 2, "fp": 0, "fn": 1, "tn": 3, "f1": 80.0},
    ...      "per_iteration": {"1.0": {"tp": 1, "fp": 0, "fn": 0, "tn": 1}, "1.1": {"tp": 1, "fp": 0, "fn": 1, "tn": 2}}}}}}
    >>> appendix_b(m, "mixed")["racist"]["by_example_set"]
    {'1': {'tp': 2, 'fp': 0, 'fn': 1, 'tn': 3, 'n': 6}}
    """
    out: dict[str, Any] = {}
    if setting in MIXED_SETTINGS:
        block = by_category.get(setting) or {}
        for cls, b in (block.get("by_class") or {}).items():
            sets: dict[str, Counter] = {}
            for it, c in (b.get("per_iteration") or {}).items():
                sets.setdefault(str(it).split(".")[0], Counter()).update({k: c.get(k, 0) for k in COUNTS})
            out[cls] = {
                "all": _counts_row(b.get("pooled") or {}),
                "by_example_set": {
                    k: _counts_row(v)
                    for k, v in sorted(sets.items(), key=lambda kv: (not kv[0].isdigit(), int(kv[0]) if kv[0].isdigit() else kv[0]))
                },
            }
        return out
    for category in (*BINARY_CATEGORIES, "overall"):
        m = by_category.get(category)
        if m is not None and "counts" in m:
            out[category] = {"all": _counts_row(m["counts"])}
    return out


CONTRAST_FIGURES = ("n", "distinct", "out_of_scope", "out_of_scope_share", "omitted")


def instruction_contrast(without: dict[str, Any], with_: dict[str, Any]) -> dict[str, Any]:
    """Section 4.5's comparison of the two mixed settings (the
    :func:`score_mixed` blocks of ``mixed`` and ``mixed_instruction``):
    per setting the answers, distinct answers, out-of-scope answers (count
    and percent), omitted answers, Figure 1's share of answers naming
    exactly the comment's class (mean over example sets) and the All rows'
    F1 per category; ``change``: with minus without (percentage points,
    counts for the distinct answers).

    >>> a = {"n": 4, "distinct": 4, "out_of_scope": 2, "out_of_scope_share": 50.0, "omitted": 0, "accuracy": {"mean": 25.0},
    ...      "by_class": {"racist": {"pooled": {"f1": 40.0}}, "sexist": {"pooled": {"f1": 50.0}}}}
    >>> b = {**a, "distinct": 3, "out_of_scope": 1, "out_of_scope_share": 25.0, "omitted": 1, "accuracy": {"mean": 50.0}}
    >>> c = instruction_contrast(a, b)
    >>> c["without"]["correct_share"], c["with"]["out_of_scope"], c["change"]
    (25.0, 1, {'distinct': -1, 'out_of_scope_share': -25.0, 'correct_share': 25.0, 'f1_racist': 0.0, 'f1_sexist': 0.0})
    """

    def side(m: dict[str, Any]) -> dict[str, Any]:
        f1 = {f"f1_{c}": ((m.get("by_class") or {}).get(c) or {}).get("pooled", {}).get("f1") for c in BINARY_CATEGORIES}
        return {**{k: m.get(k) for k in CONTRAST_FIGURES}, "correct_share": (m.get("accuracy") or {}).get("mean"), **f1}

    a, b = side(without), side(with_)
    change = {
        k: (round(b[k] - a[k], 6) if a[k] is not None and b[k] is not None else None)
        for k in ("distinct", "out_of_scope_share", "correct_share", *(f"f1_{c}" for c in BINARY_CATEGORIES))
    }
    return {"without": a, "with": b, "change": change}


def score_frame(frame: pl.DataFrame) -> dict[str, Any]:
    """``{"by_category": {key: metrics}}``: ``racist`` / ``sexist`` (yes/no
    settings), ``overall`` (both pooled, when both are present), ``mixed``
    and ``mixed_instruction`` (the mixed rows by their ``setting``); with
    both mixed settings also ``instruction_contrast``
    (:func:`instruction_contrast`)."""
    if "setting" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("setting"))
    frame = with_predictions(frame)
    present = set(frame["category"].to_list())
    out: dict[str, Any] = {c: score_binary(frame, [c]) for c in BINARY_CATEGORIES if c in present}
    if all(c in present for c in BINARY_CATEGORIES):
        out["overall"] = score_binary(frame, BINARY_CATEGORIES)
    mixed = frame.filter(pl.col("category") == "mixed").with_columns(
        pl.when(pl.col("setting") == "mixed_instruction").then(pl.lit("mixed_instruction")).otherwise(pl.lit("mixed")).alias("setting")
    )
    for setting in MIXED_SETTINGS:
        part = mixed.filter(pl.col("setting") == setting)
        if part.height:
            out[setting] = score_mixed(part, setting)
    doc: dict[str, Any] = {"by_category": out}
    if all(s in out for s in MIXED_SETTINGS):
        doc["instruction_contrast"] = instruction_contrast(out["mixed"], out["mixed_instruction"])
    return doc


def score_file(answers: Path, out: Path) -> dict[str, Any]:
    """``hatecheck-pipeline score-llm``: score an answers file, write METRICS.json."""
    from hatecheck_pipeline.core.files import write_json

    doc = score_frame(read_answers(answers))
    doc["answers"] = str(answers)
    write_json(doc, out)
    return doc
