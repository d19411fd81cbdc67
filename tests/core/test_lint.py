"""The code passes ruff's checks as configured in pyproject.toml (pyflakes
and pycodestyle's errors), so an unused import or an undefined name fails
the tests, as it fails CI."""

import subprocess
import sys

from conftest import REPO


def test_ruff_check_passes_on_the_whole_tree():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_flags_an_unused_import(tmp_path):
    """The check can fail: the same configuration on a file with an unused import."""
    (tmp_path / "bad.py").write_text("import os\n")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(tmp_path / "bad.py")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "F401" in done.stdout


def test_the_tree_is_formatted_by_ruff():
    """`ruff format` (pyproject.toml: 140 characters a line) leaves every file
    as it is; formatting changes no stage's code fingerprint, so it re-runs
    nothing (tests/core/test_codedeps.py)."""
    done = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
