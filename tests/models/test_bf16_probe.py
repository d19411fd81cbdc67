"""``auto`` precision decides by a measured probe, kept per machine
(models/bf16.py): a native-bf16 flag alone picked bf16 on an Intel Xeon
where it ran at 0.57x of fp32."""

from __future__ import annotations

import json
import math

import pytest
import torch

from hatecheck_pipeline.core import cpu
from hatecheck_pipeline.models import bf16


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A fresh probe cache file and no remembered result; the measurement
    counted and set by the test."""
    path = tmp_path / "cache" / "bf16-probe.json"
    monkeypatch.setenv(bf16.PROBE_ENV, str(path))
    monkeypatch.setattr(bf16, "native_bf16", lambda: True)
    measured = {"calls": 0, "value": 0.52}

    def fake_measure():
        measured["calls"] += 1
        return measured["value"]

    monkeypatch.setattr(bf16, "measure_speedup", fake_measure)
    bf16.bf16_speedup.cache_clear()
    yield path, measured
    bf16.bf16_speedup.cache_clear()


def test_auto_follows_the_measured_speedup_not_the_flag(probe):
    path, measured = probe
    assert bf16.auto_bf16() == (False, "bf16 measured 0.5x of fp32 on this CPU, not faster than the 1.2x asked")
    assert bf16.cpu_bf16_on("auto") is False and bf16.cpu_bf16_on(True) is True
    # another machine of the flag, where bf16 measured 4.5x; the threshold itself counts as faster
    path.unlink()
    bf16.bf16_speedup.cache_clear()
    measured["value"] = 4.5
    assert bf16.auto_bf16() == (True, "bf16 measured 4.5x of fp32 on this CPU, faster than the 1.2x asked")
    assert bf16.cpu_bf16_on("auto") is True and bf16.cpu_bf16_on(False) is False
    for value, on in ((bf16.MIN_SPEEDUP, True), (bf16.MIN_SPEEDUP - 0.01, False)):
        path.unlink()
        bf16.bf16_speedup.cache_clear()
        measured["value"] = value
        assert bf16.cpu_bf16_on("auto") is on


def test_the_probe_runs_once_per_machine_and_is_kept(probe, monkeypatch):
    path, measured = probe
    assert bf16.bf16_speedup() == 0.52 and measured["calls"] == 1
    entry = json.loads(path.read_text())[bf16.machine_key()]
    assert entry["speedup"] == 0.52 and entry["probe"] == bf16.PROBE_VERSION and entry["shape"] == list(bf16.PROBE_SHAPE)
    # a later process (the memo cleared) reads the kept result, whatever a new measurement would say
    bf16.bf16_speedup.cache_clear()
    measured["value"] = 9.0
    assert bf16.bf16_speedup() == 0.52 and measured["calls"] == 1
    # another CPU (or torch, or probe version) is another key: measured again, both kept
    monkeypatch.setattr(bf16, "cpu_identity", lambda: ("Other CPU", "avx512_bf16"))
    bf16.bf16_speedup.cache_clear()
    assert bf16.bf16_speedup() == 9.0 and measured["calls"] == 2
    assert len(json.loads(path.read_text())) == 2
    # a torn file is a cache: measured again and rewritten
    path.write_text("{not json")
    bf16.bf16_speedup.cache_clear()
    assert bf16.bf16_speedup() == 9.0 and measured["calls"] == 3
    assert json.loads(path.read_text())[bf16.machine_key()]["speedup"] == 9.0


def test_no_native_bf16_is_never_probed(probe, monkeypatch):
    _, measured = probe
    monkeypatch.setattr(bf16, "native_bf16", lambda: False)
    assert bf16.auto_bf16() == (False, "this CPU has no native bf16") and measured["calls"] == 0


def test_the_key_names_the_cpu_and_torch(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)   Processor\nflags\t\t: sse avx512_bf16 avx2 sse\n\n"
        "processor\t: 1\nmodel name\t: other\nflags\t\t: none\n"
    )
    assert cpu.cpu_identity(str(info)) == ("Intel(R) Xeon(R)   Processor", "avx2 avx512_bf16 sse")
    assert cpu.cpu_identity(str(tmp_path / "missing")) == ("unknown CPU", "")
    key = bf16.machine_key()
    monkeypatch.setattr(bf16.torch, "__version__", "0.0.0")
    assert bf16.machine_key() != key


def test_the_real_probe_measures_a_ratio():
    """The probe itself, on this machine's CPU: a finite positive ratio of
    two timings (its direction is the machine's, so only its form is asserted)."""
    speedup = bf16.measure_speedup(shape=(256, 128, 256), repeats=2)
    assert math.isfinite(speedup) and speedup > 0


def test_the_probe_takes_turns_between_the_precisions(monkeypatch):
    """fp32 and bf16 calls alternate (a load that comes or goes midway
    slows both alike), two warm-up rounds then ``repeats`` timed ones."""
    seen = []

    class Recording(torch.nn.Linear):
        def forward(self, x):
            seen.append(torch.is_autocast_enabled("cpu"))
            return super().forward(x)

    monkeypatch.setattr(bf16.torch.nn, "Linear", Recording)
    bf16.measure_speedup(shape=(64, 32, 64), repeats=3)
    assert seen == [False, True] * 5


def _probe_in_a_process(path: str, log: str, barrier) -> None:
    """A stage's process on a fresh machine: it asks for the speedup, and
    records each measurement it makes."""
    import os
    import time

    os.environ[bf16.PROBE_ENV] = path
    bf16.bf16_speedup.cache_clear()

    def slow_measure():
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(0.5)
        return 0.52

    bf16.measure_speedup = slow_measure
    barrier.wait()
    assert bf16.bf16_speedup() == 0.52


def test_stages_starting_together_measure_once(tmp_path):
    """Two processes that ask at the same moment: one measures, the other
    waits on the lock and reads the kept result."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    path, log = tmp_path / "bf16-probe.json", tmp_path / "measured.log"
    procs = [ctx.Process(target=_probe_in_a_process, args=(str(path), str(log), barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(log.read_text().split()) == 1
    assert len(json.loads(path.read_text())) == 1
