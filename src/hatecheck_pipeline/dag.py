"""The one stage registry both runners are built from.

``workflow/rules/*.smk`` turn these stages into Snakemake rules and
``hatecheck-pipeline dag write`` renders ``dvc.yaml`` from them, so the two
DAGs agree by construction (and ``tests/test_dag.py`` checks they do).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from . import paths
from .config import get_key
from .datasets import RAW_INPUTS, RAW_SOURCE
from .raw import SOURCES_FILE, load_registry, raw_files

PACKAGE = "src/hatecheck_pipeline"


def code(*modules: str) -> list[str]:
    """Source files a stage runs (its code dependencies)."""
    return [f"{PACKAGE}/{m}.py" for m in modules]


@dataclass(frozen=True)
class Stage:
    name: str
    phase: str
    cmd: str
    deps: tuple[str, ...]
    outs: tuple[str, ...]
    params: tuple[str, ...] = ()  # dotted keys of params.yaml
    file_params: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (other params file, keys)
    metrics: tuple[str, ...] = ()  # JSON outputs DVC tracks as metrics (not cached)
    plots: tuple[str, ...] = ()
    resources: tuple[tuple[str, int], ...] = ()
    threads: int = 1  # CPU threads the command uses (Snakemake `threads`; not in dvc.yaml)
    persist: tuple[str, ...] = ()  # outputs kept between runs (checkpoints)
    directories: tuple[str, ...] = ()  # outputs that are directories

    @property
    def snakemake_outs(self) -> list:
        """Outputs as Snakemake sees them: folders wrapped by the caller in
        ``directory()``; persisted checkpoints left out, because Snakemake
        deletes a rule's outputs before running it (DVC keeps them)."""
        return [o for o in self.all_outs if o not in self.persist]

    @property
    def log(self) -> str:
        return f"logs/{self.name}.log"

    @property
    def all_outs(self) -> tuple[str, ...]:
        return self.outs + self.metrics + self.plots

    def param_values(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The values of every parameter the stage declares (Snakemake
        re-runs a rule when these change; DVC tracks the same keys)."""
        values = {key: get_key(params, key) for key in self.params}
        for file, keys in self.file_params:
            data = load_registry() if file == SOURCES_FILE else {}
            values.update({f"{file}:{k}": data[k] for k in keys})
        return values


def stage(name: str, phase: str, cmd: str, deps, outs, **kw) -> Stage:
    as_tuple = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
    return Stage(name, phase, cmd, tuple(dict.fromkeys(deps)), tuple(outs), **as_tuple)


# --------------------------------------------------------------------------
# Data phases


def datasets_in_use(params: Mapping[str, Any]) -> dict[str, set[str]]:
    """(dataset -> schemes) needed by the configured models and suites."""
    needed: dict[str, set[str]] = {}
    for model in params["models"].values():
        for name in [*model["train"], *model["suites"]]:
            if name in RAW_SOURCE:
                needed.setdefault(name, set()).add(model["scheme"])
    return needed


def data_stages(params: Mapping[str, Any]) -> list[Stage]:
    out: list[Stage] = []
    registry = load_registry()
    for source in registry:
        out.append(
            stage(
                f"ingest_{source}",
                "ingest",
                f"hatecheck-pipeline ingest {source}",
                deps=code("raw"),
                outs=[str(f.path) for f in raw_files(source, registry)],
                file_params=((SOURCES_FILE, (source,)),),
                params=["ingest.mirror"],
            )
        )
    validation = params["validation"]
    for dataset in RAW_SOURCE:
        ds_params = params["datasets"][dataset]
        out.append(
            stage(
                f"prepare_{dataset}",
                "prepare",
                f"hatecheck-pipeline prepare {dataset}",
                deps=[*RAW_INPUTS[dataset](ds_params), *code("prepare", "datasets", "io", "raw")],
                outs=[paths.interim_table(dataset), paths.quarantine(dataset)],
                metrics=[paths.counts(dataset)],
                params=[f"datasets.{dataset}"],
            )
        )
        keys = ["validation.class_balance_tolerance"]
        keys += [f"validation.{group}.{dataset}" for group in ("published_balance", "suite_counts") if dataset in validation[group]]
        out.append(
            stage(
                f"validate_{dataset}",
                "validate",
                f"hatecheck-pipeline validate {dataset}",
                deps=[paths.interim_table(dataset), paths.counts(dataset), *code("validate")],
                outs=[paths.validation_md(dataset)],
                metrics=[paths.validation_json(dataset)],
                params=keys,
            )
        )
    for dataset, schemes in sorted(datasets_in_use(params).items()):
        for scheme in sorted(schemes):
            out.append(
                stage(
                    f"preprocess_{dataset}_{scheme}",
                    "preprocess",
                    f"hatecheck-pipeline preprocess {dataset} {scheme}",
                    deps=[paths.interim_table(dataset), paths.validation_json(dataset), *code("preprocess", "textprep")],
                    outs=[paths.processed(dataset, scheme)],
                    params=[f"preprocessing.schemes.{scheme}"],
                )
            )
    return out


# Later phases, in DAG order: hatecheck_pipeline.phases.<name>.stages(params).
LATER_PHASES = ["models", "expand", "evaluate", "bias", "report"]


def phase_builders() -> list[Callable[[Mapping[str, Any]], list[Stage]]]:
    import importlib

    return [data_stages] + [importlib.import_module(f"hatecheck_pipeline.phases.{p}").stages for p in LATER_PHASES]


def build_stages(params: Mapping[str, Any]) -> list[Stage]:
    stages = [s for builder in phase_builders() for s in builder(params)]
    names = [s.name for s in stages]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"duplicate stage names: {sorted(dupes)}")
    producers: dict[str, str] = {}
    for s in stages:
        for o in s.all_outs:
            if o in producers:
                raise ValueError(f"{o} is produced by both {producers[o]} and {s.name}")
            producers[o] = s.name
    return stages


def stage_by_name(params: Mapping[str, Any], name: str) -> Stage:
    for s in build_stages(params):
        if s.name == name:
            return s
    raise KeyError(f"no stage named {name!r} in the pipeline (see `hatecheck-pipeline dag list`)")


def final_targets(params: Mapping[str, Any]) -> list[str]:
    """Everything the pipeline produces (Snakemake's ``rule all``)."""
    return [o for s in build_stages(params) for o in s.snakemake_outs]


# How `dvc plots show/diff` draws each plot file (by file name): a
# horizontal bar per row of the long CSV, the value on x.
PLOT_AXES: dict[str, dict[str, str]] = {
    "hatecheck_functionality.csv": {"template": "bar_horizontal", "x": "accuracy", "y": "functionality",
                                    "title": "HateCheck accuracy (%) per functional test", "x_label": "accuracy (%)"},
    "mhc_macro_f1.csv": {"template": "bar_horizontal", "x": "macro_f1", "y": "language",
                         "title": "MHC macro F1 per language", "x_label": "macro F1"},
    "zero_many_shot.csv": {"template": "bar_horizontal", "x": "macro_f1", "y": "language",
                           "title": "MHC macro F1, zero-shot vs many-shot languages", "x_label": "macro F1"},
    "expanded_functionality.csv": {"template": "bar_horizontal", "x": "accuracy", "y": "functionality",
                                   "title": "Accuracy (%) per functional test, original vs expanded suite", "x_label": "accuracy (%)"},
    "communities.csv": {"template": "bar_horizontal", "x": "bpsn_auc", "y": "community",
                        "title": "BPSN AUC per community (low = false positives on its non-hateful posts)", "x_label": "BPSN AUC"},
}


def plot_entry(path: str) -> dict[str, Any]:
    """A dvc.yaml plots entry: not cached, with its axes when known."""
    return {path: {"cache": False, **PLOT_AXES.get(path.rsplit("/", 1)[-1], {})}}


def to_dvc(stages: list[Stage]) -> dict[str, Any]:
    """Render the stages as a dvc.yaml document."""
    doc: dict[str, Any] = {}
    for s in stages:
        entry: dict[str, Any] = {"cmd": s.cmd, "deps": list(s.deps)}
        params: list[Any] = list(s.params)
        params += [{file: list(keys)} for file, keys in s.file_params]
        if params:
            entry["params"] = params
        outs: list[Any] = [{o: {"persist": True}} if o in s.persist else o for o in s.outs]
        if outs:
            entry["outs"] = outs
        if s.metrics:
            entry["metrics"] = [{m: {"cache": False}} for m in s.metrics]
        if s.plots:
            entry["plots"] = [plot_entry(p) for p in s.plots]
        doc[s.name] = entry
    return {"stages": doc}
