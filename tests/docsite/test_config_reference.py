"""The configuration reference: every key of the parameters schema has a
description, the generated page lists every key params.yaml sets with its
value there, and the committed page is what the schema and params.yaml give
(``docs render --check`` fails when either changes)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import yaml
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.core import config, yamlio
from hatecheck_pipeline.docsite import config_reference as ref

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "generated" / "config.md"
SOURCES = (config.SCHEMA_FILE, config.PARAMS_FILE)  # as `docs render` names them, run from the project root


def _schemas(node: Any, where: str) -> Iterator[tuple[str, Any]]:
    """Every schema that stands for a key: a property, an additionalProperties or
    patternProperties schema, a $defs entry, at any depth (also inside if/then/else,
    oneOf/anyOf, allOf and items; not in an `if`, which tests a key and defines none), with where it is."""
    if isinstance(node, list):
        for i, sub in enumerate(node):
            yield from _schemas(sub, f"{where}[{i}]")
        return
    if not isinstance(node, dict):
        return
    for name, sub in (node.get("properties") or {}).items():
        yield f"{where}.{name}", sub
    for name, sub in (node.get("patternProperties") or {}).items():
        yield f"{where}.{name}", sub
    if isinstance(node.get("additionalProperties"), dict):
        yield f"{where}.*", node["additionalProperties"]
    for name, sub in (node.get("$defs") or {}).items():
        yield f"$defs.{name}", sub
    for key, sub in node.items():
        if key == "properties" or key == "patternProperties" or key == "$defs":
            for name, child in sub.items():
                yield from _schemas(child, f"{where}.{name}" if key != "$defs" else f"$defs.{name}")
        elif isinstance(sub, (dict, list)) and key not in ("if", "not", "enum", "const", "required", "default", "examples"):
            yield from _schemas(sub, f"{where}.{key}" if key != "additionalProperties" else f"{where}.*")


def undescribed(schema: dict) -> list[str]:
    return sorted(
        {
            where.lstrip(".")
            for where, sub in _schemas(schema, "")
            if isinstance(sub, dict) and not str(sub.get("description") or "").strip()
        }
    )


def test_every_schema_key_has_a_description():
    schema = yamlio.read_yaml(REPO / config.SCHEMA_FILE)
    missing = undescribed(schema)
    assert not missing, f"schema keys without a description: {missing}"


def test_the_description_walk_finds_a_key_without_one():
    schema = {
        "type": "object",
        "$defs": {"f": {"type": "number"}},
        "properties": {
            "a": {
                "description": "A.",
                "type": "object",
                "additionalProperties": {
                    "description": "entry",
                    "if": {"properties": {"k": {"const": 1}}},
                    "then": {"properties": {"deep": {"type": "string"}}},
                },
            },
            "b": {"description": "B.", "type": "array", "items": {"type": "object", "properties": {"c": {"type": "integer"}}}},
            "d": {"description": "D.", "oneOf": [{"type": "null"}, {"type": "object", "properties": {"e": {"type": "number"}}}]},
        },
    }
    assert undescribed(schema) == ["$defs.f", "a.*.then.deep", "b.items.c", "d.oneOf[1].e"]


def _params_paths(node: Any, path: str = "") -> Iterator[str]:
    """Every section and leaf of params.yaml as a dotted path (list items of mappings as [])."""
    if path:
        yield path
    if isinstance(node, dict):
        for key, sub in node.items():
            yield from _params_paths(sub, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list) and node and all(isinstance(item, dict) for item in node):
        for item in node:
            for key, sub in item.items():
                yield from _params_paths(sub, f"{path}[].{key}")


def _listed_keys(page: str) -> list[str]:
    """The dotted paths in the first column of the page's tables, and the sections (headings)."""
    return re.findall(r"^\| `([^`]+)`", page, re.M) + re.findall(r"^### (\S+)$", page, re.M)


def _pattern(key: str) -> re.Pattern:
    """A listed key as a pattern of concrete paths (<placeholder> = any name; names may hold dots: gpt-3.5-turbo)."""
    parts = re.split(r"(<[^>]+>)", key)
    return re.compile("".join(".+" if p.startswith("<") else re.escape(p) for p in parts) + "$")


def test_the_page_lists_every_key_params_yaml_sets():
    params = yamlio.read_yaml(REPO / config.PARAMS_FILE)
    page = PAGE.read_text("utf-8")
    patterns = [_pattern(k) for k in _listed_keys(page)]
    assert patterns, "the page lists no keys"
    paths = list(_params_paths(params))
    assert len(paths) > 300
    unlisted = [p for p in paths if not any(pat.match(p) for pat in patterns)]
    assert not unlisted, f"params.yaml keys missing from {PAGE.relative_to(REPO)}: {unlisted}"
    # and every listed key is one the schema has, with its description on the page
    schema = yamlio.read_yaml(REPO / config.SCHEMA_FILE)
    assert sorted(set(_listed_keys(page))) == sorted({r.path for r in ref.rows(schema)} | set(schema["properties"]))


def test_the_committed_page_is_what_the_schema_and_params_yaml_give():
    schema = yamlio.read_yaml(REPO / config.SCHEMA_FILE)
    params = yamlio.read_yaml(REPO / config.PARAMS_FILE)
    assert PAGE.read_text("utf-8") == ref.render(schema, params, SOURCES), (
        "docs/generated/config.md is stale: run `hatecheck-pipeline docs render`"
    )


def test_values_types_and_conditions_of_a_small_schema():
    schema = {
        "$defs": {"share": {"type": "number", "minimum": 0, "maximum": 1, "description": "A share."}},
        "properties": {
            "top": {"type": "string", "description": "Top."},
            "models": {
                "type": "object",
                "description": "Models.",
                "additionalProperties": {
                    "title": "model",
                    "type": "object",
                    "description": "One model.",
                    "if": {"properties": {"kind": {"const": "llm"}}, "required": ["kind"]},
                    "then": {
                        "properties": {
                            "kind": {"const": "llm", "description": "LLM."},
                            "backend": {"type": "string", "description": "Backend."},
                        },
                        "required": ["kind", "backend"],
                    },
                    "else": {
                        "properties": {
                            "cap": {"type": ["integer", "null"], "minimum": 1, "description": "Cap."},
                            "split": {"$ref": "#/$defs/share", "description": "Split."},
                        },
                        "required": ["split"],
                    },
                },
            },
            "diffs": {
                "type": "array",
                "description": "Diffs.",
                "items": {"type": "object", "properties": {"a": {"type": "string", "description": "A."}}},
            },
            "stop": {
                "description": "Stop.",
                "oneOf": [
                    {"type": "null"},
                    {"type": "object", "properties": {"patience": {"type": "integer", "minimum": 1, "description": "Patience."}}},
                ],
            },
        },
    }
    params = {
        "top": "x",
        "models": {"m1": {"kind": "llm", "backend": "local"}, "m2": {"split": 0.5, "cap": None}, "m3": {"split": 0.5, "cap": 4}},
        "diffs": [{"a": "m1"}, {"a": "m2"}],
        "stop": None,
    }
    rows = {(r.path, r.when): r for r in ref.rows(schema)}
    assert list(rows) == [
        ("top", ""),
        ("models", ""),
        ("models.<model>", ""),
        ("models.<model>.kind", "kind = llm"),
        ("models.<model>.backend", "kind = llm"),
        ("models.<model>.cap", "kind is another value or absent"),
        ("models.<model>.split", "kind is another value or absent"),
        ("diffs", ""),
        ("diffs[].a", ""),
        ("stop", ""),
        ("stop.patience", ""),
    ]
    cap = rows[("models.<model>.cap", "kind is another value or absent")]
    assert (cap.type, cap.constraints, cap.description) == ("integer or null", "≥ 1; optional", "Cap.")
    split = rows[("models.<model>.split", "kind is another value or absent")]
    assert (split.type, split.constraints, split.description) == ("number", "0 ≤ value ≤ 1", "Split.")
    assert rows[("stop", "")].type == "null or mapping"
    value = lambda path, when="": ref.value_cell(params, rows[(path, when)])  # noqa: E731
    assert value("top") == "`x`"
    assert value("models") == "" and value("models.<model>") == ""  # mappings: their keys carry the values
    # a branch's key shows only the entries that meet its condition, with their names
    assert value("models.<model>.backend", "kind = llm") == "`local` (m1)"
    assert value("models.<model>.cap", "kind is another value or absent") == "`null` (m2)<br>`4` (m3)"
    assert value("models.<model>.split", "kind is another value or absent") == "`0.5` (m2, m3)"
    assert value("diffs[].a") == "`m1` (0)<br>`m2` (1)"
    assert value("stop") == "`null`" and value("stop.patience") == "not set"
    page = ref.render(schema, params, SOURCES)
    assert "### models" in page and "| `models.<model>.backend`<br>(when kind = llm) | string | `local` (m1) |" in page


def test_docs_render_check_fails_when_params_yaml_changes(tmp_path, monkeypatch):
    """`docs render --check` compares config.md with the schema and params.yaml
    of the working directory; `docs render` writes it again."""
    for rel in ("params.yaml", config.SCHEMA_FILE, "docs/generated", "docs/runs"):
        src, dst = REPO / rel, tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(app, ["docs", "render"]).exit_code == 0
    res = runner.invoke(app, ["docs", "render", "--check"])
    assert res.exit_code == 0, res.output
    assert Path("docs/generated/config.md").read_text("utf-8") == PAGE.read_text("utf-8")

    params = yaml.safe_load(Path("params.yaml").read_text("utf-8"))
    params["evaluation"]["diff_samples"] = 1234
    Path("params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), "utf-8")
    res = runner.invoke(app, ["docs", "render", "--check"])
    assert res.exit_code == 1 and "docs/generated/config.md" in res.output
    assert runner.invoke(app, ["docs", "render"]).exit_code == 0
    assert "| `evaluation.diff_samples` | integer | `1234` |" in Path("docs/generated/config.md").read_text("utf-8")
    assert runner.invoke(app, ["docs", "render", "--check"]).exit_code == 0

    # a description added to the schema shows too
    schema = yaml.safe_load(Path(config.SCHEMA_FILE).read_text("utf-8"))
    schema["properties"]["evaluation"]["properties"]["diff_samples"]["description"] = "Resamples per comparison."
    Path(config.SCHEMA_FILE).write_text(yaml.safe_dump(schema, sort_keys=False), "utf-8")
    res = runner.invoke(app, ["docs", "render", "--check"])
    assert res.exit_code == 1 and "docs/generated/config.md" in res.output

    # without the parameters (not the project root) the check says so
    Path("params.yaml").unlink()
    res = runner.invoke(app, ["docs", "render", "--check"])
    assert res.exit_code == 1 and "params.yaml not found" in res.output
