"""LIME's forward selection without a scikit-learn fit per candidate
(audits/lime_selection.py) chooses LIME's features, in LIME's order."""

from __future__ import annotations

import numpy as np
import pytest
from lime.lime_base import LimeBase
from lime.lime_text import LimeTextExplainer

from hatecheck_pipeline.audits import explain, hatexplain, lime_selection


def lime_like(rng: np.random.Generator, words: int, samples: int):
    """Data as LimeTextExplainer draws it: row 0 the whole post, each other
    row drops a random number of random words; labels from a noisy linear
    model of a few words; LIME's cosine-distance kernel weights."""
    data = np.ones((samples, words))
    for row in range(1, samples):
        drop = rng.choice(words, size=rng.integers(1, words + 1), replace=False)
        data[row, drop] = 0
    coef = np.zeros(words)
    coef[rng.choice(words, size=min(3, words), replace=False)] = rng.normal(0, 0.3, size=min(3, words))
    labels = np.clip(0.4 + data @ coef / words + rng.normal(0, 0.05, samples), 0, 1)
    distances = 100 * (1 - data.sum(1) / np.sqrt(words * np.maximum(data.sum(1), 1)))
    weights = np.sqrt(np.exp(-(distances**2) / 25**2))
    return data, labels, weights


def own(data, labels, weights, k):
    return LimeBase(lambda d: d, random_state=333).forward_selection(data, labels, weights, k)


def test_the_same_features_in_the_same_order_as_limes_own_loop():
    rng = np.random.default_rng(0)
    clear = 0
    for trial in range(30):
        words = int(rng.integers(2, 25))
        data, labels, weights = lime_like(rng, words, int(rng.choice([20, 50])))
        chosen = lime_selection.greedy_selection(data, labels, weights, 6)
        theirs = own(data, labels, weights, 6).tolist()
        if chosen is not None:
            clear += 1
            assert chosen.tolist() == theirs, trial
        assert lime_selection.forward_selection(lambda *a: own(*a))(data, labels, weights, 6).tolist() == theirs
    assert clear >= 27  # LIME's own loop decides only the rare unclear rounds


@pytest.mark.parametrize(
    "case",
    ["constant labels", "duplicate columns", "a column never dropped", "perfect fit"],
)
def test_an_unclear_round_is_left_to_limes_own_loop(case):
    rng = np.random.default_rng(1)
    data, labels, weights = lime_like(rng, 10, 50)
    if case == "constant labels":
        labels = np.full_like(labels, 0.3)
    elif case == "duplicate columns":
        data[:, 4] = data[:, 2]
        labels = 0.2 + 0.5 * data[:, 2] + 0.01 * data[:, 7]
    elif case == "a column never dropped":
        data[:, 5] = 1
    else:
        labels = 0.2 + 0.5 * data[:, 3]
    assert lime_selection.greedy_selection(data, labels, weights, 6) is None
    calls = []

    def lime_own(*args):
        calls.append(1)
        return own(*args)

    assert lime_selection.forward_selection(lime_own)(data, labels, weights, 6).tolist() == own(data, labels, weights, 6).tolist()
    assert calls == [1]


def toy_proba(texts):
    """Class probabilities that depend on several words, with a small part
    no linear model of the words explains (so the rounds are decided)."""
    score = np.array(
        [
            0.1 + 0.5 * ("vermin" in t.split()) + 0.2 * ("go" in t.split()) + 0.1 * ("all" in t.split()) + 0.02 * (len(t) % 11) / 11
            for t in texts
        ]
    )
    return np.stack([score, np.full_like(score, 0.05), 0.95 - score], axis=1)


def test_lime_scores_equal_limes_own_explanation():
    posts = [
        ["they", "are", "all", "vermin", "and", "should", "go", "home", "now", "please"],
        "all of them go back where they came from the vermin of this land".split(),
    ]
    hate = hatexplain.CLASSES.index("hatespeech")
    ours = explain.lime_scores(toy_proba, posts, [hate, hate], num_samples=50)
    for post, scores in zip(posts, ours):
        exp = LimeTextExplainer(class_names=list(hatexplain.CLASSES), split_expression=r"\s+", random_state=333, bow=False)
        e = exp.explain_instance(" ".join(post), toy_proba, num_features=6, top_labels=3, num_samples=50)
        theirs = [0.0] * len(post)
        for i, w in e.as_map()[hate]:
            theirs[i] = float(w) if w > 0 else 0.0
        assert scores == theirs
