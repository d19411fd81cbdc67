"""The critical path of a recorded run: the chain of stages that bounded its
wall time, from the stage records (``logs/benchmarks/<stage>.json``) and
the dependency graph that ``hatecheck-pipeline docs record`` takes from the
stage registry (the record's ``dag.json``, :func:`upstream_of`).

Starting from the stage that finished last, the path repeatedly steps to
the upstream stage (one whose outputs the stage reads) that finished last,
until a stage with no upstream stage. Each stage on it waited some time
after that dependency finished before it started (its *wait*: Snakemake's
scheduling, cores taken by other stages, the stage command's start-up); the
first stage's wait is counted from the run's first stage start. The path's
walls and waits add up to the run's span (first stage start to last stage
end), up to the records' whole-second timestamps.

Plain values in, plain values out: no registry here (the docs site sits
beside the pipeline layer), so the pages render from the record alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence


def upstream_of(stages: Iterable[tuple[str, Iterable[str], Iterable[str]]], recorded: Iterable[str]) -> dict[str, list[str]]:
    """Stage -> the recorded stages whose outputs it reads, for each recorded
    stage; ``stages`` are ``(name, deps, outs)`` (file paths, a dependency
    inside an output folder counting as that output). A stage that has no
    record (not run) is stepped through to the recorded stages upstream of it.

    >>> stages = [("get", [], ["raw.csv"]), ("clean", ["raw.csv"], ["data/clean"]),
    ...           ("fit", ["data/clean/a.csv", "code/fit.txt"], ["model.bin"]),
    ...           ("score", ["model.bin", "raw.csv"], ["scores.json"])]
    >>> upstream_of(stages, ["get", "fit", "score"])
    {'fit': ['get'], 'get': [], 'score': ['fit', 'get']}
    """
    stages = [(name, list(deps), list(outs)) for name, deps, outs in stages]
    producer = {out.rstrip("/"): name for name, _, outs in stages for out in outs}

    def made_by(dep: str) -> str | None:
        path = dep.rstrip("/")
        while path:
            if path in producer:
                return producer[path]
            path = path.rpartition("/")[0]
        return None

    direct = {name: sorted({p for p in map(made_by, deps) if p is not None and p != name}) for name, deps, _ in stages}
    recorded = set(recorded)

    def recorded_above(name: str, seen: set[str]) -> set[str]:
        found: set[str] = set()
        for up in direct.get(name, []):
            if up in seen:
                continue
            seen.add(up)
            found |= {up} if up in recorded else recorded_above(up, seen)
        return found

    return {name: sorted(recorded_above(name, set())) for name in sorted(recorded & set(direct))}


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def critical_path(upstream: Mapping[str, Sequence[str]], records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chain of stages that bounded the run, first stage first: each
    step's ``stage``, ``phase``, ``started``, ``finished``, ``wall_s``,
    ``cpu_s``, ``start_s`` and ``end_s`` (seconds from the run's first stage
    start), ``after`` (the upstream stage it waited for: the previous step;
    None for the first) and ``wait_s`` (its start minus that stage's end;
    for the first step, minus the run's first stage start). Ties in the
    finishing second go to the longer stage, then to the name.

    A hand-made run on its own clock: ``a`` and ``b`` start at once; ``c``
    reads both, and ``b`` finished last, so the path runs through ``b``;
    ``c`` started 5 s after ``b`` ended (it waited for a core); ``d`` has no
    record for its upstream, ``x``, so it starts its own chain, which ends
    earlier than ``c``.

    >>> def rec(stage, start, end):
    ...     return {"stage": stage, "phase": "p", "wall_s": end - start, "cpu_s": 1.0,
    ...             "started": f"2026-01-01T12:00:{start:02d}+00:00", "finished": f"2026-01-01T12:00:{end:02d}+00:00"}
    >>> records = [rec("a", 0, 10), rec("b", 0, 20), rec("c", 25, 40), rec("d", 1, 30)]
    >>> path = critical_path({"a": [], "b": [], "c": ["a", "b"], "d": ["x"]}, records)
    >>> [(s["stage"], s["after"], s["start_s"], s["end_s"], s["wait_s"]) for s in path]
    [('b', None, 0.0, 20.0, 0.0), ('c', 'b', 25.0, 40.0, 5.0)]
    """
    by = {r["stage"]: r for r in records}
    if not by:
        return []
    first = min(_time(r["started"]) for r in by.values())

    def last(names: Iterable[str]) -> str | None:
        names = [n for n in names if n in by]
        return max(names, key=lambda n: (_time(by[n]["finished"]), by[n]["wall_s"], n)) if names else None

    chain: list[str] = []
    stage = last(by)
    while stage is not None and stage not in chain:  # a cycle only from records of different runs
        chain.append(stage)
        stage = last(upstream.get(stage, []))
    chain.reverse()
    steps = []
    for i, name in enumerate(chain):
        r = by[name]
        after = chain[i - 1] if i else None
        since = _time(by[after]["finished"]) if after else first
        steps.append(
            {
                "stage": name,
                "phase": r.get("phase"),
                "started": r["started"],
                "finished": r["finished"],
                "wall_s": r["wall_s"],
                "cpu_s": r["cpu_s"],
                "start_s": (_time(r["started"]) - first).total_seconds(),
                "end_s": (_time(r["finished"]) - first).total_seconds(),
                "after": after,
                "wait_s": (_time(r["started"]) - since).total_seconds(),
            }
        )
    return steps


def cpu_floor_s(records: Iterable[Mapping[str, Any]], cores: int) -> float:
    """The shortest span the run's CPU time allows on ``cores`` cores: the
    stages' summed CPU seconds over the cores.

    >>> cpu_floor_s([{"cpu_s": 30.0}, {"cpu_s": 10.0}], 2)
    20.0
    """
    return sum(r["cpu_s"] for r in records) / cores
