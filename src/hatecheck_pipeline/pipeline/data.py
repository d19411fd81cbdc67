"""Stages of the data phases: ingest (per raw source), prepare and validate
(per dataset), preprocess (per dataset and text scheme a model reads)."""

from __future__ import annotations

from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.kinds import is_finetuned
from hatecheck_pipeline.core.stage import Stage, metric, out
from hatecheck_pipeline.data.sources import SOURCES_FILE, load_registry, outputs
from hatecheck_pipeline.data.specs import DATASETS

INGEST = "hatecheck_pipeline.data.sources:ingest"
PREPARE = "hatecheck_pipeline.data.prepare:prepare"
VALIDATE = "hatecheck_pipeline.data.validate:validate"
PREPROCESS = "hatecheck_pipeline.data.preprocess:preprocess"
# The suites' published functional tests: validation checks that a suite has them.
FUNCTIONALITIES_FILE = "src/hatecheck_pipeline/resources/functionalities.yaml"
FUNCTIONAL_SUITES = ("hatecheck", "mhc")


def datasets_in_use(params: Mapping[str, Any]) -> dict[str, set[str]]:
    """(dataset -> schemes) needed by the configured models and suites."""
    needed: dict[str, set[str]] = {}
    for model in params["models"].values():
        if not is_finetuned(model):  # an llm or a classifier trained elsewhere reads the suites' validated tables, no scheme
            continue
        for name in [*model["train"], *model["suites"]]:
            if name in DATASETS:
                needed.setdefault(name, set()).add(model["scheme"])
    return needed


def ingest_stage(source: str, registry: Mapping[str, Any]) -> Stage:
    return Stage(
        f"ingest_{source}",
        "ingest",
        INGEST,
        outputs={"files": tuple(out(str(f)) for f in outputs(source, dict(registry)))},
        params={"entry": f"{SOURCES_FILE}:{source}", "mirror": "ingest.mirror"},
        args={"source": source},
    )


def prepare_stage(dataset: str, params: Mapping[str, Any]) -> Stage:
    return Stage(
        f"prepare_{dataset}",
        "prepare",
        PREPARE,
        inputs={"raw_files": DATASETS[dataset].raw_files(params["datasets"][dataset])},
        outputs={
            "table": out(paths.interim_table(dataset)),
            "quarantine": out(paths.quarantine(dataset)),
            "counts": metric(paths.counts(dataset)),
        },
        params={"settings": f"datasets.{dataset}"},
        args={"dataset": dataset},
    )


def validate_stage(dataset: str, params: Mapping[str, Any]) -> Stage:
    validation = params["validation"]
    keys = {"tolerance": "validation.class_balance_tolerance"}
    for arg, group in (("published_balance", "published_balance"), ("suite_counts", "suite_counts")):
        if dataset in validation[group]:
            keys[arg] = f"validation.{group}.{dataset}"
    if dataset in FUNCTIONAL_SUITES:
        keys["functionalities"] = f"{FUNCTIONALITIES_FILE}:{dataset}"
    return Stage(
        f"validate_{dataset}",
        "validate",
        VALIDATE,
        inputs={"table": paths.interim_table(dataset), "counts": paths.counts(dataset)},
        outputs={"report_md": out(paths.validation_md(dataset)), "report_json": metric(paths.validation_json(dataset))},
        params=keys,
        args={"dataset": dataset},
    )


def preprocess_stage(dataset: str, scheme: str) -> Stage:
    return Stage(
        f"preprocess_{dataset}_{scheme}",
        "preprocess",
        PREPROCESS,
        inputs={"table": paths.interim_table(dataset), "validation": paths.validation_json(dataset)},
        outputs={"out": out(paths.processed(dataset, scheme))},
        params={"settings": f"preprocessing.schemes.{scheme}"},
        args={"scheme": scheme},
    )


def stages(params: Mapping[str, Any]) -> list[Stage]:
    registry = load_registry()
    out_: list[Stage] = [ingest_stage(source, registry) for source in registry]
    for dataset in DATASETS:
        out_ += [prepare_stage(dataset, params), validate_stage(dataset, params)]
    for dataset, schemes in sorted(datasets_in_use(params).items()):
        out_ += [preprocess_stage(dataset, scheme) for scheme in sorted(schemes)]
    return out_
