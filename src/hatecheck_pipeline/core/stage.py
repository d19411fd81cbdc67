"""The stage model: one object holds everything about a stage.

A :class:`Stage` names its inputs and outputs, the ``params.yaml`` keys it
reads (each bound to an argument of its function), its resources and the
function that runs it (``run="module:function"``). The function is called by
:func:`call` with exactly those arguments: paths as :class:`~pathlib.Path`
(lists and mappings of paths keep their shape), parameter values as plain
values or, for a :class:`Bound` argument (the active profile, the
bootstrap), one typed value built from its keys, constants (a dataset's or
model's name) as given; an input or param named in ``deps_only`` is a
dependency only (tracked by both runners, never passed). Nothing else
lists a stage's paths or params: the Snakemake rules, ``dvc.yaml`` and the
``hatecheck-pipeline run STAGE`` command are all rendered from this object.
"""

from __future__ import annotations

import copy
import importlib
import inspect
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from hatecheck_pipeline.core.profile import ConfigError, Profile
from hatecheck_pipeline.core.yamlio import read_yaml

OUT_KINDS = ("outs", "metrics", "plots")

# Wall-clock limit in minutes (Snakemake resource ``runtime``, Slurm's time
# limit) of a stage that declares none: per phase, with room to spare on the
# embedded profile. Train and predict take theirs from the active profile.
PHASE_RUNTIME = {
    "ingest": 30,
    "prepare": 30,
    "validate": 30,
    "preprocess": 30,
    "convert": 30,
    "train": 240,
    "predict": 120,
    "evaluate": 60,
    "expand": 120,
    "audits": 120,
    "llm": 240,
    "report": 30,
}
DEFAULT_RUNTIME = 60
# Each stage's code fingerprint (core.codedeps.fingerprint): the one code
# dependency both runners track, kept in git like dvc.yaml.
CODE_DIR = "code"


@dataclass(frozen=True)
class Out:
    """One output: its DVC kind (outs, metrics, plots), whether it is a
    working folder the stage keeps between runs (``persist``: training
    checkpoints, the last epoch's weights and optimiser state, for resuming
    after a kill; emptied once the model is written) and whether it is a folder. A persisted folder is an output of
    neither runner: Snakemake would delete it before re-running the rule,
    and DVC would cache it and `dvc push` it to the team's remote."""

    path: str
    kind: str = "outs"
    persist: bool = False
    directory: bool = False
    plot: tuple[tuple[str, str], ...] = ()  # dvc plots axes (template, x, y, title, ...)
    cache: bool = True  # False: a small file kept in git, not in the DVC cache (as metrics and plots are)

    def __post_init__(self) -> None:
        if self.kind not in OUT_KINDS:
            raise ValueError(f"{self.path}: output kind {self.kind!r} is not one of {OUT_KINDS}")


def out(path: str, *, persist: bool = False, directory: bool = False) -> Out:
    return Out(path, "outs", persist, directory)


def tracked(path: str) -> Out:
    """A small output kept in git, not in the DVC cache (``cache: false``),
    as the metrics files are: a CSV a reader opens beside them."""
    return Out(path, "outs", cache=False)


def metric(path: str) -> Out:
    """A JSON metrics file (``dvc metrics``; git-tracked, not cached)."""
    return Out(path, "metrics")


def plot(path: str, **axes: str) -> Out:
    """A CSV plot file (``dvc plots``) with its axes."""
    return Out(path, "plots", plot=tuple(axes.items()))


def flatten(value: Any) -> Iterator[str]:
    """The paths of one named input (a path, a list or a mapping of paths)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from flatten(v)
    else:
        for v in value:
            yield from flatten(v)


def as_paths(value: Any) -> Any:
    if isinstance(value, str):
        return Path(value)
    if isinstance(value, Mapping):
        return {k: as_paths(v) for k, v in value.items()}
    return [as_paths(v) for v in value]


@dataclass(frozen=True)
class Stage:
    name: str
    phase: str
    run: str  # "hatecheck_pipeline.<layer>.<module>:<function>"
    inputs: Mapping[str, Any] = field(default_factory=dict)  # argument -> path(s)
    outputs: Mapping[str, "Out | tuple[Out, ...]"] = field(default_factory=dict)  # argument -> output(s)
    # argument -> dotted key ("file:key" for another YAML), or a Bound: one
    # typed value from several keys (the profile: profile_params)
    params: Mapping[str, "str | Bound"] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)  # argument -> constant (names, never paths)
    threads: int = 1  # CPU threads the function uses
    mem_mb: int = 1000
    gpu: int = 0
    runtime: int | None = None  # minutes; None: the phase's default (PHASE_RUNTIME)
    code: tuple[str, ...] = ()  # source files the function runs (computed by the registry; tracked through `fingerprint`)
    # Declared inputs or params that are a dependency only: both runners track
    # them like any other (an input is made first, a change re-runs the stage)
    # but the function does not take them (a data-quality result that must pass
    # first, a resource file the function reads through the package).
    deps_only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        groups = [set(self.inputs), set(self.outputs), set(self.params), set(self.args)]
        seen: set[str] = set()
        for g in groups:
            if seen & g:
                raise ValueError(f"stage {self.name}: argument(s) {sorted(seen & g)} declared twice")
            seen |= g
        unknown = [n for n in self.deps_only if n not in self.inputs and n not in self.params]
        if unknown:
            raise ValueError(f"stage {self.name}: dependency-only argument(s) {unknown} are neither inputs nor params")
        if self.runtime is None:
            object.__setattr__(self, "runtime", PHASE_RUNTIME.get(self.phase, DEFAULT_RUNTIME))

    # ---- what the runners see -------------------------------------------------
    @property
    def module(self) -> str:
        return self.run.split(":", 1)[0]

    @property
    def function(self) -> str:
        return self.run.split(":", 1)[1]

    @property
    def cmd(self) -> str:
        return f"hatecheck-pipeline run {self.name}"

    @property
    def data_deps(self) -> list[str]:
        return list(dict.fromkeys(p for v in self.inputs.values() for p in flatten(v)))

    @property
    def fingerprint(self) -> str:
        """The file listing the stage's code with the hash of each module's
        normalised source (``code/<stage>.txt``)."""
        return f"{CODE_DIR}/{self.name}.txt"

    @property
    def deps(self) -> list[str]:
        """Every file the stage reads: its inputs, then its code, as its
        fingerprint file (a stage built without its code has none)."""
        return list(dict.fromkeys([*self.data_deps, *([self.fingerprint] if self.code else [])]))

    @property
    def out_list(self) -> list[Out]:
        return [o for v in self.outputs.values() for o in (v if isinstance(v, tuple) else (v,))]

    @property
    def all_outs(self) -> list[str]:
        return [o.path for o in self.out_list]

    def outs_of(self, kind: str) -> list[Out]:
        return [o for o in self.out_list if o.kind == kind]

    @property
    def snakemake_outs(self) -> list[Out]:
        """Outputs both runners track (Snakemake's rule outputs, dvc.yaml's
        outs): persisted working folders (checkpoints) are left out."""
        return [o for o in self.out_list if not o.persist]

    @property
    def log(self) -> str:
        return f"logs/{self.name}.log"

    @property
    def param_keys(self) -> list[str]:
        return list(dict.fromkeys(k for v in self.params.values() for k in ((v,) if isinstance(v, str) else v)))

    def param_values(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """dotted key -> value for every declared key (Snakemake re-runs a rule
        when these change; DVC tracks the same keys)."""
        return {key: resolve_param(params, key) for key in self.param_keys}

    def arguments(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments :func:`call` passes to the function (every
        declared one but the dependencies only, :attr:`deps_only`)."""
        kwargs: dict[str, Any] = dict(self.args)
        kwargs.update({k: as_paths(v) for k, v in self.inputs.items() if k not in self.deps_only})
        kwargs.update({k: [Path(o.path) for o in v] if isinstance(v, tuple) else Path(v.path) for k, v in self.outputs.items()})
        kwargs.update({arg: argument_value(params, key, self.name) for arg, key in self.params.items() if arg not in self.deps_only})
        return kwargs


PROFILES = "profiles"


@dataclass(frozen=True)
class Bound:
    """One argument of a stage's function built from several params keys as
    one typed value: ``make({key: value}, stage)``, the values in the order
    of ``keys``. Each key is declared to both runners like any other (so a
    change of any of them re-runs the stage); iterating a binding gives its
    keys. The active profile (:func:`profile_params`) and the bootstrap
    (``evaluation.metrics.Bootstrap``) travel this way."""

    keys: tuple[str, ...]
    make: Callable[[dict[str, Any], str], Any]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys)

    def value(self, params: Mapping[str, Any], stage: str = "") -> Any:
        return self.make({k: resolve_param(params, k) for k in self.keys}, stage)


def declared_profile(values: Mapping[str, Any], stage: str) -> Profile:
    """The :class:`~hatecheck_pipeline.core.profile.Profile` a stage's function
    receives from ``profile`` and ``profiles.<active>.<key>`` values, with
    only those keys (a dotted key gives the nested setting with only that
    part).

    >>> p = declared_profile({"profile": "smoke", "profiles.smoke.base_models.bert": "tiny"}, "train_B")
    >>> p.name, dict(p)
    ('smoke', {'base_models': {'bert': 'tiny'}})
    """
    active = values["profile"]
    head = f"{PROFILES}.{active}."
    settings: dict[str, Any] = {}
    for k, v in values.items():
        if k == "profile":
            continue
        if not k.startswith(head):
            raise ValueError(f"stage {stage}: the profile argument binds {k!r}, not a key of the active profile {active!r}")
        *parents, last = k[len(head) :].split(".")
        node = settings
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = copy.deepcopy(v)
    return Profile(active, settings, stage)


def profile_params(params: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Bound]:
    """The ``profile`` argument of a stage that reads the active profile: one
    :class:`~hatecheck_pipeline.core.profile.Profile` (its name and the
    settings the stage reads) bound to ``profile`` and
    ``profiles.<active>.<key>`` for each key its function reads (a dotted
    key reaches into a setting: ``base_models.xlmt``), never the whole
    ``profiles`` section nor the whole profile: editing an inactive
    profile, or a key of the active one that the stage does not read,
    leaves the stage up to date, while a switch of profile re-runs it.
    dvc.yaml declares ``profiles.${profile}.<key>`` (DVC resolves it from
    params.yaml, see ``pipeline.registry.to_dvc``); Snakemake's params files
    hold the same keys. Reading another key of the profile is an error.

    >>> list(profile_params({"profile": "smoke"}, ["max_length", "base_models.bert"])["profile"])
    ['profile', 'profiles.smoke.max_length', 'profiles.smoke.base_models.bert']
    """
    return {"profile": Bound(("profile", *(f"{PROFILES}.{params['profile']}.{k}" for k in dict.fromkeys(keys))), declared_profile)}


def argument_value(params: Mapping[str, Any], key: "str | Bound", stage: str = "") -> Any:
    """The value of one declared parameter for the stage's function: a
    dotted key's value, or the typed value of a :class:`Bound`."""
    if isinstance(key, Bound):
        return key.value(params, stage)
    return resolve_param(params, key)


def get_key(tree: Mapping, dotted: str) -> Any:
    """Value at a dotted key; a clear error names the missing part.

    >>> get_key({"a": {"b": 1}}, "a.b")
    1
    """
    try:
        return reduce(lambda node, part: node[part], dotted.split("."), tree)
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"params: key {dotted!r} is not set") from exc


def resolve_param(params: Mapping[str, Any], key: str) -> Any:
    """A dotted key of the params tree, or ``file:key`` of another YAML file."""
    if ":" in key:
        file, dotted = key.split(":", 1)
        return copy.deepcopy(get_key(read_yaml_once(file), dotted))
    return get_key(params, key)


def read_yaml_once(path: str | Path) -> Any:
    """:func:`read_yaml` memoised in this process on the file's path, size
    and modification time. The parsed object is shared: callers must not
    modify it (:func:`resolve_param` copies what it returns). The params a
    stage reads from a resource file (``raw_sources.yaml:<dataset>``, 41 kB,
    one per ingest stage) then parse it once per registry build instead of
    once per stage: every ``snakemake`` call paid ~0.2 s for ten parses.
    (Here, not in ``core.yamlio``: this module is no stage's code
    dependency, so the change re-runs nothing.)"""
    file = Path(path).resolve()
    st = file.stat()
    return _read_yaml_at(str(file), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=32)
def _read_yaml_at(path: str, size: int, mtime_ns: int) -> Any:
    return read_yaml(path)


def function_of(stage: Stage) -> Callable[..., Any]:
    module = importlib.import_module(stage.module)
    try:
        return getattr(module, stage.function)
    except AttributeError as exc:
        raise ValueError(f"stage {stage.name}: {stage.module} has no function {stage.function!r}") from exc


def signature_mismatch(stage: Stage) -> str | None:
    """Why the function cannot take exactly the stage's declared arguments
    (None when it can): an undeclared required argument, a declared one the
    function does not accept, or a dependency only (:attr:`Stage.deps_only`)
    that it does accept (it would never be passed)."""
    sig = inspect.signature(function_of(stage))
    names = {n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    required = {n for n in names if sig.parameters[n].default is inspect.Parameter.empty}
    declared = (set(stage.args) | set(stage.inputs) | set(stage.outputs) | set(stage.params)) - set(stage.deps_only)
    problems = []
    if declared - names:
        problems.append(f"declares {sorted(declared - names)} that {stage.run} does not take")
    if names & set(stage.deps_only):
        problems.append(f"declares {sorted(names & set(stage.deps_only))} a dependency only, which {stage.run} takes")
    if required - declared:
        problems.append(f"{stage.run} needs {sorted(required - declared)} that the stage does not declare")
    return "; ".join(problems) or None


def call(stage: Stage, params: Mapping[str, Any]) -> Any:
    """Run the stage's function with exactly its declared arguments."""
    problem = signature_mismatch(stage)
    if problem:
        raise TypeError(f"stage {stage.name}: {problem}")
    return function_of(stage)(**stage.arguments(params))
