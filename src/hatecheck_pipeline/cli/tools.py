"""The tools of ``hatecheck-pipeline`` beside the stages (registered on the
app by :mod:`hatecheck_pipeline.cli.app`):

- ``score``: any predictions file against a suite's gold labels;
- ``export``: the suites' cases, to run a model elsewhere;
- ``compare``: a metrics file against the papers' published tables;
- ``lineage``: a metrics file, predictions file, model directory or report
  cell id traced down to the raw files (from ``dvc.lock``);
- ``score-llm``: raw LLM answers, scored as "Detecting Hate Speech with
  GPT-3" does;
- ``fetch-data``: every pinned raw file into a local mirror folder;
- ``follow``: each running stage's last progress line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli import suites as suite_names
from hatecheck_pipeline.cli.state import fail, load


def ensure_tables(params, suites) -> None:
    """The suites' gold tables (and their validation), built through the
    pipeline's own stages when this workspace does not have them yet (a
    table built here is validated by great-expectations before it is used)."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.runners.compose import build_missing

    echo = lambda line: typer.echo(line, err=True)  # noqa: E731
    for suite in suites:
        if build_missing(params, [suite.raw_table()], echo) and not suite.expanded:
            build_missing(params, [paths.validation_json(suite.dataset)], echo)


def score(
    suite: Annotated[
        list[str],
        suite_names.option(f"the suites: {suite_names.NAMES}; several when the file has a suite column (as export writes it)"),
    ],
    predictions: Annotated[Path, typer.Option(help="CSV or Parquet: the suite's id column (or id) and a prediction column")],
    out: Annotated[Path, typer.Option(help="METRICS.json to write; with several suites a folder (<suite>.json each)")],
    pred_column: Annotated[str, typer.Option(help="column holding hateful/non-hateful, 1/0 or a probability")] = "pred",
    threshold: Annotated[Optional[float], typer.Option(help="probability threshold: p >= threshold is hateful")] = None,
) -> None:
    """Score a predictions file against a suite's gold labels.

    Several suites are scored from one file with a suite column. Beside each
    metrics file, <stem>.failures.csv lists the cases the predictions got
    wrong."""
    import tempfile

    import polars as pl

    from hatecheck_pipeline.evaluation import scoring
    from hatecheck_pipeline.pipeline.evaluate import bootstrap_keys

    params = load()
    boot = bootstrap_keys().value(params)  # as the score stages get it
    try:
        suites = suite_names.resolve(suite, params)
        if not predictions.exists():
            fail(f"{predictions}: predictions file not found")
        ensure_tables(params, suites)
        if len(suites) == 1 and not _has_suite_column(predictions):
            docs = [(scoring.run(suites[0], predictions, out, pred_column, threshold, boot, failures=scoring.failures_path(out)), out)]
        else:
            frame = scoring.read_table(predictions)
            if "suite" not in frame.columns:
                fail(f"{predictions}: several suites need a `suite` column naming each row's suite (as `export` writes it)")
            unknown = sorted(set(frame["suite"].cast(pl.String).unique().to_list()) - {s.name for s in suites})
            if unknown:
                fail(f"{predictions}: column 'suite' names {unknown}, not among the suites asked for ({', '.join(s.name for s in suites)})")
            docs = []
            with tempfile.TemporaryDirectory() as tmp:
                for s in suites:
                    part = Path(tmp) / f"{s.name}.parquet"
                    frame.filter(pl.col("suite").cast(pl.String) == s.name).drop("suite").write_parquet(part)
                    target = out if len(suites) == 1 else out / f"{s.name}.json"
                    docs.append(
                        (scoring.run(s, part, target, pred_column, threshold, boot, failures=scoring.failures_path(target)), target)
                    )
    except scoring.ScoringError as exc:
        fail(exc)
    for doc, target in docs:
        o = doc["overall"]
        typer.echo(
            f"{doc['suite']}: n={o['n']} accuracy={o['accuracy']['value']} macro F1={o['macro_f1']['value']} -> {target} "
            f"(failing cases: {scoring.failures_path(target)})"
        )


def _has_suite_column(path: Path) -> bool:
    from hatecheck_pipeline.evaluation import scoring

    try:
        return "suite" in scoring.read_table(path).columns
    except scoring.ScoringError:
        return False  # scoring.run names the problem


def export(
    suite: Annotated[list[str], suite_names.option(f"the suites: {suite_names.NAMES}")],
    out: Annotated[Path, typer.Option(help="CSV or Parquet to write (by its suffix)")],
) -> None:
    """Write suites' cases, to run a model elsewhere.

    One row per case: suite, id, text, language, functionality, gold label.
    score --suite ... --predictions reads the predictions back (a pred
    column added to this file)."""
    import polars as pl

    from hatecheck_pipeline.core.files import write_csv, write_parquet
    from hatecheck_pipeline.evaluation import scoring

    params = load()
    try:
        suites = suite_names.resolve(suite, params)
        ensure_tables(params, suites)
    except scoring.ScoringError as exc:
        fail(exc)
    parts = []
    for s in suites:
        frame = s.load_raw()
        names = frame.collect_schema().names()
        parts.append(
            frame.select(
                pl.lit(s.name).alias("suite"),
                pl.col(s.id_column).cast(pl.String).alias("id"),
                pl.col("text"),
                (pl.col("language") if "language" in names else pl.lit(None, pl.String)).alias("language"),
                (pl.col("functionality") if "functionality" in names else pl.lit(None, pl.String)).alias("functionality"),
                pl.col("label").alias("gold_label"),
            ).collect()
        )
    cases = pl.concat(parts)
    (write_parquet if out.suffix.lower() == ".parquet" else write_csv)(cases, out)
    typer.echo(f"{cases.height} cases of {len(suites)} suite(s) -> {out}")


def compare(
    metrics: Annotated[Path, typer.Option(help="METRICS.json written by score (HateCheck or one MHC language)")],
    model: Annotated[
        str,
        typer.Option(help="the published model to compare with, e.g. Perspective, SiftNinja, B-D, XTC (a wrong name lists them)"),
    ],
    out: Annotated[Optional[Path], typer.Option(help="CSV with every compared cell")] = None,
    tolerance: Annotated[float, typer.Option(help="largest |ours - paper| (percentage points) that counts as equal")] = 0.05,
    check: Annotated[bool, typer.Option("--check", help="exit 1 when a cell differs (a reproduction check)")] = False,
) -> None:
    """Compare a metrics file with the published tables.

    The published model's cells (HateCheck Tables 1-4, MHC Tables 1, 2, 3, 7
    and Perspective's Table 8) are lined up with the file's; the cells that
    differ are listed. The exit status is 0 either way, unless --check is
    given: then a difference exits 1."""
    import json

    import polars as pl

    from hatecheck_pipeline.core.files import write_csv
    from hatecheck_pipeline.evaluation import published

    if not metrics.exists():
        fail(f"{metrics}: metrics file not found (write one with `hatecheck-pipeline score`)")
    doc = json.loads(metrics.read_text("utf-8"))
    cells = published.compare(doc, model, tolerance=tolerance)
    if cells.is_empty():
        fail(
            f"{metrics}: no published figure of {model!r} for suite {doc.get('suite')!r} "
            f"(published models: {', '.join(published.published_models())})"
        )
    if out:
        write_csv(cells, out)
    summary = cells.group_by("table", maintain_order=True).agg(pl.len().alias("cells"), pl.col("match").sum().alias("equal"))
    for row in summary.iter_rows(named=True):
        typer.echo(f"{row['table']}: {row['equal']}/{row['cells']} cells equal to the paper")
    differing = cells.filter(~pl.col("match"))
    for row in differing.head(20).iter_rows(named=True):
        typer.echo(f"  differs: {row['table']} {row['row']} / {row['column']}: ours {row['ours']} vs paper {row['paper']}")
    if differing.height:
        if check:
            raise typer.Exit(1)
        return
    typer.echo(f"{metrics}: reproduces every published cell of {model} ({cells.height})")


def lineage(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="a metrics file, a predictions file, a model directory or a report cell id (its data-cell-id in the report)",
        ),
    ],
    lock: Annotated[Path, typer.Option(help="the DVC lock file holding the record")] = Path("dvc.lock"),
    report: Annotated[Optional[Path], typer.Option(help="report whose cell ids resolve (default: the pipeline's)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the chain as JSON")] = False,
) -> None:
    """Trace a reported number down to the raw files.

    A metrics file, predictions file, model directory or report cell is
    followed through the record (dvc.lock) stage by stage to the raw files
    and their sha256."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.data.sources import load_registry
    from hatecheck_pipeline.report import lineage as engine

    try:
        chain = engine.trace(target, engine.read_lock(lock), load_registry(), report or Path(paths.report()))
    except engine.LineageError as exc:
        fail(exc)
    typer.echo(engine.to_json(chain) if as_json else engine.render(chain))


def score_llm(
    answers: Annotated[
        Path,
        typer.Option(
            help="CSV or Parquet: category, label, answer[, iteration][, setting] (one row per LLM answer; "
            "setting mixed | mixed_instruction on the mixed rows)"
        ),
    ],
    out: Annotated[Path, typer.Option(help="METRICS.json to write")],
) -> None:
    """Score raw LLM answers as the GPT-3 paper does.

    As "Detecting Hate Speech with GPT-3" scores them. Yes/no settings: first word yes/no or the class word, unparsed answers
    counted and omitted; racist, sexist and overall (both pooled). Mixed
    settings (section 4.4): category c over the comments labelled c or
    neither, TP = labelled c and the answer contains c, FN = labelled c and
    any other answer, FP = neither and the answer contains c, TN otherwise;
    out-of-scope answers counted; with the instruction (setting
    mixed_instruction) only 'both' / 'racist and sexist' omitted. Accuracy,
    precision, recall, F1 (percent) per iteration, then mean and sample sd;
    the mixed "All" figures from the pooled counts."""
    from hatecheck_pipeline.evaluation import llm_answers

    try:
        doc = llm_answers.score_file(answers, out)
    except llm_answers.AnswersError as exc:
        fail(exc)

    def shown(fig: dict, key: str = "mean") -> str:
        value = fig.get(key)
        return f"n/a ({fig.get('undefined', {}).get('f1') if key == 'f1' else fig.get('undefined')})" if value is None else f"{value:.1f}"

    for category, m in doc["by_category"].items():
        if "by_class" in m:
            f1 = ", ".join(
                f"{c} F1 {shown(b['pooled'], 'f1')} (TP {b['pooled']['tp']} FP {b['pooled']['fp']} FN {b['pooled']['fn']} "
                f"TN {b['pooled']['tn']})"
                for c, b in m["by_class"].items()
            )
            typer.echo(f"{category}: n={m['n']} omitted={m['omitted']} out_of_scope={m['out_of_scope']} {f1} (all answers pooled)")
            continue
        typer.echo(
            f"{category}: n={m['n']} unparsed={m['unparsed']} accuracy={m['accuracy']['mean']} "
            f"F1={shown(m['f1'])} (sd {m['f1']['sd']}, defined in {m['f1']['defined']}) over {m['iterations']} iteration(s)"
        )
    typer.echo(f"-> {out}")


def fetch_data(
    into: Annotated[Optional[Path], typer.Option("--into", help="the mirror folder (default: ~/.cache/hatecheck_pipeline/mirror)")] = None,
) -> None:
    """Download every pinned raw file into a mirror folder.

    Every file of resources/raw_sources.yaml, sha256-checked, in the layout
    HATECHECK_PIPELINE_MIRROR reads (docs/data.md); files already there with
    the right hash are kept. Ends with the HATECHECK_PIPELINE_MIRROR=... line
    to use."""
    import shlex

    from hatecheck_pipeline.data import mirror

    done = mirror.fetch_mirror(into if into is not None else mirror.default_into())
    typer.echo(
        f"{done.into}: {done.downloaded} downloaded ({mirror.human(done.bytes)}), {done.present} already present; "
        "every file sha256-checked. Use the mirror with:",
        err=True,
    )
    typer.echo(f"{mirror.MIRROR_ENV}={shlex.quote(str(done.into))}")


def follow(
    interval: Annotated[float, typer.Option(help="seconds between refreshes")] = 2.0,
    recent: Annotated[
        float,
        typer.Option(help="where no process here holds a log (Slurm jobs): a log written in the last RECENT seconds is a running stage's"),
    ] = 60.0,
) -> None:
    """Show each running stage's last progress line.

    The lines come from logs/<stage>.log, where a Snakemake run sends them;
    refreshed until no stage runs and no Snakemake run of this workspace is
    alive."""
    from hatecheck_pipeline.runners import progress
    from hatecheck_pipeline.runners.compose import live_runs

    progress.follow(progress.LOGS, interval, recent, run_alive=lambda: bool(live_runs()))
