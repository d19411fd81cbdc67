"""Shared fixtures: a scratch project directory and the dataset mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("HATECHECK_PIPELINE_MIRROR", REPO.parent / "shared" / "datasets")).resolve()
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
