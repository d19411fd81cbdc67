"""Every call into DVC the pipeline needs, in one place.

The Snakemake-to-DVC recording (``runners/compose.record_in_dvc``) commits the
stages a Snakemake run made into ``dvc.lock`` in this one process, with one
write of the lock (``dvc commit --force`` per stage re-reads the project and
rewrites the lock each time: minutes for the whole report). That needs DVC
objects that are not its public API (:data:`NEEDED`): ``Repo.index``,
``Repo.status``, ``Stage.save`` / ``Stage.commit(relink=False)``,
``ProjectFile.dump_stages(update_pipeline=False)``, the repository lock
(``dvc.lock.make_lock``), the params reads :func:`_params_as_run` hands a
run's overrides to, and the ``.dvc/tmp/rwlock`` file :func:`stage_runs`
reads. They change between DVC versions without notice, hence the exact pin
of ``dvc`` in pyproject.toml; ``tests/runners/test_dvc_adapter.py`` checks
each of them against the installed DVC and fails, naming the call, where one
differs.

What only makes this faster (DVC's params and git-index reads memoised, the
lock read with the safe parser, ``hatecheck-pipeline repro`` writing the
lock once) is in :mod:`runners.dvc_speedups`, which checks what it relies
on when it is imported and, on a DVC that differs, turns itself off with one
warning: a DVC upgrade can make these calls slower, never write a different
lock.

Nothing outside this module and ``dvc_speedups`` imports ``dvc``
(``tests/runners/test_dvc_adapter.py`` checks).
"""

from __future__ import annotations

import copy
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Mapping

from hatecheck_pipeline.core.config import PARAMS_FILE, set_key

# What this module relies on: (object path, attribute or parameter) -> why.
# The test walks it against the installed DVC (and commits through a real
# Repo, which covers its instance attribute ``lock``, and reads an rwlock
# DVC wrote, which covers its format).
NEEDED = {
    ("dvc.repo.Repo", "index"): "the stages of dvc.yaml, resolved (params interpolated)",
    ("dvc.repo.Repo", "status"): "which stages DVC's record says are up to date",
    ("dvc.repo.Repo", "reproduce"): "`dvc repro` itself (targets, force, dry, ...)",
    ("dvc.stage.Stage", "save"): "hash a stage's deps and outputs",
    ("dvc.stage.Stage", "commit"): "cache a stage's outputs (passes relink on to each output)",
    ("dvc.output.Output.commit", "relink"): "cache outputs without re-linking the workspace files",
    ("dvc.dvcfile.ProjectFile.dump_stages", "update_pipeline"): "write many stages' lock entries at once",
    ("dvc.lock", "make_lock"): "DVC's repository lock file (.dvc/tmp/lock)",
    ("dvc.lock", "LockError"): "the lock is held by another process",
    ("dvc.dependency.param", "load_path"): "what reads a params file for a stage (a run's overrides applied)",
    ("dvc.utils.serialize", "load_path"): "what reads params.yaml for dvc.yaml's ${...} (a run's overrides applied)",
    ("dvc.rwlock", "RWLOCK_FILE"): "the file (.dvc/tmp/rwlock) where `dvc repro` names the stage it runs: read by stage_runs",
    ("dvc.rwlock", "SCHEMA"): "its JSON layout: {write: {path: {pid, cmd}}, read: {path: [{pid, cmd}]}}",
}

# The leading parameters of the functions wrapped, in order (the wrappers
# pass them so).
NEEDED_SIGNATURES = {
    "dvc.utils.serialize.load_path": ("fs_path", "fs"),
}


def commit_stages(names: Iterable[str], root: str | Path = ".", overrides: Mapping[str, Any] | None = None) -> None:
    """Record ``names`` in ``dvc.lock``: hash deps and outputs, put outputs
    in the cache without re-linking them (the workspace files stay as they
    are), one write of the lock file per dvc.yaml. ``overrides``: the
    parameter values the run used where they differ from params.yaml
    (``snakemake --config``, as dotted keys); the lock records those.
    Where the speed-ups are on, DVC's params and git-index reads are
    memoised and the lock read with the safe parser (about 20 s for the
    whole report's 239 stages, 50 s without); the same lock either way."""
    from dvc.repo import Repo

    from hatecheck_pipeline.runners import dvc_speedups

    wanted = set(names)
    with (
        Repo(str(root)) as repo,
        repo.lock,
        _params_as_run(root, overrides),
        dvc_speedups.memoised_reads(repo),
        dvc_speedups.lock_read_plain(),
        dvc_speedups.rwlock_own_skipped(),
    ):
        stages = [s for s in repo.index.stages if getattr(s, "name", None) in wanted]
        missing = wanted - {s.name for s in stages}
        if missing:
            raise RuntimeError(f"dvc.yaml has no stage(s) {sorted(missing)}: run `hatecheck-pipeline dag write`")
        by_file: dict[Any, list[Any]] = {}
        for stage in stages:
            stage.save()
            stage.commit(relink=False)
            by_file.setdefault(stage.dvcfile, []).append(stage)
        for dvcfile, group in by_file.items():
            dvcfile.dump_stages(group, update_pipeline=False)


@contextmanager
def _params_as_run(root: str | Path, overrides: Mapping[str, Any] | None):
    """While DVC reads the project's params file, hand it the values a run
    used: params.yaml with ``overrides`` (dotted keys) applied. A Snakemake
    run given ``--config profile=smoke`` ran every stage with the smoke
    profile; DVC, reading params.yaml, would resolve dvc.yaml's
    ``profiles.${profile}.<key>`` to the default profile's keys and record
    its values, so that ``dvc.lock`` (and ``lineage``, which reads it) would
    name parameters the run never used. This covers both of DVC's reads:
    dvc.yaml's interpolation (``dvc.utils.serialize.load_path``) and each
    stage's params (``dvc.dependency.param.load_path``). Nothing is written
    to params.yaml."""
    if not overrides:
        yield
        return
    from dvc.dependency import param
    from dvc.utils import serialize

    target = os.path.realpath(Path(root, PARAMS_FILE))
    originals = serialize.load_path, param.load_path

    def as_run(load: Any) -> Any:
        def load_path(path: str, fs: Any, **kwargs: Any) -> Any:
            data = load(path, fs, **kwargs)
            if os.path.realpath(path) != target:
                return data
            data = copy.deepcopy(data)
            for key, value in overrides.items():
                set_key(data, key, copy.deepcopy(value))
            return data

        return load_path

    serialize.load_path, param.load_path = (as_run(f) for f in originals)
    try:
        yield
    finally:
        serialize.load_path, param.load_path = originals


def changed_stages(root: str | Path = ".", overrides: Mapping[str, Any] | None = None) -> set[str]:
    """Stages whose deps, params or outputs differ from ``dvc.lock`` (what
    ``dvc status`` lists), stages never recorded included; ``overrides``:
    compared with params.yaml as a run sees it (:func:`commit_stages`).
    DVC's reads memoised as for a commit (params.yaml parsed once, not once
    per stage, where the speed-ups are on): the same answer as ``dvc
    status``, in less time (``benchmarks/records/status_memoised_2026-11-28.txt``)."""
    from dvc.repo import Repo

    from hatecheck_pipeline.runners import dvc_speedups

    with (
        Repo(str(root)) as repo,
        _params_as_run(root, overrides),
        dvc_speedups.memoised_reads(repo, git_index=False),
        dvc_speedups.rwlock_own_skipped(),
    ):
        status = repo.status()
    return {name.split(":")[-1] for name in status}


def reproduce(targets: Iterable[str] = (), root: str | Path = ".", **kwargs: Any) -> list[str]:
    """``dvc repro [targets]`` (``kwargs``: ``Repo.reproduce``'s, e.g.
    ``force``, ``dry``): the same stages run and the same ``dvc.lock``
    written. Where the speed-ups are on (:mod:`runners.dvc_speedups`), with
    less of DVC's own work per stage: its params reads memoised, the lock
    read with the safe parser, and the lock entries of the stages that ran
    written once at the end (also when a stage fails or the run is
    interrupted; a run killed outright records none of the stages it ran);
    else ``Repo.reproduce`` as it is. DVC's messages (each stage run or
    skipped) print as ``dvc repro``'s do: importing DVC sets up its console
    logging at INFO. Returns the names of the stages that ran (none for a
    dry run)."""
    from dvc.repo import Repo

    from hatecheck_pipeline.runners import dvc_speedups

    with (
        Repo(str(root)) as repo,
        dvc_speedups.memoised_reads(repo, git_index=False),
        dvc_speedups.lock_read_plain(),
        dvc_speedups.rwlock_own_skipped(),
    ):
        if dvc_speedups.ACTIVE:
            return dvc_speedups.reproduce_one_write(repo, list(targets) or None, **kwargs)
        done = repo.reproduce(targets=list(targets) or None, **kwargs)
    if kwargs.get("dry"):
        return []
    return [s.name for s in done or () if getattr(s, "name", None) is not None]


def repository_lock(lockfile: str | Path):
    """DVC's repository lock at ``lockfile`` (``.dvc/tmp/lock``), not yet
    taken, and the error raised when another process holds it."""
    from dvc.lock import LockError, make_lock

    path = Path(lockfile)
    return make_lock(str(path), tmp_dir=str(path.parent)), LockError


def stage_runs(rwlock: str | Path) -> str:
    """The live DVC processes that hold stage outputs, as ``PID n: cmd``
    (``dvc repro`` releases the repository lock while a stage's command runs,
    and records it in ``.dvc/tmp/rwlock``: :data:`NEEDED`); empty where
    there are none, or the file is missing or unreadable."""
    try:
        doc = json.loads(Path(rwlock).read_text("utf-8"))
    except (OSError, ValueError):
        return ""
    infos = [
        i
        for group in ("read", "write")
        for entries in (doc.get(group) or {}).values()
        for i in (entries if isinstance(entries, list) else [entries])
    ]
    live = {}
    for info in infos:
        try:
            os.kill(int(info["pid"]), 0)
        except (OSError, KeyError, ValueError, TypeError):
            continue
        live[info["pid"]] = info.get("cmd", "")
    return "; ".join(f"PID {pid}: {cmd}" for pid, cmd in live.items())


def read_at(path: str, rev: str) -> bytes:
    """A DVC-tracked file's bytes as they were at ``rev`` (a git revision or
    DVC experiment), from the cache or the remote: DVC's public
    ``dvc.api.open``."""
    import dvc.api

    with dvc.api.open(path, rev=rev, mode="rb") as src:
        return src.read()
