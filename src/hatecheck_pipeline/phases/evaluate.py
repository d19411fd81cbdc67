"""Stages of the evaluate phase (built from params; see hatecheck_pipeline.dag).

- ``score_<model>_<suite>``: one METRICS.json per prediction file (the same
  code as ``hatecheck-pipeline score``);
- ``tables_<group>``: the papers' tables (``hatecheck``, ``mhc``), zero- vs
  many-shot (``shots``), contrast consistency (``contrast``) and original
  vs expanded suites per functionality (``expanded``), as long
  CSVs with per-cell provenance, a DVC metrics JSON and DVC plot CSVs.
"""

from __future__ import annotations

from typing import Any, Mapping

from .. import paths
from ..dag import Stage, code, stage
from ..suites import suites_for_model
from ..tables import GROUPS, Source, comparison_pairs

SCORE_PARAMS = ["evaluation.bootstrap_samples", "evaluation.seed", "evaluation.ci_level", "evaluation.threshold"]


def score_stage_name(model: str, suite: str) -> str:
    return f"score_{model}_{suite}"


def table_stage_name(group: str) -> str:
    return f"tables_{group}"


def sources(params: Mapping[str, Any]) -> list[Source]:
    """Every scored (model, suite) of the configured models."""
    return [
        Source(model, s.name, s.dataset, s.language, paths.metrics(model, s.name), score_stage_name(model, s.name))
        for model in params["models"]
        for s in suites_for_model(params, model)
    ]


def group_sources(params: Mapping[str, Any], group: str) -> list[Source]:
    """The (model, suite) metrics a table group reads."""
    every = sources(params)
    if group == "contrast":
        return [s for s in every if s.dataset in {"hatecheck", "mhc"}]
    if group == "expanded":
        # original vs expanded suite of the same model (never mixed into the
        # HateCheck / MHC tables: those read datasets hatecheck / mhc only)
        pairs = comparison_pairs(every)
        return list(dict.fromkeys(s for pair in pairs for s in pair))
    suite_dataset = "hatecheck" if group == "hatecheck" else "mhc"
    models = {s.model for s in every if s.dataset == suite_dataset}
    if group == "shots":
        return [s for s in every if s.model in models and s.dataset == "mhc"]
    return [s for s in every if s.model in models and (s.dataset == suite_dataset or s.suite.startswith("heldout_"))]


def group_training_tables(params: Mapping[str, Any], group: str) -> dict[str, list[str]]:
    """model -> interim tables of its training data (for its languages)."""
    if group != "shots":
        return {}
    models = sorted({s.model for s in group_sources(params, group)})
    return {m: [paths.interim_table(d) for d in params["models"][m]["train"]] for m in models}


def stages(params: Mapping[str, Any]) -> list[Stage]:
    out: list[Stage] = []
    for model in params["models"]:
        for suite in suites_for_model(params, model):
            out.append(
                stage(
                    score_stage_name(model, suite.name),
                    "evaluate",
                    f"hatecheck-pipeline evaluate {model} {suite.name}",
                    deps=[paths.predictions(model, suite.name), suite.raw_table(), *code("scoring", "metrics", "suites", "predict"),
                          *(code("expansion/registry") if suite.raw_table() != paths.interim_table(suite.dataset) else [])],
                    outs=[],
                    metrics=[paths.metrics(model, suite.name)],
                    params=[*SCORE_PARAMS, "profile", "profiles", f"models.{model}.seed"],
                )
            )
    for group, outputs in GROUPS.items():
        srcs = group_sources(params, group)
        if not srcs:
            continue
        training = sorted({t for ts in group_training_tables(params, group).values() for t in ts})
        extra_outs = [paths.training_languages()] if group == "shots" else []
        out.append(
            stage(
                table_stage_name(group),
                "evaluate",
                f"hatecheck-pipeline tables {group}",
                deps=[*(s.metrics for s in srcs), *training, *code("tables")],
                outs=[*(paths.table(t) for t in outputs["tables"]), *extra_outs],
                metrics=[paths.table_summary(group)],
                plots=[paths.plot_data(p) for p in outputs["plots"]],
            )
        )
    return out
