"""What makes Snakemake and DVC compose in one workspace.

``dvc.lock`` is the record of what produced every artifact in the workspace;
both runners keep it true:

- **Parameters, by content.** Each stage gets a small file with the values
  of the parameters it declares (``.snakemake/hatecheck-params/<stage>.json``,
  one of its Snakemake inputs), rewritten only when those values change. So a
  parameter change re-runs exactly the stages that read it, through
  Snakemake's modification-time rule. A file whose new values ``dvc.lock``
  already records for that stage gets an old modification time: DVC made the
  workspace's outputs with those values (``dvc repro``), so Snakemake has
  nothing to redo.
- **Snakemake records in DVC.** After a successful Snakemake run,
  :func:`record_in_dvc` commits the stages that ran into ``dvc.lock`` (and
  those of its DAG that a killed earlier run finished and never recorded)
  (through DVC's internals, all behind ``runners.dvc_adapter``, in this
  one process, after every job finished, one
  write of the lock; outputs cached without re-linking them) and keeps the
  outputs' modification times, so the next Snakemake run still has nothing
  to do.
- **One runner at a time.** :func:`hold_dvc_lock` holds DVC's repository
  lock for a Snakemake run and refuses while a ``dvc repro`` stage runs.
- **Crashes.** A run killed with ``kill -9`` leaves Snakemake's locks
  behind; :func:`clear_stale_locks` removes them once no run is alive
  (:func:`register_run`), and the default workflow profile
  (``profiles/default``) re-runs jobs left incomplete.
- **Threads and memory.** ``core.cpu.machine_cores`` is what the machine really has; local
  rules never ask for more (:func:`rule_threads`; on a cluster the stage's own
  threads), and a global ``cpu_cores`` resource stops Snakemake from running
  more threads at once than there are cores, whatever ``--cores`` says; a
  global ``mem_mb`` resource (:func:`machine_memory_mb`) stops it from
  running stages whose declared memory together exceeds the machine's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from hatecheck_pipeline.core.config import PARAMS_FILE
from hatecheck_pipeline.core.yamlio import read_dvc_yaml
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.stage import Stage
from hatecheck_pipeline.core import codedeps
from hatecheck_pipeline.runners import dvc_adapter
from hatecheck_pipeline.pipeline.registry import FINGERPRINT_STAGE

PARAMS_DIR = ".snakemake/hatecheck-params"
OLD = 0  # modification time of a params file the lock already records (the epoch)


MEM_ENV = "HATECHECK_PIPELINE_MEM_MB"  # the memory a local run may use, in MB (default: what the machine has available)


def machine_memory_mb(meminfo: str | Path = "/proc/meminfo") -> int | None:
    """The memory a local run may fill, in MB: ``$HATECHECK_PIPELINE_MEM_MB``
    when set, else the machine's available memory at start (``MemAvailable``
    of /proc/meminfo, else ``MemTotal``); None where neither can be read.
    """
    override = os.environ.get(MEM_ENV)
    if override:
        try:
            return max(1, int(float(override)))
        except ValueError:
            raise PipelineError(f"{MEM_ENV}={override!r}: give the memory in MB, a number") from None
    try:
        text = Path(meminfo).read_text("utf-8")
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    for key in ("MemAvailable", "MemTotal"):
        if key in fields:
            return int(fields[key].split()[0]) // 1024
    return None


def register_local_resources(workflow: Any, cores: int) -> dict[str, int]:
    """Bound a local run as the machine is bound: ``cpu_cores`` (never more
    threads at once than the cores) and ``mem_mb`` (never stages whose
    declared memory together exceeds :func:`machine_memory_mb`), each unless
    the user gave it (``--resources``). A stage declaring more than the
    bound is capped to it and runs alone. Through Snakemake's public
    ``workflow.register_resource`` (the Snakefile's ``workflow`` object).
    Returns what it registered."""
    registered: dict[str, int] = {}
    if not workflow.local_exec:
        return registered  # on a cluster the scheduler places jobs on its nodes
    if "cpu_cores" not in workflow.global_resources:
        registered["cpu_cores"] = cores
    memory = machine_memory_mb()
    if "mem_mb" not in workflow.global_resources and memory:
        registered["mem_mb"] = memory
    for name, value in registered.items():
        workflow.register_resource(name, value)
    return registered


def keep_traceback(log: str | Path, text: str) -> Path:
    """Keep a traceback in a stage's log (``logs/<stage>.log``): written to
    stderr where stderr is that log (a Snakemake job: ``> log 2>&1``), else
    appended to the file (``hatecheck-pipeline run``, ``dvc repro``), so the
    terminal shows only the one-line error."""
    import sys

    log = Path(log)
    try:
        same = log.exists() and os.path.samestat(os.fstat(sys.stderr.fileno()), log.stat())
    except (OSError, ValueError, AttributeError):  # stderr without a file descriptor (a test's capture)
        same = False
    if same:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    return log


def params_file(stage: Stage) -> str:
    return f"{PARAMS_DIR}/{stage.name}.json"


def _canonical(values: Mapping[str, Any]) -> str:
    return json.dumps(values, sort_keys=True, ensure_ascii=False, indent=1) + "\n"


def locked_params(lock_path: str | Path = "dvc.lock") -> dict[str, dict[str, Any]]:
    """stage -> {dotted key (``file:key`` for other files): value} as ``dvc.lock`` records them."""
    path = Path(lock_path)
    if not path.exists():
        return {}
    lock = read_dvc_yaml(path) or {}  # YAML 1.2, as DVC wrote it (`5e-05` is a float)
    out: dict[str, dict[str, Any]] = {}
    for name, entry in (lock.get("stages") or {}).items():
        flat: dict[str, Any] = {}
        for file, values in (entry.get("params") or {}).items():
            for key, value in (values or {}).items():
                flat[key if file == PARAMS_FILE else f"{file}:{key}"] = value
        out[name] = flat
    return out


def sync_params_files(stages: Iterable[Stage], params: Mapping[str, Any], lock_path: str | Path = "dvc.lock") -> list[str]:
    """Write each stage's params file where its values changed; return the
    stages whose file got a new modification time (they will re-run)."""
    lock: dict[str, dict[str, Any]] | None = None
    touched = []
    for s in stages:
        values = s.param_values(params)
        text = _canonical(values)
        path = Path(params_file(s))
        if path.exists() and path.read_text("utf-8") == text:
            continue
        if lock is None:
            lock = locked_params(lock_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, "utf-8")
        if s.name in lock and _canonical(lock[s.name]) == text:
            os.utime(tmp, (OLD, OLD))
        else:
            touched.append(s.name)
        os.replace(tmp, path)
    return touched


def rule_threads(threads: int, cores: int, local: bool) -> int:
    """A rule's threads: the stage's, capped by this machine's cores only
    where the jobs run on this machine. On a cluster executor (Slurm) the
    threads become a job's ``--cpus-per-task`` on a compute node, whatever
    the cores of the submitting (login) host.

    >>> rule_threads(8, 2, local=True), rule_threads(8, 2, local=False)
    (2, 8)
    """
    return min(threads, cores) if local else threads


def _stamps(paths: Iterable[str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for p in paths:
        root = Path(p)
        if not root.exists():
            continue
        entries = [root] + (sorted(root.rglob("*")) if root.is_dir() else [])
        for e in entries:
            st = e.stat(follow_symlinks=False)
            out[str(e)] = (st.st_atime_ns, st.st_mtime_ns)
    return out


def stages_that_ran(stages: Iterable[Stage], started: float) -> list[Stage]:
    """Stages whose Snakemake log was written since ``started`` (this run)."""
    return [s for s in stages if Path(s.log).exists() and Path(s.log).stat().st_mtime >= started]


def unrecorded(stages: Iterable[Stage], lock_path: str | Path = "dvc.lock") -> list[Stage]:
    """Stages that ran since ``dvc.lock`` last recorded them: absent from the
    lock, or with a log newer than it, and with every output in place. A
    Snakemake run killed (or failed) part-way records nothing, so the stages
    it finished are in neither the lock nor the next run's jobs; the next
    successful run records them with its own (``lineage`` reads the lock)."""
    path = Path(lock_path)
    recorded = set((read_dvc_yaml(path) or {}).get("stages") or {}) if path.exists() else set()
    lock_time = path.stat().st_mtime if path.exists() else float("-inf")
    found = []
    for s in stages:
        log = Path(s.log)
        if not log.exists() or not all(os.path.lexists(o) for o in s.all_outs):
            continue
        if s.name not in recorded or log.stat().st_mtime > lock_time:
            found.append(s)
    return found


def declared_stages(dvc_yaml: str | Path = "dvc.yaml") -> set[str]:
    """The stage names dvc.yaml declares (none when there is no dvc.yaml)."""
    import yaml

    path = Path(dvc_yaml)
    if not path.exists():
        return set()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return set((yaml.load(path.read_text("utf-8"), Loader=loader) or {}).get("stages") or {})


def record_in_dvc(
    stages: Iterable[Stage], started: float, in_run: Iterable[str] | None = None, overrides: Mapping[str, Any] | None = None
) -> list[str]:
    """Commit the stages that ran since ``started`` into ``dvc.lock`` (outputs
    cached, nothing re-run), keeping their outputs' modification times.

    ``in_run``: the names of every job of this (successful) run's DAG, up to
    date or not; those of them that an earlier, killed run finished and never
    recorded (:func:`unrecorded`) are committed too. ``overrides``: the
    run's ``--config`` values that params.yaml does not hold (dotted keys);
    the lock records the values the stages ran with, not params.yaml's; a
    run whose overrides add a model records only the stages dvc.yaml declares."""
    stages = list(stages)
    if any(k == "models" or k.startswith("models.") for k in overrides or {}):
        # a model given on the command line (`hatecheck-pipeline evaluate`):
        # its stages are not in dvc.yaml, the stages it needed of it are
        declared = declared_stages()
        stages = [s for s in stages if s.name in declared]
    ran = stages_that_ran(stages, started)
    if in_run is not None:
        names = set(in_run) - {s.name for s in ran}
        ran += unrecorded([s for s in stages if s.name in names])
    extra = [FINGERPRINT_STAGE] if fingerprints_unrecorded(stages, bool(ran)) else []
    if not ran and not extra:
        return []
    stamps = _stamps(o for s in ran for o in s.all_outs)
    try:
        dvc_adapter.commit_stages([s.name for s in ran] + extra, overrides=overrides)
    finally:
        for path, (atime, mtime) in stamps.items():
            if os.path.lexists(path):
                os.utime(path, ns=(atime, mtime), follow_symlinks=False)
    return [s.name for s in ran]


def fingerprints_unrecorded(stages: Iterable[Stage], ran: bool, lock_path: str | Path = "dvc.lock") -> bool:
    """Whether dvc.lock should record the fingerprint stage now: dvc.yaml
    declares it and, where stages ran, always (their fingerprint files are
    their code deps); else where the lock never recorded it or a source file
    or fingerprint file changed after the lock (a comment edit: Snakemake
    has nothing to run, and `dvc status` would list the stage)."""
    path = Path(lock_path)
    if FINGERPRINT_STAGE not in declared_stages():
        return False
    if ran:
        return True
    if not path.exists():
        return False
    if FINGERPRINT_STAGE not in ((read_dvc_yaml(path) or {}).get("stages") or {}):
        return True
    lock_time = path.stat().st_mtime
    files = {f for s in stages if s.code for f in (*s.code, s.fingerprint)}
    files.add(f"{codedeps.SOURCE_PREFIX}/{codedeps.PACKAGE}/core/codedeps.py")
    return any((m := _mtime(f)) is not None and m > lock_time for f in files)


def _mtime(path: str) -> float | None:
    """The modification time Snakemake reads: a folder's
    ``.snakemake_timestamp`` where it has one, else the path's own."""
    ns = _mtime_ns(path)
    return None if ns is None else ns / 1e9


def _mtime_ns(path: str) -> int | None:
    """:func:`_mtime` in integer nanoseconds."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                return os.stat(os.path.join(path, ".snakemake_timestamp")).st_mtime_ns
            except FileNotFoundError:
                pass
        return os.stat(path, follow_symlinks=False).st_mtime_ns
    except FileNotFoundError:
        return None


def dag_order(stages: Iterable[Stage]) -> list[Stage]:
    """``stages`` with every stage after the stages whose outputs it reads
    (an input equal to, or inside, another stage's output); ties keep their
    order. The registry lists stages by phase, not in this order (a
    prediction on an expanded suite comes before the expansion)."""
    from graphlib import TopologicalSorter

    stages = list(stages)
    producer = {Path(o).as_posix(): s.name for s in stages for o in s.all_outs}

    def made_by(path: str) -> str | None:
        p = Path(path)
        for cand in (p, *p.parents):
            if (name := producer.get(cand.as_posix())) is not None:
                return name
        return None

    graph = {s.name: {n for d in s.deps if (n := made_by(d)) not in (None, s.name)} for s in stages}
    sorter = TopologicalSorter(graph)
    sorter.prepare()
    rank = {name: i for i, name in enumerate(s.name for s in stages)}
    ordered: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=rank.__getitem__)
        ordered.extend(ready)
        sorter.done(*ready)
    by_name = {s.name: s for s in stages}
    return [by_name[n] for n in ordered]


def align_to_record(
    stages: list[Stage], root: str | Path = ".", echo=print, skip: Iterable[str] = (), overrides: Mapping[str, Any] | None = None
) -> list[str]:
    """After `dvc pull` (or `dvc checkout`, `git checkout` + DVC), outputs get
    the time they were written, in no particular order, so Snakemake's
    modification-time rule would re-run stages whose inputs look newer than
    their outputs. Where some output is older than an input, ask DVC which
    stages its record (``dvc.lock``) says are up to date and give their
    outputs new modification times in DAG order (after every input), so that
    Snakemake agrees with DVC. Stages DVC finds changed keep their times (they
    re-run in both runners). Returns the stages re-stamped; costs one
    ``dvc status`` only when some output is older than an input.

    ``skip``: stages whose parameter values differ from ``dvc.lock``'s in
    this run (:func:`sync_params_files`' answer: a Snakemake ``--config``
    override whose values the record does not hold): they keep their
    times, so that Snakemake re-runs them. ``overrides``: the run's
    ``--config`` values, with which DVC compares the record
    (:func:`record_in_dvc` records them)."""

    def stale(s: Stage) -> bool:
        outs = [_mtime(o.path) for o in s.snakemake_outs]
        if not outs or None in outs:
            return False
        ins = [m for d in [*s.deps, params_file(s)] if (m := _mtime(d)) is not None]
        return bool(ins) and min(outs) < max(ins)

    if not Path(root, "dvc.lock").exists() or not any(stale(s) for s in stages):
        return []
    changed = dvc_adapter.changed_stages(root, overrides)
    done = []
    for s in dag_order(stages):  # upstream first: every output gets a time after its inputs
        if s.name in changed or s.name in skip or any(_mtime(o.path) is None for o in s.snakemake_outs):
            continue
        # one microsecond after its newest input (upstream already re-stamped),
        # not in the future: a changed stage downstream, run right after this,
        # must write outputs newer than these, or Snakemake stops the run
        # ("older modification time than input")
        newest = max((m for d in [*s.deps, params_file(s)] if (m := _mtime_ns(d)) is not None), default=0)
        stamp = newest + 1_000
        for o in s.snakemake_outs:
            os.utime(o.path, ns=(stamp, stamp), follow_symlinks=False)
            marker = os.path.join(o.path, ".snakemake_timestamp")
            if os.path.isdir(o.path) and os.path.exists(marker):
                os.utime(marker, ns=(stamp, stamp))
        done.append(s.name)
    if done:
        echo(
            f"aligned the modification times of {len(done)} stage(s) up to date in dvc.lock "
            "(outputs pulled or checked out by DVC), so that Snakemake does not re-run them"
        )
    return done


def build_missing(params: Mapping[str, Any], targets: Iterable[str], echo=print) -> list[str]:
    """Make the missing ``targets`` (and their missing inputs, first) by
    running their producing stages in this process: the same stage code
    and parameters as both runners, raw files from the mirror or downloaded
    with their sha256 checked. Returns the stages that ran."""
    from hatecheck_pipeline.core.stage import call
    from hatecheck_pipeline.pipeline.registry import build_stages

    producer = {o: s for s in build_stages(params) for o in s.all_outs}
    ran: list[str] = []

    def ensure(path: str) -> None:
        if Path(path).exists():
            return
        stage = producer.get(path)
        if stage is None:
            raise PipelineError(f"{path}: missing, and no stage of the pipeline produces it")
        if stage.name in ran:
            return
        for dep in stage.data_deps:
            ensure(dep)
        echo(f"{path} is missing: running stage {stage.name} (`hatecheck-pipeline run {stage.name}`)")
        result = call(stage, params)
        ran.append(stage.name)
        if result:
            echo(f"  {result}")

    for target in targets:
        ensure(target)
    return ran


_HELD: dict[str, Any] = {}
DVC_LOCK = ".dvc/tmp/lock"
RUNS_DIR = ".snakemake/hatecheck-runs"
SNAKEMAKE_LOCKS = ".snakemake/locks"

# What of Snakemake's internals this module and workflow/rules/common.smk rely
# on: (object or layout, name) -> why. tests/runners/test_compose.py runs the
# installed Snakemake and fails, naming the entry, where one differs.
SNAKEMAKE_RELIED_ON = {
    ("workflow", "local_exec"): "jobs run on this machine (not Slurm): threads capped, no job rate limiter",
    ("workflow.scheduler", "job_rate_limiter"): "set to None at onstart (disable_job_rate_limiter): no timer-driven "
    "scheduling passes; where absent, warned once",
    ("workflow.dag", "jobs"): "every job of the run's DAG, at onsuccess (dag_job_names): recorded if never recorded",
    ("job.rule", "name"): "a job's rule, i.e. its stage",
    (SNAKEMAKE_LOCKS, "*"): "where a run's locks are (clear_stale_locks removes those a killed run left)",
    ("directory()", ".snakemake_timestamp"): "the marker whose time Snakemake takes as a directory output's (_mtime, align_to_record)",
}
_WARNED: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        import warnings

        warnings.warn(message, RuntimeWarning, stacklevel=3)


def disable_job_rate_limiter(workflow: Any) -> bool:
    """No job rate limiter for a local run (Snakemake >= 8.17 submits at
    most 100 jobs per second by default): with a limiter, every scheduling
    pass arms a timer that triggers another pass a timespan later, and every
    finished job starts one more such chain, so by the middle of a report
    build Snakemake ran ~70 passes a second (19% of a core, and rising)
    while a 2-thread torch stage waited at its barriers. Local stages are
    limited by the ``cpu_cores`` resource instead; the Slurm profile keeps
    its own rate limits in the executor plugin. Called at onstart. True
    where it was switched off; a Snakemake whose scheduler has no
    ``job_rate_limiter`` (:data:`SNAKEMAKE_RELIED_ON`) gets one warning and
    runs as it is."""
    if not workflow.local_exec:
        return False
    scheduler = getattr(workflow, "scheduler", None)
    if scheduler is None or not hasattr(scheduler, "job_rate_limiter"):
        import importlib.metadata

        _warn_once(
            "job_rate_limiter",
            f"Snakemake {importlib.metadata.version('snakemake')}: workflow.scheduler has no "
            "job_rate_limiter (runners/compose.SNAKEMAKE_RELIED_ON); the run keeps Snakemake's rate limiter",
        )
        return False
    scheduler.job_rate_limiter = None
    return True


def dag_job_names(workflow: Any) -> set[str]:
    """The stages of every job of a run's DAG (``workflow.dag.jobs``), up
    to date or not; called at onsuccess."""
    return {job.rule.name for job in workflow.dag.jobs}


def register_run(runs_dir: str | Path = RUNS_DIR) -> Path:
    """Mark this Snakemake process as live for its whole life: an exclusive
    ``flock`` on ``<runs_dir>/<pid>.lock``, which the kernel releases when the
    process ends, however it ends (``kill -9`` included). Taken while the
    Snakefile is parsed, i.e. before Snakemake writes its own locks."""
    import fcntl

    directory = Path(runs_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{os.getpid()}.lock"
    fh = open(path, "w")
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD["run"] = fh
    return path


def live_runs(runs_dir: str | Path = RUNS_DIR) -> list[str]:
    """PIDs of the Snakemake runs of this workspace that are alive; the files
    of dead ones are removed."""
    import fcntl

    live = []
    for path in sorted(Path(runs_dir).glob("*.lock")):
        try:
            with open(path) as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live.append(path.stem)
            continue
        except FileNotFoundError:
            continue
        path.unlink(missing_ok=True)
    return live


def clear_stale_locks(locks_dir: str | Path = SNAKEMAKE_LOCKS, runs_dir: str | Path = RUNS_DIR) -> list[str]:
    """Remove the locks a killed Snakemake run left (what ``snakemake
    --unlock`` does by hand), but only when no run of this workspace is
    alive: a live run holds its file from :func:`register_run` from before
    it writes its locks until it exits. Returns the files removed."""
    locks = sorted(p for p in Path(locks_dir).glob("*") if p.is_file()) if Path(locks_dir).is_dir() else []
    if not locks or live_runs(runs_dir):
        return []
    for path in locks:
        path.unlink(missing_ok=True)
    return [str(p) for p in locks]


def hold_dvc_lock(root: str | Path = ".") -> bool:
    """Hold DVC's repository lock for the length of a Snakemake run, so that
    a `dvc repro` (or `dvc commit`) started meanwhile refuses instead of
    writing the same outputs, and a Snakemake run started while DVC works
    refuses too. False where the workspace is not a DVC project."""
    lockfile = Path(root) / DVC_LOCK
    if not lockfile.parent.parent.is_dir():
        return False
    lockfile.parent.mkdir(exist_ok=True)
    lock, LockError = dvc_adapter.repository_lock(lockfile)
    try:
        lock.lock()
    except LockError as exc:
        raise PipelineError(
            f"{lockfile}: DVC or another Snakemake run is working in this workspace (DVC's repository "
            "lock is held); wait for it to finish, then run Snakemake again"
        ) from exc
    busy = dvc_adapter.stage_runs(lockfile.parent / "rwlock")
    if busy:
        lock.unlock()
        raise PipelineError(
            f"{lockfile.parent / 'rwlock'}: DVC is running a stage in this workspace ({busy}); "
            "wait for it to finish, then run Snakemake again"
        )
    _HELD["lock"] = lock
    return True


def release_dvc_lock() -> None:
    lock = _HELD.pop("lock", None)
    if lock is not None and lock.is_locked:
        lock.unlock()
