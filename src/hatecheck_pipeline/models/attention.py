"""Attention supervision (BERT-HateXplain, Mathew et al. 2021, Figure 2 and
the appendix "Attention supervision in BERT").

The ground-truth attention of a post is built from its annotators' 0/1
rationale masks over its word tokens: the masks' mean, times a temperature,
through a softmax; a post without rationales (HateXplain's normal posts)
gets the uniform distribution. Every subword takes its word's value and the
vector is renormalised over the post's non-special tokens.

The extra loss is lambda x the mean over the supervised heads of the
cross-entropy between that vector and the head's [CLS] attention row in the
chosen encoder layer. :func:`hatecheck_pipeline.models.loop.train_loop`
adds it when the recipe has ``attention_supervision`` and the training
split carries rationales.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch


@dataclass(frozen=True)
class Supervision:
    lam: float
    layer: int  # encoder layer index (-1 = last)
    heads: int  # the first `heads` heads of that layer are supervised
    temperature: float

    @classmethod
    def from_recipe(cls, section: Mapping[str, Any]) -> "Supervision | None":
        spec = section.get("attention_supervision")
        if not spec:
            return None
        return cls(float(spec["lambda"]), int(spec["layer"]), int(spec["heads"]), float(spec["temperature"]))


def ground_truth(masks: Sequence[Sequence[int]], n_words: int, temperature: float) -> list[float]:
    """Word-level ground-truth attention (sums to 1).

    >>> ground_truth([], 4, 5.0)
    [0.25, 0.25, 0.25, 0.25]
    >>> [round(v, 3) for v in ground_truth([[1, 0], [1, 0]], 2, 1.0)]
    [0.731, 0.269]
    """
    if n_words == 0:
        return []
    arr = np.asarray([list(m) for m in masks], dtype=np.float64)
    if arr.size == 0 or arr.sum() == 0:
        return [1.0 / n_words] * n_words
    if arr.shape[1] != n_words:
        raise ValueError(f"rationale masks cover {arr.shape[1]} tokens, the post has {n_words}")
    z = temperature * arr.mean(axis=0)
    e = np.exp(z - z.max())
    return (e / e.sum()).tolist()


def subword_targets(word_attention: Sequence[float], word_ids: Sequence[int | None]) -> list[float]:
    """Each token takes its word's value (special tokens 0), renormalised.

    >>> subword_targets([0.5, 0.5], [None, 0, 1, 1, None])
    [0.0, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 0.0]
    """
    vals = np.asarray([0.0 if w is None else float(word_attention[w]) for w in word_ids])
    total = vals.sum()
    return (vals / total).tolist() if total > 0 else vals.tolist()


def token_targets(
    tokenizer, texts: Sequence[str], masks: Sequence[Sequence[Sequence[int]]], max_length: int, temperature: float
) -> list[list[float]]:
    """Per text (word tokens = ``text.split()``): the subword-level
    ground-truth attention, aligned with ``runtime.encode`` of the same text."""
    out = []
    for text, m in zip(texts, masks):
        words = text.split()
        enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_length)
        out.append(subword_targets(ground_truth(m, len(words), temperature), enc.word_ids()))
    return out


def attention_loss(attentions: Sequence[torch.Tensor], targets: torch.Tensor, sup: Supervision) -> torch.Tensor:
    """lambda x mean over the supervised heads of the cross-entropy between
    ``targets`` (batch x tokens, zero on padding) and the [CLS] attention
    rows of layer ``sup.layer``; averaged over the batch."""
    att = attentions[sup.layer][:, : sup.heads, 0, :].float()  # (B, heads, T)
    ce = -(targets[:, None, :] * torch.log(att.clamp_min(1e-12))).sum(dim=-1)  # (B, heads)
    return sup.lam * ce.mean()


def pad_targets(rows: Sequence[Sequence[float]], width: int, device: torch.device) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(r[:width], dtype=torch.float32)
    return out.to(device)


def read_rationales(path: Path) -> dict[str, list[list[int]]]:
    """``{post id: [annotator 0/1 masks over post_tokens]}`` from JSON."""
    data = json.loads(Path(path).read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object {{post id: [[0/1, ...], ...]}}")
    return {str(k): [list(map(int, m)) for m in v] for k, v in data.items()}
