"""Code dependencies computed from the static import graph.

A stage's code is its function's module plus every project module that
module imports, transitively (imports inside functions count too: they run
when the stage runs), plus the ``__init__.py`` of every package on the way
that runs code (Python executes them on import; one holding only a
docstring runs nothing and is left out). The graph is read with :mod:`ast`, never
by importing, so it is cheap and has no side effects.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = "hatecheck_pipeline"
SRC = Path(__file__).resolve().parents[2]  # .../src
SOURCE_PREFIX = "src"  # how code deps are written (relative to the project root)


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
    tree = ast.parse(file.read_text("utf-8"), str(file))
    package = _package_of(module, file)
    found: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            found.add(target)
            for alias in node.names:  # `from pkg import submodule`
                if module_file(f"{target}.{alias.name}", src) is not None:
                    found.add(f"{target}.{alias.name}")
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
    if file.name != "__init__.py":
        return True
    body = ast.parse(file.read_text("utf-8"), str(file)).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    return bool(body)


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
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found
