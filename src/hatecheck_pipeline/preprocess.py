"""Preprocess stage: a validated table through one named text scheme."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import polars as pl

from .io import read_json, write_parquet
from .textprep import preprocess_table
from .validate import ValidationFailed


def run(table: Path, validation: Path, scheme_name: str, scheme: Mapping[str, Any], out: Path) -> int:
    report = read_json(validation)
    if not report.get("success"):
        raise ValidationFailed(f"{validation}: the table did not pass validation; not preprocessing {table}")
    frame = preprocess_table(pl.scan_parquet(table), scheme, scheme_name).collect()
    write_parquet(frame, out)
    return frame.height
