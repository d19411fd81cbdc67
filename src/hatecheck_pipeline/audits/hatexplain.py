"""HateXplain audit (Mathew et al. 2021): 3-class performance, bias AUCs per
target community and explainability against the human rationales.

The metrics stage consumes two files any classifier can produce:

- predictions (one row per test post): ``id``, ``p_hatespeech``,
  ``p_offensive``, ``p_normal``, ``p_toxic`` (= P(hate) + P(offensive)),
  ``pred3``;
- attributions (one row per test post): ``id``, ``attributions`` (one
  score per HateXplain ``post_tokens`` token, for the predicted class),
  ``p_full`` (probability of the predicted class), ``p_without_top``
  (same class, top-k tokens removed), ``p_only_top`` (same class, only the
  top-k tokens kept), ``method``; optionally ``paper_row`` (the row of the
  paper's Table 6 for the same kind of model and method, e.g.
  ``BERT [Attn]``). A file may hold several methods: each is scored on
  its own.

Producers: the transformer the pipeline fine-tunes
(:mod:`hatecheck_pipeline.audits.explain`, attention, LIME and integrated
gradients), and a cheap baseline here: TF-IDF + logistic regression
(scikit-learn) trained on the official train split, with
leave-one-token-out occlusion attributions, labelled as such in every
output (not the paper's BERT).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from hatecheck_pipeline.audits import bias_auc, rationales
from hatecheck_pipeline.core.files import write_csv, write_parquet, write_text

CLASSES = ["hatespeech", "offensive", "normal"]
STANDIN = "tfidf-lr-standin"  # the label of the built-in producer (bias.hatexplain.classifiers)

# The row of the paper's Table 6 (resources/published.yaml: hatexplain_t6)
# an explanation method is compared with: attention -> [Attn], LIME ->
# [LIME]. The paper has no integrated-gradients or occlusion row: those
# methods are extra rows, compared with none.
PAPER_METHOD = {"attention": "Attn", "lime": "LIME"}


def paper_row(method: str, supervised: bool = False) -> str | None:
    """``BERT [Attn]`` etc.: the paper's row for a BERT-like model (with
    attention supervision: BERT-HateXplain) explained by ``method``; None
    for a method the paper did not run.

    >>> paper_row("attention"), paper_row("lime", supervised=True), paper_row("integrated_gradients")
    ('BERT [Attn]', 'BERT-HateXplain [LIME]', None)
    """
    if method not in PAPER_METHOD:
        return None
    return f"{'BERT-HateXplain' if supervised else 'BERT'} [{PAPER_METHOD[method]}]"


# --------------------------------------------------------------------------
# Stand-in classifier (TF-IDF + logistic regression)


def _join(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


def predictions_frame(ids: pl.Series, probs: np.ndarray, label: str) -> pl.DataFrame:
    """Test predictions in the layout the metrics stage reads: class
    probabilities (columns in ``CLASSES`` order), p_toxic, the argmax class."""
    return pl.DataFrame(
        {
            "id": ids,
            "p_hatespeech": probs[:, 0],
            "p_offensive": probs[:, 1],
            "p_normal": probs[:, 2],
            "p_toxic": probs[:, 0] + probs[:, 1],
            "pred3": [CLASSES[i] for i in probs.argmax(axis=1)],
            "model": label,
        }
    )


def train_standin(train: pl.DataFrame, seed: int, c: float, max_features: int):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(
        TfidfVectorizer(lowercase=True, ngram_range=(1, 2), min_df=2, max_features=max_features, token_pattern=r"\S+", sublinear_tf=True),
        LogisticRegression(C=c, max_iter=2000, random_state=seed),
    )
    model.fit([_join(t) for t in train["post_tokens"].to_list()], train["label3"].to_list())
    return model


def _proba(model, texts: list[str]) -> np.ndarray:
    """Class probabilities in CLASSES order."""
    order = [list(model.classes_).index(c) for c in CLASSES]
    return model.predict_proba(texts)[:, order]


def occlusion(model, tokens: Sequence[str], k: int) -> dict[str, Any]:
    """Leave-one-token-out attributions for the predicted class, and the
    class probability without / with only the top-k tokens."""
    tokens = list(tokens)
    variants = [_join(tokens)] + [_join(tokens[:i] + tokens[i + 1 :]) for i in range(len(tokens))]
    probs = _proba(model, variants)
    j = int(np.argmax(probs[0]))
    attributions = (probs[0, j] - probs[1:, j]).tolist()
    top = rationales.top_k_mask(attributions, k)
    rest = _join([t for t, m in zip(tokens, top) if not m])
    only = _join([t for t, m in zip(tokens, top) if m])
    p_rest, p_only = _proba(model, [rest, only])[:, j]
    return {
        "pred3": CLASSES[j],
        "attributions": attributions,
        "p_full": float(probs[0, j]),
        "p_without_top": float(p_rest),
        "p_only_top": float(p_only),
    }


def run_standin(
    table: Path, out_predictions: Path, out_attributions: Path, out_card: Path, seed: int, c: float, max_features: int, k: int
) -> dict[str, Any]:
    import sklearn.linear_model  # noqa: F401 - its OpenMP and BLAS libraries loaded before they are limited
    from threadpoolctl import threadpool_limits
    from tqdm import tqdm

    data = pl.read_parquet(table)
    train = data.filter(pl.col("split") == "train")
    test = data.filter(pl.col("split") == "test")
    label = STANDIN
    rows = []
    # One OpenMP / BLAS thread: scikit-learn's logistic loss sums over the posts in as many
    # threads as OpenMP has (Snakemake sets OMP_NUM_THREADS to a rule's threads, DVC leaves it
    # unset), and another summation order fits other weights; pinned, every runner fits the same.
    with threadpool_limits(limits=1):
        model = train_standin(train, seed, c, max_features)
        texts = [_join(t) for t in test["post_tokens"].to_list()]
        probs = _proba(model, texts)
        preds = predictions_frame(test["id"], probs, label)
        for pid, tokens in tqdm(list(zip(test["id"].to_list(), test["post_tokens"].to_list())), desc="occlusion", mininterval=10):
            rows.append(
                {
                    "id": pid,
                    **occlusion(model, tokens, k),
                    "method": "occlusion",
                    "method_label": "occlusion (leave-one-token-out)",
                    "top_k": k,
                    "paper_row": paper_row("occlusion"),
                    "model": label,
                }
            )
    write_parquet(preds, out_predictions)
    write_parquet(pl.DataFrame(rows).with_columns(pl.col("paper_row").cast(pl.String)), out_attributions)
    card = {
        "model": label,
        "description": "Stand-in 3-class classifier: TF-IDF (word 1-2 grams) + multinomial logistic regression (scikit-learn), "
        "trained on the HateXplain official train split. NOT the paper's BERT; used so the audit metrics run offline.",
        "train_posts": train.height,
        "test_posts": test.height,
        "seed": seed,
        "C": c,
        "max_features": max_features,
        "attribution": "occlusion: drop in the predicted-class probability when one post token is removed",
    }
    write_text(json.dumps(card, indent=2) + "\n", out_card)
    return card


def hatexplain_standin(
    table: Path, predictions: Path, attributions: Path, card: Path, standin: Mapping[str, Any], top_k: int, seed: int
) -> str:
    """Stage ``hatexplain_standin``: train the TF-IDF + LR stand-in on the
    HateXplain train split; its test predictions and occlusion attributions."""
    c = run_standin(table, predictions, attributions, card, seed, standin["C"], standin["max_features"], top_k)
    return f"{c['model']}: trained on {c['train_posts']} posts, scored {c['test_posts']}"


# --------------------------------------------------------------------------
# Metrics


def performance(gold3: Sequence[str], preds: pl.DataFrame) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    ordered = sorted(CLASSES)  # scikit-learn wants the labels sorted
    probs = preds.select([f"p_{c}" for c in ordered]).to_numpy()
    probs = probs / probs.sum(axis=1, keepdims=True)
    return {
        "accuracy": float(accuracy_score(gold3, preds["pred3"])),
        "macro_f1": float(f1_score(gold3, preds["pred3"], average="macro", labels=CLASSES)),
        "auroc": float(roc_auc_score(gold3, probs, multi_class="ovr", average="macro", labels=ordered)),
    }


def explainability(test: pl.DataFrame, attr: pl.DataFrame, k: int, iou_threshold: float, combine: str) -> dict[str, Any]:
    """Plausibility and faithfulness of one method's attributions on the
    test posts whose gold class is not normal and that have a rationale."""
    ex = test.filter(pl.col("label3") != "normal").join(attr, on="id", how="inner")
    gold = [rationales.gold_rationale(r, combine) for r in ex["rationales"].to_list()]
    soft = ex["attributions"].to_list()
    for pid, g, s, t in zip(ex["id"], gold, soft, ex["post_tokens"]):
        if len(s) != len(t) or len(g) != len(t):
            raise ValueError(f"post {pid}: {len(t)} tokens, {len(s)} attributions, {len(g)} rationale marks")
    keep = [i for i, g in enumerate(gold) if sum(g) > 0]
    # every post the method could have explained: gold class not normal, with a (combined) rationale
    pool = test.filter(pl.col("label3") != "normal")["rationales"].to_list()
    available = sum(1 for r in pool if sum(rationales.gold_rationale(r, combine)) > 0)
    plaus = rationales.explainability([gold[i] for i in keep], [soft[i] for i in keep], k, iou_threshold)
    faith = rationales.faithfulness(*(ex[c].to_numpy()[keep] for c in ("p_full", "p_without_top", "p_only_top")))
    method = str(attr["method"][0]) if attr.height else None
    first = attr.row(0, named=True) if attr.height else {}
    return {
        "method": method,
        "method_label": first.get("method_label") or method,
        "paper_row": first.get("paper_row") or (paper_row(method) if method in PAPER_METHOD else None),
        "top_k": k,
        "iou_threshold": iou_threshold,
        "gold_rationale": combine,
        **plaus,  # n_posts: the posts plausibility AND faithfulness are averaged over
        **faith,
        "n_posts_available": available,
    }


def run_metrics(
    table: Path,
    predictions: Path,
    attributions: Path,
    out_json: Path,
    out_csv: Path,
    communities: list[str],
    power: float,
    k: int,
    iou_threshold: float,
    combine: str,
    label: str,
    two_class: Path | None = None,
) -> dict[str, Any]:
    """``two_class``: a 2-class (toxic vs non-toxic) model's test predictions
    (``id``, ``p_toxic``, ``model``): the bias figures then come from it, as
    in the paper, and the 3-class model's 1 - p(normal) figures are kept as
    ``bias_3class``; without it they are the only bias figures."""
    test = pl.read_parquet(table).filter(pl.col("split") == "test").select("id", "label3", "targets", "rationales", "post_tokens")
    preds = pl.read_parquet(predictions)
    joined = test.join(preds, on="id", how="inner")
    if joined.height != test.height:
        raise ValueError(f"{predictions}: covers {joined.height} of {test.height} test posts")
    perf = performance(joined["label3"].to_list(), joined)
    y = (joined["label3"] != "normal").cast(pl.Int8).to_numpy()
    rows3 = bias_auc.bias_table(y, joined["p_toxic"].to_numpy(), joined["targets"].to_list(), communities)
    bias3 = {
        "score": "1 - p(normal) of this 3-class model (p_hatespeech + p_offensive)",
        "positive": "hatespeech or offensive",
        "classes": 3,
        "communities": rows3,
        **bias_auc.gmb(rows3, power),
    }
    bias, rows = bias3, rows3
    if two_class is not None:
        two = pl.read_parquet(two_class).select("id", "p_toxic", "model")
        both = test.join(two, on="id", how="inner")
        if both.height != test.height:
            raise ValueError(f"{two_class}: covers {both.height} of {test.height} test posts")
        rows = bias_auc.bias_table(
            (both["label3"] != "normal").cast(pl.Int8).to_numpy(), both["p_toxic"].to_numpy(), both["targets"].to_list(), communities
        )
        bias = {
            "score": "p(toxic) of the 2-class model (the paper's protocol: testing_for_bias.py, num_classes = 2)",
            "positive": "hatespeech or offensive",
            "classes": 2,
            "model": str(two["model"][0]) if two.height else None,
            "source": str(two_class),
            "communities": rows,
            **bias_auc.gmb(rows, power),
        }
    # explainability, per method: test posts whose gold class is not normal (they carry rationales)
    attr = pl.read_parquet(attributions)
    methods = attr["method"].unique(maintain_order=True).to_list()
    explained = [explainability(test, attr.filter(pl.col("method") == m), k, iou_threshold, combine) for m in methods]
    result = {
        "model": str(preds["model"][0]) if "model" in preds.columns and preds.height else label,
        "classifier": label,
        "n_test": joined.height,
        "performance": perf,
        "bias": bias,
        **({"bias_3class": bias3} if two_class is not None else {}),
        "explainability": explained,
    }
    write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", out_json)
    write_csv(pl.DataFrame(rows).with_columns(model=pl.lit(label), classes=pl.lit(bias["classes"])), out_csv)
    return result


def hatexplain_metrics(
    classifier: str,
    table: Path,
    predictions: Path,
    attributions: Path,
    metrics: Path,
    communities_csv: Path,
    communities: list[str],
    power: float,
    top_k: int,
    iou_threshold: float,
    gold_rationale: str,
    two_class: Path | None = None,
) -> str:
    """Stage ``hatexplain_metrics_<classifier>``: performance, bias AUCs per
    community, plausibility and faithfulness of one classifier's files;
    ``two_class``: the paired 2-class model's p(toxic), the source of the
    paper's bias columns."""
    r = run_metrics(
        table,
        predictions,
        attributions,
        metrics,
        communities_csv,
        communities,
        power,
        top_k,
        iou_threshold,
        gold_rationale,
        classifier,
        two_class,
    )
    b = r["bias"]
    token_f1 = ", ".join(f"token F1 [{e['method']}] {e['token_f1']:.3f}" for e in r["explainability"])
    return (
        f"{classifier}: macro F1 {r['performance']['macro_f1']:.3f}, GMB-Sub {b['gmb_subgroup']:.3f} ({b['classes']}-class), "
        f"BPSN {b['gmb_bpsn']:.3f}, BNSP {b['gmb_bnsp']:.3f}, {token_f1}"
    )
