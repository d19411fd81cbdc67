"""Code dependencies come from the static import graph, and the package has
no import cycles and keeps its layer contracts."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from hatecheck_pipeline.core import codedeps


def test_closure_follows_imports_transitively_including_function_level_ones():
    closure = codedeps.closure("hatecheck_pipeline.data.preprocess")
    # preprocess imports data.validate, which imports data.harmonise at module level
    assert "hatecheck_pipeline.data.validate" in closure
    assert "hatecheck_pipeline.data.schemes" in closure
    assert "hatecheck_pipeline.core.files" in closure
    assert "hatecheck_pipeline" in closure  # a package __init__ that runs code (sets __version__)
    assert "hatecheck_pipeline.data" not in closure  # a docstring-only package __init__ runs nothing
    assert "hatecheck_pipeline.models.train" not in closure


def test_relative_and_submodule_imports_are_resolved(tmp_path):
    pkg = tmp_path / "hatecheck_pipeline"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Only a docstring."""\n')
    (pkg / "sub" / "__init__.py").write_text("VERSION = 1\n")
    (pkg / "sub" / "a.py").write_text("from . import b\nfrom .c import thing\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from hatecheck_pipeline import d\n")
    (pkg / "sub" / "c.py").write_text("thing = 1\n")
    (pkg / "d.py").write_text("import json\n")
    closure = codedeps.closure.__wrapped__("hatecheck_pipeline.sub.a", tmp_path)
    assert set(closure) == {
        "hatecheck_pipeline.sub",
        "hatecheck_pipeline.sub.a",
        "hatecheck_pipeline.sub.b",
        "hatecheck_pipeline.sub.c",
        "hatecheck_pipeline.d",
    }


def test_cycle_finder_finds_a_cycle():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert codedeps.cycles(graph) == [["a", "b", "c", "a"]]


def test_the_package_has_no_import_cycles():
    assert codedeps.cycles(codedeps.import_graph()) == []


def test_layer_contracts_hold():
    proc = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_each_stage_tracks_its_code_through_a_fingerprint_of_its_import_closure(params):
    """dvc.yaml lists one code dep per stage, its fingerprint file, which
    names every module of the closure (and nothing else) with the hash of
    its normalised code; the fingerprint stage depends on every source file."""
    from hatecheck_pipeline.pipeline.registry import FINGERPRINT_STAGE, build_stages

    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    stages = build_stages(params)
    digests: dict[str, str] = {}
    for s in stages:
        assert not [d for d in dvc[s.name]["deps"] if d.endswith(".py")], s.name
        assert f"code/{s.name}.txt" in dvc[s.name]["deps"], s.name
        listed = codedeps.read_fingerprint((REPO / s.fingerprint).read_text())
        assert set(listed) == set(codedeps.code_files(s.module)), s.name
        assert f"src/{s.module.replace('.', '/')}.py" in listed, s.name
        for path, digest in listed.items():
            if path not in digests:
                digests[path] = codedeps.normalised(ast.parse((REPO / path).read_text()))
            assert digest == digests[path], path
    sources = set(dvc[FINGERPRINT_STAGE]["deps"])
    assert {f for s in stages for f in s.code} <= sources
    assert {next(iter(o)) for o in dvc[FINGERPRINT_STAGE]["outs"]} == {s.fingerprint for s in stages}


def test_no_stage_runs_the_configuration_loader(params):
    """The loader of params.yaml (its schema validation and cross-checks) is
    in no stage's code: editing it re-runs nothing. A stage's function gets
    its Profile and ConfigError from core.profile (the
    import-linter contract "Stage layers do not import the configuration
    loader" says the same of every module of the stage layers)."""
    from hatecheck_pipeline.pipeline.registry import build_stages

    loader = "src/hatecheck_pipeline/core/config.py"
    running = sorted({s.name for s in build_stages(params) if loader in codedeps.code_files(s.module)})
    assert running == [], f"{loader} is in the code of {running}"
    assert "src/hatecheck_pipeline/core/profile.py" in codedeps.code_files("hatecheck_pipeline.models.train")


def test_comments_docstrings_and_formatting_leave_the_hash_alone():
    base = codedeps.normalised(
        ast.parse('''"""Module doc."""
import os


class A:
    """Class doc."""

    def f(self, x):
        """Function doc."""
        return os.path.join(x, "a")  # a comment
''')
    )
    same = """# a header comment
import os
class A:
    def f(self, x):
        \'\'\'Another doc,
        on two lines.\'\'\'
        return os.path.join(
            x,
            'a',
        )
"""
    assert codedeps.normalised(ast.parse(same)) == base
    for edit in (
        same.replace("'a'", "'b'"),
        same.replace("x,", "x, x,"),
        same.replace("import os", "import os.path"),
        same + "X = 1\n",
        same.replace("return", "print(x)\n        return"),
    ):
        assert codedeps.normalised(ast.parse(edit)) != base, edit
    # a string that is not the first statement of a body is code, not a docstring
    assert codedeps.normalised(ast.parse("x = 1\n'text'\n")) != codedeps.normalised(ast.parse("x = 1\n"))


def test_fingerprint_lists_the_closure_with_normalised_hashes_and_is_written_only_on_change(tmp_path, monkeypatch):
    monkeypatch.setenv(codedeps.CACHE_ENV, str(tmp_path / "cache.json"))
    monkeypatch.setattr(codedeps, "_CACHE", codedeps._ParseCache())
    src = tmp_path / "src"
    pkg = src / "hatecheck_pipeline"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Only a docstring."""\n')
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("X = 1\n")
    (pkg / "c.py").write_text("Y = 2\n")

    def fingerprint():
        for f in (
            codedeps.closure,
            codedeps.direct_imports,
            codedeps.module_file,
            codedeps.runs_code,
            codedeps.code_hash,
            codedeps.fingerprint,
        ):
            f.cache_clear()
        return codedeps.fingerprint("hatecheck_pipeline.a", src)

    text = fingerprint()
    assert [line.split(" ")[0] for line in text.splitlines()] == ["src/hatecheck_pipeline/a.py", "src/hatecheck_pipeline/b.py"]
    assert codedeps.read_fingerprint(text)["src/hatecheck_pipeline/b.py"] == codedeps.normalised(ast.parse("X = 1"))
    assert codedeps.write_fingerprints({"code/a.txt": text}, tmp_path) == ["code/a.txt"]
    written = (tmp_path / "code/a.txt").stat().st_mtime_ns
    (pkg / "b.py").write_text('"""Now documented."""\n\nX = (1)  # the same code\n')
    assert fingerprint() == text
    assert codedeps.write_fingerprints({"code/a.txt": fingerprint()}, tmp_path) == []
    assert (tmp_path / "code/a.txt").stat().st_mtime_ns == written
    (pkg / "b.py").write_text("X = 2\n")
    assert fingerprint() != text and codedeps.write_fingerprints({"code/a.txt": fingerprint()}, tmp_path) == ["code/a.txt"]
    assert codedeps.project_src(tmp_path) == src.resolve()
    assert codedeps.project_src(tmp_path / "elsewhere") == codedeps.SRC


def test_what_a_parse_found_is_cached_across_processes_and_follows_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv(codedeps.CACHE_ENV, str(tmp_path / "cache.json"))
    monkeypatch.setattr(codedeps, "_CACHE", codedeps._ParseCache())
    pkg = tmp_path / "src" / "hatecheck_pipeline"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Only a docstring."""\n')
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("import json\n")
    (pkg / "c.py").write_text("X = 1\n")
    src = tmp_path / "src"
    imports = codedeps.direct_imports.__wrapped__
    assert imports("hatecheck_pipeline.a", src) == {"hatecheck_pipeline", "hatecheck_pipeline.b"}
    assert codedeps.runs_code.__wrapped__("hatecheck_pipeline", src) is False
    codedeps.flush()
    assert len(json.loads((tmp_path / "cache.json").read_text())) == 2  # a.py and the __init__

    def no_parse(*args, **kwargs):
        raise RuntimeError("parsed")

    monkeypatch.setattr(codedeps, "_CACHE", codedeps._ParseCache())  # as a new process
    monkeypatch.setattr(codedeps.ast, "parse", no_parse)
    assert imports("hatecheck_pipeline.a", src) == {"hatecheck_pipeline", "hatecheck_pipeline.b"}  # from the cache: not parsed
    assert codedeps.runs_code.__wrapped__("hatecheck_pipeline", src) is False
    (pkg / "a.py").write_text("from . import c\n")  # other bytes: parsed again
    with pytest.raises(RuntimeError, match="parsed"):
        imports("hatecheck_pipeline.a", src)
    monkeypatch.undo()
    monkeypatch.setenv(codedeps.CACHE_ENV, str(tmp_path / "cache.json"))
    (tmp_path / "cache.json").write_text('{"torn')  # a broken cache is no cache
    monkeypatch.setattr(codedeps, "_CACHE", codedeps._ParseCache())
    assert imports("hatecheck_pipeline.a", src) == {"hatecheck_pipeline", "hatecheck_pipeline.c"}
