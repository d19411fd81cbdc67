"""The environment's own ``dvc`` command with the project's read speed-ups.

A stock ``dvc status`` or ``dvc repro`` of the whole report parses the
943-line params.yaml once per stage with ruamel and looks each stage's keys
up by walking the whole tree: most of a no-op command's time
(``benchmarks/records/dvc_stock_memoised_2026-12-03.txt``). ``scripts/setup.sh``
writes a one-line ``.pth`` file (:data:`PTH_LINE`) into the environment's
site-packages, so that a ``dvc`` started from this environment (its console
script) installs, before DVC's own code runs, the speed-ups of :mod:`.dvc_speedups`
that change how much is read, never what is decided:

- each params file of the local file system parsed once per process and
  each stage's keys looked up once (a file at a git revision, and a file
  whose size or modification time changed, read again);
- ``dvc.lock`` read with the safe YAML parser before DVC rewrites it (the
  same bytes written back);
- the rwlock's check of a stage's paths skipped where every path the lock
  holds is this process's own (no blocker can be found then).

What DVC runs, records and prints is the same (``tests/runners/test_dvc_stock.py``);
``python -m dvc`` and a ``dvc`` of another environment are stock DVC, and
``HATECHECK_PIPELINE_DVC_SPEEDUPS=off`` turns the speed-ups off here too.
Where the installed DVC differs from what the speed-ups rely on
(:func:`.dvc_speedups.check`), they stay off, with one warning. The writes of
``hatecheck-pipeline repro`` (the lock written once, at the end) are not
among them: a stock ``dvc repro`` records each stage as it ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

ENV_SWITCH = "HATECHECK_PIPELINE_DVC_SPEEDUPS"
PTH_NAME = "hatecheck_pipeline_dvc.pth"
# What site.py runs at every start of the environment's interpreter: only a
# look at the script's name, unless it is `dvc`; nothing it does can stop DVC.
PTH_LINE = (
    "import sys; exec(\"try:\\n if sys.argv and sys.argv[0].rsplit('/', 1)[-1] == 'dvc':"
    '\\n  from hatecheck_pipeline.runners.dvc_stock import install; install()\\nexcept Exception:\\n pass")'
)
_OFF = {"0", "off", "false", "no"}
_HELD: list[contextlib.ExitStack] = []  # the speed-ups stay on for the process's life


def enabled(env: dict[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get(ENV_SWITCH, "").strip().lower() not in _OFF


def install() -> bool:
    """Turn the read speed-ups on for the rest of this process; False where
    they are switched off or the installed DVC differs."""
    if _HELD or not enabled():
        return bool(_HELD)
    from hatecheck_pipeline.runners import dvc_speedups

    if not dvc_speedups.ACTIVE:
        return False
    stack = contextlib.ExitStack()
    stack.enter_context(dvc_speedups._memoised_params())
    stack.enter_context(dvc_speedups._lock_read_plain())
    stack.enter_context(dvc_speedups._rwlock_own_skipped())
    _HELD.append(stack)
    return True


def uninstall() -> None:
    """Stock DVC again (tests)."""
    while _HELD:
        _HELD.pop().close()


def site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def write_pth(folder: Path | None = None) -> Path:
    """Write :data:`PTH_LINE` to :data:`PTH_NAME` in ``folder`` (this
    interpreter's site-packages)."""
    path = (folder or site_packages()) / PTH_NAME
    path.write_text(PTH_LINE + "\n", "utf-8")
    return path


if __name__ == "__main__":  # `python -m hatecheck_pipeline.runners.dvc_stock`: what scripts/setup.sh runs
    print(f"wrote {write_pth()}", file=sys.stderr)
