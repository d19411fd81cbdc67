"""The audits phase's stage declarations and stage functions (small synthetic files)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import REPO

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.audits import bias_auc, crows, hatexplain, summary
from hatecheck_pipeline.core import config, paths
from hatecheck_pipeline.core.stage import signature_mismatch
from hatecheck_pipeline.pipeline import audits
from hatecheck_pipeline.suites.registry import hatecheck, mhc
from hatecheck_pipeline.suites.sample import predicted_subsample


@pytest.fixture(scope="module")
def params():
    return config.load_params(REPO / "params.yaml")


def test_stage_declarations(params):
    stages = {s.name: s for s in audits.stages(params)}
    for s in stages.values():
        assert s.phase == "audits" and signature_mismatch(s) is None, s.name
    for name in audits.crows_scorers(params):
        s = stages[f"crows_pairs_{name}"]
        assert set(s.param_keys) >= {"profile", f"profiles.{params['profile']}.crows_max_pairs"}
        assert s.threads == params["bias"]["threads"] and s.mem_mb == 4000
    assert stages["hatexplain_standin"].mem_mb == 3000
    # the fine-tuned 3-class models (BERT and BERT-HateXplain): explained by their own stages, scored by the same metrics stage as the baseline
    assert audits.explained_models(params) == ["hatexplain", "hatexplain-supervised"]
    ex = stages["hatexplain_explain_hatexplain"]
    assert ex.inputs["model_dir"] == paths.model_dir("hatexplain") and {"profile", "explain"} <= set(ex.params)
    assert stages["hatexplain_metrics_hatexplain"].inputs["attributions"] == paths.hatexplain_attributions("hatexplain")
    assert params["bias"]["hatexplain"]["supervised"]["train_rationales"] == "eraser"
    plots = [o for s in stages.values() for o in s.outs_of("plots")]
    assert plots and all(o.path.endswith("communities.csv") and dict(o.plot)["x"] == "bpsn_auc" for o in plots)
    for m in audits.target_models(params):
        s = stages[f"target_bias_{m}"]
        assert all(suite.functional for suite in s.args["suites"])
        assert set(s.inputs["gold"]) == set(s.inputs["predictions"]) == {suite.name for suite in s.args["suites"]}
    assert set(stages["bias_summary"].data_deps) == {
        o.path for s in stages.values() if s.name != "bias_summary" for o in s.outs_of("metrics")
    }
    assert audits.bias_summary_path(params) == paths.bias_summary()
    assert audits.bias_summary_path({k: v for k, v in params.items() if k != "bias"}) is None


def test_crows_pair_cap_from_profile(params):
    assert crows.crows_pair_cap(None, 20) == 20 and crows.crows_pair_cap(10, 20) == 10 and crows.crows_pair_cap(None, None) is None
    assert config.profile_named(params, "smoke")["crows_max_pairs"] == 20


PAPER_MLMS = {"bert-base-uncased": True, "roberta-large": False, "albert-xxlarge-v2": True}  # hub id -> metric.py's `uncased`


def crows_runs(params, profile: str) -> dict[str, dict]:
    """Scorer -> its declared settings, for the crows_pairs_<scorer> stages
    the profile runs, as each stage's function receives its parameters."""
    under = {**params, "profile": profile}
    runs = {}
    for s in audits.stages(under):
        if s.name.startswith("crows_pairs_"):
            kwargs = s.arguments(under)
            if s.args["name"] in kwargs["profile"]["crows_scorers"]:
                runs[s.args["name"]] = kwargs["scorer"]
    return runs


def test_the_paper_profile_scores_the_papers_masked_lms_and_the_offline_ones_none(params):
    """The paper profile's CrowS-Pairs stages score BERT-base, RoBERTa-large
    and ALBERT-xxlarge-v2 with the masked metric (hub ids, lowercased as
    the authors' `uncased`); no offline profile runs a masked scorer (none
    can be had offline), and every profile has the same stages."""
    paper = crows_runs(params, "paper")
    assert {s["model"]: s["lowercase"] for s in paper.values() if s["variant"] == "masked"} == PAPER_MLMS
    for name in params["profiles"]:
        if name != "paper":
            runs = crows_runs(params, name)
            assert runs and all(s["variant"] == "causal" for s in runs.values()), name
            assert not {s["model"] for s in runs.values()} & set(PAPER_MLMS), name
    names = {
        p: sorted(s.name for s in audits.stages({**params, "profile": p}) if s.name.startswith("crows_pairs_")) for p in params["profiles"]
    }
    assert all(v == names["paper"] for v in names.values())
    assert {f"crows_pairs_{m}" for m in PAPER_MLMS} <= set(names["paper"])


def test_a_profile_naming_an_unknown_crows_scorer_is_refused(params):
    bad = {**params, "profiles": {**params["profiles"], "smoke": {**params["profiles"]["smoke"], "crows_scorers": ["bert-large"]}}}
    with pytest.raises(config.ConfigError, match=r"profiles\.smoke\.crows_scorers: 'bert-large' is not a scorer"):
        config.cross_check(bad, "test")


@pytest.mark.parametrize("profile", ["embedded", "smoke"])
def test_a_masked_scorer_outside_the_profile_loads_nothing_and_says_why(params, tmp_path, monkeypatch, profile):
    """Under the offline profiles the paper's masked-LM stages exist (the
    DAG is the same for every profile) but load no model (nothing to
    download): an empty pairs table and metrics with ran: false and the
    reason; the summary carries it and the report shows it instead of
    figures, outside the Table 2 columns."""
    from hatecheck_pipeline.report.sections import bias_section

    def no_model(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(crows, "load", no_model)
    monkeypatch.setattr(crows, "run", no_model)
    under = {**params, "profile": profile}
    stage = next(s for s in audits.stages(under) if s.name == "crows_pairs_roberta-large")
    kwargs = stage.arguments(under) | {
        "table": tmp_path / "table.parquet",
        "pairs": tmp_path / "pairs.parquet",
        "metrics": tmp_path / "metrics.json",
    }
    line = crows.crows_pairs(**kwargs)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["ran"] is False and m["profile"] == profile and m["model"] == "roberta-large" and m["metric_score"] is None
    assert f"profile {profile!r} does not list 'roberta-large'" in m["reason"] and "MLM head" in m["reason"] and m["reason"] in line
    empty = pl.read_parquet(tmp_path / "pairs.parquet")
    assert empty.height == 0 and {"sent_more_score", "stereotyped", "variant"} <= set(empty.columns)
    doc = summary.run({"roberta-large": tmp_path / "metrics.json"}, {}, {}, tmp_path / "summary.json")
    assert doc["crows_pairs"]["roberta-large"]["ran"] is False
    html = bias_section(doc, "summary.json", published={})
    assert m["reason"].replace("'", "&#x27;") in html
    assert 'data-cell-id="bias:crows:roberta-large' not in html and "crows-pairs-bias-types" not in html


def test_target_bias_audits_the_predicted_subsample(tmp_path):
    suites = (hatecheck(), mhc("german"))
    hc = pl.DataFrame(
        {"id": [str(i) for i in range(12)], "label": ["hateful", "non-hateful"] * 6, "target_ident": ["women", "Muslims", "women"] * 4}
    )
    mh = hc.with_columns(language=pl.lit("german"), id=pl.concat_str(pl.lit("m"), "id"))
    gold = {"hatecheck": tmp_path / "hc.parquet", "mhc_german": tmp_path / "mhc.parquet"}
    hc.write_parquet(gold["hatecheck"])
    pl.concat([mh, mh.with_columns(language=pl.lit("french"), id=pl.concat_str(pl.lit("f"), "id"))]).write_parquet(gold["mhc_german"])
    profiles = {"smoke": {"max_cases_per_suite": 6}, "paper": {"max_cases_per_suite": None}}
    preds = {}
    for name, frame in (("hatecheck", hc), ("mhc_german", mh)):
        drawn = predicted_subsample(frame, "id", 6, 7)
        preds[name] = tmp_path / f"{name}.parquet"
        drawn.select("id", p_hateful=pl.Series([0.1, 0.9, 0.4, 0.6, 0.8, 0.2])).write_parquet(preds[name])
    kw = dict(model="M", suites=suites, gold=gold, predictions=preds, power=-5, seed=7)
    msg = bias_auc.target_bias(
        **kw, metrics=tmp_path / "m.json", communities_csv=tmp_path / "c.csv", profile=Profile("smoke", profiles["smoke"])
    )
    assert msg == "M: target-group bias on 2 suite(s)"
    doc = json.loads((tmp_path / "m.json").read_text())
    assert list(doc["suites"]) == ["hatecheck", "mhc_german"] and doc["suites"]["mhc_german"]["n_cases"] == 6
    assert set(pl.read_csv(tmp_path / "c.csv")["suite"]) == {"hatecheck", "mhc_german"}
    with pytest.raises(ValueError, match="cover"):  # uncapped: the predictions miss cases
        bias_auc.target_bias(
            **kw, metrics=tmp_path / "x.json", communities_csv=tmp_path / "x.csv", profile=Profile("paper", profiles["paper"])
        )


def test_hatexplain_and_summary_stage_functions(tmp_path):
    rows = []
    words = {"hatespeech": "vermin", "offensive": "idiot", "normal": "nice"}
    for i in range(60):
        label = ["hatespeech", "offensive", "normal"][i % 3]
        group = ["Women", "Arab"][(i // 3) % 2]
        rows.append(
            {
                "id": f"p{i}",
                "split": "test" if i >= 30 else "train",
                "label3": label,
                "targets": [group],
                "post_tokens": ["the", group.lower(), words[label], "here"],
                "rationales": [[0, 0, 1, 0]] if label != "normal" and i >= 30 else [],
            }
        )
    table = tmp_path / "hx.parquet"
    pl.DataFrame(rows).write_parquet(table)
    d = tmp_path / "out"
    msg = hatexplain.hatexplain_standin(
        table, d / "p.parquet", d / "a.parquet", d / "card.json", {"C": 10.0, "max_features": 50}, top_k=1, seed=0
    )
    assert msg == f"{hatexplain.STANDIN}: trained on 30 posts, scored 30"
    msg = hatexplain.hatexplain_metrics(
        hatexplain.STANDIN, table, d / "p.parquet", d / "a.parquet", d / "m.json", d / "c.csv", ["Women", "Arab"], -5, 1, 0.5, "union"
    )
    assert msg.startswith(f"{hatexplain.STANDIN}: macro F1 1.000") and "token F1 [occlusion] 1.000" in msg
    assert not list(d.glob("*.tmp"))  # atomic writes leave no temp files
    three = json.loads((d / "m.json").read_text())
    assert three["bias"]["classes"] == 3 and "bias_3class" not in three
    # with a 2-class model's p(toxic) (the paper's protocol) the bias columns come from it; the 3-class figures are kept
    test_ids = [r["id"] for r in rows if r["split"] == "test"]
    inverted = pl.DataFrame(
        {"id": test_ids, "p_toxic": [0.2 if r["label3"] != "normal" else 0.9 for r in rows if r["split"] == "test"], "model": "two-class"}
    )
    inverted.write_parquet(d / "two.parquet")
    msg = hatexplain.hatexplain_metrics(
        hatexplain.STANDIN,
        table,
        d / "p.parquet",
        d / "a.parquet",
        d / "m2.json",
        d / "c2.csv",
        ["Women", "Arab"],
        -5,
        1,
        0.5,
        "union",
        two_class=d / "two.parquet",
    )
    two = json.loads((d / "m2.json").read_text())
    assert two["bias"]["classes"] == 2 and two["bias"]["model"] == "two-class" and two["bias"]["gmb_subgroup"] == pytest.approx(0.0)
    assert two["bias_3class"] == three["bias"] and "(2-class)" in msg
    assert set(pl.read_csv(d / "c2.csv")["classes"]) == {2}
    inverted.head(5).write_parquet(d / "few.parquet")
    with pytest.raises(ValueError, match="covers 5 of 30 test posts"):
        hatexplain.hatexplain_metrics(
            hatexplain.STANDIN,
            table,
            d / "p.parquet",
            d / "a.parquet",
            d / "m3.json",
            d / "c3.csv",
            ["Women", "Arab"],
            -5,
            1,
            0.5,
            "union",
            two_class=d / "few.parquet",
        )
    out = tmp_path / "summary.json"
    msg = summary.bias_summary({}, {hatexplain.STANDIN: d / "m.json"}, {}, out, {"model": "hx-sup", "train_rationales": None})
    assert msg == f"wrote {out} (0 CrowS-Pairs, 0 WinoBias, 1 HateXplain, 0 target-bias entries)"
    doc = json.loads(out.read_text())
    assert doc["hatexplain"][hatexplain.STANDIN]["source"] == str(d / "m.json")
    assert [e["method"] for e in doc["hatexplain"][hatexplain.STANDIN]["explanations"]] == ["occlusion"]
    assert doc["hatexplain_supervised"]["ran"] is False and "train_rationales is null" in doc["hatexplain_supervised"]["reason"]
    e = doc["hatexplain"][hatexplain.STANDIN]
    assert e["bias_classes"] == 3 and e["gmb_subgroup_3class"] == e["gmb_subgroup"]
    summary.bias_summary({}, {hatexplain.STANDIN: d / "m2.json"}, {}, out, {"model": "hx-sup", "train_rationales": "eraser"})
    e = json.loads(out.read_text())["hatexplain"][hatexplain.STANDIN]
    assert e["bias_classes"] == 2 and e["bias_model"] == "two-class" and e["gmb_subgroup_3class"] == three["bias"]["gmb_subgroup"]


def test_supervised_model_gets_its_stages_only_with_training_rationales(params):
    """BERT-HateXplain: train, explain and metrics stages appear when
    training rationales are set (default: derived from the ERASER files by
    hatexplain_rationales; or a file of one's own), never with null."""
    import copy

    from hatecheck_pipeline.pipeline import models as model_stages

    names = {s.name: s for s in model_stages.stages(params) + audits.stages(params)}
    derive = names["hatexplain_rationales"]
    assert signature_mismatch(derive) is None and derive.inputs["table"] == paths.processed("hatexplain", "hatexplain")
    assert derive.inputs["docs"] == paths.raw("hatexplain", "eraser/docs.jsonl")
    assert (
        names["train_hatexplain-supervised"].inputs["rationales"]
        == paths.hatexplain_train_rationales()
        == derive.outputs["rationales"].path
    )
    given = copy.deepcopy(params)
    given["bias"]["hatexplain"]["supervised"]["train_rationales"] = "data/external/hatexplain_train_rationales.json"
    names = {s.name: s for s in model_stages.stages(given) + audits.stages(given)}
    train = names["train_hatexplain-supervised"]
    assert "hatexplain_rationales" not in names
    assert train.inputs["rationales"] == "data/external/hatexplain_train_rationales.json" and signature_mismatch(train) is None
    assert train.params["recipe"] == "training.recipes.hatexplain_supervised"
    assert train.inputs["data"] == names["train_hatexplain"].inputs["data"]
    assert {"hatexplain_explain_hatexplain-supervised", "hatexplain_metrics_hatexplain-supervised"} <= set(names)
    assert paths.hatexplain_metrics("hatexplain-supervised") in names["bias_summary"].data_deps
    # the 2-class bias model: trained like hatexplain with the 2-class recipe, its p(toxic) read by hatexplain's metrics stage
    two = names["train_hatexplain-2class"]
    assert two.params["recipe"] == "training.recipes.hatexplain_2class" and two.inputs["data"] == names["train_hatexplain"].inputs["data"]
    assert names["hatexplain_toxicity_hatexplain-2class"].inputs["model_dir"] == paths.model_dir("hatexplain-2class")
    assert names["hatexplain_metrics_hatexplain"].inputs["two_class"] == paths.hatexplain_predictions("hatexplain-2class")
    assert "two_class" not in names["hatexplain_metrics_hatexplain-supervised"].inputs
    assert signature_mismatch(names["hatexplain_toxicity_hatexplain-2class"]) is None
    given["bias"]["hatexplain"]["supervised"]["train_rationales"] = None
    assert model_stages.supervised_model(given) is None
    names = {s.name for s in model_stages.stages(given) + audits.stages(given)}
    assert not {"hatexplain_rationales", "train_hatexplain-supervised", "hatexplain_explain_hatexplain-supervised"} & names
