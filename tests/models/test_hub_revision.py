"""A hub id registered as a ``pretrained`` classifier without a revision is
resolved offline to the commit its ``main`` points to in the local Hugging
Face cache (a fake cache folder here: ``models--org--name/refs/main`` and
``snapshots/<commit>/``); the card names that commit, not "main", and the
predict stage loads it even after ``main`` has moved. An id the cache does
not hold is not resolved (None), and a commit given is kept."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
from models_helpers import tiny_bert

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.models import classifiers, external
from hatecheck_pipeline.models.kinds.pretrained import hub_commit
from hatecheck_pipeline.suites.registry import Suite

COMMIT_1 = "1" * 8 + "a" * 32
COMMIT_2 = "2" * 8 + "b" * 32


def tiny_classifier(directory, seed: int, hate_bias: float = 0.0):
    """A tiny random BERT sequence classifier (NOT_HATE, HATE), its weights
    drawn with ``seed``, ``hate_bias`` added to the HATE logit (two commits
    whose answers differ far beyond float noise)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    base = tiny_bert(directory / "base")
    config = BertConfig.from_pretrained(base, num_labels=2, id2label={0: "NOT_HATE", 1: "HATE"}, label2id={"NOT_HATE": 0, "HATE": 1})
    torch.manual_seed(seed)
    out = directory / "model"
    net = BertForSequenceClassification(config)
    with torch.no_grad():
        net.classifier.bias[1] += hate_bias
    net.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def put_in_cache(cache, repo: str, commit: str, model_dir) -> None:
    """``model_dir`` as the hub cache holds ``repo`` at ``commit``, with main pointing to it."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_dir, folder / "snapshots" / commit)
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(commit)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An offline hub cache holding org/tiny at COMMIT_1."""
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub"
    put_in_cache(cache, "org/tiny", COMMIT_1, tiny_classifier(tmp_path / "m1", seed=1))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_the_commit_is_read_from_the_cache_offline(hub_cache):
    assert hub_commit("org/tiny", cache_dir=hub_cache) == COMMIT_1
    assert hub_commit("org/tiny") == COMMIT_1  # the cache huggingface_hub is set to
    assert hub_commit("org/absent", cache_dir=hub_cache) is None
    assert hub_commit("org/tiny", "v2", cache_dir=hub_cache) is None  # a tag the cache has no ref for
    assert hub_commit("org/absent", COMMIT_2) == COMMIT_2  # a commit given is its own identity


def test_the_card_names_the_commit_and_predict_loads_it_after_main_moved(hub_cache, tmp_path, monkeypatch, cpu_only):
    monkeypatch.chdir(tmp_path)
    spec = {
        "kind": "pretrained",
        "model": "org/tiny",
        "hateful": ["HATE"],
        "max_length": 32,
        "batch_size": 4,
        "suites": ["hatecheck"],
        "seed": 0,
    }
    card = tmp_path / "card.json"
    external.register("tiny", spec, card, Profile("smoke", {}))
    identity = json.loads(card.read_text())["identity"]
    assert identity == {"ref": "org/tiny", "revision": COMMIT_1, "requested_revision": "main"}
    texts = ["the cat sat", "a dog ran far away", "more words here now"]
    at_commit_1 = classifiers.load("tiny", spec).p_hateful(texts)
    # main moves to a new commit with other weights: the registered model is still commit 1
    put_in_cache(hub_cache, "org/tiny-next", COMMIT_2, tiny_classifier(tmp_path / "m2", seed=2, hate_bias=2.0))
    moved = hub_cache / "models--org--tiny"
    shutil.copytree(hub_cache / "models--org--tiny-next" / "snapshots" / COMMIT_2, moved / "snapshots" / COMMIT_2)
    (moved / "refs" / "main").write_text(COMMIT_2)
    at_main = classifiers.load("tiny", spec).p_hateful(texts)
    assert (at_main - at_commit_1 > 0.2).all()  # main is another model now
    table = tmp_path / "t.parquet"
    pl.DataFrame({"case_id": [1, 2, 3], "text": texts, "label": ["hateful", "non-hateful", "non-hateful"]}).write_parquet(table)
    out = tmp_path / "p.parquet"
    external.predict(
        "tiny",
        spec,
        [Suite("hatecheck", "hatecheck", "case_id")],
        {"hatecheck": table},
        [out],
        card,
        threshold=0.5,
        threads=1,
        profile=Profile("smoke", {"max_cases_per_suite": None}),
        seed=0,
    )
    predicted = pl.read_parquet(out).sort("id")["p_hateful"].to_numpy()
    assert np.allclose(predicted, at_commit_1, atol=1e-3)  # the registered commit (float noise of another thread count aside)
    assert f"revision={COMMIT_1}" in pl.read_parquet_metadata(out)["classifier_identity"]


def test_an_id_the_cache_does_not_resolve_is_recorded_plainly(hub_cache, tmp_path, cpu_only):
    clf = classifiers.load("tiny", {"kind": "pretrained", "model": "org/tiny", "hateful": ["HATE"]})
    (hub_cache / "models--org--tiny" / "refs" / "main").unlink()  # the cache no longer says which commit main is
    clf.commit = hub_commit("org/tiny")
    identity = clf.identity()
    assert identity["revision"].startswith("unresolved: main of org/tiny is not in the local Hugging Face cache")
    assert identity["requested_revision"] == "main"
