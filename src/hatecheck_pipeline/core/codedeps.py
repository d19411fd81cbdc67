"""Code dependencies computed from the static import graph.

A stage's code is its function's module plus every project module that
module imports, transitively (imports inside functions count too: they run
when the stage runs), plus the ``__init__.py`` of every package on the way
that runs code (Python executes them on import; one holding only a
docstring runs nothing and is left out). The graph is read with :mod:`ast`, never
by importing, so it has no side effects but one: what the parse found in a
file is kept in a cache (:func:`flush`, ``~/.cache/hatecheck_pipeline/``,
keyed by the file's module and bytes), since parsing the ~90 modules was a
third of a registry build, paid by every ``snakemake`` call.

A stage's *code fingerprint* (:func:`fingerprint`) is one line per module
of its closure: the source file and the sha256 of its normalised code (the
syntax tree without comments, formatting or docstrings: :func:`normalised`).
Both runners track a stage's code through that text (``code/<stage>.txt``,
written by :func:`write_fingerprints` only when it changes), not through the
source files, so a comment, docstring or formatting edit re-runs nothing.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from hatecheck_pipeline.core import usercache

PACKAGE = "hatecheck_pipeline"
SRC = Path(__file__).resolve().parents[2]  # .../src
SOURCE_PREFIX = "src"  # how code deps are written (relative to the project root)
CACHE_ENV = "HATECHECK_PIPELINE_CODEDEPS_CACHE"  # the cache file (default: under XDG_CACHE_HOME or ~/.cache)
CACHE_VERSION = 2  # of what a cache entry holds; entries of another version are not read
CACHE_MAX = 4000  # entries kept (every version of every file parsed); past it, only this process's


def cache_file() -> Path:
    return usercache.cache_file(f"codedeps-v{CACHE_VERSION}.json", CACHE_ENV)


class _ParseCache:
    """What :func:`_parsed` found per (module, file bytes), across processes."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] | None = None
        self.used: dict[str, Any] = {}
        self.new = 0

    def get(self, key: str) -> Any:
        if self.entries is None:
            try:
                self.entries = json.loads(cache_file().read_text("utf-8"))
            except (OSError, ValueError):  # absent, unreadable or torn: a cache, rebuilt as it goes
                self.entries = {}
        hit = self.entries.get(key)
        if hit is not None:
            self.used[key] = hit
        return hit

    def put(self, key: str, value: Any) -> None:
        self.used[key] = value
        self.new += 1

    def flush(self) -> None:
        if not self.new:
            return
        merged = {**(self.entries or {}), **self.used}
        keep = merged if len(merged) <= CACHE_MAX else self.used
        if not usercache.keep(json.dumps(keep), cache_file()):
            return  # a read-only home: no cache, same results
        self.entries, self.new = keep, 0


_CACHE = _ParseCache()


def flush() -> None:
    """Write what this process parsed to the cache (the registry calls it
    after a build)."""
    _CACHE.flush()


def _parsed(module: str, file: Path) -> dict[str, Any]:
    """The file's import statements as (target module, imported names), the
    relative ones resolved, and whether it runs code (more than a docstring),
    from the cache or from :mod:`ast`."""
    data = file.read_bytes()
    key = hashlib.sha1(module.encode() + b"\0" + data).hexdigest()
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    tree = ast.parse(data.decode("utf-8"), str(file))
    package = _package_of(module, file)
    imports: list[list[Any]] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            imports.extend([a.name, []] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            imports.append([target, [a.name for a in node.names]])
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    value = {"imports": imports, "runs_code": bool(body), "code": normalised(tree)}
    _CACHE.put(key, value)
    return value


_DOCSTRING_HOLDERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _dump(node: Any, out: list[str]) -> None:
    """A syntax tree as text: node types and their non-empty fields, never
    positions. Empty fields (None, []) are left out, so fields a newer
    Python adds empty (``type_params``) leave the text as it was."""
    if isinstance(node, ast.AST):
        out.append(type(node).__name__ + "(")
        body = getattr(node, "body", None)
        for name in node._fields:
            value = getattr(node, name, None)
            if name == "body" and isinstance(node, _DOCSTRING_HOLDERS) and _is_docstring(body):
                value = body[1:]
            if value is None or (isinstance(value, list) and not value):
                continue
            out.append(name + "=")
            _dump(value, out)
            out.append(",")
        out.append(")")
    elif isinstance(node, list):
        out.append("[")
        for item in node:
            _dump(item, out)
            out.append(",")
        out.append("]")
    else:
        out.append(f"{type(node).__name__}:{node!r}")


def _is_docstring(body: Any) -> bool:
    return (
        isinstance(body, list)
        and bool(body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )


def normalised(tree: ast.AST) -> str:
    """sha256 of a module's code without comments, formatting and docstrings
    (the first string statement of a module, class or function body): the
    same for any edit that changes neither what runs nor its line-independent
    structure.

    >>> a = normalised(ast.parse("'Doc.'\\nx = 1  # one\\n"))
    >>> a == normalised(ast.parse("x=(1)\\n")), a == normalised(ast.parse("x = 2\\n"))
    (True, False)
    """
    out: list[str] = []
    _dump(tree, out)
    return hashlib.sha256("".join(out).encode("utf-8")).hexdigest()


@lru_cache(maxsize=None)
def module_file(module: str, src: Path = SRC) -> Path | None:
    """The file of a project module (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``)."""
    base = src.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _package_of(module: str, file: Path) -> str:
    return module if file.name == "__init__.py" else module.rpartition(".")[0]


def _statements(body: list[ast.stmt]):
    """Every statement, nested ones included (function and class bodies,
    branches, handlers, match cases), without visiting expressions: an
    import is a statement, and ``ast.walk`` over every expression node cost
    most of a registry build."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo.extend(c for c in children if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case)))


@lru_cache(maxsize=None)
def direct_imports(module: str, src: Path = SRC) -> frozenset[str]:
    """Project modules one module imports (anywhere in its body)."""
    file = module_file(module, src)
    if file is None:
        return frozenset()
    found: set[str] = set()
    for target, names in _parsed(module, file)["imports"]:
        if target.split(".")[0] != PACKAGE:
            continue
        found.add(target)
        for name in names:  # `from pkg import submodule`
            if module_file(f"{target}.{name}", src) is not None:
                found.add(f"{target}.{name}")
    return frozenset(m for m in found if module_file(m, src) is not None)


def with_parents(module: str) -> list[str]:
    """A module and the packages Python imports before it."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@lru_cache(maxsize=None)
def runs_code(module: str, src: Path = SRC) -> bool:
    """Whether importing the module's own file executes anything (a package
    ``__init__.py`` holding only a docstring does not)."""
    file = module_file(module, src)
    if file is None:
        return False
    return file.name != "__init__.py" or _parsed(module, file)["runs_code"]


@lru_cache(maxsize=None)
def closure(module: str, src: Path = SRC) -> tuple[str, ...]:
    """The module and every project module it imports, transitively (sorted)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        for m in with_parents(current):
            if m not in seen and module_file(m, src) is not None:
                seen.add(m)
                todo.extend(direct_imports(m, src))
    return tuple(sorted(m for m in seen if runs_code(m, src)))


def code_files(module: str, src: Path = SRC) -> list[str]:
    """The closure as project-relative source paths (``src/hatecheck_pipeline/...``)."""
    return [f"{SOURCE_PREFIX}/{module_file(m, src).relative_to(src).as_posix()}" for m in closure(module, src)]


@lru_cache(maxsize=None)
def code_hash(module: str, src: Path = SRC) -> str:
    """sha256 of the module's normalised code (:func:`normalised`), from the
    parse cache where the file's bytes are known."""
    file = module_file(module, src)
    if file is None:
        raise ValueError(f"{module}: no such module under {src}")
    return _parsed(module, file)["code"]


@lru_cache(maxsize=None)
def fingerprint(module: str, src: Path = SRC) -> str:
    """A stage's code fingerprint: one line per module of the closure of its
    function's module, ``src/hatecheck_pipeline/x/y.py <sha256>``, sorted."""
    lines = sorted(f"{SOURCE_PREFIX}/{module_file(m, src).relative_to(src).as_posix()} {code_hash(m, src)}" for m in closure(module, src))
    return "".join(f"{line}\n" for line in lines)


def read_fingerprint(text: str) -> dict[str, str]:
    """source file -> sha256, from a fingerprint file's text."""
    return dict(line.split(" ", 1) for line in text.splitlines() if line.strip())


def project_src(root: str | Path = ".") -> Path:
    """The source folder of the project at ``root`` (its ``src``) where it
    holds the package, else the one this module was imported from: the
    fingerprints describe the files a project's paths name, whichever copy
    of the package computes them."""
    candidate = Path(root, SOURCE_PREFIX)
    return candidate.resolve() if (candidate / PACKAGE).is_dir() else SRC


def write_fingerprints(wanted: dict[str, str], root: str | Path = ".") -> list[str]:
    """Write each fingerprint file (path relative to ``root`` -> text) whose
    content differs (an unchanged file keeps its bytes and modification
    time: Snakemake and DVC see nothing new). Returns the paths written."""
    written = []
    for rel, text in wanted.items():
        path = Path(root, rel)
        try:
            if path.read_text("utf-8") == text:
                continue
        except OSError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, "utf-8")
        tmp.replace(path)
        written.append(rel)
    return written


def import_graph(src: Path = SRC) -> dict[str, frozenset[str]]:
    """Every project module -> the project modules it imports."""
    modules = []
    for file in sorted((src / PACKAGE).rglob("*.py")):
        rel = file.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules.append(".".join(parts))
    return {m: direct_imports(m, src) for m in modules}


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Import cycles (each as a list of modules), by depth-first search."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if n == m:
                continue
            if state.get(n) == 1:
                found.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found
