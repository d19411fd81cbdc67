"""The CPU cores this machine really has, and thread counts bounded by them
(a rule never runs more torch threads than there are cores, whatever a
parameter or Snakemake's ``--cores`` says); whether the CPU computes bf16
natively, and which CPU it is."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

# /proc/cpuinfo flags of native bf16 arithmetic: x86 AVX512-BF16 or AMX-BF16;
# 64-bit Arm's BF16 extension ("bf16" among the Features).
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def _cpuinfo_fields(cpuinfo: str) -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where unreadable)."""
    path = Path(cpuinfo)
    if not path.is_file():
        return {}
    fields: dict[str, str] = {}
    for line in path.read_text("utf-8", errors="replace").splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


@lru_cache(maxsize=1)
def native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """True when the CPU computes bf16 natively (its flags name one of
    NATIVE_BF16_FLAGS). Without it, PyTorch emulates bf16 matmuls, far
    slower than fp32: a MiniLM training step under bf16 autocast took 10x
    the fp32 step on the AVX2-only EPYC here. False where the flags cannot
    be read. Native is not fast: models/bf16.py measures that."""
    return bool(NATIVE_BF16_FLAGS & set(cpu_identity(cpuinfo)[1].split()))


def cpu_identity(cpuinfo: str = "/proc/cpuinfo") -> tuple[str, str]:
    """This CPU's model name and its flags, sorted (what a measurement of its
    speed holds for); ("unknown CPU", "") where /proc/cpuinfo cannot be read."""
    fields = _cpuinfo_fields(cpuinfo)
    flags = fields.get("flags", fields.get("Features", ""))
    return fields.get("model name", "unknown CPU"), " ".join(sorted(set(flags.split())))


def machine_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def bounded_threads(requested: int) -> int:
    """``requested`` threads, at least 1 and at most the machine's cores.

    >>> bounded_threads(10_000) == machine_cores() and bounded_threads(0) == 1
    True
    """
    return max(1, min(int(requested), machine_cores()))
