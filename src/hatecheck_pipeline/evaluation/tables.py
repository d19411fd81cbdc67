"""The papers' tables, zero- vs many-shot, contrast consistency,
original vs expanded suites and every other score (``other``), built from
the per-(model, suite) METRICS.json files.

Every table is written in long form, one row per cell, and every cell
carries its provenance: the metrics file and the stage that produced it
(``metrics_file``, ``stage``) and a stable ``cell_id`` that the report puts
on the cell and ``hatecheck-pipeline lineage`` accepts.

Each table group is declared once, in :data:`GROUPS`: the scored suites it
reads, its long tables, the function building them (and its DVC metrics
summary) and its ``dvc plots`` files with their axes. The evaluate phase
renders the ``tables_<group>`` stages from these declarations;
:func:`tables` is their stage function.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import polars as pl

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import read_json, write_csv, write_json
from hatecheck_pipeline.suites.registry import EXPANDED, FUNCTIONAL, HELDOUT, Suite

CELL_COLUMNS = {
    "table": pl.String, "model": pl.String, "suite": pl.String, "language": pl.String,
    "row": pl.String, "column": pl.String, "value": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "n": pl.Int64, "setting": pl.String,
    "metrics_file": pl.String, "stage": pl.String, "cell_id": pl.String,
    # the interval's bootstrap: template (functional / expanded suites) or case (held-out sets), and how many were resampled
    "resampling_unit": pl.String, "n_clusters": pl.Int64,
    # why a null value is undefined (a zero denominator), or which parts a mean left out as undefined
    "undefined": pl.String,
}


@dataclass(frozen=True)
class Source:
    """One scored (model, suite): where its metrics are and who wrote them."""

    model: str
    suite: str
    dataset: str
    language: str | None
    metrics: str
    stage: str
    kind: str = FUNCTIONAL  # the suite's kind: heldout | functional | expanded
    replicates: str | None = None  # its score stage's bootstrap values (groups with intervals of differences)

    @property
    def heldout(self) -> bool:
        return self.kind == HELDOUT

    @property
    def expanded(self) -> bool:
        return self.kind == EXPANDED


def cell_id(*parts: str) -> str:
    """Stable id of a report cell (no spaces or quotes).

    >>> cell_id("mhc_t7", "XTC", "german", "macro_f1")
    'mhc_t7:XTC:german:macro_f1'
    >>> cell_id("hatecheck_t4", "B-D", "trans people", "accuracy")
    'hatecheck_t4:B-D:trans_people:accuracy'
    """
    return ":".join(re.sub(r"[^A-Za-z0-9_.\-]+", "_", str(p)) for p in parts)


def boot(doc: Mapping[str, Any], figures: Mapping[str, Any] | None) -> dict[str, Any]:
    """A figure's resampling unit (its metrics file's ``bootstrap``) and
    number of resampled units (``n_clusters``), for :func:`_cell`.

    >>> boot({"bootstrap": {"resampling_unit": "template"}}, {"n": 7, "n_clusters": 1})
    {'unit': 'template', 'n_clusters': 1}
    """
    return {"unit": (doc.get("bootstrap") or {}).get("resampling_unit"), "n_clusters": (figures or {}).get("n_clusters")}


def _cell(table: str, src: Source, row: str, column: str, figure: dict[str, Any] | float | None, n: int | None, **extra: Any) -> dict[str, Any]:
    fig = figure if isinstance(figure, dict) else {"value": figure}
    interval = fig.get("ci_low") is not None
    return {
        "table": table, "model": src.model, "suite": src.suite, "language": src.language,
        "row": row, "column": column, "value": fig.get("value"), "ci_low": fig.get("ci_low"),
        "ci_high": fig.get("ci_high"), "n": n, "setting": extra.get("setting"),
        "metrics_file": extra.get("metrics_file", src.metrics), "stage": extra.get("stage", src.stage),
        "resampling_unit": extra.get("unit") if interval else None, "n_clusters": extra.get("n_clusters") if interval else None,
        "undefined": fig.get("undefined"),
        "cell_id": cell_id(table, src.model, *( [src.language] if src.language and extra.get("per_language", True) else []), row, column),
    }


def frame(cells: Iterable[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(cells), schema=CELL_COLUMNS)


def section_cells(table: str, loaded: list[tuple[Source, dict]], section: str, metric: str, per_language: bool = True) -> pl.DataFrame:
    """One cell per (source, group) of a METRICS.json section."""
    out = []
    for src, doc in loaded:
        for group, figures in doc.get(section, {}).items():
            out.append(_cell(table, src, group, metric, figures.get(metric), figures.get("n"), per_language=per_language, **boot(doc, figures)))
    return frame(out)


# The ``setting`` of a held-out cell whose cases may be the model's own
# training data (a classifier trained elsewhere on that dataset): shown
# marked, never set beside the others as a held-out figure.
SEEN_IN_TRAINING = "seen in training"


def overall_cells(table: str, loaded: list[tuple[Source, dict]], metrics: list[str], row_of=lambda s: s.language or s.suite) -> pl.DataFrame:
    out = []
    for src, doc in loaded:
        seen = {"setting": SEEN_IN_TRAINING} if doc.get("seen_in_training") else {}
        for metric in metrics:
            out.append(_cell(table, src, row_of(src), metric, doc["overall"].get(metric), doc["overall"]["n"], per_language=False,
                             **boot(doc, doc["overall"]), **seen))
    return frame(out)


def hatecheck_tables(loaded: list[tuple[Source, dict]]) -> dict[str, pl.DataFrame]:
    """HateCheck Tables 1-4 and held-out macro F1 for models tested on HateCheck."""
    hc = [(s, d) for s, d in loaded if s.dataset == "hatecheck"]
    held = [(s, d) for s, d in loaded if s.heldout]
    t2 = []
    for src, doc in hc:
        for label, figures in doc["by_label"].items():
            t2.append(_cell("hatecheck_t2", src, label, "accuracy", figures["accuracy"], figures["n"], **boot(doc, figures)))
        t2.append(_cell("hatecheck_t2", src, "total", "accuracy", doc["overall"]["accuracy"], doc["overall"]["n"], **boot(doc, doc["overall"])))
    return {
        "hatecheck_t1": section_cells("hatecheck_t1", hc, "by_functionality", "accuracy"),
        "hatecheck_t2": frame(t2),
        "hatecheck_t3": section_cells("hatecheck_t3", hc, "by_reclaimed_slur", "accuracy"),
        "hatecheck_t4": section_cells("hatecheck_t4", hc, "by_target", "accuracy"),
        "hatecheck_heldout": overall_cells("hatecheck_heldout", held, ["macro_f1"], row_of=lambda s: s.dataset),
    }


def mhc_tables(loaded: list[tuple[Source, dict]]) -> dict[str, pl.DataFrame]:
    """MHC Tables 1, 2, 3, 6 and 7 for models tested on MHC."""
    mhc = [(s, d) for s, d in loaded if s.dataset == "mhc"]
    held = [(s, d) for s, d in loaded if s.heldout]
    t1 = section_cells("mhc_t1", mhc, "by_functionality", "accuracy")
    t3 = section_cells("mhc_t3", mhc, "by_target", "macro_f1")
    # rows are functionalities/targets, columns languages
    t1 = t1.with_columns(pl.col("language").alias("column"))
    t3 = t3.with_columns(pl.col("language").alias("column"))
    return {
        "mhc_t1": t1,
        "mhc_t2": overall_cells("mhc_t2", mhc, ["f1_hateful", "f1_non_hateful", "macro_f1"]),
        "mhc_t3": t3,
        "mhc_t6": overall_cells("mhc_t6", held, ["macro_f1"], row_of=lambda s: s.dataset),
        "mhc_t7": overall_cells("mhc_t7", mhc, ["macro_f1"]),
    }


def training_languages(tables: list[str | Path]) -> list[str]:
    """Languages of a model's training data (the ``language`` column)."""
    langs: set[str] = set()
    for table in tables:
        langs |= set(pl.scan_parquet(table).select(pl.col("language").unique()).collect().to_series().drop_nulls().to_list())
    return sorted(langs)


def setting(language: str | None, trained_on: list[str]) -> str:
    """``many-shot`` when the model was fine-tuned on the language, else ``zero-shot``.

    >>> setting("spanish", ["italian", "spanish"]), setting("hindi", ["spanish"])
    ('many-shot', 'zero-shot')
    """
    return "many-shot" if language in trained_on else "zero-shot"


def shot_tables(loaded: list[tuple[Source, dict]], languages_of: dict[str, list[str]], summary_file: str, stage: str) -> dict[str, pl.DataFrame]:
    """Zero- vs many-shot per (model, language), per model and per functionality class."""
    mhc = [(s, d) for s, d in loaded if s.dataset == "mhc"]
    per_lang = frame(
        _cell("shots_languages", s, s.language or s.suite, "macro_f1", d["overall"]["macro_f1"], d["overall"]["n"],
              setting=setting(s.language, languages_of.get(s.model, [])), per_language=False, **boot(d, d["overall"]))
        for s, d in mhc
    )
    classes = frame(
        _cell("shots_classes", s, cls, "accuracy", fig["accuracy"], fig["n"], setting=setting(s.language, languages_of.get(s.model, [])), **boot(d, fig))
        for s, d in mhc for cls, fig in d.get("by_functionality_class", {}).items()
    )
    derived = {"metrics_file": summary_file, "stage": stage}
    bootstrap = ShotReplicates([s for s, _ in mhc])

    def summarise(cells: pl.DataFrame, table: str, keys: list[str], section: str, figure: str) -> pl.DataFrame:
        if cells.is_empty():
            return frame([])
        # a mean over the defined values only (an undefined one is left out, never counted as 0), saying so
        means = cells.group_by([*keys, "setting"], maintain_order=True).agg(
            pl.col("value").mean().round(1), pl.col("n").sum(), pl.col("n_clusters").sum(), pl.col("suite"),
            pl.col("resampling_unit").drop_nulls().first(), pl.col("value").is_not_null().sum().alias("defined"),
            pl.len().alias("parts"), pl.coalesce("language", "suite").filter(pl.col("value").is_null()).alias("left_out"))
        rows = []
        for key, part in means.group_by(keys, maintain_order=True):
            by = {r["setting"]: r for r in part.iter_rows(named=True)}
            model = key[0]
            row = key[1] if len(key) > 1 else "all languages"
            group = row if section != "overall" else None
            src = Source(model, "mhc", "mhc", None, summary_file, stage)
            # each setting's mean over its languages and the gap, on the languages' bootstrap values (None: not kept)
            values = {name: bootstrap.mean(model, by[name]["suite"], section, group, figure) for name in by}
            for name in ("zero-shot", "many-shot"):
                if name in by:
                    fig = {**with_interval(by[name]["value"], values[name], level), "undefined": mean_note(by[name])}
                    rows.append(_cell(table, src, row, name, fig, by[name]["n"], setting=name, per_language=False, **derived,
                                      unit=by[name]["resampling_unit"], n_clusters=by[name]["n_clusters"]))
            if len(by) == 2:
                defined = by["many-shot"]["value"] is not None and by["zero-shot"]["value"] is not None
                gap = round(by["many-shot"]["value"] - by["zero-shot"]["value"], 1) if defined else None
                both = None if values["many-shot"] is None or values["zero-shot"] is None else values["many-shot"] - values["zero-shot"]
                fig = {**with_interval(gap, both, level), "undefined": None if defined else "a setting's mean is undefined"}
                rows.append(_cell(table, src, row, "gap", fig, None, setting="gap", per_language=False,
                                  **derived, unit=by["many-shot"]["resampling_unit"],
                                  n_clusters=by["many-shot"]["n_clusters"] + by["zero-shot"]["n_clusters"]))
        return frame(rows)

    level = next((d.get("bootstrap", {}).get("level") for _, d in mhc if d.get("bootstrap", {}).get("level")), 0.95)
    return {
        "shots_languages": per_lang,
        "shots_summary": summarise(per_lang, "shots_summary", ["model"], "overall", "macro_f1"),
        "shots_class_gap": summarise(classes, "shots_class_gap", ["model", "row"], "by_functionality_class", "accuracy"),
    }


def mean_note(part: Mapping[str, Any]) -> str | None:
    """What a mean cell says about the undefined values it left out (None
    when every value was defined).

    >>> mean_note({"defined": 2, "parts": 3, "left_out": ["hindi"]})
    'mean over the 2 of 3 values defined (left out as undefined: hindi)'
    >>> mean_note({"defined": 0, "parts": 1, "left_out": ["hindi"]})
    'every value undefined (hindi)'
    """
    if part["defined"] == part["parts"]:
        return None
    left = ", ".join(str(x) for x in part["left_out"])
    if not part["defined"]:
        return f"every value undefined ({left})"
    return f"mean over the {part['defined']} of {part['parts']} values defined (left out as undefined: {left})"


class ShotReplicates:
    """The MHC score stages' bootstrap values (``Source.replicates``), for
    intervals of a setting's mean over languages and of the zero- vs
    many-shot gap.

    Each language's suite was resampled by its own score stage (templates,
    same seed for every suite), so replicate b of two languages drew the
    templates at the same positions: their values would be correlated
    through the draw, not the data. Each (model, suite)'s values are
    therefore put in an order of their own (a permutation seeded by the
    model and suite names) before replicate b of every language is
    combined: the languages are resampled independently."""

    def __init__(self, sources: list[Source]):
        self.files = {(s.model, s.suite): s.replicates for s in sources}
        self.frames: dict[tuple[str, str], pl.DataFrame | None] = {}

    def values(self, model: str, suite: str, section: str, group: str | None, figure: str) -> np.ndarray | None:
        key = (model, suite)
        if key not in self.frames:
            path = self.files.get(key)
            self.frames[key] = pl.read_parquet(path) if path and Path(path).exists() else None
        reps = self.frames[key]
        if reps is None:
            return None
        part = reps.filter((pl.col("section") == section) & (pl.col("figure") == figure)
                           & (pl.col("group").is_null() if group is None else pl.col("group") == group)).sort("replicate")
        if part.is_empty():
            return None
        order = np.random.default_rng(zlib.crc32(f"{model}/{suite}".encode())).permutation(part.height)
        return part["value"].to_numpy()[order]

    def mean(self, model: str, suites: list[str], section: str, group: str | None, figure: str) -> np.ndarray | None:
        """Replicate-wise mean over ``suites`` (None when one lacks values)."""
        arrays = [self.values(model, s, section, group, figure) for s in suites]
        if not arrays or any(a is None for a in arrays) or len({len(a) for a in arrays}) != 1:
            return None
        stacked = np.stack(arrays)
        count = (~np.isnan(stacked)).sum(axis=0)  # a language undefined in a resample is left out of its mean
        return np.divide(np.nansum(stacked, axis=0), count, out=np.full(count.shape, np.nan), where=count > 0)


def with_interval(value: float | None, replicates: np.ndarray | None, level: float) -> dict[str, Any]:
    """A derived figure (in percent) with the percentile interval of its
    bootstrap values (shares; None: no interval).

    >>> with_interval(1.5, np.array([0.01, 0.02]), 0.95)
    {'value': 1.5, 'ci_low': 1.0, 'ci_high': 2.0}
    """
    if replicates is None or value is None:
        return {"value": value}
    replicates = replicates[~np.isnan(replicates)]  # resamples where the figure is undefined are left out
    if not len(replicates):
        return {"value": value}
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return {"value": value, "ci_low": round(float(low) * 100, 1), "ci_high": round(float(high) * 100, 1)}


def contrast_table(loaded: list[tuple[Source, dict]]) -> pl.DataFrame:
    """Share of contrast pairs with both cases right, per (model, suite)."""
    return frame(
        _cell("contrast", s, s.suite, "both_correct", d["contrast"]["both_correct"], d["contrast"]["n_pairs"], per_language=False,
              **boot(d, d["contrast"]))
        for s, d in loaded if "contrast" in d
    )


# ------------------------------------------------------- expanded suites


def original_suite(suite: str) -> str | None:
    """The published suite an expanded suite is compared with (None: not an
    expanded suite). Language-specific expansions of English go to HateCheck,
    of any other language to that MHC language.

    >>> original_suite("perturbed_hatecheck"), original_suite("perturbed_mhc_german")
    ('hatecheck', 'mhc_german')
    >>> original_suite("extended_english"), original_suite("gpt_hatecheck_polish"), original_suite("mhc_german")
    ('hatecheck', 'mhc_polish', None)
    """
    if suite == "perturbed_hatecheck":
        return "hatecheck"
    if suite.startswith("perturbed_mhc_"):
        return "mhc_" + suite[len("perturbed_mhc_"):]
    for prefix in ("extended_", "gpt_hatecheck_"):
        if suite.startswith(prefix):
            lang = suite[len(prefix):]
            return "hatecheck" if lang == "english" else f"mhc_{lang}"
    return None


def comparison_pairs(sources: list[Source]) -> list[tuple[Source, Source]]:
    """(original, expanded) sources of the same model, for every expanded
    suite whose original suite the model is also scored on."""
    by_key = {(s.model, s.suite): s for s in sources}
    out = []
    for s in sources:
        orig = original_suite(s.suite) if s.expanded else None
        if orig is not None and (s.model, orig) in by_key:
            out.append((by_key[(s.model, orig)], s))
    return out


def expanded_tables(loaded: list[tuple[Source, dict]], summary_file: str, stage: str) -> dict[str, pl.DataFrame]:
    """Per-functionality accuracy on the original vs the expanded suite
    (GPT-HateCheck Figure 4): one row per functionality of the expanded
    suite's cases (the SOURCE case's functionality for perturbed cases),
    columns ``original`` / ``expanded`` (each from its own metrics file) and
    ``change`` (expanded - original, derived here), plus a ``hateful cases``
    row (accuracy on the hateful cases of both)."""
    docs = {(s.model, s.suite): (s, d) for s, d in loaded}
    rows: list[dict[str, Any]] = []
    table = "expanded_functionality"
    for orig, exp in comparison_pairs([s for s, _ in loaded]):
        o_doc, e_doc = docs[(orig.model, orig.suite)][1], docs[(exp.model, exp.suite)][1]
        o_sec = o_doc.get("by_functionality", {})
        e_sec = e_doc.get("by_source_functionality") or e_doc.get("by_functionality", {})
        pairs = [(f, o_sec.get(f), fig) for f, fig in e_sec.items()]
        o_h, e_h = o_doc.get("by_label", {}).get("hateful"), e_doc.get("by_label", {}).get("hateful")
        if e_h and e_h.get("n"):
            pairs.append(("hateful cases", o_h, e_h))
        lang = exp.language or orig.language
        src = Source(exp.model, exp.suite, exp.dataset, lang, exp.metrics, exp.stage, exp.kind)
        for func, o_fig, e_fig in pairs:
            ids = {c: cell_id(table, exp.model, exp.suite, func, c) for c in ("original", "expanded", "change")}
            o_acc = (o_fig or {}).get("accuracy") or {}
            e_acc = (e_fig or {}).get("accuracy") or {}
            if o_fig is not None:
                rows.append(_cell(table, src, func, "original", o_acc, o_fig.get("n"), setting=orig.suite,
                                  metrics_file=orig.metrics, stage=orig.stage, **boot(o_doc, o_fig)) | {"cell_id": ids["original"]})
            rows.append(_cell(table, src, func, "expanded", e_acc, e_fig.get("n"), setting=orig.suite, **boot(e_doc, e_fig))
                        | {"cell_id": ids["expanded"]})
            if o_acc.get("value") is not None and e_acc.get("value") is not None:
                change = round(e_acc["value"] - o_acc["value"], 1)
                rows.append(_cell(table, src, func, "change", change, None, setting=orig.suite,
                                  metrics_file=summary_file, stage=stage) | {"cell_id": ids["change"]})
    return {table: frame(rows)}


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
    return tables, {"change": nested(cells.filter(pl.col("column") == "change"), "model", "suite", "row")}


GROUPS: dict[str, Group] = {
    g.name: g
    for g in [
        Group(
            "hatecheck",
            ("hatecheck_t1", "hatecheck_t2", "hatecheck_t3", "hatecheck_t4", "hatecheck_heldout"),
            _build_hatecheck,
            _scored_on("hatecheck", with_heldout=True),
            plots=(Plot("hatecheck_functionality", "hatecheck_t1", {"model": "model", "row": "functionality", "value": "accuracy"},
                        {"template": "bar_horizontal", "x": "accuracy", "y": "functionality",
                         "title": "HateCheck accuracy (%) per functional test", "x_label": "accuracy (%)"}),),
        ),
        Group(
            "mhc",
            ("mhc_t1", "mhc_t2", "mhc_t3", "mhc_t6", "mhc_t7"),
            _build_mhc,
            _scored_on("mhc", with_heldout=True),
            plots=(Plot("mhc_macro_f1", "mhc_t7", {"model": "model", "row": "language", "value": "macro_f1"},
                        {"template": "bar_horizontal", "x": "macro_f1", "y": "language",
                         "title": "MHC macro F1 per language", "x_label": "macro F1"}),),
        ),
        Group(
            "shots",
            ("shots_languages", "shots_summary", "shots_class_gap"),
            _build_shots,
            _scored_on("mhc", with_heldout=False),
            plots=(Plot("zero_many_shot", "shots_languages", {"model": "model", "row": "language", "setting": "setting", "value": "macro_f1"},
                        {"template": "bar_horizontal", "x": "macro_f1", "y": "language",
                         "title": "MHC macro F1, zero-shot vs many-shot languages", "x_label": "macro F1"}),),
            training_languages=True,
            replicates=True,
        ),
        Group("contrast", ("contrast",), _build_contrast, _functional),
        Group(
            "expanded",
            ("expanded_functionality",),
            _build_expanded,
            _paired,
            plots=(Plot("expanded_functionality", "expanded_functionality",
                        {"model": "model", "suite": "suite", "row": "functionality", "column": "setting", "value": "accuracy"},
                        {"template": "bar_horizontal", "x": "accuracy", "y": "functionality",
                         "title": "Accuracy (%) per functional test, original vs expanded suite", "x_label": "accuracy (%)"},
                        rows=lambda cells: cells.filter(pl.col("column") != "change")),),
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
        raise ValueError(f"table group {name}: {len(g.tables)} table(s) and {len(g.plots)} plot(s) to write, "
                         f"given {len(table_files)} and {len(plot_files)} file(s)")
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
        Source(model, suite.name, suite.dataset, suite.language, str(metrics[key]), key, suite.kind,
               str(replicates[key]) if replicates and key in replicates else None)
        for key, (model, suite) in scored.items()
    ]
    if GROUPS[group].training_languages and languages is None:
        raise ValueError(f"{stage_name}: the group writes the training languages; declare that output")
    languages_of = {model: training_languages(files) for model, files in (training or {}).items()}
    out = run(
        group, sources, stage_name, languages_of,
        table_files=long_tables, summary_file=summary, plot_files=plots or [], languages_file=languages,
    )
    return f"{group}: " + ", ".join(f"{k} ({v.height} cells)" for k, v in out.items())
