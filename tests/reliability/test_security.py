"""Security basics, kept by tests: no code path unpickles anything, remote
model code is never trusted, dataset text cannot script the report. (API
keys never reaching an artifact, log or lock file: the sentinel check in
test_crash_safety.py, on a real pipeline run.)"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

from conftest import REPO
from fault_matrix import outcome  # noqa: F401  (fixture)
from system_packages import fail_missing

SRC = REPO / "src" / "hatecheck_pipeline"
UNPICKLING_MODULES = {"pickle", "cPickle", "_pickle", "dill", "joblib", "cloudpickle", "shelve", "marshal"}
UNPICKLING_CALLS = {"read_pickle", "to_pickle"}  # pandas


def sources() -> list[Path]:
    files = sorted(SRC.rglob("*.py")) + sorted((REPO / "workflow").rglob("*.smk")) + [REPO / "Snakefile"]
    assert len(files) > 50
    return files


def calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            yield name, node


def keyword(node: ast.Call, name: str):
    return next((k.value for k in node.keywords if k.arg == name), None)


def python_files() -> list[Path]:
    return [p for p in sources() if p.suffix == ".py"]


def test_no_pickle_and_torch_load_only_with_weights_only(outcome):
    problems, torch_loads = [], 0
    for path in python_files():
        tree = ast.parse(path.read_text("utf-8"), str(path))
        rel = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                problems += [f"{rel}:{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in UNPICKLING_MODULES]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in UNPICKLING_MODULES:
                problems.append(f"{rel}:{node.lineno}: from {node.module} import ...")
        for name, node in calls(tree):
            if name in UNPICKLING_CALLS:
                problems.append(f"{rel}:{node.lineno}: {name}()")
            if name == "load" and isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") == "torch":
                torch_loads += 1
                value = keyword(node, "weights_only")
                if not (isinstance(value, ast.Constant) and value.value is True):
                    problems.append(f"{rel}:{node.lineno}: torch.load without weights_only=True")
            if name == "load" and getattr(node.func, "value", None) is not None and getattr(node.func.value, "id", "") in ("np", "numpy"):
                value = keyword(node, "allow_pickle")
                if isinstance(value, ast.Constant) and value.value is True:
                    problems.append(f"{rel}:{node.lineno}: numpy.load(allow_pickle=True)")
    assert problems == []
    outcome(
        f"{len(python_files())} modules parsed: no pickle/joblib/dill import or call; torch.load calls: {torch_loads}, all weights_only=True"
    )


def test_checker_catches_what_it_looks_for(tmp_path):
    """The scan above is not vacuous: it flags each pattern it forbids."""
    bad = "import pickle\nimport torch\ntorch.load('m.pt')\nfrom_pretrained('x', trust_remote_code=True)\n"
    tree = ast.parse(bad)
    names = {name for name, _ in calls(tree)}
    assert "load" in names and "from_pretrained" in names
    node = next(n for name, n in calls(tree) if name == "from_pretrained")
    assert keyword(node, "trust_remote_code").value is True
    assert keyword(next(n for name, n in calls(tree) if name == "load"), "weights_only") is None


def test_trust_remote_code_is_never_on(outcome):
    problems, seen = [], 0
    for path in python_files():
        tree = ast.parse(path.read_text("utf-8"), str(path))
        rel = path.relative_to(REPO)
        for _, node in calls(tree):
            value = keyword(node, "trust_remote_code")
            if value is not None:
                seen += 1
                if not (isinstance(value, ast.Constant) and value.value is False):
                    problems.append(f"{rel}:{node.lineno}: trust_remote_code={ast.unparse(value)}")
            for k in node.keywords:  # **{"trust_remote_code": True}
                if k.arg is None and isinstance(k.value, ast.Dict):
                    for key, val in zip(k.value.keys, k.value.values):
                        if (
                            isinstance(key, ast.Constant)
                            and key.value == "trust_remote_code"
                            and not (isinstance(val, ast.Constant) and val.value is False)
                        ):
                            problems.append(f"{rel}:{node.lineno}: **{{'trust_remote_code': ...}}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "trust_remote_code" for t in node.targets):
                problems.append(f"{rel}:{node.lineno}: trust_remote_code assigned")
    config_text = (REPO / "params.yaml").read_text() + (REPO / "workflow/schemas/params.schema.yaml").read_text()
    assert "trust_remote_code" not in config_text
    assert problems == []
    outcome(
        f"trust_remote_code passed {seen} time(s) in src (always the constant False; otherwise transformers' default, off); not a parameter"
    )


EVIL = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def test_dataset_text_renders_as_text_in_the_report(workdir, outcome):
    """A target group named by the data (``target_ident``) holding markup:
    escaped in the HTML, shown as text by headless Chromium, never run."""
    from hatecheck_pipeline.audits import summary as bias_summary
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.report import html as report

    communities = [{"community": c, "n": 20, "subgroup_auc": 0.6, "bpsn_auc": 0.5, "bnsp_auc": 0.7} for c in (EVIL, "women")]
    target = workdir / "target_bias.json"
    target.write_text(
        json.dumps(
            {
                "model": "B-D",
                "suites": {
                    "hatecheck": {
                        "n_cases": 60,
                        "overall_auc": 0.75,
                        "gmb_subgroup": 0.6,
                        "gmb_bpsn": 0.5,
                        "gmb_bnsp": 0.7,
                        "communities": communities,
                    }
                },
            }
        )
    )
    summary = workdir / paths.bias_summary()
    bias_summary.run({}, {}, {"B-D": target}, summary)
    page = report.run(
        workdir / "r.html",
        "Escaping check",
        "smoke",
        {"B-D": {"train": ["davidson2017"], "suites": ["hatecheck"]}},
        {},
        {},
        {},
        None,
        50,
        bias_summary_file=summary,
    )
    html = page.read_text("utf-8")
    assert EVIL not in html and "<script" not in html and "&lt;script&gt;document.title=" in html

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        fail_missing(["chromium"], "the report's escaping check in a browser")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={workdir / 'profile'}",
    ]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<title>Escaping check</title>" in dom.stdout  # the script did not run
    assert "<script" not in dom.stdout and '<img src="x"' not in dom.stdout
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom.stdout  # shown as text
    outcome("a target group '<script>…</script><img onerror=…>' is text in the DOM; the page title is unchanged")
