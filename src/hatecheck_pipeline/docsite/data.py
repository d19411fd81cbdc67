"""The data page of the generated documentation: each dataset's validation
result in the recorded run (rows kept and quarantined, the hateful share
against the published one, the great-expectations checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.docsite import runs
from hatecheck_pipeline.docsite.formatting import md_table, num, path_cell, read_json, page


def _published_share(doc: Mapping[str, Any]) -> str:
    """The allowed range of the hateful share from the class-balance expectation."""
    for suite in doc.get("suites") or []:
        for check in suite.get("checks") or []:
            kwargs = check.get("kwargs") or {}
            if check.get("expectation") == "expect_column_mean_to_be_between" and kwargs.get("column") == "_is_hateful":
                return f"{100 * kwargs['min_value']:.1f}-{100 * kwargs['max_value']:.1f}%"
    return "–"


def data_page(record: Path) -> str:
    record = Path(record)
    info = runs.load(record)
    rows = []
    for path in sorted(record.glob("data/validation/*.json")):
        doc = read_json(path)
        counts = doc.get("counts") or {}
        checks = [c for s in doc.get("suites") or [] for c in s.get("checks") or []]
        reasons = ", ".join(f"{k}: {v:,}" for k, v in sorted((counts.get("quarantined_by_reason") or {}).items())) or "–"
        share = counts.get("hateful_share")
        rows.append(
            [
                str(doc.get("dataset") or path.stem),
                num(counts.get("raw_rows"), 0),
                num(counts.get("kept"), 0),
                num(counts.get("quarantined"), 0),
                reasons,
                "–" if share is None else f"{100 * share:.1f}%",
                _published_share(doc),
                f"{'passed' if doc.get('success') else 'FAILED'} ({sum(bool(c.get('success')) for c in checks)} of {len(checks)})",
                path_cell(path.relative_to(record).as_posix()),
            ]
        )
    body = (
        md_table(
            [
                "dataset",
                "raw rows",
                "kept",
                "quarantined",
                "quarantined by reason",
                "hateful",
                "allowed (published ± tolerance)",
                "great-expectations",
                "source",
            ],
            rows,
        )
        if rows
        else "No validation results in this record."
    )
    return page(info, record, [body])
