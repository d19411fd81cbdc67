"""The console entry point, ``hatecheck-pipeline``.

``hatecheck-pipeline run STAGE``, the command both runners start once per
stage, goes straight to :func:`hatecheck_pipeline.cli.stage_run.run_stage`
without building the typer app or importing the other commands' modules
(about half of a stage process's start before its function:
benchmarks/records/bench_stage_start_2026-12-02.txt); every other
command line, ``run --help`` included, goes to
:func:`hatecheck_pipeline.cli.app.cli`. Errors are the same one line on
stderr and exit status 1 either way.

A plain ``run STAGE`` is first offered to the warm stage worker
(:mod:`hatecheck_pipeline.cli.stage_worker`), which forks the stage from
a process with torch and transformers already imported; where there is none
yet the stage runs here, as before.
"""

from __future__ import annotations

import sys


def cli() -> None:
    if _is_stage_run(sys.argv[1:]):
        from hatecheck_pipeline.cli.stage_worker import run_in_worker

        code = run_in_worker(sys.argv, f"{__name__}:dispatch")
        if code is not None:
            sys.exit(code)
    dispatch(sys.argv[1:])


def dispatch(args: list[str]) -> None:
    """Run the command line ``args`` in this process."""
    if _is_stage_run(args):
        sys.exit(run(args[1]))
    from hatecheck_pipeline.cli.app import cli as full

    full()


def _is_stage_run(args: list[str]) -> bool:
    return len(args) == 2 and args[0] == "run" and not args[1].startswith("-")


def run(stage: str) -> int:
    """``run STAGE``: exit status 0, or 1 with one line on stderr."""
    from hatecheck_pipeline.cli.stage_run import load_params, run_stage
    from hatecheck_pipeline.core.errors import PipelineError

    try:
        result = run_stage(stage, load_params())
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if result:
        print(result)
    return 0
