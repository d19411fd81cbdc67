"""Fast batched prediction: p(hateful) for every case of a suite.

No per-example model calls: texts are tokenised once, sorted by length,
cut into batches padded only to their own longest sequence, and run under
``torch.inference_mode`` (autocast on CUDA; on a CPU bf16 autocast where
the profile's ``predict_cpu_bf16`` turns it on); results go back to the
input order. The precision that ran is stored in each predictions file's
Parquet metadata (``PRECISION_KEY``), which ``lineage`` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl
import torch

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.cpu import bounded_threads
from hatecheck_pipeline.core.files import PRECISION_KEY, recorded_precision, write_parquet
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL
from hatecheck_pipeline.models.runtime import (
    available_threads,
    encode,
    forward_logits,
    pick_device,
    precision,
)
from hatecheck_pipeline.suites.registry import Suite

# The class index of "hateful" in a binary model's output (models.recipe.ID2LABEL).
HATEFUL_INDEX = 1
# The class a model's config names hateful: binary models' "hateful" (index
# 1); a multi-class model's hate class (HateXplain's "hatespeech").
HATEFUL_LABELS = (HATEFUL, "hatespeech")
COLUMNS = ["id", "p_hateful", "pred", "model", "suite"]


def hateful_index(config) -> int:
    """Index of the hateful class in a classifier's config (1 when the
    config names none of ``HATEFUL_LABELS``)."""
    label2id = {str(k): int(v) for k, v in (getattr(config, "label2id", None) or {}).items()}
    return next((label2id[n] for n in HATEFUL_LABELS if n in label2id), HATEFUL_INDEX)


def predict_proba(
    model,
    tokenizer,
    texts: Sequence[str],
    max_length: int,
    batch_size: int,
    amp: bool = True,
    progress: bool = False,
    cpu_bf16: bool | str = False,
) -> np.ndarray:
    """p(hateful) per text (for a multi-class model: of its hateful class)."""
    seqs = encode(tokenizer, texts, max_length)
    logits = forward_logits(model, seqs, tokenizer.pad_token_id, batch_size, amp=amp, progress=progress, cpu_bf16=cpu_bf16)
    return torch.softmax(logits, dim=-1)[:, hateful_index(model.config)].numpy()


def set_threads(threads: int) -> None:
    """torch CPU threads: ``threads`` (bounded by the cores), or
    :func:`available_threads` when <= 0."""
    torch.set_num_threads(bounded_threads(threads) if threads > 0 else available_threads())


def predictions_frame(ids: pl.Series, p: Sequence[float], threshold: float, model: str, suite: str) -> pl.DataFrame:
    """The predictions layout (``COLUMNS``): id, p_hateful, pred
    (``p_hateful >= threshold``), model, suite."""
    p = np.asarray(p, dtype=np.float64)
    return pl.DataFrame(
        {
            "id": ids.cast(pl.Utf8),
            "p_hateful": pl.Series(p, dtype=pl.Float64),
            "pred": np.where(p >= threshold, HATEFUL, NON_HATEFUL),
            "model": [model] * len(ids),
            "suite": [suite] * len(ids),
        }
    ).select(COLUMNS)


def load_model(model_dir: str | Path):
    from hatecheck_pipeline.models.base import load_tokenizer
    from hatecheck_pipeline.models.pooled import load_classifier

    model = load_classifier(model_dir)
    model.to(pick_device()).eval()
    return model, load_tokenizer(str(model_dir))


def run(
    model_dir: Path,
    cases: pl.DataFrame,
    model_name: str,
    suite_name: str,
    out: Path,
    *,
    max_length: int,
    batch_size: int,
    threshold: float = 0.5,
    threads: int = 2,
    amp: bool = True,
    cpu_bf16: bool | str = False,
    progress: bool = True,
    loaded: tuple | None = None,
) -> pl.DataFrame:
    """Predict ``cases`` (columns ``id``, ``text``) and write the Parquet,
    the precision that ran in its metadata (``PRECISION_KEY``).
    ``threads`` <= 0 picks :func:`available_threads`; ``loaded``: the
    (model, tokenizer) of ``model_dir`` when the caller has loaded it."""
    set_threads(threads)
    model, tokenizer = loaded or load_model(model_dir)
    # an empty suite (e.g. a generated suite whose candidates all failed validation) has no predictions
    p = (
        predict_proba(model, tokenizer, cases["text"].to_list(), max_length, batch_size, amp=amp, progress=progress, cpu_bf16=cpu_bf16)
        if cases.height
        else np.zeros(0)
    )
    frame = predictions_frame(cases["id"], p, threshold, model_name, suite_name)
    ran = precision(next(model.parameters()).device, amp, cpu_bf16)
    write_parquet(frame, out, metadata={PRECISION_KEY: ran})
    return frame


def predict(
    model: str,
    suites: Sequence[Suite],
    model_dir: Path,
    tables: Mapping[str, Path],
    predictions: Sequence[Path],
    profile: Profile,
    scheme: str,
    prediction: Mapping[str, Any],
    amp: bool,
    seed: int,
) -> str:
    """Stage ``predict_<model>_<group>``: p(hateful) for the cases of each
    suite of a group (a held-out set, HateCheck, the MHC languages, ...),
    read from ``tables[suite]`` (the suite's table preprocessed with the
    model's ``scheme``), sorted by id, one file per suite (``predictions``
    in the order of ``suites``). The model is loaded once for the group.
    A profile capping ``max_cases_per_suite`` (``max_expanded_cases_per_suite``
    for an expanded suite) predicts a draw seeded with the model's ``seed``;
    its ``predict_cpu_bf16`` picks bf16 autocast on a CPU."""
    from hatecheck_pipeline.core.kinds import case_cap_key
    from hatecheck_pipeline.suites.sample import drawn_cases

    threads = prediction["threads"]
    set_threads(threads)  # before loading, so the load uses them too
    loaded = load_model(model_dir)
    lines = []
    for suite, out in zip(suites, predictions, strict=True):
        cap = profile.get(case_cap_key({}, suite.expanded))
        cases = drawn_cases(suite.load(scheme, table=str(tables[suite.name])), suite.id_column, cap, seed)
        frame = run(
            Path(model_dir),
            cases,
            model,
            suite.name,
            Path(out),
            max_length=profile["max_length"],
            batch_size=prediction["batch_size"],
            threshold=prediction["threshold"],
            threads=threads,
            amp=amp,
            cpu_bf16=profile.get("predict_cpu_bf16", False),  # absent: fp32
            loaded=loaded,
        )
        share = (frame["pred"] == "hateful").mean() if frame.height else 0.0
        lines.append(f"{model} on {suite.name}: {frame.height} cases, {share:.1%} predicted hateful ({recorded_precision(out)}) -> {out}")
    return "\n".join(lines)
