"""Generation through any OpenAI-compatible chat endpoint, with responses
cached content-addressed: the sha256 of the request JSON names a JSON file
under the cache folder, so a re-run queries again only when the prompt or
the settings change. The API key is read from an environment variable and
never written anywhere (not in the cache key, files, logs or errors)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import requests

from hatecheck_pipeline.core.errors import PipelineError


class EndpointError(PipelineError, RuntimeError):
    pass


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


def cache_key(base_url: str, body: dict) -> str:
    return hashlib.sha256(json.dumps({"base_url": base_url.rstrip("/"), "body": body}, sort_keys=True,
                                     ensure_ascii=False).encode("utf-8")).hexdigest()


class ChatClient:
    """A kept HTTP session against ``{base_url}/chat/completions``."""

    def __init__(self, base_url: str, api_key_env: str | None, cache_dir: Path, timeout_s: float = 60,
                 retries: int = 3):
        self.base_url = base_url.rstrip("/")
        self.cache_dir = Path(cache_dir)
        self.timeout_s = timeout_s
        self.retries = retries
        self.session = requests.Session()
        key = os.environ.get(api_key_env) if api_key_env else None
        if key:
            self.session.headers["Authorization"] = f"Bearer {key}"
        self.queried = 0
        self.cached = 0

    def complete(self, body: dict) -> dict:
        key = cache_key(self.base_url, body)
        path = self.cache_dir / key[:2] / f"{key}.json"
        if path.exists():
            self.cached += 1
            return json.loads(path.read_text("utf-8"))["response"]
        last = None
        for attempt in range(self.retries):
            try:
                resp = self.session.post(f"{self.base_url}/chat/completions", json=body, timeout=self.timeout_s)
                if resp.status_code == 200:
                    data = resp.json()
                    break
                last = f"HTTP {resp.status_code}"
            except requests.RequestException as exc:
                last = type(exc).__name__
            time.sleep(min(2 ** attempt, 8) * 0.1)
        else:
            raise EndpointError(f"{self.base_url}/chat/completions failed after {self.retries} tries ({last})")
        self.queried += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"request": body, "response": data}, ensure_ascii=False, indent=1), "utf-8")
        tmp.replace(path)
        return data

    def close(self) -> None:
        self.session.close()


def messages_of(response: dict) -> list[str]:
    """Candidate messages: one per non-empty line of every choice, list
    numbering and surrounding quotes stripped."""
    import re

    out = []
    for choice in response.get("choices", []):
        content = (choice.get("message") or {}).get("content") or ""
        for line in content.splitlines():
            line = re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line).strip()
            if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'":
                line = line[1:-1].strip()
            if line:
                out.append(line)
    return out
