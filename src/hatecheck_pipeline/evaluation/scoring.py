"""Score any predictions file against a suite's gold labels.

The ``score`` command and the pipeline's score stages (:func:`score`)
share this module: predictions from our models, a commercial API or another
lab's model go through the same checks and metrics.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

import numpy as np
import polars as pl

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_csv, write_parquet, write_text
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL
from hatecheck_pipeline.evaluation import metrics as M
from hatecheck_pipeline.evaluation.invariance import invariance
from hatecheck_pipeline.suites.clusters import FILLER_COLUMN, TEMPLATE_COLUMNS, filler_codes, merge_clusters, template_clusters
from hatecheck_pipeline.suites.registry import Suite, by_name, mhc
from hatecheck_pipeline.suites.sample import predicted_subsample

LABEL_WORDS = {
    "hateful": 1,
    "hate": 1,
    "1": 1,
    "true": 1,
    "non-hateful": 0,
    "non_hateful": 0,
    "nonhateful": 0,
    "not-hateful": 0,
    "non-hate": 0,
    "0": 0,
    "false": 0,
}
GOLD_COLUMNS = [
    "functionality",
    "target_ident",
    "from_identity_template",
    "focus_lemma",
    "ref_case_id",
    "language",
    "source_functionality",
    "generator",
    "source_id",  # expanded suites (perturbed cases; source_id: the case perturbed)
    *TEMPLATE_COLUMNS,
]  # the template of each case: the bootstrap's resampling unit (suites/clusters.py)


class ScoringError(PipelineError, ValueError):
    """A predictions file that cannot be scored (says why, with counts)."""


def resolve_suite(name: str, params: Mapping[str, Any]) -> Suite:
    """``hatecheck``, ``mhc:<language>`` (MHC's language name) or a registered suite name.

    >>> resolve_suite("mhc:german", {"datasets": {"mhc": {"languages": ["german"]}}}).name
    'mhc_german'
    """
    if name.startswith("mhc:"):
        language = name.split(":", 1)[1]
        known = params["datasets"]["mhc"]["languages"]
        if language not in known:
            raise ScoringError(f"unknown MHC language {language!r}; known: {known}")
        return mhc(language)
    try:
        return by_name(params, name)
    except KeyError as exc:
        raise ScoringError(f"{exc.args[0]}: use hatecheck, mhc:<language> or a registered suite") from None


def _examples(values: list[Any], k: int = 5) -> str:
    return ", ".join(map(repr, values[:k])) + (" ..." if len(values) > k else "")


def _rows(bad: pl.Series, k: int = 5) -> str:
    """The data rows (1 = the first after the header) where ``bad`` holds."""
    rows = (bad.arg_true() + 1).to_list()
    return "row(s) " + ", ".join(map(str, rows[:k])) + (" ..." if len(rows) > k else "")


def parse_labels(values: pl.Series, threshold: float | None = None) -> np.ndarray:
    """Predictions as 0/1 (1 = hateful).

    Accepts hateful/non-hateful (any case), 1/0, booleans, or, with a
    ``threshold``, probabilities of hateful (``p >= threshold`` is hateful).

    >>> parse_labels(pl.Series(["hateful", "Non-hateful", "1"])).tolist()
    [1, 0, 1]
    >>> parse_labels(pl.Series([0.2, 0.7]), threshold=0.5).tolist()
    [0, 1]
    """
    if threshold is not None and values.dtype != pl.Boolean:
        return _thresholded(values, threshold)
    if values.dtype == pl.String:
        as_number = values.str.strip_chars().cast(pl.Float64, strict=False)
        if as_number.null_count() == values.null_count() and not as_number.is_in([0.0, 1.0]).all():
            values = as_number  # numbers written as text (CSV) that are not all 1/0: probabilities without --threshold
    if values.dtype.is_numeric() or values.dtype == pl.Boolean:
        numbers = values.cast(pl.Float64)
        bad = numbers.is_null() | numbers.is_nan() | ~numbers.is_in([0.0, 1.0])
        if bad.any():
            raise ScoringError(
                f"{int(bad.sum())} prediction(s) are not 1/0 (probabilities need --threshold) at {_rows(bad)}: "
                f"{_examples(values.filter(bad).to_list())}"
            )
        return (numbers == 1.0).cast(pl.Int8).to_numpy().astype(int)
    text = values.cast(pl.String).str.strip_chars().str.to_lowercase()
    mapped = text.replace_strict(LABEL_WORDS, default=None, return_dtype=pl.Int8)
    bad = mapped.is_null()
    if bad.any():
        raise ScoringError(
            f"{int(bad.sum())} prediction(s) are not hateful/non-hateful or 1/0 at {_rows(bad)}: {_examples(values.filter(bad).to_list())}"
        )
    return mapped.to_numpy().astype(int)


def _thresholded(values: pl.Series, threshold: float) -> np.ndarray:
    """Probabilities of hateful (numbers, or numbers written as text) as
    0/1 at ``threshold``; a value that is missing, not a number or outside
    [0, 1] is an error naming its row.

    >>> _thresholded(pl.Series(["0.2", " 0.7"]), 0.5).tolist()
    [0, 1]
    """
    raw = values.str.strip_chars() if values.dtype == pl.String else values
    numbers = raw.cast(pl.Float64, strict=False)
    bad = numbers.is_null() | numbers.is_nan() | (numbers < 0) | (numbers > 1)
    if bad.any():
        raise ScoringError(
            f"{int(bad.sum())} prediction(s) are not probabilities in [0, 1] (--threshold {threshold:g} given) at {_rows(bad)}: "
            f"{_examples(values.filter(bad).to_list())}"
        )
    return (numbers >= threshold).cast(pl.Int8).to_numpy().astype(int)


def _check_utf8(path: Path) -> None:
    """A CSV/TSV predictions file must be UTF-8 text: name the first bad
    line instead of letting the CSV reader fail with a traceback."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ScoringError(
            f"{path}: line {line} (byte {exc.start}): bytes that are not UTF-8 text "
            "(a binary file, or another encoding: save the predictions as UTF-8 CSV)"
        ) from None


def read_table(path: str | Path) -> pl.DataFrame:
    """A predictions file (CSV, TSV or Parquet) as read, every problem one
    line naming the file."""
    path = Path(path)
    if not path.exists():
        raise ScoringError(f"{path}: predictions file not found")
    if path.is_file() and path.stat().st_size == 0:
        raise ScoringError(f"{path}: the predictions file is empty (0 bytes)")
    suffix = path.suffix.lower()
    if suffix not in {".parquet", ".csv", ".tsv"}:
        raise ScoringError(f"{path}: use a .csv, .tsv or .parquet file")
    if suffix != ".parquet":
        _check_utf8(path)
    try:
        if suffix == ".parquet":
            frame = pl.read_parquet(path)
        else:
            frame = pl.read_csv(path, separator="\t" if suffix == ".tsv" else ",", infer_schema_length=0)
    except (pl.exceptions.PolarsError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ScoringError(f"{path}: not a readable {suffix[1:].upper()} predictions file ({reason})") from None
    return frame


def read_predictions(
    path: str | Path,
    id_column: str,
    pred_column: str = "pred",
    threshold: float | None = None,
    with_p: bool = False,
) -> pl.DataFrame:
    """``id`` (string) and ``pred`` (0/1) from a CSV or Parquet file; with
    ``with_p``, also ``p_hateful`` (a float, null where it is no number)
    when the file has that column.

    The id column is the suite's own (``case_id``, ``mhc_case_id``) or ``id``.
    """
    path = Path(path)
    frame = read_table(path)
    ids = next((c for c in (id_column, "id") if c in frame.columns), None)
    if ids is None:
        raise ScoringError(f"{path}: no id column ({id_column!r} or 'id'); columns: {frame.columns}")
    if pred_column not in frame.columns:
        raise ScoringError(f"{path}: no prediction column {pred_column!r} (name it with --pred-column); columns: {frame.columns}")
    if UNANSWERED in frame.columns:  # a scoring API's refused texts: scored on the answered cases only
        frame = frame.filter(pl.col(UNANSWERED).is_null())
    pred_values = frame[pred_column]
    id_values = frame[ids].cast(pl.String).str.strip_chars().str.replace(r"\.0$", "")
    try:
        labels = parse_labels(pred_values, threshold)
    except ScoringError as exc:
        raise ScoringError(f"{path}: column {pred_column!r}: {exc}") from None
    out = pl.DataFrame({"id": id_values, "pred": labels})
    if with_p and P_HATEFUL in frame.columns:
        p = frame[P_HATEFUL]
        p = (p.str.strip_chars() if p.dtype == pl.String else p).cast(pl.Float64, strict=False)
        out = out.with_columns(p.alias(P_HATEFUL))
    return out


def gold_cases(suite: Suite, table: str | Path | None = None) -> pl.DataFrame:
    """The suite's cases: ``id`` (its own id column), ``gold`` (0/1), the
    grouping columns it has and its ``text`` (from ``table``, by default the
    suite's table before any text scheme: the texts as published)."""
    frame = suite.load_raw(None if table is None else str(table))
    names = frame.collect_schema().names()
    keep = [c for c in (*GOLD_COLUMNS, "text") if c in names]
    return (
        frame.select(
            pl.col(suite.id_column).cast(pl.String).alias("id"),
            (pl.col("label") == HATEFUL).cast(pl.Int8).alias("gold"),
            *keep,
        )
        .collect()
        .with_row_index("_order")
    )


def align(gold: pl.DataFrame, preds: pl.DataFrame, source: str = "predictions") -> pl.DataFrame:
    """Gold cases with their prediction; every id must match exactly once."""
    problems = []
    dupes = preds.filter(pl.col("id").is_duplicated())["id"].unique().sort().to_list()
    if dupes:
        problems.append(f"{len(dupes)} duplicate id(s): {_examples(dupes)}")
    unknown = preds.join(gold, on="id", how="anti")["id"].to_list()
    if unknown:
        problems.append(f"{len(unknown)} unknown id(s) not in the suite: {_examples(unknown)}")
    missing = gold.join(preds, on="id", how="anti")["id"].to_list()
    if missing:
        problems.append(f"{len(missing)} of {gold.height} suite case(s) have no prediction: {_examples(missing)}")
    if problems:
        raise ScoringError(f"{source}: " + "; ".join(problems))
    return gold.join(preds, on="id", how="left").sort("_order")


def functionality_class(code: str) -> str:
    """The functionality class is the code's first part.

    >>> functionality_class("derog_neg_emote_h"), functionality_class("ref_subs_clause_h")
    ('derog', 'ref')
    """
    return code.split("_", 1)[0]


def model_failures(model: str, suite: str) -> str:
    """Every case of a (model, suite) the model got wrong (CSV: id,
    functionality, text, gold and predicted label, p_hateful), beside its
    metrics file.

    >>> model_failures("B-D", "hatecheck")
    'results/B-D/hatecheck/failures.csv'
    """
    return str(PurePosixPath(paths.metrics(model, suite)).with_name("failures.csv"))


CLUSTER = "_cluster"  # column of aligned cases: the case's template cluster (template-level bootstrap)
FILLER = "_filler"  # column of aligned cases: the filler crossed with the templates (-1: none)


def uses_fillers(suite: Suite) -> bool:
    """Whether the suite's intervals resample fillers too: HateCheck and
    MHC cross their templates with target groups and slurs (an expanded
    suite's copies are resampled by their source's template only).

    >>> from hatecheck_pipeline.suites.registry import heldout, hatecheck
    >>> uses_fillers(hatecheck()), uses_fillers(heldout("davidson2017"))
    (True, False)
    """
    return suite.functional


def resampling_unit(suite: Suite) -> str:
    """``template`` for functional and expanded suites (cases generated from
    one template are resampled together), ``case`` for held-out test sets.

    >>> from hatecheck_pipeline.suites.registry import heldout, hatecheck
    >>> resampling_unit(hatecheck()), resampling_unit(heldout("davidson2017"))
    ('template', 'case')
    """
    return M.CASE if suite.heldout else M.TEMPLATE


REPLICATE_SECTIONS = ("overall", "by_functionality_class")  # sections whose bootstrap values a score stage keeps
REPLICATE_SCHEMA = {"section": pl.String, "group": pl.String, "figure": pl.String, "replicate": pl.Int32, "value": pl.Float64}


def _summary(part: pl.DataFrame, names: list[str], boot: M.Bootstrap, store: dict[str, Any] | None = None) -> dict[str, Any]:
    clusters = part[CLUSTER].to_numpy() if CLUSTER in part.columns else None
    fillers = part[FILLER].to_numpy() if FILLER in part.columns else None
    return M.summarise(part["gold"].to_numpy(), part["pred"].to_numpy(), names, boot, clusters, store, fillers)


def _groups(
    cases: pl.DataFrame,
    column: str,
    names: list[str],
    boot: M.Bootstrap,
    replicates: dict[tuple[str, str | None], dict] | None = None,
    section: str = "",
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, part in cases.filter(pl.col(column).is_not_null()).group_by(column, maintain_order=True):
        store = None if replicates is None else replicates.setdefault((section, str(key[0])), {})
        out[str(key[0])] = _summary(part, names, boot, store)
    return out


def replicates_frame(replicates: dict[tuple[str, str | None], dict[str, Any]]) -> pl.DataFrame:
    """Bootstrap values in long form: section, group (None: overall), figure,
    replicate number, value (a share, not a percentage)."""
    parts = [
        pl.DataFrame(
            {
                "section": section,
                "group": group,
                "figure": figure,
                "replicate": np.arange(len(values), dtype=np.int32),
                "value": np.asarray(values, dtype=float),
            },
            schema=REPLICATE_SCHEMA,
        )
        for (section, group), figures in replicates.items()
        for figure, values in figures.items()
    ]
    return pl.concat(parts) if parts else pl.DataFrame(schema=REPLICATE_SCHEMA)


def contrast_pairs(cases: pl.DataFrame, id_column: str) -> pl.DataFrame:
    """(hateful case, non-hateful contrast) pairs linked by ``ref_case_id``.

    MHC's ``ref_case_id`` is a per-language number (``"12.0"``); it is mapped
    to the suite's id (``<language>-12``).
    """
    if "ref_case_id" not in cases.columns:
        return pl.DataFrame()
    ref = pl.col("ref_case_id").cast(pl.String).str.replace(r"\.0$", "")
    if id_column == "mhc_case_id":
        ref = pl.concat_str([pl.col("language"), pl.lit("-"), ref])
    linked = cases.filter(pl.col("ref_case_id").is_not_null()).with_columns(ref.alias("_ref"))
    pairs = linked.join(cases, left_on="_ref", right_on="id", suffix="_ref").filter(pl.col("gold") != pl.col("gold_ref"))
    clusters = [pl.col(CLUSTER), pl.col(f"{CLUSTER}_ref")] if CLUSTER in cases.columns else []
    return pairs.select(
        pl.when(pl.col("gold") == 1).then(pl.col("pred") == 1).otherwise(pl.col("pred_ref") == 1).alias("hateful_correct"),
        pl.when(pl.col("gold") == 0).then(pl.col("pred") == 0).otherwise(pl.col("pred_ref") == 0).alias("contrast_correct"),
        *clusters,
    )


def with_clusters(cases: pl.DataFrame, unit: str, fillers: bool = False) -> pl.DataFrame:
    """Aligned cases with their template cluster (``_cluster``) when the
    bootstrap resamples templates, and (``fillers``) the filler crossed with
    the templates (``_filler``, -1: none); unchanged for the case-level
    bootstrap."""
    if unit == M.CASE:
        return cases.drop(CLUSTER, FILLER, strict=False)
    if unit != M.TEMPLATE:
        raise ValueError(f"unknown resampling unit {unit!r}: {M.CASE} or {M.TEMPLATE}")
    clusters = template_clusters(cases)
    out = cases.with_columns(pl.Series(CLUSTER, clusters, dtype=pl.Int64))
    if fillers:
        codes = filler_codes(cases, clusters)
        if (codes >= 0).any():
            out = out.with_columns(pl.Series(FILLER, codes, dtype=pl.Int64))
    return out


def score_cases(
    cases: pl.DataFrame,
    id_column: str,
    boot: M.Bootstrap = M.Bootstrap(),
    unit: str = M.CASE,
    replicates: dict[tuple[str, str | None], dict] | None = None,
    fillers: bool = False,
) -> dict[str, Any]:
    """Every section of METRICS.json from aligned cases (``gold``, ``pred``).

    ``unit``: ``case`` resamples cases; ``template`` resamples the
    suite's templates (every figure: overall, per label, functionality,
    class, target, slur, generator and the contrast pairs), each figure
    with its ``n_clusters``; ``fillers``: the fillers crossed with the
    templates are resampled too (two-way, :func:`metrics.bootstrap_replicates`),
    each figure with its ``n_fillers``. ``replicates`` (a dict) receives the bootstrap
    values of the overall figures and of each functionality class's
    accuracy, keyed by (section, group)."""
    if unit == M.CASE or CLUSTER not in cases.columns:  # not yet clustered by the caller (run: once, for the bootstrap record too)
        cases = with_clusters(cases, unit, fillers)
    overall = None if replicates is None else replicates.setdefault(("overall", None), {})
    out: dict[str, Any] = {
        "overall": _summary(cases, ["accuracy", "f1_hateful", "f1_non_hateful", "macro_f1"], boot, overall),
        "by_label": {},
    }
    for label, value in ((HATEFUL, 1), (NON_HATEFUL, 0)):
        out["by_label"][label] = _summary(cases.filter(pl.col("gold") == value), ["accuracy"], boot)
    if "functionality" in cases.columns:
        out["by_functionality"] = _groups(cases, "functionality", ["accuracy"], boot)
        classes = cases.with_columns(pl.col("functionality").map_elements(functionality_class, return_dtype=pl.String).alias("_class"))
        out["by_functionality_class"] = _groups(classes, "_class", ["accuracy"], boot, replicates, "by_functionality_class")
    # Expanded suites: accuracy per functionality of the source case (the
    # original-vs-expanded comparison, GPT-HateCheck Figure 4) and per generator.
    if "source_functionality" in cases.columns:
        out["by_source_functionality"] = _groups(cases, "source_functionality", ["accuracy"], boot)
    if "generator" in cases.columns:
        out["by_generator"] = _groups(cases, "generator", ["accuracy"], boot)
    if {"target_ident", "from_identity_template"} <= set(cases.columns):
        ident = cases.filter(pl.col("from_identity_template").fill_null(False))
        out["by_target"] = _groups(ident, "target_ident", ["accuracy", "macro_f1"], boot)
    if {"functionality", "focus_lemma"} <= set(cases.columns):
        reclaimed = cases.filter(pl.col("functionality") == "slur_reclaimed_nh")
        if reclaimed.height:
            out["by_reclaimed_slur"] = _groups(reclaimed, "focus_lemma", ["accuracy"], boot)
    pairs = contrast_pairs(cases, id_column)
    if pairs.height:
        pair_clusters = merge_clusters(pairs[CLUSTER].to_numpy(), pairs[f"{CLUSTER}_ref"].to_numpy()) if CLUSTER in pairs.columns else None
        out["contrast"] = M.contrast_consistency(
            pairs["hateful_correct"].to_numpy(), pairs["contrast_correct"].to_numpy(), boot, pair_clusters
        )
    return out


def bootstrap_record(cases: pl.DataFrame, unit: str, boot: M.Bootstrap, n_clusters: int, n_fillers: int | None = None) -> dict[str, Any]:
    """The ``bootstrap`` section: resamples, seed, level, the resampling unit,
    how many units the whole suite has and (templates) which columns define
    them and how many cases have none (each its own cluster); with fillers
    (``n_fillers``), how many the suite has, the column they come from and
    how many cases have none (not resampled on that axis)."""
    out = boot.record(unit, n_clusters=n_clusters)
    if n_fillers is not None:
        out["fillers"] = {
            "column": FILLER_COLUMN,
            "n_fillers": n_fillers,
            "cases_without_filler": int((cases[FILLER] < 0).sum()) if FILLER in cases.columns else cases.height,
            "method": "two-way (pigeonhole) bootstrap: templates and fillers drawn independently",
        }
    if unit == M.TEMPLATE:
        present = [c for c in TEMPLATE_COLUMNS if c in cases.columns]
        out["template_columns"] = present
        if present:
            none = pl.all_horizontal(pl.col(c).cast(pl.String).fill_null("").str.strip_chars() == "" for c in present)
            out["cases_without_template"] = int(cases.select(none.sum()).item())
        else:
            out["cases_without_template"] = cases.height
    return out


P_HATEFUL = "p_hateful"
# failures.csv: every case the model got wrong, in the suite's order
FAILURE_COLUMNS = ("id", "functionality", "text", "gold_label", "predicted_label", P_HATEFUL)


def _label_word(column: str) -> pl.Expr:
    return pl.when(pl.col(column) == 1).then(pl.lit(HATEFUL)).otherwise(pl.lit(NON_HATEFUL))


def failures_frame(cases: pl.DataFrame) -> pl.DataFrame:
    """The cases a model got wrong (aligned cases: ``gold``, ``pred``), in
    the suite's order: ``id``, ``functionality`` (where the suite has it),
    ``text``, ``gold_label`` and ``predicted_label`` (hateful /
    non-hateful) and ``p_hateful`` (where the predictions file has it).

    >>> cases = pl.DataFrame({"_order": [1, 0, 2], "id": ["b", "a", "c"], "text": ["x", "y", "z"],
    ...                       "gold": [1, 0, 0], "pred": [0, 1, 0]})
    >>> failures_frame(cases).rows()
    [('a', 'y', 'non-hateful', 'hateful'), ('b', 'x', 'hateful', 'non-hateful')]
    """
    wrong = cases.filter(pl.col("gold") != pl.col("pred"))
    if "_order" in wrong.columns:
        wrong = wrong.sort("_order")
    present = {
        "id": pl.col("id"),
        "functionality": pl.col("functionality"),
        "text": pl.col("text"),
        "gold_label": _label_word("gold"),
        "predicted_label": _label_word("pred"),
        P_HATEFUL: pl.col(P_HATEFUL),
    }
    return wrong.select(
        expr.alias(name) for name, expr in present.items() if name in ("gold_label", "predicted_label") or name in wrong.columns
    )


def failures_path(metrics: str | Path) -> Path:
    """Where the ``score`` command writes the failing cases of a metrics
    file: beside it, ``<stem>.failures.csv``.

    >>> str(failures_path("scored/hatecheck.json"))
    'scored/hatecheck.failures.csv'
    """
    metrics = Path(metrics)
    return metrics.with_name(f"{metrics.stem}.failures.csv")


UNANSWERED = "unanswered"  # a scoring API's predictions: its message for a text it did not answer (null: answered)


def unanswered_ids(predictions: str | Path, id_column: str) -> list[str] | None:
    """The ids of the texts a scoring API left unanswered (its predictions'
    ``unanswered`` column not null); None when the file has no such column."""
    frame = read_table(predictions)
    ids = next((c for c in (id_column, "id") if c in frame.columns), None)
    if UNANSWERED not in frame.columns or ids is None:
        return None
    return frame.filter(pl.col(UNANSWERED).is_not_null())[ids].cast(pl.String).str.strip_chars().str.replace(r"\.0$", "").to_list()


def add_unanswered(doc: dict[str, Any], skipped: pl.DataFrame) -> None:
    """``n_unanswered`` in the overall figures and in each functional test's
    (``skipped``: the gold cases left unanswered)."""
    doc["overall"]["n_unanswered"] = skipped.height
    counts = dict(skipped.group_by("functionality").len().iter_rows()) if "functionality" in skipped.columns else {}
    for code, entry in (doc.get("by_functionality") or {}).items():
        entry["n_unanswered"] = int(counts.get(code, 0))
    gone = {code: int(n) for code, n in counts.items() if code not in (doc.get("by_functionality") or {})}
    if gone:  # a functional test none of whose cases was answered
        doc["unanswered_functionalities"] = gone


def write_metrics(doc: Mapping[str, Any], path: str | Path) -> Path:
    """JSON in section order (not sorted: functionalities keep the suite's
    order), written atomically."""
    return write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", path)


def run(
    suite: Suite,
    predictions: str | Path,
    out: str | Path,
    pred_column: str = "pred",
    threshold: float | None = None,
    boot: M.Bootstrap = M.Bootstrap(),
    gold: pl.DataFrame | None = None,
    replicates: str | Path | None = None,
    failures: str | Path | None = None,
    source: pl.DataFrame | None = None,
    source_record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Score stage: predictions file -> METRICS.json (returns the document);
    ``replicates``: also write the bootstrap values of the overall and
    per-class figures there (Parquet, :func:`replicates_frame`);
    ``failures``: also write the cases the model got wrong there (CSV,
    :func:`failures_frame`); ``source`` (a perturbed suite): the same
    model's predictions on the cases perturbed (:func:`source_cases`), for
    the ``invariance`` section (:func:`hatecheck_pipeline.evaluation.invariance.invariance`), with
    ``source_record`` (where they come from) in it."""
    gold = gold_cases(suite) if gold is None else gold
    preds = read_predictions(predictions, suite.id_column, pred_column, threshold, with_p=failures is not None)
    unanswered = unanswered_ids(predictions, suite.id_column)
    if unanswered is not None:  # scored on the answered cases; the unanswered ones counted
        skipped = gold.filter(pl.col("id").is_in(unanswered))
        gold = gold.filter(~pl.col("id").is_in(unanswered))
    cases = align(gold, preds, str(predictions))
    unit = resampling_unit(suite)
    kept: dict[tuple[str, str | None], dict] | None = {} if replicates is not None else None
    cases = with_clusters(cases, unit, uses_fillers(suite))
    scores = score_cases(cases, suite.id_column, boot, unit, kept, fillers=uses_fillers(suite))
    doc = {
        "suite": suite.name,
        "dataset": suite.dataset,
        "language": suite.language,
        "predictions": str(predictions),
        "bootstrap": bootstrap_record(cases, unit, boot, scores["overall"]["n_clusters"], scores["overall"].get("n_fillers")),
        **scores,
    }
    if unanswered is not None:
        add_unanswered(doc, skipped)
    if source is not None and "source_id" in cases.columns:
        doc["invariance"] = {**(source_record or {}), **invariance(cases, source, boot)}
    write_metrics(doc, out)
    if replicates is not None:
        write_parquet(replicates_frame(kept or {}), replicates)
    if failures is not None:
        write_csv(failures_frame(cases), failures)
    return doc


def source_cases(
    suite: Suite, table: str | Path | None, predictions: str | Path, pred_column: str = "pred", threshold: float | None = None
) -> pl.DataFrame:
    """The source suite's cases that have a prediction in ``predictions``
    (``id``, ``gold``, ``pred``), each with its template cluster over the
    whole suite (``_cluster``: a perturbed suite's intervals resample the
    templates of the cases perturbed, as its scores do)."""
    gold = with_clusters(gold_cases(suite, table), resampling_unit(suite))
    preds = read_predictions(predictions, suite.id_column, pred_column, threshold)
    return gold.join(preds, on="id", how="inner").sort("_order")


def score(
    suite: Suite,
    model: str,
    predictions: Path,
    gold_table: Path,
    metrics: Path,
    replicates: Path,
    bootstrap: M.Bootstrap,
    threshold: float | None,
    profile: Profile,
    model_seed: int,
    cap_key: str = "max_cases_per_suite",
    trained_on: list[str] | None = None,
    failures: Path | None = None,
    source_suite: Suite | None = None,
    source_predictions: Path | None = None,
    source_table: Path | None = None,
) -> str:
    """Stage ``score_<model>_<suite>``: one model's predictions on one suite
    -> METRICS.json. ``trained_on``: the datasets a classifier trained
    elsewhere was trained on; its held-out set of one of them is marked
    ``seen_in_training`` (the cases may be its training data). ``threshold`` None scores the predicted labels, else
    ``p_hateful >= threshold``. A profile that caps the cases predicted per
    suite (smoke) scores the same seeded subsample the predict stage drew
    (the profile's ``cap_key``: ``max_cases_per_suite``, or
    ``llm_max_cases_per_suite`` for an ``llm`` model; the model's ``seed``).
    ``replicates``: the bootstrap values of the overall and per-class
    figures (the shots tables' intervals of zero- vs many-shot differences).
    ``failures``: every case the model got wrong (:func:`failures_frame`).
    ``source_suite`` (a perturbed suite's, when the model is scored on it
    too), ``source_predictions``, ``source_table``: the model's predictions
    on the cases perturbed and their suite, for the flip rates of the
    ``invariance`` section (:mod:`hatecheck_pipeline.evaluation.invariance`)."""
    cap = profile.get(cap_key)
    gold = predicted_subsample(gold_cases(suite, gold_table), "id", cap, model_seed)
    pred_column = "pred" if threshold is None else "p_hateful"
    source, record = None, None
    if source_suite is not None and source_predictions is not None:
        source = source_cases(source_suite, source_table, source_predictions, pred_column, threshold)
        record = {"source_suite": source_suite.name, "source_predictions": str(source_predictions)}
    doc = run(
        suite,
        predictions,
        metrics,
        pred_column,
        threshold,
        bootstrap,
        gold=gold,
        replicates=replicates,
        failures=failures,
        source=source,
        source_record=record,
    )
    if suite.heldout and suite.dataset in (trained_on or []):
        doc["seen_in_training"] = True
        write_metrics(doc, metrics)
    return f"{model}/{suite.name}: macro F1 {doc['overall']['macro_f1']['value']}"
