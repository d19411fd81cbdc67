"""Explainability against HateXplain's human rationales (ERASER metrics,
DeYoung et al. 2020, as HateXplain reports them).

All functions work on word-level token lists (HateXplain ``post_tokens``):
gold = 0/1 per token, predicted hard rationale = 0/1 per token (the top-k
tokens of an attribution), soft = one score per token.

- plausibility: IOU F1 (macro over posts; a predicted span matches when its
  best IOU with a gold span is > ``threshold``), token F1 (mean of the
  per-post token F1), AUPRC (mean over posts of the area under the
  precision-recall curve of the soft scores);
- faithfulness: comprehensiveness = p_j(x) - p_j(x minus r), sufficiency =
  p_j(x) - p_j(r), j = the class predicted on x, r = the top-k tokens.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def gold_rationale(rationales: Sequence[Sequence[int]], how: str = "union") -> list[int]:
    """Combine the annotators' 0/1 vectors: ``union`` (HateXplain's choice
    for its evaluation) or ``majority``.

    >>> gold_rationale([[1, 0, 0], [0, 0, 1]])
    [1, 0, 1]
    >>> gold_rationale([[1, 0, 0], [1, 0, 1], [0, 0, 1]], how="majority")
    [1, 0, 1]
    """
    arr = np.asarray([list(r) for r in rationales], dtype=int)
    if arr.size == 0:
        return []
    if how == "union":
        return arr.max(axis=0).astype(int).tolist()
    if how == "majority":
        return (arr.sum(axis=0) * 2 > arr.shape[0]).astype(int).tolist()
    raise ValueError(f"unknown rationale combination {how!r}: union or majority")


def spans(mask: Sequence[int]) -> list[tuple[int, int]]:
    """Maximal runs of 1s as [start, end) spans.

    >>> spans([0, 1, 1, 0, 1])
    [(1, 3), (4, 5)]
    """
    out, start = [], None
    for i, v in enumerate(list(mask) + [0]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    return out


def top_k_mask(scores: Sequence[float], k: int) -> list[int]:
    """1 for the k highest-scoring tokens (ties broken by position)."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
    chosen = set(order)
    return [int(i in chosen) for i in range(len(scores))]


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def iou_f1(gold: Sequence[Sequence[int]], pred: Sequence[Sequence[int]], threshold: float = 0.5) -> dict[str, float]:
    """ERASER's partial-match (IOU) F1, macro over posts."""
    recalls, precisions = [], []
    for g, p in zip(gold, pred):
        gs, ps = spans(g), spans(p)
        tp = 0
        for a0, a1 in ps:
            best = 0.0
            for b0, b1 in gs:
                inter = len(set(range(a0, a1)) & set(range(b0, b1)))
                union = len(set(range(a0, a1)) | set(range(b0, b1)))
                best = max(best, inter / union if union else 0.0)
            tp += best > threshold
        if gs:
            recalls.append(tp / len(gs))
        if ps:
            precisions.append(tp / len(ps))
    r = float(np.mean(recalls)) if recalls else 0.0
    p = float(np.mean(precisions)) if precisions else 0.0
    return {"precision": p, "recall": r, "f1": _f1(p, r)}


def token_f1(gold: Sequence[Sequence[int]], pred: Sequence[Sequence[int]]) -> dict[str, float]:
    """Per-post token precision/recall/F1, averaged over posts (ERASER instance macro)."""
    ps, rs, fs = [], [], []
    for g, p in zip(gold, pred):
        g, p = np.asarray(g, bool), np.asarray(p, bool)
        tp = int((g & p).sum())
        prec = tp / p.sum() if p.sum() else 0.0
        rec = tp / g.sum() if g.sum() else 0.0
        ps.append(prec)
        rs.append(rec)
        fs.append(_f1(prec, rec))
    return {"precision": float(np.mean(ps)), "recall": float(np.mean(rs)), "f1": float(np.mean(fs))}


def auprc(gold: Sequence[Sequence[int]], soft: Sequence[Sequence[float]]) -> float:
    """Mean over posts of auc(recall, precision) of the soft token scores."""
    from sklearn.metrics import auc, precision_recall_curve

    values = []
    for g, s in zip(gold, soft):
        precision, recall, _ = precision_recall_curve(np.asarray(g, int), np.asarray(s, float))
        values.append(auc(recall, precision))
    return float(np.mean(values))


def faithfulness(p_full: Sequence[float], p_without: Sequence[float], p_only: Sequence[float]) -> dict[str, float]:
    """Mean comprehensiveness and sufficiency (probabilities of the class
    predicted on the full input)."""
    full, without, only = (np.asarray(v, float) for v in (p_full, p_without, p_only))
    return {"comprehensiveness": float(np.mean(full - without)), "sufficiency": float(np.mean(full - only))}


def explainability(gold: Sequence[Sequence[int]], soft: Sequence[Sequence[float]], k: int, threshold: float = 0.5) -> dict[str, Any]:
    """Plausibility metrics of soft attributions (hard rationale = top-k)."""
    hard = [top_k_mask(s, k) for s in soft]
    return {
        "iou_f1": iou_f1(gold, hard, threshold)["f1"],
        "token_f1": token_f1(gold, hard)["f1"],
        "auprc": auprc(gold, soft),
        "n_posts": len(gold),
    }
