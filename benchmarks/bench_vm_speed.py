"""How fast this machine is right now, on fixed work: a virtual machine's
speed moves from hour to hour (other tenants, CPU steal), by as much as a
code change moves a whole test suite, so a timed run of the suite or of a
build is read beside this probe taken just before or after it.

Four fixed pieces of work, each timed ``--rounds`` times (the median
printed): the interpreter (a pure-Python loop), the CPU's float32 matrix
product on the torch threads a stage uses (two), starting a process of this
environment's interpreter (what every stage command and tool call pays),
and forking a process that has imported torch (what the warm stage worker
pays per stage). Plus the CPU steal ``/proc/stat`` counted while the probe
ran.

    python benchmarks/bench_vm_speed.py --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def steal_ticks() -> int:
    with open("/proc/stat", encoding="ascii") as fh:
        fields = fh.readline().split()
    return int(fields[8]) if len(fields) > 8 else 0


def python_loop() -> float:
    t0 = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i % 7
    return time.perf_counter() - t0


def matmul_gflops(threads: int) -> float:
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    torch.mm(a, b)
    t0 = time.perf_counter()
    for _ in range(20):
        torch.mm(a, b)
    return 20 * 2 * 1024**3 / (time.perf_counter() - t0) / 1e9


def process_start() -> float:
    t0 = time.perf_counter()
    for _ in range(10):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - t0) / 10


def fork_after_torch() -> float:
    import torch  # noqa: F401 - the heap a forked stage starts from

    t0 = time.perf_counter()
    for _ in range(10):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return (time.perf_counter() - t0) / 10


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    cpu = " ".join(os.popen("lscpu | grep 'Model name'").read().split())
    hz = os.sysconf("SC_CLK_TCK")
    steal0, t0 = steal_ticks(), time.perf_counter()
    probes = {
        "python loop, 3M iterations (s)": python_loop,
        "float32 matmul 1024^2, 2 threads (GFLOPS)": lambda: matmul_gflops(2),
        "interpreter start, `python -c pass` (s)": process_start,
        "fork of a process with torch imported (s)": fork_after_torch,
    }
    print(f"{cpu}  cores: {os.cpu_count()}  rounds: {args.rounds}")
    for name, probe in probes.items():
        values = [probe() for _ in range(args.rounds)]
        print(f"{name:45s} median {statistics.median(values):.4f}  min {min(values):.4f}  max {max(values):.4f}")
    wall = time.perf_counter() - t0
    print(f"CPU steal while probing: {(steal_ticks() - steal0) / hz:.2f} s of {wall:.1f} s wall")


if __name__ == "__main__":
    main()
