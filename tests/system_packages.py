"""The Debian packages some tests need beside Python (scripts/setup.sh
installs them when run as root): chromium (the report's browser tests),
slurmctld, slurmd, slurm-client and munge (the Slurm test), openssh-server
(the sharing test). A test that cannot run for want of one fails, in one
line naming the packages and how to install them; it is not skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SBIN = ("/usr/sbin", "/usr/bin", "/sbin")


def missing_packages(needs: dict[str, str], dirs: tuple[str, ...] | None = None) -> list[str]:
    """The packages (values of ``needs``) whose command (key) is neither on
    PATH nor in ``dirs`` (daemons live in /usr/sbin, often off a user's PATH)."""
    dirs = SBIN if dirs is None else dirs
    return [pkg for cmd, pkg in needs.items() if not shutil.which(cmd) and not any(Path(d, cmd).exists() for d in dirs)]


def fail_missing(packages: list[str], needed_by: str) -> None:
    """Fail the test in one line (no traceback) naming the packages and how
    to install them."""
    pytest.fail(
        f"{needed_by} needs the Debian package{'s' if len(packages) > 1 else ''} {', '.join(packages)}, not installed: "
        f"`apt-get install {' '.join(packages)}` as root, or `bash scripts/setup.sh` as root",
        pytrace=False,
    )


def require(needs: dict[str, str], needed_by: str) -> None:
    """Fail at once where one of ``needs`` (command -> package) is missing."""
    missing = missing_packages(needs)
    if missing:
        fail_missing(missing, needed_by)
