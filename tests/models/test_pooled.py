"""The mean-pooled classifier (recipe ``pooling: mean``, models/pooled.py)
on tiny RANDOMLY INITIALISED models (a Gemma3 text encoder with
bidirectional attention, as EmbeddingGemma's config, and a 2-layer BERT):
test values only."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import torch
from models_helpers import processed_table, tiny_bert

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.models import predict
from hatecheck_pipeline.models import train as training
from hatecheck_pipeline.models.pooled import MeanPooledClassifier, load_classifier
from hatecheck_pipeline.models.recipe import Recipe
from hatecheck_pipeline.models.trainable import load_for_training

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def gemma(tmp_path_factory) -> Path:
    from transformers import Gemma3TextConfig, Gemma3TextModel

    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        pad_token_id=0,
        use_bidirectional_attention=True,
    )
    where = tmp_path_factory.mktemp("tiny-gemma")
    Gemma3TextModel(cfg).save_pretrained(where)
    return where


def test_mean_pooling_keeps_the_pretrained_encoder_and_ignores_pads(gemma):
    from transformers import Gemma3TextModel

    model = load_for_training(str(gemma), dropout=0.0, seed=1, freeze_embeddings=True, pooling="mean").eval()
    assert isinstance(model, MeanPooledClassifier)
    pretrained = Gemma3TextModel.from_pretrained(gemma)
    ours = model.model.state_dict()
    assert ours.keys() == pretrained.state_dict().keys()
    assert all(torch.equal(ours[k], v) for k, v in pretrained.state_dict().items())  # every encoder weight loaded
    probe = torch.tensor([[2, 9, 4, 11]])
    with torch.no_grad():  # and its buffers (Gemma3's embedding scale, rotary frequencies) set as the encoder's own class sets them
        torch.testing.assert_close(model.model(input_ids=probe).last_hidden_state, pretrained.eval()(input_ids=probe).last_hidden_state)
    assert not model.get_input_embeddings().weight.requires_grad
    short, long_ = [5, 6, 7], [5, 6, 7, 8, 9, 10]
    with torch.no_grad():
        alone = model(input_ids=torch.tensor([short])).logits
        batch = model(input_ids=torch.tensor([short + [0] * 3, long_]), attention_mask=torch.tensor([[1] * 3 + [0] * 3, [1] * 6])).logits
        hidden = model.model(input_ids=torch.tensor([short])).last_hidden_state
    torch.testing.assert_close(batch[0], alone[0], rtol=1e-5, atol=1e-6)  # pads change nothing
    torch.testing.assert_close(alone, model.score(hidden.mean(dim=1)))  # the head reads the mean token state
    assert not torch.allclose(batch[1], batch[0])


def test_saved_classifier_loads_as_the_class_it_was_trained_as(gemma, tmp_path):
    ids = torch.tensor([[3, 4, 5, 6]])
    for pooling, cls in (("mean", "MeanPooledClassifier"), ("model", "Gemma3TextForSequenceClassification")):
        model = load_for_training(str(gemma), dropout=0.0, seed=2, pooling=pooling).eval()
        model.save_pretrained(tmp_path / pooling)
        assert json.loads((tmp_path / pooling / "config.json").read_text())["architectures"] == [cls]
        back = load_classifier(tmp_path / pooling).eval()
        assert type(back).__name__ == cls
        with torch.no_grad():
            torch.testing.assert_close(back(input_ids=ids).logits, model(input_ids=ids).logits)
    with torch.no_grad():  # the two heads read different states: the pooling is a real change
        mean_logits = load_classifier(tmp_path / "mean")(input_ids=ids).logits
        last_logits = load_classifier(tmp_path / "model")(input_ids=ids).logits
    assert not torch.allclose(mean_logits, last_logits)


def test_unknown_pooling_names_the_recipe_key(gemma):
    with pytest.raises(ValueError, match=r"training.recipes.\*.pooling: 'max'"):
        load_for_training(str(gemma), dropout=0.0, seed=1, pooling="max")


def test_an_encoder_missing_from_the_checkpoint_is_an_error(gemma, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    odd = tmp_path / "odd"
    shutil.copytree(gemma, odd)
    tensors = load_file(odd / "model.safetensors")
    save_file({f"encoder_v2.{k}": v for k, v in tensors.items()}, odd / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match="pooling mean: encoder weights not in the checkpoint"):
        load_for_training(str(odd), dropout=0.0, seed=1, pooling="mean")


def test_a_mean_pooled_model_trains_predicts_and_is_recorded(tmp_path):
    base = tiny_bert(tmp_path / "bert")
    data = processed_table(tmp_path / "data" / "toy" / "bert.parquet")
    recipe = {
        "class_weights": "none",
        "lr": 1e-3,
        "weight_decay": 0.0,
        "dropout": 0.1,
        "batch_size": 8,
        "epochs": 1,
        "warmup_ratio": 0.0,
        "early_stopping": None,
        "keep_best": False,
        "select_on": "dev_loss",
        "grid_search": False,
    }
    profile = Profile("test", {"max_train_per_model": None, "max_epochs": None, "max_length": 24})
    runs = {}
    for pooling in ("model", "mean"):
        root = tmp_path / pooling
        training.run(
            "TINY",
            str(base),
            [data],
            {**recipe, "pooling": pooling},
            profile,
            7,
            root / "final",
            root / "ckpt",
            root / "log.json",
            root / "card.json",
            threads=1,
            progress=False,
            amp=False,
        )
        card = json.loads((root / "card.json").read_text())
        assert card["recipe"]["pooling"] == pooling
        cases = pl.read_parquet(data).filter(pl.col("split") == "test").select("id", "text")
        runs[pooling] = predict.run(
            root / "final", cases, "TINY", "toy_test", root / "pred.parquet", max_length=24, batch_size=4, threads=1, progress=False
        )
        assert isinstance(predict.load_model(root / "final")[0], MeanPooledClassifier) == (pooling == "mean")
    assert not runs["mean"]["p_hateful"].equals(runs["model"]["p_hateful"])
    # the default pooling leaves a checkpoint fingerprint as it was before the field
    assert "pooling" not in Recipe.from_params(recipe).fingerprint()
    assert Recipe.from_params({**recipe, "pooling": "mean"}).fingerprint()["pooling"] == "mean"


def test_the_explainability_audit_loads_and_explains_a_mean_pooled_model(tmp_path):
    from transformers import AutoTokenizer

    from hatecheck_pipeline.audits import explain

    base = tiny_bert(tmp_path / "bert")
    load_for_training(str(base), dropout=0.0, seed=3, pooling="mean").save_pretrained(tmp_path / "clf")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp_path / "clf")
    net, tok = explain.load_classifier(tmp_path / "clf")  # the audit's own loader
    assert isinstance(net, MeanPooledClassifier) and net.config._attn_implementation == "eager"
    ids = [tok("a b c")["input_ids"], tok("a")["input_ids"]]
    att = explain.attention_scores(net, ids, tok.pad_token_id, batch_size=2)
    assert [a.shape for a in att] == [(len(ids[0]),), (len(ids[1]),)]
    ig = explain.integrated_gradients(net, ids, [1, 0], tok.pad_token_id, set(tok.all_special_ids), steps=4, batch_size=8)
    assert [a.shape for a in ig] == [(len(ids[0]),), (len(ids[1]),)] and all(torch.isfinite(torch.as_tensor(a)).all() for a in ig)
