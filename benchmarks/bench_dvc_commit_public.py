"""DVC's public path beside the pipeline's: recording every stage of ``dvc.lock``.

Commits every stage recorded in the workspace's ``dvc.lock`` again, three
ways, in interleaved rounds:

- ``dvc commit -f --no-relink <stages>``: DVC's command line, all the stages
  in one call (outputs cached without re-linking them, as the pipeline
  does); DVC rewrites ``dvc.lock`` after each stage;
- ``adapter, speed-ups on``: ``runners/dvc_adapter.commit_stages`` as the
  pipeline runs it (``runners/dvc_speedups`` active: params and git-index
  reads memoised, the lock read with the safe parser, one write);
- ``adapter, speed-ups off``: the same with ``dvc_speedups.ACTIVE`` False,
  what a DVC whose internals differ from what the speed-ups rely on gets.

Prints the seconds of each run and whether each left ``dvc.lock`` byte for
byte as it was (every stage recorded, so a commit of all of them must write
the same lock). Run it in a complete workspace (every stage up to date);
the outputs' modification times are put back after each run, and
``dvc.lock`` is rewritten with what it held at the start (and its times).
DVC's command is timed as a user runs it: its own process, start-up
included.

    python benchmarks/bench_dvc_commit_public.py [--project DIR] [--repeat 1] [--first N]

``--first N``: only the first N stages of ``dvc.lock`` (still one call each
way; DVC's command rewrites the whole lock once per stage, so on the whole
report it takes minutes).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from hatecheck_pipeline.runners import dvc_adapter, dvc_speedups
from hatecheck_pipeline.runners.compose import _stamps

VARIANTS = ("dvc commit -f --no-relink", "adapter, speed-ups on", "adapter, speed-ups off")


def run(variant: str, names: list[str]) -> None:
    if variant == VARIANTS[0]:
        subprocess.run([sys.executable, "-m", "dvc", "commit", "-f", "--no-relink", "-q", *names], check=True)
        return
    active = dvc_speedups.ACTIVE
    dvc_speedups.ACTIVE = variant == VARIANTS[1]
    try:
        dvc_adapter.commit_stages(names)
    finally:
        dvc_speedups.ACTIVE = active


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--project", type=Path, default=Path.cwd())
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--first", type=int, default=None, help="only the first N stages of dvc.lock")
    args = ap.parse_args()
    os.chdir(args.project)
    if not dvc_speedups.ACTIVE:
        raise SystemExit("the speed-ups are off with this DVC (see the warning): nothing to compare")
    lock = Path("dvc.lock").read_bytes()
    lock_times = os.stat("dvc.lock").st_atime_ns, os.stat("dvc.lock").st_mtime_ns
    recorded = yaml.safe_load(lock)["stages"]
    names = list(recorded)[: args.first]
    outs = [o["path"] for name in names for o in recorded[name].get("outs", [])]
    stamps = _stamps(outs)
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    same: dict[str, bool] = dict.fromkeys(VARIANTS, True)
    print(
        f"project: {Path.cwd()}  stages: {len(names)} of {len(recorded)}  outputs: {len(outs)}  dvc.lock: {len(lock.splitlines())} lines  "
        f"cores: {len(os.sched_getaffinity(0))}  load: {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    try:
        for rep in range(args.repeat):
            for variant in VARIANTS:
                start = time.perf_counter()
                try:
                    run(variant, names)
                finally:
                    seconds[variant].append(time.perf_counter() - start)
                    for path, (atime, mtime) in stamps.items():
                        if os.path.lexists(path):
                            os.utime(path, ns=(atime, mtime), follow_symlinks=False)
                written = Path("dvc.lock").read_bytes()
                same[variant] &= written == lock
                print(
                    f"  round {rep + 1} {variant:26s} {seconds[variant][-1]:8.2f} s  dvc.lock as before: "
                    f"{written == lock} (sha256 {hashlib.sha256(written).hexdigest()[:12]})",
                    flush=True,
                )
                Path("dvc.lock").write_bytes(lock)
    finally:
        Path("dvc.lock").write_bytes(lock)
        os.utime("dvc.lock", ns=lock_times)
    for variant, runs in seconds.items():
        print(f"{variant:26s} median {statistics.median(runs):8.2f} s  (best {min(runs):.2f})  dvc.lock as before: {same[variant]}")
    public = statistics.median(seconds[VARIANTS[0]])
    print(
        f"public/adapter (speed-ups on): {public / statistics.median(seconds[VARIANTS[1]]):.2f}x; "
        f"public/adapter (speed-ups off): {public / statistics.median(seconds[VARIANTS[2]]):.2f}x"
    )
    if not all(same.values()):
        raise SystemExit("a variant wrote a different dvc.lock")


if __name__ == "__main__":
    main()
