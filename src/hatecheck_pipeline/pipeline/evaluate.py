"""Stages of the evaluate phase.

- ``score_<model>_<suite>``: one METRICS.json per prediction file (the same
  code as ``hatecheck-pipeline score``) and the cases the model got wrong
  (``failures.csv``, kept in git as the metrics are);
- ``tables_<group>``: the table groups declared in
  :data:`hatecheck_pipeline.evaluation.tables.GROUPS` (the papers' tables
  ``hatecheck`` and ``mhc``, zero- vs many-shot ``shots``, contrast
  consistency ``contrast``, original vs expanded suites ``expanded``, the
  scores no other group reads ``other``), as
  long CSVs with per-cell provenance, a DVC metrics JSON and DVC plot CSVs;
- ``mhc_disagreement``: the MHC paper's Table 5 (annotator disagreement
  per language) from the validated MHC table;
- ``hatecheck_agreement``: the HateCheck paper's section 2.5 (validation
  of the gold labels: Fleiss' kappa, 4-of-5 agreement, the exclusion rule
  against the released suite) from the raw annotations of all 3,901 cases;
- ``heldout_multiclass_<model>_<dataset>``: a model trained on a dataset's
  original classes (a recipe with ``labels``) scored on all of them on the
  held-out test set (HateCheck appendix F, HateXplain's 3 classes).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.config import profile
from hatecheck_pipeline.core.kinds import case_cap_key, is_finetuned
from hatecheck_pipeline.core.stage import Bound, Stage, metric, out, plot, profile_params, tracked
from hatecheck_pipeline.evaluation.cells import Source
from hatecheck_pipeline.evaluation.expanded_tables import original_suite
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation.tables import GROUPS
from hatecheck_pipeline.suites.languages import suites_run
from hatecheck_pipeline.suites.registry import Suite, perturbed_tables
from hatecheck_pipeline.evaluation.scoring import model_failures

SCORE = "hatecheck_pipeline.evaluation.scoring:score"
TABLES = "hatecheck_pipeline.evaluation.tables:tables"
MHC_DISAGREEMENT = "hatecheck_pipeline.evaluation.annotators:mhc_disagreement"
HATECHECK_AGREEMENT = "hatecheck_pipeline.evaluation.agreement:hatecheck_agreement"
HELDOUT_MULTICLASS = "hatecheck_pipeline.evaluation.multiclass:heldout_multiclass"
DIFF = "hatecheck_pipeline.evaluation.diff:diff"

SEED_KEY, LEVEL_KEY = "evaluation.seed", "evaluation.ci_level"


@dataclasses.dataclass(frozen=True)
class BootstrapFrom:
    """Makes a :class:`Bootstrap` from its params values, each read by its
    key (``samples``: the key holding the number of resamples); equal for
    equal keys, so two builds of a stage compare equal."""

    samples: str

    def __call__(self, values: Mapping[str, Any], stage: str = "") -> Bootstrap:
        return Bootstrap(int(values[self.samples]), int(values[SEED_KEY]), float(values[LEVEL_KEY]))


def bootstrap_keys(samples: str = "evaluation.bootstrap_samples") -> Bound:
    """The ``bootstrap`` argument: one :class:`Bootstrap` from the number of
    resamples (``samples``), ``evaluation.seed`` and ``evaluation.ci_level``."""
    return Bound((samples, SEED_KEY, LEVEL_KEY), BootstrapFrom(samples))


# argument of evaluation.scoring:score -> params key
SCORE_PARAMS = {
    "bootstrap": bootstrap_keys(),
    "threshold": "evaluation.threshold",
}


def score_stage_name(model: str, suite: str) -> str:
    return f"score_{model}_{suite}"


def table_stage_name(group: str) -> str:
    return f"tables_{group}"


def scored(params: Mapping[str, Any]) -> list[tuple[str, Suite]]:
    """Every (model, suite) the configured models are scored on (a scoring
    API's suites outside its ``languages`` left out)."""
    return [(model, s) for model in params["models"] for s in suites_run(params, model)]


def sources(params: Mapping[str, Any]) -> list[Source]:
    """Every scored (model, suite): its metrics file and score stage."""
    return [
        Source(model, s.name, s.dataset, s.language, paths.metrics(model, s.name), score_stage_name(model, s.name), s.kind)
        for model, s in scored(params)
    ]


def group_sources(params: Mapping[str, Any], group: str) -> list[Source]:
    """The (model, suite) metrics a table group reads."""
    return GROUPS[group].select(sources(params))


def group_training_tables(params: Mapping[str, Any], group: str) -> dict[str, list[str]]:
    """model -> interim tables of its training data (for a group tagging
    languages zero- or many-shot)."""
    if not GROUPS[group].training_languages:
        return {}
    models = sorted({s.model for s in group_sources(params, group)})
    return {m: [paths.interim_table(d) for d in params["models"][m].get("train", [])] for m in models}


def invariance_source(params: Mapping[str, Any], model: str, suite: Suite) -> Suite | None:
    """The suite whose cases a perturbed suite perturbs, when ``model`` is
    scored on it too (its score stage then compares the model's predictions
    on each perturbed case and its source case: flip rates); None for any
    other suite."""
    if "expansion" not in params or suite.name not in perturbed_tables(params):
        return None
    orig = original_suite(suite.name)
    return next((s for s in suites_run(params, model) if s.name == orig), None)


def score_stage(params: Mapping[str, Any], model: str, suite: Suite) -> Stage:
    cap_key = case_cap_key(params["models"][model], suite.expanded)  # the profile key that capped the predicted cases
    keys = {**SCORE_PARAMS, **profile_params(params, [cap_key])}
    keys["model_seed"] = f"models.{model}.seed"
    if suite.heldout and "trained_on" in params["models"][model]:
        keys["trained_on"] = f"models.{model}.trained_on"
    inputs = {"predictions": paths.predictions(model, suite.name), "gold_table": suite.raw_table()}
    args: dict[str, Any] = {"suite": suite, "model": model, "cap_key": cap_key}
    source = invariance_source(params, model, suite)
    if source is not None:  # a perturbed suite: flip rates against the model's predictions on the cases perturbed
        inputs |= {"source_predictions": paths.predictions(model, source.name), "source_table": source.raw_table()}
        args["source_suite"] = source
    return Stage(
        score_stage_name(model, suite.name),
        "evaluate",
        SCORE,
        inputs=inputs,
        outputs={
            "metrics": metric(paths.metrics(model, suite.name)),
            "replicates": out(paths.bootstrap_replicates(model, suite.name)),
            "failures": tracked(model_failures(model, suite.name)),
        },
        params=keys,
        args=args,
    )


def tables_stage(params: Mapping[str, Any], group: str) -> Stage | None:
    g = GROUPS[group]
    srcs = group_sources(params, group)
    if not srcs:
        return None
    suites = {(model, s.name): s for model, s in scored(params)}
    inputs: dict[str, Any] = {"metrics": {s.stage: s.metrics for s in srcs}}
    if g.replicates:  # intervals of differences between suites: the score stages' bootstrap values
        inputs["replicates"] = {s.stage: paths.bootstrap_replicates(s.model, s.suite) for s in srcs}
    training = group_training_tables(params, group)
    if training:
        inputs["training"] = training
    outputs: dict[str, Any] = {"long_tables": tuple(out(paths.table(t)) for t in g.tables)}
    if g.training_languages:
        outputs["languages"] = out(paths.training_languages())
    outputs["summary"] = metric(paths.table_summary(group))
    if g.plots:
        outputs["plots"] = tuple(plot(paths.plot_data(p.name), **p.axes) for p in g.plots)
    name = table_stage_name(group)
    return Stage(
        name,
        "evaluate",
        TABLES,
        inputs=inputs,
        outputs=outputs,
        args={"group": group, "stage_name": name, "scored": {s.stage: (s.model, suites[(s.model, s.suite)]) for s in srcs}},
    )


def mhc_disagreement_stage() -> Stage:
    """``mhc_disagreement``: MHC Table 5 (a property of the suite, no model)."""
    return Stage(
        "mhc_disagreement",
        "evaluate",
        MHC_DISAGREEMENT,
        inputs={"table": paths.interim_table("mhc"), "validation": paths.validation_json("mhc")},
        outputs={"out": metric(paths.table_summary("mhc_t5"))},
    )


def hatecheck_agreement_metrics() -> str:
    """The output of stage ``hatecheck_agreement``."""
    return "results/hatecheck_agreement/metrics.json"


def hatecheck_agreement_stage() -> Stage:
    """``hatecheck_agreement``: HateCheck section 2.5 (a property of the
    suite's annotation, no model)."""
    return Stage(
        "hatecheck_agreement",
        "evaluate",
        HATECHECK_AGREEMENT,
        inputs={"annotations": paths.raw("hatecheck", "all_annotations.csv"), "released": paths.raw("hatecheck", "test_suite_cases.csv")},
        outputs={"out": metric(hatecheck_agreement_metrics())},
    )


def multiclass_models(params: Mapping[str, Any]) -> list[str]:
    """Fine-tuned models whose recipe names its own classes (``labels``)."""
    return [
        m for m, spec in params["models"].items() if is_finetuned(spec) and (params["training"]["recipes"][spec["recipe"]].get("labels"))
    ]


def multiclass_metrics(model: str, dataset: str) -> str:
    """The all-class held-out metrics of a multiclass model."""
    return paths.metrics(model, f"multiclass_heldout_{dataset}")


def heldout_multiclass_stages(params: Mapping[str, Any]) -> list[Stage]:
    """``heldout_multiclass_<model>_<dataset>``: every multiclass model on
    each of its training datasets' test split, all classes scored."""
    out_ = []
    for model in multiclass_models(params):
        spec = params["models"][model]
        for dataset in spec["train"]:
            out_.append(
                Stage(
                    f"heldout_multiclass_{model}_{dataset}",
                    "evaluate",
                    HELDOUT_MULTICLASS,
                    inputs={"model_dir": paths.model_dir(model), "table": paths.processed(dataset, spec["scheme"])},
                    outputs={"out": metric(multiclass_metrics(model, dataset))},
                    params={
                        "labels": f"training.recipes.{spec['recipe']}.labels",
                        **profile_params(params, ["max_cases_per_suite", "max_length"]),
                        "seed": f"models.{model}.seed",
                        "prediction": "prediction",
                        "amp": "training.amp",
                        "bootstrap": bootstrap_keys(),
                    },
                    args={"model": model, "dataset": dataset},
                    threads=max(1, params["prediction"]["threads"]),
                    mem_mb=3000,  # a fine-tuned model loaded (as a predict stage)
                    gpu=profile(params).get("gpu", 0),
                )
            )
    return out_


def diff_stage_name(a: str, b: str, suite: str) -> str:
    return f"diff_{a}_{b}_{suite}"


def diff_stages(params: Mapping[str, Any]) -> list[Stage]:
    """``diff_<a>_<b>_<suite>`` for each of ``evaluation.diffs``: what
    changed from model a to model b per functional test."""
    from hatecheck_pipeline.core.errors import PipelineError

    out_ = []
    scored_on = {(m, s.name): s for m, s in scored(params)}
    for i, entry in enumerate(params["evaluation"].get("diffs") or []):
        a, b, name = entry["a"], entry["b"], entry["suite"]
        missing = [m for m in (a, b) if (m, name) not in scored_on]
        if missing:
            raise PipelineError(f"evaluation.diffs[{i}]: {', '.join(missing)} not scored on {name!r} (a model's suites name it)")
        suite = scored_on[(a, name)]
        out_.append(
            Stage(
                diff_stage_name(a, b, name),
                "evaluate",
                DIFF,
                inputs={
                    "predictions_a": paths.predictions(a, name),
                    "predictions_b": paths.predictions(b, name),
                    "gold_table": suite.raw_table(),
                },
                outputs={"out": metric(paths.model_diff(a, b, name))},
                params={"bootstrap": bootstrap_keys("evaluation.diff_samples")},
                args={"suite": suite, "a": a, "b": b},
            )
        )
    return out_


def stages(params: Mapping[str, Any]) -> list[Stage]:
    out_: list[Stage] = [score_stage(params, model, suite) for model, suite in scored(params)]
    out_ += diff_stages(params)
    out_ += [s for group in GROUPS if (s := tables_stage(params, group)) is not None]
    out_.append(mhc_disagreement_stage())
    out_.append(hatecheck_agreement_stage())
    out_ += heldout_multiclass_stages(params)
    from hatecheck_pipeline.pipeline.expand import gpt_compare_stages

    return out_ + gpt_compare_stages(params)
