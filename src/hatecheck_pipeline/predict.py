"""Fast batched prediction: p(hateful) for every case of a suite.

No per-example model calls: texts are tokenised once, sorted by length,
cut into batches padded only to their own longest sequence, and run under
``torch.inference_mode`` (autocast on CUDA); results go back to the input
order.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl
import torch

HATEFUL = 1
COLUMNS = ["id", "p_hateful", "pred", "model", "suite"]


def encode(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids per text (with special tokens, truncated, unpadded)."""
    return tokenizer(list(texts), truncation=True, max_length=max_length, add_special_tokens=True)["input_ids"]


def available_threads() -> int:
    """CPU threads worth using now: the cores this process may run on minus
    the load other processes put on them (1-minute load average), at least 1.

    On a shared machine an OpenMP team larger than the idle cores waits at
    every barrier for a descheduled thread: on 2 cores under a load of ~4,
    1 thread ran MiniLM prediction 2-3x faster than 2 threads."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return max(1, min(cores, int(cores - load + 0.5)))


def collate(seqs: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Pad to the longest sequence of the batch (dynamic padding). A batch
    whose sequences all have the same length gets no attention mask (nothing
    to mask; the model then skips building the additive mask)."""
    lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    width = int(lens.max())
    ids = np.full((len(seqs), width), pad_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, : lens[i]] = s
    batch = {"input_ids": torch.from_numpy(ids).to(device)}
    if lens.min() < width:
        batch["attention_mask"] = torch.from_numpy((np.arange(width)[None, :] < lens[:, None]).astype(np.int64)).to(device)
    return batch


def length_batches(seqs: Sequence[Sequence[int]], batch_size: int) -> list[np.ndarray]:
    """Index batches of similar token length (longest first), so padding
    stays within a batch's narrow length range."""
    order = np.argsort([-len(s) for s in seqs], kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def forward_logits(model, seqs, pad_id: int, batch_size: int, device: torch.device | None = None, amp: bool = True, progress: bool = False) -> torch.Tensor:
    """fp32 logits on CPU, in the order of ``seqs``."""
    from tqdm.auto import tqdm

    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = torch.empty((len(seqs), model.config.num_labels), dtype=torch.float32)
    ctx = (
        torch.autocast("cuda", dtype=torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
        if amp and device.type == "cuda"
        else contextlib.nullcontext()
    )
    with torch.inference_mode(), ctx:
        for idx in tqdm(length_batches(seqs, batch_size), disable=not progress, desc="predict", mininterval=5):
            batch = collate([seqs[i] for i in idx], pad_id, device)
            out[torch.as_tensor(idx)] = model(**batch).logits.float().cpu()
    model.train(was_training)
    return out


def predict_proba(model, tokenizer, texts: Sequence[str], max_length: int, batch_size: int, amp: bool = True, progress: bool = False) -> np.ndarray:
    """p(hateful) per text."""
    seqs = encode(tokenizer, texts, max_length)
    logits = forward_logits(model, seqs, tokenizer.pad_token_id, batch_size, amp=amp, progress=progress)
    return torch.softmax(logits, dim=-1)[:, HATEFUL].numpy()


def load_model(model_dir: str | Path):
    from transformers import AutoModelForSequenceClassification

    from .basemodels import load_tokenizer
    from .training import pick_device

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir))
    model.to(pick_device()).eval()
    return model, load_tokenizer(str(model_dir))


def sample_cases(cases: pl.DataFrame, cap: int | None, seed: int) -> pl.DataFrame:
    if cap is None or cases.height <= cap:
        return cases
    return cases.sample(n=cap, seed=seed, shuffle=False)


def predicted_subsample(params: Mapping[str, Any], model: str, cases: pl.DataFrame, id_column: str) -> pl.DataFrame:
    """The cases a profile capping ``max_cases_per_suite`` (smoke) predicted:
    the same seeded draw as the predict stage; all cases otherwise."""
    cap = params["profiles"][params["profile"]].get("max_cases_per_suite")
    if not cap:
        return cases
    ids = cases.select(pl.col(id_column).cast(pl.Utf8).alias("id")).sort("id")
    drawn = sample_cases(ids, cap, params["models"][model].get("seed", 42))["id"]
    return cases.filter(pl.col(id_column).cast(pl.Utf8).is_in(drawn.implode()))


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
    progress: bool = True,
) -> pl.DataFrame:
    """Predict ``cases`` (columns ``id``, ``text``) and write the Parquet.
    ``threads`` <= 0 picks :func:`available_threads`."""
    torch.set_num_threads(threads if threads > 0 else available_threads())
    model, tokenizer = load_model(model_dir)
    p = predict_proba(model, tokenizer, cases["text"].to_list(), max_length, batch_size, amp=amp, progress=progress)
    frame = pl.DataFrame(
        {
            "id": cases["id"].cast(pl.Utf8),
            "p_hateful": pl.Series(p, dtype=pl.Float64),
            "pred": np.where(p >= threshold, "hateful", "non-hateful"),
            "model": [model_name] * cases.height,
            "suite": [suite_name] * cases.height,
        }
    ).select(COLUMNS)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(out).with_suffix(".tmp.parquet")
    frame.write_parquet(tmp)
    tmp.replace(out)
    return frame
