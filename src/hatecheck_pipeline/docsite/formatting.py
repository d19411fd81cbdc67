"""Formatting shared by the generated documentation pages
(:mod:`hatecheck_pipeline.docsite.pages`): numbers, figures with their
interval, Markdown tables, the cell naming a figure's file, the papers'
figure of a cell (``resources/published.yaml``), and the header naming the
recorded run a page comes from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report.cells import NA

MHC_ORDER = ("arabic", "dutch", "french", "german", "hindi", "italian", "mandarin", "polish", "portuguese", "spanish")


def read_json(path: Path) -> dict[str, Any]:
    """A record file's JSON document."""
    return json.loads(path.read_text("utf-8"))


def num(value: float | None, digits: int = 1) -> str:
    """A number with thousands separators, – when absent.

    >>> num(1234.56), num(0.5, 0), num(None)
    ('1,234.6', '0', '–')
    """
    return "–" if value is None else f"{value:,.{digits}f}"


def figure_of(doc: Mapping[str, Any], section: str, key: str | None, metric: str) -> dict[str, Any]:
    """``{value, ci_low, ci_high}`` of a metrics file's figure ({} when absent)."""
    part = doc.get(section) or {}
    part = part.get(key) or {} if key is not None else part
    fig = part.get(metric)
    return fig if isinstance(fig, dict) else ({"value": fig} if fig is not None else {})


def with_ci(fig: Mapping[str, Any]) -> str:
    """A figure with its interval; n/a when it is undefined, – when absent."""
    if fig.get("value") is None:
        return NA if fig.get("undefined") else "–"
    ci = f" [{num(fig['ci_low'])}, {num(fig['ci_high'])}]" if fig.get("ci_low") is not None else ""
    return f"{num(fig['value'])}{ci}"


def md_table(head: list[str], rows: list[list[str]]) -> str:
    """A Markdown table.

    >>> print(md_table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def path_cell(path: str) -> str:
    """The cell naming a figure's file."""
    return f"`{path}`"


def paper_figure(tables: tuple[str, ...], model: str, row: str, column: str, published: Mapping[str, Any]) -> tuple[float | None, str]:
    """The first published (value, source) of ``model``'s cell among ``tables``."""
    for table in tables:
        found = P.lookup(table, model, published).get((row, column))
        if found:
            return found[0], found[2]
    return None, ""


def run_header(info: Mapping[str, Any], record: str) -> str:
    """The run a page comes from: label, profile, commit, dates, machine."""
    m = info.get("machine") or {}
    kind = "warning" if info.get("profile") == "smoke" else "note"
    rows = [
        ["record", path_cell(record)],
        ["profile", f"`{info.get('profile')}`"],
        ["commit", f"`{info.get('commit')}`"],
        ["stages ran", f"{info.get('started')} to {info.get('finished')} (first stage start to last stage end, UTC)"],
        ["machine", f"{m.get('cpu')}, {m.get('cores')} cores, {num(m.get('memory_gib'))} GiB memory, {m.get('os')}"],
    ]
    if info.get("command"):
        rows.append(["command", f"`{info['command']}`"])
    return (
        f'!!! {kind} "{info.get("label")}"\n    Every figure below comes from the files of this recorded run '
        f"(paths relative to `{record}/`, as in the workspace that ran).\n\n" + md_table(["run", ""], rows)
    )


def page(info: Mapping[str, Any], record: Path, sections: list[str]) -> str:
    """A generated page: the run it comes from, then its sections.

    >>> page({"label": "a run", "profile": "smoke"}, Path("docs/runs/a"), ["### One", "### Two"]).count("###")
    2
    """
    return "\n\n".join([run_header(info, Path(record).as_posix()), *sections]) + "\n"
