"""The ``models.<name>`` entry of a classifier given on the command line
(``hatecheck-pipeline evaluate MODEL``): its kind read from what MODEL is,
what can be read from the model itself (an ONNX file's input and output, a
config's hateful labels) filled in, what cannot named as the option to give."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from hatecheck_pipeline.models import classifiers


# Label names a model's config may give its hateful class (``evaluate``'s guess).
HATEFUL_NAMES = ("hateful", "hate", "hatespeech", "hate_speech", "hate speech", "toxic")


def guess_hateful(labels: Sequence[str]) -> list[str]:
    """The labels of a model's config that name a hateful class.

    >>> guess_hateful(["NOT_HATE", "HATE"]), guess_hateful(["normal", "offensive", "hatespeech"]), guess_hateful(["LABEL_0", "LABEL_1"])
    (['HATE'], ['hatespeech'], [])
    """
    return [label for label in labels if label.strip().lower() in HATEFUL_NAMES]


def classifier_spec(ref: str, *, hateful: Sequence[str] | None = None, classes: Sequence[str] | None = None,
                    input_name: str | None = None, output: str | None = None, decision: str | None = None,
                    revision: str | None = None, max_length: int | None = None, batch_size: int | None = None,
                    api_format: str | None = None, key_env: str | None = None,
                    suites: Sequence[str], seed: int = 42) -> dict[str, Any]:
    """A ``models.<name>`` entry for ``ref``, as ``evaluate`` reads it: a
    scoring API's URL (``http``, Perspective's format unless ``api_format``
    says ``json``; the key from the environment variable ``key_env``), an
    ``.onnx`` file (its one string input and its probabilities output found
    in the file), a model directory or a hub id (``pretrained``; hateful
    classes guessed from its ``id2label`` when not given), or
    ``module:function`` (``python``). What cannot be guessed is one line
    naming the option to give."""
    path = Path(ref)
    spec: dict[str, Any] = {"suites": list(suites), "seed": seed}
    if ref.startswith(("http://", "https://")):  # a scoring API (Perspective-style by default)
        spec |= {"kind": "http", "model": ref, "format": api_format or "perspective"}
        if key_env:
            spec["key_env"] = key_env
    elif ref.endswith(".onnx") or path.is_file():
        if not path.is_file():
            raise classifiers.ClassifierError(f"{ref}: no such ONNX file")
        import onnxruntime as ort

        try:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            if "locale" not in str(exc):
                raise classifiers.ClassifierError(f"{ref}: onnxruntime cannot load it ({' '.join(str(exc).split())[:200]})") from exc
            session = ort.InferenceSession(classifiers._locale_fixed(path.read_bytes()), providers=["CPUExecutionProvider"])
        inputs = [i.name for i in session.get_inputs() if i.type == "tensor(string)"]
        outputs = [o.name for o in session.get_outputs()]
        probs = [o for o in outputs if "prob" in o.lower()] or outputs[-1:]
        if input_name is None and len(inputs) != 1:
            raise classifiers.ClassifierError(f"{ref}: its string inputs are {inputs}: name the texts' input with --input")
        if not classes:
            raise classifiers.ClassifierError(f"{ref}: name the output's classes in order with --classes (e.g. --classes non-hateful,hateful)")
        spec |= {"kind": "onnx", "model": str(path.resolve()), "input": input_name or inputs[0], "output": output or probs[0],
                 "classes": list(classes), "hateful": list(hateful or guess_hateful(classes))}
        if not spec["hateful"]:
            raise classifiers.ClassifierError(f"{ref}: none of its classes {list(classes)} is named hateful: give --hateful")
    elif ":" in ref and not path.exists():
        spec |= {"kind": "python", "model": ref}
    else:
        spec |= {"kind": "pretrained", "model": str(path.resolve()) if path.exists() else ref}
        if revision:
            spec["revision"] = revision
        if not hateful:
            from transformers import AutoConfig

            try:
                config = AutoConfig.from_pretrained(spec["model"], trust_remote_code=False, **({"revision": revision} if revision else {}))
            except (OSError, ValueError) as exc:
                raise classifiers.ClassifierError(f"{ref}: not a model directory, ONNX file, module:function or reachable hub id "
                                                  f"({' '.join(str(exc).split())[:200]})") from exc
            labels = [str(v) for _, v in sorted((int(k), v) for k, v in (config.id2label or {}).items())]
            hateful = guess_hateful(labels)
            if not hateful:
                raise classifiers.ClassifierError(f"{ref}: its labels {labels} name no hateful class: give --hateful (a label or an index)")
        spec["hateful"] = [int(h) if str(h).isdigit() else h for h in hateful]
    for key, value in (("decision", decision), ("max_length", max_length), ("batch_size", batch_size)):
        if value is not None:
            spec[key] = value
    return spec
