"""A fake OpenAI-compatible chat endpoint on 127.0.0.1 for the tests of the
LLM clients (suite expansion, prompted classifiers): no traffic leaves the
machine, every request is recorded."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator


@contextmanager
def fake_chat_server(reply: Callable[[dict], str], calls: list) -> Iterator[str]:
    """Serve chat completions on a free loopback port; yield the base URL
    (``.../v1``). Each request is appended to ``calls`` as
    ``{"path", "auth", "body"}``; ``reply(body)`` is the assistant's text."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            message = {"role": "assistant", "content": reply(body)}
            data = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                               "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.timeout = 5
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)
