"""Stages of the expand phase.

Template regeneration + reproduction report, extension with new terms,
spelling perturbations per suite with a coverage report, text schemes of
every expanded suite; the LLM branch (generate, NLI-validate, quality) only
when ``expansion.llm.enabled`` is true."""

from __future__ import annotations

from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.config import profile_named
from hatecheck_pipeline.core.stage import Stage, metric, out, profile_params
from hatecheck_pipeline.data.sources import raw_files
from hatecheck_pipeline.models.weights import weights_input
from hatecheck_pipeline.pipeline.models import llm_mem_mb
from hatecheck_pipeline.suites.registry import perturbed_tables

RESOURCES = "src/hatecheck_pipeline/resources/expansion"
GPT = "hatecheck_pipeline.evaluation.gpt_hatecheck"


def resolve(path: str) -> str:
    """``package:NAME`` -> the file shipped in resources/expansion."""
    return f"{RESOURCES}/{path[len('package:') :]}" if path.startswith("package:") else path


def template_inputs(params: Mapping[str, Any]) -> list[str]:
    """The raw files (and placeholder resource) template regeneration reads."""
    langs = params["datasets"]["mhc"]["languages"]
    files = [paths.raw("hatecheck", "all_cases.csv"), paths.raw("hatecheck", "template_placeholders.csv")]
    for lang in langs:
        files.append(paths.raw("mhc", f"templates/hatecheck_templates_{lang}.csv"))
        files.append(paths.raw("mhc", f"cases/hatecheck_cases_final_{lang}.csv"))
    files += [str(f.path) for f in raw_files("mhc") if any(f"placeholders/{lang}/" in f.name for lang in langs)]
    return files + [f"{RESOURCES}/hatecheck_placeholders.yaml"]


def perturb_sources(params: Mapping[str, Any]) -> dict[str, tuple[str, list[str] | None]]:
    """Each perturbed table -> (the dataset it perturbs, its language filter;
    None = all languages), built forwards from the configuration."""
    known: dict[str, tuple[str, list[str] | None]] = {"perturbed_hatecheck": ("hatecheck", None)}
    known |= {f"perturbed_mhc_{lang}": ("mhc", [lang]) for lang in params["datasets"]["mhc"]["languages"]}
    return {name: known[name] for name in perturbed_tables(params)}


def expanded_names(params: Mapping[str, Any]) -> list[str]:
    exp = params["expansion"]
    names = list(perturbed_tables(params))
    if exp["templates"]["new_terms"]:
        names.append("extended")
    if exp["llm"]["enabled"]:
        names += [f"gpt_hatecheck_{lang}" for lang in exp["llm"]["languages"]]
    return names


def gpt_suites(params: Mapping[str, Any]) -> dict[str, str]:
    """Each generated suite -> its table (GPT-HateCheck, one per language)."""
    return {f"gpt_hatecheck_{lang}": paths.expanded_table(f"gpt_hatecheck_{lang}") for lang in params["expansion"]["llm"]["languages"]}


def gpt_report(lang: str, kind: str) -> str:
    """generation.json / validation.json / requests.parquet of one language."""
    return paths.expansion_file(f"gpt_hatecheck_{lang}", kind)


def quality_report() -> str:
    return paths.expansion_file("reports", "quality.json")


TEMPLATE_KEYS = {"languages": "datasets.mhc.languages", "lowercase_languages": "expansion.templates.lowercase_languages"}


def gpt_backends(params: Mapping[str, Any], name: str | None = None) -> dict[str, dict[str, Any]]:
    """The llm.backends entries profile ``name``'s GPT-HateCheck (None: the
    active profile's) generates and judges with (role -> backend; a judge
    'nli' is no backend)."""
    plan = profile_named(params, name).get("gpt_hatecheck") or {}
    backends = params.get("llm", {}).get("backends", {})
    return {role: backends[plan[role]] for role in ("generator", "judge") if plan.get(role) in backends}


def gpt_backend_resources(role: str, params: Mapping[str, Any]) -> tuple[dict[str, str], int]:
    """The weights input and the memory of the stage running ``role``. The
    input is declared when any profile runs ``role`` on the fetched weights:
    the DAG (dvc.yaml) does not depend on the active profile, so that
    `dvc exp run -S profile=...` needs no new one; the memory is the
    active profile's."""
    declared: dict[str, str] = {}
    for name in params["profiles"]:
        backend = gpt_backends(params, name).get(role)
        declared = declared or (weights_input(backend) if backend else {})
    active = gpt_backends(params).get(role)
    return declared, llm_mem_mb(params, active) if active else 6000


def llm_stages(params: Mapping[str, Any]) -> list[Stage]:
    exp = params["expansion"]
    llm = exp["llm"]
    prompts_file = resolve(llm["prompts"]) if llm["prompts"] else f"{RESOURCES}/prompts.yaml"
    hypotheses = resolve(exp["nli"]["hypotheses"]) if exp["nli"]["hypotheses"] else f"{RESOURCES}/hypotheses.yaml"
    threads = params.get("llm", {}).get("threads", 2)
    gen_weights, gen_mem = gpt_backend_resources("generator", params)
    judge_weights, judge_mem = gpt_backend_resources("judge", params)
    out_: list[Stage] = []
    for lang in llm["languages"]:
        cand = paths.expansion_file(f"gpt_candidates_{lang}", "candidates.parquet")
        name = f"gpt_hatecheck_{lang}"
        out_.append(
            Stage(
                f"expand_llm_generate_{lang}",
                "expand",
                f"{GPT}:gpt_generate",
                inputs={"slurs": f"{RESOURCES}/gpt_hatecheck_slurs.yaml", "prompts_file": prompts_file, **gen_weights},
                outputs={
                    "candidates": out(cand),
                    "requests": out(gpt_report(lang, "requests.parquet")),
                    "report": metric(gpt_report(lang, "generation.json")),
                },
                params={
                    "settings": "expansion.llm",
                    "backends": "llm.backends",
                    "threads": "llm.threads",
                    **profile_params(params, ["gpt_hatecheck"]),
                },
                args={"language": lang},
                threads=threads,
                mem_mb=gen_mem,
            )
        )
        out_.append(
            Stage(
                f"expand_llm_validate_{lang}",
                "expand",
                f"{GPT}:gpt_validate",
                inputs={"candidates": cand, "hypotheses": hypotheses, "generation": gpt_report(lang, "generation.json"), **judge_weights},
                outputs={
                    "accepted": out(paths.expanded_table(name)),
                    "rejected": out(paths.expansion_file(name, "rejected.parquet")),
                    "report": metric(gpt_report(lang, "validation.json")),
                },
                params={
                    "settings": "expansion.nli",
                    "targets": "expansion.llm.targets",
                    "backends": "llm.backends",
                    "threads": "llm.threads",
                    "batch_size": "llm.batch_size",
                    **profile_params(params, ["gpt_hatecheck"]),
                },
                args={"name": name},
                threads=threads,
                mem_mb=judge_mem,
            )
        )
    out_.append(
        Stage(
            "expand_quality",
            "expand",
            f"{GPT}:gpt_quality",
            inputs={"reference": paths.interim_table("hatecheck"), "generated": gpt_suites(params)},
            outputs={"report": metric(quality_report())},
            params={"settings": "expansion.quality", **profile_params(params, ["gpt_hatecheck"])},
            threads=exp["quality"]["threads"],
            mem_mb=4000,
        )
    )
    return out_


def stages(params: Mapping[str, Any]) -> list[Stage]:
    if "expansion" not in params:
        return []
    exp = params["expansion"]
    out_: list[Stage] = [
        Stage(
            "expand_templates",
            "expand",
            "hatecheck_pipeline.expansion.templates:expand_templates",
            inputs={"raw_files": template_inputs(params)},
            outputs={
                "table": out(paths.expansion_file("regenerated", "table.parquet")),
                "differences": out(paths.expansion_file("regenerated", "differences.csv")),
                "reproduction": metric(paths.expansion_file("regenerated", "reproduction.json")),
            },
            params=TEMPLATE_KEYS,
        )
    ]
    if exp["templates"]["new_terms"]:
        out_.append(
            Stage(
                "expand_extend",
                "expand",
                "hatecheck_pipeline.expansion.templates:expand_extend",
                inputs={"terms": [resolve(p) for p in exp["templates"]["new_terms"]], "raw_files": template_inputs(params)},
                outputs={"out": out(paths.expanded_table("extended"))},
                params=TEMPLATE_KEYS,
            )
        )
    coverage = []
    for name, (source, languages) in perturb_sources(params).items():
        cov = paths.expansion_file(name, "coverage.json")
        coverage.append(cov)
        out_.append(
            Stage(
                f"expand_{name}",
                "expand",
                "hatecheck_pipeline.expansion.perturb:expand_perturb",
                inputs={"table": paths.interim_table(source)},
                outputs={"out": out(paths.expanded_table(name)), "coverage": out(cov)},
                params={"generators": "expansion.perturb.generators", "seed": "expansion.perturb.seed"},
                args={"name": name, "languages": languages},
            )
        )
    if coverage:
        out_.append(
            Stage(
                "expand_coverage_report",
                "expand",
                "hatecheck_pipeline.expansion.perturb:expand_coverage_report",
                inputs={"coverage": coverage},
                outputs={
                    "report_csv": out(paths.expansion_file("reports", "perturbation_coverage.csv")),
                    "report_json": metric(paths.expansion_file("reports", "perturbation_coverage.json")),
                },
            )
        )
    if exp["llm"]["enabled"]:
        out_ += llm_stages(params)
    for name in expanded_names(params):
        for scheme in exp["schemes"]:
            out_.append(
                Stage(
                    f"expand_preprocess_{name}_{scheme}",
                    "expand",
                    "hatecheck_pipeline.expansion.preprocess:expand_preprocess",
                    inputs={"table": paths.expanded_table(name)},
                    outputs={"out": out(paths.expanded_processed(name, scheme))},
                    params={"settings": f"preprocessing.schemes.{scheme}"},
                    args={"name": name, "scheme": scheme},
                )
            )
    return out_


def gpt_compare_report() -> str:
    return paths.expansion_file("reports", "gpt_hatecheck_compare.json")


def gpt_compare_stages(params: Mapping[str, Any]) -> list[Stage]:
    """``gpt_hatecheck_compare`` (phase evaluate): every model predicting
    HateCheck and a generated suite, HC versus GPT-HC (Figure 4, Tables
    8-9); none when no model lists both."""
    from hatecheck_pipeline.suites.languages import suites_run

    if "expansion" not in params or not params["expansion"]["llm"]["enabled"]:
        return []
    generated = gpt_suites(params)
    pairs: dict[str, list[str]] = {}
    for model in params["models"]:
        names = [s.name for s in suites_run(params, model)]
        gpt = [n for n in names if n in generated]
        if "hatecheck" in names and gpt:
            pairs[model] = ["hatecheck", gpt[0]]
    if not pairs:
        return []
    return [
        Stage(
            "gpt_hatecheck_compare",
            "evaluate",
            f"{GPT}:gpt_compare",
            inputs={
                "hatecheck": paths.interim_table("hatecheck"),
                "generated": generated,
                "predictions": {f"{m}/{s}": paths.predictions(m, s) for m, ss in pairs.items() for s in ss},
            },
            outputs={"report": metric(gpt_compare_report())},
            args={"id_columns": {"hatecheck": "case_id", **{n: "id" for n in generated}}, "pairs": pairs},
        )
    ]
