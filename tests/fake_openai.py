"""A fake OpenAI-compatible endpoint on 127.0.0.1 for the tests of the LLM
clients (suite expansion, prompted classifiers), in both API styles:
``POST .../chat/completions`` (messages -> ``choices[0].message.content``)
and ``POST .../completions`` (prompt -> ``choices[0].text``). No traffic
leaves the machine; every request is recorded; a script of failures
(status, headers, body) can be served before the normal replies."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, Sequence


@contextmanager
def fake_chat_server(reply: Callable[[dict], str], calls: list,
                     script: Sequence[tuple[int, dict, dict | str]] = ()) -> Iterator[str]:
    """Serve chat and text completions on a free loopback port; yield the
    base URL (``.../v1``). Each request is appended to ``calls`` as
    ``{"path", "auth", "body"}``; ``reply(body)`` is the model's text. The
    first ``len(script)`` requests get the scripted (status, headers, body)
    instead (a dict body is sent as JSON); any other path is a 404."""
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
            calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            with lock:
                scripted = pending.pop(0) if pending else None
            if scripted is not None:
                self._send(*scripted)
            elif self.path.endswith("/chat/completions"):
                message = {"role": "assistant", "content": reply(body)}
                self._send(200, {}, {"id": "x", "object": "chat.completion", "model": body.get("model"),
                                     "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
            elif self.path.endswith("/completions"):
                self._send(200, {}, {"id": "x", "object": "text_completion", "model": body.get("model"),
                                     "choices": [{"index": 0, "text": reply(body), "finish_reason": "stop"}]})
            else:
                self._send(404, {}, {"error": {"message": f"no route {self.path}"}})

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
