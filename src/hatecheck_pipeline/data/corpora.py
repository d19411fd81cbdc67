"""Builders of the training corpora: Davidson et al. 2017, Founta et al.
2018, HatEval 2019 (Spanish), HaSpeeDe 2020 (Italian) and Fortuna et al.
2019 (Portuguese), each harmonised with its train/dev/test split."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import ROW, InputError, read_records
from hatecheck_pipeline.core.paths import raw as raw_path
from hatecheck_pipeline.data.harmonise import (
    Harmonised,
    binary_label,
    harmonise,
    stratified_split,
    with_split,
)
from hatecheck_pipeline.data.labels import HATEFUL


class HydrationRequired(InputError):
    """The file holds tweet ids only; its text must be hydrated first."""


# Davidson et al.'s classes (column `class`) by name, for the multiclass
# models of the HateCheck paper's appendix F (`label_multiclass`).
DAVIDSON_CLASSES = {"0": HATEFUL, "1": "offensive", "2": "neither"}


def davidson2017(params: Mapping[str, Any]) -> Harmonised:
    """Davidson et al. 2017: class 0 hate -> hateful; 1, 2 -> non-hateful.
    ``label_multiclass`` keeps the three classes (hateful, offensive,
    neither) for the HateCheck paper's appendix F models."""
    raw = read_records(raw_path("davidson2017", "labeled_data.csv"), ["class", "tweet"])
    h = harmonise(
        raw,
        "davidson2017",
        "english",
        {
            "id": pl.col("_index"),
            "text": pl.col("tweet"),
            "label_original": pl.col("class"),
            "label": binary_label("class", ["0"], ["1", "2"]),
            "label_multiclass": pl.col("class").str.strip_chars().replace_strict(DAVIDSON_CLASSES, default=None, return_dtype=pl.String),
        },
        extras=["count", "hate_speech", "offensive_language", "neither", "label_multiclass"],
    )
    return with_split(h, params["seed"], params["split"])


def founta_ids_only(path: str | Path) -> bool:
    with open(path, encoding="utf-8", errors="replace") as fh:
        header = fh.readline().strip().lower().split(",")
    return "tweet_id" in header and "text" not in header


def founta2018(params: Mapping[str, Any]) -> Harmonised:
    """Founta et al. 2018 binarised subsample with text (1 = hateful)."""
    if params["source"] == "ids":
        path = raw_path("founta2018", "hatespeech_labels.csv")
        raise HydrationRequired(
            f"{path}: holds tweet ids and labels only (no text). Hydrate the tweets through the Twitter/X API "
            "into a CSV with a `text` column, or set datasets.founta2018.source: text_subsample."
        )
    parts = []
    for split, name in (("train", "fou18_en_train_20065.csv"), ("dev", "fou18_en_dev_500.csv"), ("test", "fou18_en_test_2000.csv")):
        path = raw_path("founta2018", name)
        if founta_ids_only(path):
            raise HydrationRequired(f"{path}: holds tweet ids only; the tweet text must be hydrated first")
        raw = read_records(path, ["text", "label"])
        parts.append(raw.with_columns(pl.lit(split).alias("split"), pl.format(split + "-{}", pl.col(ROW)).alias("id")))
    # Test rows first: a text repeated across splits stays in test.
    raw = pl.concat(parts).sort(pl.col("split").replace_strict({"test": 0, "dev": 1, "train": 2}), ROW)
    return harmonise(
        raw,
        "founta2018",
        "english",
        {"text": pl.col("text"), "label_original": pl.col("label"), "label": binary_label("label", ["1"], ["0"])},
        extras=["split"],
    )


def hateval2019_es(params: Mapping[str, Any]) -> Harmonised:
    """Basile et al. 2019, Spanish, label HS (1 = hateful)."""
    raw = read_records(raw_path("hateval2019", "bas19_es.csv"), ["id", "text", "HS"])
    h = harmonise(
        raw,
        "hateval2019_es",
        "spanish",
        {"id": pl.col("id"), "text": pl.col("text"), "label_original": pl.col("HS"), "label": binary_label("HS", ["1"], ["0"])},
        extras=["TR", "AG"],
    )
    return with_split(h, params["seed"], params["split"])


def haspeede2020(params: Mapping[str, Any]) -> Harmonised:
    """Sanguinetti et al. 2020: original train/test; train split 90/10 into train/dev."""
    raw = read_records(raw_path("haspeede2020", "san20_it.csv"), ["id", "text", "hs", "split"])
    # Test rows first, so that a text repeated across the original splits is
    # kept in the original test set and quarantined from train.
    raw = raw.sort(pl.col("split") != "test", ROW)
    h = harmonise(
        raw.rename({"split": "split_original"}),
        "haspeede2020",
        "italian",
        {"id": pl.col("id"), "text": pl.col("text"), "label_original": pl.col("hs"), "label": binary_label("hs", ["1"], ["0"])},
        extras=["stereotype", "split_original"],
    )
    frac = {"train": 1 - params["dev_fraction"], "dev": params["dev_fraction"], "test": 0.0}
    train = stratified_split(h.kept.lazy().filter(pl.col("split_original") == "train"), params["seed"], frac)
    test = h.kept.lazy().filter(pl.col("split_original") == "test").with_columns(pl.lit("test").alias("split"))
    h.kept = pl.concat([train, test]).collect()
    return h


def fortuna2019(params: Mapping[str, Any]) -> Harmonised:
    """Fortuna et al. 2019, Portuguese, label hatespeech_comb (1 = hateful)."""
    raw = read_records(raw_path("fortuna2019", "portuguese_hate_speech_binary_classification.csv"), ["text", "hatespeech_comb"])
    h = harmonise(
        raw,
        "fortuna2019",
        "portuguese",
        {
            "id": pl.col(ROW).cast(pl.String),
            "text": pl.col("text"),
            "label_original": pl.col("hatespeech_comb"),
            "label": binary_label("hatespeech_comb", ["1"], ["0"]),
        },
        extras=["hatespeech_G1", "hatespeech_G2", "hatespeech_G3"],
    )
    return with_split(h, params["seed"], params["split"])
