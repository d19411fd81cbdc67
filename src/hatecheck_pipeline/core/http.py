"""JSON over HTTP with the retries real endpoints need, shared by the LLM
clients (expansion/llm.py) and the scoring APIs of the ``http`` classifier
kind (models/kinds/http.py).

A connection error, a timeout, HTTP 429 and HTTP 5xx are retried, waiting
the server's ``Retry-After`` (seconds or an HTTP date) when it sends one,
else an exponential backoff (``backoff_s`` doubled per try, at most
``max_backoff_s``); any other 4xx is not retried (a bad request, a bad key
or a missing model does not get better). After the last try, or at once for
a 4xx, :class:`EndpointError` says in one line the URL, the status, the
server's message and the tries, with the API key scrubbed from all of it.
"""

from __future__ import annotations

import email.utils
import json
import time
from datetime import timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import requests

from hatecheck_pipeline.core.errors import PipelineError


class EndpointError(PipelineError, RuntimeError):
    pass


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds the server asks to wait (``Retry-After``: delta-seconds or an
    HTTP date); None when absent or unreadable.

    >>> retry_after_s("3"), retry_after_s(None), retry_after_s("soon")
    (3.0, None, None)
    >>> from datetime import datetime
    >>> retry_after_s("Wed, 21 Oct 2015 07:28:10 GMT", now=datetime(2015, 10, 21, 7, 28, 0, tzinfo=timezone.utc).timestamp())
    10.0
    """
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff_s(attempt: int, base: float, cap: float) -> float:
    """Wait before try ``attempt + 1`` (attempt counts from 1): base * 2^(attempt-1), at most cap.

    >>> [backoff_s(a, 1.0, 8.0) for a in (1, 2, 3, 4, 5)]
    [1.0, 2.0, 4.0, 8.0, 8.0]
    """
    return min(cap, base * 2 ** (attempt - 1))


def retryable(status: int) -> bool:
    """429 and 5xx are retried; every other status is final.

    >>> [retryable(s) for s in (400, 401, 404, 408, 429, 500, 503)]
    [False, False, False, False, True, True, True]
    """
    return status == 429 or status >= 500


def server_message(resp: requests.Response) -> str:
    try:
        doc = resp.json()
        err = doc.get("error") if isinstance(doc, dict) else None
        msg = (err.get("message") if isinstance(err, dict) else err) or ""
    except ValueError:
        msg = resp.text
    return " ".join(str(msg).split())[:200]


class RetryingPoster:
    """POSTs JSON to one URL through a kept session, with the retries above.
    ``secret``: a value (the API key) scrubbed from every error message."""

    def __init__(
        self,
        url: str,
        timeout_s: float = 60,
        retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        max_retry_after_s: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
        secret: str | None = None,
        session: requests.Session | None = None,
    ):
        self.url = url
        self.timeout_s = timeout_s
        self.retries = max(1, retries)
        self.backoff = backoff_s
        self.max_backoff = max_backoff_s
        self.max_retry_after = max_retry_after_s
        self.sleep = sleep
        self.secret = secret
        self.session = session or requests.Session()
        self.waits: list[float] = []

    def scrub(self, text: str) -> str:
        return text.replace(self.secret, "***") if self.secret else text

    def post(self, body: Any, params: Mapping[str, str] | None = None) -> Any:
        """The JSON answer of one POST (retried as the module says)."""
        last = ""
        for attempt in range(1, self.retries + 1):
            wait = None
            try:
                resp = self.session.post(self.url, json=body, params=params, timeout=self.timeout_s)
            except requests.RequestException as exc:
                last = type(exc).__name__
            else:
                if resp.status_code == 200:
                    try:
                        return resp.json()
                    except ValueError:
                        raise EndpointError(f"{self.url}: HTTP 200 with a body that is not JSON") from None
                message = self.scrub(server_message(resp))
                last = f"HTTP {resp.status_code}" + (f" ({message})" if message else "")
                if not retryable(resp.status_code):
                    raise EndpointError(f"{self.url}: {last}; not retried (a {resp.status_code} does not change on a retry)")
                wait = retry_after_s(resp.headers.get("Retry-After"))
                if wait is not None and wait > self.max_retry_after:
                    raise EndpointError(
                        f"{self.url}: {last}; the server asks to retry after {wait:.0f} s "
                        f"(more than {self.max_retry_after:.0f} s): gave up after {attempt} tries"
                    )
            if attempt == self.retries:
                break
            wait = backoff_s(attempt, self.backoff, self.max_backoff) if wait is None else wait
            self.waits.append(wait)
            self.sleep(wait)
        raise EndpointError(f"{self.url}: {last}; gave up after {self.retries} tries")

    def close(self) -> None:
        self.session.close()


# The content-addressed answer cache: one JSON file per request key
# (a sha256), under a two-character folder, replaced whole.


def cache_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / key[:2] / f"{key}.json"


def cache_read(cache_dir: Path, key: str) -> dict | None:
    path = cache_path(cache_dir, key)
    return json.loads(path.read_text("utf-8"))["response"] if path.exists() else None


def cache_write(cache_dir: Path, key: str, body: dict, response: dict) -> None:
    path = cache_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"request": body, "response": response}, ensure_ascii=False, indent=1), "utf-8")
    tmp.replace(path)
