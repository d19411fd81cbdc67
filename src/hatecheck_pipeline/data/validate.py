"""Data-quality expectations (great-expectations 1.x) for every processed table.

great-expectations validates pandas, not polars: tables are converted at this
boundary only. A failed expectation raises :class:`ValidationFailed` naming
the dataset, the expectation and example offending rows.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.data.labels import HATEFUL, LABELS

SPLITS = ["train", "dev", "test"]
CROWS_BIAS_TYPES = [
    "race-color", "socioeconomic", "gender", "disability", "nationality",
    "sexual-orientation", "physical-appearance", "religion", "age",
]  # fmt: skip


class ValidationFailed(PipelineError, RuntimeError):
    """At least one expectation failed."""


# What ``import great_expectations`` loads at module level that the pandas
# checks here never call: scipy.stats (distribution expectations: KL
# divergence, KS tests) and altair (their charts) are deferred until first
# used; sqlalchemy (SQL data sources, an optional extra of GX) is kept out,
# as in an install without it. About 2 of the ~4.5 s the import takes, paid
# by every validation stage (each its own process). See :func:`load_gx`.
DEFERRED_BY_GX_IMPORT = ("scipy.stats", "altair")
ABSENT_FOR_GX_IMPORT = ("sqlalchemy",)

# What :func:`load_gx` relies on of great-expectations' import: (module, how)
# -> why. tests/data/test_validate.py imports the installed GX this way in a
# fresh process and fails, naming the entry, where one no longer holds (a
# deferred module GX uses while it is imported is loaded then: slower, not
# wrong; a module GX needs at import raises ImportError at once).
GX_RELIED_ON = {
    **{
        (name, "deferred"): "imported by GX at module level, never used until a distribution expectation or a chart"
        for name in DEFERRED_BY_GX_IMPORT
    },
    **{(name, "absent"): "optional for GX (its SQL data sources): GX imports without it" for name in ABSENT_FOR_GX_IMPORT},
    ("great_expectations", "expectations"): "the expectation classes the suites here are built of",
}


class _DeferredModule(types.ModuleType):
    """Stands in ``sys.modules`` for a module until an attribute of it is
    first used: then the real module is imported (and replaces this one in
    ``sys.modules``) and this object takes on its namespace, so that
    modules which bound it at import time see the real one. (The standard
    library's ``importlib.util.LazyLoader`` was tried: GX's imports touch
    the module's attributes, which runs it at once, saving nothing.)"""

    def __init__(self, name: str, spec: importlib.machinery.ModuleSpec) -> None:
        super().__init__(name)
        self.__spec__ = spec

    def __getattr__(self, attr: str) -> Any:  # only for names not yet set
        name = self.__name__
        if sys.modules.get(name) is self:
            del sys.modules[name]
        real = importlib.import_module(name)
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def load_gx():
    """``great_expectations``, imported without loading the modules of
    :data:`DEFERRED_BY_GX_IMPORT` (deferred to first use) and
    :data:`ABSENT_FOR_GX_IMPORT` (GX's optional SQL support: seen as not
    installed). A module already imported is left as it is, and so is GX
    when it is."""
    if "great_expectations" in sys.modules:
        return sys.modules["great_expectations"]
    for name in DEFERRED_BY_GX_IMPORT:
        if name not in sys.modules and (spec := importlib.util.find_spec(name)) is not None:
            sys.modules[name] = _DeferredModule(name, spec)
    absent = [name for name in ABSENT_FOR_GX_IMPORT if name not in sys.modules]
    sys.modules.update(dict.fromkeys(absent))  # None: `import name` raises ImportError
    try:
        import great_expectations as gx
    finally:
        for name in absent:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    return gx


def _gx():
    return load_gx()


def classification_expectations(
    table: pl.DataFrame,
    raw_rows: int,
    quarantined: int,
    published_balance: float | None,
    tolerance: float,
    suite_count: int | None,
) -> list:
    """Expectations shared by every binary-labelled table."""
    E = _gx().expectations
    out = [E.ExpectColumnToExist(column=c) for c in ("id", "text", "label", "label_original", "language", "dataset", "split")]
    out += [
        *[E.ExpectColumnValuesToBeOfType(column=c, type_="str") for c in ("id", "text", "label", "split")],
        E.ExpectColumnValuesToNotBeNull(column="text"),
        E.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="label", value_set=list(LABELS)),
        E.ExpectColumnValuesToNotBeNull(column="label"),
        E.ExpectColumnValuesToBeUnique(column="id"),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        # Nothing lost: kept + quarantined == raw rows.
        E.ExpectTableRowCountToEqual(value=raw_rows - quarantined),
        E.ExpectColumnValuesToBeInSet(column="_text_in_train_and_test", value_set=[False]),
    ]
    if published_balance is not None:
        out.append(
            E.ExpectColumnMeanToBeBetween(
                column="_is_hateful", min_value=published_balance - tolerance, max_value=published_balance + tolerance
            )
        )
    if suite_count is not None:
        out.append(E.ExpectTableRowCountToEqual(value=suite_count))
    return out


def with_helper_columns(table: pl.DataFrame) -> pl.DataFrame:
    """Columns the expectations read: hateful indicator, cross-split text."""
    in_train = pl.col("text").is_in(table.filter(pl.col("split") == "train")["text"].implode())
    in_test = pl.col("text").is_in(table.filter(pl.col("split") == "test")["text"].implode())
    return table.with_columns(
        (pl.col("label") == HATEFUL).cast(pl.Int8).alias("_is_hateful"),
        (in_train & in_test).alias("_text_in_train_and_test"),
    )


def crows_expectations(table: pl.DataFrame, raw_rows: int, quarantined: int, count: int | None) -> list:
    E = _gx().expectations
    out = [
        E.ExpectColumnValuesToNotBeNull(column="sent_more"),
        E.ExpectColumnValuesToNotBeNull(column="sent_less"),
        E.ExpectColumnValueLengthsToBeBetween(column="sent_more", min_value=1),
        E.ExpectColumnValueLengthsToBeBetween(column="sent_less", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="stereo_antistereo", value_set=["stereo", "antistereo"]),
        E.ExpectColumnValuesToBeInSet(column="bias_type", value_set=CROWS_BIAS_TYPES),
        E.ExpectColumnValuesToBeUnique(column="id"),
        E.ExpectTableRowCountToEqual(value=raw_rows - quarantined),
    ]
    if count is not None:
        out.append(E.ExpectTableRowCountToEqual(value=count))
    return out


def winobias_expectations(table: pl.DataFrame, raw_rows: int, quarantined: int, count: int | None) -> list:
    """CrowS-Pairs' pair schema (every pair ``stereo``, bias type ``gender``)
    plus WinoBias' type (1, 2) and split (dev, test)."""
    E = _gx().expectations
    out = [
        E.ExpectColumnValuesToNotBeNull(column="sent_more"),
        E.ExpectColumnValuesToNotBeNull(column="sent_less"),
        E.ExpectColumnValueLengthsToBeBetween(column="sent_more", min_value=1),
        E.ExpectColumnValueLengthsToBeBetween(column="sent_less", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="stereo_antistereo", value_set=["stereo"]),
        E.ExpectColumnValuesToBeInSet(column="bias_type", value_set=["gender"]),
        E.ExpectColumnValuesToBeInSet(column="winobias_type", value_set=[1, 2]),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=["dev", "test"]),
        E.ExpectColumnValuesToNotMatchRegex(column="sent_more", regex=r"[\[\]]"),  # the mention brackets are gone
        E.ExpectColumnValuesToNotMatchRegex(column="sent_less", regex=r"[\[\]]"),
        E.ExpectColumnValuesToBeUnique(column="id"),
        E.ExpectTableRowCountToEqual(value=raw_rows - quarantined),
    ]
    if count is not None:
        out.append(E.ExpectTableRowCountToEqual(value=count))
    return out


def run_suite(name: str, frame: pl.DataFrame, expectations: list) -> dict[str, Any]:
    """Validate one pandas batch; return the JSON-able result with examples."""
    gx = _gx()
    context = gx.get_context(mode="ephemeral")
    # GX draws a "Calculating Metrics" tqdm bar per validation on stderr (the
    # terminal of `score`, every validation stage's log); its own setting
    # turns them off.
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    asset = context.data_sources.add_pandas("polars_boundary").add_dataframe_asset(name=name)
    batch_def = asset.add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
    pdf = frame.to_pandas(use_pyarrow_extension_array=True)
    result = batch_def.get_batch(batch_parameters={"dataframe": pdf}).validate(suite, result_format={"result_format": "COMPLETE"})
    raw = result.to_json_dict()
    ids = frame["id"].to_list() if "id" in frame.columns else None
    checks = []
    for item in raw["results"]:
        cfg = item["expectation_config"]
        res = item.get("result") or {}
        idx = (res.get("unexpected_index_list") or [])[:5]
        observed = res.get("observed_value")
        if observed is None and cfg["type"] == "expect_column_distinct_values_to_equal_set":
            observed = sorted(frame[cfg["kwargs"]["column"]].drop_nulls().unique().to_list())  # GX leaves it out
        checks.append(
            {
                "expectation": cfg["type"],
                "kwargs": {k: v for k, v in cfg["kwargs"].items() if k != "batch_id"},
                "success": bool(item["success"]),
                "observed_value": _plain(observed),
                "unexpected_count": res.get("unexpected_count"),
                "examples": [
                    {"row": int(i), "id": ids[int(i)] if ids else None, "value": _plain(v)}
                    for i, v in zip(idx, (res.get("partial_unexpected_list") or [])[:5])
                ],
            }
        )
    return {"suite": name, "success": bool(raw["success"]), "statistics": raw["statistics"], "checks": checks}


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def validate_table(
    dataset: str,
    table: pl.DataFrame,
    counts: Mapping[str, Any],
    published_balance: float | None,
    tolerance: float,
    suite_counts: Any,
    functionalities: list[str] | None = None,
) -> dict[str, Any]:
    """All suites of one dataset (MHC: one per language). ``functionalities``:
    the suite's functional tests as published (HateCheck: every one must be
    there; MHC: no other may be, languages differ in which they have)."""
    raw_rows, quarantined = counts["raw_rows"], counts["quarantined"]
    results = []
    E = _gx().expectations
    extra = []
    if functionalities and dataset == "mhc":
        extra = [E.ExpectColumnValuesToBeInSet(column="functionality", value_set=list(functionalities))]
    elif functionalities:
        extra = [E.ExpectColumnDistinctValuesToEqualSet(column="functionality", value_set=list(functionalities))]
    if dataset == "crows_pairs":
        results.append(run_suite(dataset, table, crows_expectations(table, raw_rows, quarantined, suite_counts)))
    elif dataset == "winobias":
        results.append(run_suite(dataset, table, winobias_expectations(table, raw_rows, quarantined, suite_counts)))
    elif dataset == "mhc":
        table = with_helper_columns(table)
        results.append(run_suite(dataset, table, classification_expectations(table, raw_rows, quarantined, None, tolerance, None) + extra))
        for language, expected in sorted((suite_counts or {}).items()):
            part = table.filter(pl.col("language") == language)
            if part.height == 0:
                continue
            results.append(run_suite(f"mhc_{language}", part, [E.ExpectTableRowCountToEqual(value=expected)]))
    else:
        table = with_helper_columns(table)
        results.append(
            run_suite(
                dataset,
                table,
                classification_expectations(table, raw_rows, quarantined, published_balance, tolerance, suite_counts) + extra,
            )
        )
    return {
        "dataset": dataset,
        "success": all(r["success"] for r in results),
        "counts": dict(counts),
        "suites": results,
    }


def failure_message(report: Mapping[str, Any]) -> str:
    """One line: the dataset, then every failed expectation with its
    arguments, what was observed and example rows."""
    failed = []
    for suite in report["suites"]:
        for check in suite["checks"]:
            if not check["success"] and check["expectation"] == "expect_column_distinct_values_to_equal_set":
                expected, observed = set(check["kwargs"]["value_set"]), set(check["observed_value"] or [])
                failed.append(
                    f"[{suite['suite']}] {check['expectation']} (column {check['kwargs']['column']!r}) failed: "
                    f"missing {sorted(expected - observed)}, unexpected {sorted(observed - expected)}"
                )
            elif not check["success"]:
                examples = ", ".join(f"row {e['row']} id={e['id']!r} value={e['value']!r}" for e in check["examples"])
                failed.append(
                    f"[{suite['suite']}] {check['expectation']} {check['kwargs']} failed: observed "
                    f"{check['observed_value']!r}, unexpected {check['unexpected_count']}" + (f" (e.g. {examples})" if examples else "")
                )
    return f"data validation failed for dataset {report['dataset']!r}: " + "; ".join(failed)


def summary_markdown(report: Mapping[str, Any]) -> str:
    status = "PASSED" if report["success"] else "FAILED"
    c = report["counts"]
    lines = [
        f"# Validation of `{report['dataset']}`: {status}",
        "",
        f"raw rows {c['raw_rows']} = kept {c['kept']} + quarantined {c['quarantined']}",
        "",
        "| suite | expectation | arguments | observed | result |",
        "|---|---|---|---|---|",
    ]
    for suite in report["suites"]:
        for check in suite["checks"]:
            args = ", ".join(f"{k}={v}" for k, v in check["kwargs"].items())
            lines.append(
                f"| {suite['suite']} | {check['expectation']} | {args} | {check['observed_value']} | "
                f"{'pass' if check['success'] else 'FAIL'} |"
            )
    return "\n".join(lines) + "\n"


def validate(
    dataset: str,
    table: Path,
    counts: Path,
    report_json: Path,
    report_md: Path,
    tolerance: float,
    published_balance: float | None = None,
    suite_counts: Any = None,
    functionalities: list | None = None,
) -> str:
    """Stage: run the dataset's great-expectations suite(s); write the result
    (JSON + Markdown) and fail loudly, naming expectation and example rows.
    ``functionalities``: the suite's published functional tests, as
    ``[code, title]`` pairs (``resources/functionalities.yaml``)."""
    from hatecheck_pipeline.core.files import read_json, write_json, write_text

    codes = [f[0] if isinstance(f, (list, tuple)) else f for f in functionalities] if functionalities else None
    report = validate_table(dataset, pl.read_parquet(table), read_json(counts), published_balance, tolerance, suite_counts, codes)
    write_json(report, report_json)
    write_text(summary_markdown(report), report_md)
    if not report["success"]:
        raise ValidationFailed(f"{table}: {failure_message(report)} (report: {report_json})")
    n = sum(len(s["checks"]) for s in report["suites"])
    return f"{dataset}: {n} expectations passed"
