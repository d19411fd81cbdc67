"""The environment is locked: requirements/lock.txt (written by
scripts/lock.py from pyproject.toml) pins every package at an exact version
with its sha256, covers every dependency pyproject.toml declares at a
version it allows, and is what scripts/setup.sh installs (hashes required,
nothing resolved at install time)."""

from __future__ import annotations

import re
import tomllib

from conftest import REPO
from packaging.requirements import Requirement
from packaging.version import Version

LOCKS = [REPO / "requirements" / "lock.txt", REPO / "requirements" / "lock-slurm.txt"]
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\]+) \\\n    --hash=sha256:([0-9a-f]{64})$", re.M)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path) -> dict[str, str]:
    text = path.read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    entries = ENTRY.findall(body)
    # every non-comment line belongs to one pinned, hashed entry
    assert len(entries) * 2 == len([line for line in body.splitlines() if line.strip()]), f"{path}: a line without its pin or hash"
    return {norm(n): v for n, v, _ in entries}


def test_every_declared_dependency_is_locked_at_a_version_it_allows():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lock = locked(LOCKS[0]) | locked(LOCKS[1])
    declared = [Requirement(r) for r in project["dependencies"]]
    declared += [Requirement(r) for extra in ("dev", "slurm") for r in project["optional-dependencies"][extra]]
    missing = [str(r) for r in declared if norm(r.name) not in lock]
    assert not missing, f"declared but not in the lock (python scripts/lock.py): {missing}"
    outside = [
        f"{r} (locked {lock[norm(r.name)]})" for r in declared if not r.specifier.contains(Version(lock[norm(r.name)]), prereleases=True)
    ]
    assert not outside, f"locked at a version the declaration does not allow: {outside}"


def test_the_locks_do_not_overlap_and_the_torch_build_is_the_cpu_one():
    base, slurm = locked(LOCKS[0]), locked(LOCKS[1])
    assert not set(base) & set(slurm)
    assert base["torch"].endswith("+cpu")


def test_setup_installs_the_lock_with_hashes_required_and_resolves_nothing():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    installs = [line.strip() for line in setup.splitlines() if "pip install" in line and not line.strip().startswith("#")]
    assert any("--require-hashes --no-deps -r requirements/lock.txt" in line for line in installs)
    assert any("--require-hashes --no-deps -r requirements/lock-slurm.txt" in line for line in installs)
    # every other install is pip itself at a pinned version or the project without its dependencies
    for line in installs:
        assert "--no-deps" in line or re.search(r'"pip==[\d.]+"', line), line
