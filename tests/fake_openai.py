"""Fake JSON endpoints on 127.0.0.1 for the tests of the HTTP clients: an
OpenAI-compatible one for the LLM clients (suite expansion, prompted
classifiers), in both API styles (``POST .../chat/completions``: messages ->
``choices[0].message.content``; ``POST .../completions``: prompt ->
``choices[0].text``), and :func:`serve_json` under it for any other API
(the scoring APIs of the ``http`` classifier kind). No traffic leaves the
machine; every request is recorded; a script of failures (status, headers,
body) can be served before the normal replies."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, Sequence
from urllib.parse import parse_qs, urlparse

Reply = tuple[int, dict, "dict | str"]  # status, headers, body (a dict is sent as JSON)


@contextmanager
def serve_json(respond: Callable[[str, dict, dict], Reply], calls: list, script: Sequence[Reply] = ()) -> Iterator[str]:
    """Serve POSTs on a free loopback port; yield ``http://127.0.0.1:<port>``.
    Each request is appended to ``calls`` as ``{"path", "query", "auth",
    "body"}``; ``respond(path, query, body)`` answers it, except that the
    first ``len(script)`` requests get the scripted replies instead."""
    pending = list(script)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, headers: dict, payload: dict | str) -> None:
            data = (json.dumps(payload) if isinstance(payload, dict) else payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            calls.append({"path": self.path, "query": query, "auth": self.headers.get("Authorization"), "body": body})
            with lock:
                scripted = pending.pop(0) if pending else None
            self._send(*(scripted if scripted is not None else respond(url.path, query, body)))

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.timeout = 5
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


@contextmanager
def fake_chat_server(reply: Callable[[dict], str], calls: list, script: Sequence[Reply] = ()) -> Iterator[str]:
    """Serve chat and text completions; yield the base URL (``.../v1``).
    ``reply(body)`` is the model's text; any other path is a 404."""

    def respond(path: str, query: dict, body: dict) -> Reply:
        if path.endswith("/chat/completions"):
            message = {"role": "assistant", "content": reply(body)}
            return (
                200,
                {},
                {
                    "id": "x",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                },
            )
        if path.endswith("/completions"):
            return (
                200,
                {},
                {
                    "id": "x",
                    "object": "text_completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "text": reply(body), "finish_reason": "stop"}],
                },
            )
        return 404, {}, {"error": {"message": f"no route {path}"}}

    with serve_json(respond, calls, script) as root:
        yield f"{root}/v1"


# A Perspective-style scoring API's classifier spec (the `http` kind) and
# the key the tests' fake servers expect.
PERSPECTIVE_KEY = "sk-test-secret-0123456789"


def perspective_spec(url: str, tmp_path, **extra) -> dict:
    return {
        "kind": "http",
        "model": url,
        "format": "perspective",
        "attribute": "IDENTITY_ATTACK",
        "key_env": "FAKE_PERSPECTIVE_KEY",
        "rate_per_s": 1000,
        "retries": 3,
        "cache_dir": str(tmp_path / "cache"),
        "suites": ["hatecheck"],
        "seed": 0,
        **extra,
    }
