"""Validated parameters kept between processes: a build starts one process
per stage (281 in the default profile), and each validated params.yaml
against the schema, importing jsonschema and parsing the schema to do it,
to get the same answer as the process before.

An entry is keyed by everything the answer depends on: the parameter tree
as read, the overrides in order, the schema file's bytes, and the bytes of
the modules that validate (:data:`CODE`) and of jsonschema's version. Only a
tree that passed is kept (a failure is found again, with its message), and
only where JSON gives back exactly that tree (strings, numbers, booleans,
null, lists and mappings with string keys: what params.yaml holds; a date
or a non-string key is validated every time). A home that cannot be
written keeps nothing, with the same results. One file per entry under
``<XDG_CACHE_HOME or ~/.cache>/hatecheck_pipeline/params-v1/`` (or
``$HATECHECK_PIPELINE_PARAMS_CACHE``); past :data:`MAX_ENTRIES`, the
oldest go.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from hatecheck_pipeline.core import usercache

CACHE_ENV = "HATECHECK_PIPELINE_PARAMS_CACHE"
VERSION = 1
MAX_ENTRIES = 64
_HERE = Path(__file__).resolve().parent
# The modules whose code decides whether a tree passes (the schema check and
# the cross-checks): an edit of one of them is a new key.
CODE = ("config.py", "kinds.py", "profile.py", "params_cache.py")


def cache_dir() -> Path:
    return usercache.cache_file(f"params-v{VERSION}", CACHE_ENV)


def _jsonschema_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jsonschema")
    except PackageNotFoundError:
        return "?"


def key(tree: Any, overrides: Any, schema_path: Path) -> str | None:
    """The entry's key, or None where the inputs are not plain JSON (or a
    file cannot be read): validated every time then."""
    digest = hashlib.sha256()
    try:
        digest.update(json.dumps([tree, overrides], sort_keys=False, allow_nan=False).encode("utf-8"))
        digest.update(Path(schema_path).read_bytes())
        for name in CODE:
            digest.update((_HERE / name).read_bytes())
    except (TypeError, ValueError, OSError):
        return None
    digest.update(_jsonschema_version().encode("utf-8"))
    return digest.hexdigest()[:32]


def validated(tree: Any, overrides: Any, schema_path: Path, validate: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``validate()``'s answer for these inputs: kept from an earlier
    process where one validated the same, else computed (and kept where it
    round-trips through JSON unchanged). ``validate`` raises on invalid
    parameters; nothing is kept then."""
    k = key(tree, overrides, schema_path)
    path = cache_dir() / f"{k}.json" if k else None
    if path is not None:
        try:
            return json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            pass
    params = validate()
    if path is not None:
        try:
            text = json.dumps(params, allow_nan=False)
        except (TypeError, ValueError):
            return params
        if json.loads(text) == params and usercache.keep(text, path):
            _prune(path.parent)
    return params


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` newest entries."""
    with contextlib.suppress(OSError):
        entries = [e for e in os.scandir(folder) if e.name.endswith(".json")]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        for e in entries[: len(entries) - MAX_ENTRIES]:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
