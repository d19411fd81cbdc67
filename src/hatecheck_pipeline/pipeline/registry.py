"""The one stage registry both runners are rendered from.

Each phase module (``pipeline/<phase>.py``) declares its stages with
:class:`~hatecheck_pipeline.core.stage.Stage`; this module collects them in
DAG order, adds each stage's code dependencies (computed from the static
import graph of its function's module), checks that no output has two
producers, and renders ``dvc.yaml`` and the stages' code fingerprints
(``code/<stage>.txt``, :func:`fingerprints`). ``workflow/rules/stages.smk`` turns the
same objects into Snakemake rules; ``hatecheck-pipeline run STAGE`` calls a
stage's function with exactly its declared arguments.
"""

from __future__ import annotations

import dataclasses
import importlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from hatecheck_pipeline.core import codedeps
from hatecheck_pipeline.core.config import dumps
from hatecheck_pipeline.core.profile import ConfigError
from hatecheck_pipeline.core.stage import PROFILES, Stage

# The DVC stage that refreshes the code fingerprints (dvc.yaml only: Snakemake
# refreshes them when it reads the Snakefile, workflow/rules/common.smk).
FINGERPRINT_STAGE = "code_fingerprints"
FINGERPRINT_CMD = "hatecheck-pipeline dag fingerprints"

# Phase modules in DAG order: hatecheck_pipeline.pipeline.<name>.stages(params).
PHASES = ["data", "models", "expand", "evaluate", "audits", "llm", "report"]


def phase_stages(params: Mapping[str, Any], phase: str, with_code: bool = True) -> list[Stage]:
    module = importlib.import_module(f"hatecheck_pipeline.pipeline.{phase}")
    if not with_code:
        return list(module.stages(params))
    return [dataclasses.replace(s, code=tuple(codedeps.code_files(s.module))) for s in module.stages(params)]


@lru_cache(maxsize=8)
def _build(frozen: str) -> tuple[Stage, ...]:
    import json

    params = json.loads(frozen)
    stages = [s for phase in PHASES for s in phase_stages(params, phase)]
    codedeps.flush()
    names = [s.name for s in stages]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"duplicate stage names: {sorted(dupes)}")
    producers: dict[str, str] = {}
    for s in stages:
        for o in s.all_outs:
            if o in producers:
                raise ValueError(f"{o} is produced by both {producers[o]} and {s.name}")
            producers[o] = s.name
    return tuple(stages)


def build_stages(params: Mapping[str, Any]) -> list[Stage]:
    """Every stage of the pipeline for these parameters, in DAG order."""
    return list(_build(dumps(params)))


def stage_by_name(params: Mapping[str, Any], name: str) -> Stage:
    """One stage, to run it: its code deps (what the runners track) are not
    computed here, which saves every stage command the import-graph walk,
    and the phases are built in DAG order only up to the stage's own, so a
    data stage's command imports no model, evaluation or report code (the
    whole registry, names unique, is checked wherever it is built)."""
    for phase in PHASES:
        for s in phase_stages(params, phase, with_code=False):
            if s.name == name:
                return s
    raise ConfigError(f"no stage named {name!r} in the pipeline (see `hatecheck-pipeline dag list`)")


def final_targets(params: Mapping[str, Any]) -> list[str]:
    """Everything the pipeline produces (Snakemake's ``rule all``)."""
    return [o.path for s in build_stages(params) for o in s.snakemake_outs]


def dvc_param_key(key: str) -> str:
    """A params key as dvc.yaml declares it: ``profiles.<active>[.sub]``
    becomes ``profiles.${profile}[.sub]``, which DVC resolves from
    params.yaml's ``profile`` on every run. So dvc.yaml is the same for every
    profile (`dvc exp run -S profile=smoke` needs no new one), a stage
    depends on the active profile's values only, and DVC records the keys
    Snakemake's params files hold (``profiles.smoke``).

    >>> dvc_param_key("profiles.smoke"), dvc_param_key("profile"), dvc_param_key("models.XTC")
    ('profiles.${profile}', 'profile', 'models.XTC')
    """
    head, _, rest = key.partition(".")
    if head != PROFILES or not rest:
        return key
    _, _, sub = rest.partition(".")
    return f"{PROFILES}.${{profile}}" + (f".{sub}" if sub else "")


def fingerprints(stages: Iterable[Stage], root: str | Path = ".") -> dict[str, str]:
    """fingerprint file -> its text, for every stage with code: the modules
    of the closure of its function's module, as the project at ``root``
    holds them, each with the hash of its normalised code."""
    src = codedeps.project_src(root)
    return {s.fingerprint: codedeps.fingerprint(s.module, src) for s in stages if s.code}


def sync_fingerprints(stages: Iterable[Stage], root: str | Path = ".") -> list[str]:
    """Write the fingerprint files whose content changed (the others keep
    their bytes and modification time); returns those written."""
    written = codedeps.write_fingerprints(fingerprints(stages, root), root)
    codedeps.flush()
    return written


def fingerprint_stage(stages: list[Stage]) -> dict[str, Any]:
    """dvc.yaml's stage that refreshes the fingerprint files: its deps are
    every source file of every stage's code (and the module that computes
    the fingerprints), its outs the files, kept in git (``cache: false``)
    and never deleted before it runs (``persist``: it rewrites only those
    whose content changed, so an unchanged file keeps its hash and the
    stages reading it stay up to date)."""
    code = sorted({f for s in stages for f in s.code} | {f"{codedeps.SOURCE_PREFIX}/{codedeps.PACKAGE}/core/codedeps.py"})
    outs = [{s.fingerprint: {"cache": False, "persist": True}} for s in stages if s.code]
    return {"cmd": FINGERPRINT_CMD, "deps": code, "outs": outs}


def to_dvc(stages: list[Stage]) -> dict[str, Any]:
    """Render the stages as a dvc.yaml document (the fingerprint stage first)."""
    doc: dict[str, Any] = {}
    if any(s.code for s in stages):
        doc[FINGERPRINT_STAGE] = fingerprint_stage(stages)
    for s in stages:
        entry: dict[str, Any] = {"cmd": s.cmd, "deps": s.deps}
        plain = [dvc_param_key(k) for k in s.param_keys if ":" not in k]
        files: dict[str, list[str]] = {}
        for k in s.param_keys:
            if ":" in k:
                file, key = k.split(":", 1)
                files.setdefault(file, []).append(key)
        params: list[Any] = [*plain, *({f: keys} for f, keys in files.items())]
        if params:
            entry["params"] = params
        # checkpoints (persist) are no output: never cached, never pushed
        outs = [o.path if o.cache else {o.path: {"cache": False}} for o in s.outs_of("outs") if not o.persist]
        if outs:
            entry["outs"] = outs
        if s.outs_of("metrics"):
            entry["metrics"] = [{o.path: {"cache": False}} for o in s.outs_of("metrics")]
        if s.outs_of("plots"):
            entry["plots"] = [{o.path: {"cache": False, **dict(o.plot)}} for o in s.outs_of("plots")]
        doc[s.name] = entry
    return {"stages": doc}
