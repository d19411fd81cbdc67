"""An expanded suite through one text preprocessing scheme (what models read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core.files import write_parquet
from hatecheck_pipeline.data.schemes import preprocess_table


def expand_preprocess(name: str, scheme: str, settings: Mapping[str, Any], table: Path, out: Path) -> str:
    """Stage: write an expanded suite's table through one named scheme."""
    frame = preprocess_table(pl.scan_parquet(table), settings, scheme).collect()
    write_parquet(frame, out)
    return f"{name}/{scheme}: {frame.height} rows"
