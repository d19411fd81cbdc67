"""The ``http`` classifier kind, concurrent against one at a time, on a
loopback fake scoring API with a fixed delay per request.

HateCheck's test cases (``hatecheck/test_suite_cases.csv`` of the raw-data
mirror, ``HATECHECK_PIPELINE_MIRROR``) are scored twice through
:class:`hatecheck_pipeline.models.kinds.http.HttpClassifier`, each run with
its own empty answer cache: at ``--concurrency`` (default 8) and at 1, both
under ``--rate`` requests per second. The fake answers a Perspective-shaped
score that depends on the text only, after sleeping ``--delay-ms``; it
counts the requests in flight and the most requests that arrived within
any one second. The script prints both runs, whether the answers are
identical (in the input order) and whether the server ever saw more than
the rate, and exits 1 when either check fails.

    HATECHECK_PIPELINE_MIRROR=/path/to/mirror python benchmarks/bench_http_concurrency.py \\
        [--concurrency 8] [--rate 400] [--delay-ms 5] [--record benchmarks/records/FILE.txt]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import socket
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class Seen:
    """What the fake server saw."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.arrivals: list[float] = []

    def max_per_second(self) -> int:
        """The most arrivals within any one second (a sliding window)."""
        t = sorted(self.arrivals)
        best, lo = 0, 0
        for hi, u in enumerate(t):
            while u - t[lo] >= 1.0:
                lo += 1
            best = max(best, hi - lo + 1)
        return best


def score_of(text: str) -> float:
    return round((sum(map(ord, text)) % 997) / 996, 6)


def serve(delay_s: float, seen: Seen) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real API

        def setup(self):
            super().setup()
            # headers and body go out in two writes: without this, Nagle and a delayed ACK add ~40 ms to each answer
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self):  # noqa: N802
            with seen.lock:
                seen.arrivals.append(time.monotonic())
                seen.in_flight += 1
                seen.max_in_flight = max(seen.max_in_flight, seen.in_flight)
            try:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(delay_s)
                value = score_of(body["comment"]["text"])
                data = json.dumps({"attributeScores": {"IDENTITY_ATTACK": {"summaryScore": {"value": value}}}}).encode()
            finally:
                with seen.lock:
                    seen.in_flight -= 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv


def one_run(texts: list[str], concurrency: int, rate: float, delay_s: float, cache: Path) -> dict:
    from hatecheck_pipeline.models.kinds.http import HttpClassifier

    seen = Seen()
    srv = serve(delay_s, seen)
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1alpha1/comments:analyze"
    try:
        clf = HttpClassifier(
            "bench",
            {"kind": "http", "model": url, "format": "perspective", "rate_per_s": rate, "concurrency": concurrency, "retries": 3},
            cache_dir=cache,
        )
        started = time.perf_counter()
        p = clf.p_hateful(texts, language="en")
        took = time.perf_counter() - started
    finally:
        srv.shutdown()
        srv.server_close()
    return {
        "concurrency": concurrency,
        "seconds": took,
        "per_s": len(texts) / took,
        "asked": clf.asked,
        "max_in_flight": seen.max_in_flight,
        "max_per_second": seen.max_per_second(),
        "requests": len(seen.arrivals),
        "p": p.tolist(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rate", type=float, default=400.0, help="rate_per_s of both runs")
    ap.add_argument("--delay-ms", type=float, default=5.0, help="the fake's delay per request")
    ap.add_argument("--record", type=Path, help="also write what is printed to this file")
    args = ap.parse_args()
    mirror = os.environ.get("HATECHECK_PIPELINE_MIRROR")
    if not mirror:
        raise SystemExit("set HATECHECK_PIPELINE_MIRROR to the raw-data mirror (hatecheck/test_suite_cases.csv is read)")
    with open(Path(mirror) / "hatecheck" / "test_suite_cases.csv", newline="", encoding="utf-8") as f:
        texts = [row["test_case"] for row in csv.DictReader(f)]
    lines = [
        f"bench_http_concurrency: {len(texts)} HateCheck texts, fake delay {args.delay_ms:g} ms per request, rate_per_s {args.rate:g}",
        f"host: {platform.node()} {platform.machine()}, {len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.2f}, "
        f"python {platform.python_version()}",
    ]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for c in (args.concurrency, 1):
            runs.append(one_run(texts, c, args.rate, args.delay_ms / 1000, Path(tmp) / f"cache{c}"))
    lines.append(f"{'concurrency':>11} {'seconds':>8} {'texts/s':>8} {'requests':>8} {'max in flight':>13} {'max in 1 s':>10}")
    for r in runs:
        lines.append(
            f"{r['concurrency']:>11} {r['seconds']:>8.2f} {r['per_s']:>8.1f} {r['requests']:>8} {r['max_in_flight']:>13} "
            f"{r['max_per_second']:>10}"
        )
    same = runs[0]["p"] == runs[1]["p"]
    within = all(r["max_per_second"] <= args.rate for r in runs)
    lines.append(
        f"speed-up {runs[1]['seconds'] / runs[0]['seconds']:.2f}x; answers identical in the input order: {same}; "
        f"never above {args.rate:g} requests in any second: {within}"
    )
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.record:
        args.record.write_text(text + "\n# command: " + " ".join(["python", *sys.argv]) + "\n", "utf-8")
    return 0 if same and within else 1


if __name__ == "__main__":
    sys.exit(main())
