"""Every call into DVC's internals, in one place (issue 31).

The Snakemake-to-DVC recording (``runners.record_in_dvc``) commits the
stages a Snakemake run made into ``dvc.lock`` in this one process, with one
write of the lock (23 s for the whole report, where ``dvc commit --force``
per stage re-reads the project and rewrites the lock each time: minutes).
That needs DVC objects that are not its public API: ``Repo.index``,
``Stage.save`` / ``Stage.commit(relink=False)``, ``ProjectFile.dump_stages
(update_pipeline=False)``, and the repository lock (``dvc.lock.make_lock``).
They change between DVC versions without notice, hence the exact pin of
``dvc`` in pyproject.toml; ``tests/pipeline/test_dvc_internals.py`` checks
each of them against the installed DVC and fails, naming the call, where
one differs.

Nothing outside this module imports ``dvc``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

# What this module relies on: (object path, attribute or parameter) -> why.
# The test walks it against the installed DVC (and commits through a real
# Repo, which covers its instance attribute ``lock``).
RELIED_ON = {
    ("dvc.repo.Repo", "index"): "the stages of dvc.yaml, resolved (params interpolated)",
    ("dvc.repo.Repo", "status"): "which stages DVC's record says are up to date",
    ("dvc.stage.Stage", "save"): "hash a stage's deps and outputs",
    ("dvc.stage.Stage", "commit"): "cache a stage's outputs (passes relink on to each output)",
    ("dvc.output.Output.commit", "relink"): "cache outputs without re-linking the workspace files",
    ("dvc.dvcfile.ProjectFile.dump_stages", "update_pipeline"): "write many stages' lock entries at once",
    ("dvc.lock", "make_lock"): "DVC's repository lock file (.dvc/tmp/lock)",
    ("dvc.lock", "LockError"): "the lock is held by another process",
}


def commit_stages(names: Iterable[str], root: str | Path = ".") -> None:
    """Record ``names`` in ``dvc.lock``: hash deps and outputs, put outputs
    in the cache without re-linking them (the workspace files stay as they
    are), one write of the lock file per dvc.yaml."""
    from dvc.repo import Repo

    wanted = set(names)
    with Repo(str(root)) as repo, repo.lock:
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


def changed_stages(root: str | Path = ".") -> set[str]:
    """Stages whose deps, params or outputs differ from ``dvc.lock`` (what
    ``dvc status`` lists), stages never recorded included."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        status = repo.status()
    return {name.split(":")[-1] for name in status}


def repository_lock(lockfile: str | Path):
    """DVC's repository lock at ``lockfile`` (``.dvc/tmp/lock``), not yet
    taken, and the error raised when another process holds it."""
    from dvc.lock import LockError, make_lock

    path = Path(lockfile)
    return make_lock(str(path), tmp_dir=str(path.parent)), LockError
