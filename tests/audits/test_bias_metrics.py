"""Bias AUCs, power mean and rationale metrics on hand-computed examples."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from models_helpers import hatexplain_table

from hatecheck_pipeline.audits import bias_auc, rationales


def pair_auc(y, s):
    pos = [v for v, t in zip(s, y) if t == 1]
    neg = [v for v, t in zip(s, y) if t == 0]
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def test_community_aucs_by_hand():
    y = [1, 0, 1, 0, 1, 0]
    s = [0.9, 0.8, 0.3, 0.1, 0.7, 0.2]
    g = [True, True, True, False, False, False]
    r = bias_auc.community_aucs(y, s, g)
    # subgroup: items 0,1,2 -> pos 0.9,0.3 vs neg 0.8 -> 1 of 2 pairs
    assert r["subgroup_auc"] == pytest.approx(0.5)
    # BPSN: subgroup negatives (0.8) + background positives (0.7) -> 0/1
    assert r["bpsn_auc"] == pytest.approx(0.0)
    # BNSP: subgroup positives (0.9, 0.3) + background negatives (0.1, 0.2) -> 4/4
    assert r["bnsp_auc"] == pytest.approx(1.0)
    assert (r["n"], r["n_pos"], r["n_neg"]) == (3, 2, 1)
    assert r["subgroup_auc"] == pytest.approx(pair_auc([1, 0, 1], [0.9, 0.8, 0.3]))


def test_undefined_auc_is_none_and_power_mean():
    r = bias_auc.community_aucs([1, 1, 0], [0.2, 0.3, 0.4], [True, True, False])
    assert r["subgroup_auc"] is None  # one class only
    want = ((0.5**-5 + 1.0**-5) / 2) ** (-1 / 5)
    assert bias_auc.power_mean([0.5, 1.0, None], p=-5) == pytest.approx(want)
    assert bias_auc.power_mean([0.5, 1.0], p=-5) < 0.75  # p < 0 pulls towards the worst group
    rows = [{"subgroup_auc": 0.5, "bpsn_auc": 0.9, "bnsp_auc": None}, {"subgroup_auc": 1.0, "bpsn_auc": 0.9, "bnsp_auc": None}]
    g = bias_auc.gmb(rows, -5)
    assert g["gmb_subgroup"] == pytest.approx(want) and g["gmb_bpsn"] == pytest.approx(0.9)
    assert g["gmb_bnsp"] is None and g["gmb_bnsp_n_communities"] == 0


def test_bias_table_list_groups():
    rows = bias_auc.bias_table([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.6], [["Women", "Arab"], ["Women"], [], None], ["Women", "Arab"])
    assert rows[0]["community"] == "Women" and rows[0]["subgroup_auc"] == pytest.approx(1.0)
    assert rows[1]["n"] == 1 and rows[1]["subgroup_auc"] is None


def test_suite_bias_on_synthetic_predictions(tmp_path):
    cases = pl.DataFrame(
        {
            "id": [str(i) for i in range(8)],
            "label": ["hateful", "non-hateful"] * 4,
            "target_ident": ["women", "women", "women", "women", "Muslims", "Muslims", None, None],
        }
    )
    preds = pl.DataFrame({"id": [str(i) for i in range(8)], "p_hateful": [0.9, 0.2, 0.8, 0.7, 0.4, 0.6, 0.95, 0.05]})
    path = tmp_path / "p.parquet"
    preds.write_parquet(path)
    out = bias_auc.run_targets("M", [("hatecheck", cases, "id", path)], tmp_path / "m.json", tmp_path / "c.csv", -5)
    entry = out["suites"]["hatecheck"]
    by = {r["community"]: r for r in entry["communities"]}
    assert set(by) == {"women", "Muslims"}
    assert by["Muslims"]["subgroup_auc"] == pytest.approx(0.0)  # 0.4 (hateful) < 0.6
    assert by["women"]["subgroup_auc"] == pytest.approx(pair_auc([1, 0, 1, 0], [0.9, 0.2, 0.8, 0.7]))
    assert json.loads((tmp_path / "m.json").read_text())["model"] == "M"
    assert pl.read_csv(tmp_path / "c.csv").height == 2
    with pytest.raises(ValueError, match="cover"):
        bias_auc.suite_bias(cases, preds.head(5), "id")


def test_iou_f1_token_f1_auprc_by_hand():
    gold = [[0, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 1]]
    pred = [[0, 1, 1, 0, 0, 1], [1, 1, 0, 0, 0, 0]]
    # post 1: pred spans (1,3) IOU 2/3 > .5 -> match, (5,6) IOU 0; gold 1 span -> p=1/2, r=1
    # post 2: pred span (0,2) vs gold (0,1): IOU 1/2, not > .5 -> p=0, r=0
    r = rationales.iou_f1(gold, pred, 0.5)
    p, rec = (0.5 + 0) / 2, (1 + 0) / 2
    assert r["precision"] == pytest.approx(p) and r["recall"] == pytest.approx(rec)
    assert r["f1"] == pytest.approx(2 * p * rec / (p + rec))
    t = rationales.token_f1(gold, pred)
    f1a = 2 * (2 / 3) * (2 / 3) / (4 / 3)  # tp 2, |pred| 3, |gold| 3
    f1b = 2 * 0.5 * 0.5 / 1.0
    assert t["f1"] == pytest.approx((f1a + f1b) / 2)
    # a perfect soft ranking has AUPRC 1
    assert rationales.auprc([[0, 1, 1, 0]], [[0.1, 0.9, 0.8, 0.2]]) == pytest.approx(1.0)
    assert rationales.top_k_mask([0.3, 0.9, 0.3, 0.1], 2) == [1, 1, 0, 0]  # tie -> earlier token


def test_faithfulness_and_gold():
    f = rationales.faithfulness([0.9, 0.6], [0.3, 0.5], [0.8, 0.7])
    assert f["comprehensiveness"] == pytest.approx(((0.9 - 0.3) + (0.6 - 0.5)) / 2)
    assert f["sufficiency"] == pytest.approx(((0.9 - 0.8) + (0.6 - 0.7)) / 2)
    assert rationales.gold_rationale([[0, 1, 0], [0, 0, 1]]) == [0, 1, 1]
    assert rationales.spans([1, 1, 0, 1]) == [(0, 2), (3, 4)]


def test_hatexplain_standin_and_metrics_end_to_end(tmp_path):
    """Stand-in producer + metrics stage on a tiny synthetic HateXplain table."""
    from hatecheck_pipeline.audits import hatexplain

    rng = np.random.default_rng(0)
    rows = []
    words = {"hatespeech": ["vermin", "subhuman"], "offensive": ["idiot", "stupid"], "normal": ["nice", "day"]}
    for i in range(90):
        label = ["hatespeech", "offensive", "normal"][i % 3]
        group = ["Women", "Arab", "Jewish"][(i // 3) % 3]
        toks = ["the", str(group).lower(), words[label][i % 2], "are", "here"]
        mark = [0, 0, 1, 0, 0]
        rows.append(
            {
                "id": f"p{i}",
                "split": "test" if i >= 60 else "train",
                "label3": label,
                "targets": [group] if rng.random() < 0.9 else [],
                "post_tokens": toks,
                "rationales": [mark, mark] if label != "normal" and i >= 60 else [],
            }
        )
    table = tmp_path / "hx.parquet"
    pl.DataFrame(rows).write_parquet(table)
    d = tmp_path / "out"
    hatexplain.run_standin(table, d / "pred.parquet", d / "attr.parquet", d / "card.json", seed=0, c=10.0, max_features=100, k=1)
    r = hatexplain.run_metrics(
        table,
        d / "pred.parquet",
        d / "attr.parquet",
        d / "m.json",
        d / "c.csv",
        ["Women", "Arab", "Jewish"],
        -5,
        1,
        0.5,
        "union",
        "stand-in",
    )
    assert r["performance"]["accuracy"] == pytest.approx(1.0)  # the class word decides
    (e,) = r["explainability"]  # one method in the stand-in's file
    assert e["token_f1"] == pytest.approx(1.0)  # occlusion finds the class word
    assert e["n_posts"] == 20 and e["method"] == "occlusion" and e["paper_row"] is None  # the paper has no occlusion row
    assert 0 <= r["bias"]["gmb_subgroup"] <= 1
    assert "NOT the paper's BERT" in json.loads((d / "card.json").read_text())["description"]


def test_the_standin_fits_on_one_thread_whatever_the_runner_gives_openmp(tmp_path, monkeypatch):
    """scikit-learn's logistic loss sums over the posts in OpenMP's threads,
    and another thread count fits other weights (on the real HateXplain
    train split, other test predictions): Snakemake sets OMP_NUM_THREADS to
    a rule's threads, DVC leaves it unset. The stand-in pins its OpenMP and
    BLAS threads to one, so both runners fit the same model."""
    import sklearn.linear_model  # noqa: F401 - its libraries loaded, so the outer limit below reaches them
    from threadpoolctl import threadpool_info, threadpool_limits

    from hatecheck_pipeline.audits import hatexplain

    seen = []
    real = hatexplain.train_standin

    def spy(*args, **kwargs):
        seen.append({(lib["user_api"], lib["filepath"]): lib["num_threads"] for lib in threadpool_info()})
        return real(*args, **kwargs)

    monkeypatch.setattr(hatexplain, "train_standin", spy)
    table = hatexplain_table(tmp_path / "hx.parquet")
    with threadpool_limits(limits=2):
        hatexplain.run_standin(
            table, tmp_path / "p.parquet", tmp_path / "a.parquet", tmp_path / "c.json", seed=0, c=1.0, max_features=50, k=1
        )
    assert seen and any(api == "openmp" for api, _ in seen[0])
    assert set(seen[0].values()) == {1}
