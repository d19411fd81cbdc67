"""Explanations of a fine-tuned 3-class transformer on HateXplain's test set.

The stage ``hatexplain_explain_<model>`` writes the two files the metrics
stage (:mod:`hatecheck_pipeline.audits.hatexplain`) reads for any
classifier: class probabilities for every test post, and per explained post
and method one score per HateXplain word token (``post_tokens``) with the
probabilities behind comprehensiveness and sufficiency.

Methods (``bias.hatexplain.explain.methods``):

- ``attention``: the last encoder layer's attention row of ``[CLS]``,
  averaged over heads (the paper's ``[Attn]``);
- ``lime``: LIME (the ``lime`` package, 0.2.0.1, ``LimeTextExplainer``) as
  the authors ran it (testing_with_lime.py): the post's words split on
  whitespace, ``bow=False`` (a removed word is replaced by ``UNKWORDZ``),
  ``num_features=6``, ``top_labels=3``, the explainer's ``random_state``
  seeded (333, theirs); a word's score is its LIME weight for the predicted
  class where positive, else 0 (the paper's ``[LIME]``);
- ``integrated_gradients``: captum's integrated gradients of the predicted
  class's probability with respect to the input embeddings (baseline: every
  non-special token replaced by the padding token), summed over the
  embedding dimensions (no row of the paper: an extra method).

Posts are tokenised word by word (``is_split_into_words``), so every
subword knows its word; a word's score is the sum of its subwords' scores,
and a word the tokenizer dropped or truncation cut gets the post's lowest
score (it can never be among the top-k). Faithfulness re-predicts each post
without its top-k words and with only them, in batches.

Attention explains every test post with a rationale (1,142 on the real test
set) in every profile: its scores come with the forward pass that predicts
the whole test set (one pass per post gives both), so the full post's
probabilities are those predictions. The profile's ``hatexplain_max_explain`` caps LIME (``num_samples``
re-predictions per post) and integrated gradients (a seeded sample, the same
posts for both); the card says how many posts each method explained.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl
import torch

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.audits import lime_selection, rationales
from hatecheck_pipeline.audits.hatexplain import CLASSES, paper_row, predictions_frame
from hatecheck_pipeline.core.files import write_parquet, write_text
from hatecheck_pipeline.models.runtime import collate, length_batches

METHODS = ("attention", "lime", "integrated_gradients")
METHOD_LABELS = {
    "attention": "attention (last layer, [CLS] row, mean over heads)",
    "lime": "LIME (lime 0.2.0.1 LimeTextExplainer, {samples} samples, whitespace words, bow=False, {features} features; positive weights "
    "of the predicted class)",
    "integrated_gradients": "integrated gradients (captum, input embeddings, padding baseline)",
}


def load_classifier(model_dir: str | Path):
    """A fine-tuned classifier in eval mode with eager attention (so it can
    return its attention weights), and its tokenizer."""
    from hatecheck_pipeline.models.base import load_tokenizer
    from hatecheck_pipeline.models.pooled import load_classifier as load_saved
    from hatecheck_pipeline.models.runtime import pick_device

    model = load_saved(model_dir, attn_implementation="eager")
    model.to(pick_device()).eval()
    return model, load_tokenizer(str(model_dir))


def class_order(config) -> list[int]:
    """Model output indices in ``CLASSES`` order."""
    label2id = {str(k): int(v) for k, v in config.label2id.items()}
    missing = [c for c in CLASSES if c not in label2id]
    if missing:
        raise ValueError(f"the model's labels {sorted(label2id)} lack the HateXplain classes {missing}")
    return [label2id[c] for c in CLASSES]


def encode_words(tokenizer, posts: Sequence[Sequence[str]], max_length: int) -> tuple[list[list[int]], list[list[int | None]]]:
    """Token ids (special tokens included, truncated) and each token's word
    index (None for special tokens) of word-tokenised posts."""
    ids, words = [], []
    for post in posts:
        enc = tokenizer(list(post), is_split_into_words=True, truncation=True, max_length=max_length)
        ids.append(enc["input_ids"])
        words.append(enc.word_ids())
    return ids, words


def to_words(sub: Sequence[float], word_ids: Sequence[int | None], n_words: int) -> list[float]:
    """Subword scores summed per word; words without a subword get the
    lowest score of the post.

    >>> to_words([0.5, 0.1, 0.2, 0.3, 0.0], [None, 0, 0, 2, None], 3)
    [0.30000000000000004, 0.3, 0.3]
    """
    out = np.zeros(n_words, dtype=np.float64)
    seen = np.zeros(n_words, dtype=bool)
    for j, w in enumerate(word_ids):
        if w is not None and j < len(sub):
            out[w] += float(sub[j])
            seen[w] = True
    if seen.any() and not seen.all():
        out[~seen] = out[seen].min()
    return out.tolist()


def predict_words(model, tokenizer, posts: Sequence[Sequence[str]], max_length: int, batch_size: int) -> np.ndarray:
    """Class probabilities (``CLASSES`` order) of word-tokenised posts."""
    from hatecheck_pipeline.models.runtime import forward_logits

    ids, _ = encode_words(tokenizer, posts, max_length)
    probs = torch.softmax(forward_logits(model, ids, tokenizer.pad_token_id, batch_size, amp=False), dim=-1).numpy()
    return probs[:, class_order(model.config)].astype(np.float64)


def attention_scores(model, ids: Sequence[Sequence[int]], pad_id: int, batch_size: int) -> list[np.ndarray]:
    """Per post: the last layer's [CLS] attention row averaged over heads
    (one value per token of ``ids``)."""
    return _forward_with_attention(model, ids, pad_id, batch_size)[1]


def predict_words_with_attention(
    model, tokenizer, posts: Sequence[Sequence[str]], max_length: int, batch_size: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """:func:`predict_words` and :func:`attention_scores` of the same posts
    from one forward pass each: class probabilities (``CLASSES`` order) and
    per post the last layer's [CLS] attention row averaged over heads."""
    ids, _ = encode_words(tokenizer, posts, max_length)
    logits, rows = _forward_with_attention(model, ids, tokenizer.pad_token_id, batch_size)
    probs = torch.softmax(logits, dim=-1).numpy()
    return probs[:, class_order(model.config)].astype(np.float64), rows


def _forward_with_attention(model, ids: Sequence[Sequence[int]], pad_id: int, batch_size: int) -> tuple[torch.Tensor, list[np.ndarray]]:
    """fp32 logits in the order of ``ids`` (the batches of
    :func:`~hatecheck_pipeline.models.runtime.forward_logits`) and each
    post's [CLS] attention row of the last layer, averaged over heads."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    logits = torch.empty((len(ids), model.config.num_labels), dtype=torch.float32)
    rows: list[np.ndarray] = [np.zeros(0)] * len(ids)
    with torch.inference_mode():
        for idx in length_batches(ids, batch_size):
            batch = collate([ids[i] for i in idx], pad_id, device)
            out = model(**batch, output_attentions=True)
            logits[torch.as_tensor(idx)] = out.logits.float().cpu()
            cls = out.attentions[-1][:, :, 0, :].mean(dim=1).float().cpu().numpy()  # (B, T): heads averaged
            for row, i in enumerate(idx):
                rows[i] = cls[row, : len(ids[i])]
    model.train(was_training)
    return logits, rows


@contextmanager
def frozen_parameters(model):
    """The model's parameters set not to require gradients, their flags
    restored on exit."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    try:
        for p, _ in flags:
            p.requires_grad_(False)
        yield model
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)


def integrated_gradients(
    model, ids: Sequence[Sequence[int]], targets: Sequence[int], pad_id: int, special: set[int], steps: int, batch_size: int
) -> list[np.ndarray]:
    """Per post: integrated gradients (captum) of the probability of class
    ``targets[i]`` (a model output index) on the input embeddings, summed
    over the embedding dimensions (one value per token of ``ids``).

    The parameters are frozen while captum attributes (:func:`frozen_parameters`):
    it asks autograd for the gradient on the embeddings only, but a
    backward pass through layers whose weights require gradients computes
    their weight gradients too. The attributions are the same, in less
    time (``benchmarks/records/bench_explain_frozen_2026-11-28.txt``, docs/performance.md)."""
    from captum.attr import LayerIntegratedGradients

    device = next(model.parameters()).device

    def forward(input_ids, attention_mask):
        return torch.softmax(model(input_ids=input_ids, attention_mask=attention_mask).logits, dim=-1)

    lig = LayerIntegratedGradients(forward, model.get_input_embeddings())
    out: list[np.ndarray] = [np.zeros(0)] * len(ids)
    per_batch = max(1, batch_size // 4)
    with frozen_parameters(model):
        for idx in length_batches(ids, per_batch):
            batch = collate([ids[i] for i in idx], pad_id, device)
            input_ids = batch["input_ids"]
            mask = batch.get("attention_mask", torch.ones_like(input_ids))
            keep = torch.zeros_like(input_ids, dtype=torch.bool)
            for tok in special:
                keep |= input_ids == tok
            baseline = torch.where(keep, input_ids, torch.full_like(input_ids, pad_id))
            attr = lig.attribute(
                input_ids,
                baselines=baseline,
                target=torch.as_tensor([targets[i] for i in idx], device=device),
                additional_forward_args=(mask,),
                n_steps=steps,
                internal_batch_size=len(idx) * steps,
            )
            scores = attr.sum(dim=-1).detach().float().cpu().numpy()
            for row, i in enumerate(idx):
                out[i] = scores[row, : len(ids[i])]
    return out


LIME_FEATURES = 6  # testing_with_lime.py: explain_instance(..., num_features=6, top_labels=3)
LIME_RANDOM_STATE = 333  # testing_with_lime.py: LimeTextExplainer(..., random_state=333)


def lime_scores(
    predict_proba,
    posts: Sequence[Sequence[str]],
    targets: Sequence[int],
    *,
    num_samples: int,
    num_features: int = LIME_FEATURES,
    random_state: int = LIME_RANDOM_STATE,
) -> list[list[float]]:
    """Per post: one LIME score per word for class ``targets[i]`` (an index
    of ``CLASSES``), as the authors mapped LIME to tokens
    (testing_with_lime.py): the post's words joined by spaces and split back
    on whitespace (``split_expression='\\s+'``, ``bow=False``: a feature is a
    word position, a removed word becomes ``UNKWORDZ``), ``num_features``
    weights per class (``top_labels`` = every class), a word's score its
    weight where positive, else 0. ``predict_proba``: texts -> class
    probabilities in ``CLASSES`` order. Each post gets its own explainer
    seeded with ``random_state``, so a post's scores do not depend on which
    posts were explained before it (the authors' one explainer drew every
    post's samples from one stream). LIME's forward selection of the
    features runs as :mod:`~hatecheck_pipeline.audits.lime_selection` (the
    same features, without a scikit-learn fit per candidate)."""
    from lime.lime_text import LimeTextExplainer

    out = []
    for tokens, target in zip(posts, targets):
        explainer = LimeTextExplainer(class_names=list(CLASSES), split_expression=r"\s+", random_state=random_state, bow=False)
        explainer.base.forward_selection = lime_selection.forward_selection(explainer.base.forward_selection)
        exp = explainer.explain_instance(
            " ".join(tokens), predict_proba, num_features=num_features, top_labels=len(CLASSES), num_samples=num_samples
        )
        n = exp.domain_mapper.indexed_string.num_words()
        if n != len(tokens):
            raise ValueError(f"LIME split a post of {len(tokens)} words into {n} (a word with whitespace, or an empty one)")
        scores = [0.0] * len(tokens)
        for i, w in exp.as_map()[int(target)]:
            if w > 0:
                scores[i] = float(w)
        out.append(scores)
    return out


def explain_posts(
    model,
    tokenizer,
    posts: Sequence[Sequence[str]],
    method: str,
    *,
    max_length: int,
    top_k: int,
    batch_size: int,
    ig_steps: int,
    full: np.ndarray | None = None,
    attention: Sequence[np.ndarray] | None = None,
    lime_samples: int = 100,
    lime_features: int = LIME_FEATURES,
    lime_random_state: int = LIME_RANDOM_STATE,
) -> list[dict[str, Any]]:
    """Word scores of one method for the class predicted on each post, and
    that class's probability on the full post, without its top-k words and
    with only them. ``full``: the posts' class probabilities when already
    predicted (the whole test set is), else predicted here; ``attention``:
    the posts' attention rows (:func:`attention_scores`) when they came with
    those predictions, else computed here. LIME's
    perturbed texts are split on whitespace back into words and predicted
    like the posts (``predict_words``)."""
    ids, words = encode_words(tokenizer, posts, max_length)
    full = predict_words(model, tokenizer, posts, max_length, batch_size) if full is None else np.asarray(full)
    pred = full.argmax(axis=1)
    order = class_order(model.config)
    if method == "attention":
        sub = list(attention) if attention is not None else attention_scores(model, ids, tokenizer.pad_token_id, batch_size)
    elif method == "integrated_gradients":
        special = set(tokenizer.all_special_ids) - {tokenizer.pad_token_id}
        sub = integrated_gradients(model, ids, [order[j] for j in pred], tokenizer.pad_token_id, special, ig_steps, batch_size)
    elif method != "lime":
        raise ValueError(f"unknown explanation method {method!r}: {', '.join(METHODS)}")
    if method == "lime":

        def predict(texts: Sequence[str]) -> np.ndarray:
            # a sample drawn twice is predicted once; the samples' lengths differ (each dropped word is
            # UNKWORDZ, 4 WordPiece tokens): batches of batch_size sorted by length pad least
            # (benchmarks/bench_explain_cost.py)
            unique, back = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
            probs = predict_words(model, tokenizer, [t.split() for t in unique], max_length, batch_size)
            return probs[back.reshape(-1)]

        scores = lime_scores(
            predict, posts, pred.tolist(), num_samples=lime_samples, num_features=lime_features, random_state=lime_random_state
        )
    else:
        scores = [to_words(s, w, len(p)) for s, w, p in zip(sub, words, posts)]
    tops = [rationales.top_k_mask(s, top_k) for s in scores]
    without = [[t for t, m in zip(p, top) if not m] for p, top in zip(posts, tops)]
    only = [[t for t, m in zip(p, top) if m] for p, top in zip(posts, tops)]
    p_without = predict_words(model, tokenizer, without, max_length, batch_size)
    p_only = predict_words(model, tokenizer, only, max_length, batch_size)
    rows = []
    for i, j in enumerate(pred):
        rows.append(
            {
                "pred3": CLASSES[j],
                "attributions": scores[i],
                "p_full": float(full[i, j]),
                "p_without_top": float(p_without[i, j]),
                "p_only_top": float(p_only[i, j]),
            }
        )
    return rows


CAPPED_METHODS = ("lime", "integrated_gradients")  # the methods the profile's hatexplain_max_explain caps


def method_cap(method: str, cap: int | None) -> int | None:
    """The cap on the posts ``method`` explains: attention (one forward pass
    per post, plus the batched faithfulness re-predictions) covers every
    post; LIME (``lime_samples`` re-predictions per post) and integrated
    gradients (``ig_steps`` forward and backward passes per post) the
    profile's seeded sample.

    >>> method_cap("attention", 50), method_cap("lime", 50), method_cap("integrated_gradients", 50)
    (None, 50, 50)
    """
    return cap if method in CAPPED_METHODS else None


def explained_posts(test: pl.DataFrame, cap: int | None, seed: int) -> pl.DataFrame:
    """The test posts explanations are scored on (gold hate speech or
    offensive, with at least one rationale), a seeded sample of ``cap``."""
    pool = test.filter((pl.col("label3") != "normal") & (pl.col("rationales").list.len() > 0)).sort("id")
    if cap is not None and pool.height > cap:
        pool = pool.sample(n=cap, seed=seed, shuffle=False).sort("id")
    return pool


def run(
    model_dir: Path,
    table: Path,
    out_predictions: Path,
    out_attributions: Path,
    out_card: Path,
    *,
    label: str,
    model_card: Mapping[str, Any],
    methods: Sequence[str],
    max_length: int,
    max_explain: int | None,
    top_k: int,
    ig_steps: int,
    batch_size: int,
    seed: int,
    lime_samples: int = 100,
    lime_features: int = LIME_FEATURES,
    lime_random_state: int = LIME_RANDOM_STATE,
    progress: bool = True,
) -> dict[str, Any]:
    """``lime_*``: LIME's ``num_samples`` (the authors' 100), ``num_features``
    and the explainer's ``random_state``."""
    from tqdm.auto import tqdm

    model, tokenizer = load_classifier(model_dir)
    test = pl.read_parquet(table).filter(pl.col("split") == "test").sort("id")
    # the attention rows come with the predictions of the whole test set: one forward pass per post
    probs, attention = predict_words_with_attention(model, tokenizer, test["post_tokens"].to_list(), max_length, batch_size)
    preds = predictions_frame(test["id"], probs, label)
    row_of = {pid: i for i, pid in enumerate(test["id"].to_list())}
    supervised = bool(model_card.get("attention_supervision"))
    rows: list[dict[str, Any]] = []
    explained: dict[str, int] = {}
    labels = {m: METHOD_LABELS[m].format(samples=lime_samples, features=lime_features) for m in methods}
    for method in methods:
        chosen = explained_posts(test, method_cap(method, max_explain), seed)
        posts = chosen["post_tokens"].to_list()
        rows_of_chosen = [row_of[pid] for pid in chosen["id"].to_list()]
        full = probs[rows_of_chosen]
        rows_attention = [attention[r] for r in rows_of_chosen]
        explained[method] = chosen.height
        # attention: chunks of several batches (its passes are cheap); LIME, integrated gradients: one batch at a time
        chunk = max(1, batch_size) * (1 if method in CAPPED_METHODS else 8)
        for start in tqdm(range(0, len(posts), chunk), desc=method, disable=not progress, mininterval=10):
            part = explain_posts(
                model,
                tokenizer,
                posts[start : start + chunk],
                method,
                max_length=max_length,
                top_k=top_k,
                batch_size=batch_size,
                ig_steps=ig_steps,
                full=full[start : start + chunk],
                attention=rows_attention[start : start + chunk] if method == "attention" else None,
                lime_samples=lime_samples,
                lime_features=lime_features,
                lime_random_state=lime_random_state,
            )
            for pid, row in zip(chosen["id"][start : start + chunk].to_list(), part):
                rows.append(
                    {
                        "id": pid,
                        **row,
                        "method": method,
                        "method_label": labels[method],
                        "top_k": top_k,
                        "paper_row": paper_row(method, supervised),
                        "model": label,
                    }
                )
    write_parquet(preds, out_predictions)
    schema = {
        "id": pl.String,
        "pred3": pl.String,
        "attributions": pl.List(pl.Float64),
        "p_full": pl.Float64,
        "p_without_top": pl.Float64,
        "p_only_top": pl.Float64,
        "method": pl.String,
        "method_label": pl.String,
        "top_k": pl.Int64,
        "paper_row": pl.String,
        "model": pl.String,
    }
    write_parquet(pl.DataFrame(rows, schema=schema), out_attributions)
    base = model_card.get("base_model") or {}
    card = {
        "model": label,
        "base_model": base,
        "profile": model_card.get("profile"),
        "budget_note": model_card.get("budget_note"),
        "test_posts": test.height,
        "explained_posts": explained,  # per method
        "explained_posts_available": explained_posts(test, None, seed).height,
        "max_explain": max_explain,
        "max_explain_applies_to": [m for m in methods if m in CAPPED_METHODS],
        "methods": labels,
        "ig_steps": ig_steps,
        **(
            {
                "lime": {
                    "package": "lime==0.2.0.1",
                    "num_samples": lime_samples,
                    "num_features": lime_features,
                    "random_state": lime_random_state,
                    "split_expression": "\\s+",
                    "bow": False,
                }
            }
            if "lime" in methods
            else {}
        ),
        "top_k": top_k,
        "max_length": max_length,
        "seed": seed,
        "attention_supervision": model_card.get("attention_supervision"),
    }
    write_text(json.dumps(card, indent=2) + "\n", out_card)
    return card


def describe(model: str, model_card: Mapping[str, Any]) -> str:
    """The classifier's label in every output: the model name and the base
    model that really ran (a stand-in says so)."""
    base = model_card.get("base_model") or {}
    ref = str(base.get("ref", "?"))
    desc = str(base.get("description") or ref)
    return f"{model} ({desc.split(' (')[0]}{', stand-in for BERT-base' if base.get('stand_in') else ''})"


def hatexplain_explain(
    model: str,
    model_dir: Path,
    model_card: Path,
    table: Path,
    predictions: Path,
    attributions: Path,
    card: Path,
    profile: Profile,
    explain: Mapping[str, Any],
    top_k: int,
    seed: int,
    threads: int,
) -> str:
    """Stage ``hatexplain_explain_<model>``: a fine-tuned 3-class model's
    HateXplain test predictions, and its attention / LIME /
    integrated-gradients explanations of (a seeded sample,
    ``profiles.<p>.hatexplain_max_explain``, of, for LIME and integrated
    gradients) the test posts with rationales, with faithfulness
    re-predictions. LIME draws ``profiles.<p>.hatexplain_lime_samples``
    perturbed texts per post, where set, else the authors' number
    (``bias.hatexplain.explain.lime.num_samples``)."""
    from hatecheck_pipeline.core.cpu import bounded_threads

    torch.set_num_threads(bounded_threads(threads))
    trained = json.loads(Path(model_card).read_text("utf-8"))
    c = run(
        Path(model_dir),
        Path(table),
        Path(predictions),
        Path(attributions),
        Path(card),
        label=describe(model, trained),
        model_card=trained,
        methods=list(explain["methods"]),
        max_length=profile["max_length"],
        max_explain=profile.get("hatexplain_max_explain"),
        top_k=top_k,
        ig_steps=explain["ig_steps"],
        batch_size=explain["batch_size"],
        seed=seed,
        lime_samples=profile.get("hatexplain_lime_samples") or explain["lime"]["num_samples"],
        lime_features=explain["lime"]["num_features"],
        lime_random_state=explain["lime"]["random_state"],
    )
    per_method = ", ".join(f"{m} {n}" for m, n in c["explained_posts"].items())
    return f"{c['model']}: {c['test_posts']} test posts predicted; posts explained of {c['explained_posts_available']}: {per_method}"
