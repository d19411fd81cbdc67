"""Whether bf16 pays on this CPU, measured: what ``auto`` means for
training's ``cpu_bf16``, prediction's ``predict_cpu_bf16`` and the local
LLM's ``llm_cpu_bf16``.

A native-bf16 flag is not enough. On AMD EPYC hosts with the flag
``avx512_bf16`` bf16 autocast predicted faster than fp32
(benchmarks/records/bench_predict_bf16_2026-11-27.txt); on an Intel Xeon VM
with the same flag it ran slower (benchmarks/records/
bf16_slower_xeon_2026-11-28.txt). So ``auto`` turns bf16 on only where the
flags name native bf16 (core/cpu.native_bf16; without it PyTorch emulates
bf16, ~10x slower) *and* a probe measures bf16 at least
:data:`MIN_SPEEDUP` times as fast as fp32 on one feed-forward product of the
default encoders' shape. The probe takes ~0.3 s; its result is kept per
machine (CPU model and flags, torch version) in a small JSON file
(``$HATECHECK_PIPELINE_BF16_PROBE``, default under ``XDG_CACHE_HOME`` or
``~/.cache``), so every stage of one machine makes the same choice, and a
card's ``precision`` says which ran and why."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import time
from functools import lru_cache
from pathlib import Path

import torch

from hatecheck_pipeline.core import usercache
from hatecheck_pipeline.core.cpu import cpu_identity, native_bf16

PROBE_ENV = "HATECHECK_PIPELINE_BF16_PROBE"  # the cache file
PROBE_VERSION = 2  # of the probe's shape and method; results of another version are measured again
# fp32's time over bf16's on the probe, at least: the Intel Xeon read 0.51-0.54
# (its bf16 prediction ran at 0.57x of fp32). Whole-model bf16 prediction ran 1.5x
# as fast on the AMD EPYC hosts, so their matmuls, the part probed, ran faster
# still. Below it, fp32: the papers' precision, at worst a lost speed-up.
MIN_SPEEDUP = 1.2
# tokens x hidden -> intermediate: the feed-forward up-projection of MiniLM and
# multilingual-e5-small (384 -> 1536) over a batch of 64 texts of 32 tokens.
PROBE_SHAPE = (2048, 384, 1536)
PROBE_REPEATS = 5


def probe_file() -> Path:
    return usercache.cache_file("bf16-probe.json", PROBE_ENV)


def machine_key() -> str:
    """What the probe's result holds for: this CPU (model, flags), this torch
    and this probe."""
    ident = json.dumps([cpu_identity(), torch.__version__, PROBE_VERSION, PROBE_SHAPE])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def measure_speedup(shape: tuple[int, int, int] = PROBE_SHAPE, repeats: int = PROBE_REPEATS) -> float:
    """fp32's time over bf16 autocast's on one ``nn.Linear`` forward (best of
    ``repeats`` each after two warm-up rounds, at the current torch threads):
    above 1, bf16 is faster. The two precisions take turns, call by call, so
    a stage that starts or ends on the other core meanwhile slows both alike
    rather than one of them."""
    tokens, width, out = shape
    gen = torch.Generator().manual_seed(0)
    layer = torch.nn.Linear(width, out)
    x = torch.randn(tokens, width, generator=gen)
    best = {torch.float32: float("inf"), torch.bfloat16: float("inf")}
    with torch.inference_mode():
        for i in range(repeats + 2):
            for dtype in best:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
                    start = time.perf_counter()
                    layer(x)
                    took = time.perf_counter() - start
                if i >= 2:
                    best[dtype] = min(best[dtype], took)
    return best[torch.float32] / best[torch.bfloat16]


def _read(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):  # absent, unreadable or torn: measured again
        return {}
    return doc if isinstance(doc, dict) else {}


@contextlib.contextmanager
def _locked(path: Path):
    """One process at a time measures and writes ``path`` (stages that start
    together on a fresh machine: the second reads the first's result); no
    lock where the folder cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_name(f".{path.name}.lock"), "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _kept(doc: dict, key: str) -> float | None:
    hit = doc.get(key)
    return float(hit["speedup"]) if isinstance(hit, dict) and isinstance(hit.get("speedup"), (int, float)) else None


@lru_cache(maxsize=1)
def bf16_speedup() -> float:
    """:func:`measure_speedup` on this machine, measured once and kept (see
    the module's doc); a read-only home measures per process."""
    path, key = probe_file(), machine_key()
    kept = _kept(_read(path), key)
    if kept is not None:
        return kept
    with _locked(path):
        doc = _read(path)
        kept = _kept(doc, key)
        if kept is not None:  # another process measured it while this one waited
            return kept
        speedup = round(measure_speedup(), 3)
        doc[key] = {
            "speedup": speedup,
            "cpu": cpu_identity()[0],
            "torch": torch.__version__,
            "shape": list(PROBE_SHAPE),
            "threads": torch.get_num_threads(),
            "probe": PROBE_VERSION,
        }
        usercache.keep(json.dumps(doc, indent=1), path)  # a read-only home measures per process
    return speedup


def auto_bf16() -> tuple[bool, str]:
    """What ``auto`` picks here, and why (for cards and logs)."""
    if not native_bf16():
        return False, "this CPU has no native bf16"
    speedup = bf16_speedup()
    verdict = "faster" if speedup >= MIN_SPEEDUP else "not faster"
    return speedup >= MIN_SPEEDUP, f"bf16 measured {speedup:.1f}x of fp32 on this CPU, {verdict} than the {MIN_SPEEDUP}x asked"


def cpu_bf16_on(cpu_bf16: bool | str) -> bool:
    """``cpu_bf16``: True (always), False (never) or "auto" (:func:`auto_bf16`:
    a CPU with native bf16 where bf16 measured faster)."""
    if cpu_bf16 == "auto":
        return auto_bf16()[0]
    if not isinstance(cpu_bf16, bool):
        raise ValueError(f"cpu_bf16: {cpu_bf16!r} is not true, false or 'auto'")
    return cpu_bf16
