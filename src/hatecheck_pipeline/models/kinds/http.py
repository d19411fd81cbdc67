"""Kind ``http``: a scoring API such as Perspective (:class:`HttpClassifier`):
one request per text, its answers cached content-addressed and dated, a
dated audit named by its ``snapshot``."""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hatecheck_pipeline.models.kinds.base import Classifier, ClassifierError, Kind, LoadOptions, register

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
        raise ClassifierError(
            f"model {model}: snapshot {snapshot!r}: a snapshot is a name of letters, digits, '.', '_' or '-' "
            "(at most 64, e.g. 2026-12), the folder of its answers in the cache"
        )
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

    def __init__(
        self,
        model: str,
        spec: Mapping[str, Any],
        cache_dir: Path | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        progress_s: float = 5.0,
        utc: Callable[[], Any] | None = None,
    ):
        import os
        import threading
        import time

        self.model, self.url = model, str(spec["model"])
        self.format = spec.get("format", "perspective")
        self.attribute = spec.get("attribute", "IDENTITY_ATTACK")
        self.score_path = spec.get("score") or (
            f"attributeScores.{self.attribute}.summaryScore.value" if self.format == "perspective" else "score"
        )
        self.language_field = spec.get("language_field")
        self.languages = [str(c) for c in spec["languages"]] if spec.get("languages") is not None else None
        self.key_env = spec.get("key_env")
        key = os.environ.get(self.key_env) if self.key_env else None
        if self.key_env and not key:
            raise ClassifierError(
                f"model {model}: {self.url}: its API key is read from the environment variable {self.key_env}, which is not set"
            )
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
            poster = RetryingPoster(
                self.url, timeout_s=self.timeout_s, retries=self.retries, sleep=self.sleep, secret=self.key, session=session
            )
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
                raise self._fail(
                    f"answers HTTP {resp.status_code} with {'an HTML page' if html else 'a body'}, not JSON: is this the scoring API's URL?"
                ) from None
            status, said = resp.status_code, self.scrub(server_message(resp))
            if status in (401, 403):
                raise self._fail(
                    f"HTTP {status}: the API refuses the key"
                    + (f" in {self.key_env}" if self.key_env else "")
                    + (f" ({said})" if said else "")
                ) from None
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
            raise self._fail(
                f"the answer to text {i} has no number at {self.score_path!r} ({' '.join(str(answer).split())[:160]})"
            ) from exc
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
                        print(
                            f"{self.model}: {done[0]}/{len(texts)} answered ({self.asked} asked, {self.cached} from the cache, "
                            f"{len(self.unanswered)} unanswered) in {last - started:.0f} s",
                            file=sys.stderr,
                            flush=True,
                        )
            finally:
                stop.set()
                for f in pending:
                    f.cancel()
        if self.unanswered and len(self.unanswered) > self.max_unanswered_share * len(texts):
            first = self.unanswered[min(self.unanswered)]
            raise self._fail(
                f"{len(self.unanswered)} of {len(texts)} texts unanswered ({len(self.unanswered) / len(texts):.1%}, more than "
                f"max_unanswered_share {self.max_unanswered_share:g}); the first: {first}"
            )
        return out

    def requests_span(self, times: Any = None) -> dict[str, Any]:
        """When the answers were obtained: the first and last request (UTC)
        of ``times`` (default: the last :meth:`p_hateful` call's answers),
        with the snapshot they belong to."""
        stamps = sorted(t for t in (self.asked_utc.values() if times is None else times) if t)
        return {
            "snapshot": self.snapshot,
            "first_request_utc": stamps[0] if stamps else None,
            "last_request_utc": stamps[-1] if stamps else None,
        }

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


# parquet metadata of a scoring API's predictions: answers_snapshot, answers_first_request_utc, answers_last_request_utc
# (read by report/model_page.py's answers_span, which keeps its own copy of the prefix so the report does not import the classifiers)
ANSWERS_KEY = "answers_"


@register
class Http(Kind):
    name = "http"
    order = 10
    mem_mb = 3000
    dated_answers = True

    def detects(self, ref: str) -> bool:
        return ref.startswith(("http://", "https://"))

    def spec_for(self, ref: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """Perspective's format unless ``api_format`` says ``json``; the key
        from the environment variable ``key_env``."""
        spec: dict[str, Any] = {"model": ref, "format": options.get("api_format") or "perspective"}
        if options.get("key_env"):
            spec["key_env"] = options["key_env"]
        return spec

    def load(self, model: str, spec: Mapping[str, Any], options: LoadOptions) -> HttpClassifier:
        return HttpClassifier(model, spec)

    def as_registered(self, spec: Mapping[str, Any], identity: Mapping[str, Any]) -> dict[str, Any]:
        """The snapshot the card fixed (its default, the month of the first
        request, fixed when the card was written, so a run resumed in a
        later month reads the same answers)."""
        spec = dict(spec)
        if spec.get("snapshot") is None and identity.get("snapshot"):
            spec["snapshot"] = identity["snapshot"]
        return spec

    def card_fields(self, clf: Classifier) -> dict[str, Any]:
        """A dated audit: its snapshot and when its answers were obtained so far."""
        assert isinstance(clf, HttpClassifier)
        return {
            "answers": {
                **clf.snapshot_span(),
                "snapshot_from": "given (snapshot)" if clf.snapshot_given else "default: the month (UTC) of the first request",
            }
        }

    def register_note(self, clf: Classifier) -> str:
        assert isinstance(clf, HttpClassifier)
        return f"; snapshot {clf.snapshot}"

    def file_metadata(self, clf: Classifier) -> dict[str, str]:
        """When this file's answers were obtained, and their snapshot."""
        assert isinstance(clf, HttpClassifier)
        return {f"{ANSWERS_KEY}{k}": str(v) for k, v in clf.requests_span().items() if v is not None}
