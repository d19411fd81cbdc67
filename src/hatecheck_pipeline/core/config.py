"""The one loader of ``params.yaml``: read, override, validate against the
schema (:func:`validate`) and cross-check (:func:`cross_check`).

Every stage receives plain values selected from the validated parameters;
no other module opens ``params.yaml``. Only the registry (``pipeline/``),
the CLI and the Snakefile import this module: a stage's code imports the
light modules it needs instead (:mod:`~hatecheck_pipeline.core.profile`
for the Profile and ConfigError, :mod:`~hatecheck_pipeline.core.yamlio`,
:mod:`~hatecheck_pipeline.core.kinds`), so an edit here re-runs no stage
(an import-linter contract in pyproject.toml holds it).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from hatecheck_pipeline.core import params_cache
from hatecheck_pipeline.core.kinds import is_classifier, is_finetuned, is_llm
from hatecheck_pipeline.core.profile import ConfigError, Profile
from hatecheck_pipeline.core.yamlio import read_yaml

if TYPE_CHECKING:
    import jsonschema

PARAMS_FILE = "params.yaml"
SCHEMA_FILE = "workflow/schemas/params.schema.yaml"
OVERRIDES_ENV = "HATECHECK_PIPELINE_SET"  # JSON {dotted key: value}, set by the Snakefile from --config


def parse_override(item: str) -> tuple[str, Any]:
    """Parse ``key.sub=value`` (value read as YAML).

    >>> parse_override("profile=smoke")
    ('profile', 'smoke')
    >>> parse_override("datasets.davidson2017.seed=7")
    ('datasets.davidson2017.seed', 7)
    """
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form key=value")
    key, value = item.split("=", 1)
    return key.strip(), yaml.safe_load(value)


def set_key(tree: dict, dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = tree
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def flat_diff(base: Mapping, changed: Mapping, prefix: str = "") -> dict[str, Any]:
    """Dotted keys whose values differ between two parameter trees.

    >>> flat_diff({"a": 1, "b": {"c": 2}}, {"a": 1, "b": {"c": 3}})
    {'b.c': 3}
    """
    out: dict[str, Any] = {}
    for key, value in changed.items():
        dotted = f"{prefix}{key}"
        old = base.get(key) if isinstance(base, Mapping) else None
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            out.update(flat_diff(old, value, dotted + "."))
        elif value != old:
            out[dotted] = value
    return out


def describe(error: jsonschema.ValidationError) -> str:
    """One schema error as ``key.path: what is wrong (what is allowed)``;
    a schema's own ``errorMessage`` says what is wrong where it gives one."""
    path = ".".join(map(str, error.absolute_path))
    if isinstance(error.schema, Mapping) and error.schema.get("errorMessage"):
        return f"{path or '<root>'}: {error.schema['errorMessage']}"
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = sorted((error.schema.get("properties") or {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = ", ".join(f"{path}.{k}" if path else k for k in extra)
        return f"{where}: unknown key (allowed here: {', '.join(allowed) or 'none'})"
    return f"{path or '<root>'}: {error.message}"


def one_line(source: str, problems: list[str]) -> str:
    """The message of a :class:`ConfigError`: one line, every problem."""
    return f"invalid parameters ({source}): " + "; ".join(problems)


def validate(params: Mapping, schema_path: Path, source: str) -> None:
    import jsonschema  # here: a process whose parameters were validated before imports none (core/params_cache.py)

    schema = read_yaml(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError(one_line(f"{source}, schema {schema_path}", [describe(e) for e in errors]))


def env_overrides() -> dict[str, Any]:
    """Overrides handed down by the Snakefile (``snakemake --config``)."""
    value = os.environ.get(OVERRIDES_ENV)
    return json.loads(value) if value else {}


def load_params(
    path: str | Path = PARAMS_FILE,
    overrides: list[str] | Mapping[str, Any] | None = None,
    schema: str | Path | None = None,
) -> dict[str, Any]:
    """Read, override, validate and return the parameters.

    ``overrides`` are ``key=value`` strings (CLI ``--set``) or a mapping of
    dotted keys; they are applied before validation.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: parameters file not found (run from the project root)")
    try:
        params = read_yaml(path) or {}
    except yaml.YAMLError as exc:  # one line naming the file and where, not the parser's traceback
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise ConfigError(f"{path}: {where}{getattr(exc, 'problem', None) or exc} (not valid YAML)") from None
    return apply_and_validate(params, overrides, Path(schema) if schema else path.parent / SCHEMA_FILE, str(path))


def apply_and_validate(
    params: Mapping[str, Any],
    overrides: list[str] | Mapping[str, Any] | None,
    schema_path: Path,
    source: str,
) -> dict[str, Any]:
    """``params`` with ``overrides`` applied, validated and cross-checked
    (a :class:`ConfigError` naming ``source`` where they fail); the answer of
    an earlier process for the same inputs where one is kept
    (:mod:`~hatecheck_pipeline.core.params_cache`)."""
    if isinstance(overrides, str):  # `--config set=a.b=1`: one override, not a list
        overrides = [overrides]
    if isinstance(overrides, Mapping):
        overrides = dict(overrides)

    def checked() -> dict[str, Any]:
        tree = copy.deepcopy(dict(params))
        items = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides or [])
        for key, value in items:
            set_key(tree, key, value)
        validate(tree, schema_path, source)
        cross_check(tree, source)
        return tree

    return params_cache.validated(dict(params), overrides, schema_path, checked)


# Datasets with a seeded test split (``heldout_<dataset>``): the training
# datasets a fine-tuned model may name, and a classifier's held-out suites.
HELDOUT_DATASETS = ("davidson2017", "founta2018", "hateval2019_es", "haspeede2020", "fortuna2019", "hatexplain")
SUITE_GROUPS = ("hatecheck", "mhc", "perturbed_hatecheck", "perturbed_mhc", "extended", "gpt_hatecheck")


def cross_check(params: Mapping[str, Any], source: str) -> None:
    """What a schema cannot say: names that must refer to other sections
    (the active profile, each model's scheme, recipe, role, datasets, suites)."""
    errors = []
    profiles = params.get("profiles", {})
    if params.get("profile") not in profiles:
        errors.append(f"profile: {params.get('profile')!r} is not a profile (profiles: {', '.join(profiles)})")
    datasets = set(params.get("datasets", {}))
    schemes = set(params.get("preprocessing", {}).get("schemes", {}))
    recipes = set(params.get("training", {}).get("recipes", {}))
    languages = params.get("datasets", {}).get("mhc", {}).get("languages", [])
    suites = set(SUITE_GROUPS) | {f"mhc_{lang}" for lang in languages}
    functional = {"hatecheck", "mhc"} | {f"mhc_{lang}" for lang in languages}  # what an llm model is asked about
    backends = params.get("llm", {}).get("backends", {})
    for name, model in params.get("models", {}).items():
        where = f"models.{name}"
        if is_llm(model):
            if model.get("backend") not in backends:
                errors.append(
                    f"{where}.backend: {model.get('backend')!r} is not a backend (llm.backends: {', '.join(sorted(backends)) or 'none'})"
                )
            elif not backends[model["backend"]].get("enabled"):
                errors.append(f"{where}.backend: {model['backend']!r} is disabled (llm.backends.{model['backend']}.enabled: false)")
            for sname in model.get("suites", []):
                if sname not in functional:
                    errors.append(
                        f"{where}.suites: {sname!r} is not a functional suite an llm model is asked about "
                        f"(suites: {', '.join(sorted(functional))})"
                    )
            continue
        if is_classifier(model):
            heldout = {f"heldout_{d}" for d in HELDOUT_DATASETS if d in datasets}
            for sname in model.get("suites", []):
                if sname not in suites | heldout:
                    errors.append(f"{where}.suites: {sname!r} is not a suite (suites: {', '.join(sorted(suites))}, heldout_<dataset>)")
            for d in model.get("trained_on", []):
                if d not in datasets:
                    errors.append(f"{where}.trained_on: {d!r} is not a dataset (datasets: {', '.join(sorted(datasets))})")
            classes = model.get("classes")
            if classes is not None:
                unknown = [h for h in model.get("hateful", []) if h not in classes]
                if unknown:
                    errors.append(f"{where}.hateful: {unknown} not among its classes {classes}")
            continue
        if model.get("scheme") not in schemes:
            errors.append(f"{where}.scheme: {model.get('scheme')!r} is not a scheme (preprocessing.schemes: {', '.join(sorted(schemes))})")
        if model.get("recipe") not in recipes:
            errors.append(f"{where}.recipe: {model.get('recipe')!r} is not a recipe (training.recipes: {', '.join(sorted(recipes))})")
        for d in model.get("train", []):
            if d not in datasets:
                errors.append(f"{where}.train: {d!r} is not a dataset (datasets: {', '.join(sorted(datasets))})")
        for sname in model.get("suites", []):
            if sname not in suites:
                errors.append(f"{where}.suites: {sname!r} is not a suite (suites: {', '.join(sorted(suites))})")
        lacking = {
            pname: sorted(prof.get("base_models", {}))
            for pname, prof in profiles.items()
            if isinstance(prof, Mapping) and prof.get("base_models") and model.get("role") not in prof["base_models"]
        }
        if lacking:
            roles = sorted({r for rs in lacking.values() for r in rs})
            errors.append(
                f"{where}.role: {model.get('role')!r} has no base model in profiles {', '.join(lacking)} (roles: {', '.join(roles)})"
            )
    for pname, prof in profiles.items():
        gpt = prof.get("gpt_hatecheck") if isinstance(prof, Mapping) else None
        if not gpt:
            continue
        if gpt.get("generator") not in backends:
            errors.append(
                f"profiles.{pname}.gpt_hatecheck.generator: {gpt.get('generator')!r} is not a backend "
                f"(llm.backends: {', '.join(sorted(backends)) or 'none'})"
            )
        judge = gpt.get("judge")
        if judge != "nli" and (judge not in backends or backends[judge].get("kind") != "local"):
            errors.append(
                f"profiles.{pname}.gpt_hatecheck.judge: {judge!r} is neither 'nli' (expansion.nli.model) "
                f"nor a local backend of llm.backends"
            )
    scorers = ((params.get("bias") or {}).get("crows_pairs") or {}).get("scorers") or {}
    for pname, prof in profiles.items():  # the CrowS-Pairs scorers each profile runs
        for sname in (prof.get("crows_scorers") or []) if isinstance(prof, Mapping) else []:
            if sname not in scorers:
                errors.append(
                    f"profiles.{pname}.crows_scorers: {sname!r} is not a scorer (bias.crows_pairs.scorers: {', '.join(scorers) or 'none'})"
                )
    hx = (params.get("bias") or {}).get("hatexplain") or {}
    variants = [("bias.hatexplain.supervised", hx["supervised"])] if hx.get("supervised") else []
    variants += [(f"bias.hatexplain.two_class[{i}]", e) for i, e in enumerate(hx.get("two_class") or [])]
    models = params.get("models", {})
    for where, entry in variants:  # models trained as variants of another model (BERT-HateXplain, the 2-class bias models)
        if entry.get("from_model") not in models or not is_finetuned(models[entry["from_model"]]):
            errors.append(
                f"{where}.from_model: {entry.get('from_model')!r} is not a fine-tuned model (models: {', '.join(sorted(models))})"
            )
        if entry.get("recipe") not in recipes:
            errors.append(f"{where}.recipe: {entry.get('recipe')!r} is not a recipe (training.recipes: {', '.join(sorted(recipes))})")
        if entry.get("model") in models:
            errors.append(f"{where}.model: {entry.get('model')!r} is already a model of `models` (pick another name)")
    for name, settings in params.get("datasets", {}).items():
        split = settings.get("split") if isinstance(settings, Mapping) else None
        if isinstance(split, Mapping) and abs(sum(split.values()) - 1) > 1e-9:
            shares = " + ".join(f"{k} {v:g}" for k, v in split.items())
            errors.append(f"datasets.{name}.split: the fractions must sum to 1 ({shares} = {sum(split.values()):g})")
    if errors:
        raise ConfigError(one_line(source, errors))


def profile_named(params: Mapping[str, Any], name: str | None = None) -> Profile:
    """Profile ``name`` of a whole params tree (None: the active one): the
    one place that picks ``profiles[name]``."""
    name = params["profile"] if name is None else name
    profiles = params["profiles"]
    if name not in profiles:
        raise ConfigError(f"params: profile {name!r} is not defined (profiles: {', '.join(sorted(profiles))})")
    return Profile(name, profiles[name])


def profile(params: Mapping[str, Any]) -> Profile:
    """The active profile of a whole params tree."""
    return profile_named(params)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
