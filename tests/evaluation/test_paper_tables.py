"""The papers' further tables: MHC Table 5 from the real MHC files,
HateCheck appendix F's all-class scores, CrowS-Pairs Table 2 rows, and the
held-out labels saying what each figure is."""

from __future__ import annotations

import re
import shutil

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import f1_score

from hatecheck_pipeline.core.files import InputError
from hatecheck_pipeline.data import corpora
from hatecheck_pipeline.evaluation import annotators, multiclass
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.report import paper_tables

# ------------------------------------------------------------ MHC Table 5


def mhc_cases(mirror, language: str) -> pl.DataFrame:
    """One language's cases as the interim MHC table holds them."""
    raw = pl.read_csv(mirror / f"mhc/cases/hatecheck_cases_final_{language}.csv", infer_schema_length=0)
    return raw.select(
        pl.col("mhc_case_id").alias("id"),
        pl.lit(language).alias("language"),
        pl.col("label_gold").alias("label_original"),
        "label_annotated",
        pl.col("disagreement_in_case") == "True",
        pl.col("disagreement_in_template") == "True",
    )


@pytest.mark.parametrize("language", ["french", "italian", "polish"])
def test_mhc_table5_reproduces_the_papers_figures_from_the_annotator_labels(mirror, language):
    doc = annotators.disagreement(mhc_cases(mirror, language))
    paper = P.load()["mhc_t5"]["values"]["annotators"][language]
    got = doc["per_language"][language]
    assert (got["n_disagreement"], got["pct_disagreement"]) == (paper["n_disagreement"], paper["pct_disagreement"])
    assert got["n_cases"] == {"french": 3718, "italian": 3690, "polish": 3815}[language]


def test_mhc_table5_counts_a_majority_against_the_gold_label():
    cases = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "language": ["x"] * 4,
            "label_original": ["hateful", "hateful", "non-hateful", "non-hateful"],
            "label_annotated": [
                "['hateful', 'non-hateful', 'hateful']",
                "['non-hateful', 'non-hateful', 'hateful']",
                "['hateful', 'hateful', 'hateful']",
                "['non-hateful', 'non-hateful', 'non-hateful']",
            ],
            "disagreement_in_case": [False, True, True, False],
            "disagreement_in_template": [True, True, True, False],
        }
    )
    doc = annotators.disagreement(cases)
    assert doc["per_language"]["x"] == {
        "n_cases": 4,
        "n_disagreement": 2,
        "pct_disagreement": 50.0,
        "n_in_disagreement_template": 3,
        "pct_in_disagreement_template": 75.0,
    }
    # a flag that contradicts the labels is an error naming the case
    with pytest.raises(InputError, match="case a: 1 of 3 annotators"):
        annotators.disagreement(cases.with_columns(pl.Series("disagreement_in_case", [True, True, True, False])))
    with pytest.raises(InputError, match="case c: label_annotated 'offensive'"):
        annotators.disagreement(
            cases.with_columns(pl.Series("label_annotated", [*cases["label_annotated"][:2], "offensive", cases["label_annotated"][3]]))
        )


# ------------------------------------------- HateCheck appendix F scores


def test_multiclass_scores_equal_scikit_learns_and_their_intervals_hold_them():
    rng = np.random.default_rng(3)
    classes = ["hateful", "offensive", "neither"]
    gold = rng.choice(classes, 400, p=[0.1, 0.7, 0.2])
    pred = np.where(rng.random(400) < 0.7, gold, rng.choice(classes, 400))
    doc = multiclass.evaluate(gold.tolist(), pred.tolist(), classes, "hateful", Bootstrap(200, 1))
    for figure, average in (("micro_f1", "micro"), ("weighted_f1", "weighted"), ("macro_f1", "macro")):
        assert doc[figure]["value"] == pytest.approx(100 * f1_score(gold, pred, average=average, labels=classes), abs=0.05)
        assert doc[figure]["ci_low"] <= doc[figure]["value"] <= doc[figure]["ci_high"]
    binary = f1_score(gold == "hateful", pred == "hateful", average="macro")
    assert doc["binary_macro_f1_from_argmax"] == pytest.approx(100 * binary, abs=0.05)
    assert sum(map(sum, doc["confusion"]["counts"])) == doc["n"] == 400
    with pytest.raises(InputError, match="gold classes"):
        multiclass.evaluate(["spam"], ["hateful"], classes, "hateful", Bootstrap(0))


def test_davidson_keeps_its_three_classes_for_appendix_f(write_raw, mirror):
    shutil.copy(mirror / "davidson2017/labeled_data.csv", write_raw("davidson2017", "labeled_data.csv", ""))
    h = corpora.davidson2017({"seed": 42, "split": {"train": 0.8, "dev": 0.1, "test": 0.1}})
    counts = dict(h.kept.group_by("label_multiclass").len().iter_rows())
    # HateCheck appendix D.1: 1,430 hateful, 19,190 offensive, 4,163 neither (of 24,783)
    assert counts == {"hateful": 1430, "offensive": 19190, "neither": 4163}
    assert (h.kept["label_multiclass"] == "hateful").to_list() == (h.kept["label"] == "hateful").to_list()


# ------------------------------------------------------------ report parts


def ids(html: str) -> list[str]:
    return re.findall(r'data-cell-id="([^"]+)"', html)


def test_report_parts_carry_provenance_next_to_the_papers_figures():
    pub = P.load()
    t5 = {
        "per_language": {
            "french": {
                "n_cases": 3718,
                "n_disagreement": 789,
                "pct_disagreement": 21.22,
                "n_in_disagreement_template": 1037,
                "pct_in_disagreement_template": 27.89,
            }
        },
        "overall": {"n_cases": 3718, "n_disagreement": 789, "pct_disagreement": 21.22},
    }
    html = paper_tables.mhc_t5_section(t5, "results/tables/mhc_t5.json", pub)
    assert 'data-cell-id="mhc_t5:french:pct_disagreement" data-metrics="results/tables/mhc_t5.json" data-stage="mhc_disagreement"' in html
    assert "published:mhc_t5:annotators:french:n_disagreement" in ids(html) and ">789<" in html
    assert "not found" in paper_tables.mhc_t5_section(None, "x.json", pub)

    doc = multiclass.evaluate(
        ["hateful", "offensive", "neither", "offensive"],
        ["hateful", "offensive", "offensive", "offensive"],
        ["hateful", "offensive", "neither"],
        "hateful",
        Bootstrap(10),
    )
    entry = {
        "model": "B-D-multiclass",
        "dataset": "davidson2017",
        "doc": {**doc, "complete": True, "cases_available": 4},
        "file": "results/B-D-multiclass/multiclass_heldout_davidson2017/metrics.json",
        "stage": "heldout_multiclass_B-D-multiclass_davidson2017",
    }
    html = paper_tables.appf_section({"B-D-multiclass/davidson2017": entry}, pub)
    assert "appf:B-D-multiclass:davidson2017:weighted_f1" in ids(html)
    assert ">90.7<" in html and ">91.1<" in html  # the paper's weighted-average and micro F1 beside ours
    assert "hatespeech_labels.csv" in html  # why there is no multiclass B-F
    assert "too-few" not in html  # no threshold, no marker
    wide = paper_tables.appf_section({"B-D-multiclass/davidson2017": entry}, pub, max_ci_width=0)  # 4 cases: wide intervals
    marked = re.findall(r'<td class="too-few" data-cell-id="(appf:[^"]+)"[^>]*title="([^"]*)"', wide)
    widths = {k: doc[k]["ci_high"] - doc[k]["ci_low"] for k in ("micro_f1", "weighted_f1", "macro_f1")}
    assert {cid.split(":")[-1] for cid, _ in marked} == {k for k, w in widths.items() if w > 0} != set()
    assert all("Too few cases to compare" in title for _, title in marked)

    crows = {
        "smollm2-135m": {
            "variant": "causal",
            "n_pairs": 20,
            "complete": False,
            "metric_score": 55.0,
            "stereo_score": 50.0,
            "antistereo_score": 60.0,
            "bias_types": {"religion": {"n": 3, "score": 66.67}},
            "source": "c.json",
        }
    }
    html = paper_tables.crows_table2(crows, "s.json", pub)
    assert "bias:crows:smollm2-135m:bias_type:religion" in ids(html) and ">71.4<" in html and ">75.2<" in html
    assert len(ids(html)) == len(set(ids(html)))


def test_heldout_rows_say_what_they_score():
    cells = pl.DataFrame({"row": ["heldout_hatexplain", "davidson2017"], "cell_id": ["a", "b"]})
    labelled, pub = paper_tables.label_heldout(cells, {("davidson2017", "B-D"): (70.8, "t", "s")})
    hx = labelled["row"][0]
    assert "binary macro F1" in hx and "NOT the paper's 3-class" in hx and "3 classes" not in hx
    assert list(pub) == [(labelled["row"][1], "B-D")] and labelled["cell_id"].to_list() == ["a", "b"]


def test_the_report_reads_the_new_tables_from_the_stages_that_write_them():
    """The report stage's inputs mhc_t5 and multiclass are outputs of
    mhc_disagreement and heldout_multiclass_<model>_<dataset>, and the
    stage name the report puts on each appendix-F cell is that stage's."""
    from hatecheck_pipeline.core import config
    from hatecheck_pipeline.pipeline import registry

    stages = {s.name: s for s in registry.build_stages(config.load_params(overrides={"profile": "smoke"}))}
    report = stages["report"]
    assert report.inputs["mhc_t5"] in stages["mhc_disagreement"].all_outs
    multiclass = report.inputs["multiclass"]
    assert "B-D-multiclass/davidson2017" in multiclass and "B-F-multiclass/founta2018" not in multiclass
    for key, path in multiclass.items():
        assert path in stages["heldout_multiclass_" + key.replace("/", "_")].all_outs, key
    # the multiclass model trains on Davidson's three classes with the appendix-F recipe, tiny in smoke
    assert stages["train_B-D-multiclass"].params["recipe"] == "training.recipes.hatecheck_multiclass"
