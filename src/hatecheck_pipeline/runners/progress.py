"""``hatecheck-pipeline follow``: the last progress line of every running
stage, refreshed until no stage runs.

A Snakemake run sends each stage's output to ``logs/<stage>.log`` (the rule's
``hatecheck-pipeline run <stage> > logs/<stage>.log 2>&1``), so its terminal
shows only Snakemake's job counter. A stage runs while its process holds its
log open: :func:`held_logs` finds those logs among the open files of this
machine's processes (``/proc/<pid>/fd``). Where no process here holds one
(the jobs run on other machines: the Slurm profile), the logs written in the
last ``recent_s`` seconds stand for the running stages. The last progress
line is the log's last non-blank line, a tqdm bar's ``\\r``-separated
updates counted as lines, terminal colour codes removed.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TextIO

LOGS = "logs"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@dataclass(frozen=True)
class Running:
    stage: str
    line: str  # the log's last progress line ("" for an empty log)
    age_s: float  # seconds since the log was last written


def last_line(path: str | Path, tail_bytes: int = 16384) -> str:
    r"""The last non-blank line of a log (``\r`` ends a line too: tqdm's
    updates), without terminal colour codes.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("wb", delete=False) as fh:
    ...     _ = fh.write(b"loading\ntrain:  10%|#  | 1/10\rtrain:  20%|## | 2/10\r\x1b[32m\x1b[0m\n\n")
    >>> last_line(fh.name)
    'train:  20%|## | 2/10'
    >>> os.unlink(fh.name)
    """
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - tail_bytes))
        text = fh.read().decode("utf-8", errors="replace")
    for line in reversed(re.split(r"[\r\n]", ANSI.sub("", text))):
        if line.strip():
            return line.strip()
    return ""


def held_logs(logs_dir: str | Path = LOGS, proc: str | Path = "/proc") -> set[Path] | None:
    """The ``<logs_dir>/*.log`` files some process of this machine holds
    open (resolved paths); None where the processes' files cannot be read
    (no ``/proc``)."""
    folder = str(Path(logs_dir).resolve()) + os.sep
    try:
        pids = [e.path for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return None
    found: set[Path] = set()
    for pid in pids:
        try:
            fds = list(os.scandir(os.path.join(pid, "fd")))
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            try:
                target = os.readlink(fd.path)
            except OSError:
                continue
            if target.startswith(folder) and target.endswith(".log") and os.sep not in target[len(folder) :]:
                found.add(Path(target))
    return found


def running_stages(
    logs_dir: str | Path = LOGS, held: Iterable[Path] | None = None, recent_s: float = 60.0, now: float | None = None
) -> list[Running]:
    """The stages running now, by name: those whose log a process holds open
    (``held``, :func:`held_logs`' answer), or, where none is held, those whose
    log was written in the last ``recent_s`` seconds."""
    now = time.time() if now is None else now
    logs = {p.resolve(): p for p in Path(logs_dir).glob("*.log") if p.is_file()}
    held = {Path(p).resolve() for p in held or ()} & set(logs)
    out = []
    for resolved, path in sorted(logs.items()):
        try:
            age = max(0.0, now - path.stat().st_mtime)
        except FileNotFoundError:
            continue
        if (resolved in held) if held else (age <= recent_s):
            out.append(Running(path.stem, last_line(path), age))
    return out


def render(rows: list[Running], width: int) -> list[str]:
    """One line per running stage, cut to ``width`` characters.

    >>> render([Running("train_a", "epoch 2: 40%|####", 3.2)], 80)
    ['train_a  epoch 2: 40%|####  (3 s ago)']
    """
    name_w = max((len(r.stage) for r in rows), default=0)
    lines = [f"{r.stage:{name_w}s}  {r.line or '(no output yet)'}  ({r.age_s:.0f} s ago)" for r in rows]
    return [line if len(line) <= width else line[: max(1, width - 1)] + "…" for line in lines]


def follow(
    logs_dir: str | Path = LOGS,
    interval_s: float = 2.0,
    recent_s: float = 60.0,
    out: TextIO | None = None,
    run_alive: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    find_held: Callable[[], set[Path] | None] | None = None,
) -> int:
    """Show every running stage's last progress line every ``interval_s``
    seconds until no stage runs and no Snakemake run of the workspace is
    alive (``run_alive``: between two jobs none runs). On a terminal the
    lines are redrawn in place; elsewhere a block is printed when it changes.
    Returns the number of refreshes."""
    out = out or sys.stdout
    tty = out.isatty()
    find_held = find_held or (lambda: held_logs(logs_dir))
    shown: list[str] = []
    seen: list[tuple[str, str]] | None = None  # what the last block showed, ages aside
    refreshes = 0
    while True:
        rows = running_stages(logs_dir, find_held(), recent_s)
        width = shutil.get_terminal_size((120, 24)).columns if tty else 10**6
        lines = render(rows, width) if rows else ["(no stage running; waiting for the run's next job)"]
        if not rows and not run_alive():
            break
        if tty:
            out.write((f"\x1b[{len(shown)}F\x1b[J" if shown else "") + "\n".join(lines) + "\n")
        elif [(r.stage, r.line) for r in rows] != seen:
            out.write("\n".join(lines) + "\n\n")
        out.flush()
        shown, seen = lines, [(r.stage, r.line) for r in rows]
        refreshes += 1
        sleep(interval_s)
    if tty and shown:
        out.write(f"\x1b[{len(shown)}F\x1b[J")
    out.write("no stage is running\n")
    out.flush()
    return refreshes


def report_while(
    alive: Callable[[], bool],
    logs_dir: str | Path = LOGS,
    interval_s: float = 10.0,
    out: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    find_held: Callable[[], set[Path] | None] | None = None,
    recent_s: float = 60.0,
) -> int:
    """While ``alive()`` (a run this command started), every ``interval_s``
    seconds, one line per running stage whose progress line changed since it
    was last shown: ``  <stage>: <line>``. Lines are only appended, never
    redrawn, so they interleave with the run's own output (``evaluate``'s
    Snakemake job lines). Returns the number of lines written.

    >>> import io, tempfile
    >>> logs = Path(tempfile.mkdtemp())
    >>> _ = (logs / "predict_m_hatecheck.log").write_text("predict:  50%|#####     | 1/2\\r")
    >>> beats, buf = iter([True, True, False]), io.StringIO()
    >>> report_while(lambda: next(beats), logs, 0, buf, lambda s: None, lambda: {logs / "predict_m_hatecheck.log"})
    1
    >>> buf.getvalue()
    '  predict_m_hatecheck: predict:  50%|#####     | 1/2\\n'
    """
    out = out or sys.stderr
    find_held = find_held or (lambda: held_logs(logs_dir))
    shown: dict[str, str] = {}
    written = 0
    while alive():
        for row in running_stages(logs_dir, find_held(), recent_s):
            if row.line and shown.get(row.stage) != row.line:
                out.write(f"  {row.stage}: {row.line}\n")
                shown[row.stage] = row.line
                written += 1
        out.flush()
        sleep(interval_s)
    return written
