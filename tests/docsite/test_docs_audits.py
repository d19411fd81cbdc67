"""The audits page of the generated documentation (docsite/audits.py) and
the prompted LLM's Appendix B (docsite/llm.py): a synthetic workspace whose
audit files are written by the stages' own functions (CrowS-Pairs and
WinoBias summaries, the invariance table) or in their shape (annotator
agreement, MHC Table 5, HateXplain), recorded by ``docs record``; known
figures give known cells, and a file the record lacks gives a line saying
so, not an error."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from hatecheck_pipeline.docsite import audits as docs_audits, llm as docs_llm, pages as docs_pages, runs as docs_record
from hatecheck_pipeline.evaluation import published as P


def _write(workspace: Path, rel: str, doc: dict) -> None:
    (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
    (workspace / rel).write_text(json.dumps(doc), "utf-8")


def _scored(name: str, flags: list[tuple[str, str, bool]]) -> pl.DataFrame:
    """A scorer's per-pair table (audits.crows.SCORED_SCHEMA) from (bias type,
    direction, stereotyped): a stereotyped pair scores -40 / -50 (confidence
    x 100: 20, S1 preferred), the others -50 / -45 (10, S2 preferred)."""
    from hatecheck_pipeline.audits.crows import SCORED_SCHEMA

    rows = [
        {
            "id": str(i),
            "sent_more": "a",
            "sent_less": "b",
            "stereo_antistereo": direction,
            "bias_type": bias_type,
            "sent_more_score": -40.0 if stereo else -50.0,
            "sent_less_score": -50.0 if stereo else -45.0,
            "n_masked": 3,
            "stereotyped": stereo,
            "neutral": False,
            "likelihood_diff": 10.0 if stereo else -5.0,
            "variant": "causal",
            "model": name,
        }
        for i, (bias_type, direction, stereo) in enumerate(flags)
    ]
    return pl.DataFrame(rows, schema=SCORED_SCHEMA)


def _crows_metrics(scored: pl.DataFrame, total: int, extra: dict | None = None) -> dict:
    """What the crows_pairs_<scorer> / winobias stages write (audits.crows.run)."""
    from hatecheck_pipeline.audits.crows import add_intervals, confidence_summary, summarise

    summary = add_intervals(summarise(scored), scored, 200, 0, 0.95)
    summary.update(confidence=confidence_summary(scored), ran=True, complete=scored.height == total, **(extra or {}))
    return summary


def _invariance_table(workspace: Path) -> None:
    """results/tables/expanded_invariance.csv as the tables_expanded stage
    writes it, from a perturbed suite's real ``invariance`` section: four
    hateful source cases (predicted 1, 1, 1, 0); leet keeps the label and
    flips case 2 (1 of 4: 25%), negate changes it and moves case 1's
    prediction to the new label (1 of 1)."""
    from hatecheck_pipeline.core.files import write_csv
    from hatecheck_pipeline.evaluation import metrics as M
    from hatecheck_pipeline.evaluation.cells import Source
    from hatecheck_pipeline.evaluation.expanded_tables import invariance_cells
    from hatecheck_pipeline.evaluation.invariance import invariance

    source = pl.DataFrame({"id": ["1", "2", "3", "4"], "gold": [1, 1, 1, 1], "pred": [1, 1, 1, 0]})
    perturbed = pl.DataFrame(
        {
            "source_id": ["1", "2", "3", "4", "1"],
            "generator": ["leet", "leet", "leet", "leet", "negate"],
            "gold": [1, 1, 1, 1, 0],
            "pred": [1, 0, 1, 0, 0],
        }
    )
    inv = invariance(perturbed, source, M.Bootstrap(0)) | {"source_suite": "hatecheck"}
    src = Source("B-D", "perturbed_hatecheck", "hatecheck", None, "results/B-D/perturbed_hatecheck/metrics.json", "score_x", "expanded")
    write_csv(invariance_cells([(src, {"invariance": inv})]), workspace / docs_audits.INVARIANCE)


@pytest.fixture
def workspace(workdir) -> Path:
    """A finished workspace with one scored suite, one stage record and every audit file."""
    from hatecheck_pipeline.audits.crows import winobias_extra, write_not_run

    _write(workdir, "results/B-D/hatecheck/metrics.json", {"overall": {"n": 1}})
    _write(
        workdir,
        "logs/benchmarks/hatecheck_agreement.json",
        {
            "stage": "hatecheck_agreement",
            "phase": "evaluate",
            "wall_s": 1.0,
            "cpu_s": 1.0,
            "max_rss_mb": 100.0,
            "started": "2026-01-01T12:00:00+00:00",
            "finished": "2026-01-01T12:00:01+00:00",
        },
    )
    _write(
        workdir,
        docs_audits.AGREEMENT,
        {
            "n_cases": 3901,
            "annotators": 10,
            "annotators_per_case": 5,
            "fleiss_kappa": 0.9285,
            "n_agree_4of5": 3879,
            "pct_agree_4of5": 99.44,
            "n_below_4of5": 22,
            "below_4of5": [{"case_id": "624", "functionality": "threat_dir_h", "templ_id": "90", "agreeing": 2}],
            "exclusion": {
                "n_excluded": 154,
                "n_kept": 3747,
                "n_released": 3728,
                "matches_release": False,
                "kept_not_released": [{"case_id": "3081", "functionality": "target_group_nh", "templ_id": "745", "agreeing": 5}],
                "released_not_kept": [],
            },
            "per_functionality": {
                "slur_h": {"n_cases": 180, "n_agree_4of5": 178, "pct_agree_4of5": 98.89, "pct_labels_agreeing": 97.7, "n_released": 144},
                "derog_neg_emote_h": {
                    "n_cases": 140,
                    "n_agree_4of5": 140,
                    "pct_agree_4of5": 100.0,
                    "pct_labels_agreeing": 98.7,
                    "n_released": 140,
                },
            },
        },
    )
    _write(
        workdir,
        docs_audits.MHC_T5,
        {
            "definition": "at least 2 of 3 annotators against the gold label",
            "overall": {"n_cases": 7335, "n_disagreement": 407, "pct_disagreement": 5.55, "pct_in_disagreement_template": 9.0},
            "per_language": {
                "arabic": {"n_cases": 3570, "n_disagreement": 245, "pct_disagreement": 6.86, "pct_in_disagreement_template": 13.61},
                "dutch": {"n_cases": 3765, "n_disagreement": 362, "pct_disagreement": 9.61, "pct_in_disagreement_template": 17.29},
            },
        },
    )
    # the causal scorer: 8 pairs, race-color 3 of 4 stereotyped, gender 1 of 4 (one anti-stereo pair)
    flags = [("race-color", "stereo", s) for s in (True, True, True, False)]
    flags += [("gender", "stereo", True), ("gender", "stereo", False), ("gender", "stereo", False), ("gender", "antistereo", False)]
    _write(workdir, "results/bias/crows_pairs/smol/metrics.json", _crows_metrics(_scored("smol", flags), 8))
    (workdir / "results/bias/crows_pairs/smol/pairs.parquet").write_bytes(b"per-pair table: not recorded")
    wino = _scored("smol", [("gender", "stereo", s) for s in (True, True, False, True)])
    _write(workdir, "results/bias/winobias/smol/type1/metrics.json", _crows_metrics(wino, 396, winobias_extra(1, "test")))
    # a masked scorer the profile does not run
    out = workdir / "results/bias/crows_pairs/bert-base-uncased"
    out.mkdir(parents=True)
    write_not_run(out / "pairs.parquet", out / "metrics.json", "bert-base-uncased", "masked", "bert-base-uncased", "embedded")
    explanation = {
        "top_k": 5,
        "iou_f1": 0.2,
        "token_f1": 0.4,
        "auprc": 0.6,
        "comprehensiveness": 0.1,
        "sufficiency": -0.02,
        "n_posts_available": 1142,
    }
    _write(
        workdir,
        "results/bias/hatexplain/hatexplain/metrics.json",
        {
            "model": "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base)",
            "performance": {"accuracy": 0.5738, "macro_f1": 0.4505, "auroc": 0.7429},
            "bias": {
                "classes": 2,
                "score": "p(toxic) of the 2-class model",
                "model": "hatexplain-2class",
                "power": -5,
                "gmb_subgroup": 0.719,
                "gmb_bpsn": 0.694,
                "gmb_bnsp": 0.7,
            },
            "explainability": [
                explanation
                | {"method": "attention", "method_label": "attention (last layer)", "paper_row": "BERT [Attn]", "n_posts": 1142},
                explanation | {"method": "lime", "method_label": "LIME (50 samples)", "paper_row": "BERT [LIME]", "n_posts": 60},
                explanation | {"method": "integrated_gradients", "method_label": "integrated gradients", "paper_row": None, "n_posts": 60},
            ],
        },
    )
    _write(
        workdir,
        "results/bias/hatexplain/tfidf-lr-standin/metrics.json",
        {
            "model": "tfidf-lr-standin",
            "performance": {"accuracy": 0.669, "macro_f1": 0.650, "auroc": 0.821},
            "bias": {"classes": 3, "score": "1 - p(normal)", "power": -5, "gmb_subgroup": 0.6977, "gmb_bpsn": 0.635, "gmb_bnsp": 0.791},
            "explainability": [explanation | {"method": "occlusion", "method_label": "occlusion", "paper_row": None, "n_posts": 1142}],
        },
    )
    _write(
        workdir,
        docs_audits.BIAS_SUMMARY,
        {"hatexplain_supervised": {"model": "hatexplain-supervised", "ran": False, "reason": "not trained: no rationales"}},
    )
    _invariance_table(workdir)
    return workdir


def _row(page: str, start: str) -> list[str]:
    line = next(line for line in page.splitlines() if line.startswith(start))
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_record_keeps_the_audit_files_and_the_page_shows_their_figures(workspace):
    from hatecheck_pipeline.audits.crows import bootstrap_interval

    docs_record.record(workspace, workspace / "docs/runs/a", "a", "a synthetic run")
    record = Path("docs/runs/a")
    for rel in (
        docs_audits.AGREEMENT,
        docs_audits.MHC_T5,
        "results/bias/crows_pairs/smol/metrics.json",
        "results/bias/crows_pairs/bert-base-uncased/metrics.json",
        "results/bias/winobias/smol/type1/metrics.json",
        "results/bias/hatexplain/hatexplain/metrics.json",
        docs_audits.BIAS_SUMMARY,
        docs_audits.INVARIANCE,
    ):
        assert (record / rel).read_bytes() == (workspace / rel).read_bytes(), rel
    assert not list(record.rglob("*.parquet")), "the per-pair tables stay out of the record"
    page = docs_pages.render(record)["audits"]
    assert page.startswith("<!-- generated by `hatecheck-pipeline docs render` from docs/runs/a: do not edit -->")
    assert "Not in this record" not in page

    # annotator agreement: ours beside the paper's, the exclusion rule's deviation named
    assert _row(page, "| Fleiss' kappa |") == ["Fleiss' kappa", "0.9285", "0.93"]
    assert _row(page, "| cases excluded") == ["cases excluded (every case of a template holding a case below 4 of 5)", "154", "173"]
    assert "**Deviation.** The paper's exclusion rule" in page and "template 745 (target_group_nh): case 3081" in page
    assert "and none in a template with such a case" in page  # the same sentence as the report's
    assert _row(page, "| F7 Hate expressed using slur") == [
        "F7 Hate expressed using slur (slur_h)",
        "180",
        "178",
        "98.9",
        "97.7",
        "144",
    ]
    assert page.index("| F1 Expression") < page.index("| F7 Hate"), "functional tests in the paper's order"
    assert _row(page, "| arabic |") == ["arabic", "3,570", "6.86", "7.05", "245", "252", "13.61"]
    assert "**Differs from the paper:** arabic (245 here, 252 in the paper)." in page and "dutch (" not in page

    # CrowS-Pairs Table 2: the scorer that ran, its intervals, WinoBias type 1, StereoSet published only
    race = [True, True, True, False]
    ci = bootstrap_interval(race, 200, 0, 0.95)
    assert _row(page, "| Race / Color |")[:3] == ["Race / Color", f"75.0 [{ci[0]:.1f}, {ci[1]:.1f}]", "4"]
    assert _row(page, "| Race / Color |")[3:] == ["516", "58.1", "62.0", "64.3"]
    overall = bootstrap_interval([*race, True, False, False, False], 200, 0, 0.95)
    assert _row(page, "| CrowS-Pairs (all pairs) |")[1:3] == [f"50.0 [{overall[0]:.1f}, {overall[1]:.1f}]", "8"]
    assert _row(page, "| Gender / Gender identity |")[1].startswith("25.0 [")
    wino = _row(page, "| WinoBias-knowledge (type 1)")
    assert wino[1].startswith("75.0 [") and wino[1].endswith("(sample)") and wino[2:4] == ["4", "396"], "4 of 396 pairs: a sample"
    assert _row(page, "| WinoBias-syntax (type 2)")[1] == "–"
    assert _row(page, "| StereoSet")[1:4] == ["not run here (data not in the mirror)", "–", "2,106"]
    assert "smol (causal) [95% CI]" in page and "bert-base-uncased (" not in _row(page, "| Table 2 row |")[1]
    assert "Scorer `bert-base-uncased` (masked, model `bert-base-uncased`) did not run: not run: profile 'embedded'" in page
    assert "**Deviation:** a **causal** scorer's figure" in page

    # model confidence: the figure (inline SVG) and the quartiles beside the paper's differences in medians
    assert "<figure><svg" in page and "</svg><figcaption>" in page
    conf = _row(page, "| smol (causal) |")
    assert conf[1:3] == ["4", "20.00 [20.00, 20.00]"] and conf[3:6] == ["4", "10.00 [10.00, 10.00]", "10.00"]
    assert _row(page, "| BERT-base (paper, masked) |")[5] == "1.2"

    # HateXplain Table 6: [Attn] and [LIME] each followed by the paper's row, integrated gradients on its own
    attn = _row(page, "| hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [Attn] |")
    assert attn[1:5] == ["0.574", "0.451", "0.743", "0.719"] and attn[-2:] == [
        "1142 of 1142",
        "`results/bias/hatexplain/hatexplain/metrics.json`",
    ]
    lines = page.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("| hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [LIME] |")))
    assert lines[at + 1].startswith("| *paper: BERT [LIME]* (bert-base-uncased, full data) | 0.690 | 0.674 |")
    assert _row(page, "| hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base) [LIME] |")[-2] == "60 of 1142"
    ig = lines.index(next(line for line in lines if "[integrated gradients] |" in line))
    assert not lines[ig + 1].startswith("| *paper")
    assert _row(page, "| tfidf-lr-standin (baseline")[4] == "0.698 (3-class)"
    assert "hatexplain-supervised (BERT-HateXplain, attention-supervised) | did not run: not trained: no rationales" in page
    assert "power -5" in page

    # invariance: flip rate beside the accuracy of the same pairs, the directional figure of the label-changing pairs
    assert _row(page, "| perturbed_hatecheck against hatecheck | leet |")[2:] == ["4", "25.0", "75.0", "50.0", "–"]
    assert _row(page, "| perturbed_hatecheck against hatecheck | negate |")[2:] == ["1", "–", "–", "–", "100.0"]
    assert _row(page, "| perturbed_hatecheck against hatecheck | any perturbation |")[3] == "25.0"
    assert "#### B-D" in page and "Source: `results/tables/expanded_invariance.csv`" in page

    # the same record gives the same bytes (the figure too)
    assert docs_pages.render(record)["audits"] == page


def test_a_record_without_the_audit_files_says_so_in_each_section(workdir):
    """An older record (none of the files) and one whose run scored no
    perturbed suite: every section renders, saying what is missing."""
    record = Path("docs/runs/old")
    _write(workdir, f"{record}/{docs_record.RUN_FILE}", {"name": "old", "label": "an old run", "profile": "embedded", "commit": "c"})
    page = docs_audits.audits_page(record, P.load())
    for rel in (docs_audits.AGREEMENT, docs_audits.MHC_T5, "results/bias/crows_pairs/<scorer>/metrics.json", docs_audits.INVARIANCE):
        assert f"Not in this record: the recorded run did not produce `{rel}`" in page, rel
    assert "results/bias/hatexplain/<model>/metrics.json" in page
    assert "|" not in page.split("### Annotator agreement")[1], "no table without its file"
    from hatecheck_pipeline.core.files import write_csv
    from hatecheck_pipeline.evaluation.cells import frame

    write_csv(frame([]), record / docs_audits.INVARIANCE)
    assert "No model is scored on both a perturbed suite and the suite it perturbs" in docs_audits.invariance_md(record)


def test_llm_page_shows_appendix_b_beside_gpt3s_counts():
    """Appendix B from the metrics' ``appendix_b`` (the real scorer's
    counts): racist zero-shot, two true positives, one each of the others,
    GPT-3's counts in brackets; a metrics file without them says so."""
    from hatecheck_pipeline.evaluation import llm as llm_eval

    rows = [
        ("zero_shot", "constrained", cat, lab, ans, "1")
        for cat in ("racist", "sexist")
        for lab, ans in ((cat, "yes"), (cat, "no"), (f"not-{cat}", "no"), (f"not-{cat}", "yes"), (cat, "yes"))
    ]
    answers = pl.DataFrame(rows, schema=["setting", "variant", "category", "label", "answer", "iteration"], orient="row")
    by_setting = llm_eval.metrics_of(answers)
    doc = {"by_setting": by_setting, "appendix_b": llm_eval.appendix_b_of(by_setting)}
    table = docs_llm.appendix_b_md(doc, P.load())
    assert _row(table, "| zero-shot | constrained | racist |") == [
        "zero-shot",
        "constrained",
        "racist",
        "5",
        "1 (1,688)",
        "1 (1,295)",
        "1 (1,209)",
        "2 (1,775)",
    ]
    assert _row(table, "| zero-shot | constrained | overall")[3] == "10"
    assert "Not in this record: this metrics file has no confusion counts" in docs_llm.appendix_b_md({"by_setting": by_setting}, P.load())
    assert docs_llm.appendix_b_md({}, P.load()) == ""
