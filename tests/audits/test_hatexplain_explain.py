"""HateXplain explanations of a fine-tuned 3-class transformer (attention,
LIME and integrated gradients) and their metrics, on a tiny RANDOMLY INITIALISED BERT
(2 layers, hidden 32) fine-tuned briefly on a synthetic HateXplain-like
table. Test values only."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import torch
from models_helpers import hatexplain_table, tiny_bert

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.audits import explain, hatexplain
from hatecheck_pipeline.models import train as training

torch.set_num_threads(1)

RECIPE = {
    "labels": {"column": "label3", "classes": ["hatespeech", "offensive", "normal"], "hateful": "hatespeech"},
    "class_weights": "none", "lr": 3e-3, "weight_decay": 0.0, "dropout": 0.0, "batch_size": 8, "epochs": 2,
    "warmup_ratio": 0.0, "early_stopping": None, "keep_best": False, "select_on": "dev_macro_f1", "grid_search": False,
}  # fmt: skip
MAX_LENGTH = 24


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("hx-model")
    table = hatexplain_table(root / "hatexplain.parquet")
    training.run(
        "hatexplain",
        str(tiny_bert(root / "base")),
        [table],
        RECIPE,
        Profile("test", {"max_length": MAX_LENGTH}),
        3,
        root / "final",
        root / "ckpt",
        root / "log.json",
        root / "card.json",
        threads=1,
        progress=False,
    )
    return root / "final", root / "card.json", table


def test_subword_scores_sum_per_word_and_unseen_words_rank_last():
    assert explain.to_words([9.0, 0.2, 0.3, 0.5, 9.0], [None, 0, 0, 1, None], 4) == pytest.approx([0.5, 0.5, 0.5, 0.5])
    scores = explain.to_words([0.0, 0.4, -0.2, 0.0], [None, 0, 1, None], 3)  # word 2 cut by truncation
    assert scores == pytest.approx([0.4, -0.2, -0.2])
    from hatecheck_pipeline.audits.rationales import top_k_mask

    assert top_k_mask(scores, 2) == [1, 1, 0]  # the unseen word loses the tie (position)


def toy_proba(texts):
    """A classifier that reads one word: hate speech when 'vermin' is in the
    text, else normal (class probabilities in CLASSES order)."""
    hate = np.array([0.9 if "vermin" in t.split() else 0.1 for t in texts])
    return np.stack([hate, np.full_like(hate, 0.05), 0.95 - hate], axis=1)


def test_lime_gives_the_one_word_a_classifier_reads_the_top_weight_and_the_rationale():
    from hatecheck_pipeline.audits.rationales import explainability, top_k_mask

    post = ["they", "are", "all", "vermin", "and", "should", "go", "home"]
    hate = hatexplain.CLASSES.index("hatespeech")
    (scores,) = explain.lime_scores(toy_proba, [post], [hate], num_samples=200)
    assert len(scores) == len(post) and int(np.argmax(scores)) == 3 and scores[3] > 0.5
    assert all(v >= 0 for v in scores)  # the authors keep positive weights only; the rest score 0
    assert sum(v > 0 for v in scores) <= explain.LIME_FEATURES
    assert top_k_mask(scores, 1) == [0, 0, 0, 1, 0, 0, 0, 0]
    gold = [[0, 0, 0, 1, 0, 0, 0, 0]]
    assert explainability(gold, [scores], 1)["token_f1"] == 1.0
    # seeded: the same scores again, whatever was explained before
    explain.lime_scores(toy_proba, [["vermin", "go"]], [hate], num_samples=50)
    assert explain.lime_scores(toy_proba, [post], [hate], num_samples=200) == [scores]
    # explained for the normal class the word weighs against it: no positive weight to keep
    (normal,) = explain.lime_scores(toy_proba, [post], [hatexplain.CLASSES.index("normal")], num_samples=200)
    assert normal[3] == 0.0


def test_lime_explains_a_transformer_through_its_predictions(trained):
    model_dir, _, table = trained
    model, tok = explain.load_classifier(model_dir)
    test = pl.read_parquet(table).filter(pl.col("split") == "test").sort("id")
    posts = explain.explained_posts(test, 3, 0)["post_tokens"].to_list()
    rows = explain.explain_posts(model, tok, posts, "lime", max_length=MAX_LENGTH, top_k=2, batch_size=4, ig_steps=4, lime_samples=30)
    again = explain.explain_posts(model, tok, posts, "lime", max_length=MAX_LENGTH, top_k=2, batch_size=4, ig_steps=4, lime_samples=30)
    assert rows == again  # seeded
    full = explain.predict_words(model, tok, posts, MAX_LENGTH, 4)
    for post, row, p in zip(posts, rows, full):
        assert len(row["attributions"]) == len(post) and min(row["attributions"]) >= 0
        assert row["pred3"] == hatexplain.CLASSES[int(p.argmax())] and row["p_full"] == pytest.approx(float(p.max()), abs=1e-6)


def test_one_pass_gives_the_predictions_and_the_attention_rows_of_two(trained):
    """The explanation stage predicts the whole test set and takes the
    attention rows from the same forward passes: the probabilities are
    predict_words' (the same batches), the rows attention_scores' of the
    posts on their own."""
    model_dir, _, table = trained
    model, tok = explain.load_classifier(model_dir)
    posts = pl.read_parquet(table).filter(pl.col("split") == "test").sort("id")["post_tokens"].to_list()
    probs, rows = explain.predict_words_with_attention(model, tok, posts, MAX_LENGTH, 4)
    assert np.array_equal(probs, explain.predict_words(model, tok, posts, MAX_LENGTH, 4))
    alone = explain.attention_scores(model, explain.encode_words(tok, posts[:5], MAX_LENGTH)[0], tok.pad_token_id, 2)
    assert len(rows) == len(posts) and all(len(r) == len(a) for r, a in zip(rows, alone))
    for r, a in zip(rows, alone):
        np.testing.assert_allclose(r, a, rtol=1e-5, atol=1e-6)
        assert r.sum() == pytest.approx(1.0, abs=1e-4)  # a softmax row, padding left out


def test_integrated_gradients_are_complete(trained):
    """Integrated gradients' completeness: the attributions of a post sum to
    p(x) - p(baseline) for the explained class (captum, 200 steps)."""
    model_dir, _, table = trained
    model, tok = explain.load_classifier(model_dir)
    post = pl.read_parquet(table).filter(pl.col("split") == "test")["post_tokens"][0].to_list()
    ids, _ = explain.encode_words(tok, [post], MAX_LENGTH)
    special = set(tok.all_special_ids) - {tok.pad_token_id}
    attr = explain.integrated_gradients(model, ids, [0], tok.pad_token_id, special, steps=200, batch_size=4)[0]
    x = torch.tensor(ids)
    base = torch.where(torch.isin(x, torch.tensor(sorted(special))), x, torch.full_like(x, tok.pad_token_id))
    with torch.no_grad():
        device = next(model.parameters()).device  # the audit's own device (CUDA where there is one)
        p = [torch.softmax(model(input_ids=t.to(device)).logits, -1)[0, 0].item() for t in (x, base)]
    assert attr.sum() == pytest.approx(p[0] - p[1], abs=2e-3)
    assert len(attr) == len(ids[0])


def test_integrated_gradients_run_with_the_parameters_frozen_and_give_the_same_attributions(trained, monkeypatch):
    """Captum's backward passes skip the weight gradients (the parameters
    are frozen while it runs), the caller's flags come back, and the
    attributions are those of the model as loaded."""
    import contextlib

    model_dir, _, table = trained
    model, tok = explain.load_classifier(model_dir)
    post = pl.read_parquet(table).filter(pl.col("split") == "test")["post_tokens"][0].to_list()
    ids, _ = explain.encode_words(tok, [post], MAX_LENGTH)
    special = set(tok.all_special_ids) - {tok.pad_token_id}
    model.classifier.weight.requires_grad_(True)
    model.get_input_embeddings().weight.requires_grad_(False)  # a caller's own choice, restored as it was
    seen: list[bool] = []
    hook = model.register_forward_hook(lambda m, a, o: seen.append(any(p.requires_grad for p in m.parameters())))
    frozen = explain.integrated_gradients(model, ids, [0], tok.pad_token_id, special, steps=16, batch_size=4)[0]
    assert seen and not any(seen)
    assert model.classifier.weight.requires_grad and not model.get_input_embeddings().weight.requires_grad
    seen.clear()
    monkeypatch.setattr(explain, "frozen_parameters", lambda m: contextlib.nullcontext(m))
    as_loaded = explain.integrated_gradients(model, ids, [0], tok.pad_token_id, special, steps=16, batch_size=4)[0]
    hook.remove()
    assert any(seen)  # the reference ran with the parameters requiring gradients
    assert np.allclose(frozen, as_loaded, atol=1e-6)


def test_explain_run_writes_the_layout_the_metrics_stage_reads(trained, tmp_path):
    model_dir, card_path, table = trained
    out = {k: tmp_path / f"{k}.parquet" for k in ("pred", "attr")}
    card = explain.run(
        model_dir,
        table,
        out["pred"],
        out["attr"],
        tmp_path / "card.json",
        label="tiny (test)",
        model_card=json.loads(card_path.read_text()),
        methods=["attention", "lime", "integrated_gradients"],
        max_length=MAX_LENGTH,
        max_explain=8,
        top_k=2,
        ig_steps=8,
        batch_size=4,
        seed=0,
        lime_samples=20,
        progress=False,
    )
    test = pl.read_parquet(table).filter(pl.col("split") == "test").sort("id")
    preds = pl.read_parquet(out["pred"])
    assert preds["id"].to_list() == test["id"].to_list()  # every test post predicted
    probs = preds.select("p_hatespeech", "p_offensive", "p_normal").to_numpy()
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    assert np.allclose(preds["p_toxic"].to_numpy(), probs[:, 0] + probs[:, 1])
    assert preds["pred3"].to_list() == [hatexplain.CLASSES[i] for i in probs.argmax(axis=1)]
    attr = pl.read_parquet(out["attr"])
    # the cap (8) applies to LIME and integrated gradients; attention explains every post with a rationale
    assert card["explained_posts"] == {"attention": 20, "lime": 8, "integrated_gradients": 8}
    assert card["explained_posts_available"] == 20  # 30 test posts, 2/3 not normal
    assert card["max_explain_applies_to"] == ["lime", "integrated_gradients"]
    assert card["lime"]["num_samples"] == 20 and card["lime"]["random_state"] == 333 and "20 samples" in card["methods"]["lime"]
    assert attr.group_by("method").len().sort("method").rows() == [("attention", 20), ("integrated_gradients", 8), ("lime", 8)]
    ig_ids = set(attr.filter(pl.col("method") == "integrated_gradients")["id"])
    assert ig_ids == set(explain.explained_posts(test, 8, 0)["id"])  # the seeded sample, as before
    assert set(attr.filter(pl.col("method") == "lime")["id"]) == ig_ids  # the same posts
    # LIME is the paper's [LIME]; integrated gradients has no row of the paper
    assert dict(attr.select("method", "paper_row").unique().rows()) == {
        "attention": "BERT [Attn]",
        "lime": "BERT [LIME]",
        "integrated_gradients": None,
    }
    joined = attr.join(test.select("id", "post_tokens", "label3"), on="id")
    assert (joined["label3"] != "normal").all()
    assert all(len(a) == len(t) for a, t in zip(joined["attributions"].to_list(), joined["post_tokens"].to_list()))
    att = joined.filter(pl.col("method") == "attention")
    assert all(0 <= v <= 1 for a in att["attributions"].to_list() for v in a)
    # p_full is the full post's probability of the predicted class; p_without_top re-predicts the post without its top-2 words
    row = att.row(0, named=True)
    full = preds.filter(pl.col("id") == row["id"]).row(0, named=True)
    assert row["p_full"] == full[f"p_{row['pred3']}"]  # the test-set prediction itself, not predicted again
    from hatecheck_pipeline.audits.rationales import top_k_mask

    model, tok = explain.load_classifier(model_dir)
    kept = [t for t, m in zip(row["post_tokens"], top_k_mask(row["attributions"], 2)) if not m]
    again = explain.predict_words(model, tok, [kept], MAX_LENGTH, 4)[0, hatexplain.CLASSES.index(row["pred3"])]
    assert row["p_without_top"] == pytest.approx(again, abs=1e-6)

    # the metrics stage scores each method on its own, against the paper's row for it
    m = hatexplain.run_metrics(
        table,
        out["pred"],
        out["attr"],
        tmp_path / "m.json",
        tmp_path / "c.csv",
        ["Women", "Refugee", "Islam"],
        -5,
        2,
        0.5,
        "union",
        "hatexplain",
    )
    assert [(e["method"], e["paper_row"], e["n_posts"], e["n_posts_available"]) for e in m["explainability"]] == [
        ("attention", "BERT [Attn]", 20, 20),
        ("lime", "BERT [LIME]", 8, 20),
        ("integrated_gradients", None, 8, 20),
    ]
    assert m["model"] == "tiny (test)" and m["n_test"] == 30
    for e in m["explainability"]:
        assert 0 <= e["token_f1"] <= 1 and 0 <= e["auprc"] <= 1 and -1 <= e["comprehensiveness"] <= 1


def test_explain_stage_function_caps_the_explained_posts_by_profile(trained, tmp_path):
    from hatecheck_pipeline.core.stage import Stage, call, out, profile_params

    model_dir, card_path, table = trained
    params = {
        "profile": "t",
        "profiles": {"t": {"base_models": {}, "max_length": MAX_LENGTH, "hatexplain_max_explain": 3, "hatexplain_lime_samples": 12}},
        "bias": {
            "seed": 1,
            "threads": 1,
            "hatexplain": {
                "top_k": 2,
                "explain": {
                    "methods": ["attention", "lime"],
                    "ig_steps": 4,
                    "batch_size": 4,
                    "lime": {"num_samples": 10, "num_features": 6, "random_state": 333},
                },
            },
        },
    }
    files = {k: str(tmp_path / f"{k}.parquet") for k in ("predictions", "attributions")}
    stage = Stage(
        "hatexplain_explain_hx",
        "audits",
        "hatecheck_pipeline.audits.explain:hatexplain_explain",
        inputs={"model_dir": str(model_dir), "model_card": str(card_path), "table": str(table)},
        outputs={**{k: out(v) for k, v in files.items()}, "card": out(str(tmp_path / "card.json"))},
        params={
            **profile_params(params, ["max_length", "hatexplain_max_explain", "hatexplain_lime_samples"]),
            "explain": "bias.hatexplain.explain",
            "top_k": "bias.hatexplain.top_k",
            "seed": "bias.seed",
            "threads": "bias.threads",
        },
        args={"model": "hx"},
    )
    summary = call(stage, params)
    assert (
        "30 test posts predicted; posts explained of 20: attention 20, lime 3" in summary
    )  # the cap (3) is for LIME (and integrated gradients)
    assert pl.read_parquet(files["attributions"]).height == 23
    assert json.loads((tmp_path / "card.json").read_text())["lime"]["num_samples"] == 12  # the profile's, over bias.hatexplain.explain.lime
