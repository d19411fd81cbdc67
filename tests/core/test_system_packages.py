"""The one-line failure of a test that lacks a system package
(tests/system_packages.py)."""

import shutil

import pytest
from system_packages import missing_packages, require


def test_a_missing_package_fails_in_one_line_saying_how_to_install_it(monkeypatch, tmp_path):
    (tmp_path / "munged").touch()  # a daemon off PATH, in an sbin folder
    monkeypatch.setattr(shutil, "which", lambda cmd: "/usr/bin/sbatch" if cmd == "sbatch" else None)
    needs = {"munged": "munge", "sbatch": "slurm-client", "slurmd": "slurmd", "slurmctld": "slurmctld"}
    assert missing_packages(needs, dirs=(str(tmp_path),)) == ["slurmd", "slurmctld"]
    monkeypatch.setattr("system_packages.SBIN", (str(tmp_path),))
    with pytest.raises(pytest.fail.Exception) as failed:
        require(needs, "the Slurm test")
    assert failed.value.pytrace is False
    assert str(failed.value) == (
        "the Slurm test needs the Debian packages slurmd, slurmctld, not installed: "
        "`apt-get install slurmd slurmctld` as root, or `bash scripts/setup.sh` as root"
    )
    assert "\n" not in str(failed.value)
