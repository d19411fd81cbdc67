"""DVC's work made cheaper, through its private internals; optional.

What :mod:`runners.dvc_adapter` does (record stages in ``dvc.lock``, ask
their status, ``hatecheck-pipeline repro``) is correct without this module;
with it, the same lock is written in less time:

- :func:`memoised_reads`: each params file parsed once, each stage's keys
  looked up once (plain dotted keys by walking the parsed file,
  :func:`_walked`) and git's index read once (:func:`_tracked_in`), where DVC
  does these once per stage, three times per stage and once per output;
- :func:`lock_read_plain`: ``dvc.lock`` read with the safe YAML parser
  before DVC rewrites it, not ruamel's round-trip one;
- :func:`reproduce_one_write`: ``dvc repro`` with the lock entries of the
  stages that ran written once at the end, not after every stage.

Each replaces a private DVC, scmrepo or dulwich object (:data:`SPEED`).
:func:`check` looks every one of them up in the installed versions when
this module is imported (existence, and the parameters passed, in order);
where one differs, it warns once, naming the DVC version and the object,
and :data:`ACTIVE` is False: every speed-up is then a no-op
(``contextlib.nullcontext``) and stock DVC does the work, slower, never
differently. ``tests/runners/test_dvc_speedups.py`` checks each object
against the installed DVC, and that a DVC without one of them still records
the same lock.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.metadata
import inspect
import logging
import os
import warnings
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

log = logging.getLogger(__name__)

# (object path, attribute or parameter) -> why. Only for speed: stock DVC
# does without every one of them (runners/dvc_adapter.NEEDED is what the
# pipeline cannot do without).
SPEED = {
    ("dvc.dependency.param", "load_path"): "what reads a params file for a stage (memoised: one parse per file)",
    ("dvc.dependency.param", "read_param_file"): "a stage's params looked up (memoised; plain keys walked, not dpath)",
    ("dvc.dependency.param.read_param_file", "flatten"): "the lookup's arguments, passed through as given",
    ("scmrepo.git.Git", "is_tracked"): "asked once per output (answered from one read of git's index)",
    ("dulwich.repo.Repo", "open_index"): "git's index, read once per commit",
    ("dvc.utils.serialize._yaml", "parse_yaml_for_update"): "how DVC reads dvc.lock before rewriting it (safe parse instead)",
    ("dvc.utils.serialize._yaml", "parse_yaml"): "DVC's safe YAML parse (the same bytes written back: tested)",
    ("dvc.repo.reproduce", "_reproduce"): "runs the collected stages in order, under the repository lock (wrapped: one lock write)",
    ("dvc.repo.reproduce._reproduce", "repro_fn"): "what runs one stage (passed through Repo.reproduce's kwargs)",
    ("dvc.repo.reproduce", "_reproduce_stage"): "runs one stage, then writes its lock entry (stage.dump, kept for the end)",
    ("dvc.stage.Stage", "dump"): "a stage's lock entry written (one rewrite of dvc.lock per stage)",
    ("dvc.dvcfile.ProjectFile", "dump_stages"): "the kept lock entries written at once, at the end of a repro",
    ("dvc.rwlock", "_check_blockers"): "checks a stage's paths against the rwlock's (skipped where this process holds them all)",
}

# The leading parameters of the functions replaced or called positionally,
# in order: a wrapper passes them so.
SIGNATURES = {
    "dvc.dependency.param.load_path": ("fs_path", "fs"),
    "dvc.dependency.param.read_param_file": ("fs", "path", "key_paths", "flatten"),
    "dvc.utils.serialize._yaml.parse_yaml_for_update": ("text", "path"),
    "dvc.utils.serialize._yaml.parse_yaml": ("text", "path"),
    "dvc.repo.reproduce._reproduce_stage": ("stage",),
    "dvc.rwlock._check_blockers": ("tmp_dir", "lock", "info"),
}

ACTIVE = False  # set by check(), at import


def resolve(dotted: str) -> Any:
    """The object at a dotted path: the longest importable module, then
    attributes. ImportError or AttributeError where it is not there."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def has(where: str, name: str) -> bool:
    """``where`` has the attribute ``name``, or, a function, the parameter."""
    obj = resolve(where)
    if callable(obj) and not isinstance(obj, type):
        try:
            if name in inspect.signature(obj).parameters:
                return True
        except (TypeError, ValueError):
            pass
    return hasattr(obj, name)


def differences(relied_on: Mapping[tuple[str, str], str] = SPEED, signatures: Mapping[str, tuple[str, ...]] = SIGNATURES) -> list[str]:
    """What of ``relied_on`` and ``signatures`` the installed packages lack,
    each as ``where.name`` (and why it is relied on)."""
    gone = []
    for (where, name), why in relied_on.items():
        try:
            ok = has(where, name)
        except (ImportError, AttributeError):
            ok = False
        if not ok:
            gone.append(f"{where}.{name} ({why})")
    for where, params in signatures.items():
        try:
            found = tuple(inspect.signature(resolve(where)).parameters)[: len(params)]
        except (ImportError, AttributeError, TypeError, ValueError):
            found = ()
        if found != params:
            gone.append(f"{where}({', '.join(params)}, ...) (found ({', '.join(found)}))")
    return gone


def dvc_version() -> str:
    try:
        return importlib.metadata.version("dvc")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def check() -> bool:
    """Look every object of :data:`SPEED` and :data:`SIGNATURES` up in the
    installed DVC, scmrepo and dulwich; set :data:`ACTIVE`. Where one
    differs: one warning naming the DVC version and the first difference,
    and the speed-ups are off (stock DVC runs). Called at import."""
    global ACTIVE
    gone = differences()
    ACTIVE = not gone
    if gone:
        more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
        warnings.warn(
            f"DVC {dvc_version()}: {gone[0]}{more} differs from what runners/dvc_speedups.py relies on; "
            "its speed-ups are off and stock DVC records the runs (slower, the same dvc.lock)",
            RuntimeWarning,
            stacklevel=2,
        )
    return ACTIVE


def memoised_reads(repo: Any, git_index: bool = True):
    """:func:`_memoised_reads` where the speed-ups are on, else nothing."""
    return _memoised_reads(repo, git_index) if ACTIVE else contextlib.nullcontext()


def lock_read_plain():
    """:func:`_lock_read_plain` where the speed-ups are on, else nothing."""
    return _lock_read_plain() if ACTIVE else contextlib.nullcontext()


def rwlock_own_skipped():
    """:func:`_rwlock_own_skipped` where the speed-ups are on, else nothing."""
    return _rwlock_own_skipped() if ACTIVE else contextlib.nullcontext()


@contextmanager
def _memoised_reads(repo: Any, git_index: bool = True):
    """While stages are committed or their status is asked, parse each
    params file once and look each stage's keys up once
    (:func:`_memoised_params`), and read git's index once, where DVC reads
    it once per output. ``git_index``: also answer ``is_tracked`` from one
    read of git's index (a commit asks it per output; a status never does);
    nothing may write the index in between."""
    from scmrepo.git import Git

    scm = repo.scm  # NoSCM (a project outside git, `dvc init --no-scm`) answers without git
    memo = git_index and isinstance(scm, Git)
    if memo:
        scm.is_tracked = _tracked_in(scm.root_dir)
    try:
        with _memoised_params():
            yield
    finally:
        if memo:
            del scm.is_tracked


@contextmanager
def _memoised_params():
    """Parse each params file once and look each stage's keys up once, where
    DVC does these once per stage and three times per stage: for the whole
    report, 239 parses of the 943-line params.yaml (~20 ms each) and 726
    key lookups that walk the whole tree (``dpath``). A stage's plain dotted
    keys are looked up by walking the parsed file's mappings
    (:func:`_walked`); anything else goes to DVC's own lookup. Only files of
    the local file system are memoised (a file at a git revision, as
    ``params diff`` reads it, goes to DVC as it is), each under its size and
    modification time: a params file that changes (``exp run -S``) is read
    again. Each caller gets its own copy of what was read."""
    from dvc.dependency import param
    from dvc.fs import LocalFileSystem

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

    def local(fs: Any) -> bool:
        return isinstance(fs, LocalFileSystem)

    def parsed(path: str, fs: Any, kwargs: dict[str, Any]) -> Any:
        return stored(lambda: parse(path, fs, **kwargs), path, ("parse", tuple(sorted(kwargs.items()))))

    def load_path(path: str, fs: Any, **kwargs: Any) -> Any:
        if not local(fs):
            return parse(path, fs, **kwargs)
        return copy.deepcopy(parsed(path, fs, kwargs))

    def read_param_file(fs: Any, path: str, key_paths: list[str] | None = None, flatten: bool = False, **kwargs: Any) -> Any:
        if not local(fs):
            return lookup(fs, path, key_paths, flatten, **kwargs)

        def look() -> Any:
            if flatten and key_paths:
                found = _walked(parsed(path, fs, kwargs), key_paths)
                if found is not None:
                    return found
            return lookup(fs, path, key_paths, flatten, **kwargs)

        keys = None if key_paths is None else tuple(key_paths)
        return copy.deepcopy(stored(look, path, ("keys", keys, flatten, tuple(sorted(kwargs.items())))))

    param.load_path, param.read_param_file = load_path, read_param_file
    try:
        yield
    finally:
        param.load_path, param.read_param_file = parse, lookup


@contextmanager
def _lock_read_plain():
    """While a commit rewrites ``dvc.lock``, DVC reads it first with
    ruamel's round-trip parser, which keeps comments and styles and is pure
    Python: several times slower on the whole report's lock than the safe
    parser DVC reads it with everywhere else
    (``benchmarks/records/dvc_lock_write_2026-11-28.txt``). A lock DVC wrote
    has no comment and its own styles, so the safe parse dumps back to the
    same bytes (``tests/runners/test_dvc_speedups.py``); a lock with a
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


@contextmanager
def _rwlock_own_skipped():
    """Before each stage (four times, in nested calls), DVC checks every
    path the stage reads and writes against every path in its rwlock file,
    computing ``overlaps`` for each pair before it looks at whose entry it
    is: for a stage of 281 outputs (``code_fingerprints``) that is 79,000
    comparisons per check, with every entry this process's own (the outer
    call took them). Where every entry of the mode is this process's, the
    check can find no blocker and release nothing: it is skipped; anything
    else goes to DVC's check as it is."""
    from dvc import rwlock

    check = rwlock._check_blockers

    def _check_blockers(tmp_dir: Any, lock: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
        mode = kwargs.get("mode")
        held = lock.get(mode) if isinstance(mode, str) and not args else None
        if isinstance(held, Mapping) and all(
            all(i == info for i in (infos if isinstance(infos, list) else [infos])) for infos in held.values()
        ):
            return None
        return check(tmp_dir, lock, info, *args, **kwargs)

    rwlock._check_blockers = _check_blockers
    try:
        yield
    finally:
        rwlock._check_blockers = check


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
            if not name or name.isdigit() or any(c in name for c in "*?[]") or not isinstance(node, Mapping) or name not in node:
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


def reproduce_one_write(repo: Any, targets: list[str] | None, **kwargs: Any) -> list[str]:
    """``repo.reproduce(targets, **kwargs)`` with the lock entries of the
    stages that ran written once at the end (also when a stage fails or the
    run is interrupted), where DVC rewrites the whole lock, through its
    pure-Python YAML emitter, after each stage: for the whole report's
    20,000-line lock most of a score stage's time. A run killed outright
    (SIGKILL, power) records none of the stages it ran; the next one runs
    them again. Returns the names of the stages that ran. Only where
    :data:`ACTIVE`."""
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

    repro_mod._reproduce = run_then_write
    try:
        repo.reproduce(targets=targets, repro_fn=reproduce_stage, **kwargs)
    finally:
        repro_mod._reproduce = run_all
    return [s.name for s in ran]


check()
