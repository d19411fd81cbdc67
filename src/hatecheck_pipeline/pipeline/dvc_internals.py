"""Every call into DVC's internals, in one place (issue 31).

The Snakemake-to-DVC recording (``runners.record_in_dvc``) commits the
stages a Snakemake run made into ``dvc.lock`` in this one process, with one
write of the lock and DVC's params and git-index reads memoised for the
commit (about 20 s for the whole report's 239 stages, 50 s without the
memoisation; ``dvc commit --force`` per stage re-reads the project and
rewrites the lock each time: minutes). That needs DVC objects that are not
its public API: ``Repo.index``, ``Stage.save`` / ``Stage.commit(relink=False)``,
``ProjectFile.dump_stages(update_pipeline=False)``, the repository lock
(``dvc.lock.make_lock``), and the reads ``_memoised_reads``,
``_params_as_run`` and ``_lock_read_plain`` replace; ``reproduce`` (the
``hatecheck-pipeline repro`` command) runs ``dvc repro`` with those reads and
one write of the lock.
They change between DVC versions without notice, hence the exact pin of
``dvc`` in pyproject.toml; ``tests/pipeline/test_dvc_internals.py`` checks
each of them against the installed DVC and fails, naming the call, where
one differs.

Nothing outside this module imports ``dvc``.
"""

from __future__ import annotations

import copy
import os
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

from hatecheck_pipeline.core.config import PARAMS_FILE, set_key

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
    ("dvc.dependency.param", "load_path"): "what reads a params file (memoised during a commit)",
    ("dvc.utils.serialize", "load_path"): "what reads params.yaml for dvc.yaml's ${...} (with a run's overrides applied)",
    ("dvc.utils.serialize._yaml", "parse_yaml_for_update"): "how DVC reads dvc.lock before rewriting it (safe parse during a commit)",
    ("dvc.utils.serialize._yaml", "parse_yaml"): "DVC's safe YAML parse",
    ("dvc.utils.serialize._yaml", "_dump"): "how DVC writes dvc.lock (the same bytes from a safe parse: tested)",
    ("dvc.dependency.param", "read_param_file"): "a stage's params looked up (memoised during a commit)",
    ("dvc.dependency.param.read_param_file", "flatten"): "read_param_file(fs, path, key_paths, flatten, **kwargs)",
    ("scmrepo.git.Git", "is_tracked"): "asked once per output (answered from one read of git's index during a commit)",
    ("dulwich.repo.Repo", "open_index"): "git's index, read once per commit",
    ("dvc.repo.Repo", "reproduce"): "`dvc repro` itself (targets, force, dry, ...)",
    ("dvc.repo.reproduce", "_reproduce"): "runs the collected stages in order, under the repository lock",
    ("dvc.repo.reproduce._reproduce", "repro_fn"): "what runs one stage (passed through Repo.reproduce's kwargs)",
    ("dvc.repo.reproduce", "_reproduce_stage"): "runs one stage, then writes its lock entry (stage.dump)",
    ("dvc.stage.Stage", "dump"): "a stage's lock entry written (one rewrite of dvc.lock per stage)",
}


def commit_stages(names: Iterable[str], root: str | Path = ".", overrides: Mapping[str, Any] | None = None) -> None:
    """Record ``names`` in ``dvc.lock``: hash deps and outputs, put outputs
    in the cache without re-linking them (the workspace files stay as they
    are), one write of the lock file per dvc.yaml. ``overrides``: the
    parameter values the run used where they differ from params.yaml
    (``snakemake --config``, as dotted keys); the lock records those."""
    from dvc.repo import Repo

    wanted = set(names)
    with Repo(str(root)) as repo, repo.lock, _params_as_run(root, overrides), _memoised_reads(repo), _lock_read_plain():
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


@contextmanager
def _memoised_reads(repo: Any, git_index: bool = True):
    """While stages are committed or their status is asked, parse each
    params file once, look each stage's keys up once, and read git's index
    once, where DVC does each of these once per stage, three times per stage
    and once per output: for the whole report, 239 parses of the 943-line
    params.yaml (~20 ms each), 726 key lookups that walk the whole tree
    (``dpath``), and one read of the git index per output. A stage's plain
    dotted keys are looked up by walking the parsed file's mappings
    (:func:`_walked`), where ``dpath`` walks every node of the tree for each
    key; anything else goes to DVC's own lookup. Nothing is written to either
    in between; a params file whose size or modification time changes is read
    again. Each caller gets its own copy of what was read. ``git_index``:
    also answer ``is_tracked`` from one read of git's index (a commit asks it
    per output; a status never does)."""
    from dvc.dependency import param

    parse, lookup = param.load_path, param.read_param_file
    done: dict[tuple, Any] = {}

    def stored(fn: Any, path: str, key: tuple) -> Any:  # shared, never handed out as it is
        try:
            st = os.stat(path)
        except OSError:
            return fn()
        key = (path, st.st_mtime_ns, st.st_size, *key)
        if key not in done:
            done[key] = fn()
        return done[key]

    def memoised(fn: Any, path: str, key: tuple) -> Any:
        return copy.deepcopy(stored(fn, path, key))

    def parsed(path: str, fs: Any, kwargs: dict[str, Any]) -> Any:
        return stored(lambda: parse(path, fs, **kwargs), path, ("parse", tuple(sorted(kwargs.items()))))

    def load_path(path: str, fs: Any, **kwargs: Any) -> Any:
        return copy.deepcopy(parsed(path, fs, kwargs))

    def read_param_file(fs: Any, path: str, key_paths: list[str] | None = None, flatten: bool = False,
                        **kwargs: Any) -> Any:
        def look() -> Any:
            if flatten and key_paths:
                found = _walked(parsed(path, fs, kwargs), key_paths)
                if found is not None:
                    return found
            return lookup(fs, path, key_paths, flatten, **kwargs)

        keys = None if key_paths is None else tuple(key_paths)
        return memoised(look, path, ("keys", keys, flatten, tuple(sorted(kwargs.items()))))

    from scmrepo.git import Git

    scm = repo.scm  # NoSCM (a project outside git, `dvc init --no-scm`) answers without git
    memo = git_index and isinstance(scm, Git)
    param.load_path, param.read_param_file = load_path, read_param_file
    if memo:
        scm.is_tracked = _tracked_in(scm.root_dir)
    try:
        yield
    finally:
        param.load_path, param.read_param_file = parse, lookup
        if memo:
            del scm.is_tracked


@contextmanager
def _lock_read_plain():
    """While a commit rewrites ``dvc.lock``, DVC reads it first with
    ruamel's round-trip parser, which keeps comments and styles and is pure
    Python: several times slower on the whole report's lock than the safe
    parser DVC reads it with everywhere else
    (``benchmarks/records/dvc_lock_write_2026-11-28.txt``). A lock DVC wrote
    has no comment and its own styles, so the safe parse dumps back to the
    same bytes (``tests/pipeline/test_dvc_internals.py``); a lock with a
    ``#`` anywhere is read round-trip, as DVC does."""
    from dvc.utils.serialize import _yaml

    round_trip = _yaml.parse_yaml_for_update

    def parse_yaml_for_update(text: str, path: Any) -> Any:
        if "#" in text or not os.fspath(path).endswith("dvc.lock"):
            return round_trip(text, path)
        return _yaml.parse_yaml(text, path)

    _yaml.parse_yaml_for_update = parse_yaml_for_update
    try:
        yield
    finally:
        _yaml.parse_yaml_for_update = round_trip


def _walked(config: Any, key_paths: Iterable[str]) -> dict[str, Any] | None:
    """``{key: value}`` for dotted keys made of plain names, found by walking
    mappings: what ``read_param_file(..., flatten=True)`` returns through
    ``dpath.get`` for such keys. None when a key is not plain (a glob
    character, a number that could be a list index, an empty name) or is
    not found by the walk: DVC's own lookup then answers for all the keys
    (it leaves a missing key out)."""
    found: dict[str, Any] = {}
    for key in key_paths:
        node = config
        for name in key.split("."):
            if not name or name.isdigit() or any(c in name for c in "*?[]") or not isinstance(node, Mapping) \
                    or name not in node:
                return None
            node = node[name]
        found[key] = node
    return found


def _tracked_in(root: str):
    """``is_tracked(path)`` as scmrepo's dulwich backend answers it (the path
    or a file under it is in git's index), from one read of the index."""
    from dulwich.repo import Repo as GitRepo

    with GitRepo(root) as git:
        entries = [p.decode() for p in git.open_index()]
    tracked = set(entries)
    tracked.update(str(d) for e in entries for d in PurePosixPath(e).parents if str(d) != ".")

    def is_tracked(path: str) -> bool:
        return Path(os.path.relpath(path, root)).as_posix() in tracked

    return is_tracked


def changed_stages(root: str | Path = ".", overrides: Mapping[str, Any] | None = None) -> set[str]:
    """Stages whose deps, params or outputs differ from ``dvc.lock`` (what
    ``dvc status`` lists), stages never recorded included; ``overrides``:
    compared with params.yaml as a run sees it (:func:`commit_stages`).
    DVC's reads memoised as for a commit (params.yaml parsed once, not once
    per stage): the same answer as ``dvc status``, in less time
    (``benchmarks/records/status_memoised_2026-11-28.txt``)."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo, _params_as_run(root, overrides), _memoised_reads(repo, git_index=False):
        status = repo.status()
    return {name.split(":")[-1] for name in status}


def reproduce(targets: Iterable[str] = (), root: str | Path = ".", **kwargs: Any) -> list[str]:
    """``dvc repro [targets]`` (``kwargs``: ``Repo.reproduce``'s, e.g.
    ``force``, ``dry``), the same stages run and the same ``dvc.lock``
    written, with less of DVC's own work per stage: its params reads
    memoised and the lock read with the safe parser, as for a commit
    (:func:`commit_stages`), and the lock entries of the stages that ran
    written once at the end (also when a stage fails or the run is
    interrupted) where DVC rewrites the whole lock, through its pure-Python
    YAML emitter, after each stage: for the whole report's 20,000-line lock
    most of a score stage's time. A run killed outright (SIGKILL, power) records none
    of the stages it ran; the next one runs them again. DVC's messages (each stage run or
    skipped) print as ``dvc repro``'s do: importing DVC sets up its console
    logging at INFO. Returns the names of the stages that ran."""
    from dvc.repo import Repo
    from dvc.repo import reproduce as repro_mod

    ran: list[Any] = []
    run_all, run_one = repro_mod._reproduce, repro_mod._reproduce_stage

    def reproduce_stage(stage: Any, **kw: Any) -> Any:
        if getattr(stage, "name", None) is None:  # a .dvc file's stage: written as DVC does
            return run_one(stage, **kw)
        stage.dump = lambda **_: ran.append(stage)  # this object's lock entry, kept for the end
        try:
            return run_one(stage, **kw)
        finally:
            del stage.dump

    def run_then_write(*args: Any, **kw: Any) -> Any:  # inside Repo.reproduce: the repository lock is held
        try:
            return run_all(*args, **kw)
        finally:
            by_file: dict[Any, list[Any]] = {}
            for stage in ran:
                by_file.setdefault(stage.dvcfile, []).append(stage)
            for dvcfile, group in by_file.items():
                dvcfile.dump_stages(group, update_pipeline=False)

    with Repo(str(root)) as repo, _memoised_reads(repo, git_index=False), _lock_read_plain():
        repro_mod._reproduce = run_then_write
        try:
            repo.reproduce(targets=list(targets) or None, repro_fn=reproduce_stage, **kwargs)
        finally:
            repro_mod._reproduce = run_all
    return [s.name for s in ran]


def repository_lock(lockfile: str | Path):
    """DVC's repository lock at ``lockfile`` (``.dvc/tmp/lock``), not yet
    taken, and the error raised when another process holds it."""
    from dvc.lock import LockError, make_lock

    path = Path(lockfile)
    return make_lock(str(path), tmp_dir=str(path.parent)), LockError
