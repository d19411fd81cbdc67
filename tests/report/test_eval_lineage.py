"""Lineage on a hand-made dvc.lock and raw-file registry."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.report import lineage

REGISTRY = {
    "hatecheck": {"files": {"test_suite_cases.csv": {"url": "https://example.org/hc/test_suite_cases.csv", "sha256": "aa" * 32}}},
    "davidson2017": {"files": {"labeled_data.csv": {"url": "https://example.org/dav/labeled_data.csv", "sha256": "bb" * 32}}},
}


def _stage(cmd, deps, outs, params=None):
    return {
        "cmd": cmd,
        "deps": [{"path": p, "md5": f"md5-{p}"} for p in deps],
        "params": params or {},
        "outs": [{"path": p, "md5": f"md5-{p}"} for p in outs],
    }


LOCK = {
    "schema": "2.0",
    "stages": {
        "ingest_hatecheck": _stage(
            "hatecheck-pipeline ingest hatecheck",
            ["src/hatecheck_pipeline/raw.py"],
            ["data/raw/hatecheck/test_suite_cases.csv"],
            {"src/hatecheck_pipeline/resources/raw_sources.yaml": {"hatecheck": {"files": "..."}}},
        ),
        "ingest_davidson2017": _stage(
            "hatecheck-pipeline ingest davidson2017", ["src/hatecheck_pipeline/raw.py"], ["data/raw/davidson2017/labeled_data.csv"]
        ),
        "prepare_hatecheck": _stage(
            "hatecheck-pipeline prepare hatecheck",
            ["data/raw/hatecheck/test_suite_cases.csv", "src/hatecheck_pipeline/prepare.py"],
            ["data/interim/hatecheck/table.parquet"],
        ),
        "prepare_davidson2017": _stage(
            "hatecheck-pipeline prepare davidson2017",
            ["data/raw/davidson2017/labeled_data.csv", "src/hatecheck_pipeline/prepare.py"],
            ["data/interim/davidson2017/table.parquet"],
            {"params.yaml": {"datasets.davidson2017": {"seed": 42}}},
        ),
        "train_B-D": _stage(
            "hatecheck-pipeline train B-D",
            ["data/interim/davidson2017/table.parquet", "src/hatecheck_pipeline/train.py"],
            ["models/B-D/final", "models/B-D/model_card.json"],
            {"params.yaml": {"training.lr": 5e-5}},
        ),
        "predict_B-D_hatecheck": _stage(
            "hatecheck-pipeline predict B-D hatecheck",
            ["models/B-D/final", "data/interim/hatecheck/table.parquet", "src/hatecheck_pipeline/predict.py"],
            ["results/B-D/hatecheck/predictions.parquet"],
        ),
        "score_B-D_hatecheck": _stage(
            "hatecheck-pipeline evaluate B-D hatecheck",
            ["results/B-D/hatecheck/predictions.parquet", "data/interim/hatecheck/table.parquet", "src/hatecheck_pipeline/scoring.py"],
            ["results/B-D/hatecheck/metrics.json"],
            {"params.yaml": {"evaluation.seed": 0}},
        ),
    },
}

CELL = {
    "cell_id": "hatecheck_t2:B-D:total:accuracy",
    "value": 61.0,
    "ci_low": 59.0,
    "ci_high": 63.0,
    "n": 3728,
    "metrics_file": "results/B-D/hatecheck/metrics.json",
    "stage": "score_B-D_hatecheck",
}


def _write(workdir):
    (workdir / "dvc.lock").write_text(yaml.safe_dump(LOCK))
    html = (
        "<html><body><table><tr>"
        + report.td(CELL, 50)
        + report.published_td("hatecheck_t2", "B-D", "total", "accuracy", 63.2, "HateCheck Table 2")
        + "</tr></table></body></html>"
    )
    (workdir / "report.html").write_text(html)


def test_chain_from_report_cell_reaches_raw_files(workdir):
    _write(workdir)
    chain = lineage.trace(CELL["cell_id"], lineage.read_lock("dvc.lock"), REGISTRY, "report.html")
    assert chain.start == "results/B-D/hatecheck/metrics.json"
    assert chain.roots == ["score_B-D_hatecheck"]
    assert set(chain.nodes) == {
        "score_B-D_hatecheck",
        "predict_B-D_hatecheck",
        "train_B-D",
        "prepare_davidson2017",
        "ingest_davidson2017",
        "prepare_hatecheck",
        "ingest_hatecheck",
    }
    assert chain.nodes["predict_B-D_hatecheck"].parents == ["train_B-D", "prepare_hatecheck"]
    raw = {r["path"]: r for n in chain.nodes.values() for r in n.raw}
    assert raw["data/raw/davidson2017/labeled_data.csv"]["url"] == "https://example.org/dav/labeled_data.csv"
    assert raw["data/raw/hatecheck/test_suite_cases.csv"]["sha256"] == "aa" * 32
    text = lineage.render(chain)
    assert 'param  datasets.davidson2017 = {"seed": 42}' in text
    assert "code   src/hatecheck_pipeline/scoring.py  md5=md5-src/hatecheck_pipeline/scoring.py" in text
    assert "stage prepare_hatecheck (see above)" in text


def test_model_directory_and_predictions_targets(workdir):
    _write(workdir)
    lock = lineage.read_lock("dvc.lock")
    assert lineage.trace("models/B-D", lock, REGISTRY).roots == ["train_B-D"]
    assert lineage.trace("models/B-D/final/config.json", lock, REGISTRY).roots == ["train_B-D"]
    chain = lineage.trace("results/B-D/hatecheck/predictions.parquet", lock, REGISTRY)
    assert "score_B-D_hatecheck" not in chain.nodes and "ingest_hatecheck" in chain.nodes


def test_cli_and_errors(workdir):
    _write(workdir)
    runner = CliRunner()
    out = runner.invoke(app, ["lineage", CELL["cell_id"], "--report", "report.html"])
    assert out.exit_code == 0, out.output
    # the CLI resolves raw files in the package's own registry
    assert (
        "raw    data/raw/hatecheck/test_suite_cases.csv  url=https://raw.githubusercontent.com/paul-rottger/hatecheck-data/" in out.output
    )
    out = runner.invoke(app, ["lineage", "results/nothing.json"])
    assert out.exit_code == 1 and "no stage in dvc.lock produces it" in out.output
    chain = lineage.trace("published:hatecheck_t2:B-D:total:accuracy", lineage.read_lock("dvc.lock"), REGISTRY, "report.html")
    assert "published number" in lineage.render(chain)


def test_render_shows_the_active_profile_only(workdir):
    """A stage that reads the profile records every profile; the text shows
    the active one's values and names the others (JSON keeps them all)."""
    lock = {
        "schema": "2.0",
        "stages": {
            "train_B-D": _stage(
                "hatecheck-pipeline run train_B-D",
                ["data/processed/davidson2017/bert.parquet"],
                ["models/B-D"],
                {
                    "params.yaml": {
                        "profile": "embedded",
                        "profiles": {"embedded": {"max_epochs": 1}, "paper": {"max_epochs": 50}, "smoke": {"max_epochs": 9}},
                    }
                },
            )
        },
    }
    (workdir / "dvc.lock").write_text(yaml.safe_dump(lock))
    chain = lineage.trace("models/B-D", lineage.read_lock("dvc.lock"), REGISTRY)
    text = lineage.render(chain)
    assert 'param  profile = "embedded"' in text
    assert 'param  profiles.embedded = {"max_epochs": 1}' in text
    assert "not active: paper, smoke" in text
    assert '"max_epochs": 50' not in text
    assert json.loads(lineage.to_json(chain))["stages"]["train_B-D"]["params"]["params.yaml"]["profiles"]["paper"] == {"max_epochs": 50}


def test_a_file_set_bundle_traces_to_its_url_template_and_manifest():
    from hatecheck_pipeline.data.sources import load_registry
    from hatecheck_pipeline.report.lineage import raw_entry

    entry = raw_entry("data/raw/hatexplain/eraser/docs.jsonl", load_registry())
    assert entry["url"].endswith("/metrics/docs/{name}") and entry["sha256"].startswith("manifest ") and "(11415 files)" in entry["sha256"]
    assert raw_entry("data/raw/hatexplain/eraser/train.jsonl", load_registry())["url"].endswith("/metrics/train.jsonl")


def test_render_prints_the_precision_outputs_recorded(workdir):
    """A predictions file's Parquet metadata and a training log's
    ``precision`` print as ``ran`` lines; files without one print none."""
    import polars as pl

    from hatecheck_pipeline.core.files import PRECISION_KEY, write_parquet

    lock = {
        **LOCK,
        "stages": {
            **LOCK["stages"],
            "train_B-D": _stage(
                "hatecheck-pipeline train B-D",
                ["data/interim/davidson2017/table.parquet"],
                ["models/B-D/final", "models/B-D/training_log.json"],
            ),
        },
    }
    _write(workdir)
    (workdir / "dvc.lock").write_text(yaml.safe_dump(lock))
    frame = pl.DataFrame({"id": ["1"], "p_hateful": [0.9]})
    write_parquet(frame, workdir / "results/B-D/hatecheck/predictions.parquet", metadata={PRECISION_KEY: "bf16 autocast (CPU)"})
    write_parquet(frame, workdir / "data/interim/hatecheck/table.parquet")  # no precision recorded
    (workdir / "models/B-D").mkdir(parents=True)
    (workdir / "models/B-D/training_log.json").write_text(json.dumps({"precision": "fp32", "epochs": []}))
    (workdir / "results/B-D/hatecheck/metrics.json").write_text(
        json.dumps({"precision": {"hateful": 0.5}})
    )  # a metric, not a precision label
    chain = lineage.trace(CELL["cell_id"], lineage.read_lock("dvc.lock"), REGISTRY, "report.html")
    assert chain.nodes["predict_B-D_hatecheck"].ran == {"results/B-D/hatecheck/predictions.parquet": "bf16 autocast (CPU)"}
    assert chain.nodes["train_B-D"].ran == {"models/B-D/training_log.json": "fp32"}
    assert chain.nodes["prepare_hatecheck"].ran == {} and chain.nodes["score_B-D_hatecheck"].ran == {}
    text = lineage.render(chain)
    assert "ran    results/B-D/hatecheck/predictions.parquet  precision=bf16 autocast (CPU)" in text
    assert "ran    models/B-D/training_log.json  precision=fp32" in text and text.count("  ran  ") == 2


def test_code_is_read_from_the_fingerprint_file_the_lock_records(workdir):
    """A stage's code dep is its fingerprint file (code/<stage>.txt):
    lineage names each source file it lists with the hash of its normalised
    code, and says so where the file is no longer the recorded one."""
    import hashlib

    text = "src/hatecheck_pipeline/evaluation/scoring.py " + "ab" * 32 + "\n"
    (workdir / "code").mkdir()
    (workdir / "code/score_B-D_hatecheck.txt").write_text(text)
    lock = json.loads(json.dumps(LOCK))
    deps = lock["stages"]["score_B-D_hatecheck"]["deps"]
    deps[-1] = {"path": "code/score_B-D_hatecheck.txt", "md5": hashlib.md5(text.encode()).hexdigest()}
    chain = lineage.trace("results/B-D/hatecheck/metrics.json", lock["stages"], REGISTRY)
    node = chain.nodes["score_B-D_hatecheck"]
    assert node.normalised == {"src/hatecheck_pipeline/evaluation/scoring.py": "ab" * 32}
    assert "code/score_B-D_hatecheck.txt" not in node.inputs and node.parents == ["predict_B-D_hatecheck", "prepare_hatecheck"]
    rendered = lineage.render(chain)
    assert "code   src/hatecheck_pipeline/evaluation/scoring.py  sha256=" + "ab" * 32 in rendered
    (workdir / "code/score_B-D_hatecheck.txt").write_text(text.replace("ab", "cd"))
    node = lineage.trace("results/B-D/hatecheck/metrics.json", lock["stages"], REGISTRY).nodes["score_B-D_hatecheck"]
    assert node.normalised == {} and "changed since the run" in node.fingerprint_note
