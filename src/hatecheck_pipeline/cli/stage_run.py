"""``hatecheck-pipeline run STAGE``: the one entry point of every stage,
which both runners call (the stage's function with exactly its declared
inputs, outputs and parameter values).

A build starts one process per stage (281 in the default profile), so this
path imports only what running a stage needs: not typer, not the other
commands' modules (scoring, evaluation, the docs site). The console entry
point (:mod:`hatecheck_pipeline.cli.main`) calls :func:`run_stage` directly
for a plain ``run STAGE``; the typer command in :mod:`hatecheck_pipeline.cli.app`
(``--help``, global options) calls the same function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from hatecheck_pipeline.core import config
from hatecheck_pipeline.core.errors import PipelineError


class StaleFingerprint(PipelineError):
    """The stage's fingerprint file does not describe the code about to run."""


def load_params(params_file: str | Path = config.PARAMS_FILE, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """The validated parameters: the file, the overrides the Snakefile hands
    down (``snakemake --config``, through the environment), then ``overrides``."""
    handed_down = [f"{k}={config.dumps(v)}" for k, v in config.env_overrides().items()]
    return config.load_params(Path(params_file), handed_down + list(overrides))


def run_stage(name: str, params: Mapping[str, Any]) -> Any:
    """Run stage ``name`` of the registry built from ``params``; its
    function's answer (a line for the log), or None. A stale fingerprint
    raises :class:`StaleFingerprint`; a user's classifier that raised, a
    :class:`UserCodeError` naming the log that keeps its traceback."""
    from hatecheck_pipeline.core.stage import call
    from hatecheck_pipeline.core.usage import recorded
    from hatecheck_pipeline.models.user_code import UserCodeError
    from hatecheck_pipeline.pipeline.registry import stage_by_name
    from hatecheck_pipeline.runners.compose import keep_traceback

    found = stage_by_name(params, name)
    stale = stale_fingerprint(found)
    if stale:
        raise StaleFingerprint(stale)
    try:
        with recorded(found.name, found.phase):  # logs/benchmarks/<stage>.json
            return call(found, params)
    except UserCodeError as exc:  # a user's classifier raised: one line here, the traceback in the stage's log
        log = keep_traceback(found.log, exc.details)
        raise UserCodeError(f"{exc} (traceback in {log})") from exc


def stale_fingerprint(stage) -> str | None:
    """Why the stage's fingerprint file (``code/<stage>.txt``) does not
    describe the code about to run, or None where it does or where there is
    none (a stage run by hand outside a project: both runners make sure it
    exists). A stale file would record another code version in dvc.lock
    than the one that made the outputs."""
    from hatecheck_pipeline.core import codedeps

    path = Path(stage.fingerprint)
    try:
        recorded = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    current = codedeps.fingerprint(stage.module, codedeps.project_src())
    codedeps.flush()
    if recorded == current:
        return None
    return (
        f"stage {stage.name}: {path} does not match its current code "
        "(run `hatecheck-pipeline dag write`, or let `dvc repro` / Snakemake refresh it)"
    )
