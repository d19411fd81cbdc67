"""Raw-file registry and the ingest stage.

Every raw file has a pinned public URL and a sha256 in
``resources/raw_sources.yaml``. Files are downloaded with pooch (which checks
the hash) or, when a mirror folder is given, copied from it after the same
check; with a mirror, nothing touches the network.
"""

from __future__ import annotations

import copy
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import sha256sum

SOURCES_FILE = "src/hatecheck_pipeline/resources/raw_sources.yaml"
MIRROR_ENV = "HATECHECK_PIPELINE_MIRROR"


class HashMismatchError(PipelineError, RuntimeError):
    """A raw file's content differs from its registered sha256."""


class MissingRawFile(PipelineError, FileNotFoundError):
    """A raw file is not where it should be (mirror or ingested folder)."""


@dataclass(frozen=True)
class RawFile:
    source: str
    name: str
    url: str
    sha256: str

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
    import pooch  # downloads only when no mirror is set

    try:
        cached = pooch.retrieve(item.url, known_hash=f"sha256:{item.sha256}", progressbar=True)
    except ValueError as exc:  # pooch reports hash mismatches as ValueError
        raise HashMismatchError(f"{label}: {exc}") from exc
    shutil.copyfile(cached, dest)
    return dest


def mirror_dir(setting: str | None) -> Path | None:
    """The local mirror of the raw datasets: the environment variable
    ``HATECHECK_PIPELINE_MIRROR`` first, then the ``ingest.mirror`` setting."""
    value = os.environ.get(MIRROR_ENV) or setting
    return Path(value).expanduser().resolve() if value else None


def ingest(source: str, entry: dict, mirror: str | None, files: list[Path]) -> str:
    """Stage: every registered file of ``source`` (``entry``: its registry
    record) to ``files``, downloaded or copied from the mirror, sha256-checked."""
    items = {item.name: item for item in (RawFile(source, n, m["url"], m["sha256"]) for n, m in entry["files"].items())}
    root = Path(paths.raw(source, ""))
    for dest in files:
        fetch(items[dest.relative_to(root).as_posix()], dest, mirror_dir(mirror))
    return f"{source}: {len(files)} file(s) verified"
