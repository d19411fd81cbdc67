"""Cost of dequantising a GGUF once (``models/weights.dequantise``: what
``fetch_llm_weights`` and the first stage asking a package's GGUF pay).

Runs the dequantisation of ``--gguf`` into a scratch folder, alternately
with transformers' loads each parsing the GGUF (``each``: the tokenizer,
the config and the weights each build their own ``gguf.GGUFReader``) and
with one reader shared by the three (``once``: ``models/llm_fetch.dequantise``,
what ``fetch_llm_weights`` runs), and checks that both write the same tensors
(``model.safetensors`` byte for byte) and the same tokenizer files.

    python benchmarks/bench_dequantise.py --gguf data/llm/weights/model.gguf [--rounds 2] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hatecheck_pipeline.models import llm_fetch
from hatecheck_pipeline.models import weights as W


def digest(folder: Path) -> dict[str, str]:
    """sha256 of each file the dequantisation wrote (the stamp left out: it holds no tensor)."""
    out = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != W.STAMP:
            h = hashlib.sha256()
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 24), b""):
                    h.update(block)
            out[path.name] = h.hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--scratch", type=Path, default=None, help="where the copies are written (deleted after)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench_dequantise_", dir=args.scratch))
    variants = {"each": W.dequantise, "once": llm_fetch.dequantise}
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    digests: dict[str, dict[str, str]] = {}
    print(
        f"gguf: {args.gguf} ({args.gguf.stat().st_size:,} bytes)  dtype: {args.dtype}  cores: "
        f"{len(os.sched_getaffinity(0))}  load: {os.getloadavg()[0]:.2f}  rounds: {args.rounds} (alternating)"
    )
    try:
        for r in range(args.rounds):
            for name, dequantise in variants.items():
                dest = scratch / f"{name}-{r}"
                start = time.perf_counter()
                dequantise(args.gguf, dest, args.dtype, "0" * 64)
                seconds[name].append(time.perf_counter() - start)
                got = digest(dest)
                digests.setdefault("first", got)
                same = got == digests["first"]
                print(f"round {r + 1} {name:5s} {seconds[name][-1]:7.1f} s  files: {len(got)}  same as the first: {same}", flush=True)
                if not same:
                    raise SystemExit(f"{dest}: other bytes than the first copy: {got} against {digests['first']}")
                shutil.rmtree(dest)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("model.safetensors sha256 " + digests["first"].get("model.safetensors", "(none)")[:16] + ", the same in every copy")
    for name, values in seconds.items():
        print(f"{name:5s} median {statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f})")


if __name__ == "__main__":
    main()
