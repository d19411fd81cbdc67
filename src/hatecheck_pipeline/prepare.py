"""Prepare stage: raw files -> harmonised table + quarantine + row counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .datasets import BUILDERS
from .io import write_json, write_parquet


def run(dataset: str, params: Mapping[str, Any], table: Path, quarantine: Path, counts: Path) -> dict[str, Any]:
    harmonised = BUILDERS[dataset](params)
    summary = harmonised.counts()
    if summary["raw_rows"] != summary["kept"] + summary["quarantined"]:
        raise AssertionError(f"{dataset}: raw rows {summary['raw_rows']} != kept + quarantined")
    write_parquet(harmonised.kept, table)
    write_parquet(harmonised.quarantine, quarantine)
    write_json({"dataset": dataset, **summary}, counts)
    return summary
