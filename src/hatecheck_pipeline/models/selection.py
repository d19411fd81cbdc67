"""Model selection on the dev split: the dev metrics of a binary or N-class
model, and patience on one of them (early stopping, best-epoch choice)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hatecheck_pipeline.models.recipe import BINARY, LabelSet

METRICS = ("dev_f1_hateful", "dev_macro_f1", "dev_loss")


class EarlyStopping:
    """Patience on a dev metric (higher is better except for losses)."""

    def __init__(self, metric: str, patience: int | None, best: float | None = None, best_epoch: int = 0, bad: int = 0):
        self.metric, self.patience = metric, patience
        self.sign = -1.0 if metric.endswith("loss") else 1.0
        self.best, self.best_epoch, self.bad = best, best_epoch, bad

    def update(self, epoch: int, value: float) -> tuple[bool, bool]:
        """Record an epoch's value: (improved, stop now)."""
        improved = self.best is None or self.sign * value > self.sign * self.best
        if improved:
            self.best, self.best_epoch, self.bad = value, epoch, 0
        else:
            self.bad += 1
        return improved, self.patience is not None and self.bad >= self.patience

    def state(self) -> dict:
        return {"metric": self.metric, "patience": self.patience, "best": self.best, "best_epoch": self.best_epoch, "bad": self.bad}


def binary_metrics(labels: np.ndarray, probs: np.ndarray, weights: Sequence[float]) -> dict[str, float]:
    from sklearn.metrics import f1_score

    pred = (probs[:, 1] >= 0.5).astype(int)
    logp = np.log(np.clip(probs, 1e-12, 1.0))
    w = np.asarray(weights)[labels]
    loss = float(-(w * logp[np.arange(len(labels)), labels]).sum() / w.sum())
    return {
        "dev_loss": loss,
        "dev_f1_hateful": float(f1_score(labels, pred, pos_label=1, zero_division=0)),
        "dev_macro_f1": float(f1_score(labels, pred, average="macro", zero_division=0)),
    }


def multiclass_metrics(labels: np.ndarray, probs: np.ndarray, weights: Sequence[float], hateful: int) -> dict[str, float]:
    """Dev metrics of an N-class model: weighted loss, F1 of the hateful
    class and macro F1 over all classes of the argmax prediction."""
    from sklearn.metrics import f1_score

    pred = probs.argmax(axis=1)
    logp = np.log(np.clip(probs, 1e-12, 1.0))
    w = np.asarray(weights)[labels]
    loss = float(-(w * logp[np.arange(len(labels)), labels]).sum() / w.sum())
    every = list(range(probs.shape[1]))
    return {
        "dev_loss": loss,
        "dev_f1_hateful": float(f1_score(labels, pred, labels=[hateful], average="macro", zero_division=0)),
        "dev_macro_f1": float(f1_score(labels, pred, labels=every, average="macro", zero_division=0)),
    }


def dev_metrics(labels: np.ndarray, probs: np.ndarray, weights: Sequence[float], label_set: LabelSet) -> dict[str, float]:
    if label_set == BINARY:
        return binary_metrics(labels, probs, weights)
    return multiclass_metrics(labels, probs, weights, label_set.label2id[label_set.hateful])
