"""Raw-file registry and the ingest stage.

Every raw file has a pinned public URL and a sha256 in
``resources/raw_sources.yaml``. Files are downloaded with pooch (which checks
the hash) or, when a mirror folder is given, copied from it after the same
check; with a mirror, nothing touches the network.

A source may also pin a *file set* (``file_sets``): a folder of many small
files (HateXplain's ERASER ``docs/<post id>``, 11,415 files) named by the
records of registered files, each fetched from the mirror folder or its URL
template and hashed; the sorted ``<sha256>  <name>`` manifest must hash to
the registered ``manifest_sha256``. The ingest stage writes the set as one
JSON-lines bundle (``name``, ``sha256``, ``text``), so the DAG tracks one
file instead of thousands.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import yaml

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import sha256sum, write_text

SOURCES_FILE = "src/hatecheck_pipeline/resources/raw_sources.yaml"
MIRROR_ENV = "HATECHECK_PIPELINE_MIRROR"


class HashMismatchError(PipelineError, RuntimeError):
    """A raw file's content differs from its registered sha256."""


class MissingRawFile(PipelineError, FileNotFoundError):
    """A raw file is not where it should be (mirror or ingested folder)."""


class DownloadError(PipelineError, OSError):
    """A pinned URL could not be downloaded (after the retries)."""


@dataclass(frozen=True)
class RawFile:
    source: str
    name: str
    url: str
    sha256: str

    @property
    def path(self) -> Path:
        return Path(paths.raw(self.source, self.name))


@dataclass(frozen=True)
class FileSet:
    """Many small raw files pinned as one set (see the module docstring)."""

    source: str
    name: str  # the bundle's path under data/raw/<source>/
    url: str  # template with {name}
    mirror_dir: str  # the files' folder under the mirror's <source>/
    names_from: tuple[str, ...]  # registered JSON-lines files whose annotation_id names a file
    count: int
    manifest_sha256: str

    @property
    def path(self) -> Path:
        return Path(paths.raw(self.source, self.name))


def load_registry() -> dict:
    """The raw-file registry (parsed once per process, libyaml's C loader)."""
    return copy.deepcopy(_registry())


@lru_cache(maxsize=1)
def _registry() -> dict:
    text = resources.files("hatecheck_pipeline").joinpath("resources/raw_sources.yaml").read_text("utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def raw_files(source: str, registry: dict | None = None) -> list[RawFile]:
    """Every registered file of one source (e.g. ``mhc``)."""
    registry = registry or load_registry()
    if source not in registry:
        raise KeyError(f"{SOURCES_FILE}: unknown raw source {source!r}; known: {sorted(registry)}")
    return [RawFile(source, name, meta["url"], meta["sha256"]) for name, meta in registry[source]["files"].items()]


def raw_sets(source: str, registry: dict | None = None) -> list[FileSet]:
    """Every registered file set of one source (most sources have none)."""
    registry = registry or load_registry()
    sets = registry[source].get("file_sets") or {}
    return [
        FileSet(source, name, m["url"], m["mirror_dir"], tuple(m["names_from"]), int(m["count"]), m["manifest_sha256"])
        for name, m in sets.items()
    ]


def outputs(source: str, registry: dict | None = None) -> list[Path]:
    """What ``ingest_<source>`` writes: its files, then its sets' bundles."""
    return [f.path for f in raw_files(source, registry)] + [s.path for s in raw_sets(source, registry)]


def read_bundle(path: str | Path) -> dict[str, str]:
    """``{name: text}`` of a file-set bundle written by the ingest stage."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
                out[rec["name"]] = rec["text"]
            except (ValueError, KeyError) as exc:
                raise MissingRawFile(f"{path}: line {n} is not a bundle record ({exc})") from exc
    return out


def manifest_digest(digests: dict[str, str]) -> str:
    """sha256 of the sorted ``<sha256>  <name>`` lines of a file set."""
    text = "".join(f"{digests[n]}  {n}\n" for n in sorted(digests))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def set_names(item: FileSet, root: Path) -> list[str]:
    """The file names of a set: the ``annotation_id`` of every record of its
    ``names_from`` files (already ingested under ``root``), in order: as
    many as the registry pins, distinct, each a plain file name."""
    names: list[str] = []
    for rel in item.names_from:
        with open(root / rel, encoding="utf-8") as fh:
            names += [json.loads(line)["annotation_id"] for line in fh if line.strip()]
    if len(names) != item.count or len(set(names)) != len(names):
        raise HashMismatchError(
            f"{item.source}/{item.name}: {len(names)} names ({len(set(names))} distinct) in "
            f"{', '.join(item.names_from)}, the registry pins {item.count}"
        )
    odd = [n for n in names if not n or "/" in n or "\\" in n or n.startswith(".")]
    if odd:
        raise HashMismatchError(f"{item.source}/{item.name}: {odd[0]!r} in {', '.join(item.names_from)} is not a plain file name")
    return names


TRIES = 3  # downloads: a connection error, a timeout, HTTP 429 or 5xx is tried again (core.http's rule and backoff)


def _download(url: str, tries: int = TRIES, sleep: Callable[[float], None] = time.sleep) -> bytes:
    """The bytes at ``url``; :class:`DownloadError` (one line naming the URL)
    after the last try, or at once for an HTTP status a retry does not change."""
    import urllib.error
    import urllib.request

    from hatecheck_pipeline.core import http  # requests, imported only where something is downloaded

    for attempt in range(1, tries + 1):
        try:
            with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 (pinned https URLs; file:// and loopback in tests)
                return resp.read()
        except urllib.error.HTTPError as exc:
            reason, final = f"HTTP {exc.code} {exc.reason}", not http.retryable(exc.code)
        except OSError as exc:
            reason, final = f"{type(exc).__name__}: {exc}", False
        if final or attempt == tries:
            raise DownloadError(f"{url}: {reason}; gave up after {attempt} tr{'y' if attempt == 1 else 'ies'}")
        sleep(http.backoff_s(attempt, 1.0, 8.0))
    raise AssertionError("unreachable")


def download(
    item: RawFile, dest: Path | None = None, progressbar: Any = True, tries: int = TRIES, sleep: Callable[[float], None] = time.sleep
) -> Path:
    """Download one raw file from its pinned URL with pooch, which streams it
    into a temporary file beside the target and moves it into place only when
    its sha256 is the registered one (a file already there with that hash is
    not downloaded again). ``dest``: where it goes (default: pooch's cache);
    ``progressbar``: True (pooch's own bar), False, or a tqdm bar to fill.
    Errors are one line naming the URL."""
    import pooch  # only where something is downloaded
    import requests

    from hatecheck_pipeline.core import http

    where = {"fname": dest.name, "path": dest.parent} if dest is not None else {}
    for attempt in range(1, tries + 1):
        try:
            return Path(pooch.retrieve(item.url, known_hash=f"sha256:{item.sha256}", progressbar=progressbar, **where))
        except ValueError as exc:  # pooch's hash mismatch (the download is deleted)
            got = re.search(r"got ([0-9a-fA-F]{64})", str(exc))
            actual = got.group(1) if got else "another digest"
            raise HashMismatchError(
                f"{item.url}: sha256 mismatch: expected {item.sha256} ({SOURCES_FILE}, "
                f"{item.source}/{item.name}), actual {actual}; nothing written"
            ) from None
        except requests.RequestException as exc:
            status = exc.response.status_code if getattr(exc, "response", None) is not None else None
            reason = f"HTTP {status}" if status is not None else type(exc).__name__
            if (status is not None and not http.retryable(status)) or attempt == tries:
                raise DownloadError(f"{item.url}: {reason}; gave up after {attempt} tr{'y' if attempt == 1 else 'ies'}") from None
        if hasattr(progressbar, "reset"):
            progressbar.reset()
        sleep(http.backoff_s(attempt, 1.0, 8.0))
    raise AssertionError("unreachable")


def download_set(item: FileSet, names: list[str], workers: int = 8, on_file: Callable[[str, int], None] | None = None) -> list[bytes]:
    """Every file of a set from its URL template, ``workers`` at once, in the
    order of ``names``; ``on_file(name, size)`` after each."""
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import quote

    def one(name: str) -> bytes:
        content = _download(item.url.format(name=quote(name)))
        if on_file is not None:
            on_file(name, len(content))
        return content

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, names))


def check_set(item: FileSet, names: list[str], contents: list[bytes], mirror: Path | None = None) -> dict[str, str]:
    """The set's ``{name: sha256}`` once its manifest hashes to the registered
    ``manifest_sha256`` (:class:`HashMismatchError` otherwise)."""
    digests = {n: hashlib.sha256(c).hexdigest() for n, c in zip(names, contents)}
    actual = manifest_digest(digests)
    if actual != item.manifest_sha256:
        differing = _differing(digests, mirror / item.source / item.mirror_dir if mirror else None)
        hint = f"; files differing from the mirror's SHA256SUMS: {', '.join(differing[:5])}" if differing else ""
        raise HashMismatchError(
            f"{item.source}/{item.name}: manifest sha256 mismatch over {len(names)} files: "
            f"expected {item.manifest_sha256}, actual {actual}{hint}"
        )
    return digests


def fetch_set(item: FileSet, root: Path, mirror: Path | None, workers: int = 8) -> Path:
    """Fetch every file of a set (mirror folder, else its URL, ``workers``
    downloads at once), check the manifest hash, write the bundle."""
    from tqdm.auto import tqdm

    label = f"{item.source}/{item.name}"
    names = set_names(item, root)
    if mirror is not None:
        folder = mirror / item.source / item.mirror_dir

        def read(name: str) -> bytes:
            src = folder / name
            if not src.exists():
                raise MissingRawFile(f"{label}: {name} not found in mirror {mirror} (expected {src})")
            return src.read_bytes()

        contents = [read(n) for n in tqdm(names, desc=label, mininterval=5)]
    else:
        with tqdm(total=len(names), desc=label, mininterval=5) as bar:
            contents = download_set(item, names, workers, lambda _name, _size: bar.update(1))
    digests = check_set(item, names, contents, mirror)
    lines = [json.dumps({"name": n, "sha256": digests[n], "text": c.decode("utf-8")}, ensure_ascii=False) for n, c in zip(names, contents)]
    return write_text("\n".join(lines) + "\n", root / item.name)


def _differing(digests: dict[str, str], folder: Path | None) -> list[str]:
    """Names whose digest differs from the ``SHA256SUMS`` beside a mirror's
    set folder (HateXplain: ``eraser/SHA256SUMS`` lists ``docs/<name>``)."""
    listing = folder.parent / "SHA256SUMS" if folder is not None else None
    if listing is None or not listing.exists():
        return []
    known = {}
    for line in listing.read_text("utf-8").splitlines():
        digest, _, path = line.partition("  ")
        known[Path(path.strip()).name] = digest
    return sorted(n for n, d in digests.items() if known.get(n) not in (None, d))


def verify(path: Path, expected: str, label: str) -> None:
    actual = sha256sum(path)
    if actual != expected:
        raise HashMismatchError(f"{label}: sha256 mismatch for {path}: expected {expected}, actual {actual}")


def fetch(item: RawFile, dest: Path, mirror: Path | None) -> Path:
    """Place one raw file at ``dest`` with its hash verified."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    label = f"{item.source}/{item.name}"
    if mirror is not None:
        src = mirror / item.source / item.name
        if not src.exists():
            raise MissingRawFile(f"{label}: not found in mirror {mirror} (expected {src})")
        verify(src, item.sha256, label)
        tmp = dest.with_name(dest.name + ".part")
        shutil.copyfile(src, tmp)
        tmp.replace(dest)
        return dest
    cached = download(item)  # only when no mirror is set: pooch's cache
    tmp = dest.with_name(dest.name + ".part")
    shutil.copyfile(cached, tmp)
    tmp.replace(dest)
    return dest


def mirror_dir(setting: str | None) -> Path | None:
    """The local mirror of the raw datasets: the environment variable
    ``HATECHECK_PIPELINE_MIRROR`` first, then the ``ingest.mirror`` setting."""
    value = os.environ.get(MIRROR_ENV) or setting
    return Path(value).expanduser().resolve() if value else None


def ingest(source: str, entry: dict, mirror: str | None, files: list[Path]) -> str:
    """Stage: every registered file of ``source`` (``entry``: its registry
    record) to ``files``, downloaded or copied from the mirror, sha256-checked."""
    registry = {source: dict(entry)}
    items = {item.name: item for item in raw_files(source, registry)}
    sets = {item.name: item for item in raw_sets(source, registry)}
    root = Path(paths.raw(source, ""))
    # plain files first: a set's names come from them
    for dest in sorted(files, key=lambda f: f.relative_to(root).as_posix() in sets):
        rel = dest.relative_to(root).as_posix()
        if rel in sets:
            fetch_set(sets[rel], root, mirror_dir(mirror))
        else:
            fetch(items[rel], dest, mirror_dir(mirror))
    n_set = sum(sets[f.relative_to(root).as_posix()].count for f in files if f.relative_to(root).as_posix() in sets)
    return f"{source}: {len(files)} file(s) verified" + (f" ({n_set} files of sets among them, bundled)" if n_set else "")
