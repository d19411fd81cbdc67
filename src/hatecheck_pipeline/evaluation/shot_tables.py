"""The zero- vs many-shot tables of MHC: each (model, language) tagged by
whether the model was fine-tuned on the language, the settings' means over
languages and their gap, with intervals from the score stages' bootstrap
values (:class:`ShotReplicates`).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import polars as pl

from hatecheck_pipeline.evaluation.cells import Source, _cell, boot, frame
from hatecheck_pipeline.evaluation.metrics import Bootstrap


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


def shot_tables(
    loaded: list[tuple[Source, dict]], languages_of: dict[str, list[str]], summary_file: str, stage: str
) -> dict[str, pl.DataFrame]:
    """Zero- vs many-shot per (model, language), per model and per functionality class."""
    mhc = [(s, d) for s, d in loaded if s.dataset == "mhc"]
    per_lang = frame(
        _cell(
            "shots_languages",
            s,
            s.language or s.suite,
            "macro_f1",
            d["overall"]["macro_f1"],
            d["overall"]["n"],
            setting=setting(s.language, languages_of.get(s.model, [])),
            per_language=False,
            **boot(d, d["overall"]),
        )
        for s, d in mhc
    )
    classes = frame(
        _cell(
            "shots_classes",
            s,
            cls,
            "accuracy",
            fig["accuracy"],
            fig["n"],
            setting=setting(s.language, languages_of.get(s.model, [])),
            **boot(d, fig),
        )
        for s, d in mhc
        for cls, fig in d.get("by_functionality_class", {}).items()
    )
    derived = {"metrics_file": summary_file, "stage": stage}
    bootstrap = ShotReplicates([s for s, _ in mhc])

    def summarise(cells: pl.DataFrame, table: str, keys: list[str], section: str, figure: str) -> pl.DataFrame:
        if cells.is_empty():
            return frame([])
        # a mean over the defined values only (an undefined one is left out, never counted as 0), saying so
        means = cells.group_by([*keys, "setting"], maintain_order=True).agg(
            pl.col("value").mean().round(1),
            pl.col("n").sum(),
            pl.col("n_clusters").sum(),
            pl.col("suite"),
            pl.col("resampling_unit").drop_nulls().first(),
            pl.col("value").is_not_null().sum().alias("defined"),
            pl.len().alias("parts"),
            pl.coalesce("language", "suite").filter(pl.col("value").is_null()).alias("left_out"),
        )
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
                    rows.append(
                        _cell(
                            table,
                            src,
                            row,
                            name,
                            fig,
                            by[name]["n"],
                            setting=name,
                            per_language=False,
                            **derived,
                            unit=by[name]["resampling_unit"],
                            level=level,
                            n_clusters=by[name]["n_clusters"],
                        )
                    )
            if len(by) == 2:
                defined = by["many-shot"]["value"] is not None and by["zero-shot"]["value"] is not None
                gap = round(by["many-shot"]["value"] - by["zero-shot"]["value"], 1) if defined else None
                both = None if values["many-shot"] is None or values["zero-shot"] is None else values["many-shot"] - values["zero-shot"]
                fig = {**with_interval(gap, both, level), "undefined": None if defined else "a setting's mean is undefined"}
                rows.append(
                    _cell(
                        table,
                        src,
                        row,
                        "gap",
                        fig,
                        None,
                        setting="gap",
                        per_language=False,
                        **derived,
                        unit=by["many-shot"]["resampling_unit"],
                        level=level,
                        n_clusters=by["many-shot"]["n_clusters"] + by["zero-shot"]["n_clusters"],
                    )
                )
        return frame(rows)

    level = next(
        (d.get("bootstrap", {}).get("level") for _, d in mhc if d.get("bootstrap", {}).get("level")), Bootstrap().level
    )  # the scores' level; the default where no file says
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
        part = reps.filter(
            (pl.col("section") == section)
            & (pl.col("figure") == figure)
            & (pl.col("group").is_null() if group is None else pl.col("group") == group)
        ).sort("replicate")
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
