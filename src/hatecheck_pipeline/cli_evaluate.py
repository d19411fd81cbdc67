"""CLI subcommands of the evaluate phase (registered on the main app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli import app, fail, load


@app.command()
def score(
    suite: Annotated[str, typer.Option(help="hatecheck, mhc:<language> (e.g. mhc:german) or a registered suite name")],
    predictions: Annotated[Path, typer.Option(help="CSV or Parquet: the suite's id column (or `id`) and a prediction column")],
    out: Annotated[Path, typer.Option(help="METRICS.json to write")],
    pred_column: Annotated[str, typer.Option(help="column holding hateful/non-hateful, 1/0 or a probability")] = "pred",
    threshold: Annotated[Optional[float], typer.Option(help="probability threshold: p >= threshold is hateful")] = None,
) -> None:
    """Score any predictions file against a suite's gold labels."""
    from . import scoring

    params = load()
    ev = params["evaluation"]
    try:
        doc = scoring.run(
            scoring.resolve_suite(suite, params), predictions, out, pred_column, threshold,
            ev["bootstrap_samples"], ev["seed"], ev["ci_level"],
        )
    except scoring.ScoringError as exc:
        fail(exc)
    o = doc["overall"]
    typer.echo(f"{doc['suite']}: n={o['n']} accuracy={o['accuracy']['value']} macro F1={o['macro_f1']['value']} -> {out}")


@app.command()
def compare(
    metrics: Annotated[Path, typer.Option(help="METRICS.json written by `score` (HateCheck or one MHC language)")],
    model: Annotated[str, typer.Option(help="the published model to compare with, e.g. Perspective, SiftNinja, B-D, XTC")],
    out: Annotated[Optional[Path], typer.Option(help="CSV with every compared cell")] = None,
    tolerance: Annotated[float, typer.Option(help="largest |ours - paper| (percentage points) that counts as equal")] = 0.05,
) -> None:
    """Compare a metrics file with the papers' published tables (HateCheck
    Tables 1-4, MHC Tables 1, 2, 3, 7) for one published model; exit 1 when
    a cell differs."""
    import json

    import polars as pl

    from . import published

    doc = json.loads(metrics.read_text("utf-8"))
    cells = published.compare(doc, model, tolerance=tolerance)
    if cells.is_empty():
        fail(f"{metrics}: no published figure of {model!r} for suite {doc.get('suite')!r} "
             f"(published models: {', '.join(published.published_models())})")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        cells.write_csv(out)
    summary = cells.group_by("table", maintain_order=True).agg(pl.len().alias("cells"), pl.col("match").sum().alias("equal"))
    for row in summary.iter_rows(named=True):
        typer.echo(f"{row['table']}: {row['equal']}/{row['cells']} cells equal to the paper")
    differing = cells.filter(~pl.col("match"))
    for row in differing.head(20).iter_rows(named=True):
        typer.echo(f"  differs: {row['table']} {row['row']} / {row['column']}: ours {row['ours']} vs paper {row['paper']}")
    if differing.height:
        raise typer.Exit(1)
    typer.echo(f"{metrics}: reproduces every published cell of {model} ({cells.height})")


@app.command()
def evaluate(model: str, suite: str) -> None:
    """Score stage: one model's predictions on one suite -> metrics.json."""
    from . import paths, scoring
    from .predict import predicted_subsample
    from .suites import by_name

    params = load()
    ev = params["evaluation"]
    threshold = ev["threshold"]
    s = by_name(params, suite)
    # A profile that caps the cases predicted per suite (smoke) scores the
    # same seeded subsample the predict stage drew.
    gold = predicted_subsample(params, model, scoring.gold_cases(s), "id")
    try:
        doc = scoring.run(
            s, paths.predictions(model, suite), paths.metrics(model, suite),
            "pred" if threshold is None else "p_hateful", threshold,
            ev["bootstrap_samples"], ev["seed"], ev["ci_level"], gold=gold,
        )
    except scoring.ScoringError as exc:
        fail(exc)
    typer.echo(f"{model}/{suite}: macro F1 {doc['overall']['macro_f1']['value']}")


@app.command()
def tables(group: str) -> None:
    """Tables stage: hatecheck, mhc, shots or contrast tables from metrics files."""
    from . import tables as stage
    from .phases import evaluate as ph

    params = load()
    training = ph.group_training_tables(params, group)
    languages = {m: stage.training_languages(t) for m, t in training.items()}
    out = stage.run(group, ph.group_sources(params, group), ph.table_stage_name(group), languages)
    typer.echo(f"{group}: " + ", ".join(f"{k} ({v.height} cells)" for k, v in out.items()))


@app.command()
def lineage(
    target: str,
    lock: Annotated[Path, typer.Option(help="the DVC lock file holding the record")] = Path("dvc.lock"),
    report: Annotated[Optional[Path], typer.Option(help="report whose cell ids resolve (default: the pipeline's)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the chain as JSON")] = False,
) -> None:
    """Trace a metrics file, predictions file, model directory or report cell id down to the raw files."""
    from . import lineage as stage
    from . import paths
    from .raw import load_registry

    try:
        chain = stage.trace(target, stage.read_lock(lock), load_registry(), report or Path(paths.report()))
    except stage.LineageError as exc:
        fail(exc)
    typer.echo(stage.to_json(chain) if as_json else stage.render(chain))


@app.command()
def report() -> None:
    """Report stage: write the self-contained HTML report."""
    from . import paths
    from . import report as stage
    from .datasets import RAW_SOURCE
    from .phases import report as ph

    params = load()
    out = stage.run(
        paths.report(),
        params["report"]["title"],
        params["profile"],
        params["models"],
        {m: paths.model_card(m) for m in params["models"]},
        {d: paths.validation_json(d) for d in RAW_SOURCE},
        ph.table_files(params),
        paths.training_languages(),
        params["evaluation"]["below_mark"],
        params["report"]["heatmap_models"],
        expansion_files=ph.expansion_reports(params) if "expansion" in params else None,
        bias_summary_file=ph.bias_summary(params),
    )
    typer.echo(f"wrote {out}")
