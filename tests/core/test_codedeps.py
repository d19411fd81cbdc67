"""Code dependencies come from the static import graph, and the package has
no import cycles and keeps its layer contracts."""

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
    assert set(closure) == {"hatecheck_pipeline.sub", "hatecheck_pipeline.sub.a",
                            "hatecheck_pipeline.sub.b", "hatecheck_pipeline.sub.c", "hatecheck_pipeline.d"}


def test_cycle_finder_finds_a_cycle():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert codedeps.cycles(graph) == [["a", "b", "c", "a"]]


def test_the_package_has_no_import_cycles():
    assert codedeps.cycles(codedeps.import_graph()) == []


def test_layer_contracts_hold():
    proc = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_dvc_code_deps_equal_the_import_closure_of_each_stage(params):
    from hatecheck_pipeline.pipeline.registry import build_stages

    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for s in build_stages(params):
        code = {d for d in dvc[s.name]["deps"] if d.startswith("src/") and d.endswith(".py")}
        assert code == set(codedeps.code_files(s.module)), s.name
        assert f"src/{s.module.replace('.', '/')}.py" in code, s.name


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
