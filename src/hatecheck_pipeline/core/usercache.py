"""Small files the package keeps per user between runs (caches of work that
gives the same answer again, never results): where each lives and how it is
written. A cache file is ``$<its env var>`` where set, else
``<XDG_CACHE_HOME or ~/.cache>/hatecheck_pipeline/<name>``; it is replaced
whole (a reader sees the old file or the new one), and a home that cannot be
written keeps nothing, with the same results."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PACKAGE = "hatecheck_pipeline"


def cache_file(name: str, env: str) -> Path:
    """Where the cache ``name`` lives: ``$env`` if set, else under the user's
    cache folder."""
    if os.environ.get(env):
        return Path(os.environ[env])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / PACKAGE / name


def keep(text: str, path: Path) -> bool:
    """Replace ``path`` with ``text`` through a temp file of this process
    (processes writing at once never mix); False where it cannot be written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False
    return True
