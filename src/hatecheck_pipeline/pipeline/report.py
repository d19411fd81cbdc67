"""Stages of the report phase.

``report``: the self-contained ``reports/mhc_xtc.html`` from the evaluate
phase's tables, the model cards, the data-validation results, the expand
phase's coverage / reproduction reports and the audits phase's bias summary
(each where the DAG produces it).
"""

from __future__ import annotations

from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.kinds import is_classifier, is_llm
from hatecheck_pipeline.core.stage import Stage, out, profile_params
from hatecheck_pipeline.data.specs import DATASETS
from hatecheck_pipeline.evaluation.tables import GROUPS
from hatecheck_pipeline.pipeline import evaluate
from hatecheck_pipeline.evaluation.scoring import model_failures
from hatecheck_pipeline.models import kinds

REPORT = "hatecheck_pipeline.report.html:report"
MODEL_PAGE = "hatecheck_pipeline.report.model_page:model_page"
RESOURCES = "src/hatecheck_pipeline/resources"
PUBLISHED = f"{RESOURCES}/published.yaml"
FUNCTIONALITIES = f"{RESOURCES}/functionalities.yaml"


def table_files(params: Mapping[str, Any]) -> dict[str, str]:
    """Long tables of the table groups that have sources."""
    return {t: paths.table(t) for name, g in GROUPS.items() if evaluate.group_sources(params, name) for t in g.tables}


def failure_files(params: Mapping[str, Any]) -> dict[str, str]:
    """score stage -> its failures.csv, for every model on a HateCheck or MHC
    suite (the report lists failing cases under Tables 1's functional tests)."""
    return {
        s.stage: model_failures(s.model, s.suite)
        for s in evaluate.sources(params)
        if s.dataset in ("hatecheck", "mhc") and not s.heldout and not s.expanded
    }


def _produced(stages: list[Stage]) -> set[str]:
    return {o for s in stages for o in s.all_outs}


def model_cards(params: Mapping[str, Any]) -> dict[str, str]:
    """Model cards the DAG produces (a model without one shows as such)."""
    from hatecheck_pipeline.pipeline import models

    produced = _produced(models.stages(params))
    return {m: paths.model_card(m) for m in params["models"] if paths.model_card(m) in produced}


def expansion_reports(params: Mapping[str, Any]) -> dict[str, str]:
    """The expand phase's perturbation coverage and template reproduction
    reports, where the DAG produces them."""
    from hatecheck_pipeline.pipeline import expand

    produced = _produced(expand.stages(params))
    wanted = {
        "coverage": paths.expansion_file("reports", "perturbation_coverage.json"),
        "reproduction": paths.expansion_file("regenerated", "reproduction.json"),
    }
    return {k: v for k, v in wanted.items() if v in produced}


def expanded_suites(params: Mapping[str, Any]) -> dict[str, str]:
    """Every expanded suite the expand phase writes in each preprocessing
    scheme ("<suite>/<scheme>" -> its processed file), published whether or
    not a configured model reads that scheme: the report lists them."""
    from hatecheck_pipeline.pipeline import expand

    return {
        f"{s.args['name']}/{s.args['scheme']}": s.outputs["out"].path for s in expand.stages(params) if s.function == "expand_preprocess"
    }


def gpt_hatecheck_files(params: Mapping[str, Any]) -> dict[str, str]:
    """GPT-HateCheck's reports (generation, validation, quality, the
    HC-versus-GPT-HC comparison where a model predicts both; the first
    language's), where the DAG produces them."""
    from hatecheck_pipeline.pipeline import expand

    produced = _produced(expand.stages(params)) | _produced(expand.gpt_compare_stages(params))
    langs = params.get("expansion", {}).get("llm", {}).get("languages", [])
    if not langs:
        return {}
    wanted = {
        "generation": expand.gpt_report(langs[0], "generation.json"),
        "requests": expand.gpt_report(langs[0], "requests.parquet"),
        "validation": expand.gpt_report(langs[0], "validation.json"),
        "quality": expand.quality_report(),
        "compare": expand.gpt_compare_report(),
    }
    return {k: v for k, v in wanted.items() if v in produced}


def bias_summary(params: Mapping[str, Any]) -> str | None:
    """results/bias/summary.json where the audits phase is configured."""
    from hatecheck_pipeline.pipeline import audits

    return audits.bias_summary_path(params)


def stages(params: Mapping[str, Any]) -> list[Stage]:
    inputs: dict[str, Any] = {"tables": table_files(params)}
    if any(g.training_languages and evaluate.group_sources(params, name) for name, g in GROUPS.items()):
        inputs["training_languages"] = paths.training_languages()
    inputs["cards"] = model_cards(params)
    if "expansion" in params:  # the section is shown (a report not produced says so)
        inputs["expansion"] = expansion_reports(params)
        suites = expanded_suites(params)
        if suites:
            inputs["expanded_suites"] = suites
    gpt = gpt_hatecheck_files(params) if "expansion" in params else {}
    if gpt:
        inputs["gpt_hatecheck"] = gpt
    summary = bias_summary(params)
    if summary:
        inputs["bias_summary"] = summary
    from hatecheck_pipeline.pipeline import llm

    llm_metrics = llm.llm_metrics_paths(params)
    if llm_metrics:
        inputs["llm"] = llm_metrics
        inputs["ethos_sets"] = llm.ethos_sets_report_path(params)  # which example sets, next to Tables 4 and 7
    inputs["mhc_t5"] = paths.table_summary("mhc_t5")  # MHC Table 5 (stage mhc_disagreement)
    inputs["hatecheck_agreement"] = evaluate.hatecheck_agreement_metrics()  # HateCheck section 2.5 (stage hatecheck_agreement)
    multiclass = {
        f"{m}/{d}": evaluate.multiclass_metrics(m, d) for m in evaluate.multiclass_models(params) for d in params["models"][m]["train"]
    }
    if multiclass:  # HateCheck appendix F (stages heldout_multiclass_<model>_<dataset>)
        inputs["multiclass"] = multiclass
    misspelling = llm.misspelling_metrics_paths(params)
    if misspelling:
        inputs["llm_misspelling"] = misspelling
    diffs = {
        evaluate.diff_stage_name(e["a"], e["b"], e["suite"]): paths.model_diff(e["a"], e["b"], e["suite"])
        for e in params["evaluation"].get("diffs") or []
    }
    if diffs:  # what changed between two models per functional test (evaluation.diffs)
        inputs["diffs"] = diffs
    failures = failure_files(params)
    if failures:  # the failing cases under each functional test below the mark
        inputs["failures"] = failures
    pages = {s.args["model"]: s.outputs["page"].path for s in model_page_stages(params)}
    if pages:  # each classifier trained elsewhere has its page, linked from the models section
        inputs["model_pages"] = pages
    inputs["validation"] = {d: paths.validation_json(d) for d in DATASETS}
    llm_keys = {"llm_backends": "llm.backends"} if any(is_llm(s) for s in params["models"].values()) else {}
    inputs["published"] = PUBLISHED
    inputs["functionalities"] = FUNCTIONALITIES
    return [
        *model_page_stages(params),
        Stage(
            "report",
            "report",
            REPORT,
            inputs=inputs,
            outputs={"out": out(paths.report())},
            # No stage time and memory records (logs/benchmarks): a stage reads only
            # what it declares, and those records differ between runs of identical
            # results; they stay a record of the run, apart from the results
            # (`hatecheck-pipeline docs record`, benchmarks/bench_pipeline.py).
            params={
                "title": "report.title",
                "below_mark": "evaluation.below_mark",
                "max_ci_width": "evaluation.max_ci_width",
                "ci_level": "evaluation.ci_level",  # named in the notes where no cell records its interval's level
                **profile_params(params, []),
                "models": "models",
                **llm_keys,
            },
        ),
    ]


def model_page_stage(params: Mapping[str, Any], model: str) -> Stage:
    """``model_page_<model>``: one page for a model, from its card and the
    metrics and failing cases of every suite it is scored on (a scoring
    API's: its predictions files too, which record when their answers were
    obtained)."""
    from hatecheck_pipeline.suites.languages import not_run_suites, suites_run

    scored = {evaluate.score_stage_name(model, s.name): s for s in suites_run(params, model)}
    not_run = not_run_suites(params, model)  # e.g. a scoring API's languages leave a suite out
    answers = (
        {"answers": {k: paths.predictions(model, s.name) for k, s in scored.items()}}
        if kinds.of(params["models"][model], model).dated_answers
        else {}
    )
    return Stage(
        f"model_page_{model}",
        "report",
        MODEL_PAGE,
        inputs={
            "card": paths.model_card(model),
            "metrics": {k: paths.metrics(model, s.name) for k, s in scored.items()},
            "failures": {k: model_failures(model, s.name) for k, s in scored.items()},
            "published": PUBLISHED,
            "functionalities": FUNCTIONALITIES,
            **answers,
        },
        outputs={"page": out(paths.model_page(model))},
        params={"below_mark": "evaluation.below_mark", "max_ci_width": "evaluation.max_ci_width"},
        args={"model": model, "scored": scored, **({"not_run": not_run} if not_run else {})},
        # the papers' figures and functional tests, read through the package's resources: a change re-runs it
        deps_only=("published", "functionalities"),
    )


def model_page_stages(params: Mapping[str, Any]) -> list[Stage]:
    """A page for each classifier trained elsewhere (what `evaluate` writes)."""
    return [model_page_stage(params, m) for m, spec in params["models"].items() if is_classifier(spec)]
