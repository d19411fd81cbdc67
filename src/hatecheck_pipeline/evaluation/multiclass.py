"""All-class scores of a multiclass model on its held-out test set.

The held-out score stages score every model as a binary classifier
(p(hateful) at the prediction threshold against the binary ``label``). A
model trained on a dataset's original classes (a recipe with ``labels``:
HateXplain's hate speech / offensive / normal, Davidson's hate /
offensive / neither for the HateCheck paper's appendix F) is also scored
here on those classes: the predicted class is the argmax over all classes,
and the figures are the ones the papers report for such models: micro F1
(= accuracy for single-label classes; HateCheck appendix F), weighted-average
F1 (appendix F), macro F1 (HateXplain Table 6), per-class F1 and the
confusion matrix, each with a case-level percentile bootstrap interval
(held-out sets keep the case-level resampling unit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.files import InputError, write_json
from hatecheck_pipeline.evaluation.metrics import Bootstrap, interval, resample_indices

FIGURES = ("micro_f1", "weighted_f1", "macro_f1")


def confusion(gold: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """k x k counts, rows gold, columns predicted.

    >>> confusion(np.array([0, 1, 2, 2]), np.array([0, 2, 2, 1]), 3).tolist()
    [[1, 0, 0], [0, 0, 1], [0, 1, 1]]
    """
    return np.bincount(gold * k + pred, minlength=k * k).reshape(k, k)


NO_CLASS_CASE = "no gold and no predicted case of the class (2TP + FP + FN = 0)"


def scores(cm: np.ndarray) -> dict[str, Any]:
    """Micro, weighted-average and macro F1 (percent) and per-class F1 of
    a confusion matrix. A class with no gold and no predicted case has no
    F1 (None, not 0): the macro F1 is the mean over the classes whose F1 is
    defined (scikit-learn's macro average over the labels present), its
    weight in the weighted F1 is 0 either way.

    >>> s = scores(confusion(np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2]), 3))
    >>> s["micro_f1"], round(s["macro_f1"], 1), round(s["weighted_f1"], 1), [round(f, 1) for f in s["per_class_f1"]]
    (75.0, 77.8, 75.0, [66.7, 66.7, 100.0])
    >>> s = scores(confusion(np.array([0, 1]), np.array([0, 1]), 3))
    >>> s["macro_f1"], s["per_class_f1"]
    (100.0, [100.0, 100.0, None])
    """
    tp = np.diag(cm).astype(float)
    support, predicted = cm.sum(axis=1).astype(float), cm.sum(axis=0).astype(float)
    denom = support + predicted
    defined = denom > 0
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=defined)
    n = cm.sum()
    return {
        "micro_f1": 100.0 * float(tp.sum() / n) if n else None,
        "weighted_f1": 100.0 * float((f1 * support).sum() / n) if n else None,
        "macro_f1": 100.0 * float(f1[defined].mean()) if defined.any() else None,
        "per_class_f1": [100.0 * float(f) if d else None for f, d in zip(f1, defined)],
    }


def bootstrap(gold: np.ndarray, pred: np.ndarray, k: int, boot: Bootstrap) -> dict[str, tuple[float, float] | None]:
    """Case-level percentile intervals of :data:`FIGURES`: the binary
    scores' resamples (``metrics.resample_indices``: cases drawn with
    replacement, ``boot.samples`` times, seeded) and their intervals
    (``metrics.interval``), each resample's figures from its confusion
    matrix."""
    if boot.samples <= 0 or len(gold) == 0:
        return {f: None for f in FIGURES}
    draws = {f: np.empty(boot.samples) for f in FIGURES}
    for b, idx in enumerate(resample_indices(len(gold), boot.samples, boot.seed)):
        s = scores(confusion(gold[idx], pred[idx], k))
        for f in FIGURES:
            draws[f][b] = np.nan if s[f] is None else s[f] / 100
    cis = {f: interval(d, boot.level) for f, d in draws.items()}
    return {f: None if ci[0] is None else ci for f, ci in cis.items()}


def evaluate(
    gold: Sequence[str], pred: Sequence[str], classes: Sequence[str], hateful: str, boot: Bootstrap = Bootstrap()
) -> dict[str, Any]:
    """The all-class figures of gold vs predicted class names, plus the
    binary collapse (``hateful`` vs the rest, from the same argmax)."""
    index = {c: i for i, c in enumerate(classes)}
    unknown = sorted(set(gold) - set(index))
    if unknown:
        raise InputError(f"gold classes {unknown} are not among the model's classes {list(classes)}")
    g = np.array([index[c] for c in gold], dtype=np.int64)
    p = np.array([index[c] for c in pred], dtype=np.int64)
    k = len(classes)
    cm = confusion(g, p, k)
    s = scores(cm)
    ci = bootstrap(g, p, k, boot)
    h = index[hateful]
    binary = scores(confusion((g == h).astype(np.int64), (p == h).astype(np.int64), 2))
    out: dict[str, Any] = {
        f: {
            "value": None if s[f] is None else round(s[f], 1),
            "ci_low": None if ci[f] is None else ci[f][0],
            "ci_high": None if ci[f] is None else ci[f][1],
        }
        for f in FIGURES
    }
    out |= {
        "n": int(len(g)),
        "classes": list(classes),
        "per_class": {
            c: {
                "f1": None if s["per_class_f1"][i] is None else round(s["per_class_f1"][i], 1),
                **({"undefined": NO_CLASS_CASE} if s["per_class_f1"][i] is None else {}),
                "support": int(cm[i].sum()),
                "predicted": int(cm[:, i].sum()),
            }
            for i, c in enumerate(classes)
        },
        "confusion": {"rows_gold_columns_predicted": list(classes), "counts": cm.tolist()},
        "binary_macro_f1_from_argmax": None if binary["macro_f1"] is None else round(binary["macro_f1"], 1),
        "resampling_unit": "case",  # held-out sets: cases are independent (no templates)
        "bootstrap": boot.record("case"),
    }
    return out


def heldout_multiclass(
    model: str,
    dataset: str,
    model_dir: Path,
    table: Path,
    out: Path,
    labels: Mapping[str, Any],
    profile: Profile,
    seed: int,
    prediction: Mapping[str, Any],
    amp: bool,
    bootstrap: Bootstrap,
) -> str:
    """Stage ``heldout_multiclass_<model>_<dataset>``: the model's argmax
    class on every case of ``dataset``'s test split (``table``: the split
    preprocessed with the model's scheme; the profile's
    ``max_cases_per_suite`` draws the same seeded sample as the predict
    stage) against the recipe's ``labels`` column -> ``out``."""
    import torch

    from hatecheck_pipeline.models.predict import load_model, set_threads
    from hatecheck_pipeline.models.runtime import encode, forward_logits
    from hatecheck_pipeline.suites.registry import heldout
    from hatecheck_pipeline.suites.sample import sample_cases

    suite = heldout(dataset)
    column = labels["column"]
    frame = suite.load("", table=str(table)).select(pl.col("id").cast(pl.Utf8), "text", pl.col(column).alias("gold")).collect().sort("id")
    missing = frame.filter(pl.col("gold").is_null())
    if missing.height:
        raise InputError(f"{table}: row id {missing['id'][0]}: no {column!r} class (the recipe's labels column)")
    cases = sample_cases(frame, profile.get("max_cases_per_suite"), seed)
    set_threads(prediction["threads"])
    net, tokenizer = load_model(model_dir)
    id2label = {int(i): str(c) for i, c in net.config.id2label.items()}
    classes = [id2label[i] for i in range(len(id2label))]
    if classes != list(labels["classes"]):
        raise InputError(f"{model_dir}: the model's classes {classes} are not the recipe's {list(labels['classes'])}")
    logits = forward_logits(
        net,
        encode(tokenizer, cases["text"].to_list(), profile["max_length"]),
        tokenizer.pad_token_id,
        prediction["batch_size"],
        amp=amp,
        progress=True,
    )
    pred = [classes[i] for i in torch.argmax(logits, dim=-1).tolist()]
    doc = {
        "model": model,
        "dataset": dataset,
        "split": "test",
        "label_column": column,
        "prediction": "argmax over all classes",
        "cases_available": frame.height,
        "complete": cases.height == frame.height,
        **evaluate(cases["gold"].to_list(), pred, classes, labels["hateful"], bootstrap),
    }
    write_json(doc, out)
    return (
        f"{model} on {dataset} test ({doc['n']} cases, {len(classes)} classes): micro F1 {doc['micro_f1']['value']}, "
        f"weighted F1 {doc['weighted_f1']['value']}, macro F1 {doc['macro_f1']['value']} -> {out}"
    )
