"""N-class training (HateXplain's 3 classes) and BERT-HateXplain's attention
supervision on a tiny RANDOMLY INITIALISED BERT (2 layers, hidden 32) and a
synthetic HateXplain-like table with rationales. Test values only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from models_helpers import hatexplain_table, tiny_bert

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.models import attention, predict
from hatecheck_pipeline.models import train as training
from hatecheck_pipeline.models.recipe import BINARY, ID2LABEL, LABEL2ID, LabelSet, class_weights
from hatecheck_pipeline.models.runtime import encode
from hatecheck_pipeline.models.selection import multiclass_metrics

torch.set_num_threads(1)

LABELS = {"column": "label3", "classes": ["hatespeech", "offensive", "normal"], "hateful": "hatespeech"}
RECIPE = {
    "labels": LABELS,
    "class_weights": "none",
    "lr": 3e-3,
    "weight_decay": 0.0,
    "dropout": 0.0,
    "batch_size": 8,
    "epochs": 6,
    "warmup_ratio": 0.0,
    "early_stopping": None,
    "keep_best": True,
    "select_on": "dev_macro_f1",
    "grid_search": False,
    "attention_supervision": None,
}
PROFILE = {"max_train_per_model": None, "max_epochs": None, "max_length": 24}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    return hatexplain_table(tmp_path_factory.mktemp("hx") / "hatexplain" / "hatexplain.parquet")


def train(base, table, root: Path, recipe=RECIPE, **kw):
    return training.run(
        "HX",
        str(base),
        [table],
        recipe,
        Profile("test", PROFILE),
        3,
        root / "final",
        root / "ckpt",
        root / "log.json",
        root / "card.json",
        threads=1,
        progress=False,
        **kw,
    )


def test_label_set_from_the_recipe():
    assert LabelSet.from_recipe({}) is BINARY
    three = LabelSet.from_recipe({"labels": LABELS})
    assert three.id2label == {0: "hatespeech", 1: "offensive", 2: "normal"} and three.label2id["normal"] == 2
    with pytest.raises(ValueError, match="hateful='hateful'"):
        LabelSet.from_recipe({"labels": {**LABELS, "hateful": "hateful"}})
    assert class_weights([0, 1, 2, 2], "none", 3) == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="2 classes, not 3"):
        class_weights([0, 1, 2], "other_class_proportion", 3)


def test_multiclass_dev_metrics():
    probs = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.1, 0.8, 0.1]])
    m = multiclass_metrics(np.array([0, 1, 2, 0]), probs, [1.0, 1.0, 1.0], hateful=0)
    assert m["dev_f1_hateful"] == pytest.approx(2 / 3)  # hate: 1 of 2 found, 1 of 1 right
    assert m["dev_macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 1.0) / 3)
    assert m["dev_loss"] == pytest.approx(-np.mean(np.log([0.8, 0.8, 0.8, 0.1])))


def test_three_class_training_learns_and_predicts_p_hatespeech(base, table, tmp_path):
    log = train(base, table, tmp_path)
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["labels"] == {"0": "hatespeech", "1": "offensive", "2": "normal"} and card["label_column"] == "label3"
    assert log["train_examples"] == 60 and "attention_supervision" not in card
    best = next(r for r in log["epochs"] if r["epoch"] == log["selected_epoch"])
    assert best["dev_macro_f1"] > 0.45  # one word decides the class: well above chance (1/3) and the majority class (1/6)
    model, tok = predict.load_model(tmp_path / "final")
    assert model.config.num_labels == 3 and predict.hateful_index(model.config) == 0
    test = pl.read_parquet(table).filter(pl.col("split") == "test")
    p = predict.predict_proba(model, tok, test["text"].to_list(), 24, 8, amp=False)
    hate = (test["label3"] == "hatespeech").to_numpy()
    assert p[hate].mean() > p[~hate].mean()  # p_hateful is p(hatespeech), not index 1 (offensive)


def test_binary_models_keep_their_label_index():
    from transformers import BertConfig

    assert predict.hateful_index(BertConfig(id2label=ID2LABEL, label2id=LABEL2ID)) == 1
    assert predict.hateful_index(BertConfig()) == 1  # no label names: index 1 as before


# --------------------------------------------------------------------------
# Attention supervision


def test_ground_truth_attention_and_subword_alignment(base):
    from hatecheck_pipeline.models.base import load_tokenizer

    gt = attention.ground_truth([[0, 1, 0], [0, 1, 1]], 3, 5.0)
    z = 5.0 * np.array([0.0, 1.0, 0.5])
    assert gt == pytest.approx((np.exp(z) / np.exp(z).sum()).tolist()) and sum(gt) == pytest.approx(1.0)
    assert attention.ground_truth([], 3, 5.0) == pytest.approx([1 / 3] * 3)  # normal posts: uniform
    with pytest.raises(ValueError, match="cover 2 tokens, the post has 3"):
        attention.ground_truth([[0, 1]], 3, 5.0)
    tok = load_tokenizer(str(base))
    text = "vermin immigrants lunchmusic today"  # an unseen word splits into several subwords
    t = attention.token_targets(tok, [text], [[[1, 0, 0, 0]]], 24, 5.0)[0]
    ids = encode(tok, [text], 24)[0]
    words = tok(text.split(), is_split_into_words=True)
    assert len(t) == len(ids) and t[0] == 0.0 and t[-1] == 0.0 and sum(t) == pytest.approx(1.0)
    first = [j for j, w in enumerate(words.word_ids()) if w == 0]
    assert all(t[j] == max(t) for j in first) and len(words.word_ids()) > 6


def test_attention_loss_is_lambda_times_cross_entropy_of_the_cls_rows():
    att = torch.softmax(torch.randn(2, 4, 5, 5), dim=-1)
    target = torch.tensor([[0.0, 0.5, 0.5, 0.0, 0.0], [0.0, 0.2, 0.2, 0.6, 0.0]])
    sup = attention.Supervision(lam=10.0, layer=-1, heads=3, temperature=5.0)
    got = attention.attention_loss([torch.zeros(1), att], target, sup)
    want = -(target[:, None, :] * att[:, :3, 0, :].log()).sum(-1).mean() * 10.0
    assert float(got) == pytest.approx(float(want), rel=1e-6)


def rationale_file(table: Path, path: Path) -> Path:
    train = pl.read_parquet(table).filter(pl.col("split") == "train")
    path.write_text(json.dumps({i: r for i, r in zip(train["id"], train["rationales"].to_list()) if r}))
    return path


def cls_attention_on_rationales(model_dir: Path, table: Path, layer: int, heads: int) -> float:
    """Mean share of the supervised heads' [CLS] attention that falls on the
    rationale words of the dev posts with rationales."""
    from transformers import AutoModelForSequenceClassification

    from hatecheck_pipeline.models.base import load_tokenizer

    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    tok = load_tokenizer(str(model_dir))
    dev = pl.read_parquet(table).filter((pl.col("split") == "dev") & (pl.col("rationales").list.len() > 0))
    shares = []
    for tokens, rats in zip(dev["post_tokens"].to_list(), dev["rationales"].to_list()):
        enc = tok(tokens, is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            att = model(**enc, output_attentions=True).attentions[layer][0, :heads, 0, :].mean(0)
        on = [j for j, w in enumerate(enc.word_ids()) if w is not None and rats[0][w]]
        shares.append(float(att[on].sum()))
    return float(np.mean(shares))


def test_attention_supervision_moves_cls_attention_onto_the_rationales(base, table, tmp_path):
    """Same data, seed and recipe; lambda = 0 vs lambda = 10: the supervised
    heads put clearly more [CLS] attention on the rationale words."""
    rats = rationale_file(table, tmp_path / "rationales.json")
    sup = {"lambda": 10.0, "layer": -1, "heads": 2, "temperature": 5.0}
    shares = {}
    for lam in (0.0, 10.0):
        root = tmp_path / f"lam{lam}"
        log = train(base, table, root, {**RECIPE, "attention_supervision": {**sup, "lambda": lam}}, rationales_file=rats)
        card = json.loads((root / "card.json").read_text())
        assert card["attention_supervision"]["lam"] == lam and log["attention_supervision"]["heads"] == 2
        assert log["data"][-1] == {"rationales_file": str(rats), "train_with_rationales": 40}
        shares[lam] = cls_attention_on_rationales(root / "final", table, -1, 2)
    assert shares[10.0] > shares[0.0] + 0.2, shares


def test_attention_supervision_needs_a_rationale_file(base, table, tmp_path):
    recipe = {**RECIPE, "attention_supervision": {"lambda": 1.0, "layer": -1, "heads": 1, "temperature": 5.0}}
    with pytest.raises(ValueError, match="needs a rationales file"):
        train(base, table, tmp_path, recipe)


def test_heldout_multiclass_stage_scores_every_class_of_the_trained_model(base, table, tmp_path):
    """The stage ``heldout_multiclass_<model>_<dataset>`` on the tiny 3-class
    model: argmax classes of the test split, scored on all classes (the
    appendix-F figures), the profile's case cap drawing the same sample."""
    from hatecheck_pipeline.core.profile import Profile
    from hatecheck_pipeline.core.files import read_json
    from hatecheck_pipeline.evaluation import multiclass
    from hatecheck_pipeline.evaluation.metrics import Bootstrap

    train(base, table, tmp_path)
    profiles = {"test": {**PROFILE, "max_cases_per_suite": None}, "capped": {**PROFILE, "max_cases_per_suite": 12}}
    args = dict(
        model="HX",
        dataset="hatexplain",
        model_dir=tmp_path / "final",
        table=table,
        labels=LABELS,
        seed=3,
        prediction={"threads": 1, "batch_size": 8},
        amp=False,
        bootstrap=Bootstrap(50, 0),
    )
    multiclass.heldout_multiclass(out=tmp_path / "all.json", profile=Profile("test", profiles["test"]), **args)
    doc = read_json(tmp_path / "all.json")
    test_rows = pl.read_parquet(table).filter(pl.col("split") == "test")
    assert doc["n"] == test_rows.height == doc["cases_available"] and doc["complete"]
    assert doc["classes"] == LABELS["classes"] and doc["bootstrap"]["resampling_unit"] == "case"
    assert [sum(r) for r in doc["confusion"]["counts"]] == [doc["per_class"][c]["support"] for c in LABELS["classes"]]
    assert doc["micro_f1"]["value"] > 50  # the tiny model learnt the class words (chance: 33)
    multiclass.heldout_multiclass(out=tmp_path / "capped.json", profile=Profile("capped", profiles["capped"]), **args)
    capped = read_json(tmp_path / "capped.json")
    assert capped["n"] == 12 and not capped["complete"]
    with pytest.raises(Exception, match="not the recipe's"):
        multiclass.heldout_multiclass(
            out=tmp_path / "x.json",
            profile=Profile("test", profiles["test"]),
            **{**args, "labels": {**LABELS, "classes": ["normal", "offensive", "hatespeech"]}},
        )


# --------------------------------------------------------------------------
# HateXplain's 2-class bias model (toxic vs non-toxic, merged from label3)

TWO = {
    "column": "label3",
    "classes": ["non-toxic", "toxic"],
    "hateful": "toxic",
    "merge": {"toxic": ["hatespeech", "offensive"], "non-toxic": ["normal"]},
}


def test_two_class_labels_merge_the_three_classes():
    two = LabelSet.from_recipe({"labels": TWO})
    assert [two.encode(v) for v in ("hatespeech", "offensive", "normal")] == [1, 1, 0] and two.id2label == {0: "non-toxic", 1: "toxic"}
    with pytest.raises(ValueError, match="merge: every class"):
        LabelSet.from_recipe({"labels": {**TWO, "merge": {"toxic": ["hatespeech", "offensive"]}}})
    with pytest.raises(KeyError):
        two.encode("undecided")


def test_two_class_model_gives_p_toxic_of_every_test_post(base, table, tmp_path):
    """Same posts as the 3-class model (the cap is drawn before the merge);
    hatexplain_toxicity scores every test post with p(toxic)."""
    from hatecheck_pipeline.audits import two_class

    log = train(base, table, tmp_path, recipe={**RECIPE, "labels": TWO})
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["labels"] == {"0": "non-toxic", "1": "toxic"} and log["train_examples"] == 60
    out = tmp_path / "toxicity.parquet"
    msg = two_class.hatexplain_toxicity(
        "HX2", tmp_path / "final", tmp_path / "card.json", table, out, Profile("test", PROFILE), {"batch_size": 8}, threads=1
    )
    frame = pl.read_parquet(out).join(pl.read_parquet(table).select("id", "label3"), on="id")
    assert frame.height == 30 and msg.startswith("HX2: p(toxic) of 30 test posts")
    toxic = (frame["label3"] != "normal").to_numpy()
    assert frame["p_toxic"].to_numpy()[toxic].mean() > frame["p_toxic"].to_numpy()[~toxic].mean()
    train(base, table, tmp_path / "three")
    with pytest.raises(ValueError, match="predicts"):  # a 3-class model is not a bias model
        two_class.run(tmp_path / "three" / "final", table, tmp_path / "x.parquet", label="x", max_length=24, batch_size=8)
