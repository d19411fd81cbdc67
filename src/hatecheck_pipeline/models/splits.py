"""A model's train and dev splits: its processed tables, each capped by the
profile's budget with a seeded stratified sample."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import polars as pl

from hatecheck_pipeline.models.recipe import BINARY, LabelSet, per_dataset_cap


@dataclass
class Split:
    texts: list[str]
    labels: list[int]
    sources: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    rationales: list[list[list[int]]] | None = None  # per example: annotators' 0/1 masks (attention supervision)


def stratified_cap(frame: pl.DataFrame, cap: int | None, seed: int) -> pl.DataFrame:
    """A seeded stratified sample of ``cap`` rows (all rows when None or smaller)."""
    if cap is None or frame.height <= cap:
        return frame
    parts = []
    for i, (_, group) in enumerate(sorted(frame.group_by("label", maintain_order=True), key=lambda kv: kv[0])):
        n = max(1, round(cap * group.height / frame.height))
        parts.append(group.sample(n=min(n, group.height), seed=seed + i, shuffle=True))
    return pl.concat(parts).sort("id")


def load_splits(
    files: Sequence[Path], max_train: int | None, seed: int, labels: LabelSet = BINARY, max_per_dataset: int | None = None
) -> tuple[Split, Split, list[dict]]:
    """Train and dev splits of processed tables. ``max_train`` caps the
    model's train examples in total, spread evenly over its datasets, and
    ``max_per_dataset`` each dataset's (a stratified sample of each; see
    :func:`per_dataset_cap`); each dev split is capped to a quarter of that
    dataset's share. Labels come from ``labels.column``."""
    train, dev, counts = Split([], [], []), Split([], [], []), []
    max_train = per_dataset_cap(max_train, len(files), max_per_dataset)
    for f in files:
        table = pl.read_parquet(f, columns=["id", "text", labels.column, "split", "dataset"])
        if labels.column != "label":
            table = table.rename({labels.column: "label"})
        name = table["dataset"][0] if table.height else Path(f).parent.name
        row = {"dataset": name, "file": str(f)}
        for split, target, cap in (("train", train, max_train), ("dev", dev, None if max_train is None else max(2, max_train // 4))):
            part = table.filter(pl.col("split") == split).with_columns(pl.col("id").cast(pl.Utf8))
            row[f"{split}_available"] = part.height
            part = stratified_cap(part, cap, seed)
            row[f"{split}_used"] = part.height
            target.texts += part["text"].to_list()
            target.labels += [labels.encode(x) for x in part["label"].to_list()]  # merged after the cap: the same posts as unmerged
            target.sources += [name] * part.height
            target.ids += part["id"].to_list()
        counts.append(row)
    if not train.texts or not dev.texts:
        raise ValueError(f"no train/dev rows in {list(map(str, files))}")
    return train, dev, counts
