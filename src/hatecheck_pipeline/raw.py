"""Raw-file registry and the ingest stage.

Every raw file has a pinned public URL and a sha256 in
``resources/raw_sources.yaml``. Files are downloaded with pooch (which checks
the hash) or, when a mirror folder is given, copied from it after the same
check; with a mirror, nothing touches the network.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

RAW_DIR = Path("data/raw")
SOURCES_FILE = "src/hatecheck_pipeline/resources/raw_sources.yaml"


class HashMismatchError(RuntimeError):
    """A raw file's content differs from its registered sha256."""


@dataclass(frozen=True)
class RawFile:
    source: str
    name: str
    url: str
    sha256: str

    @property
    def path(self) -> Path:
        return RAW_DIR / self.source / self.name


def load_registry() -> dict:
    text = resources.files("hatecheck_pipeline").joinpath("resources/raw_sources.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def raw_files(source: str, registry: dict | None = None) -> list[RawFile]:
    """Every registered file of one source (e.g. ``mhc``)."""
    registry = registry or load_registry()
    if source not in registry:
        raise KeyError(f"{SOURCES_FILE}: unknown raw source {source!r}; known: {sorted(registry)}")
    return [RawFile(source, name, meta["url"], meta["sha256"]) for name, meta in registry[source]["files"].items()]


def raw_path(source: str, name: str) -> str:
    return str(RAW_DIR / source / name)


def sha256sum(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, expected: str, label: str) -> None:
    actual = sha256sum(path)
    if actual != expected:
        raise HashMismatchError(f"{label}: sha256 mismatch for {path}: expected {expected}, actual {actual}")


def fetch(item: RawFile, dest_root: Path, mirror: Path | None) -> Path:
    """Place one raw file under ``dest_root`` with its hash verified."""
    dest = dest_root / item.source / item.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    label = f"{item.source}/{item.name}"
    if mirror is not None:
        src = mirror / item.source / item.name
        if not src.exists():
            raise FileNotFoundError(f"{label}: not found in mirror {mirror} (expected {src})")
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


def run(source: str, dest_root: Path, mirror: Path | None) -> list[Path]:
    """Ingest stage: every file of ``source`` into ``dest_root/source``."""
    return [fetch(item, dest_root, mirror) for item in raw_files(source)]
