"""``hatecheck-pipeline docs``: record a finished run for the documentation
and render the documentation's generated pages from a recorded run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli.state import fail

docs_app = typer.Typer(help="Record a run and render the documentation's generated pages from it.", no_args_is_help=True)

RUNS = Path("docs/runs")
GENERATED = Path("docs/generated")


def _relative(path: Path) -> Path:
    """``path`` relative to the working directory when it is inside it (pages name their record so)."""
    path = path.expanduser()
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


@docs_app.command("record")
def record(
    name: Annotated[str, typer.Option(help="the record's name: docs/runs/NAME")],
    label: Annotated[str, typer.Option(help="what the run is, shown above every generated table")],
    workspace: Annotated[Path, typer.Option(help="the finished workspace")] = Path("."),
    out: Annotated[Optional[Path], typer.Option(help="record folder (default docs/runs/NAME)")] = None,
    commit: Annotated[Optional[str], typer.Option(help="commit the run was built from (default: the model cards', else HEAD)")] = None,
    profile: Annotated[Optional[str], typer.Option(help="profile of the run (default: the model cards')")] = None,
    command: Annotated[Optional[str], typer.Option(help="the command that built the run")] = None,
    wall_s: Annotated[Optional[float], typer.Option("--wall-s", help="the command's wall time in seconds")] = None,
    bench: Annotated[Optional[list[Path]], typer.Option(help="a benchmark script's output to keep (repeatable)")] = None,
) -> None:
    """Copy a finished run's metrics, model cards, validation results and
    stage records into docs/runs/NAME, with run.json (commit, profile,
    dates, machine)."""
    from hatecheck_pipeline.report import docs_record

    target = out or RUNS / name
    try:
        info = docs_record.record(workspace, target, name, label, commit, profile, command, wall_s, bench or [])
    except docs_record.RecordError as exc:
        fail(exc)
    typer.echo(f"recorded {info['profile']} run of {info['commit'][:12]} ({info['started']} to {info['finished']}) in {target}")


@docs_app.command("render")
def render(
    record: Annotated[Optional[Path], typer.Option(help="recorded run (default: the one the current pages name)")] = None,
    out: Annotated[Path, typer.Option(help="folder of the generated pages")] = GENERATED,
    check: Annotated[bool, typer.Option(help="only check that the pages are what the record gives")] = False,
) -> None:
    """Write docs/generated/{results,llm,performance,data}.md from a recorded run."""
    from hatecheck_pipeline.report import docs_pages, docs_record

    record = record or docs_pages.record_of(out / "results.md")
    if record is None:
        fail(f"{out / 'results.md'} names no recorded run: give --record docs/runs/NAME")
    record = _relative(record)
    try:
        if check:
            stale = docs_pages.stale(record, out)
            if stale:
                fail(f"generated pages differ from what {record} gives: {', '.join(stale)} (run `hatecheck-pipeline docs render --record {record}`)")
            typer.echo(f"{out}: the generated pages are what {record} gives")
            return
        for page in docs_pages.write(record, out):
            typer.echo(f"wrote {page}")
    except docs_record.RecordError as exc:
        fail(exc)
