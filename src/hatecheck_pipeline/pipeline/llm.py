"""Stages of the llm phase (prompted LLMs as classifiers;
"Detecting Hate Speech with GPT-3", Chiu, Collins, Alexander 2022):

- ``fetch_llm_weights``: the active profile's local LLM weights
  (``profiles.<p>.llm_weights``, an entry of ``resources/llm_weights.yaml``),
  downloaded, assembled and sha256-checked (part by part and whole), when
  an enabled backend or a prompted model runs on ``model: weights``;
- ``ethos_sets``: the paper's ETHOS evaluation sets (section 3.1): the
  paper's ten mixed-category example sets (Appendix A, found in the ETHOS
  table by text) or a seeded redraw (``llm.ethos.example_source``), with
  great-expectations checks of the counts;
- ``llm_ethos_<backend>``: one enabled backend of ``llm.backends`` (an
  OpenAI-compatible endpoint or a local causal LM) answers every prompt of
  the configured settings; raw answers in the ``score-llm`` layout and their
  metrics (``results/llm/<backend>/``);
- ``llm_misspelling_<backend>``: the paper's misspelling and censorship
  test (section 5, Appendix C: Table 22's edits of the profanity comments,
  zero- and one-shot at temperature 0; ``results/llm/<backend>/misspelling.json``).
"""

from __future__ import annotations

from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.config import profile
from hatecheck_pipeline.core.kinds import is_llm
from hatecheck_pipeline.core.stage import Stage, metric, out, profile_params
from hatecheck_pipeline.models.weights import WEIGHTS_FILE, weights_input
from hatecheck_pipeline.pipeline.expand import gpt_backends
from hatecheck_pipeline.pipeline.models import llm_mem_mb, weights_mem_mb

PHASE = "llm"
SETS = "hatecheck_pipeline.data.ethos:build_sets"
FETCH = "hatecheck_pipeline.models.llm_fetch:fetch_weights"
ETHOS_RUN = "hatecheck_pipeline.evaluation.llm:run_ethos"
MISSPELLING_RUN = "hatecheck_pipeline.evaluation.llm_misspelling:run_misspelling"
# The paper's Table 22 (the profanity strings and their edits) is read from the papers' figures.
PUBLISHED = "src/hatecheck_pipeline/resources/published.yaml"
# The paper's Appendix A: its ten mixed-category example sets, as printed.
PAPER_SETS = "src/hatecheck_pipeline/resources/gpt3_example_sets.yaml"


def enabled_backends(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: b for n, b in params.get("llm", {}).get("backends", {}).items() if b["enabled"]}


def fetch_stage(params: Mapping[str, Any]) -> Stage:
    """The weights file is persisted (DVC keeps it, Snakemake does not delete
    it before a re-run): a re-run finds it, checks its sha256 and keeps it
    instead of downloading 1.1 GB again; the manifest is what stages read."""
    return Stage(
        "fetch_llm_weights",
        PHASE,
        FETCH,
        outputs={"weights": out(paths.llm_weights(), persist=True), "info": out(paths.llm_weights_info())},
        params={**profile_params(params, ["llm_weights", "llm_cpu_bf16"]), "registry": f"{WEIGHTS_FILE}:weights"},
        mem_mb=weights_mem_mb(profile(params)["llm_weights"]),  # dequantising holds the whole model, as loading it does
    )


def uses_fetched_weights(params: Mapping[str, Any]) -> bool:
    backends = params.get("llm", {}).get("backends", {})
    used = [b for b in enabled_backends(params).values()]
    used += [backends[m["backend"]] for m in params["models"].values() if is_llm(m) and m["backend"] in backends]
    if params.get("expansion", {}).get("llm", {}).get("enabled"):  # under any profile: the DAG is the same for all
        used += [b for name in params["profiles"] for b in gpt_backends(params, name).values()]
    return any(weights_input(b) for b in used)


def sets_stage() -> Stage:
    return Stage(
        "ethos_sets",
        PHASE,
        SETS,
        inputs={"table": paths.interim_table("ethos"), "validation": paths.validation_json("ethos"), "paper_sets": PAPER_SETS},
        outputs={"items": out(paths.ethos_sets()), "pools": out(paths.ethos_pools()), "report": metric(paths.ethos_sets_validation())},
        params={
            k: f"llm.ethos.{k}"
            for k in ("example_source", "fuzzy_threshold", "seed", "threshold", "not_hate_max", "per_category", "example_sets", "expected")
        },
    )


def backend_params(name: str, params: Mapping[str, Any], caps: list[str], **own: str) -> dict[str, Any]:
    """The params keys of a stage that asks backend ``name``: the stage's
    ``own`` keys, the LLM runtime's and the profile's ``caps`` it reads."""
    keys = {k: f"llm.{k}" for k in ("seed", "threads", "batch_size", "cache_dir")}
    return {"backend": f"llm.backends.{name}", **own, **keys, **profile_params(params, caps)}


def backend_resources(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments, threads and memory of a stage on backend ``name``."""
    return {"args": {"name": name}, "threads": params["llm"]["threads"], "mem_mb": llm_mem_mb(params, params["llm"]["backends"][name])}


def ethos_stage(name: str, params: Mapping[str, Any]) -> Stage:
    return Stage(
        f"llm_ethos_{name}",
        PHASE,
        ETHOS_RUN,
        inputs={"items": paths.ethos_sets(), **weights_input(params["llm"]["backends"][name])},
        outputs={"answers": out(paths.llm_answers(name)), "metrics": metric(paths.llm_metrics(name))},
        # the profile's caps: prompts per setting, mixed example sets (smoke)
        params=backend_params(name, params, ["llm_max_prompts_per_setting", "llm_example_sets"], settings="llm.settings"),
        **backend_resources(name, params),
    )


def misspelling_stage(name: str, params: Mapping[str, Any]) -> Stage:
    return Stage(
        f"llm_misspelling_{name}",
        PHASE,
        MISSPELLING_RUN,
        inputs={
            "table": paths.interim_table("ethos"),
            "validation": paths.validation_json("ethos"),
            "published": PUBLISHED,
            **weights_input(params["llm"]["backends"][name]),
        },
        outputs={"answers": out(paths.llm_misspelling_answers(name)), "metrics": metric(paths.llm_misspelling_metrics(name))},
        # the profile's cap of the versions asked per category (smoke)
        params=backend_params(name, params, ["llm_misspelling_max_texts"], threshold="llm.ethos.threshold"),
        deps_only=("validation",),  # validate_ethos fails on a bad table, and this stage waits for it
        **backend_resources(name, params),
    )


def stages(params: Mapping[str, Any]) -> list[Stage]:
    if "llm" not in params:
        return []
    backends = enabled_backends(params)
    fetch = [fetch_stage(params)] if uses_fetched_weights(params) else []
    return [*fetch, sets_stage(), *(ethos_stage(n, params) for n in backends), *(misspelling_stage(n, params) for n in backends)]


def ethos_sets_report_path(params: Mapping[str, Any]) -> str | None:
    """The ethos_sets stage's report (which example sets, the paper comments
    not found); the report names them next to the set rows."""
    return paths.ethos_sets_validation() if "llm" in params else None


def llm_metrics_paths(params: Mapping[str, Any]) -> dict[str, str]:
    """results/llm/<backend>/metrics.json of every enabled backend (the report reads them)."""
    return {n: paths.llm_metrics(n) for n in enabled_backends(params)} if "llm" in params else {}


def misspelling_metrics_paths(params: Mapping[str, Any]) -> dict[str, str]:
    """results/llm/<backend>/misspelling.json of every enabled backend (the report reads them)."""
    return {n: paths.llm_misspelling_metrics(n) for n in enabled_backends(params)} if "llm" in params else {}
