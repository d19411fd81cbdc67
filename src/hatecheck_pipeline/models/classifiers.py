"""Classifiers trained elsewhere, tested as they are (``models.<name>.kind``):
each kind is a module of :mod:`hatecheck_pipeline.models.kinds`
(``pretrained``: a transformers model directory or hub id; ``onnx``: an
ONNX file; ``python``: ``module:function``; ``http``: a scoring API), and
every loaded classifier is a
:class:`~hatecheck_pipeline.models.kinds.base.Classifier`: its
:meth:`identity` (what the model card and lineage name: a content hash, a
hub id and revision, a module's file hash and package version, a URL and
snapshot), :meth:`p_hateful` and the ``precision`` it runs in.

Every kind reads the suites' texts as published (no text scheme). Bad
input stops with one line: :class:`ClassifierError` names the model, the
file and the rule; a ``python`` function that raises stops with one line
naming the function, the exception and the file:line where it was raised
(:class:`~hatecheck_pipeline.models.user_code.UserCodeError`, its
traceback kept in the stage's log).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Any, Sequence

import numpy as np

from hatecheck_pipeline.models import kinds
from hatecheck_pipeline.models.kinds.base import Classifier, ClassifierError, ClassProbabilities, LoadOptions

__all__ = ["Classifier", "ClassifierError", "ClassProbabilities", "decide", "load"]


def decide(clf: Classifier, texts: Sequence[str], decision: str, language: str | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """p(hateful) per text and, for ``decision: argmax``, whether a hateful
    class is the top class (None: the label is p(hateful) at the threshold).
    ``language``: the texts' ISO 639-1 code, for a classifier told it (a
    scoring API). A classifier without classes (a function, a scoring API)
    gives p(hateful) only: argmax does not apply to it."""
    if decision != "argmax":
        return clf.p_hateful(texts, language=language), None
    if not isinstance(clf, ClassProbabilities):
        raise ClassifierError(f"model {clf.model}: decision argmax needs class probabilities; a {type(clf).__name__} gives p(hateful) only")
    probs = clf.probabilities(texts)
    p = probs[:, clf.hateful].sum(axis=1)
    if p.size and not np.isfinite(p).all():
        raise ClassifierError(f"model {clf.model}: NaN or infinite class probabilities")
    return p, np.isin(probs.argmax(axis=1), clf.hateful) if p.size else np.zeros(0, dtype=bool)


def load(
    model: str, spec: Mapping[str, Any], path: Path | None = None, threads: int = 1, cpu_bf16: bool | str = False, amp: bool = True
) -> Classifier:
    """The classifier ``spec`` describes, loaded by its kind; ``path``: the
    file or directory its stage reads (a fetched or local ONNX file, a
    model directory); ``cpu_bf16``: a transformers model's bf16 autocast
    on a CPU (the predict stage's rule, models/bf16.py); ``amp``: its
    autocast on CUDA."""
    return kinds.of(spec, model).load(model, spec, LoadOptions(path=path, threads=threads, cpu_bf16=cpu_bf16, amp=amp))
