"""Stages of the audits phase (their phase label stays ``bias``):

- ``crows_pairs_<scorer>``: CrowS-Pairs with one scorer of
  ``bias.crows_pairs.scorers`` (variant masked | causal) that some
  profile's ``crows_scorers`` lists (under a profile that does not list
  it, the stage loads no model and records why);
- ``winobias_<scorer>_type<t>``: WinoBias type t (1 knowledge, 2 syntax)
  of ``bias.winobias.split`` with the same scorer and metric (CrowS-Pairs'
  Table 2 baselines), under the same profile switch and cap;
- ``hatexplain_standin``: the labelled TF-IDF + LR stand-in 3-class
  classifier's HateXplain test predictions and occlusion attributions;
- ``hatexplain_explain_<model>``: a fine-tuned 3-class model's HateXplain
  test predictions and its attention / LIME / integrated-gradients explanations;
- ``hatexplain_toxicity_<model>``: a 2-class HateXplain model's p(toxic)
  on the test posts (``bias.hatexplain.two_class``: the paper's bias columns);
- ``hatexplain_metrics_<classifier>``: performance, bias AUCs per
  community, plausibility and faithfulness of one classifier's files;
- ``target_bias_<model>``: Subgroup/BPSN/BNSP AUCs per ``target_ident`` on
  the model's functional suites (HateCheck, MHC languages);
- ``bias_summary``: everything above in ``results/bias/summary.json``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from hatecheck_pipeline.audits.bias_auc import COMMUNITIES_PLOT
from hatecheck_pipeline.audits.hatexplain import STANDIN
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.config import profile
from hatecheck_pipeline.core.kinds import case_cap_key, is_finetuned
from hatecheck_pipeline.core.stage import Bound, Stage, metric, out, plot, profile_params
from hatecheck_pipeline.pipeline.evaluate import bootstrap_keys
from hatecheck_pipeline.pipeline.models import supervised_model, two_class_models
from hatecheck_pipeline.suites.languages import suites_run
from hatecheck_pipeline.suites.registry import Suite

PHASE = "audits"  # the label `dag list` shows

CROWS = "hatecheck_pipeline.audits.crows:crows_pairs"
WINOBIAS = "hatecheck_pipeline.audits.crows:winobias"
STANDIN_RUN = "hatecheck_pipeline.audits.hatexplain:hatexplain_standin"
METRICS = "hatecheck_pipeline.audits.hatexplain:hatexplain_metrics"
EXPLAIN = "hatecheck_pipeline.audits.explain:hatexplain_explain"
TOXICITY = "hatecheck_pipeline.audits.two_class:hatexplain_toxicity"
TARGETS = "hatecheck_pipeline.audits.bias_auc:target_bias"
SUMMARY = "hatecheck_pipeline.audits.summary:bias_summary"

CROWS_MEM_MB = 4000
STANDIN_MEM_MB = 3000
EXPLAIN_MEM_MB = 6000  # the attention, LIME and gradient explanations of a BERT-base-sized model: 5.0 GB recorded (docs/runs/embedded)


def crows_scorers(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The CrowS-Pairs scorers some profile runs (``profiles.<p>.crows_scorers``;
    one stage each, in the order of ``bias.crows_pairs.scorers``). The stage
    set is the same under every profile, so that `dvc exp run -S profile=...`
    needs no new dvc.yaml: the active profile's list decides which of them
    score and which record that they did not run."""
    listed = {n for prof in params["profiles"].values() for n in (prof.get("crows_scorers") or [])}
    return {n: s for n, s in params["bias"]["crows_pairs"]["scorers"].items() if n in listed}


def functional_suites(params: Mapping[str, Any], model: str) -> list[Suite]:
    """A model's functional suites (HateCheck, MHC languages)."""
    return [s for s in suites_run(params, model) if s.functional]


def target_models(params: Mapping[str, Any]) -> list[str]:
    """Models audited for target-group bias (those with a functional suite)."""
    chosen = params["bias"]["targets"]["models"] or list(params["models"])
    return [m for m in chosen if functional_suites(params, m)]


def plain_bootstrap(values: Mapping[str, Any], stage: str = "") -> dict[str, Any]:
    """The bootstrap settings as plain values (samples, seed, level) for an
    audits stage (audits does not import evaluation's ``Bootstrap``): the
    score stages' own binding, its ``Bootstrap`` as a dict."""
    return dataclasses.asdict(bootstrap_keys().make(values, stage))


def crows_stage(name: str, params: Mapping[str, Any]) -> Stage:
    return Stage(
        f"crows_pairs_{name}",
        PHASE,
        CROWS,
        inputs={"table": paths.interim_table("crows_pairs")},
        outputs={"pairs": out(paths.crows_pairs(name)), "metrics": metric(paths.crows_metrics(name))},
        # the profile's crows_scorers says whether this scorer runs, its crows_max_pairs caps the pairs (smoke)
        params={
            "scorer": f"bias.crows_pairs.scorers.{name}",
            "batch_size": "bias.crows_pairs.batch_size",
            "cpu_bf16": "bias.crows_pairs.cpu_bf16",
            "threads": "bias.threads",
            "seed": "bias.seed",
            # the intervals over pairs: the score stages' bootstrap settings
            "bootstrap": Bound(tuple(bootstrap_keys()), plain_bootstrap),
            **profile_params(params, ["crows_scorers", "crows_max_pairs"]),
        },
        args={"name": name},
        threads=params["bias"]["threads"],
        mem_mb=CROWS_MEM_MB,
    )


WINOBIAS_TYPES = (1, 2)  # WinoBias-knowledge, WinoBias-syntax


def winobias_pairs_path(name: str, wino_type: int) -> str:
    """Per-pair WinoBias scores of one CrowS-Pairs scorer and WinoBias type."""
    return f"{paths.BIAS}/winobias/{name}/type{wino_type}/pairs.parquet"


def winobias_metrics_path(name: str, wino_type: int) -> str:
    return f"{paths.BIAS}/winobias/{name}/type{wino_type}/metrics.json"


def winobias_runs(params: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(scorer, WinoBias type) of every WinoBias stage: each CrowS-Pairs
    scorer some profile runs, on both types (none without ``bias.winobias``)."""
    if "winobias" not in params["bias"]:
        return []
    return [(name, t) for name in crows_scorers(params) for t in WINOBIAS_TYPES]


def winobias_stage(name: str, wino_type: int, params: Mapping[str, Any]) -> Stage:
    return Stage(
        f"winobias_{name}_type{wino_type}",
        PHASE,
        WINOBIAS,
        inputs={"table": paths.interim_table("winobias")},
        outputs={"pairs": out(winobias_pairs_path(name, wino_type)), "metrics": metric(winobias_metrics_path(name, wino_type))},
        # as crows_pairs_<name>: the same scorer, batch size, precision, profile switch and cap, the same intervals
        params={
            "scorer": f"bias.crows_pairs.scorers.{name}",
            "split": "bias.winobias.split",
            "batch_size": "bias.crows_pairs.batch_size",
            "cpu_bf16": "bias.crows_pairs.cpu_bf16",
            "threads": "bias.threads",
            "seed": "bias.seed",
            "bootstrap": Bound(tuple(bootstrap_keys()), plain_bootstrap),
            **profile_params(params, ["crows_scorers", "crows_max_pairs"]),
        },
        args={"name": name, "wino_type": wino_type},
        threads=params["bias"]["threads"],
        mem_mb=CROWS_MEM_MB,
    )


def standin_stage() -> Stage:
    return Stage(
        "hatexplain_standin",
        PHASE,
        STANDIN_RUN,
        inputs={"table": paths.interim_table("hatexplain")},
        outputs={
            "predictions": out(paths.hatexplain_predictions(STANDIN)),
            "attributions": out(paths.hatexplain_attributions(STANDIN)),
            "card": out(paths.hatexplain_card(STANDIN)),
        },
        params={"standin": "bias.hatexplain.standin", "top_k": "bias.hatexplain.top_k", "seed": "bias.seed"},
        mem_mb=STANDIN_MEM_MB,
    )


def hatexplain_classifiers(params: Mapping[str, Any]) -> list[str]:
    """``bias.hatexplain.classifiers``, plus the attention-supervised model
    when its training rationales are given."""
    out_ = list(params["bias"]["hatexplain"]["classifiers"])
    sup = supervised_model(params)
    return out_ + [sup["model"]] if sup is not None and sup["model"] not in out_ else out_


def explained_models(params: Mapping[str, Any]) -> list[str]:
    """HateXplain classifiers the pipeline fine-tunes (models of ``models``,
    and the supervised one), explained by hatexplain_explain_<model>."""
    sup = supervised_model(params)
    trained = {m for m, spec in params["models"].items() if is_finetuned(spec)} | ({sup["model"]} if sup else set())
    return [c for c in hatexplain_classifiers(params) if c in trained]


def explain_stage(model: str, params: Mapping[str, Any]) -> Stage:
    prof = profile(params)
    return Stage(
        f"hatexplain_explain_{model}",
        PHASE,
        EXPLAIN,
        inputs={"model_dir": paths.model_dir(model), "model_card": paths.model_card(model), "table": paths.interim_table("hatexplain")},
        outputs={
            "predictions": out(paths.hatexplain_predictions(model)),
            "attributions": out(paths.hatexplain_attributions(model)),
            "card": out(paths.hatexplain_card(model)),
        },
        params={
            **profile_params(params, ["max_length", "hatexplain_max_explain", "hatexplain_lime_samples"]),
            "explain": "bias.hatexplain.explain",
            "top_k": "bias.hatexplain.top_k",
            "seed": "bias.seed",
            "threads": "bias.threads",
        },
        args={"model": model},
        threads=params["bias"]["threads"],
        mem_mb=EXPLAIN_MEM_MB,
        gpu=prof.get("gpu", 0),
    )


def toxicity_stage(model: str, params: Mapping[str, Any]) -> Stage:
    return Stage(
        f"hatexplain_toxicity_{model}",
        PHASE,
        TOXICITY,
        inputs={"model_dir": paths.model_dir(model), "model_card": paths.model_card(model), "table": paths.interim_table("hatexplain")},
        outputs={"predictions": out(paths.hatexplain_predictions(model))},
        # explain: batch_size
        params={**profile_params(params, ["max_length"]), "explain": "bias.hatexplain.explain", "threads": "bias.threads"},
        args={"model": model},
        threads=params["bias"]["threads"],
        mem_mb=EXPLAIN_MEM_MB,
        gpu=profile(params).get("gpu", 0),
    )


def hatexplain_metrics_stage(classifier: str, two_class: str | None = None) -> Stage:
    """``two_class``: the 2-class model whose p(toxic) gives the paper's bias columns."""
    return Stage(
        f"hatexplain_metrics_{classifier}",
        PHASE,
        METRICS,
        inputs={
            "table": paths.interim_table("hatexplain"),
            "predictions": paths.hatexplain_predictions(classifier),
            "attributions": paths.hatexplain_attributions(classifier),
            **({"two_class": paths.hatexplain_predictions(two_class)} if two_class else {}),
        },
        outputs={
            "metrics": metric(paths.hatexplain_metrics(classifier)),
            "communities_csv": plot(paths.hatexplain_communities(classifier), **COMMUNITIES_PLOT),
        },
        params={k: f"bias.hatexplain.{k}" for k in ("communities", "power", "top_k", "iou_threshold", "gold_rationale")},
        args={"classifier": classifier},
    )


def target_bias_stage(model: str, params: Mapping[str, Any]) -> Stage:
    suites = functional_suites(params, model)
    # gold tables in path order (one table may hold several suites: MHC languages)
    gold = dict(sorted(((s.name, s.raw_table()) for s in suites), key=lambda kv: (kv[1], kv[0])))
    cap_key = case_cap_key(params["models"][model])  # the profile key that capped the predicted cases
    return Stage(
        f"target_bias_{model}",
        PHASE,
        TARGETS,
        inputs={"gold": gold, "predictions": {s.name: paths.predictions(model, s.name) for s in suites}},
        outputs={
            "metrics": metric(paths.target_bias(model)),
            "communities_csv": plot(paths.target_bias_csv(model), **COMMUNITIES_PLOT),
        },
        # profile: a capped profile audits the cases its predict stage drew
        params={"power": "bias.targets.power", **profile_params(params, [cap_key]), "seed": f"models.{model}.seed"},
        args={"model": model, "suites": tuple(suites), "cap_key": cap_key},
    )


def summary_stage(params: Mapping[str, Any]) -> Stage:
    return Stage(
        "bias_summary",
        PHASE,
        SUMMARY,
        inputs={
            "crows": {n: paths.crows_metrics(n) for n in crows_scorers(params)},
            "winobias": {f"{n}/type{t}": winobias_metrics_path(n, t) for n, t in winobias_runs(params)},
            "hatexplain": {c: paths.hatexplain_metrics(c) for c in hatexplain_classifiers(params)},
            "targets": {m: paths.target_bias(m) for m in target_models(params)},
        },
        outputs={"out": metric(paths.bias_summary())},
        params={"supervised": "bias.hatexplain.supervised"},
    )


def stages(params: Mapping[str, Any]) -> list[Stage]:
    if "bias" not in params:
        return []
    out_: list[Stage] = [crows_stage(name, params) for name in crows_scorers(params)]
    out_ += [winobias_stage(name, t, params) for name, t in winobias_runs(params)]
    classifiers = hatexplain_classifiers(params)
    if STANDIN in classifiers:
        out_.append(standin_stage())
    out_ += [explain_stage(model, params) for model in explained_models(params)]
    pairs = {e["from_model"]: e["model"] for e in two_class_models(params) if e["from_model"] in classifiers}
    out_ += [toxicity_stage(model, params) for model in pairs.values()]
    out_ += [hatexplain_metrics_stage(clf, pairs.get(clf)) for clf in classifiers]
    out_ += [target_bias_stage(model, params) for model in target_models(params)]
    out_.append(summary_stage(params))
    return out_


def bias_summary_path(params: Mapping[str, Any]) -> str | None:
    """results/bias/summary.json where the audits phase is configured (the
    report reads it), None otherwise."""
    produced = {o for s in stages(params) for o in s.all_outs}
    return paths.bias_summary() if paths.bias_summary() in produced else None
