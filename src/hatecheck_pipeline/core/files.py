"""Reading raw files without losing rows, and writing stage artifacts."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

import polars as pl

from hatecheck_pipeline.core.errors import PipelineError

csv.field_size_limit(sys.maxsize)

ROW = "_row"
REASON = "_reason"
SOURCE = "_source"


class InputError(PipelineError, ValueError):
    """Bad raw input that cannot be quarantined row by row (names file and rule)."""


def _has_bad_bytes(value: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in value)


class _LineTracker:
    """The lines the CSV reader consumes, so that a record that runs to the
    end of the file with an open quote is recognised (``csv`` silently
    takes the rest of the file as one field there)."""

    def __init__(self, fh):
        self._it = iter(fh)
        self._next: str | None = next(self._it, None)
        self.line = 0  # lines consumed
        self.start = 1  # first line of the current record
        self._buffer: list[str] = []

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self._next is None:
            raise StopIteration
        current, self._next = self._next, next(self._it, None)
        self.line += 1
        self._buffer.append(current)
        return current

    def at_eof(self) -> bool:
        return self._next is None

    def record_text(self) -> str:
        return "".join(self._buffer)

    def next_record(self) -> None:
        self._buffer = []
        self.start = self.line + 1


def _delimiter_hint(header: list[str], delimiter: str) -> str:
    if len(header) == 1:
        found = [d for d in (";", "\t", "|", ",") if d != delimiter and d in header[0]]
        if found:
            return f" (the header holds {found[0]!r}, not {delimiter!r}: wrong delimiter?)"
    return ""


def read_records(
    path: str | Path,
    required: list[str],
    delimiter: str = ",",
    quoting: bool = True,
) -> pl.DataFrame:
    """Read a delimited text file into string columns, one row per record.

    Every record is kept: a record with the wrong number of fields or with
    bytes that are not UTF-8 gets a ``_reason`` (quarantined downstream);
    ``_row`` is the 1-based record number after the header. A missing
    required column is an :class:`InputError` naming the file.
    """
    path = Path(path)
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
        lines = _LineTracker(fh)
        reader = csv.reader(lines, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(f"{path}: file is empty (no header row)") from None
        header = [h.lstrip("\ufeff").strip() for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(
                f"{path}: row 0 (header): missing required column(s) {missing}; found columns {header}" + _delimiter_hint(header, delimiter)
            )
        lines.next_record()
        rows: list[list[str | None]] = []
        for number, record in enumerate(reader, start=1):
            # at the end of the file, spanning lines, with an odd number of quotes
            if quoting and lines.at_eof() and lines.line > lines.start and lines.record_text().count('"') % 2:
                raise InputError(
                    f"{path}: row {number} (line {lines.start}): unterminated quote: a quoted field opened there "
                    f"never closes, so the remaining {lines.line - lines.start + 1} line(s) would be read as one field"
                )
            lines.next_record()
            reason = None
            if len(record) != len(header):
                reason = f"malformed_row: expected {len(header)} fields, found {len(record)}"
                raw = delimiter.join(record)
                record = [raw if i == 0 else None for i in range(len(header))] if header else []
            elif any(_has_bad_bytes(v) for v in record):
                reason = "bad_encoding: bytes that are not valid UTF-8"
                record = [v.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for v in record]
            rows.append([*record, str(number), reason])
    names = [h or "_index" for h in header]
    schema = [(n, pl.String) for n in [*names, ROW, REASON]]  # typed even when there are no rows
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(pl.col(ROW).cast(pl.Int64), pl.lit(str(path)).alias(SOURCE))


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """JSON lines as records ``{"_json", _row, _reason}``; a line that does not
    parse is kept with a ``_reason`` and its raw text."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                records.append({"_json": json.loads(line), ROW: number, REASON: None, "_line": None})
            except json.JSONDecodeError as exc:
                records.append({"_json": None, ROW: number, REASON: f"malformed_json: {exc.msg}", "_line": line})
    return records


def _atomic(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Write ``path`` through ``write(<path>.tmp)``, then rename: readers see
    the old file or the whole new one. A write that fails (disk full, an
    interrupt) removes ``<path>.tmp`` and re-raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_parquet(frame: pl.DataFrame | pl.LazyFrame, path: str | Path, metadata: Mapping[str, str] | None = None) -> Path:
    """Write atomically (temp file, then rename). ``metadata``: key-value
    pairs stored in the file's footer (``pl.read_parquet_metadata``)."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    return _atomic(
        path, lambda tmp: frame.write_parquet(tmp, compression="zstd", statistics=True, metadata=dict(metadata) if metadata else None)
    )


# Parquet metadata key of the precision a model's forward passes ran in
# (models/runtime.py: precision), e.g. "fp32" or "bf16 autocast (CPU)":
# written by the predict stages, printed by `lineage`.
PRECISION_KEY = "hatecheck_pipeline.precision"


def recorded_precision(path: str | Path) -> str | None:
    """The precision a Parquet file's footer records (``write_parquet``'s
    ``metadata`` under ``PRECISION_KEY``); None for a file written without it."""
    return pl.read_parquet_metadata(path).get(PRECISION_KEY)


def write_json(obj: Any, path: str | Path) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    return _atomic(path, lambda tmp: tmp.write_text(text, "utf-8"))


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text("utf-8"))


def write_text(text: str, path: str | Path) -> Path:
    """Write a text file atomically (temp file, then rename)."""
    return _atomic(path, lambda tmp: tmp.write_text(text, "utf-8"))


def write_csv(frame: pl.DataFrame, path: str | Path) -> Path:
    """Write a CSV atomically (temp file, then rename)."""
    return _atomic(path, frame.write_csv)


def sha256sum(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
