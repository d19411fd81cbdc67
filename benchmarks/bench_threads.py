"""Benchmark: predict-stage throughput at 2 torch threads against 1 thread,
and two 1-thread processes side by side (a script, not a timed test).

Each measurement is its own process (``--worker``): the model, N MHC cases
from the workspace's preprocessed table (seeded sample), the predict
stage's code (``predict.predict_proba``: length-sorted batches, dynamic
padding) under bf16 autocast where the CPU computes bf16 natively (the
default profile's ``predict_cpu_bf16: auto``), else fp32; one warm-up
batch, then the timed pass. The side-by-side pair starts both workers at
once and counts the cases both got through over the wall time of the
slower. Then it checks that the probabilities at 1 and 2 threads are the
same (bitwise, or their largest difference).

    python benchmarks/bench_threads.py [--model-dir DIR] [--n 4000]

Run in a workspace (the project root). Without --model-dir:
models/base/multilingual-e5-small (the xlmt role's base in the default
profile) with a seeded, untrained head (test values, not a result). Record: benchmarks/records/predict_threads_<date>.txt."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def worker(model_dir: str, table: str, n: int, threads: int, out: str) -> None:
    import numpy as np
    import polars as pl
    import torch

    from hatecheck_pipeline.core.cpu import native_bf16
    from hatecheck_pipeline.models import base as basemodels
    from hatecheck_pipeline.models import predict
    from hatecheck_pipeline.models.trainable import load_for_training

    predict.set_threads(threads)
    trained = (Path(model_dir) / "model_card.json").exists() or (Path(model_dir).name == "final")
    if trained:
        model, tok = predict.load_model(Path(model_dir))
    else:
        model, tok = load_for_training(model_dir, 0.1, 0).eval(), basemodels.load_tokenizer(model_dir)
    texts = pl.read_parquet(table).sample(n, seed=1)["text"].to_list()
    bf16 = native_bf16()
    predict.predict_proba(model, tok, texts[:128], 96, 64, cpu_bf16=bf16)  # warm-up
    t = time.perf_counter()
    p = predict.predict_proba(model, tok, texts, 96, 64, cpu_bf16=bf16)
    wall = time.perf_counter() - t
    np.save(out, p)
    print(
        json.dumps(
            {
                "threads": torch.get_num_threads(),
                "cases": n,
                "wall_s": round(wall, 2),
                "cases_per_s": round(n / wall, 1),
                "precision": "bf16 autocast" if bf16 else "fp32",
            }
        ),
        flush=True,
    )


def spawn(args, threads: int, out: str) -> subprocess.Popen:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--model-dir",
        args.model_dir,
        "--table",
        args.table,
        "--n",
        str(args.n),
        "--threads",
        str(threads),
        "--out",
        out,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def result(proc: subprocess.Popen) -> dict:
    stdout, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"worker failed (rc {proc.returncode})")
    return json.loads(stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", default="models/base/multilingual-e5-small")
    ap.add_argument("--table", default="data/processed/mhc/xlmt.parquet")
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.model_dir, args.table, args.n, args.threads, args.out)
        return
    import numpy as np

    print(
        f"model: {args.model_dir}; {args.n} cases of {args.table}; cores: {len(os.sched_getaffinity(0))}; "
        f"load at start: {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        two = result(spawn(args, 2, f"{tmp}/two.npy"))
        print("one process, 2 threads:", json.dumps(two))
        one = result(spawn(args, 1, f"{tmp}/one.npy"))
        print("one process, 1 thread: ", json.dumps(one))
        t = time.perf_counter()
        pair = [spawn(args, 1, f"{tmp}/pair{k}.npy") for k in (0, 1)]
        runs = [result(p) for p in pair]
        wall = max(r["wall_s"] for r in runs)
        print("two 1-thread processes side by side:", " | ".join(json.dumps(r) for r in runs))
        both = sum(r["cases"] for r in runs) / wall
        print(
            f"side by side: {both:.0f} cases/s between them ({time.perf_counter() - t:.1f} s with start-up), "
            f"{both / two['cases_per_s']:.2f}x one 2-thread process; 2 threads are {two['cases_per_s'] / one['cases_per_s']:.2f}x 1 thread"
        )
        a, b = np.load(f"{tmp}/one.npy"), np.load(f"{tmp}/two.npy")
        same = np.array_equal(a, b)
        print(
            "probabilities at 1 and 2 threads: "
            + ("bitwise equal" if same else f"largest difference {np.abs(a - b).max():.3g}")
            + f"; labels equal: {bool(((a >= 0.5) == (b >= 0.5)).all())}"
        )


if __name__ == "__main__":
    main()
