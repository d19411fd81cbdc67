"""Does a lower-precision prediction run change any reported figure?

bf16 prediction is made the default only where every reported
figure of the default profile stays inside its fp32 run's bootstrap
interval and labels agree with fp32 on >= 99.5% of cases. This script
compares two complete workspaces of the same profile and commit that differ
in ``predict_cpu_bf16`` or ``llm_cpu_bf16`` only (or one workspace before and after the change,
its fp32 files copied aside):

- every report table cell (``results/tables/*.csv``, joined on ``cell_id``):
  a cell with an interval passes when the candidate's value lies inside the
  fp32 run's ``[ci_low, ci_high]``. Against a recorded run
  (docs/runs/NAME keeps no report tables) the cells are each
  ``results/<model>/<suite>/metrics.json``'s headline figures (overall and
  per gold label, with their intervals). A cell without one (a difference of two
  cells, such as an expanded suite's per-functionality change, or a count)
  has no interval to stay inside: how many moved, and by how much, is
  printed, not gated;
- every predictions file recording its precision (``results/<model>/<suite>/
  predictions.parquet``: a classifier's records its forward passes', a
  prompted LLM's the dtype its weights ran in; files of older runs that
  record none are left out): the share of cases whose label agrees, and
  the precision each recorded;
- the other numbers the report shows from predictions (the bias audits'
  JSON under ``results/bias``): the largest absolute difference per file
  (they carry no interval).

    python benchmarks/bench_precision_figures.py --fp32 DIR --candidate DIR [--gate 99.5]

Exit status 1 when a cell leaves its interval or a file's agreement is
under the gate.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import polars as pl

from hatecheck_pipeline.core.files import recorded_precision


METRICS = ("accuracy", "macro_f1", "f1_hateful", "f1_non_hateful")


def metric_cells(root: Path) -> pl.DataFrame:
    """The headline figures of every ``results/<model>/<suite>/metrics.json``
    (overall and per gold label, each with its bootstrap interval): what a
    recorded run (docs/runs/NAME, which keeps no report tables) holds."""
    rows = []
    for f in sorted((root / "results").glob("*/*/metrics.json")):
        doc = json.loads(f.read_text("utf-8"))
        model, suite = f.parent.parent.name, f.parent.name
        parts = {"overall": doc.get("overall") or {}, **{f"label={k}": v for k, v in (doc.get("by_label") or {}).items()}}
        for part, figs in parts.items():
            for metric in METRICS:
                fig = figs.get(metric) if isinstance(figs, dict) else None
                if isinstance(fig, dict) and fig.get("value") is not None:
                    rows.append(
                        {
                            "file": "metrics",
                            "cell_id": f"{model}:{suite}:{part}:{metric}",
                            "value": float(fig["value"]),
                            "ci_low": None if fig.get("ci_low") is None else float(fig["ci_low"]),
                            "ci_high": None if fig.get("ci_high") is None else float(fig["ci_high"]),
                        }
                    )
    schema = {"file": pl.Utf8, "cell_id": pl.Utf8, "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def is_record(root: Path) -> bool:
    """A recorded run (docs/runs/NAME): no report tables, its metrics files."""
    return not list((root / "results" / "tables").glob("*.csv"))


def table_cells(root: Path) -> pl.DataFrame:
    frames = []
    for f in sorted((root / "results" / "tables").glob("*.csv")):
        t = pl.read_csv(f, infer_schema_length=None)
        if {"cell_id", "value"} <= set(t.columns):
            frames.append(
                t.select(
                    pl.lit(f.stem).alias("file"),
                    "cell_id",
                    pl.col("value").cast(pl.Float64),
                    *(pl.col(c).cast(pl.Float64) for c in ("ci_low", "ci_high") if c in t.columns),
                )
            )
    return pl.concat(frames, how="diagonal_relaxed")


def compare_cells(fp32: Path, cand: Path) -> tuple[pl.DataFrame, list[str]]:
    cells = metric_cells if is_record(fp32) or is_record(cand) else table_cells  # a record: both by their metrics files
    a, b = cells(fp32), cells(cand)
    joined = a.join(b.select("file", "cell_id", pl.col("value").alias("candidate")), on=["file", "cell_id"], how="full", coalesce=True)
    notes = []
    only = joined.filter(pl.col("value").is_null() != pl.col("candidate").is_null())
    if only.height:
        notes.append(f"{only.height} cells have a value in one run only (e.g. {only['cell_id'][0]})")
    both = joined.filter(pl.col("value").is_not_null() & pl.col("candidate").is_not_null())
    has_ci = pl.col("ci_low").is_not_null() & pl.col("ci_high").is_not_null()
    both = both.with_columns(
        has_ci.alias("has_ci"),
        pl.when(has_ci).then(pl.col("candidate").is_between(pl.col("ci_low"), pl.col("ci_high"))).otherwise(True).alias("ok"),
        (pl.col("candidate") - pl.col("value")).alias("diff"),
    )
    return both, notes


def compare_predictions(fp32: Path, cand: Path) -> pl.DataFrame:
    rows = []
    for f in sorted((fp32 / "results").glob("*/*/predictions.parquet")):
        rel = f.relative_to(fp32)
        g = cand / rel
        if not g.exists():
            continue
        ran_a, ran_b = recorded_precision(f), recorded_precision(g)
        if ran_a is None and ran_b is None:  # written before precisions were recorded: nothing to compare
            continue
        a, b = pl.read_parquet(f), pl.read_parquet(g)
        j = a.select("id", "pred", "p_hateful").join(
            b.select("id", pl.col("pred").alias("pred_c"), pl.col("p_hateful").alias("p_c")), on="id"
        )
        rows.append(
            {
                "file": rel.parent.as_posix(),
                "n": j.height,
                "agree_pct": 100.0 * float((j["pred"] == j["pred_c"]).mean()) if j.height else 100.0,
                "max_abs_dp": float((j["p_hateful"] - j["p_c"]).abs().max() or 0.0) if j.height else 0.0,
                "fp32_ran": ran_a or "?",
                "candidate_ran": ran_b or "?",
            }
        )
    schema = {
        "file": pl.Utf8,
        "n": pl.Int64,
        "agree_pct": pl.Float64,
        "max_abs_dp": pl.Float64,
        "fp32_ran": pl.Utf8,
        "candidate_ran": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)  # typed even when empty (a recorded run keeps no predictions)


def numbers(doc, prefix=""):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from numbers(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from numbers(v, f"{prefix}[{i}]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool) and math.isfinite(doc):
        yield prefix, float(doc)


def compare_audits(fp32: Path, cand: Path) -> list[tuple[str, int, float, str]]:
    out = []
    for f in sorted((fp32 / "results" / "bias").rglob("*.json")):
        g = cand / f.relative_to(fp32)
        if not g.exists():
            continue
        a, b = dict(numbers(json.loads(f.read_text("utf-8")))), dict(numbers(json.loads(g.read_text("utf-8"))))
        diffs = {k: abs(a[k] - b[k]) for k in a.keys() & b.keys()}
        worst = max(diffs, key=diffs.get) if diffs else ""
        out.append((f.relative_to(fp32).as_posix(), sum(d > 1e-12 for d in diffs.values()), diffs.get(worst, 0.0), worst))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fp32", type=Path, required=True, help="the workspace predicted in fp32")
    ap.add_argument("--candidate", type=Path, required=True, help="the workspace predicted in the lower precision")
    ap.add_argument("--gate", type=float, default=99.5, help="least label agreement per predictions file (percent)")
    ap.add_argument("--show", type=int, default=15, help="cells listed (those outside their interval, then the largest moves)")
    args = ap.parse_args()

    cells, notes = compare_cells(args.fp32, args.candidate)
    with_ci = cells.filter("has_ci")
    print(f"# report table cells: {cells.height} in both runs, {with_ci.height} with a bootstrap interval")
    print(f"inside the fp32 interval: {with_ci['ok'].sum()}/{with_ci.height}")
    no_ci = cells.filter(~pl.col("has_ci"))
    no_ci_moved = no_ci.filter(pl.col("diff").abs() > 1e-9)
    print(
        f"without an interval: {no_ci.height - no_ci_moved.height}/{no_ci.height} equal, {no_ci_moved.height} moved "
        f"(largest |move| {no_ci_moved['diff'].abs().max() if no_ci_moved.height else 0.0:.2f}; not gated: no interval), in tables "
        f"{sorted(set(no_ci_moved['file']))}"
    )
    for n in notes:
        print("note:", n)
    moved = cells.filter(pl.col("diff").abs() > 0)
    print(f"cells whose value moved at all: {moved.height}; largest |move| {moved['diff'].abs().max() if moved.height else 0.0:.2f}")
    bad = cells.filter(~pl.col("ok"))
    show = pl.concat([bad, moved.filter(pl.col("ok")).sort(pl.col("diff").abs(), descending=True)]).head(args.show)
    with pl.Config(tbl_rows=args.show, tbl_cols=10, fmt_str_lengths=70, tbl_width_chars=200):
        print(show.select("file", "cell_id", "value", "ci_low", "ci_high", "candidate", "ok"))

    preds = compare_predictions(args.fp32, args.candidate)
    total = preds["n"].sum()
    if total:
        pooled = (preds["agree_pct"] * preds["n"]).sum() / total
        print(
            f"\n# predictions files: {preds.height}, {total} cases; labels agree on {pooled:.3f}% pooled, "
            f"lowest file {preds['agree_pct'].min():.2f}%; largest |dp| {preds['max_abs_dp'].max():.4f}"
        )
        print("precision recorded: fp32 run", sorted(set(preds["fp32_ran"])), "candidate", sorted(set(preds["candidate_ran"])))
        with pl.Config(tbl_rows=100, fmt_str_lengths=60, tbl_width_chars=200):
            print(preds.sort("agree_pct").select("file", "n", "agree_pct", "max_abs_dp"))
    else:
        print("\n# predictions files: none in both runs (a recorded run keeps none): labels not compared")

    audits = compare_audits(args.fp32, args.candidate)
    print(f"\n# bias audit files: {len(audits)} (no interval: largest |difference| per file)")
    for path, n_moved, worst, key in audits:
        print(f"{path}: {n_moved} numbers moved, largest {worst:.4g}" + (f" ({key})" if n_moved else ""))

    fails = bad.height + int((preds["agree_pct"] < args.gate).sum())
    print(
        f"\nverdict: {'PASS' if not fails else 'FAIL'} (cells outside their fp32 interval: {bad.height}; "
        f"files under {args.gate}% agreement: {int((preds['agree_pct'] < args.gate).sum())})"
    )
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
