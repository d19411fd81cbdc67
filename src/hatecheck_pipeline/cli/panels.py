"""How ``hatecheck-pipeline --help`` looks: plain text, commands in groups.

Help is click's plain text (``rich_markup_mode=None``), as Snakemake's and
DVC's are: the same in a terminal, a pipe or a log, with or without rich
installed, and the docstrings shown as written. Click's plain help lists
commands in one block; :class:`PanelGroup` lists them under their group's
heading (each command's ``rich_help_panel``), in the order the groups are
first met, so registering the user's commands first puts them first.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

TEST = "Test a classifier"
REPRODUCE = "Reproduce the papers"
INSPECT = "Inspect the pipeline and its record"
INTERNALS = "Internals (the runners and the docs call these)"


class PanelGroup(TyperGroup):
    """A command group whose plain help lists its commands per panel."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        commands = [(name, cmd) for name in self.list_commands(ctx) if (cmd := self.get_command(ctx, name)) and not cmd.hidden]
        if not commands:
            return
        width = max(len(name) for name, _ in commands)
        limit = formatter.width - 6 - width
        panels: dict[str, list[tuple[str, str]]] = {}
        for name, cmd in commands:
            panel = getattr(cmd, "rich_help_panel", None) or "Commands"
            panels.setdefault(panel, []).append((name.ljust(width), cmd.get_short_help_str(limit)))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)


def new_app(help: str, **settings: Any) -> typer.Typer:
    """A typer app (or sub-app) with plain help, commands per panel, no
    rich tracebacks and its help when called without a command."""
    return typer.Typer(
        help=help,
        cls=PanelGroup,
        rich_markup_mode=None,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        **settings,
    )
