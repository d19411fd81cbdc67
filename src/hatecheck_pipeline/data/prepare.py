"""Prepare stage: raw files -> harmonised table + quarantine + row counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core.files import InputError, write_json, write_parquet
from hatecheck_pipeline.data.specs import spec as dataset_spec


def prepare(dataset: str, settings: Mapping[str, Any], raw_files: list[Path], table: Path, quarantine: Path, counts: Path) -> str:
    """Stage: harmonise one dataset (``settings``: its ``datasets.<name>``
    params) from its ingested ``raw_files``; every dropped row goes to
    ``quarantine`` with its reason and ``counts`` shows raw = kept + quarantined."""
    missing = [str(f) for f in raw_files if not f.exists()]
    if missing:
        raise InputError(
            f"{dataset}: raw file(s) missing: {', '.join(missing)} (run `hatecheck-pipeline run ingest_{dataset_spec(dataset).source}`)"
        )
    harmonised = dataset_spec(dataset).build(settings)
    summary = harmonised.counts()
    if summary["raw_rows"] == 0:
        raise InputError(f"{', '.join(map(str, raw_files))}: no data rows (a header only): nothing to prepare for {dataset}")
    if summary["raw_rows"] != summary["kept"] + summary["quarantined"]:
        raise AssertionError(f"{dataset}: raw rows {summary['raw_rows']} != kept + quarantined")
    write_parquet(harmonised.kept, table)
    write_parquet(harmonised.quarantine, quarantine)
    write_json({"dataset": dataset, **summary}, counts)
    return f"{dataset}: raw {summary['raw_rows']} = kept {summary['kept']} + quarantined {summary['quarantined']}"
