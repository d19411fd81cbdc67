"""Kind ``pretrained``: a sequence-classification model (a
``save_pretrained`` directory or a hub id), run by the predict stage's
batched, length-sorted forward passes
(:func:`hatecheck_pipeline.models.predict.predict_proba`'s machinery) on the
profile's GPU when it has one, in the fine-tuned models' precision;
``hateful`` names the classes (``id2label`` names or indices) whose
probabilities sum to p(hateful); ``trust_remote_code`` stays off. A hub id
is named by the commit its ``revision`` resolved to (offline, in the local
Hugging Face cache), and the predict stages load that commit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hatecheck_pipeline.models.kinds.base import ClassifierError, Kind, LoadOptions, guess_hateful, register


def hateful_indices(model: str, config: Any, hateful: Sequence[Any]) -> list[int]:
    """The class indices ``hateful`` names (``id2label`` names or indices)."""
    id2label = {int(k): str(v) for k, v in (getattr(config, "id2label", None) or {}).items()}
    by_name = {v: k for k, v in id2label.items()}
    out = []
    for h in hateful:
        if isinstance(h, int) and h in id2label:
            out.append(h)
        elif str(h) in by_name:
            out.append(by_name[str(h)])
        else:
            raise ClassifierError(f"model {model}: hateful class {h!r} is not one of its labels {id2label}")
    return out


COMMIT_PATTERN = r"[0-9a-f]{40}"


def hub_commit(ref: str, revision: str | None = None, cache_dir: str | Path | None = None) -> str | None:
    """The commit a hub id's ``revision`` (default main) resolves to in the
    local Hugging Face cache, read offline: the name of the snapshot folder
    that holds its config.json (a revision that is a commit already is
    kept). None when the cache does not hold it.

    >>> hub_commit("org/model", "0123456789abcdef0123456789abcdef01234567")
    '0123456789abcdef0123456789abcdef01234567'
    """
    from huggingface_hub import try_to_load_from_cache

    if revision and re.fullmatch(COMMIT_PATTERN, revision):
        return revision
    try:
        found = try_to_load_from_cache(ref, "config.json", cache_dir=cache_dir, revision=revision or "main")
    except (ValueError, OSError):  # not a valid repo id
        return None
    return Path(found).parent.name if isinstance(found, str) and re.fullmatch(COMMIT_PATTERN, Path(found).parent.name) else None


class PretrainedClassifier:
    def __init__(
        self, model: str, ref: str, spec: Mapping[str, Any], revision: str | None = None, cpu_bf16: bool | str = False, amp: bool = True
    ):
        from transformers import AutoConfig, AutoModelForSequenceClassification

        from hatecheck_pipeline.models.base import load_tokenizer
        from hatecheck_pipeline.models.runtime import pick_device

        self.model, self.ref, self.revision = model, ref, revision
        local = Path(ref).exists()
        if local and not (Path(ref) / "config.json").is_file():
            raise ClassifierError(f"model {model}: {ref}: not a model directory (no config.json)")
        extra = {} if local or not revision else {"revision": revision}
        try:
            config = AutoConfig.from_pretrained(ref, trust_remote_code=False, **extra)
            if local:  # a directory this pipeline fine-tuned may hold its mean-pooled head
                from hatecheck_pipeline.models.pooled import load_classifier

                self.net = load_classifier(ref)
            else:
                self.net = AutoModelForSequenceClassification.from_pretrained(ref, trust_remote_code=False, **extra)
            self.tokenizer = load_tokenizer(ref)
        except (OSError, ValueError, KeyError) as exc:
            raise ClassifierError(
                f"model {model}: {ref}: not a sequence-classification model ({' '.join(str(exc).split())[:300]})"
            ) from exc
        self.hateful = hateful_indices(model, config, spec["hateful"])
        self.max_length = int(spec.get("max_length") or 128)
        self.batch_size = int(spec.get("batch_size") or 32)
        self.net.to(pick_device()).eval()
        self.local = local
        self.cpu_bf16, self.amp = cpu_bf16, amp
        # a hub id's identity is the commit it loaded, resolved offline once it is in the cache (not "main")
        self.commit = None if local else hub_commit(ref, revision)

    def identity(self) -> dict[str, Any]:
        from hatecheck_pipeline.models.base import content_hash

        if self.local:
            return {"ref": self.ref, "content_sha256": content_hash(self.ref)}
        asked = self.revision or "main"
        revision = self.commit or (
            f"unresolved: {asked} of {self.ref} is not in the local Hugging Face cache (resolved offline only), so its commit is not known"
        )
        return {"ref": self.ref, "revision": revision, "requested_revision": asked}

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """[n, classes] softmax probabilities, in the order of ``id2label``."""
        import torch

        from hatecheck_pipeline.models.runtime import encode, forward_logits

        if not texts:
            return np.zeros((0, self.net.config.num_labels))
        seqs = encode(self.tokenizer, texts, self.max_length)
        logits = forward_logits(
            self.net, seqs, self.tokenizer.pad_token_id, self.batch_size, amp=self.amp, progress=True, cpu_bf16=self.cpu_bf16
        )
        return torch.softmax(logits.float(), dim=-1).numpy().astype(np.float64)

    def p_hateful(self, texts: Sequence[str], language: str | None = None) -> np.ndarray:
        return self.probabilities(texts)[:, self.hateful].sum(axis=1)

    @property
    def precision(self) -> str:
        """What the forward passes run in, as the predict stage names it."""
        from hatecheck_pipeline.models.runtime import precision

        return precision(next(self.net.parameters()).device, self.amp, self.cpu_bf16)


@register
class Pretrained(Kind):
    name = "pretrained"
    order = 100  # what no other kind takes
    mem_mb = 3000
    gpu = True
    autocast = True
    has_classes = True

    def detects(self, ref: str) -> bool:
        return True

    def spec_for(self, ref: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """The directory (resolved) or hub id, its ``revision`` when given;
        ``hateful`` guessed from its config's ``id2label`` when not given
        (an index given as digits read as an index)."""
        path = Path(ref)
        revision, hateful = options.get("revision"), options.get("hateful")
        spec: dict[str, Any] = {"model": str(path.resolve()) if path.exists() else ref}
        if revision:
            spec["revision"] = revision
        if not hateful:
            from transformers import AutoConfig

            try:
                config = AutoConfig.from_pretrained(spec["model"], trust_remote_code=False, **({"revision": revision} if revision else {}))
            except (OSError, ValueError) as exc:
                raise ClassifierError(
                    f"{ref}: not a model directory, ONNX file, module:function or reachable hub id ({' '.join(str(exc).split())[:200]})"
                ) from exc
            labels = [str(v) for _, v in sorted((int(k), v) for k, v in (config.id2label or {}).items())]
            hateful = guess_hateful(labels)
            if not hateful:
                raise ClassifierError(f"{ref}: its labels {labels} name no hateful class: give --hateful (a label or an index)")
        spec["hateful"] = [int(h) if str(h).isdigit() else h for h in hateful]
        return spec

    def source(self, spec: Mapping[str, Any]) -> str | None:
        ref = str(spec.get("model", ""))
        return ref if Path(ref).exists() else None

    def load(self, model: str, spec: Mapping[str, Any], options: LoadOptions) -> PretrainedClassifier:
        return PretrainedClassifier(model, str(options.path or spec["model"]), spec, spec.get("revision"), options.cpu_bf16, options.amp)

    def as_registered(self, spec: Mapping[str, Any], identity: Mapping[str, Any]) -> dict[str, Any]:
        """A hub id's commit, as the card names it (so a branch that moved
        since does not change the model)."""
        spec = dict(spec)
        if re.fullmatch(COMMIT_PATTERN, str(identity.get("revision", ""))):
            spec["revision"] = identity["revision"]
        return spec
