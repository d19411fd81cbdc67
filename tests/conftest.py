"""Shared fixtures: a scratch project directory and the dataset mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("HATECHECK_PIPELINE_MIRROR", REPO.parent / "shared" / "datasets")).resolve()
# Two test processes share the machine's cores and each starts stages of
# its own, so cores are oversubscribed: torch's OpenMP threads wait passively
# (sleep rather than spin) at the end of a parallel region, so that a waiting
# thread does not hold a core another process's stage needs. Results do not
# depend on it (benchmarks/records/omp_wait_policy_2026-12-02.txt).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if "HATECHECK_PIPELINE_MIRROR" in os.environ:  # as the README writes it (../shared/datasets): the tests run stages in scratch folders
    os.environ["HATECHECK_PIPELINE_MIRROR"] = str(MIRROR)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Run inside an empty scratch directory (stages use relative paths)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def write_raw(workdir):
    """Write a raw file at data/raw/<source>/<name> (bytes or text)."""

    def _write(source: str, name: str, content: str | bytes) -> Path:
        path = workdir / "data" / "raw" / source / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def cpu_only(monkeypatch):
    """The CPU paths (CPU bf16 autocast, fp32 on a CPU) under test even on a
    machine with a GPU: ``pick_device`` sees no CUDA for the test."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture(scope="session")
def mirror() -> Path:
    if not (MIRROR / "SHA256SUMS").exists():
        pytest.fail(f"dataset mirror not found at {MIRROR}: set HATECHECK_PIPELINE_MIRROR")
    return MIRROR


@pytest.fixture(scope="session")
def params():
    from hatecheck_pipeline.core.config import load_params

    return load_params(REPO / "params.yaml")


# The order test modules are handed out in. The README's command runs them in
# two processes (pytest-xdist, `-n 2 --dist loadfile`: a module stays in one
# process, its module-scoped workspaces built once), each process is handed
# two modules at the start (the first process the 1st and 3rd, the second
# the 2nd and 4th) and one more whenever it finishes one. So the longest
# modules go first (benchmarks/records/test_suite_*.txt), the smoke build's
# with a short module behind it (the first process holds it until the build
# is done), and everything else follows in its usual order.
FIRST = (
    "pipeline/test_integration_smoke.py",  # builds the shared smoke report (tests/smoke_build.py)
    "pipeline/test_integration_paper_tiny.py",  # the paper profile with tiny models: one target of every stage kind
    "core/test_lock.py",  # short: waits behind the smoke build in the first process
    "pipeline/test_integration_data.py",
    "pipeline/test_slurm.py",
    "models/test_llm_weights.py",
    # the parameter changes on a copy of the smoke build, which waits for the
    # build: the 7th module is handed out when a process finishes its third
    # module or the smoke module, both after the build (about 12 min in), so
    # it starts at once and ends well before the short modules run out
    # (handed out 10th, it started some 17 min in and could outlast them)
    "pipeline/test_integration_smoke_params.py",
    "reliability/test_crash_safety.py",
    "cli/test_evaluate.py",
    "pipeline/test_sharing.py",
)


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).resolve().parent
    rank = {name: i for i, name in enumerate(FIRST)}

    def key(item) -> int:
        try:
            return rank.get(Path(item.fspath).resolve().relative_to(tests).as_posix(), len(FIRST))
        except ValueError:  # a doctest outside tests/
            return len(FIRST)

    items.sort(key=key)  # stable: within a module, and after FIRST, the collection's order
