"""Every artifact path of the pipeline, defined once (the DAG and the stage
commands both read them from here)."""

from __future__ import annotations

INTERIM = "data/interim"
PROCESSED = "data/processed"
VALIDATION = "data/validation"


def interim_table(dataset: str) -> str:
    return f"{INTERIM}/{dataset}/table.parquet"


def quarantine(dataset: str) -> str:
    return f"{INTERIM}/{dataset}/quarantine.parquet"


def counts(dataset: str) -> str:
    return f"{INTERIM}/{dataset}/counts.json"


def validation_json(dataset: str) -> str:
    return f"{VALIDATION}/{dataset}.json"


def validation_md(dataset: str) -> str:
    return f"{VALIDATION}/{dataset}.md"


def processed(dataset: str, scheme: str) -> str:
    return f"{PROCESSED}/{dataset}/{scheme}.parquet"
