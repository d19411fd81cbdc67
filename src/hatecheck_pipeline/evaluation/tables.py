"""The table groups and the ``tables_<group>`` stages: the papers'
tables, zero- vs many-shot, contrast consistency, original vs expanded
suites and every other score (``other``), built from the per-(model, suite)
METRICS.json files.

Each table group is declared once, in :data:`GROUPS`: the scored suites it
reads, its long tables, the function building them (and its DVC metrics
summary) and its ``dvc plots`` files with their axes. The evaluate phase
renders the ``tables_<group>`` stages from these declarations;
:func:`tables` is their stage function. The cells themselves are built in
:mod:`.cells`, :mod:`.functional_tables`, :mod:`.shot_tables` and
:mod:`.expanded_tables`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import polars as pl

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import read_json, write_csv, write_json
from hatecheck_pipeline.evaluation.cells import Source, overall_cells
from hatecheck_pipeline.evaluation.expanded_tables import comparison_pairs, expanded_tables
from hatecheck_pipeline.evaluation.functional_tables import contrast_table, hatecheck_tables, mhc_tables
from hatecheck_pipeline.evaluation.shot_tables import shot_tables, training_languages
from hatecheck_pipeline.suites.registry import Suite


def nested(cells: pl.DataFrame, *keys: str) -> dict[str, Any]:
    """Cell values as ``{key1: {key2: ... value}}`` (a DVC metrics document)."""
    out: dict[str, Any] = {}
    for r in cells.iter_rows(named=True):
        node = out
        for k in keys[:-1]:
            node = node.setdefault(str(r[k]), {})
        node[str(r[keys[-1]])] = r["value"]
    return out


def load(sources: list[Source]) -> list[tuple[Source, dict]]:
    return [(s, read_json(s.metrics)) for s in sources]


# ------------------------------------------------------- the table groups

Loaded = list[tuple[Source, dict]]
Built = tuple[dict[str, pl.DataFrame], dict[str, Any]]  # long tables, DVC metrics summary


@dataclass(frozen=True)
class Plot:
    """A ``dvc plots`` CSV drawn from one long table of its group: the rows
    ``rows`` keeps, ``columns`` renamed (long-table column -> plot column;
    the last one is y), drawn on ``axes`` (dvc.yaml: template, x, y, title,
    x_label)."""

    name: str
    table: str
    columns: Mapping[str, str]
    axes: Mapping[str, str]
    rows: Callable[[pl.DataFrame], pl.DataFrame] | None = None

    def data(self, tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
        cells = tables[self.table]
        if self.rows is not None:
            cells = self.rows(cells)
        return cells.select(pl.col(src).alias(dst) for src, dst in self.columns.items())


@dataclass(frozen=True)
class Group:
    """One table group: the scored (model, suite) it reads (``select`` over
    every scored source), its long tables, the function building them and
    its summary (``build(loaded, languages_of, summary_file, stage)``), its
    plots, and whether it reads the models' training languages (and writes
    them to ``training_languages.json``)."""

    name: str
    tables: tuple[str, ...]
    build: Callable[[Loaded, Mapping[str, list[str]], str, str], Built]
    select: Callable[[list[Source]], list[Source]]
    plots: tuple[Plot, ...] = field(default=())
    training_languages: bool = False
    replicates: bool = False  # reads the score stages' bootstrap values (intervals of differences)


def _scored_on(dataset: str, with_heldout: bool) -> Callable[[list[Source]], list[Source]]:
    """Every source of the models scored on ``dataset`` (a functional suite)
    that is on that dataset (or, ``with_heldout``, a held-out test set)."""

    def select(every: list[Source]) -> list[Source]:
        models = {s.model for s in every if s.dataset == dataset}
        return [s for s in every if s.model in models and (s.dataset == dataset or (with_heldout and s.heldout))]

    return select


def _functional(every: list[Source]) -> list[Source]:
    return [s for s in every if s.dataset in {"hatecheck", "mhc"}]


def _paired(every: list[Source]) -> list[Source]:
    # original vs expanded suite of the same model (never mixed into the
    # HateCheck / MHC tables: those read datasets hatecheck / mhc only)
    return list(dict.fromkeys(s for pair in comparison_pairs(every) for s in pair))


def _unselected(every: list[Source]) -> list[Source]:
    # every scored (model, suite) no other group reads (e.g. a model's held-out
    # set when the model is tested on no functional suite): the report shows
    # every score the pipeline computes
    taken = {s for name, g in GROUPS.items() if name != "other" for s in g.select(every)}
    return [s for s in every if s not in taken]


def _build_hatecheck(loaded: Loaded, languages_of: Mapping[str, list[str]], summary_file: str, stage: str) -> Built:
    tables = hatecheck_tables(loaded)
    return tables, {
        "by_label": nested(tables["hatecheck_t2"], "model", "row"),
        "heldout_macro_f1": nested(tables["hatecheck_heldout"], "model", "row"),
    }


def _build_mhc(loaded: Loaded, languages_of: Mapping[str, list[str]], summary_file: str, stage: str) -> Built:
    tables = mhc_tables(loaded)
    return tables, {
        "macro_f1": nested(tables["mhc_t7"], "model", "row"),
        "heldout_macro_f1": nested(tables["mhc_t6"], "model", "row"),
    }


def _build_shots(loaded: Loaded, languages_of: Mapping[str, list[str]], summary_file: str, stage: str) -> Built:
    tables = shot_tables(loaded, dict(languages_of), summary_file, stage)
    return tables, {"macro_f1": nested(tables["shots_summary"], "model", "column")}


def _build_contrast(loaded: Loaded, languages_of: Mapping[str, list[str]], summary_file: str, stage: str) -> Built:
    tables = {"contrast": contrast_table(loaded)}
    return tables, {"both_correct": nested(tables["contrast"], "model", "row")}


def _build_other(loaded: Loaded, languages_of: Mapping[str, list[str]], summary_file: str, stage: str) -> Built:
    tables = {"other_scores": overall_cells("other_scores", loaded, ["macro_f1"], row_of=lambda s: s.suite)}
    return tables, {"macro_f1": nested(tables["other_scores"], "model", "row")}


def _build_expanded(loaded: Loaded, languages_of: Mapping[str, list[str]], summary_file: str, stage: str) -> Built:
    tables = expanded_tables(loaded, summary_file, stage)
    cells = tables["expanded_functionality"]
    flips = tables["expanded_invariance"].filter(pl.col("column") == "flip_rate")
    return tables, {
        "change": nested(cells.filter(pl.col("column") == "change"), "model", "suite", "row"),
        "flip_rate": nested(flips, "model", "suite", "row"),
    }


GROUPS: dict[str, Group] = {
    g.name: g
    for g in [
        Group(
            "hatecheck",
            ("hatecheck_t1", "hatecheck_t2", "hatecheck_t3", "hatecheck_t4", "hatecheck_heldout"),
            _build_hatecheck,
            _scored_on("hatecheck", with_heldout=True),
            plots=(
                Plot(
                    "hatecheck_functionality",
                    "hatecheck_t1",
                    {"model": "model", "row": "functionality", "value": "accuracy"},
                    {
                        "template": "bar_horizontal",
                        "x": "accuracy",
                        "y": "functionality",
                        "title": "HateCheck accuracy (%) per functional test",
                        "x_label": "accuracy (%)",
                    },
                ),
            ),
        ),
        Group(
            "mhc",
            ("mhc_t1", "mhc_t2", "mhc_t3", "mhc_t6", "mhc_t7"),
            _build_mhc,
            _scored_on("mhc", with_heldout=True),
            plots=(
                Plot(
                    "mhc_macro_f1",
                    "mhc_t7",
                    {"model": "model", "row": "language", "value": "macro_f1"},
                    {
                        "template": "bar_horizontal",
                        "x": "macro_f1",
                        "y": "language",
                        "title": "MHC macro F1 per language",
                        "x_label": "macro F1",
                    },
                ),
            ),
        ),
        Group(
            "shots",
            ("shots_languages", "shots_summary", "shots_class_gap"),
            _build_shots,
            _scored_on("mhc", with_heldout=False),
            plots=(
                Plot(
                    "zero_many_shot",
                    "shots_languages",
                    {"model": "model", "row": "language", "setting": "setting", "value": "macro_f1"},
                    {
                        "template": "bar_horizontal",
                        "x": "macro_f1",
                        "y": "language",
                        "title": "MHC macro F1, zero-shot vs many-shot languages",
                        "x_label": "macro F1",
                    },
                ),
            ),
            training_languages=True,
            replicates=True,
        ),
        Group("contrast", ("contrast",), _build_contrast, _functional),
        Group(
            "expanded",
            ("expanded_functionality", "expanded_invariance"),
            _build_expanded,
            _paired,
            plots=(
                Plot(
                    "expanded_functionality",
                    "expanded_functionality",
                    {"model": "model", "suite": "suite", "row": "functionality", "column": "setting", "value": "accuracy"},
                    {
                        "template": "bar_horizontal",
                        "x": "accuracy",
                        "y": "functionality",
                        "title": "Accuracy (%) per functional test, original vs expanded suite",
                        "x_label": "accuracy (%)",
                    },
                    rows=lambda cells: cells.filter(pl.col("column") != "change"),
                ),
            ),
        ),
        Group("other", ("other_scores",), _build_other, _unselected),
    ]
}


def group(name: str) -> Group:
    if name not in GROUPS:
        raise ValueError(f"unknown table group {name!r} (known: {', '.join(GROUPS)})")
    return GROUPS[name]


def run(
    name: str,
    sources: list[Source],
    stage: str,
    languages_of: Mapping[str, list[str]] | None = None,
    *,
    table_files: Sequence[str | Path] | None = None,
    summary_file: str | Path | None = None,
    plot_files: Sequence[str | Path] | None = None,
    languages_file: str | Path | None = None,
) -> dict[str, pl.DataFrame]:
    """Build one group's tables from its sources' metrics and write them
    (long tables, summary, plots and, for a group reading the training
    languages, ``training_languages.json``); files default to the
    pipeline's paths, in the group's declaration order."""
    g = group(name)
    summary_file = str(summary_file or paths.table_summary(name))
    languages_of = dict(languages_of or {})
    tables, summary = g.build(load(sources), languages_of, summary_file, stage)
    table_files = [paths.table(t) for t in g.tables] if table_files is None else table_files
    plot_files = [paths.plot_data(p.name) for p in g.plots] if plot_files is None else plot_files
    if len(table_files) != len(g.tables) or len(plot_files) != len(g.plots):
        raise ValueError(
            f"table group {name}: {len(g.tables)} table(s) and {len(g.plots)} plot(s) to write, "
            f"given {len(table_files)} and {len(plot_files)} file(s)"
        )
    for table, file in zip(g.tables, table_files):
        write_csv(tables[table], file)
    for plot, file in zip(g.plots, plot_files):
        write_csv(plot.data(tables), file)
    if g.training_languages:
        write_json(languages_of, languages_file or paths.training_languages())
    write_json(summary, summary_file)
    return tables


def tables(
    group: str,
    stage_name: str,
    scored: Mapping[str, tuple[str, Suite]],
    metrics: Mapping[str, Path],
    long_tables: list[Path],
    summary: Path,
    plots: list[Path] | None = None,
    training: Mapping[str, list[Path]] | None = None,
    languages: Path | None = None,
    replicates: Mapping[str, Path] | None = None,
) -> str:
    """Stage ``tables_<group>``: the group's long tables, DVC metrics summary
    and plot data from the metrics files of the (model, suite) it reads.

    ``metrics`` and ``scored`` are keyed by the score stage that wrote each
    metrics file (a cell's provenance), ``stage_name`` is this stage's own
    (the provenance of derived cells); ``training``: model -> its training
    tables (the shots group tags languages zero-/many-shot from them);
    ``replicates``: the score stages' bootstrap values, keyed like
    ``metrics`` (the shots group's intervals of means and gaps)."""
    sources = [
        Source(
            model,
            suite.name,
            suite.dataset,
            suite.language,
            str(metrics[key]),
            key,
            suite.kind,
            str(replicates[key]) if replicates and key in replicates else None,
        )
        for key, (model, suite) in scored.items()
    ]
    if GROUPS[group].training_languages and languages is None:
        raise ValueError(f"{stage_name}: the group writes the training languages; declare that output")
    languages_of = {model: training_languages(files) for model, files in (training or {}).items()}
    out = run(
        group,
        sources,
        stage_name,
        languages_of,
        table_files=long_tables,
        summary_file=summary,
        plot_files=plots or [],
        languages_file=languages,
    )
    return f"{group}: " + ", ".join(f"{k} ({v.height} cells)" for k, v in out.items())
