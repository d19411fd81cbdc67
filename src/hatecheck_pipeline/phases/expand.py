"""Stages of the expand phase (built from params; see hatecheck_pipeline.dag).

Template regeneration + reproduction report, extension with new terms,
spelling perturbations per suite with a coverage report, text schemes of
every expanded suite; the LLM branch (generate, NLI-validate, quality) only
when ``expansion.llm.enabled`` is true."""

from __future__ import annotations

from typing import Any, Mapping

from .. import paths
from ..dag import PACKAGE, Stage, code, stage
from ..expansion.registry import perturbed_tables
from ..raw import raw_files, raw_path

RESOURCES = f"{PACKAGE}/resources/expansion"
CODE = code("phases/expand", "cli_expand", "expansion/__init__")


def resolve(path: str) -> str:
    """``package:NAME`` -> the file shipped in resources/expansion."""
    return f"{RESOURCES}/{path[len('package:'):]}" if path.startswith("package:") else path


def template_inputs(params: Mapping[str, Any]) -> list[str]:
    langs = params["datasets"]["mhc"]["languages"]
    files = [raw_path("hatecheck", "all_cases.csv"), raw_path("hatecheck", "template_placeholders.csv")]
    for lang in langs:
        files.append(raw_path("mhc", f"templates/hatecheck_templates_{lang}.csv"))
        files.append(raw_path("mhc", f"cases/hatecheck_cases_final_{lang}.csv"))
    files += [str(f.path) for f in raw_files("mhc") if any(f"placeholders/{lang}/" in f.name for lang in langs)]
    return files + [f"{RESOURCES}/hatecheck_placeholders.yaml"]


def expanded_names(params: Mapping[str, Any]) -> list[str]:
    exp = params["expansion"]
    names = list(perturbed_tables(params))
    if exp["templates"]["new_terms"]:
        names.append("extended")
    if exp["llm"]["enabled"]:
        names += [f"gpt_hatecheck_{lang}" for lang in exp["llm"]["languages"]]
    return names


def stages(params: Mapping[str, Any]) -> list[Stage]:
    if "expansion" not in params:
        return []
    exp = params["expansion"]
    out: list[Stage] = []
    tmpl_keys = ["datasets.mhc.languages", "expansion.templates.lowercase_languages"]
    out.append(stage(
        "expand_templates", "expand", "hatecheck-pipeline expand-templates",
        deps=[*template_inputs(params), *CODE, *code("expansion/templates")],
        outs=[paths.expansion_file("regenerated", "table.parquet"), paths.expansion_file("regenerated", "differences.csv")],
        metrics=[paths.expansion_file("regenerated", "reproduction.json")],
        params=tmpl_keys,
    ))
    if exp["templates"]["new_terms"]:
        out.append(stage(
            "expand_extend", "expand", "hatecheck-pipeline expand-extend",
            deps=[*(resolve(p) for p in exp["templates"]["new_terms"]), *template_inputs(params), *CODE,
                  *code("expansion/templates")],
            outs=[paths.expanded_table("extended")],
            params=[*tmpl_keys, "expansion.templates.new_terms", "expansion.templates.new_terms_languages"],
        ))
    coverage = []
    for name in perturbed_tables(params):
        source = "hatecheck" if name == "perturbed_hatecheck" else "mhc"
        cov = paths.expansion_file(name, "coverage.json")
        coverage.append(cov)
        out.append(stage(
            f"expand_{name}", "expand", f"hatecheck-pipeline expand-perturb {name}",
            deps=[paths.interim_table(source), *CODE, *code("expansion/perturb")],
            outs=[paths.expanded_table(name), cov],
            params=["expansion.perturb.generators", "expansion.perturb.seed"],
        ))
    if coverage:
        out.append(stage(
            "expand_coverage_report", "expand", "hatecheck-pipeline expand-coverage",
            deps=[*coverage, *CODE, *code("expansion/perturb")],
            outs=[paths.expansion_file("reports", "perturbation_coverage.csv")],
            metrics=[paths.expansion_file("reports", "perturbation_coverage.json")],
            params=["expansion.perturb.suites", "datasets.mhc.languages"],
        ))
    if exp["llm"]["enabled"]:
        llm_keys = [f"expansion.llm.{k}" for k in ("base_url", "model", "api_key_env", "temperature", "n_per_cell",
                                                   "max_tokens", "timeout_s", "seed", "targets", "slurs",
                                                   "functionalities", "prompts", "cache_dir", "demonstrations_from")]
        nli_keys = ["expansion.nli", "expansion.llm.targets"]
        for lang in exp["llm"]["languages"]:
            cand = paths.expansion_file(f"gpt_candidates_{lang}", "candidates.parquet")
            prompts_file = [resolve(exp["llm"]["prompts"])] if exp["llm"]["prompts"] else [f"{RESOURCES}/prompts.yaml"]
            out.append(stage(
                f"expand_llm_generate_{lang}", "expand", f"hatecheck-pipeline expand-generate {lang}",
                deps=[paths.interim_table(exp["llm"]["demonstrations_from"]), *prompts_file, *CODE,
                      *code("expansion/generate", "expansion/llm", "expansion/prompts")],
                outs=[cand],
                params=llm_keys,
            ))
            hyp = [resolve(exp["nli"]["hypotheses"])] if exp["nli"]["hypotheses"] else [f"{RESOURCES}/hypotheses.yaml"]
            name = f"gpt_hatecheck_{lang}"
            out.append(stage(
                f"expand_llm_validate_{lang}", "expand", f"hatecheck-pipeline expand-validate {lang}",
                deps=[cand, *hyp, *CODE, *code("expansion/generate", "expansion/nli")],
                outs=[paths.expanded_table(name), paths.expansion_file(name, "rejected.parquet")],
                metrics=[paths.expansion_file(name, "nli_report.json")],
                params=nli_keys,
                resources=[("mem_mb", 4000)],
            ))
        out.append(stage(
            "expand_quality", "expand", "hatecheck-pipeline expand-quality",
            deps=[*quality_tables(params).values(), *CODE, *code("expansion/generate", "expansion/quality")],
            outs=[],
            metrics=[paths.expansion_file("reports", "quality.json")],
            params=["expansion.quality", "expansion.llm.languages", "expansion.llm.demonstrations_from"],
            resources=[("mem_mb", 6000)],
        ))
    for name in expanded_names(params):
        for scheme in exp["schemes"]:
            out.append(stage(
                f"expand_preprocess_{name}_{scheme}", "expand", f"hatecheck-pipeline expand-preprocess {name} {scheme}",
                deps=[paths.expanded_table(name), *code("textprep", "cli_expand")],
                outs=[paths.expanded_processed(name, scheme)],
                params=[f"preprocessing.schemes.{scheme}"],
            ))
    return out


def quality_tables(params: Mapping[str, Any]) -> dict[str, str]:
    """Suites whose quality is measured: the demonstrations' source suite
    and every generated suite (GPT-HateCheck Table 6)."""
    exp = params["expansion"]
    src = exp["llm"]["demonstrations_from"]
    out = {src: paths.interim_table(src)}
    for lang in exp["llm"]["languages"]:
        out[f"gpt_hatecheck_{lang}"] = paths.expanded_table(f"gpt_hatecheck_{lang}")
    return out
