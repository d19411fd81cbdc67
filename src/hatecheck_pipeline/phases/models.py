"""Stages of the models phase: convert (pipeline-built base models), train
(one per model) and predict (one per model and evaluation suite).

The active profile (``params.profile``) picks each role's base model and
the budget; a model whose base is ``pipeline:<name>`` depends on that
base model's convert stage.
"""

from __future__ import annotations

from typing import Any, Mapping

from .. import paths
from ..basemodels import base_ref, pipeline_base
from ..dag import Stage, code, stage
from ..suites import suites_for_model

TRAIN_CODE = ("training", "predict", "basemodels", "cli_models")
PREDICT_CODE = ("predict", "basemodels", "suites", "cli_models")
CONVERT_CODE = ("convert_e5", "basemodels", "cli_models")
PREDICT_MEM_MB = 3000
CONVERT_MEM_MB = 3000


# The DAG is the same whatever the active profile (dvc.yaml is rendered once,
# and `dvc exp run -S profile=...` must not need a new one): stages that read
# the profile declare `profile` and the whole `profiles` section.
PROFILE_KEYS = ("profile", "profiles")


def pipeline_bases(params: Mapping[str, Any], model: str) -> set[str]:
    """Pipeline-built base models the model starts from under any profile."""
    refs = (base_ref({**params, "profile": name}, model) for name in params["profiles"])
    return {b for ref in refs if (b := pipeline_base(ref)) is not None}


def convert_stages(params: Mapping[str, Any]) -> list[Stage]:
    needed = sorted({b for m in params["models"] for b in pipeline_bases(params, m)})
    return [
        stage(
            f"convert_{name}",
            "convert",
            f"hatecheck-pipeline convert {name}",
            deps=code(*CONVERT_CODE),
            outs=[paths.base_model_dir(name)],
            directories=[paths.base_model_dir(name)],
            resources=[("mem_mb", CONVERT_MEM_MB)],
        )
        for name in needed
    ]


def train_stage(params: Mapping[str, Any], model: str) -> Stage:
    spec = params["models"][model]
    prof = params["profiles"][params["profile"]]
    deps = [paths.processed(d, spec["scheme"]) for d in spec["train"]]
    deps += [paths.base_model_dir(b) for b in sorted(pipeline_bases(params, model))]
    keys = [
        *PROFILE_KEYS,
        f"models.{model}",
        f"training.recipes.{spec['recipe']}",
        "training.amp",
    ]
    return stage(
        f"train_{model}",
        "train",
        f"hatecheck-pipeline train {model}",
        deps=[*deps, *code(*TRAIN_CODE)],
        outs=[paths.model_dir(model), paths.model_card(model), paths.checkpoints(model)],
        directories=[paths.model_dir(model), paths.checkpoints(model)],
        metrics=[paths.training_log(model)],
        params=keys,
        resources=[("mem_mb", prof.get("mem_mb", 6000)), ("gpu", prof.get("gpu", 0))],
        threads=params["training"]["threads"],
        persist=[paths.checkpoints(model)],
    )


def predict_stage(params: Mapping[str, Any], model: str, suite) -> Stage:
    spec = params["models"][model]
    prof = params["profiles"][params["profile"]]
    return stage(
        f"predict_{model}_{suite.name}",
        "predict",
        f"hatecheck-pipeline predict {model} {suite.name}",
        deps=[paths.model_dir(model), suite.table(spec["scheme"]), *code(*PREDICT_CODE)],
        outs=[paths.predictions(model, suite.name)],
        params=[
            *PROFILE_KEYS,
            f"models.{model}.seed",
            f"models.{model}.scheme",
            "prediction",
        ],
        resources=[("mem_mb", PREDICT_MEM_MB), ("gpu", prof.get("gpu", 0))],
        threads=max(1, params["prediction"]["threads"]),  # 0 (= the idle cores) counts as 1
    )


def stages(params: Mapping[str, Any]) -> list[Stage]:
    out = convert_stages(params)
    for model in params["models"]:
        out.append(train_stage(params, model))
    for model in params["models"]:
        for suite in suites_for_model(params, model):
            out.append(predict_stage(params, model, suite))
    return out
