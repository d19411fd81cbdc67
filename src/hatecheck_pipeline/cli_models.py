"""CLI subcommands of the models phase (registered on the main app)."""

from __future__ import annotations

from .cli import app, load  # noqa: F401
