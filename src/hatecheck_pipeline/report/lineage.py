"""Lineage of any artifact or report number, read from ``dvc.lock``.

``dvc.lock`` records, per stage, the command, the hash of every dependency
(code included: the code version, as the stage's code fingerprint
``code/<stage>.txt``, whose lines name each source file with the hash of
its normalised code), the parameter values and the hash of
every output. Starting from the stage whose outputs hold the target, the
walk goes backwards through the stages producing its dependencies down to
the ingest stages, whose raw files resolve to their URL and sha256 in the
raw-file registry. Where an output records the numeric precision its model
ran in (a training log's ``precision``, a predictions file's Parquet
metadata), the walk prints it beside the stage (``ran``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core.yamlio import read_dvc_yaml
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import recorded_precision
from hatecheck_pipeline.core.stage import CODE_DIR

CODE_PREFIX = "src/"


class LineageError(PipelineError, ValueError):
    """The target cannot be traced (names what is missing)."""


@dataclass
class Node:
    stage: str
    cmd: str
    params: dict[str, Any]
    code: dict[str, str]  # code file -> md5 (a record made before the code fingerprints; resource files)
    inputs: dict[str, str]  # data dependency -> md5
    outs: dict[str, str]
    raw: list[dict[str, str]] = field(default_factory=list)  # raw files: path, url, sha256
    ran: dict[str, str] = field(default_factory=dict)  # output -> the precision its model ran in (ran_in)
    parents: list[str] = field(default_factory=list)
    fingerprint: dict[str, str] = field(default_factory=dict)  # the code fingerprint file -> md5 as recorded
    normalised: dict[str, str] = field(default_factory=dict)  # source file -> sha256 of its normalised code (the fingerprint's lines)
    fingerprint_note: str = ""  # where the fingerprint file is not as recorded


@dataclass
class Chain:
    target: str
    start: str  # the artifact path the walk started from
    cell: dict[str, str] | None
    nodes: dict[str, Node]  # stage name -> node, in walk order
    roots: list[str]


def ran_in(out: str | Path) -> str | None:
    """The precision recorded in a pipeline output, if any: a training
    log's (JSON) ``precision`` or a predictions file's Parquet metadata
    (``core.files.recorded_precision``). Read from the file on disk (None when absent)."""
    path = Path(out)
    if not path.is_file():
        return None
    try:
        if path.suffix == ".parquet":
            return recorded_precision(path)
        if path.suffix == ".json" and path.stat().st_size < 1 << 22:
            doc = json.loads(path.read_text("utf-8"))
            value = doc.get("precision") if isinstance(doc, dict) else None
            return value if isinstance(value, str) else None
    except (OSError, ValueError):  # unreadable: lineage still prints the record
        return None
    return None


def read_lock(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise LineageError(
            f"{path}: no lineage record yet: build the target with `snakemake --cores 2 <target>` or `dvc repro` (both write dvc.lock)"
        )
    doc = read_dvc_yaml(path) or {}
    return doc.get("stages", {})


def _hash(entry: Mapping[str, Any]) -> str:
    return str(entry.get("md5") or entry.get("hash") or entry.get("checksum") or "")


def _norm(p: str) -> str:
    return str(Path(p)).rstrip("/")


def producers(lock: Mapping[str, Any]) -> dict[str, str]:
    """Output path -> stage name."""
    return {_norm(o["path"]): name for name, st in lock.items() for o in st.get("outs", []) or []}


def read_fingerprint(path: str, md5: str) -> tuple[dict[str, str], str]:
    """The source files and hashes a fingerprint file lists, where the file
    is as ``dvc.lock`` recorded it (``md5``), and a note where it is not
    (changed or missing since the run: its recorded version is in git)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}, "missing here (its recorded version is in git)"
    if md5 and hashlib.md5(data).hexdigest() != md5:
        return {}, "changed since the run (its recorded version is in git)"
    lines = [line.split(" ", 1) for line in data.decode("utf-8").splitlines() if " " in line]
    return {p: h for p, h in lines}, ""


def find_producers(path: str, outs: Mapping[str, str]) -> list[str]:
    """Stages producing ``path``: exact, an output folder holding it, or outputs inside it (a model directory)."""
    p = _norm(path)
    if p in outs:
        return [outs[p]]
    holding = [s for o, s in outs.items() if p.startswith(o + "/")]
    if holding:
        return holding
    return list(dict.fromkeys(s for o, s in outs.items() if o.startswith(p + "/")))


def raw_entry(path: str, registry: Mapping[str, Any]) -> dict[str, str] | None:
    """A raw file's registry entry (``data/raw/<source>/<name>``)."""
    m = re.match(r"^data/raw/([^/]+)/(.+)$", _norm(path))
    if not m:
        return None
    source, name = m.groups()
    meta = registry.get(source, {}).get("files", {}).get(name)
    fileset = (registry.get(source, {}).get("file_sets") or {}).get(name)
    if meta is None and fileset is not None:  # a bundle of many files: their URL template and the manifest hash
        return {"path": path, "url": fileset["url"], "sha256": f"manifest {fileset['manifest_sha256']} ({fileset['count']} files)"}
    if meta is None:
        return {"path": path, "url": "not in the raw-file registry", "sha256": ""}
    return {"path": path, "url": meta["url"], "sha256": meta["sha256"]}


def cell_source(cell_id: str, report: str | Path) -> dict[str, str]:
    """The metrics file and stage of a report cell (its data attributes)."""
    report = Path(report)
    if not report.exists():
        raise LineageError(f"{cell_id!r} looks like a report cell id but {report} does not exist")
    html = report.read_text("utf-8")
    m = re.search(r"<td[^>]*data-cell-id=\"" + re.escape(cell_id) + r"\"[^>]*>", html)
    if not m:
        raise LineageError(f"no cell with data-cell-id {cell_id!r} in {report}")
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', m.group(0)))
    return {"cell_id": cell_id, "metrics_file": attrs.get("data-metrics", ""), "stage": attrs.get("data-stage", ""), "report": str(report)}


def trace(target: str, lock: Mapping[str, Any], registry: Mapping[str, Any], report: str | Path = "reports/mhc_xtc.html") -> Chain:
    """Walk ``dvc.lock`` backwards from ``target`` (path or report cell id)."""
    outs = producers(lock)
    cell = None
    start = target
    if not find_producers(target, outs) and ":" in target and not Path(target).exists():
        cell = cell_source(target, report)
        if cell["metrics_file"] == "published":
            return Chain(target, "", cell, {}, [])
        start = cell["metrics_file"]
    first = find_producers(start, outs)
    if not first:
        raise LineageError(
            f"{start}: no stage in dvc.lock produces it (is it a pipeline output, and has the pipeline run? "
            "A Snakemake run killed part-way records its finished stages at the next successful run)"
        )
    nodes: dict[str, Node] = {}
    queue = list(first)
    while queue:
        name = queue.pop(0)
        if name in nodes:
            continue
        st = lock[name]
        deps = {d["path"]: _hash(d) for d in st.get("deps", []) or []}
        fingerprint = {p: h for p, h in deps.items() if p.startswith(CODE_DIR + "/")}
        code = {p: h for p, h in deps.items() if p.startswith(CODE_PREFIX)}
        normalised: dict[str, str] = {}
        notes = []
        for p, h in fingerprint.items():
            listed, note = read_fingerprint(p, h)
            normalised.update(listed)
            notes += [note] if note else []
        inputs = {p: h for p, h in deps.items() if p not in code and p not in fingerprint}
        node = Node(
            name,
            st.get("cmd", ""),
            st.get("params", {}) or {},
            code,
            inputs,
            {o["path"]: _hash(o) for o in st.get("outs", []) or []},
            fingerprint=fingerprint,
            normalised=normalised,
            fingerprint_note="; ".join(notes),
        )
        node.ran = {o: r for o in node.outs if (r := ran_in(o))}
        for p in inputs:
            parents = [s for s in find_producers(p, outs) if s != name]
            node.parents.extend(s for s in parents if s not in node.parents)
            queue.extend(parents)
        if not node.parents:
            node.raw = [r for p in [*node.outs, *inputs] if (r := raw_entry(p, registry))]
        nodes[name] = node
    return Chain(target, start, cell, nodes, list(first))


LONG_VALUE = 200


def shown_value(value: Any) -> str:
    """A parameter's value as JSON, a long one (a registry entry of many
    files, whose files the tree lists with their URLs and sha256 anyway)
    cut to its start, its length and its digest; ``--json`` prints it whole.

    >>> shown_value({"seed": 42})
    '{"seed": 42}'
    >>> shown_value("x" * 300).endswith('xxx... (302 characters, sha256 d24923841d98; --json prints it whole)')
    True
    """
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= LONG_VALUE:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"{text[:100]}... ({len(text):,} characters, sha256 {digest}; --json prints it whole)"


def render(chain: Chain) -> str:
    """The chain as an indented tree (each stage once; repeats are referenced)."""
    lines = [f"lineage of {chain.target}"]
    if chain.cell:
        lines.append(f"  report cell {chain.cell['cell_id']} in {chain.cell['report']}")
        if chain.cell["metrics_file"] == "published":
            lines.append(f"  a published number: {chain.cell['stage']} (not produced by the pipeline)")
            return "\n".join(lines)
        lines.append(f"  from {chain.cell['metrics_file']} (stage {chain.cell['stage']})")
    seen: set[str] = set()

    def walk(name: str, depth: int) -> None:
        pad = "  " * depth
        node = chain.nodes[name]
        if name in seen:
            lines.append(f"{pad}stage {name} (see above)")
            return
        seen.add(name)
        lines.append(f"{pad}stage {name}: {node.cmd}")
        for out, h in node.outs.items():
            lines.append(f"{pad}  out    {out}  md5={h}")
        for out, ran in node.ran.items():
            lines.append(f"{pad}  ran    {out}  precision={ran}")
        for key, value in _flat(node.params):
            lines.append(f"{pad}  param  {key} = {shown_value(value)}")
        for path, h in node.fingerprint.items():
            lines.append(f"{pad}  code   {path}  md5={h}" + (f"  {node.fingerprint_note}" if node.fingerprint_note else ""))
        for path, h in node.normalised.items():  # the fingerprint's lines: sha256 of the code without comments or docstrings
            lines.append(f"{pad}  code   {path}  sha256={h}")
        for path, h in node.code.items():
            lines.append(f"{pad}  code   {path}  md5={h}")
        for raw in node.raw:
            lines.append(f"{pad}  raw    {raw['path']}  url={raw['url']}  sha256={raw['sha256']}")
        for parent in node.parents:
            walk(parent, depth + 1)

    for root in chain.roots:
        walk(root, 1)
    return "\n".join(lines)


def _flat(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(key, value)`` lines of a stage's recorded parameters. A stage that
    reads the profile records the whole ``profiles`` section next to
    ``profile``; only the active profile's entry is shown (``profiles.<name>``,
    the others named, not printed; :func:`to_json` keeps every value)."""
    out = []
    for file, values in params.items():
        values = dict(values or {})
        active, every = values.get("profile"), values.get("profiles")
        if isinstance(active, str) and isinstance(every, Mapping) and active in every:
            others = sorted(p for p in every if p != active)
            values = dict((f"profiles.{active}", every[active]) if k == "profiles" else (k, v) for k, v in values.items())
            if others:
                values[f"profiles (not active: {', '.join(others)})"] = "omitted"
        for key, value in values.items():
            out.append((f"{file}:{key}" if file != "params.yaml" else key, value))
    return out


def to_json(chain: Chain) -> str:
    return json.dumps(
        {
            "target": chain.target,
            "start": chain.start,
            "cell": chain.cell,
            "roots": chain.roots,
            "stages": {n: vars(node) for n, node in chain.nodes.items()},
        },
        indent=2,
        ensure_ascii=False,
        default=str,
    )
