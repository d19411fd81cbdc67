"""The ``models.<name>`` entry of a classifier given on the command line
(``hatecheck-pipeline evaluate MODEL``): its kind read from what MODEL is
(the first kind of the registry, in its detection order, that takes it),
what can be read from the model itself (an ONNX file's input and output, a
config's hateful labels) filled in by that kind, what cannot named as the
option to give."""

from __future__ import annotations

from typing import Any, Sequence

from hatecheck_pipeline.models import kinds
from hatecheck_pipeline.models.kinds.base import guess_hateful

__all__ = ["classifier_spec", "guess_hateful"]


def classifier_spec(
    ref: str,
    *,
    hateful: Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
    input_name: str | None = None,
    output: str | None = None,
    decision: str | None = None,
    revision: str | None = None,
    max_length: int | None = None,
    batch_size: int | None = None,
    api_format: str | None = None,
    key_env: str | None = None,
    suites: Sequence[str],
    seed: int = 42,
) -> dict[str, Any]:
    """A ``models.<name>`` entry for ``ref``, as ``evaluate`` reads it: a
    scoring API's URL (``http``, Perspective's format unless ``api_format``
    says ``json``; the key from the environment variable ``key_env``), an
    ``.onnx`` file (its one string input and its probabilities output found
    in the file), ``module:function`` (``python``), else a model directory
    or a hub id (``pretrained``; hateful classes guessed from its
    ``id2label`` when not given). What cannot be guessed is one line
    naming the option to give."""
    kind = kinds.detect(ref)
    options = {
        "hateful": hateful,
        "classes": classes,
        "input_name": input_name,
        "output": output,
        "revision": revision,
        "api_format": api_format,
        "key_env": key_env,
    }
    spec: dict[str, Any] = {"suites": list(suites), "seed": seed, "kind": kind.name, **kind.spec_for(ref, options)}
    for key, value in (("decision", decision), ("max_length", max_length), ("batch_size", batch_size)):
        if value is not None:
            spec[key] = value
    return spec
