"""Classifiers trained elsewhere, tested as they are (``models.<name>.kind``):

- ``pretrained``: a sequence-classification model (a ``save_pretrained``
  directory or a hub id), run by the predict stage's batched, length-sorted
  forward passes (:func:`hatecheck_pipeline.models.predict.predict_proba`'s
  machinery); ``hateful`` names the classes (``id2label`` names or indices)
  whose probabilities sum to p(hateful); ``trust_remote_code`` stays off;
- ``onnx``: an ONNX text classifier run by onnxruntime: ``input`` (a string
  tensor of texts), ``output`` (a [n, classes] float tensor or a sequence of
  {class: probability} maps, as skl2onnx's ZipMap writes), ``classes`` (the
  classes in the output's order) and ``hateful``;
- ``python``: ``module:function`` taking a list of texts and returning, per
  text, a label (``hateful``/``non-hateful``, 1/0, True/False) or a
  probability of hateful in [0, 1];
- ``http``: a scoring API such as Perspective (:class:`HttpClassifier`).

Every kind reads the suites' texts as published (no text scheme). Each
loaded classifier has :meth:`identity` (what the model card and lineage
name: a content hash, a hub id and revision, a module's file hash and
package version) and :meth:`p_hateful`. Bad input stops with one line:
:class:`ClassifierError` names the model, the file and the rule; a
``python`` function that raises stops with one line naming the function,
the exception and the file:line where it was raised
(:class:`~hatecheck_pipeline.models.user_code.UserCodeError`, its traceback
kept in the stage's log).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.models.user_code import user_code_error
from hatecheck_pipeline.core.files import sha256sum
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL

# onnxruntime's StringNormalizer defaults to en_US.UTF-8, which minimal
# Linux images lack; C.UTF-8 is always there (glibc >= 2.35).
ONNX_LOCALE = "C.UTF-8"


class ClassifierError(PipelineError, ValueError):
    """A classifier that cannot be loaded or whose answers cannot be read."""


# ---------------------------------------------------------------- python


def split_ref(ref: str) -> tuple[str, str]:
    module, sep, function = ref.partition(":")
    if not sep or not module or not function:
        raise ClassifierError(f"{ref!r}: a python classifier is named module:function (e.g. mypkg.clf:predict)")
    return module, function


def module_file(ref: str) -> Path | None:
    """The source file of ``module:function``'s module, found without
    importing it (None: not found, or not a file)."""
    module, _ = split_ref(ref)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and Path(spec.origin).is_file() else None


def labels_to_p(model: str, answers: Any, n: int) -> np.ndarray:
    """A function's answers as p(hateful): labels become 1.0 / 0.0,
    probabilities are kept; one clear line on anything else."""
    try:
        values = list(answers)
    except TypeError as exc:
        raise ClassifierError(f"model {model}: the function returned {type(answers).__name__}, not a list of labels or probabilities") from exc
    if len(values) != n:
        raise ClassifierError(f"model {model}: the function returned {len(values)} answers for {n} texts")
    out = np.empty(n, dtype=np.float64)
    for i, v in enumerate(values):
        if hasattr(v, "item"):  # numpy / torch scalars
            v = v.item()
        if isinstance(v, str):
            label = v.strip().lower()
            if label not in (HATEFUL, NON_HATEFUL):
                raise ClassifierError(f"model {model}: answer {i} is {v!r}: a label must be 'hateful' or 'non-hateful' (or 1/0, or a probability)")
            out[i] = 1.0 if label == HATEFUL else 0.0
        elif isinstance(v, (bool, int, float)):
            f = float(v)
            if math.isnan(f) or not 0.0 <= f <= 1.0:
                raise ClassifierError(f"model {model}: answer {i} is {v!r}: a probability must lie in [0, 1] (and not be NaN)")
            out[i] = f
        else:
            raise ClassifierError(f"model {model}: answer {i} is a {type(v).__name__} ({v!r}): not a label or a probability")
    return out


class PythonClassifier:
    def __init__(self, model: str, ref: str):
        self.model, self.ref = model, ref
        module, function = split_ref(ref)
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            raise ClassifierError(f"model {model}: cannot import {module!r} ({exc})") from exc
        except Exception as exc:  # the module's own code failed while importing: one line, the traceback kept
            raise user_code_error(f"model {model}: importing {module}", exc) from exc
        fn = getattr(mod, function, None)
        if not callable(fn):
            raise ClassifierError(f"model {model}: {module} has no function {function!r}")
        self.fn: Callable[[list[str]], Any] = fn
        self.file = Path(mod.__file__) if getattr(mod, "__file__", None) else None

    def identity(self) -> dict[str, Any]:
        top = self.ref.split(":")[0].split(".")[0]
        dists = importlib.metadata.packages_distributions().get(top, [])
        version = importlib.metadata.version(dists[0]) if dists else None
        return {
            "ref": self.ref,
            "module_file": str(self.file) if self.file else None,
            "content_sha256": sha256sum(self.file) if self.file else None,
            "package": dists[0] if dists else None,
            "package_version": version,
        }

    def p_hateful(self, texts: Sequence[str]) -> np.ndarray:
        try:
            answers = self.fn(list(texts))
        except Exception as exc:  # the user's function raised: one line naming it and where (the traceback kept)
            raise user_code_error(f"model {self.model}: {self.ref}", exc) from exc
        return labels_to_p(self.model, answers, len(texts))

    precision = "as the function computes"


# ---------------------------------------------------------------- onnx


def _locale_fixed(model_bytes: bytes) -> bytes:
    """The ONNX model with every StringNormalizer that names no locale set
    to :data:`ONNX_LOCALE` (the graph is otherwise unchanged)."""
    import onnx

    proto = onnx.load_from_string(model_bytes)
    changed = False
    for node in proto.graph.node:
        if node.op_type == "StringNormalizer" and not any(a.name == "locale" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("locale", ONNX_LOCALE))
            changed = True
    return proto.SerializeToString() if changed else model_bytes


class OnnxClassifier:
    def __init__(self, model: str, path: Path, spec: Mapping[str, Any], threads: int = 1, batch_size: int = 1024):
        import onnxruntime as ort

        self.model, self.path = model, Path(path)
        if not self.path.is_file():
            raise ClassifierError(f"model {model}: {self.path}: no such ONNX file")
        self.classes = [str(c) for c in spec["classes"]]
        self.hateful = [self.classes.index(str(h)) for h in spec["hateful"]]
        self.input, self.output = spec["input"], spec["output"]
        self.batch_size = batch_size
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(_locale_fixed(self.path.read_bytes()), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ClassifierError(f"model {model}: {self.path}: onnxruntime cannot load it ({' '.join(str(exc).split())[:300]})") from exc
        inputs = {i.name: i.type for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if list(inputs) != [self.input] or inputs[self.input] != "tensor(string)":
            raise ClassifierError(f"model {model}: {self.path}: its inputs are {inputs}; params name one string input {self.input!r}")
        if self.output not in outputs:
            raise ClassifierError(f"model {model}: {self.path}: no output {self.output!r} (outputs: {outputs})")

    def identity(self) -> dict[str, Any]:
        return {"file": str(self.path), "content_sha256": sha256sum(self.path), "runtime": f"onnxruntime {_ort_version()}",
                "locale": ONNX_LOCALE}

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """[n, classes] probabilities in the order of ``classes``."""
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = np.array(list(texts[start:start + self.batch_size]), dtype=object)
            (raw,) = self.session.run([self.output], {self.input: batch})
            parts.append(self._as_matrix(raw, len(batch)))
        return np.concatenate(parts) if parts else np.zeros((0, len(self.classes)))

    def _as_matrix(self, raw: Any, n: int) -> np.ndarray:
        if isinstance(raw, list):  # a sequence of {class: probability} maps (ZipMap)
            keys = sorted(raw[0]) if raw else []
            if raw and all(isinstance(k, str) for k in keys):
                order = [str(c) for c in self.classes]
            else:
                order = list(range(len(self.classes)))
            missing = [k for k in order if raw and k not in raw[0]]
            if missing:
                raise ClassifierError(f"model {self.model}: {self.path}: output {self.output!r} has classes {keys}, params name {self.classes}")
            matrix = np.array([[row[k] for k in order] for row in raw], dtype=np.float64)
        else:
            matrix = np.asarray(raw, dtype=np.float64)
        if matrix.shape != (n, len(self.classes)):
            raise ClassifierError(f"model {self.model}: {self.path}: output {self.output!r} has shape {matrix.shape}, "
                                  f"expected ({n}, {len(self.classes)}) for the classes {self.classes}")
        return matrix

    def p_hateful(self, texts: Sequence[str]) -> np.ndarray:
        p = self.probabilities(texts)[:, self.hateful].sum(axis=1)
        if p.size and not np.isfinite(p).all():
            raise ClassifierError(f"model {self.model}: {self.path}: output {self.output!r} holds NaN or infinite probabilities")
        return p

    precision = "fp32 (onnxruntime, CPU)"


def _ort_version() -> str:
    import onnxruntime as ort

    return ort.__version__


# ---------------------------------------------------------------- pretrained


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
    import re

    from huggingface_hub import try_to_load_from_cache

    if revision and re.fullmatch(COMMIT_PATTERN, revision):
        return revision
    try:
        found = try_to_load_from_cache(ref, "config.json", cache_dir=cache_dir, revision=revision or "main")
    except (ValueError, OSError):  # not a valid repo id
        return None
    return Path(found).parent.name if isinstance(found, str) and re.fullmatch(COMMIT_PATTERN, Path(found).parent.name) else None


class PretrainedClassifier:
    def __init__(self, model: str, ref: str, spec: Mapping[str, Any], revision: str | None = None, cpu_bf16: bool | str = False,
                 amp: bool = True):
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
            raise ClassifierError(f"model {model}: {ref}: not a sequence-classification model ({' '.join(str(exc).split())[:300]})") from exc
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
        revision = self.commit or (f"unresolved: {asked} of {self.ref} is not in the local Hugging Face cache "
                                   "(resolved offline only), so its commit is not known")
        return {"ref": self.ref, "revision": revision, "requested_revision": asked}

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """[n, classes] softmax probabilities, in the order of ``id2label``."""
        import torch

        from hatecheck_pipeline.models.runtime import encode, forward_logits

        if not texts:
            return np.zeros((0, self.net.config.num_labels))
        seqs = encode(self.tokenizer, texts, self.max_length)
        logits = forward_logits(self.net, seqs, self.tokenizer.pad_token_id, self.batch_size, amp=self.amp, progress=True,
                                cpu_bf16=self.cpu_bf16)
        return torch.softmax(logits.float(), dim=-1).numpy().astype(np.float64)

    def p_hateful(self, texts: Sequence[str]) -> np.ndarray:
        return self.probabilities(texts)[:, self.hateful].sum(axis=1)

    @property
    def precision(self) -> str:
        """What the forward passes run in, as the predict stage names it."""
        from hatecheck_pipeline.models.runtime import precision

        return precision(next(self.net.parameters()).device, self.amp, self.cpu_bf16)


# ---------------------------------------------------------------- http


UNANSWERED = "_unanswered"  # the cache's record of a text the API refused (its message)
SNAPSHOT_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"  # a snapshot names a folder of the answer cache


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def utc_stamp(when: datetime) -> str:
    """A time as the cache and the card write it: ISO 8601, UTC, seconds.

    >>> from datetime import datetime, timezone
    >>> utc_stamp(datetime(2026, 12, 3, 9, 5, 7, 123456, tzinfo=timezone.utc))
    '2026-12-03T09:05:07Z'
    """
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_snapshot(when: datetime) -> str:
    """A scoring API's snapshot when ``snapshot`` is not given: the month
    (UTC) of its first request, as the register stage asks its probe texts.

    >>> from datetime import datetime, timezone
    >>> default_snapshot(datetime(2026, 12, 31, 23, 59, tzinfo=timezone.utc))
    '2026-12'
    """
    return when.astimezone(timezone.utc).strftime("%Y-%m")


def dated_read(cache_dir: Path, key: str) -> dict | None:
    """A scoring API's cached record (request, response, ``asked_utc``: when
    it was answered) in core/http.py's content-addressed layout; None when
    not cached."""
    import json

    from hatecheck_pipeline.core.http import cache_path

    path = cache_path(cache_dir, key)
    return json.loads(path.read_text("utf-8")) if path.exists() else None


def dated_write(cache_dir: Path, key: str, body: dict, response: Any, asked_utc: str) -> None:
    """One record with when it was answered, replaced whole (a temporary
    file renamed over it), as core/http.py's ``cache_write`` writes one."""
    import json

    from hatecheck_pipeline.core.http import cache_path

    path = cache_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"request": body, "response": response, "asked_utc": asked_utc}, ensure_ascii=False, indent=1), "utf-8")
    tmp.replace(path)


def check_snapshot(model: str, snapshot: Any) -> str:
    """A ``snapshot`` name as given (one line when it cannot name a folder)."""
    import re

    if not isinstance(snapshot, str) or not re.fullmatch(SNAPSHOT_PATTERN, snapshot):
        raise ClassifierError(f"model {model}: snapshot {snapshot!r}: a snapshot is a name of letters, digits, '.', '_' or '-' "
                              "(at most 64, e.g. 2026-12), the folder of its answers in the cache")
    return snapshot


def dotted(doc: Any, path: str) -> Any:
    """The value at a dotted path of a JSON answer (list indices as numbers).

    >>> dotted({"a": {"b": [{"c": 0.7}]}}, "a.b.0.c")
    0.7
    """
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


class RateLimiter:
    """At most ``rate_per_s`` starts per second, shared by every worker: each
    start takes the next free slot and waits for it, so a worker waiting
    (for its slot, or for a server's Retry-After) holds up no other worker.
    Slots are ``1 / rate_per_s`` apart, and any ``rate_per_s`` (rounded
    down, at least one) consecutive slots span at least one second plus
    ``guard_s``: what the server sees stays within the rate when the
    network delays one request more than the next."""

    def __init__(self, rate_per_s: float, sleep: Callable[[float], None], clock: Callable[[], float], guard_s: float = 0.05):
        import collections
        import threading

        self.interval = 1.0 / float(rate_per_s)
        self.window = max(1, int(rate_per_s))
        self.guard = guard_s
        self.sleep, self.clock = sleep, clock
        self.lock = threading.Lock()
        self.slots: collections.deque[float] = collections.deque(maxlen=self.window)

    def acquire(self) -> None:
        with self.lock:
            now = self.clock()
            slot = now
            if self.slots:
                slot = max(slot, self.slots[-1] + self.interval)
            if len(self.slots) == self.window:
                slot = max(slot, self.slots[0] + 1.0 + self.guard)
            self.slots.append(slot)
        if slot > now:
            self.sleep(slot - now)


def quota_error(status: int, message: str) -> bool:
    """A refusal that stops the run, not one text: a bad key (401, 403), too
    many requests (429) or a spent quota.

    >>> [quota_error(s, m) for s, m in ((400, "bad text"), (401, ""), (403, "x"), (429, ""), (400, "Quota exceeded"))]
    [False, True, True, True, True]
    """
    return status in (401, 403, 429) or "quota" in message.lower() or "resource_exhausted" in message.lower()


class HttpClassifier:
    """A scoring API: one POST per text, the answer's score read as
    p(hateful). ``format: perspective`` asks Perspective's comments:analyze
    for ``attribute`` (the papers ran IDENTITY_ATTACK at a 50% cutoff) with
    ``doNotStore`` and the suite's language (``languages: [xx]``, ISO 639-1);
    ``format: json`` posts ``{"text": ...}`` (with the language under
    ``language_field`` when given) and reads the dotted ``score`` path. The
    key comes from the environment variable ``key_env`` (a query parameter
    ``key`` or a bearer header, ``key_in``) and is never written: not in the
    cache (keyed by the URL and the request body), the card, a log or an
    error. Answers are cached content-addressed under
    ``cache_dir/<snapshot>``, each with the time it was obtained (UTC), so a
    re-run or a resumed run asks nothing twice, and a new ``snapshot`` (a
    later audit of the same API; default: the month of the first request)
    asks every text again. Up to ``concurrency``
    requests are in flight, their starts shared out at ``rate_per_s`` (one
    :class:`RateLimiter`); a Retry-After delays only its own request. A
    4xx for one text (not 401/403, 429 or a quota error) leaves that text
    unanswered with the API's message (cached too: a re-run does not ask it
    again); beyond ``max_unanswered_share`` of a call's texts the call
    stops with one line."""

    def __init__(self, model: str, spec: Mapping[str, Any], cache_dir: Path | None = None,
                 sleep: Callable[[float], None] | None = None, clock: Callable[[], float] | None = None,
                 progress_s: float = 5.0, utc: Callable[[], Any] | None = None):
        import os
        import threading
        import time

        self.model, self.url = model, str(spec["model"])
        self.format = spec.get("format", "perspective")
        self.attribute = spec.get("attribute", "IDENTITY_ATTACK")
        self.score_path = spec.get("score") or (f"attributeScores.{self.attribute}.summaryScore.value" if self.format == "perspective" else "score")
        self.language_field = spec.get("language_field")
        self.languages = [str(c) for c in spec["languages"]] if spec.get("languages") is not None else None
        self.key_env = spec.get("key_env")
        key = os.environ.get(self.key_env) if self.key_env else None
        if self.key_env and not key:
            raise ClassifierError(f"model {model}: {self.url}: its API key is read from the environment variable {self.key_env}, which is not set")
        self.key = key
        self.key_in = spec.get("key_in", "query" if self.format == "perspective" else "header")
        self.sleep = sleep or time.sleep
        self.clock = clock or time.monotonic
        self.timeout_s = float(spec.get("timeout_s", 60))
        self.retries = int(spec.get("retries", 5))
        self.params = {"key": key} if key and self.key_in == "query" else None
        self.concurrency = max(1, int(spec.get("concurrency") or 4))
        self.limiter = RateLimiter(float(spec.get("rate_per_s") or 1.0), self.sleep, self.clock)
        self.max_unanswered_share = float(spec["max_unanswered_share"]) if spec.get("max_unanswered_share") is not None else 0.02
        self.cache_dir = Path(cache_dir or spec.get("cache_dir") or f"data/classifier_cache/{model}")
        self.utc = utc or utc_now  # when an answer is obtained (the dated audit's times)
        given = spec.get("snapshot")
        self.snapshot = check_snapshot(model, given) if given is not None else default_snapshot(self.utc())
        self.snapshot_given = given is not None
        self.answers_dir = self.cache_dir / self.snapshot
        self.asked_utc: dict[int, str | None] = {}  # of the last p_hateful call: text index -> when its answer was obtained
        self.progress_s = progress_s
        self.local = threading.local()  # each worker's poster (its own session) and last response
        self.count_lock = threading.Lock()
        self.asked = self.cached = 0
        self.unanswered: dict[int, str] = {}  # of the last p_hateful call: text index -> the API's message

    # one poster per worker thread: requests' sessions are not shared across threads
    def _poster(self):
        from hatecheck_pipeline.core.http import RetryingPoster

        poster = getattr(self.local, "poster", None)
        if poster is None:
            import requests

            limiter, local = self.limiter, self.local

            class LimitedSession(requests.Session):
                def post(self, *args, **kwargs):  # every try, retries too, takes a slot of the rate
                    limiter.acquire()
                    local.response = None
                    resp = super().post(*args, **kwargs)
                    local.response = resp
                    return resp

            session = LimitedSession()
            if self.key and self.key_in == "header":
                session.headers["Authorization"] = f"Bearer {self.key}"
            poster = RetryingPoster(self.url, timeout_s=self.timeout_s, retries=self.retries, sleep=self.sleep, secret=self.key,
                                    session=session)
            self.local.poster = poster
        return poster

    def scrub(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def body(self, text: str, language: str | None = None) -> dict[str, Any]:
        if self.format == "perspective":
            body = {"comment": {"text": text}, "requestedAttributes": {self.attribute: {}}, "doNotStore": True}
            if language:
                body["languages"] = [language]
            return body
        body = {"text": text}
        if language and self.language_field:
            body[self.language_field] = language
        return body

    def _cache_key(self, body: Mapping[str, Any]) -> str:
        import json

        return hashlib.sha256(json.dumps({"url": self.url, "body": body}, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _fail(self, what: str) -> ClassifierError:
        return ClassifierError(self.scrub(f"model {self.model}: {self.url}: {what}"))

    def ask(self, text: str, language: str | None = None) -> Any:
        """The API's answer to one text (from this snapshot's cache when it
        was asked before); ``{UNANSWERED: message}`` for a text the API
        refused."""
        return self.ask_dated(text, language)[0]

    def ask_dated(self, text: str, language: str | None = None) -> tuple[Any, str | None]:
        """:meth:`ask`'s answer and when it was obtained (UTC, ISO 8601;
        None for a cached answer written without its time)."""
        from hatecheck_pipeline.core.http import EndpointError, server_message

        body = self.body(text, language)
        key = self._cache_key(body)
        cached = dated_read(self.answers_dir, key)
        if cached is not None:
            with self.count_lock:
                self.cached += 1
            return cached["response"], cached.get("asked_utc")
        poster = self._poster()
        try:
            answer = poster.post(body, params=self.params)
        except EndpointError as exc:
            resp = getattr(self.local, "response", None)
            message = str(exc)
            if resp is None:  # no HTTP answer at all
                if "ReadTimeout" in message:  # connected, then nothing came back
                    raise self._fail(f"no answer within timeout_s {self.timeout_s:g} s ({self.retries} tries)") from None
                raise self._fail(f"cannot be reached ({message.split(': ', 1)[-1]})") from None
            html = "html" in resp.headers.get("Content-Type", "").lower() or resp.text.lstrip().startswith("<")
            if html or resp.status_code == 200:  # not the API's JSON: a login page, a proxy, a wrong URL
                raise self._fail(f"answers HTTP {resp.status_code} with {'an HTML page' if html else 'a body'}, not JSON: "
                                 "is this the scoring API's URL?") from None
            status, said = resp.status_code, self.scrub(server_message(resp))
            if status in (401, 403):
                raise self._fail(f"HTTP {status}: the API refuses the key" + (f" in {self.key_env}" if self.key_env else "")
                                 + (f" ({said})" if said else "")) from None
            if quota_error(status, said) or status >= 500:
                raise self._fail(message.split(": ", 1)[-1]) from None
            answer = {UNANSWERED: f"HTTP {status}" + (f": {said}" if said else "")}
        asked_utc = utc_stamp(self.utc())
        with self.count_lock:
            self.asked += 1
        dated_write(self.answers_dir, key, body, answer, asked_utc)
        return answer, asked_utc

    def _score(self, i: int, answer: Any) -> float:
        try:
            value = float(dotted(answer, self.score_path))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise self._fail(f"the answer to text {i} has no number at {self.score_path!r} ({' '.join(str(answer).split())[:160]})") from exc
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise self._fail(f"the score of text {i} is {value}, not a probability in [0, 1]")
        return value

    def p_hateful(self, texts: Sequence[str], language: str | None = None) -> np.ndarray:
        """p(hateful) per text in their order (NaN for a text the API left
        unanswered: :attr:`unanswered` names them); ``language``: the texts'
        ISO 639-1 code, sent with each."""
        import sys
        import threading
        import time
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        out = np.full(len(texts), np.nan, dtype=np.float64)
        self.unanswered = {}
        self.asked_utc = {}
        stop = threading.Event()
        done = [0]

        def one(i: int) -> None:
            if stop.is_set():
                return
            answer, self.asked_utc[i] = self.ask_dated(texts[i], language)
            if isinstance(answer, dict) and UNANSWERED in answer:
                self.unanswered[i] = str(answer[UNANSWERED])
            else:
                out[i] = self._score(i, answer)
            with self.count_lock:
                done[0] += 1

        started = last = time.monotonic()
        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(1, len(texts))), thread_name_prefix=f"{self.model}-http") as pool:
            pending = {pool.submit(one, i) for i in range(len(texts))}
            try:
                while pending:
                    finished, pending = wait(pending, timeout=self.progress_s, return_when=FIRST_EXCEPTION)
                    for f in finished:
                        if f.exception() is not None:
                            raise f.exception()
                    if pending and time.monotonic() - last >= self.progress_s:
                        last = time.monotonic()
                        print(f"{self.model}: {done[0]}/{len(texts)} answered ({self.asked} asked, {self.cached} from the cache, "
                              f"{len(self.unanswered)} unanswered) in {last - started:.0f} s", file=sys.stderr, flush=True)
            finally:
                stop.set()
                for f in pending:
                    f.cancel()
        if self.unanswered and len(self.unanswered) > self.max_unanswered_share * len(texts):
            first = self.unanswered[min(self.unanswered)]
            raise self._fail(f"{len(self.unanswered)} of {len(texts)} texts unanswered ({len(self.unanswered) / len(texts):.1%}, more than "
                             f"max_unanswered_share {self.max_unanswered_share:g}); the first: {first}")
        return out

    def requests_span(self, times: Any = None) -> dict[str, Any]:
        """When the answers were obtained: the first and last request (UTC)
        of ``times`` (default: the last :meth:`p_hateful` call's answers),
        with the snapshot they belong to."""
        stamps = sorted(t for t in (self.asked_utc.values() if times is None else times) if t)
        return {"snapshot": self.snapshot, "first_request_utc": stamps[0] if stamps else None,
                "last_request_utc": stamps[-1] if stamps else None}

    def snapshot_span(self) -> dict[str, Any]:
        """:meth:`requests_span` of every answer this snapshot's cache holds
        (the probe's and any earlier run's), with how many it holds."""
        import json

        times = []
        for path in self.answers_dir.glob("*/*.json"):
            try:
                times.append(json.loads(path.read_text("utf-8")).get("asked_utc"))
            except (OSError, ValueError):
                continue
        return {**self.requests_span(times), "answers": len(times)}

    def identity(self) -> dict[str, Any]:
        return {"url": self.url, "format": self.format, "score": self.score_path, "snapshot": self.snapshot}

    precision = "as the API computes"


def decide(clf: Any, texts: Sequence[str], decision: str) -> tuple[np.ndarray, np.ndarray | None]:
    """p(hateful) per text and, for ``decision: argmax``, whether a hateful
    class is the top class (None: the label is p(hateful) at the threshold).
    A python classifier has no classes: argmax does not apply to it."""
    if decision != "argmax":
        return clf.p_hateful(texts), None
    if not hasattr(clf, "probabilities"):
        raise ClassifierError(f"model {clf.model}: decision argmax needs class probabilities; a {type(clf).__name__} gives p(hateful) only")
    probs = clf.probabilities(texts)
    p = probs[:, clf.hateful].sum(axis=1)
    if p.size and not np.isfinite(p).all():
        raise ClassifierError(f"model {clf.model}: NaN or infinite class probabilities")
    return p, np.isin(probs.argmax(axis=1), clf.hateful) if p.size else np.zeros(0, dtype=bool)


def load(model: str, spec: Mapping[str, Any], path: Path | None = None, threads: int = 1, cpu_bf16: bool | str = False,
         amp: bool = True):
    """The classifier ``spec`` describes; ``path``: the file or directory
    its stage reads (a fetched or local ONNX file, a model directory);
    ``cpu_bf16``: a transformers model's bf16 autocast on a CPU (the
    predict stage's rule, models/bf16.py); ``amp``: its autocast on CUDA."""
    kind = spec.get("kind")
    if kind == "onnx":
        return OnnxClassifier(model, path or Path(spec["model"]), spec, threads, int(spec.get("batch_size") or 1024))
    if kind == "python":
        return PythonClassifier(model, spec["model"])
    if kind == "pretrained":
        return PretrainedClassifier(model, str(path or spec["model"]), spec, spec.get("revision"), cpu_bf16, amp)
    if kind == "http":
        return HttpClassifier(model, spec)
    raise ClassifierError(f"model {model}: kind {kind!r} is not a classifier kind this loader knows")
