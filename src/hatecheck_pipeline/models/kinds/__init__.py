"""The kinds of classifiers trained elsewhere (``models.<name>.kind``),
one module each, registered by :func:`~hatecheck_pipeline.models.kinds.base.register`
(:mod:`hatecheck_pipeline.models.kinds.base`: the :class:`Classifier`
protocol, the :class:`Kind` base class and the registry).

The kinds' modules are imported here by name, not discovered: a stage's
code fingerprint follows the static imports, so an edit of a kind re-runs
the stages that load classifiers (``tests/models/test_kinds.py`` checks
that every module of this package is imported here).
"""

from hatecheck_pipeline.models.kinds import http, onnx, pretrained, python  # noqa: F401  (each registers its kind)
from hatecheck_pipeline.models.kinds.base import (
    ClassifierError,
    Classifier,
    ClassProbabilities,
    Kind,
    LoadOptions,
    detect,
    get,
    names,
    of,
    register,
)

__all__ = ["ClassifierError", "Classifier", "ClassProbabilities", "Kind", "LoadOptions", "detect", "get", "names", "of", "register"]
