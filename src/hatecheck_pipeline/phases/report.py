"""Stages of the report phase (built from params; see hatecheck_pipeline.dag).

``report``: the self-contained ``reports/mhc_xtc.html`` from the evaluate
phase's tables, the model cards, the data-validation results, the expand
phase's coverage / reproduction reports and the bias phase's summary.
"""

from __future__ import annotations

from typing import Any, Mapping

from .. import paths
from ..dag import Stage, code, stage
from ..datasets import RAW_SOURCE
from ..tables import GROUPS
from . import evaluate


def table_files(params: Mapping[str, Any]) -> dict[str, str]:
    """Long tables of the table groups that have sources."""
    return {t: paths.table(t) for g, o in GROUPS.items() if evaluate.group_sources(params, g) for t in o["tables"]}


def model_cards(params: Mapping[str, Any]) -> dict[str, str]:
    """Model cards the DAG produces (a card no stage writes is read if present, never required)."""
    from . import models

    produced = {o for s in models.stages(params) for o in s.all_outs}
    return {m: paths.model_card(m) for m in params["models"] if paths.model_card(m) in produced}


def expansion_reports(params: Mapping[str, Any]) -> dict[str, str]:
    """The expand phase's perturbation coverage and template reproduction
    reports, where the DAG produces them."""
    from . import expand

    produced = {o for s in expand.stages(params) for o in s.all_outs}
    wanted = {
        "coverage": paths.expansion_file("reports", "perturbation_coverage.json"),
        "reproduction": paths.expansion_file("regenerated", "reproduction.json"),
    }
    return {k: v for k, v in wanted.items() if v in produced}


def bias_summary(params: Mapping[str, Any]) -> str | None:
    """results/bias/summary.json where the bias phase is configured."""
    from . import bias

    produced = {o for s in bias.stages(params) for o in s.all_outs} if "bias" in params else set()
    return paths.bias_summary() if paths.bias_summary() in produced else None


def stages(params: Mapping[str, Any]) -> list[Stage]:
    shots = bool(evaluate.group_sources(params, "shots"))
    summary = bias_summary(params)
    return [
        stage(
            "report",
            "report",
            "hatecheck-pipeline report",
            deps=[
                *table_files(params).values(),
                *([paths.training_languages()] if shots else []),
                *model_cards(params).values(),
                *expansion_reports(params).values(),
                *([summary] if summary else []),
                *(paths.validation_json(d) for d in RAW_SOURCE),
                *code("report", "tables", "published"),
                "src/hatecheck_pipeline/resources/published.yaml",
                "src/hatecheck_pipeline/resources/functionalities.yaml",
            ],
            outs=[paths.report()],
            params=["report.title", "report.heatmap_models", "evaluation.below_mark", "profile", "models"],
        )
    ]
