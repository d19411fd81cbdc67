"""The CPU cores this machine really has, and thread counts bounded by them
(a rule never runs more torch threads than there are cores, whatever a
parameter or Snakemake's ``--cores`` says); whether the CPU computes bf16
natively."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

# /proc/cpuinfo flags of native bf16 arithmetic: x86 AVX512-BF16 or AMX-BF16;
# 64-bit Arm's BF16 extension ("bf16" among the Features).
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


@lru_cache(maxsize=1)
def native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """True when the CPU computes bf16 natively (its flags name one of
    NATIVE_BF16_FLAGS). Without it, PyTorch emulates bf16 matmuls, far
    slower than fp32: a MiniLM training step under bf16 autocast took 10x
    the fp32 step on the AVX2-only EPYC here. False where the flags cannot
    be read."""
    path = Path(cpuinfo)
    if not path.is_file():
        return False
    for line in path.read_text("utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return bool(NATIVE_BF16_FLAGS & set(value.split()))
    return False


def cpu_bf16_on(cpu_bf16: bool | str) -> bool:
    """``cpu_bf16``: True (always), False (never) or "auto" (only on a CPU
    with native bf16, :func:`native_bf16`)."""
    if cpu_bf16 == "auto":
        return native_bf16()
    if not isinstance(cpu_bf16, bool):
        raise ValueError(f"cpu_bf16: {cpu_bf16!r} is not true, false or 'auto'")
    return cpu_bf16


def machine_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def bounded_threads(requested: int) -> int:
    """``requested`` threads, at least 1 and at most the machine's cores.

    >>> bounded_threads(10_000) == machine_cores() and bounded_threads(0) == 1
    True
    """
    return max(1, min(int(requested), machine_cores()))
