"""HateXplain's bias models: 2-class (toxic vs non-toxic) predictions on the
test set.

The paper's bias columns (GMB-Subgroup, -BPSN, -BNSP; Table 6) are computed
from 2-class models: the authors' ``testing_for_bias.py`` loads each model
with ``num_classes = 2`` (classes ``non-toxic``, ``toxic``; hate speech and
offensive are toxic) and scores ``classification_scores["toxic"]``, the
softmax probability of toxic. The stage ``hatexplain_toxicity_<model>``
writes that probability for every test post; the metrics stage of the
3-class model the entry pairs with (``bias.hatexplain.two_class``) takes
its bias columns from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import polars as pl
import torch

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.files import write_parquet

TOXIC = "toxic"
NON_TOXIC = "non-toxic"


def toxic_index(config) -> int:
    """The model output index of ``toxic``; a model without the 2 classes is an error."""
    label2id = {str(k): int(v) for k, v in config.label2id.items()}
    if set(label2id) != {TOXIC, NON_TOXIC}:
        raise ValueError(f"a HateXplain bias model predicts {{{NON_TOXIC}, {TOXIC}}}; this one predicts {sorted(label2id)}")
    return label2id[TOXIC]


def run(model_dir: Path, table: Path, out: Path, *, label: str, max_length: int, batch_size: int) -> pl.DataFrame:
    """p(toxic) of every test post (word-tokenised, as the explain stage
    tokenises them)."""
    from hatecheck_pipeline.audits.explain import encode_words, load_classifier
    from hatecheck_pipeline.models.runtime import forward_logits

    model, tokenizer = load_classifier(model_dir)
    test = pl.read_parquet(table, columns=["id", "split", "post_tokens"]).filter(pl.col("split") == "test").sort("id")
    ids, _ = encode_words(tokenizer, test["post_tokens"].to_list(), max_length)
    probs = torch.softmax(forward_logits(model, ids, tokenizer.pad_token_id, batch_size, amp=False), dim=-1).numpy().astype(np.float64)
    p = probs[:, toxic_index(model.config)]
    frame = pl.DataFrame({"id": test["id"], "p_toxic": p, "pred2": np.where(p >= 0.5, TOXIC, NON_TOXIC), "model": label})
    write_parquet(frame, out)
    return frame


def hatexplain_toxicity(
    model: str,
    model_dir: Path,
    model_card: Path,
    table: Path,
    predictions: Path,
    profile: Profile,
    explain: Mapping[str, Any],
    threads: int,
) -> str:
    """Stage ``hatexplain_toxicity_<model>``: a 2-class HateXplain model's
    p(toxic) on every test post (the paper's bias columns)."""
    from hatecheck_pipeline.audits.explain import describe
    from hatecheck_pipeline.core.cpu import bounded_threads

    torch.set_num_threads(bounded_threads(threads))
    card: dict[str, Any] = json.loads(Path(model_card).read_text("utf-8"))
    frame = run(
        Path(model_dir),
        Path(table),
        Path(predictions),
        label=describe(model, card),
        max_length=profile["max_length"],
        batch_size=explain["batch_size"],
    )
    return f"{model}: p(toxic) of {frame.height} test posts ({int((frame['pred2'] == TOXIC).sum())} predicted toxic) -> {predictions}"
