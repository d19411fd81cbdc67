"""The ``fetch_llm_weights`` stage: :func:`models.weights.fetch_weights`
with the GGUF parsed once while transformers dequantises it, and each
quantised tensor's pages of the mapped file let go once it is dequantised.

transformers loads a GGUF's tokenizer, config and weights one after the
other, and each load builds its own ``gguf.GGUFReader``: a full parse of
the header, the model's whole vocabulary and merges included. The reader
only reads (a read-only memory map), so the three loads can share one
(:func:`gguf_read_once`; ``benchmarks/records/gguf_read_once_2026-11-28.txt``
times it). Kept apart from ``models/weights.py``, which every classifier
stage imports (a change there re-runs them all): a change here re-runs the
stage that fetches the LLM's weights only.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.models import weights as W


@contextmanager
def gguf_read_once():
    """While transformers loads GGUFs, one ``gguf.GGUFReader`` per file
    (transformers imports the class from ``gguf`` at each load)."""
    import gguf

    real = gguf.GGUFReader
    readers: dict[tuple, Any] = {}

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (os.path.realpath(os.fspath(path)), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = real(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = real


def release_pages(array: Any) -> None:
    """Drop the resident pages of ``array``, a view of a read-only mapped
    file, from this process (``madvise(MADV_DONTNEED)``: the file is
    unchanged and a later read faults them back in from the page cache).
    Only whole pages inside the array are dropped."""
    page = mmap.PAGESIZE
    start = array.ctypes.data
    first, last = -(-start // page) * page, (start + array.nbytes) // page * page
    if last > first:
        _libc().madvise(ctypes.c_void_p(first), ctypes.c_size_t(last - first), ctypes.c_int(mmap.MADV_DONTNEED))


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    """This process's C library, opened once (madvise for every tensor)."""
    return ctypes.CDLL(None, use_errno=True)


@contextmanager
def gguf_pages_released():
    """While transformers loads GGUFs, each quantised tensor's pages of the
    mapped file are dropped once it is dequantised (transformers imports
    ``dequantize`` from ``gguf`` at each load): otherwise every page of the
    file stays resident beside its dequantised copy until the load ends
    (1.1 GB for the 1.5B Q4_K_M model)."""
    import gguf

    real = gguf.dequantize

    def dequantize(data: Any, qtype: Any) -> Any:
        out = real(data, qtype)
        if not getattr(data, "flags", None) or not data.flags.writeable:  # a view of the read-only mapped file
            release_pages(data)
        return out

    gguf.dequantize = dequantize
    try:
        yield
    finally:
        gguf.dequantize = real


def dequantise(gguf_path: Path, dest: Path, dtype: str, sha256: str) -> str:
    """:func:`models.weights.dequantise`, the GGUF parsed once and its
    pages let go tensor by tensor."""
    with gguf_read_once(), gguf_pages_released():
        return W.dequantise(gguf_path, dest, dtype, sha256)


def fetch_weights(weights: Path, info: Path, profile: Profile, registry: Mapping[str, Any]) -> str:
    """Stage ``fetch_llm_weights``: :func:`models.weights.fetch_weights`,
    its dequantised copy made by :func:`dequantise`."""
    return W.fetch_weights(weights, info, profile, registry, convert=dequantise)
