"""`hatecheck-pipeline fetch-data` against a loopback HTTP server: the pinned
URLs of a small registry point at it (the real registry's URLs are on the
internet, which tests never reach)."""

import functools
import hashlib
import http.server
import json
import subprocess
import sys
import threading

import pytest
from typer.testing import CliRunner

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.data import mirror as mirror_mod
from hatecheck_pipeline.data import sources


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Server:
    """Files of a folder over http://127.0.0.1 (a thread), every GET counted."""

    def __init__(self, root):
        self.requests: list[str] = []
        seen = self.requests

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                seen.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


DOCS = {"10001_gab": b"101 7 102", "10002_twitter": b"101 8 9 102", "10003_gab": b"101 4 102"}
FILES = {
    "toy_a": {"labels.csv": b"id,text,label\n1,hello,0\n2,world,1\n", "cases/x.csv": b"id\n1\n"},
    "toy_b": {"ids/train.jsonl": "".join(json.dumps({"annotation_id": n}) + "\n" for n in DOCS).encode(), "LICENSE": b"MIT\n"},
}


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A loopback server holding the files of FILES and DOCS, and a registry
    pinning them (the package's registry replaced by it)."""
    root = tmp_path / "served"
    for source, files in FILES.items():
        for name, data in files.items():
            (root / source / name).parent.mkdir(parents=True, exist_ok=True)
            (root / source / name).write_bytes(data)
    (root / "docs").mkdir()
    for name, data in DOCS.items():
        (root / "docs" / name).write_bytes(data)
    server = Server(root)
    registry = {
        source: {
            "license": "MIT",
            "citation": "x",
            "files": {name: {"url": f"{server.url}/{source}/{name}", "sha256": sha(data)} for name, data in files.items()},
        }
        for source, files in FILES.items()
    }
    registry["toy_b"]["file_sets"] = {
        "ids/docs.jsonl": {
            "url": server.url + "/docs/{name}",
            "mirror_dir": "ids/docs",
            "names_from": ["ids/train.jsonl"],
            "count": len(DOCS),
            "manifest_sha256": sources.manifest_digest({n: sha(d) for n, d in DOCS.items()}),
        }
    }
    monkeypatch.setattr(sources, "_registry", lambda: registry)
    monkeypatch.setattr(sources, "TRIES", 1)
    yield server, registry
    server.close()


def fetch(into):
    result = CliRunner().invoke(__import__("hatecheck_pipeline.cli.app", fromlist=["app"]).app, ["fetch-data", "--into", str(into)])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_fetch_writes_the_mirror_layout_the_ingest_stage_reads(served, tmp_path, monkeypatch):
    server, registry = served
    into = tmp_path / "mirror"
    result = fetch(into)
    # every file at <source>/<name>, the set's files at <source>/<mirror_dir>/
    for source, files in FILES.items():
        for name, data in files.items():
            assert (into / source / name).read_bytes() == data
    assert {p.name: p.read_bytes() for p in (into / "toy_b" / "ids" / "docs").iterdir()} == DOCS
    # the lists, as the shared mirror has them
    root_list = (into / "SHA256SUMS").read_text().splitlines()
    assert f"{sha(FILES['toy_a']['cases/x.csv'])}  ./toy_a/cases/x.csv" in root_list
    assert f"{sha(FILES['toy_b']['LICENSE'])}  ./toy_b/LICENSE" in root_list and len(root_list) == 3
    assert (into / "toy_a" / "SHA256SUMS").read_text().splitlines() == [line for line in root_list if "./toy_a/" in line]
    nested = (into / "toy_b" / "ids" / "SHA256SUMS").read_text().splitlines()
    assert nested == [f"{sha(FILES['toy_b']['ids/train.jsonl'])}  train.jsonl"] + [f"{sha(d)}  docs/{n}" for n, d in DOCS.items()]
    # progress per file (i/N and bytes), then the line to use
    lines = result.output.splitlines()
    assert "[1/5] toy_a/labels.csv: 34 B downloaded, sha256 ok" in lines
    assert "[5/5] toy_b/ids/docs/ (3 files): 29 B downloaded, manifest sha256 ok" in lines
    assert lines[-1] == f"HATECHECK_PIPELINE_MIRROR={into.resolve()}"
    assert len(server.requests) == 4 + len(DOCS)
    # the pipeline's mirror reader accepts it: the ingest stage, mirror from the environment
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv(sources.MIRROR_ENV, str(into))
    server.requests.clear()
    for source in FILES:
        outs = sources.outputs(source)
        assert sources.ingest(source, registry[source], None, outs).startswith(f"{source}: {len(outs)} file(s) verified")
    assert server.requests == []  # nothing from the network
    assert (work / paths.raw("toy_a", "cases/x.csv")).read_bytes() == FILES["toy_a"]["cases/x.csv"]
    assert sources.read_bundle(work / paths.raw("toy_b", "ids/docs.jsonl")) == {n: d.decode() for n, d in DOCS.items()}


def test_a_second_run_downloads_nothing(served, tmp_path):
    server, _ = served
    into = tmp_path / "mirror"
    fetch(into)
    sums = (into / "SHA256SUMS").read_text()
    server.requests.clear()
    result = fetch(into)
    assert server.requests == []
    assert "[2/5] toy_a/cases/x.csv: present, sha256 ok" in result.output.splitlines()
    assert "[5/5] toy_b/ids/docs/ (3 files): present, manifest sha256 ok" in result.output.splitlines()
    assert "0 downloaded (0 B), 5 already present" in result.output
    assert (into / "SHA256SUMS").read_text() == sums
    # a file that changed is downloaded again, and only it
    (into / "toy_a" / "labels.csv").write_bytes(b"tampered")
    fetch(into)
    assert server.requests == ["/toy_a/labels.csv"]
    assert (into / "toy_a" / "labels.csv").read_bytes() == FILES["toy_a"]["labels.csv"]


def run_cli_with(registry, args):
    """The console entry point in a fresh process with ``registry`` in place
    of the package's (the one-line error path of ``cli()``)."""
    code = (
        "import json, sys\nfrom hatecheck_pipeline.data import sources\n"
        f"sources._registry = lambda: json.loads({json.dumps(json.dumps(registry))})\n"
        "sources.TRIES = 1\nfrom hatecheck_pipeline.cli.app import cli\n"
        f"sys.argv = ['hatecheck-pipeline', *{args!r}]\ncli()\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_wrong_sha256_is_one_line_naming_the_url_and_nothing_is_half_written(served, tmp_path):
    server, registry = served
    bad = registry["toy_a"]["files"]["cases/x.csv"]
    bad["sha256"] = sha(b"something else")
    into = tmp_path / "mirror"
    done = run_cli_with(registry, ["fetch-data", "--into", str(into)])
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {bad['url']}: sha256 mismatch: expected {bad['sha256']} ({sources.SOURCES_FILE}, toy_a/cases/x.csv), "
        f"actual {sha(FILES['toy_a']['cases/x.csv'])}; nothing written"
    ]
    assert "Traceback" not in done.stderr and "HATECHECK_PIPELINE_MIRROR=" not in done.stdout
    # the file before it is in place, complete; nothing else: no partial file, no temporary, no lists
    assert sorted(p.relative_to(into).as_posix() for p in into.rglob("*") if p.is_file()) == ["toy_a/labels.csv"]
    # an unreachable file: one line naming the URL too
    registry["toy_a"]["files"]["cases/x.csv"]["url"] = server.url + "/toy_a/missing.csv"
    done = run_cli_with(registry, ["fetch-data", "--into", str(into)])
    assert [line for line in done.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {server.url}/toy_a/missing.csv: HTTP 404; gave up after 1 try"
    ]


def test_a_set_whose_manifest_differs_leaves_no_folder(served, tmp_path):
    server, registry = served
    registry["toy_b"]["file_sets"]["ids/docs.jsonl"]["manifest_sha256"] = "0" * 64
    into = tmp_path / "mirror"
    with pytest.raises(sources.HashMismatchError, match=r"toy_b/ids/docs.jsonl: manifest sha256 mismatch over 3 files"):
        mirror_mod.fetch_mirror(into, registry)
    assert not (into / "toy_b" / "ids" / "docs").exists() and not list((into / "toy_b" / "ids").glob(".docs*"))
    assert not (into / "SHA256SUMS").exists()


def test_download_errors_are_retried_then_one_line(tmp_path):
    waits = []
    with pytest.raises(sources.DownloadError, match=r"^http://127.0.0.1:9/x: URLError: .*; gave up after 3 tries$"):
        sources._download("http://127.0.0.1:9/x", tries=3, sleep=waits.append)
    assert waits == [1.0, 2.0]
