"""``hatecheck-pipeline fetch-data``: every pinned raw file of
``resources/raw_sources.yaml`` downloaded into a local mirror folder, in the
layout the ingest stages read from ``HATECHECK_PIPELINE_MIRROR``
(docs/data.md, "The local mirror"):

- ``<mirror>/<source>/<name>``: every registered file (``name`` may hold
  folders: ``mhc/cases/hatecheck_cases_final_dutch.csv``);
- ``<mirror>/<source>/<mirror_dir>/<file>``: every file of a file set
  (HateXplain's ``hatexplain/eraser/docs/<post id>``);
- ``<mirror>/SHA256SUMS``: ``<sha256>  ./<source>/<name>`` for every file
  outside a set's folder, and the same lines of each source in
  ``<mirror>/<source>/SHA256SUMS``;
- ``<mirror>/<source>/<folder of a set>/SHA256SUMS``: ``<sha256>  <path
  from that folder>`` for the files there (``hatexplain/eraser/SHA256SUMS``
  lists ``train.jsonl`` ... and ``docs/<post id>``; the ingest stage names
  the files of a set that differ from it).

Files come through :func:`sources.download` (pooch: into a temporary file
beside the target, moved into place once its sha256 is the registered one)
and a set through :func:`sources.download_set` into a temporary folder,
renamed once the set's manifest hash is the registered one. A file, or a
set, already there with the right hash is not downloaded again. The lists
are written last, once every file is in place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TextIO

from hatecheck_pipeline.core import usercache
from hatecheck_pipeline.core.files import sha256sum, write_text
from hatecheck_pipeline.data import sources

SUMS = "SHA256SUMS"
MIRROR_ENV = sources.MIRROR_ENV


def default_into() -> Path:
    """Where ``fetch-data`` puts the mirror unless told: the user's cache
    (``~/.cache/hatecheck_pipeline/mirror``), outside any checkout, shared by
    every checkout of the user."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")  # core.usercache's folder
    return base / usercache.PACKAGE / "mirror"


@dataclass
class Fetched:
    into: Path
    downloaded: int = 0  # files or sets downloaded
    present: int = 0  # files or sets already there with the right hash
    bytes: int = 0  # bytes downloaded


def human(n: int) -> str:
    """A size for people.

    >>> human(512), human(2048), human(5 * 1024 ** 2 + 1)
    ('512 B', '2.0 KiB', '5.0 MiB')
    """
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _bar(stream: TextIO, **kwargs):
    """A tqdm bar on a terminal; on anything else none (the line each item
    ends with says what happened)."""
    from tqdm.auto import tqdm

    return tqdm(file=stream, disable=not stream.isatty(), dynamic_ncols=True, leave=False, **kwargs)


@contextlib.contextmanager
def _quiet_pooch():
    """Without pooch's own "Downloading data from ..." log lines (the lines
    here say it)."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel("WARNING")
    try:
        yield
    finally:
        logger.setLevel(level)


def fetch_mirror(into: str | Path, registry: dict | None = None, workers: int = 8, stream: TextIO | None = None) -> Fetched:
    """Download every registered file and file set into ``into`` (the layout
    of the module docstring), progress on ``stream`` (stderr): ``[i/N]`` and
    the bytes of each."""
    stream = stream or sys.stderr
    registry = registry if registry is not None else sources.load_registry()
    into = Path(into).expanduser().resolve()
    files = [f for s in registry for f in sources.raw_files(s, registry)]
    sets = [x for s in registry for x in sources.raw_sets(s, registry)]
    total = len(files) + len(sets)
    done = Fetched(into)
    digests: dict[str, str] = {}  # path under the mirror -> sha256

    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    into.mkdir(parents=True, exist_ok=True)
    with _quiet_pooch():
        for i, item in enumerate(files, 1):
            label = f"[{i}/{total}] {item.source}/{item.name}"
            dest = into / item.source / item.name
            if dest.is_file() and sha256sum(dest) == item.sha256:
                done.present += 1
                say(f"{label}: present, sha256 ok")
            else:
                # total: a first guess that pooch replaces with the Content-Length (a bar of total None is no bar to it)
                with _bar(stream, desc=label, total=1, unit="B", unit_scale=True, unit_divisor=1024) as bar:
                    sources.download(item, dest, progressbar=False if bar.disable else bar)
                size = dest.stat().st_size
                done.downloaded, done.bytes = done.downloaded + 1, done.bytes + size
                say(f"{label}: {human(size)} downloaded, sha256 ok")
            digests[f"{item.source}/{item.name}"] = item.sha256
    for i, item in enumerate(sets, len(files) + 1):
        names = sources.set_names(item, into / item.source)  # from files fetched above
        label = f"[{i}/{total}] {item.source}/{item.mirror_dir}/ ({len(names)} files)"
        folder = into / item.source / item.mirror_dir
        have = _present(folder, names)
        if have is not None and sources.manifest_digest(have) == item.manifest_sha256:
            done.present += 1
            say(f"{label}: present, manifest sha256 ok")
        else:
            have = _fetch_set(item, names, folder, workers, stream, label, done)
            done.downloaded += 1
            say(f"{label}: {human(sum((folder / n).stat().st_size for n in names))} downloaded, manifest sha256 ok")
        digests.update({f"{item.source}/{item.mirror_dir}/{n}": d for n, d in have.items()})
    write_sums(into, registry, digests)
    return done


def _present(folder: Path, names: list[str]) -> dict[str, str] | None:
    """``{name: sha256}`` of a set's files already in ``folder``; None when
    one is missing."""
    if not all((folder / n).is_file() for n in names):
        return None
    return {n: sha256sum(folder / n) for n in names}


def _fetch_set(
    item: sources.FileSet, names: list[str], folder: Path, workers: int, stream: TextIO, label: str, done: Fetched
) -> dict[str, str]:
    """The set's files into a temporary folder beside ``folder``, renamed to
    it once the manifest hash is the registered one."""
    with _bar(stream, desc=label, total=len(names), unit="file") as bar:
        got = 0

        def on_file(_name: str, size: int) -> None:
            nonlocal got
            got += size
            bar.set_postfix_str(human(got), refresh=False)
            bar.update(1)

        contents = sources.download_set(item, names, workers, on_file)
    digests = sources.check_set(item, names, contents)
    tmp = folder.with_name(f".{folder.name}.part-{os.getpid()}")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, content in zip(names, contents):
            (tmp / name).write_bytes(content)
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    done.bytes += got
    return digests


def write_sums(into: Path, registry: dict, digests: dict[str, str]) -> list[Path]:
    """The ``SHA256SUMS`` lists of the module docstring from ``digests``
    (path under the mirror -> sha256), each written whole."""
    nested = sorted(
        {
            f"{x.source}/{PurePosixPath(x.mirror_dir).parent}"
            for s in registry
            for x in sources.raw_sets(s, registry)
            if PurePosixPath(x.mirror_dir).parent != PurePosixPath(".")
        },
        key=len,
        reverse=True,
    )
    lists: dict[str, list[str]] = {".": []}
    for path, digest in digests.items():
        folder = next((n for n in nested if path.startswith(n + "/")), None)
        if folder is not None:
            lists.setdefault(folder, []).append(f"{digest}  {path[len(folder) + 1 :]}\n")
        else:
            line = f"{digest}  ./{path}\n"
            lists["."].append(line)
            lists.setdefault(path.split("/", 1)[0], []).append(line)
    return [write_text("".join(lines), into / folder / SUMS) for folder, lines in lists.items()]
