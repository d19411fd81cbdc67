"""What kind of model a ``models.<name>`` entry is (fine-tuned here, a
prompted LLM, a classifier trained elsewhere), and which profile key caps
the cases it predicts: read by the registry, the loader's cross-checks and
the stages that treat the kinds differently."""

from __future__ import annotations

from typing import Any, Mapping


def is_llm(spec: Mapping[str, Any]) -> bool:
    """Whether a ``models.<name>`` entry is a prompted LLM (``kind: llm``:
    no training, no text scheme) rather than a fine-tuned classifier."""
    return spec.get("kind") == "llm"


def model_kind(spec: Mapping[str, Any]) -> str:
    """``finetuned`` (trained here; the default), ``llm`` or the kind of a
    classifier trained elsewhere (models/kinds/).

    >>> model_kind({"role": "bert"}), model_kind({"kind": "onnx"})
    ('finetuned', 'onnx')
    """
    return str(spec.get("kind") or "finetuned")


def is_finetuned(spec: Mapping[str, Any]) -> bool:
    """Whether the pipeline trains the model (a train stage, a text scheme)."""
    return model_kind(spec) == "finetuned"


def is_classifier(spec: Mapping[str, Any]) -> bool:
    """Whether the model is a classifier trained elsewhere, tested as it
    is: any kind but ``finetuned`` and ``llm`` (the schema holds the
    classifier kinds, the models layer's registry of kinds loads them).

    >>> is_classifier({"kind": "onnx"}), is_classifier({"kind": "llm"}), is_classifier({"role": "bert"})
    (True, False, False)
    """
    return model_kind(spec) not in ("finetuned", "llm")


def case_cap_key(spec: Mapping[str, Any], expanded: bool = False) -> str:
    """The profile key capping the cases a model predicts per suite (its
    predict stage draws them; score and bias stages read the same draw):
    ``llm_max_cases_per_suite`` for a prompted LLM, else
    ``max_expanded_cases_per_suite`` for an expanded suite and
    ``max_cases_per_suite`` for the others.

    >>> case_cap_key({"kind": "llm"}), case_cap_key({"role": "bert"}), case_cap_key({"role": "xlmt"}, expanded=True)
    ('llm_max_cases_per_suite', 'max_cases_per_suite', 'max_expanded_cases_per_suite')
    """
    if is_llm(spec):
        return "llm_max_cases_per_suite"
    return "max_expanded_cases_per_suite" if expanded else "max_cases_per_suite"
