"""Preprocess stage: a validated table through one named text scheme."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import read_json, write_parquet
from hatecheck_pipeline.data.schemes import preprocess_table
from hatecheck_pipeline.data.validate import ValidationFailed


def preprocess(table: Path, validation: Path, scheme: str, settings: Mapping[str, Any], out: Path) -> str:
    """Stage: a validated table through one named text scheme (``settings``)."""
    report = read_json(validation)
    if not report.get("success"):
        raise ValidationFailed(f"{validation}: the table did not pass validation; not preprocessing {table}")
    frame = preprocess_table(pl.scan_parquet(table), settings, scheme).collect()
    write_parquet(frame, out)
    return f"{table} / {scheme}: {frame.height} rows -> {out}"
