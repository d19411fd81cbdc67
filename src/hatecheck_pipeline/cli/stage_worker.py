"""A warm stage worker: ``hatecheck-pipeline run STAGE`` forked from a
process that has already imported torch and transformers.

Both runners start one process per stage, and a model stage spends
seconds of CPU importing torch and transformers before its first line of
work. The second stage command of a build (one within
:data:`SPAWN_AFTER_SECONDS` of another with the same key) starts, detached,
one worker process that imports them once and then listens on a Unix
socket; every later stage command (this module's :func:`run_in_worker`,
called by :mod:`hatecheck_pipeline.cli.main` before anything else is
imported) hands the worker its arguments, working directory, environment
and standard streams (the file descriptors themselves), and the worker
forks a child that runs the stage exactly as the command would have. The
command waits for the child's exit status and exits with it, so to
Snakemake and DVC nothing has changed: the same command, the same log, the
same exit status. A whole smoke build with and without it:
``benchmarks/bench_stage_worker.py``.

What keeps it the same as a fresh process:

- One worker per interpreter and environment (except the variables that
  name the stage or the shell's own): a library that reads the environment
  when it is imported (OpenMP's and OpenBLAS's thread counts, which
  Snakemake sets per job; Hugging Face's cache and offline switches) sees
  what a fresh process would have seen (:func:`worker_key`).
- The worker imports only third-party libraries (:data:`PRELOAD`), never
  this project's modules: the child drops the worker's own module from
  ``sys.modules`` and imports the project's code from disk, so an edit
  takes effect at the next stage, as it would in a new process.
- The worker stays single-threaded in Python and never runs a torch
  operation, so no OpenMP or thread pool is alive across the fork; polars,
  pyarrow and scikit-learn start threads when imported and are not
  preloaded.
- The child gets the command's exact environment, ``sys.argv``,
  ``sys.path``, umask and working directory, and its own process group.
  Signals the command gets (Ctrl-C, a runner's SIGTERM) are passed on to
  that group; if the command dies (SIGKILL, a killed runner), the child
  sees its socket close and kills its group, so nothing of the stage
  outlives its command.
- Under Slurm (``SLURM_JOB_ID`` set) a stage runs in its own process, in
  the job's allocation, as it does off Linux;
  ``HATECHECK_PIPELINE_WORKER=off`` turns the worker off anywhere.

Anything that goes wrong before the child has started (no worker yet, one
still importing, one that just ended its idle time) makes the command run
the stage in its own process, as it always did. The worker ends after
:data:`IDLE_SECONDS` without a stage.

The stage records' ``cpu_s`` (``logs/benchmarks/<stage>.json``) counted
the imports inside a stage's function; in a forked child they are already
done, so a stage's record is smaller by them. A benchmark that wants whole
processes' CPU from ``/usr/bin/time`` sets ``HATECHECK_PIPELINE_WORKER=off``:
the detached worker is not a child of the runner.

This module imports only the standard library at module level: the
command imports it on every stage start.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import struct
import sys
import threading

ENV_SWITCH = "HATECHECK_PIPELINE_WORKER"
IDLE_SECONDS = 120.0
# A key's files untouched for this long, with no worker holding its lock,
# belong to an environment no longer used: swept when a worker starts.
STALE_SECONDS = 86400.0
SPAWN_AFTER_SECONDS = 120.0
# The third-party modules a model stage spends its start importing; each is
# imported if it can be, in this order.
PRELOAD = (
    "numpy",
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "tokenizers",
    "safetensors.torch",
)
# Variables that differ between stage commands of one build and that no
# library reads when imported: left out of the worker's key.
VOLATILE_ENV = frozenset({"DVC_STAGE", "DVC_ROOT", "PWD", "OLDPWD", "SHLVL", "_"})
_HEADER = struct.Struct("!I")
_FINISHED = threading.Event()  # the child has its exit status: the command may go
_OFF = {"0", "off", "false", "no"}
_MAX_SOCKET_PATH = 100  # a Unix socket's path holds 107 bytes on Linux, 103 on macOS


def enabled(env: dict[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    if env.get(ENV_SWITCH, "").strip().lower() in _OFF:
        return False
    if "SLURM_JOB_ID" in env:  # the stage belongs in the job's allocation
        return False
    # Linux only: on macOS a fork after system frameworks have loaded is unsafe (Python's multiprocessing spawns there)
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


def worker_key(executable: str, env: dict[str, str]) -> str:
    """Which worker may run a command: one per interpreter and environment
    (less :data:`VOLATILE_ENV`). Not per working directory: the worker
    imports from ``/``, and none of :data:`PRELOAD` resolves a path against
    the directory when imported, so one worker serves every project (and
    every test's scratch project) started with the same environment."""
    kept = sorted((k, v) for k, v in env.items() if k not in VOLATILE_ENV)
    blob = json.dumps([executable, kept], ensure_ascii=False).encode("utf-8", "surrogateescape")
    return hashlib.sha256(blob).hexdigest()[:20]


def socket_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, f"hatecheck-pipeline-{os.getuid()}")


def key_file(key: str, suffix: str) -> str:
    """A worker's file in :func:`socket_dir`: ``.sock`` (where it listens),
    ``.lock`` (held for its life, its pid inside), ``.seen`` (the last
    stage command's time)."""
    return os.path.join(socket_dir(), f"{key}{suffix}")


def socket_path(key: str) -> str:
    return key_file(key, ".sock")


def private_dir() -> str | None:
    """:func:`socket_dir`, made if need be, where it is this user's own and
    closed to others (a command hands the worker its environment, API keys
    included, and its output streams); None otherwise."""
    import stat

    path = socket_dir()
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path


# --- the command's side ---------------------------------------------------


def run_in_worker(argv: list[str], entry: str) -> int | None:
    """Run the command line ``argv`` (``sys.argv``) in a child of the warm
    worker, through ``entry`` (``"module:function"``, called with
    ``argv[1:]``), and return its exit status; None where nothing ran there
    (no worker, or it is off): the caller then runs the stage itself."""
    if not enabled():
        return None
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    env = dict(os.environ)
    key = worker_key(sys.executable, env)
    path = socket_path(key)
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH or private_dir() is None:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        if _another_stage_lately(key):  # a build, not a one-off command: worth a worker
            _start_worker(key)
        return None
    try:
        request = json.dumps(
            {"argv": argv, "entry": entry, "cwd": cwd, "env": env, "path": sys.path, "umask": _umask()},
            ensure_ascii=False,
        ).encode("utf-8", "surrogateescape")
        socket.send_fds(conn, [_HEADER.pack(len(request))], [0, 1, 2])
        conn.sendall(request)
        reader = conn.makefile("rb")
        first = reader.readline()
    except OSError:
        conn.close()
        return None
    if not first.startswith(b"pid "):  # the worker ended before forking: nothing ran
        conn.close()
        return None
    child = int(first.split()[1])
    got: list[int] = []
    forward = _forward_signals(child, got)
    try:
        line = reader.readline()  # a forwarded signal's handler runs in between; the read resumes (PEP 475)
    finally:
        _restore(forward)
        conn.close()
    if line.startswith(b"exit "):
        return int(line.split()[1])
    if got:  # the signal passed on ended the stage: end as a process it had ended would
        signal.signal(got[-1], signal.SIG_DFL)
        os.kill(os.getpid(), got[-1])
    print(f"error: the stage's process {child} ended without an exit status (killed by a signal?)", file=sys.stderr)
    return 1


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _forward_signals(child: int, got: list[int]) -> dict:
    def forward(signum, _frame):
        got.append(signum)
        try:
            os.killpg(child, signum)
        except ProcessLookupError:
            pass

    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        old[sig] = signal.signal(sig, forward)
    return old


def _restore(old: dict) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)


def _another_stage_lately(key: str) -> bool:
    """Whether a stage command with this key started in the last
    :data:`SPAWN_AFTER_SECONDS` (this one is noted for the next): a single
    stage run by hand, or a test's one command, starts no worker."""
    import time

    try:
        seen = key_file(key, ".seen")
        try:
            lately = time.time() - os.stat(seen).st_mtime < SPAWN_AFTER_SECONDS
        except FileNotFoundError:
            lately = False
        with open(seen, "a"):
            os.utime(seen)
        return lately
    except OSError:
        return False


def _start_worker(key: str) -> None:
    """Start the worker for ``key``, detached, unless one is starting or
    running (it holds its lock file for its whole life)."""
    import fcntl
    import subprocess

    try:
        with open(key_file(key, ".lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # a worker holds it: starting, or about to listen
            fcntl.flock(lock, fcntl.LOCK_UN)
        sweep()
        subprocess.Popen(
            [sys.executable, "-P", "-m", "hatecheck_pipeline.cli.stage_worker", key],
            cwd="/",  # holds no project's folder
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return


def sweep(now: float | None = None) -> int:
    """Remove the files (``.seen``, ``.sock``, ``.lock``) of every key in
    :func:`socket_dir` that no worker holds and that nothing touched for
    :data:`STALE_SECONDS` (each environment a build or a test ran in leaves
    its key's files); the number removed. A key's lock is taken before its
    files go, so a live worker's never do."""
    import fcntl
    import time

    now = time.time() if now is None else now
    try:
        names = os.listdir(socket_dir())
    except OSError:
        return 0
    removed = 0
    for key in sorted({n.rsplit(".", 1)[0] for n in names if n.endswith((".seen", ".sock", ".lock"))}):
        files = [key_file(key, suffix) for suffix in (".seen", ".sock", ".lock")]  # the lock last, while held
        stamps = {}
        for f in files:
            try:
                stamps[f] = os.lstat(f).st_mtime
            except OSError:
                pass
        if not stamps or now - max(stamps.values()) < STALE_SECONDS:
            continue
        try:
            with open(files[-1], "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a worker holds it
                for f in files:
                    try:
                        os.unlink(f)
                        removed += f in stamps  # a lock file opened here only to be taken is not counted
                    except FileNotFoundError:
                        pass
        except OSError:
            continue
    return removed


# --- the worker's side ----------------------------------------------------


def serve(key: str, idle: float = IDLE_SECONDS) -> int:
    """The worker's main loop: preload, listen, fork a child per command,
    end after ``idle`` seconds without one."""
    import fcntl
    import importlib

    if private_dir() is None:
        return 0
    lock = open(key_file(key, ".lock"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another worker for this key
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")  # who holds it, for a person or a test looking
    lock.flush()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends through the loop's cleanup
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a missing optional library is only a smaller head start
            pass
    if threading.active_count() != 1:  # a preloaded library started a Python thread: forking would not be safe
        return 0
    path = socket_path(key)
    tmp = os.path.join(socket_dir(), f".{os.getpid()}")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(tmp)
    os.chmod(tmp, 0o600)
    server.listen(64)
    os.replace(tmp, path)
    ours = os.stat(path).st_ino
    server.settimeout(1.0)
    children: set[int] = set()
    import time

    last = time.monotonic()
    try:
        while True:
            _reap(children)
            if not children and time.monotonic() - last > idle:
                break
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            last = time.monotonic()
            conn.settimeout(10.0)
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            conn.settimeout(None)
            pid = os.fork()
            if pid == 0:
                server.close()
                lock.close()
                _child(conn, request, fds)  # never returns
            children.add(pid)
            conn.close()
            for fd in fds:
                os.close(fd)
            last = time.monotonic()
    finally:
        try:
            if os.stat(path).st_ino == ours:
                os.unlink(path)
        except OSError:
            pass
        server.close()
    return 0


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
    if len(head) != _HEADER.size or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("incomplete request")
    (size,) = _HEADER.unpack(head)
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("incomplete request")
        body += chunk
    return json.loads(body.decode("utf-8", "surrogateescape")), fds


def _child(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """The forked child: become the command, run it, report its status."""
    code = 1
    try:
        os.setpgid(0, 0)
        conn.sendall(f"pid {os.getpid()}\n".encode())
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        _reopen_std_streams(request["env"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(request["umask"])
        sys.argv = list(request["argv"])
        sys.path[:] = request["path"]
        for name in [m for m in sys.modules if m == "hatecheck_pipeline" or m.startswith("hatecheck_pipeline.")]:
            del sys.modules[name]  # the project's code comes from disk, as in a new process
        import importlib

        importlib.invalidate_caches()
        threading.Thread(target=_die_with_command, args=(conn,), daemon=True).start()
        code = _run_command(request["entry"])
    except BaseException:  # noqa: BLE001 - the child must always report and exit
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
        _FINISHED.set()
        try:
            conn.sendall(f"exit {code}\n".encode())
        except OSError:
            pass
        os._exit(code)


def _run_command(entry: str) -> int:
    import importlib

    module, _, function = entry.partition(":")
    try:
        getattr(importlib.import_module(module), function)(sys.argv[1:])
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        import traceback

        traceback.print_exc()
        return 130
    return 0


def _reopen_std_streams(env: dict[str, str]) -> None:
    """New ``sys.stdin/stdout/stderr`` on the command's descriptors, buffered
    as a fresh interpreter would buffer them there."""
    import io

    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    for fd, name, mode in ((0, "stdin", "rb"), (1, "stdout", "wb"), (2, "stderr", "wb")):
        old = getattr(sys, name)
        try:
            raw = open(fd, mode, buffering=0, closefd=False)  # noqa: SIM115 - lives as long as the process
        except OSError:
            continue
        binary = raw if unbuffered and mode == "wb" else io.BufferedReader(raw) if mode == "rb" else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            binary,
            encoding=getattr(old, "encoding", None) or "utf-8",
            errors=getattr(old, "errors", None) or "strict",
            line_buffering=mode == "wb" and (name == "stderr" or os.isatty(fd)),
            write_through=unbuffered and mode == "wb",
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _die_with_command(conn: socket.socket) -> None:
    """Kill this process group when the command's end of the socket closes
    (the command was killed): nothing of the stage outlives its command."""
    try:
        while conn.recv(1):
            pass
    except OSError:
        pass
    if not _FINISHED.is_set():
        os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
