"""A recorded run: the files of one pipeline run that the documentation's
generated pages are rendered from (:mod:`hatecheck_pipeline.docsite.pages`).

A record is a folder (``docs/runs/<name>/``) holding byte-identical copies
of a workspace's files, at the same relative paths:

- ``results/<model>/<suite>/metrics.json`` of the held-out test sets,
  HateCheck and the MHC languages, and ``results/diffs/<a>_vs_<b>/<suite>.json``
  (what changed between two models per functional test): what the results
  page reads;
- ``models/<model>/model_card.json`` (which base model ran, its budget);
- ``data/validation/<dataset>.json`` (row counts and validation outcome);
- ``logs/benchmarks/<stage>.json``: every stage's time and memory record;
- ``results/llm/<backend>/metrics.json`` (the prompted LLM on ETHOS) and
  GPT-HateCheck's generation, validation, quality and comparison reports
  (``data/expanded/...``), when the run has them;
- for the audits page, when the run has them: HateCheck's annotator
  agreement (``results/hatecheck_agreement/metrics.json``), MHC Table 5
  (``results/tables/mhc_t5.json``), every CrowS-Pairs and WinoBias
  scorer's metrics (``results/bias/crows_pairs/<scorer>/metrics.json``,
  ``results/bias/winobias/<scorer>/type<t>/metrics.json``: the scores,
  intervals and binned confidences, not the per-pair tables), every
  HateXplain model's metrics (``results/bias/hatexplain/<model>/metrics.json``),
  the bias summary (``results/bias/summary.json``: whether the
  attention-supervised model ran, and on which rationales) and the
  invariance table (``results/tables/expanded_invariance.csv``);
- ``bench/<name>.txt``: outputs of the benchmark scripts, if given;

and ``run.json``: the run's name and label, profile, commit, first stage
start and last stage end, machine, and the Snakemake command and wall time
when given; and ``dag.json``: each recorded stage's upstream stages, from the
stage registry when the run was recorded (:func:`write_dag`; records made
before it have none). Only JSON and CSV summaries are kept, never
predictions or per-pair and per-case tables, so a record stays small (a few
MB).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_text

RUN_FILE = "run.json"
DAG_FILE = "dag.json"
# Workspace-relative globs of the files a record keeps.
METRICS_GLOBS = (
    "results/*/heldout_*/metrics.json",
    "results/*/hatecheck/metrics.json",
    "results/*/mhc_*/metrics.json",
    "results/diffs/*/*.json",
)
CARD_GLOB = "models/*/model_card.json"
VALIDATION_GLOB = "data/validation/*.json"
BENCHMARK_GLOB = "logs/benchmarks/*.json"
# The prompted LLM's ETHOS metrics and GPT-HateCheck's reports (the llm page).
LLM_GLOBS = (
    "results/llm/*/metrics.json",
    "data/expanded/gpt_hatecheck_*/generation.json",
    "data/expanded/gpt_hatecheck_*/validation.json",
    "data/expanded/reports/quality.json",
    "data/expanded/reports/gpt_hatecheck_compare.json",
)
# What the audits page reads (docsite/audits.py).
AUDIT_GLOBS = (
    "results/hatecheck_agreement/metrics.json",
    "results/tables/mhc_t5.json",
    "results/bias/crows_pairs/*/metrics.json",
    "results/bias/winobias/*/type*/metrics.json",
    "results/bias/hatexplain/*/metrics.json",
    "results/bias/summary.json",
    "results/tables/expanded_invariance.csv",
)


class RecordError(PipelineError, ValueError):
    """A workspace that cannot be recorded, or a record that cannot be read."""


def machine() -> dict[str, Any]:
    """CPU model, cores, memory and OS of this machine."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text("utf-8", errors="replace"), re.M)
        cpu = found.group(1).strip() if found else cpu
    memory = None
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        found = re.search(r"^MemTotal:\s*(\d+) kB", meminfo.read_text("utf-8"), re.M)
        memory = round(int(found.group(1)) / 1024**2, 1) if found else None
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory, "os": f"{platform.system()} {platform.release()}"}


def git_commit(workspace: Path) -> str:
    """The workspace's HEAD commit ("unknown" outside a git repository)."""
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def _files(workspace: Path, globs: Iterable[str]) -> list[Path]:
    return sorted({p.relative_to(workspace) for g in globs for p in workspace.glob(g) if p.is_file()})


def commit_of(workspace: Path) -> str:
    """The commit whose code trained the models (their cards agree), else the workspace's HEAD."""
    commits = {json.loads((workspace / c).read_text("utf-8")).get("git_commit") for c in _files(workspace, [CARD_GLOB])}
    commits.discard(None)
    return commits.pop() if len(commits) == 1 else git_commit(workspace)


def profile_of(workspace: Path) -> str:
    """The profile the models were trained under (their cards agree), or "unknown"."""
    profiles = set()
    for card in _files(workspace, [CARD_GLOB]):
        doc = json.loads((workspace / card).read_text("utf-8"))
        if doc.get("profile"):
            profiles.add(str(doc["profile"]))
    if len(profiles) > 1:
        raise RecordError(f"{workspace}: the model cards name several profiles ({', '.join(sorted(profiles))}): not one run")
    return profiles.pop() if profiles else "unknown"


DISK_FOLDERS = ("data", "models", "results", "reports", "logs", ".dvc/cache", ".snakemake")


def disk_use(workspace: Path, folders: Iterable[str] = DISK_FOLDERS) -> dict[str, int]:
    """Bytes on disk under each of the workspace's ``folders`` (those that
    exist) and their ``total``: a file linked twice (DVC's cache beside the
    workspace copy) counted once, where it is met first."""
    seen: set[tuple[int, int]] = set()
    use: dict[str, int] = {}
    for folder in folders:
        root = Path(workspace) / folder
        if not root.is_dir():
            continue
        size = 0
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                st = path.stat()
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    size += st.st_blocks * 512
        use[folder] = size
    use["total"] = sum(use.values())
    return use


def record(
    workspace: Path,
    out: Path,
    name: str,
    label: str,
    commit: str | None = None,
    profile: str | None = None,
    command: str | None = None,
    wall_s: float | None = None,
    bench: Iterable[Path] = (),
) -> dict[str, Any]:
    """Copy a finished workspace's files into the record folder ``out``
    (replacing an earlier record there) and write its ``run.json``."""
    from hatecheck_pipeline.core.usage import load_records

    workspace, out = Path(workspace), Path(out)
    stages = load_records(workspace / "logs" / "benchmarks")
    metrics = _files(workspace, METRICS_GLOBS)
    if not stages or not metrics:
        raise RecordError(f"{workspace}: no stage records (logs/benchmarks) or no metrics files (results/): build the report first")
    if out.exists():
        shutil.rmtree(out)
    for rel in [*metrics, *_files(workspace, [CARD_GLOB, VALIDATION_GLOB, BENCHMARK_GLOB, *LLM_GLOBS, *AUDIT_GLOBS])]:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(workspace / rel, out / rel)
    for path in bench:
        path = Path(path)
        if not path.is_file():
            raise RecordError(f"{path}: benchmark output not found")
        (out / "bench").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / "bench" / f"{path.stem}.txt")
    info = {
        "name": name,
        "label": label,
        "profile": profile or profile_of(workspace),
        "commit": commit or commit_of(workspace),
        "started": min(r["started"] for r in stages),
        "finished": max(r["finished"] for r in stages),
        "command": command,
        "wall_s": wall_s,
        "machine": machine(),
        "disk_bytes": disk_use(workspace),
    }
    write_text(json.dumps(info, indent=1) + "\n", out / RUN_FILE)
    return info


def load(record_dir: Path) -> dict[str, Any]:
    """The run information of a record (raises naming the missing file)."""
    path = Path(record_dir) / RUN_FILE
    if not path.is_file():
        raise RecordError(f"{path}: not a recorded run (no {RUN_FILE}; make one with `hatecheck-pipeline docs record`)")
    return json.loads(path.read_text("utf-8"))


def write_dag(record_dir: Path, upstream: Mapping[str, Iterable[str]], source: Mapping[str, Any]) -> Path:
    """Write the record's dependency graph, ``dag.json``: ``upstream`` (each
    recorded stage -> the recorded stages whose outputs it reads,
    :func:`hatecheck_pipeline.docsite.critical_path.upstream_of`) and
    ``source``, what it was built from (the parameters file, the profile)."""
    doc = {"source": dict(source), "upstream": {stage: sorted(ups) for stage, ups in sorted(upstream.items())}}
    return write_text(json.dumps(doc, indent=1) + "\n", Path(record_dir) / DAG_FILE)


def load_dag(record_dir: Path) -> dict[str, Any] | None:
    """The record's ``dag.json`` (None for a record made before it was written)."""
    path = Path(record_dir) / DAG_FILE
    return json.loads(path.read_text("utf-8")) if path.is_file() else None
