"""Requests to any OpenAI-compatible endpoint, in either API style, with
responses cached content-addressed: the sha256 of the request JSON (and,
for the completions style, the style) names a JSON file under the cache
folder, so a re-run queries again only when the prompt or the settings
change. The API key is read from an environment variable and never written
anywhere (not in the cache key, files, logs or errors).

API styles (``api``): ``chat`` posts ``{base_url}/chat/completions``
(``messages``; the answer in ``choices[0].message.content``), used by the
suite expansion and chat models; ``completions`` posts
``{base_url}/completions`` (``prompt``, ``max_tokens``, ``temperature``; the
answer in ``choices[0].text``), the only style davinci-style models answer.

Retries, for real endpoints, are core/http.py's (429 and 5xx retried with
the server's ``Retry-After`` or a capped exponential backoff, any other 4xx
final, one line naming the URL, the status and the tries, key scrubbed).

:class:`LocalChat` answers the same chat request bodies with a local causal
LM (``models.llm.LocalLM``) in its chat format, through the same cache
layout (key ``cache_key("local:<model>", body)``) and the same response
shape; :func:`parse_messages` reads GPT-HateCheck's answer format and names
what is wrong with a bad one."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from hatecheck_pipeline.core.http import (  # noqa: F401  (re-exported: the LLM clients' errors, retry rules and answer cache)
    EndpointError,
    RetryingPoster,
    backoff_s,
    cache_path,
    cache_read,
    cache_write,
    retry_after_s,
    retryable,
)

API_PATHS = {"chat": "/chat/completions", "completions": "/completions"}


def request_body(model: str, system: str, prompt: str, temperature: float, max_tokens: int, seed: int | None) -> dict:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if seed is not None:
        body["seed"] = seed
    return body


def cache_key(base_url: str, body: dict, api: str = "chat") -> str:
    """sha256 of the request (the chat style's keys are those of earlier
    runs: its caches stay valid).

    >>> body = {"model": "m", "prompt": "p"}
    >>> cache_key("http://x/v1/", body) == cache_key("http://x/v1", body) != cache_key("http://x/v1", body, "completions")
    True
    """
    doc: dict[str, Any] = {"base_url": base_url.rstrip("/"), "body": body}
    if api != "chat":
        doc["api"] = api
    return hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class ChatClient:
    """A kept HTTP session against ``{base_url}/chat/completions`` (``api:
    chat``) or ``{base_url}/completions`` (``api: completions``)."""

    def __init__(
        self,
        base_url: str,
        api_key_env: str | None,
        cache_dir: Path,
        timeout_s: float = 60,
        retries: int = 5,
        api: str = "chat",
        backoff_s: float = 1.0,  # noqa: F811  (the re-exported backoff_s is not used here)
        max_backoff_s: float = 60.0,
        max_retry_after_s: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if api not in API_PATHS:
            raise EndpointError(f"api {api!r} is not one of {sorted(API_PATHS)}")
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.url = self.base_url + API_PATHS[api]
        self.cache_dir = Path(cache_dir)
        self._key = os.environ.get(api_key_env) if api_key_env else None
        self.poster = RetryingPoster(self.url, timeout_s, retries, backoff_s, max_backoff_s, max_retry_after_s, sleep, secret=self._key)
        self.session = self.poster.session
        if self._key:
            self.session.headers["Authorization"] = f"Bearer {self._key}"
        self.waits = self.poster.waits
        self.queried = 0
        self.cached = 0

    def _post(self, body: dict) -> dict:
        return self.poster.post(body)

    def complete(self, body: dict) -> dict:
        key = cache_key(self.base_url, body, self.api)
        path = cache_path(self.cache_dir, key)
        if path.exists():
            self.cached += 1
            return json.loads(path.read_text("utf-8"))["response"]
        data = self._post(body)
        self.queried += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"request": body, "api": self.api, "response": data}, ensure_ascii=False, indent=1), "utf-8")
        tmp.replace(path)
        return data

    def complete_many(self, bodies: Sequence[dict]) -> list[dict]:
        """The answers of several requests, in order (asked one by one)."""
        return [self.complete(body) for body in bodies]

    def close(self) -> None:
        self.session.close()


def chat_prompt(tokenizer, system: str | None, user: str) -> str:
    """The prompt text of a chat (system, user) in the tokenizer's chat
    template, ready for the assistant's answer; without a template, the
    messages one per paragraph and an ``Answer:`` line."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in messages) + "\nAnswer:"


class LocalChat:
    """A local causal LM answering OpenAI-shaped chat request bodies, each
    answer cached under ``cache_key("local:<model>", body)`` like the
    endpoint's (each answer sampled from its own body's seed, so it does
    not depend on what else was asked; requests asked together are
    generated in batches, :meth:`complete_many`).

    The chat is put in the model's template once (:func:`chat_prompt`) and
    read as is (``generate(templated=True)``). ``answer_prefix``: the
    assistant's answer is opened with it (the model writes the rest, and the
    answer returned starts with it); such answers are keyed apart
    (``<model>, answer opened with <prefix>``)."""

    def __init__(self, lm, model: str, cache_dir: Path, answer_prefix: str = ""):
        self.lm = lm
        self.answer_prefix = answer_prefix
        self.base_url = f"local:{model}" + (f", answer opened with {answer_prefix}" if answer_prefix else "")
        self.cache_dir = Path(cache_dir)
        self.queried = 0
        self.cached = 0

    def complete(self, body: dict) -> dict:
        return self.complete_many([body])[0]

    def complete_many(self, bodies: Sequence[dict]) -> list[dict]:
        """The answers of several requests, in order: cached ones read, the
        others generated together (one ``generate`` call per setting of
        ``max_tokens`` and ``temperature``, batched, each answer sampled
        from its own body's seed: the answer it gets asked alone, up to the
        float rounding of a padded batch), then cached."""
        keys = [cache_key(self.base_url, body) for body in bodies]
        out: list[dict | None] = [cache_read(self.cache_dir, key) for key in keys]
        self.cached += sum(hit is not None for hit in out)
        todo: dict[tuple, list[int]] = {}
        for i, body in enumerate(bodies):
            if out[i] is None:
                todo.setdefault((body["max_tokens"], body["temperature"]), []).append(i)
        for (max_tokens, temperature), idx in todo.items():
            prompts = []
            for i in idx:
                msgs = {m["role"]: m["content"] for m in bodies[i]["messages"]}
                prompts.append(chat_prompt(self.lm.tok, msgs.get("system"), msgs["user"]) + self.answer_prefix)
            seeds = [int(bodies[i].get("seed") or 0) for i in idx]
            texts = self.lm.generate(prompts, max_tokens, temperature, seeds, first_line=False, templated=True)
            for i, text in zip(idx, texts):
                body = bodies[i]
                out[i] = {
                    "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": self.answer_prefix + text}}],
                }
                self.queried += 1
                cache_write(self.cache_dir, keys[i], body, out[i])
        return out  # type: ignore[return-value]

    def close(self) -> None:
        pass


REFUSAL = re.compile(
    r"^\W*(?:I'?m sorry|I am sorry|I apologi[sz]e|I can(?:no|')t|I am unable|I'?m unable|I won'?t|"
    r"As an AI|I'?m not able|I do not feel comfortable|Sorry)",
    re.IGNORECASE,
)
FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
BAD_OUTPUTS = ("empty", "refusal", "not_json", "wrong_format", "bad_items")


def parse_messages(content: str | None) -> tuple[list[str], str | None]:
    """The messages of one answer in the paper's format (a JSON object with
    the key ``messages`` holding a list of strings; a code fence around it
    is allowed) and what was wrong with it: None, ``empty``, ``refusal``
    (an apology or refusal instead of JSON), ``not_json`` (no JSON object in
    it, e.g. a numbered list or JSON cut off by the token limit),
    ``wrong_format`` (JSON but not {"messages": [...]}), ``bad_items``
    (some items empty or not strings: they are left out, the rest kept)."""
    text = (content or "").strip()
    if not text:
        return [], "empty"
    fenced = FENCE.search(text)
    body = fenced.group(1).strip() if fenced else text
    start, end = body.find("{"), body.rfind("}")
    try:
        data = json.loads(body[start : end + 1]) if 0 <= start < end else json.loads(body)
    except ValueError:
        return [], "refusal" if REFUSAL.search(text) else "not_json"
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return [], "wrong_format"
    items = data["messages"]
    good = [m.strip() for m in items if isinstance(m, str) and m.strip()]
    return good, (None if len(good) == len(items) and good else ("bad_items" if good else "wrong_format"))


def content_of(response: dict) -> str:
    choices = response.get("choices") or [{}]
    return (choices[0].get("message") or {}).get("content") or ""
