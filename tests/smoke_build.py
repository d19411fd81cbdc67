"""The smoke report built once per test run and shared by the modules that
read it (test_integration_smoke.py) and change its parameters
(test_integration_smoke_params.py), whichever test process gets there first."""

from __future__ import annotations

from pipeline_utils import BIN, built_once, copy_project, git_commit_all, require_free_disk, run, set_param, shared_root

REPORT = "reports/mhc_xtc.html"
# The smoke workspace's models and DVC cache (6.5 GiB), the copy the
# parameter-change module works in (its DVC cache hard-linked: 3.5 GiB), and
# the other integration modules' workspaces beside them under pytest's temp
# folder; the rest is a margin.
SMOKE_DISK_GIB = 14


def build_smoke(project):
    copy_project(project)
    set_param(project, "profile", "smoke")
    git_commit_all(project, "fresh clone")
    run([str(BIN / "snakemake"), "--cores", "2", REPORT], project, timeout=3600)


def smoke_workspaces(tmp_path_factory) -> dict:
    """The smoke report built once per test run (by whichever test process
    asks first): `smoke`, which the tests here read, and `smoke-params`, its
    copy made before any test, where test_integration_smoke_params.py
    changes parameters."""
    require_free_disk(shared_root(tmp_path_factory), SMOKE_DISK_GIB, "the smoke run")
    return built_once(tmp_path_factory, "smoke", build_smoke, copies=("smoke-params",))


def snakemake_is_a_noop(project) -> bool:
    again = run([str(BIN / "snakemake"), "--cores", "2", REPORT], project)
    return "Nothing to be done" in again.stdout + again.stderr
