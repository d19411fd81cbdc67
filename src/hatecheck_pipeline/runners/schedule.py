"""Which ready stage Snakemake starts first: the one with the longest
expected work still ahead of it (its own and that of its longest chain of
downstream stages), so that a long chain starts early and does not leave
one core idle at the end of a run while the rest of the DAG waits for it.

Snakemake starts ready jobs in order of their rule's ``priority`` (higher
first). Each stage's priority is its *upward rank*, the list-scheduling
heuristic of HEFT (Topcuoglu et al. 2002): its expected seconds plus the
largest upward rank among the stages that read its outputs. The expected
seconds of a stage are its wall time in a recorded run of the same profile:
the workspace's own stage records (``logs/benchmarks/<stage>.json``, written
by every stage that ran here) where there are any, else the committed
record of that profile (``docs/runs/<profile>/logs/benchmarks``); a stage in
neither gets the median of its phase's known times, else one second. Only
the order of jobs changes: what runs, and what every stage writes, does not.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from hatecheck_pipeline.core.stage import Stage

WORKSPACE_RECORDS = Path("logs/benchmarks")
RECORDED_RUNS = Path("docs/runs")
UNKNOWN_S = 1.0


def downstream_of(stages: Sequence[Stage]) -> dict[str, set[str]]:
    """Stage name -> the stages that read one of its outputs (a file, or a
    file inside an output folder)."""
    maker: dict[str, str] = {}
    for s in stages:
        for out in s.all_outs:
            maker[str(out).rstrip("/")] = s.name
    down: dict[str, set[str]] = {s.name: set() for s in stages}
    for s in stages:
        for dep in s.deps:
            path = str(dep).rstrip("/")
            while path:
                if path in maker:
                    if maker[path] != s.name:
                        down[maker[path]].add(s.name)
                    break
                path = path.rpartition("/")[0]
    return down


def upward_ranks(down: Mapping[str, Iterable[str]], cost: Mapping[str, float]) -> dict[str, float]:
    """Each stage's cost plus the largest rank among its downstream stages.

    >>> down = {"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}
    >>> upward_ranks(down, {"a": 1, "b": 10, "c": 2, "d": 3})
    {'a': 14.0, 'b': 13.0, 'c': 5.0, 'd': 3.0}
    """
    rank: dict[str, float] = {}

    def visit(name: str) -> float:  # iterative depth-first: a DAG of hundreds of stages
        stack = [(name, False)]
        while stack:
            node, expanded = stack.pop()
            if node in rank:
                continue
            children = list(down.get(node, ()))
            if expanded:
                rank[node] = float(cost.get(node, UNKNOWN_S)) + max((rank[c] for c in children), default=0.0)
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in rank)
        return rank[name]

    for name in down:
        visit(name)
    return {name: rank[name] for name in down}


def recorded_walls(folder: Path) -> dict[str, float]:
    """Stage name -> wall seconds of the stage records in ``folder`` (none
    where it does not exist; an unreadable record is skipped)."""
    walls: dict[str, float] = {}
    if not folder.is_dir():
        return walls
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text("utf-8"))
            walls[str(record["stage"])] = float(record["wall_s"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return walls


def expected_seconds(stages: Sequence[Stage], profile: str, root: Path = Path(".")) -> dict[str, float]:
    """Each stage's expected wall seconds: the workspace's records, else the
    committed record of ``profile``, else its phase's median, else
    :data:`UNKNOWN_S`."""
    known = recorded_walls(root / WORKSPACE_RECORDS) or recorded_walls(root / RECORDED_RUNS / profile / "logs" / "benchmarks")
    by_phase: dict[str, list[float]] = {}
    for s in stages:
        if s.name in known:
            by_phase.setdefault(s.phase, []).append(known[s.name])
    medians = {phase: statistics.median(v) for phase, v in by_phase.items()}
    return {s.name: known.get(s.name, medians.get(s.phase, UNKNOWN_S)) for s in stages}


def priorities(stages: Sequence[Stage], profile: str, root: Path = Path(".")) -> dict[str, int]:
    """Stage name -> the ``priority`` of its Snakemake rule: its upward rank
    in whole seconds."""
    ranks = upward_ranks(downstream_of(stages), expected_seconds(stages, profile, root))
    return {name: int(round(r)) for name, r in ranks.items()}
