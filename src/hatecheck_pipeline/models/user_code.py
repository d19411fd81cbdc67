"""Errors raised by a user's code (a classifier's function): one line
naming the function, the exception and the file:line where it was raised;
the full traceback kept for the stage's log. Apart from core/errors.py,
which every stage imports: only the stages that call a user's code import
this module."""

from __future__ import annotations

import traceback
from pathlib import Path

from hatecheck_pipeline.core.errors import PipelineError


class UserCodeError(PipelineError):
    """Code of the user's (a classifier's function) raised: the message is
    one line naming the function, the exception and the file:line where it
    was raised; ``details`` holds the full traceback (a stage keeps it in
    its log)."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


def _library_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(str(Path(paths[k]).resolve()) for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k))


def raised_at(exc: BaseException) -> tuple[str, int | None]:
    """(file, line) where ``exc`` was raised in the user's code: the deepest
    frame outside this package and the Python installation's libraries
    (else the deepest outside this package); a SyntaxError's own location.
    A file under the working folder is given relative to it."""
    if isinstance(exc, SyntaxError) and exc.filename:
        file, line = exc.filename, exc.lineno
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        ours = str(Path(__file__).resolve().parents[1])  # the package
        libraries = _library_dirs()
        outside = [f for f in frames if not str(Path(f.filename).resolve()).startswith(ours)]
        user = [f for f in outside if not str(Path(f.filename).resolve()).startswith(libraries) and not f.filename.startswith("<")]
        frame = (user or outside or frames or [None])[-1]
        if frame is None:
            return "?", None
        file, line = frame.filename, frame.lineno
    try:
        file = str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    return file, line


def user_code_error(what: str, exc: BaseException) -> UserCodeError:
    """One line for an exception raised by the user's code ``what`` (e.g.
    ``model kw: userclf:predict``): the exception's type and message and
    where it was raised, with the full traceback as ``details``.

    >>> def predict(texts):
    ...     raise ValueError("no model loaded")
    >>> try:
    ...     predict(["a"])
    ... except ValueError as exc:
    ...     err = user_code_error("model kw: userclf:predict", exc)
    >>> str(err).split(" at ")[0]
    'model kw: userclf:predict raised ValueError: no model loaded'
    >>> "Traceback" in err.details and "no model loaded" in err.details
    True
    """
    file, line = raised_at(exc)
    text = " ".join(str(exc).split())
    message = f"{type(exc).__name__}: {text[:300] + ('...' if len(text) > 300 else '')}" if text else type(exc).__name__
    where = f"{file}:{line}" if line is not None else file
    return UserCodeError(f"{what} raised {message} at {where}", "".join(traceback.format_exception(exc)))
