"""`paper-tiny` (tests/paper_tiny.py) is the `paper` profile with only model
references and size caps changed: compared key by key with `paper`, the
differences are exactly the listed ones, each with its reason; the recipes
(the HateCheck grid, the MHC early stopping and best checkpoint) and the
runtime switches are the paper's. The tiny models are random: test values
only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paper_tiny import CAPS, DIFFERENCES, MODEL, SIZE, build_models, differences, paper_tiny_params

from hatecheck_pipeline.core import config
from hatecheck_pipeline.models.recipe import Recipe


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    return build_models(tmp_path_factory.mktemp("paper-tiny-models"))


@pytest.fixture(scope="module")
def params():
    return config.load_params()


def test_paper_tiny_differs_from_paper_exactly_where_listed(params, tiny_models):
    tiny = paper_tiny_params(params, tiny_models)
    assert differences(params, tiny) == set(DIFFERENCES)
    for key, why in DIFFERENCES.items():  # every difference is a size or a model reference, said so
        assert why.startswith((SIZE, MODEL)) or key == "profile", key
    for key in CAPS:
        assert DIFFERENCES[f"profiles.*.{key}"].startswith(SIZE)


def test_paper_tiny_is_a_valid_profile_keeping_the_papers_recipes_and_switches(params, tiny_models, tmp_path):
    tiny = paper_tiny_params(params, tiny_models)
    path = tmp_path / "params.yaml"
    import yaml

    path.write_text(yaml.safe_dump(tiny, allow_unicode=True), "utf-8")
    loaded = config.load_params(path, schema=Path(config.SCHEMA_FILE).resolve())  # the schema accepts it
    prof = loaded["profiles"]["paper-tiny"]
    paper = params["profiles"]["paper"]
    for key in (
        "grid_search",
        "recipe_by_role",
        "max_epochs",
        "max_train_per_model",
        "freeze_embeddings",
        "freeze_lower_layers",
        "length_bucketing",
        "cpu_bf16",
        "predict_cpu_bf16",
        "gpu",
        "crows_scorers",
    ):
        assert prof[key] == paper[key], key
    recipes = loaded["training"]["recipes"]
    assert len(Recipe.from_params(recipes["hatecheck"], max_epochs=prof["max_epochs"]).trials()) == 18
    mhc = Recipe.from_params(recipes["mhc"], max_epochs=prof["max_epochs"])
    assert mhc.early_stopping == {"metric": "dev_f1_hateful", "patience": 5} and mhc.keep_best
    # every model reference is a local safetensors folder of the tiny models, labelled random
    refs = [
        prof["base_models"]["bert"],
        prof["base_models"]["xlmt"],
        loaded["llm"]["backends"]["local"]["model"],
        loaded["expansion"]["nli"]["model"],
        loaded["expansion"]["quality"]["lm"],
    ]
    refs += [loaded["bias"]["crows_pairs"]["scorers"][s]["model"] for s in prof["crows_scorers"]]
    for ref in refs:
        folder = Path(ref)
        assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.bin")), ref
        assert (folder / "TINY_RANDOM_WEIGHTS.txt").is_file(), ref
        assert json.loads((folder / "config.json").read_text()).get("auto_map") is None, ref  # no remote code


def test_tiny_models_have_the_paper_architectures_and_tokenizer_families(tiny_models):
    from transformers import AutoConfig, AutoTokenizer

    expected = {
        "bert": ("bert", "BertTokenizer"),
        "xlmt": ("xlm-roberta", "XLMRobertaTokenizer"),
        "roberta": ("roberta", "RobertaTokenizer"),
        "albert": ("albert", "AlbertTokenizer"),
        "nli": ("bart", "RobertaTokenizer"),
        "causal": ("llama", "TokenizersBackend"),
    }
    for name, (model_type, tokenizer) in expected.items():
        assert AutoConfig.from_pretrained(tiny_models[name]).model_type == model_type, name
        tok = AutoTokenizer.from_pretrained(tiny_models[name])
        assert type(tok).__name__.removesuffix("Fast") == tokenizer.removesuffix("Fast") or name == "causal", (name, type(tok).__name__)
        ids = tok("women are vermin")["input_ids"]
        assert len(set(ids) - {tok.unk_token_id}) >= 2, (name, ids)  # the sentence's pieces are in the vocabulary
