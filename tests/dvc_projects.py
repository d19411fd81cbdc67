"""Small git + DVC projects the DVC adapter and speed-up tests commit into
(each in the working directory: the ``workdir`` fixture)."""

from __future__ import annotations

import subprocess
import sys

from hatecheck_pipeline.runners import dvc_adapter


def git_dvc_project() -> list[str]:
    """git init and dvc init in the working directory; returns the dvc command."""
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*dvc, "init", "-q"], check=True)
    return dvc


def three_stages(workdir) -> list[str]:
    """A git + DVC project with stages s0, s1 (param x.lr) and s2 (y.n),
    their outputs made, not yet recorded; returns the dvc command."""
    dvc = git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 2}\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n"
        + "".join(
            f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [{'x.lr' if i < 2 else 'y.n'}]\n    outs: [o{i}.txt]\n"
            for i in range(3)
        )
    )
    for name in ("in.txt", "o0.txt", "o1.txt", "o2.txt"):
        (workdir / name).write_text("input\n")
    return dvc


def three_recorded_stages(workdir) -> list[str]:
    """:func:`three_stages`, recorded up to date; returns the dvc command."""
    dvc = three_stages(workdir)
    dvc_adapter.commit_stages(["s0", "s1", "s2"])
    return dvc


def lock_project(workdir) -> None:
    """Two stages whose params need YAML quoting and escapes, not recorded."""
    git_dvc_project()
    (workdir / "params.yaml").write_text(
        "x: {lr: 5.0e-5, flag: 'yes', none: null, text: \"Complex & Intelligent: a 'quoted' word\\nsecond line\", "
        "uni: Zürich – «»}\ny: {n: 2, list: [1, '2', 3.0]}\n"
    )
    (workdir / "dvc.yaml").write_text(
        "stages:\n"
        + "".join(
            f"  s{i}:\n    cmd: cp in.txt o{i}.txt\n    deps: [in.txt]\n    params: [x.lr, x.flag, x.none, x.text, x.uni, y]\n"
            f"    outs: [o{i}.txt]\n"
            for i in range(2)
        )
    )
    for name in ("in.txt", "o0.txt", "o1.txt"):
        (workdir / name).write_text("input\n")


def chain_project(workdir) -> list[str]:
    """s0 (param x.lr) -> s1 -> s3, and s2 (param y.n); all recorded by `dvc repro`."""
    dvc = git_dvc_project()
    (workdir / "params.yaml").write_text("x: {lr: 1.0}\ny: {n: 2}\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n"
        "  s0: {cmd: cp in.txt o0.txt, deps: [in.txt], params: [x.lr], outs: [o0.txt]}\n"
        "  s1: {cmd: cp o0.txt o1.txt, deps: [o0.txt], outs: [o1.txt]}\n"
        "  s2: {cmd: cp in2.txt o2.txt, deps: [in2.txt], params: [y.n], outs: [o2.txt]}\n"
        "  s3: {cmd: test -f ok.txt && cp o1.txt o3.txt, deps: [o1.txt], outs: [o3.txt]}\n"
    )
    for name in ("in.txt", "in2.txt", "ok.txt"):
        (workdir / name).write_text("input\n")
    subprocess.run([*dvc, "repro", "-q"], check=True)
    return dvc
