"""Helpers to run the real runners on a scratch copy of the project."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MIRROR, REPO

BIN = Path(sys.executable).parent
DATA_PHASES = ("ingest", "prepare", "validate", "preprocess")


def load_benchmark(name: str):
    """A script of ``benchmarks/`` imported as a module (its functions under test)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def env() -> dict[str, str]:
    e = dict(os.environ)
    # pytest names the running test here: left out, every test's stage commands share the warm stage workers
    e.pop("PYTEST_CURRENT_TEST", None)
    e["HATECHECK_PIPELINE_MIRROR"] = str(MIRROR)
    e["PATH"] = f"{BIN}{os.pathsep}{e['PATH']}"
    e.setdefault("DVC_NO_ANALYTICS", "1")
    for key, value in (
        ("GIT_AUTHOR_NAME", "test"),
        ("GIT_AUTHOR_EMAIL", "test@localhost"),
        ("GIT_COMMITTER_NAME", "test"),
        ("GIT_COMMITTER_EMAIL", "test@localhost"),
        # fixed dates: two copies committed the same way get the same
        # commit id, so a model card's git_commit is comparable between them
        ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00+00:00"),
        ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00+00:00"),
    ):
        e.setdefault(key, value)
    return e


def run(cmd: list[str], cwd: Path, check: bool = True, timeout: int = 1800) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def require_free_disk(where: Path, gib: float, what: str) -> None:
    """Fail at once, naming what is needed and what is free, where ``what``
    would otherwise stop part-way through with "No space left on device"."""
    free = shutil.disk_usage(where).free / 2**30
    if free < gib:
        pytest.fail(f"{what} needs about {gib:g} GiB free under {where}; {free:.1f} GiB is free", pytrace=False)


ARTIFACT_DIRS = ("data/", "models/", "results/", "reports/", "logs/")


def copy_project(dest: Path) -> Path:
    """The tracked and untracked-not-ignored source files (never artifacts of
    a run in this checkout), in a fresh git repo."""

    def ls(*flags: str) -> list[str]:
        out = subprocess.run(["git", "ls-files", *flags], cwd=REPO, capture_output=True, text=True, check=True).stdout
        return [f for f in out.split("\n") if f]

    files = ls("-c") + [f for f in ls("-o", "--exclude-standard") if not f.startswith(ARTIFACT_DIRS)]
    for rel in files:
        src = REPO / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    run(["git", "init", "-q"], dest)
    compile_sources(dest)
    return dest


def compile_sources(project: Path) -> None:
    """Byte-compile a workspace's own ``src`` as ``scripts/setup.sh`` does a
    clone's. Every stage process, ``snakemake`` and ``hatecheck-pipeline``
    call in the workspace imports the project's modules from it, and where
    ``PYTHONDONTWRITEBYTECODE`` is set (as here) a module without its
    ``.pyc`` is compiled again by each of them: ~0.1 CPU-s of every short
    stage (benchmarks/records/workspace_bytecode_2026-12-03.txt). The
    ``.pyc`` files record their source's hash, not its mtime, so a module a
    test edits afterwards, within the same second or not, is compiled again
    as without this."""
    run([sys.executable, "-m", "compileall", "-q", "-j0", "--invalidation-mode", "checked-hash", "src"], project)


def set_param(project: Path, dotted: str, value) -> None:
    """Edit one key of the project's params.yaml as `dvc params modify` and
    `dvc exp run -S` do (ruamel's round trip: comments and layout kept)."""
    from dvc.utils.serialize import modify_yaml

    *parents, leaf = dotted.split(".")
    with modify_yaml(project / "params.yaml") as doc:
        node = doc
        for p in parents:
            node = node[p]
        node[leaf] = value


def dry_run_jobs(project: Path, *targets: str, forceall: bool = False) -> dict[str, dict[str, set[str]]]:
    """Snakemake's dry run parsed into {rule: {"input": {...}, "output": {...}}}."""
    cmd = [str(BIN / "snakemake"), "-n", "--cores", "1"] + (["--forceall"] if forceall else []) + list(targets)
    out = run(cmd, project).stdout
    jobs: dict[str, dict[str, set[str]]] = {}
    current = None
    for line in out.splitlines():
        m = re.match(r"^(?:local)?rule (\S+):$", line.strip())
        if m:
            current = jobs.setdefault(m.group(1), {"input": set(), "output": set()})
            continue
        m = re.match(r"^\s+(input|output): (.*)$", line)
        if m and current is not None:
            current[m.group(1)] |= {p.strip() for p in m.group(2).split(", ") if p.strip()}
    return jobs


def git_commit_all(project: Path, message: str) -> None:
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-q", "--allow-empty", "-m", message], project)


def downstream(stages, names: set[str]) -> set[str]:
    """The stages that read (transitively) what ``names`` write, and ``names``."""
    out = set(names)
    changed = True
    while changed:
        changed = False
        produced = {o for s in stages if s.name in out for o in s.all_outs}
        for s in stages:
            if s.name not in out and produced & set(s.data_deps):
                out.add(s.name)
                changed = True
    return out


def dvc_ran_stages(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def assert_same_predictions(path: Path, reference_path: Path) -> None:
    """Byte-identical predictions where the CPU computes in fp32. Where it
    computes bf16 natively (the smoke profile's autocast), the probabilities
    of two runs were seen to differ within bf16's rounding (up to ~1e-4 on a
    Xeon with AMX, as tests/models/test_predict_threads.py records): there the
    labels must be identical and the probabilities equal within 1e-3."""
    import numpy as np
    import polars as pl

    from hatecheck_pipeline.core.cpu import native_bf16

    if Path(path).read_bytes() == Path(reference_path).read_bytes():
        return
    assert native_bf16(), f"{path}: not byte-identical to the uninterrupted run's, on a CPU without native bf16"
    a, b = pl.read_parquet(path), pl.read_parquet(reference_path)
    assert a["id"].to_list() == b["id"].to_list() and a["pred"].to_list() == b["pred"].to_list()
    np.testing.assert_allclose(a["p_hateful"].to_numpy(), b["p_hateful"].to_numpy(), rtol=0, atol=1e-3)


def shared_root(tmp_path_factory) -> Path:
    """The temporary folder all of this run's processes share: pytest's base
    temp, or its parent under pytest-xdist (each worker's base temp is
    ``<shared>/popen-gw<N>``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build, copies: tuple[str, ...] = ()) -> dict[str, Path]:
    """A workspace built once per test run, whichever process asks first
    (the others wait on a file lock), and ``copies`` of it made right after
    the build, before any test touches it: {name: built, copy: its copy}.
    A failed build is reported to every process that asks, never retried
    from a half-built folder."""
    import fcntl

    root = shared_root(tmp_path_factory)
    built, done, failed = root / name, root / f"{name}.built", root / f"{name}.failed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            pytest.fail(f"the shared {name} workspace failed to build in another test process:\n{failed.read_text()}", pytrace=False)
        if not done.exists():
            shutil.rmtree(built, ignore_errors=True)
            built.mkdir()
            try:
                build(built)
                for copy in copies:
                    copy_workspace(built, root / copy)
            except BaseException as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}"[-4000:])
                raise
            done.touch()
    return {name: built, **{copy: root / copy for copy in copies}}


def copy_workspace(src: Path, dest: Path) -> None:
    """A built workspace copied whole (git, DVC record, artifacts), DVC's
    content-addressed cache hard-linked (its files are never written in
    place), so the copy can run a parameter change without touching ``src``."""
    shutil.rmtree(dest, ignore_errors=True)
    cache = src / ".dvc" / "cache"
    shutil.copytree(src, dest, symlinks=True, ignore=lambda d, names: ["cache"] if Path(d) == src / ".dvc" else [])
    if cache.exists():
        shutil.copytree(cache, dest / ".dvc" / "cache", symlinks=True, copy_function=os.link)
