"""What every command shares: the parameters file and ``--set`` overrides
given to the app, the one way to load them, and one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from hatecheck_pipeline.cli import stage_run
from hatecheck_pipeline.core import config

STATE: dict[str, Any] = {"params_file": Path(config.PARAMS_FILE), "overrides": []}


def load() -> dict[str, Any]:
    """The validated parameters (file + overrides)."""
    return stage_run.load_params(STATE["params_file"], STATE["overrides"])


def fail(message: Exception | str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)
