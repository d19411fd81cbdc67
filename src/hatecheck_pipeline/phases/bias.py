"""Stages of the bias phase (built from params; see hatecheck_pipeline.dag).

- ``crows_pairs_<scorer>``: CrowS-Pairs with one enabled scorer of
  ``bias.crows_pairs.scorers`` (variant masked | causal);
- ``hatexplain_standin``: the labelled TF-IDF + LR stand-in 3-class
  classifier's HateXplain test predictions and occlusion attributions;
- ``hatexplain_metrics_<classifier>``: performance, bias AUCs per
  community, plausibility and faithfulness of one classifier's files;
- ``target_bias_<model>``: Subgroup/BPSN/BNSP AUCs per ``target_ident`` on
  the model's HateCheck / MHC predictions;
- ``bias_summary``: everything above in ``results/bias/summary.json``.
"""

from __future__ import annotations

from typing import Any, Mapping

from .. import paths
from ..dag import Stage, code, stage
from ..suites import suites_for_model

STANDIN = "tfidf-lr-standin"


def crows_scorers(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in params["bias"]["crows_pairs"]["scorers"].items() if s["enabled"]}


def target_models(params: Mapping[str, Any]) -> list[str]:
    chosen = params["bias"]["targets"]["models"] or list(params["models"])
    return [m for m in chosen if functional_suites(params, m)]


def functional_suites(params: Mapping[str, Any], model: str) -> list:
    return [s for s in suites_for_model(params, model) if s.name == "hatecheck" or s.name.startswith("mhc_")]


def stages(params: Mapping[str, Any]) -> list[Stage]:
    out: list[Stage] = []
    summary_deps: list[str] = []
    for name, spec in crows_scorers(params).items():
        out.append(
            stage(
                f"crows_pairs_{name}",
                "bias",
                f"hatecheck-pipeline crows-pairs {name}",
                deps=[paths.interim_table("crows_pairs"), *code("audits/crows", "cli_bias")],
                outs=[paths.crows_pairs(name)],
                metrics=[paths.crows_metrics(name)],
                # profile/profiles: profiles.<p>.crows_max_pairs caps the pairs (smoke)
                params=[f"bias.crows_pairs.scorers.{name}", "bias.crows_pairs.batch_size", "bias.threads", "bias.seed",
                        "profile", "profiles"],
                resources=[("mem_mb", 4000)],
                threads=params["bias"]["threads"],
            )
        )
        summary_deps.append(paths.crows_metrics(name))
    hx = params["bias"]["hatexplain"]
    if STANDIN in hx["classifiers"]:
        out.append(
            stage(
                "hatexplain_standin",
                "bias",
                "hatecheck-pipeline hatexplain-standin",
                deps=[paths.interim_table("hatexplain"), *code("audits/hatexplain", "audits/rationales", "cli_bias")],
                outs=[paths.hatexplain_predictions(STANDIN), paths.hatexplain_attributions(STANDIN), paths.hatexplain_card(STANDIN)],
                params=["bias.hatexplain.standin", "bias.hatexplain.top_k", "bias.seed"],
                resources=[("mem_mb", 3000)],
            )
        )
    for clf in hx["classifiers"]:
        out.append(
            stage(
                f"hatexplain_metrics_{clf}",
                "bias",
                f"hatecheck-pipeline hatexplain-metrics {clf}",
                deps=[
                    paths.interim_table("hatexplain"),
                    paths.hatexplain_predictions(clf),
                    paths.hatexplain_attributions(clf),
                    *code("audits/hatexplain", "audits/rationales", "audits/bias_auc", "cli_bias"),
                ],
                outs=[],
                metrics=[paths.hatexplain_metrics(clf)],
                plots=[paths.hatexplain_communities(clf)],
                params=[f"bias.hatexplain.{k}" for k in ("communities", "power", "top_k", "iou_threshold", "gold_rationale")],
            )
        )
        summary_deps.append(paths.hatexplain_metrics(clf))
    for model in target_models(params):
        suites = functional_suites(params, model)
        out.append(
            stage(
                f"target_bias_{model}",
                "bias",
                f"hatecheck-pipeline target-bias {model}",
                deps=[
                    *sorted({paths.interim_table(s.dataset) for s in suites}),
                    *[paths.predictions(model, s.name) for s in suites],
                    *code("audits/bias_auc", "suites", "cli_bias", "predict"),
                ],
                outs=[],
                metrics=[paths.target_bias(model)],
                plots=[paths.target_bias_csv(model)],
                # profile: a capped profile audits the cases its predict stage drew
                params=["bias.targets.power", "profile", "profiles", f"models.{model}.seed"],
            )
        )
        summary_deps.append(paths.target_bias(model))
    out.append(
        stage(
            "bias_summary",
            "bias",
            "hatecheck-pipeline bias-summary",
            deps=[*summary_deps, *code("audits/summary", "cli_bias")],
            outs=[],
            metrics=[paths.bias_summary()],
        )
    )
    return out
