"""A local run is bounded by the machine's memory as it is by its cores:
Snakemake, driven on a fake machine (8 cores, 24 GB: HATECHECK_PIPELINE_MEM_MB),
never runs stages whose declared memory together exceeds it, whatever
--cores says; a stage declaring more than the machine has runs alone; the
user's --resources mem_mb wins. The registration is the one
workflow/rules/common.smk makes (runners/compose.register_local_resources)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from pipeline_utils import BIN, env

SNAKEFILE = """
import sys
sys.path.insert(0, {src!r})
from hatecheck_pipeline.runners import compose
compose.register_local_resources(workflow, 8)

rule all:
    input: expand("out/{{i}}.json", i=range({jobs}))

rule job:
    output: "out/{{i}}.json"
    threads: 1
    resources: mem_mb={mem}
    shell: "python -c 'import json, time; t0 = time.time(); time.sleep(1.2); json.dump([t0, time.time()], open(\\"{{output}}\\", \\"w\\"))'"
"""


def most_at_once(folder: Path) -> int:
    spans = [json.loads(p.read_text()) for p in folder.glob("out/*.json")]
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


def run_on(tmp_path: Path, mem: int, jobs: int, machine_mb: str, *extra: str) -> int:
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(src=str(REPO / "src"), jobs=jobs, mem=mem))
    e = env() | {"HATECHECK_PIPELINE_MEM_MB": machine_mb}
    proc = subprocess.run(
        [str(BIN / "snakemake"), "--cores", "8", *extra], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return most_at_once(tmp_path)


@pytest.mark.parametrize(
    ("mem", "jobs", "extra", "bound"),
    [
        (10000, 6, (), 2),  # 24 GB: two 10 GB stages at once, never three
        (30000, 3, (), 1),  # more than the machine: capped, one at a time
        (10000, 6, ("--resources", "mem_mb=40000"), 4),  # the user's bound wins
    ],
)
def test_stages_never_declare_more_memory_together_than_the_machine_has(tmp_path, mem, jobs, extra, bound):
    assert run_on(tmp_path, mem, jobs, "24000", *extra) == bound


def test_the_machine_s_memory_is_its_available_memory_unless_overridden(tmp_path, monkeypatch):
    from hatecheck_pipeline.core.errors import PipelineError
    from hatecheck_pipeline.runners.compose import MEM_ENV, machine_memory_mb

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       25165824 kB\nMemFree:  1000 kB\nMemAvailable:   20971520 kB\n")
    monkeypatch.delenv(MEM_ENV, raising=False)
    assert machine_memory_mb(meminfo) == 20480
    meminfo.write_text("MemTotal:       25165824 kB\n")
    assert machine_memory_mb(meminfo) == 24576 and machine_memory_mb(tmp_path / "absent") is None
    monkeypatch.setenv(MEM_ENV, "16000")
    assert machine_memory_mb(meminfo) == 16000
    monkeypatch.setenv(MEM_ENV, "lots")
    with pytest.raises(PipelineError, match="give the memory in MB"):
        machine_memory_mb(meminfo)
