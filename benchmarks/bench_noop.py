"""No-op cost of the runners on a complete workspace.

Prints the wall time of a no-op ``snakemake`` (the report target), a no-op
``dvc status`` and ``dvc repro --dry``, each next to ``python -c "import
hatecheck_pipeline"`` and the registry build measured in the same run, best
of ``--repeat`` runs. Run it in a workspace where the pipeline is complete
(e.g. after ``snakemake --cores 2 reports/mhc_xtc.html`` on the smoke
profile); a workspace where something is out of date measures real work,
and the script says so.

    python benchmarks/bench_noop.py [--project DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout + proc.stderr


def best(cmd: list[str], cwd: Path, repeat: int) -> tuple[float, str]:
    runs = [timed(cmd, cwd) for _ in range(repeat)]
    return min(r[0] for r in runs), runs[-1][1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=Path.cwd())
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", default="reports/mhc_xtc.html", help="Snakemake target")
    ap.add_argument("--stage", default="report", help="DVC target (the stage that writes --target)")
    args = ap.parse_args()
    py = str(BIN / "python")
    rows = [
        ("python -c 'import hatecheck_pipeline'", [py, "-c", "import hatecheck_pipeline"]),
        (
            "registry build (all stages)",
            [
                py,
                "-c",
                "from hatecheck_pipeline.core.config import load_params;"
                "from hatecheck_pipeline.pipeline.registry import build_stages;"
                "print(len(build_stages(load_params())))",
            ],
        ),
        ("snakemake (no-op)", [str(BIN / "snakemake"), "--cores", "2", args.target]),
        # --with-deps: without it `dvc status <stage>` checks that one stage only
        ("dvc status --with-deps report", [str(BIN / "dvc"), "status", "--with-deps", args.stage]),
        ("dvc repro --dry report", [str(BIN / "dvc"), "repro", "--dry", args.stage]),
    ]
    print(
        f"project: {args.project.resolve()}  cores: {len(os.sched_getaffinity(0))}  load: {os.getloadavg()[0]:.2f}  best of {args.repeat}"
    )
    print(f"{'command':42s} {'seconds':>8s}  note")
    for label, cmd in rows:
        seconds, out = best(cmd, args.project, args.repeat)
        note = ""
        if label.startswith("registry"):
            note = f"{out.strip().splitlines()[-1]} stages"
        elif label.startswith("snakemake"):
            note = "no-op" if "Nothing to be done" in out else "NOT a no-op: the workspace is out of date"
        elif label.startswith("dvc status"):
            note = "clean" if "up to date" in out else "NOT clean"
        elif label.startswith("dvc repro"):
            note = "no-op" if "Running stage" not in out else "NOT a no-op"
        print(f"{label:42s} {seconds:8.2f}  {note}")


if __name__ == "__main__":
    main()
