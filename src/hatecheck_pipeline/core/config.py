"""The one loader of ``params.yaml``.

Every stage receives plain values selected from the validated parameters;
no other module opens ``params.yaml``.
"""

from __future__ import annotations

import copy
import json
import os
import re
from functools import reduce
from pathlib import Path
from typing import Any, Mapping

import jsonschema
import yaml

from hatecheck_pipeline.core.errors import PipelineError

PARAMS_FILE = "params.yaml"
SCHEMA_FILE = "workflow/schemas/params.schema.yaml"
OVERRIDES_ENV = "HATECHECK_PIPELINE_SET"  # JSON {dotted key: value}, set by the Snakefile from --config


class ConfigError(PipelineError, ValueError):
    """Invalid parameters: names the file and the failing key."""


def project_root(start: Path | None = None) -> Path:
    """The directory holding ``params.yaml`` (the current one by default)."""
    return (start or Path.cwd()).resolve()


# YAML 1.2's plain floats that YAML 1.1 (PyYAML) reads as strings: an
# exponent without a dot (``3e-05``, ``1E5``), as DVC writes a float into
# params.yaml (`dvc exp run -S`, `dvc params modify`) and dvc.lock.
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's C parser where it is built), reading
    YAML 1.2's exponent floats as floats."""


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def read_yaml(path: str | Path) -> Any:
    r"""A YAML file, parsed safely (libyaml's C loader where it is built:
    a whole report's dvc.lock is ~0.5 MB), a plain ``3e-05`` a float as
    DVC means it.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
    ...     _ = fh.write('lr: 3e-05\nquoted: "3e-05"\nold: 5.0e-5\n')
    >>> read_yaml(fh.name)
    {'lr': 3e-05, 'quoted': '3e-05', 'old': 5e-05}
    """
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_Loader)


def with_yaml12_floats(tree: Any, reference: Any) -> Any:
    """``tree`` (Snakemake's parse of params.yaml, YAML 1.1: ``3e-05`` a
    string) with each string that ``reference`` (the same file read by
    :func:`read_yaml`) holds as that float at the same place made the float;
    every other value, overrides included, as it is.

    >>> with_yaml12_floats({"lr": "3e-05", "name": "x", "n": [1, "2e3"]}, {"lr": 3e-05, "name": "x", "n": [1, 2000.0]})
    {'lr': 3e-05, 'name': 'x', 'n': [1, 2000.0]}
    """
    if isinstance(tree, dict) and isinstance(reference, dict):
        return {k: with_yaml12_floats(v, reference.get(k)) for k, v in tree.items()}
    if isinstance(tree, list) and isinstance(reference, list) and len(tree) == len(reference):
        return [with_yaml12_floats(v, r) for v, r in zip(tree, reference)]
    if isinstance(tree, str) and isinstance(reference, float) and _EXPONENT_FLOAT.match(tree) and float(tree) == reference:
        return reference
    return tree


def read_dvc_yaml(path: str | Path) -> Any:
    """A YAML file as DVC reads and writes it: ruamel.yaml's safe loader,
    YAML 1.2 rules (DVC's own parser, C-accelerated by ruamel.yaml.clib).
    For ``dvc.lock``: DVC writes ``5.0e-5`` as ``5e-05``, a float in YAML 1.2
    but a string under the YAML 1.1 rules of :func:`read_yaml`."""
    from ruamel.yaml import YAML

    with open(path, encoding="utf-8") as fh:
        return YAML(typ="safe").load(fh)


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


def get_key(tree: Mapping, dotted: str) -> Any:
    """Value at a dotted key; a clear error names the missing part.

    >>> get_key({"a": {"b": 1}}, "a.b")
    1
    """
    try:
        return reduce(lambda node, part: node[part], dotted.split("."), tree)
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"params: key {dotted!r} is not set") from exc


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
    params = read_yaml(path) or {}
    return apply_and_validate(params, overrides, Path(schema) if schema else path.parent / SCHEMA_FILE, str(path))


def apply_and_validate(
    params: Mapping[str, Any],
    overrides: list[str] | Mapping[str, Any] | None,
    schema_path: Path,
    source: str,
) -> dict[str, Any]:
    params = copy.deepcopy(dict(params))
    if isinstance(overrides, str):  # `--config set=a.b=1`: one override, not a list
        overrides = [overrides]
    items = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides or [])
    for key, value in items:
        set_key(params, key, value)
    validate(params, schema_path, source)
    cross_check(params, source)
    return params


def is_llm(spec: Mapping[str, Any]) -> bool:
    """Whether a ``models.<name>`` entry is a prompted LLM (``kind: llm``:
    no training, no text scheme) rather than a fine-tuned classifier."""
    return spec.get("kind") == "llm"


# Datasets with a seeded test split (``heldout_<dataset>``): the training
# datasets a fine-tuned model may name, and a classifier's held-out suites.
HELDOUT_DATASETS = ("davidson2017", "founta2018", "hateval2019_es", "haspeede2020", "fortuna2019", "hatexplain")


def model_kind(spec: Mapping[str, Any]) -> str:
    """``finetuned`` (trained here; the default), ``llm`` or the kind of a
    classifier trained elsewhere (models/kinds/).

    >>> model_kind({"role": "bert"}), model_kind({"kind": "onnx"})
    ('finetuned', 'onnx')
    """
    return str(spec.get("kind") or "finetuned")


def is_finetuned(spec: Mapping[str, Any]) -> bool:
    """Whether the pipeline trains the model (a train stage, a text scheme)."""
    return model_kind(spec) == "finetuned"


def is_classifier(spec: Mapping[str, Any]) -> bool:
    """Whether the model is a classifier trained elsewhere, tested as it
    is: any kind but ``finetuned`` and ``llm`` (the schema holds the
    classifier kinds, the models layer's registry of kinds loads them).

    >>> is_classifier({"kind": "onnx"}), is_classifier({"kind": "llm"}), is_classifier({"role": "bert"})
    (True, False, False)
    """
    return model_kind(spec) not in ("finetuned", "llm")


def case_cap_key(spec: Mapping[str, Any], expanded: bool = False) -> str:
    """The profile key capping the cases a model predicts per suite (its
    predict stage draws them; score and bias stages read the same draw):
    ``llm_max_cases_per_suite`` for a prompted LLM, else
    ``max_expanded_cases_per_suite`` for an expanded suite and
    ``max_cases_per_suite`` for the others.

    >>> case_cap_key({"kind": "llm"}), case_cap_key({"role": "bert"}), case_cap_key({"role": "xlmt"}, expanded=True)
    ('llm_max_cases_per_suite', 'max_cases_per_suite', 'max_expanded_cases_per_suite')
    """
    if is_llm(spec):
        return "llm_max_cases_per_suite"
    return "max_expanded_cases_per_suite" if expanded else "max_cases_per_suite"


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


class Profile(dict):
    """The active profile as one value: its name (``name``) and its
    settings (base models, budgets), the mapping itself.

    A stage's function receives a profile holding only the keys its stage
    declares it reads (``core.stage.profile_params``; ``stage`` names the
    stage): reading any other key (``[]``, ``get`` or ``in``) raises, so
    that no stage can depend on a profile setting that DVC and Snakemake
    would not re-run it for. Without ``stage`` it is the whole profile, an
    ordinary mapping.

    >>> p = Profile("smoke", {"max_length": 64}, stage="train_X")
    >>> p.name, p["max_length"]
    ('smoke', 64)
    >>> p.get("max_epochs")
    Traceback (most recent call last):
    ...
    hatecheck_pipeline.core.config.ConfigError: stage train_X: reads the profile key 'max_epochs', which it does not declare (declared: max_length); add it to the keys its stage passes to profile_params, so that a change of it re-runs the stage
    """

    def __init__(self, name: str, values: Mapping[str, Any], stage: str | None = None) -> None:
        super().__init__(values)
        self.name = name
        self.stage = stage

    def __repr__(self) -> str:
        return f"Profile({self.name!r}, {dict.__repr__(self)}{'' if self.stage is None else f', stage={self.stage!r}'})"

    def _undeclared(self, key: Any) -> ConfigError:
        return ConfigError(
            f"stage {self.stage}: reads the profile key {key!r}, which it does not declare "
            f"(declared: {', '.join(sorted(self)) or 'none'}); add it to the "
            "keys its stage passes to profile_params, so that a change of it re-runs the stage"
        )

    def __missing__(self, key: Any) -> Any:
        if self.stage is None:
            raise KeyError(key)
        raise self._undeclared(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if self.stage is None:
            return default
        raise self._undeclared(key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        if self.stage is None:
            return False
        raise self._undeclared(key)


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
