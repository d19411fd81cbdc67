"""The CPU cores this machine really has, and thread counts bounded by them
(a rule never runs more torch threads than there are cores, whatever a
parameter or Snakemake's ``--cores`` says)."""

from __future__ import annotations

import os


def machine_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def bounded_threads(requested: int) -> int:
    """``requested`` threads, at least 1 and at most the machine's cores.

    >>> bounded_threads(10_000) == machine_cores() and bounded_threads(0) == 1
    True
    """
    return max(1, min(int(requested), machine_cores()))
