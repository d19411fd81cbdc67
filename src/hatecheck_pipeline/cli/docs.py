"""``hatecheck-pipeline docs``: record a finished run for the documentation
and render the documentation's generated pages from a recorded run, and the
configuration reference from the parameters schema and ``params.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli.panels import new_app
from hatecheck_pipeline.cli.state import STATE, fail
from hatecheck_pipeline.core import config, yamlio

docs_app = new_app(
    """Record a run; render the docs' generated pages.

    record copies a finished run into docs/runs/NAME; render writes
    docs/generated/ from a recorded run, the benchmark records and the
    parameters."""
)

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
    bench: Annotated[Optional[list[Path]], typer.Option(metavar="FILE", help="a benchmark script's output to keep (repeatable)")] = None,
) -> None:
    """Record a finished run for the documentation.

    The run's metrics (the scores, the audits' and the prompted LLM's),
    model cards, validation results and stage records are copied into
    docs/runs/NAME, with run.json (commit, profile, dates, machine) and
    dag.json (each recorded stage's upstream stages, from the stage
    registry of the parameters file, --params, read in the workspace,
    under the run's profile)."""
    from hatecheck_pipeline.core.errors import PipelineError
    from hatecheck_pipeline.docsite import runs as docs_record

    target = out or RUNS / name
    try:
        upstream, source = record_dag(workspace, profile or docs_record.profile_of(workspace))
        info = docs_record.record(workspace, target, name, label, commit, profile, command, wall_s, bench or [])
        docs_record.write_dag(target, upstream, source)
    except (PipelineError, ValueError) as exc:
        fail(exc)
    typer.echo(f"recorded {info['profile']} run of {info['commit'][:12]} ({info['started']} to {info['finished']}) in {target}")


def record_dag(workspace: Path, profile: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Each recorded stage of ``workspace`` -> the recorded stages whose
    outputs it reads, from the stage registry (the parameters file, --params,
    relative to the workspace, with --set overrides and the run's profile),
    and what the graph was built from."""
    from hatecheck_pipeline.core.usage import load_records
    from hatecheck_pipeline.docsite.critical_path import upstream_of
    from hatecheck_pipeline.pipeline.registry import build_stages

    params_file = Path(STATE["params_file"])
    params_file = params_file if params_file.is_absolute() else Path(workspace) / params_file
    overrides = [f"{k}={config.dumps(v)}" for k, v in config.env_overrides().items()] + STATE["overrides"]
    if profile != "unknown":
        overrides.append(f"profile={profile}")
    params = config.load_params(params_file, overrides)
    recorded = [r["stage"] for r in load_records(Path(workspace) / "logs" / "benchmarks")]
    upstream = upstream_of(((s.name, s.deps, s.all_outs) for s in build_stages(params)), recorded)
    return upstream, {"parameters": params_file.name, "profile": str(params.get("profile"))}


def config_reference() -> tuple[str | None, str]:
    """The configuration reference page rendered from the parameters file
    (the app's ``--params``, params.yaml by default) and the schema beside it
    (None and the reason when one of them is missing). The values are the
    file's own, without ``--set`` or ``snakemake --config`` overrides."""
    from hatecheck_pipeline.docsite import config_reference as ref

    params_file = Path(STATE["params_file"])
    schema_file = params_file.parent / config.SCHEMA_FILE
    missing = [str(p) for p in (schema_file, params_file) if not p.is_file()]
    if missing:
        return None, f"{', '.join(missing)} not found (run from the project root)"
    sources = (_relative(schema_file).as_posix(), _relative(params_file).as_posix())
    return ref.render(yamlio.read_yaml(schema_file), yamlio.read_yaml(params_file) or {}, sources), ""


@docs_app.command("render")
def render(
    record: Annotated[Optional[Path], typer.Option(help="recorded run (default: the one the current pages name)")] = None,
    out: Annotated[Path, typer.Option(help="folder of the generated pages")] = GENERATED,
    check: Annotated[
        bool, typer.Option(help="only check that the pages are what the records and the parameters give (exit 1 if not)")
    ] = False,
) -> None:
    """Render the documentation's generated pages.

    docs/generated/{results,llm,performance,data}.md from a recorded run,
    docs/generated/{intervals,screens,local-llm-protocol}.md from benchmark
    records (benchmarks/intervals.json, benchmarks/records/), and
    docs/generated/config.md (the configuration reference) from
    workflow/schemas/params.schema.yaml and params.yaml."""
    from hatecheck_pipeline.core.files import write_text
    from hatecheck_pipeline.docsite import config_reference as ref
    from hatecheck_pipeline.docsite import pages as docs_pages, runs as docs_record

    record = record or docs_pages.record_of(out / "results.md")
    if record is None:
        fail(f"{out / 'results.md'} names no recorded run: give --record docs/runs/NAME")
    record = _relative(record)
    reference, problem = config_reference()
    page = out / f"{ref.PAGE}.md"
    try:
        if check:
            stale = docs_pages.stale(record, out)
            if stale:
                fail(
                    f"generated pages differ from what {record} and the benchmark records give: {', '.join(stale)} (run `hatecheck-pipeline docs render --record {record}`)"
                )
            if reference is None:
                fail(f"cannot check {page}: {problem}")
            if not page.is_file() or page.read_text("utf-8") != reference:
                fail(f"{page} differs from what the parameters schema and params.yaml give (run `hatecheck-pipeline docs render`)")
            typer.echo(f"{out}: the generated pages are what {record}, the benchmark records and the parameters give")
            return
        for written in docs_pages.write(record, out):
            typer.echo(f"wrote {written}")
    except docs_record.RecordError as exc:
        fail(exc)
    if reference is None:
        fail(f"cannot write {page}: {problem}")
    typer.echo(f"wrote {write_text(reference, page)}")
