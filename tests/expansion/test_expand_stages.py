"""The expand phase's stages: declared once, run through the generic entry
point with exactly their declared paths and values."""

import json

import polars as pl

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.stage import call, signature_mismatch
from hatecheck_pipeline.pipeline import expand
from hatecheck_pipeline.pipeline.registry import build_stages


def by_name(params, name):
    return next(s for s in expand.stages(params) if s.name == name)


def test_perturbed_mhc_stage_filters_its_language_from_the_declaration(params):
    s = by_name(params, "expand_perturbed_mhc_german")
    assert s.args == {"name": "perturbed_mhc_german", "languages": ["german"]}
    assert s.data_deps == [paths.interim_table("mhc")]
    assert by_name(params, "expand_perturbed_hatecheck").args["languages"] is None


def test_perturb_and_coverage_stages_run_on_a_tiny_suite(params, workdir):
    cases = pl.DataFrame(
        {
            "id": ["m1", "m2", "n1"],
            "text": ["Ich hasse Frauen.", "我讨厌女人。", "Ich mag Katzen."],
            "label": ["hateful", "hateful", "non-hateful"],
            "language": ["german", "mandarin", "german"],
            "functionality": ["derog_neg_emote_h", "derog_neg_emote_h", "ident_pos_nh"],
            "target_ident": ["women", "women", None],
        }
    )
    table = workdir / paths.interim_table("mhc")
    table.parent.mkdir(parents=True)
    cases.write_parquet(table)
    line = call(by_name(params, "expand_perturbed_mhc_german"), params)
    assert line.startswith("perturbed_mhc_german german/")
    out = pl.read_parquet(workdir / paths.expanded_table("perturbed_mhc_german"))
    assert set(out["language"]) == {"german"} and set(out["source_id"]) == {"m1"}
    cov = json.loads((workdir / paths.expansion_file("perturbed_mhc_german", "coverage.json")).read_text())
    assert cov["seed"] == params["expansion"]["perturb"]["seed"]


def test_expanded_suites_feed_the_models_through_their_preprocess_stage(params):
    stages = {s.name: s for s in build_stages(params)}
    pre = stages["expand_preprocess_perturbed_hatecheck_bert"]
    assert pre.run == "hatecheck_pipeline.expansion.preprocess:expand_preprocess"
    assert pre.all_outs == [paths.expanded_processed("perturbed_hatecheck", "bert")]
    assert paths.expanded_processed("perturbed_hatecheck", "bert") in stages["predict_B-D_perturbed_hatecheck"].data_deps


def test_gpt_hatecheck_stages_take_exactly_their_declared_arguments(params):
    """GPT-HateCheck is in the default DAG: generation, validation, quality,
    the comparison of the models listing it; off, none of them."""
    on = {**params, "expansion": {**params["expansion"], "llm": {**params["expansion"]["llm"], "enabled": True}}}
    stages = {s.name: s for s in expand.stages(on)}
    assert {"expand_llm_generate_english", "expand_llm_validate_english", "expand_quality"} <= set(stages)
    for s in stages.values():
        assert signature_mismatch(s) is None, f"{s.name}: {signature_mismatch(s)}"
    gen = stages["expand_llm_generate_english"]
    assert set(gen.params) == {"settings", "backends", "threads", "profile"}
    # the embedded profile generates on the fetched weights: their manifest is an input
    # Table 12's slur list (a resource), not HateCheck's placeholders
    assert gen.data_deps == [
        "src/hatecheck_pipeline/resources/expansion/gpt_hatecheck_slurs.yaml",
        "src/hatecheck_pipeline/resources/expansion/prompts.yaml",
        paths.llm_weights_info(),
    ]
    val = stages["expand_llm_validate_english"]
    assert val.params["settings"] == "expansion.nli" and paths.expanded_table("gpt_hatecheck_english") in val.all_outs
    assert "expand_preprocess_gpt_hatecheck_english_bert" in stages
    assert params["expansion"]["llm"]["enabled"]
    compare = expand.gpt_compare_stages(params)
    assert [s.name for s in compare] == ["gpt_hatecheck_compare"] and set(compare[0].args["pairs"]) == {"B-D", "B-F"}
    assert signature_mismatch(compare[0]) is None
    off = {**params, "expansion": {**params["expansion"], "llm": {**params["expansion"]["llm"], "enabled": False}}}
    assert not any(s.name.startswith("expand_llm") for s in expand.stages(off)) and not expand.gpt_compare_stages(off)
