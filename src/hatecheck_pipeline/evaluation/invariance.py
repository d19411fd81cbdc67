"""Invariance and directional expectations on a perturbed suite (the INV
and DIR tests of CheckList, Ribeiro et al. 2020): each perturbed case is
paired with the case it was perturbed from (its ``source_id``) and the same
model's predictions on both are compared.

- a **label-preserving** perturbation (the perturbed case has its source
  case's gold label: every spelling generator of
  :mod:`hatecheck_pipeline.expansion.perturb`) should leave the prediction
  unchanged; the **flip rate** is the share of source cases whose
  prediction changes under it (INV);
- a **label-changing** perturbation (the gold labels differ) should move
  the prediction to the new label; the **directional** figure is the share
  of its pairs whose prediction moves that way (the source predicted with
  the source's label, the perturbed copy with its own) (DIR).

Each figure is a share of pairs, with the percentile bootstrap interval of
:func:`hatecheck_pipeline.evaluation.metrics.summarise`, resampling the
source cases' templates (``_cluster``, as the score stages do) or, without
clusters, the source cases. The pairs' accuracy on the source and on the
perturbed cases is given beside, on the same pairs and the same resamples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from hatecheck_pipeline.evaluation import metrics as M

CLUSTER = "_cluster"  # the source case's template cluster (scoring.with_clusters)
ANY = "any perturbation"  # the row over all label-preserving generators: a source case flipped by at least one
METHOD = (
    "CheckList INV/DIR (Ribeiro et al. 2020): each perturbed case paired with its source case (source_id), "
    "the same model's predictions on both compared"
)


def pair(perturbed: pl.DataFrame, source: pl.DataFrame) -> pl.DataFrame:
    """Perturbed cases (``source_id``, ``generator``, ``gold``, ``pred``) joined
    with their source cases (``id``, ``gold``, ``pred``[, ``_cluster``]):
    ``source_id``, ``generator``, ``gold_source``, ``pred_source``, ``gold``,
    ``pred`` (and the source's ``_cluster``); a perturbed case whose source
    has no prediction is left out.

    >>> p = pl.DataFrame({"source_id": ["1", "2"], "generator": ["leet", "leet"], "gold": [1, 1], "pred": [0, 1]})
    >>> s = pl.DataFrame({"id": ["1"], "gold": [1], "pred": [1]})
    >>> pair(p, s).rows()
    [('1', 'leet', 1, 1, 1, 0)]
    """
    src = source.select(
        pl.col("id").cast(pl.String).alias("source_id"),
        pl.col("gold").alias("gold_source"),
        pl.col("pred").alias("pred_source"),
        *([pl.col(CLUSTER)] if CLUSTER in source.columns else []),
    )
    return (
        perturbed.select(pl.col("source_id").cast(pl.String), "generator", "gold", "pred")
        .join(src, on="source_id", how="inner", maintain_order="left")
        .select("source_id", "generator", "gold_source", "pred_source", "gold", "pred", *([CLUSTER] if CLUSTER in src.columns else []))
    )


def _share(hits: np.ndarray, boot: M.Bootstrap, clusters: np.ndarray | None) -> dict[str, Any]:
    """A share of pairs (``hits``: 0/1) in percent with its interval, as
    ``{value, ci_low, ci_high}`` (and ``undefined`` with no pair)."""
    hits = np.asarray(hits, dtype=np.int64)
    return M.summarise(np.ones_like(hits), hits, ["accuracy"], boot, clusters)["accuracy"]


def _clusters(part: pl.DataFrame) -> np.ndarray | None:
    return part[CLUSTER].to_numpy() if CLUSTER in part.columns else None


def _accuracy(part: pl.DataFrame, side: str, boot: M.Bootstrap) -> dict[str, Any]:
    gold, pred = ("gold_source", "pred_source") if side == "source" else ("gold", "pred")
    return M.summarise(part[gold].to_numpy(), part[pred].to_numpy(), ["accuracy"], boot, _clusters(part))["accuracy"]


def preserving(part: pl.DataFrame, boot: M.Bootstrap) -> dict[str, Any]:
    """The INV figures of label-preserving pairs: ``flip_rate`` (the share
    whose prediction changes), how many flipped each way, and the accuracy
    on the source and on the perturbed cases.

    >>> part = pl.DataFrame({"gold_source": [1, 1, 1, 1], "pred_source": [1, 1, 0, 1], "gold": [1, 1, 1, 1], "pred": [1, 0, 1, 1]})
    >>> r = preserving(part, M.Bootstrap(0))
    >>> r["n"], r["n_flipped"], r["flip_rate"]["value"], r["flipped_to_non_hateful"], r["flipped_to_hateful"]
    (4, 2, 50.0, 1, 1)
    >>> r["accuracy_source"]["value"], r["accuracy_perturbed"]["value"]
    (75.0, 75.0)
    """
    src, pert = part["pred_source"].to_numpy(), part["pred"].to_numpy()
    flipped = (src != pert).astype(np.int64)
    clusters = _clusters(part)
    return {
        "n": part.height,
        "n_clusters": M.cluster_codes(clusters, part.height)[1],
        "flip_rate": _share(flipped, boot, clusters),
        "n_flipped": int(flipped.sum()),
        "flipped_to_non_hateful": int(((src == 1) & (pert == 0)).sum()),
        "flipped_to_hateful": int(((src == 0) & (pert == 1)).sum()),
        "accuracy_source": _accuracy(part, "source", boot),
        "accuracy_perturbed": _accuracy(part, "perturbed", boot),
    }


def changing(part: pl.DataFrame, boot: M.Bootstrap) -> dict[str, Any]:
    """The DIR figures of label-changing pairs: ``directional``, the share
    whose prediction moves to the perturbed case's label (the source
    predicted with its gold label, the perturbed copy with its own), and
    the accuracy on each side.

    >>> part = pl.DataFrame({"gold_source": [1, 1, 0], "pred_source": [1, 0, 0], "gold": [0, 0, 1], "pred": [0, 0, 0]})
    >>> r = changing(part, M.Bootstrap(0))
    >>> r["n"], r["n_moved"], r["directional"]["value"]
    (3, 1, 33.3)
    """
    moved = ((part["pred_source"] == part["gold_source"]) & (part["pred"] == part["gold"])).to_numpy().astype(np.int64)
    clusters = _clusters(part)
    return {
        "n": part.height,
        "n_clusters": M.cluster_codes(clusters, part.height)[1],
        "directional": _share(moved, boot, clusters),
        "n_moved": int(moved.sum()),
        "accuracy_source": _accuracy(part, "source", boot),
        "accuracy_perturbed": _accuracy(part, "perturbed", boot),
    }


def any_flip(pairs: pl.DataFrame) -> pl.DataFrame:
    """One row per source case of the label-preserving pairs: ``flipped``
    (1 when at least one of its perturbed copies changed the prediction)
    and its ``_cluster``.

    >>> p = pl.DataFrame({"source_id": ["1", "1", "2"], "generator": ["a", "b", "a"], "gold_source": [1, 1, 1],
    ...                   "pred_source": [1, 1, 1], "gold": [1, 1, 1], "pred": [1, 0, 1]})
    >>> any_flip(p).sort("source_id").rows()
    [('1', 1), ('2', 0)]
    """
    keep = pairs.filter(pl.col("gold") == pl.col("gold_source"))
    return keep.group_by("source_id", maintain_order=True).agg(
        (pl.col("pred") != pl.col("pred_source")).any().cast(pl.Int64).alias("flipped"),
        *([pl.col(CLUSTER).first()] if CLUSTER in keep.columns else []),
    )


def invariance(perturbed: pl.DataFrame, source: pl.DataFrame, boot: M.Bootstrap = M.Bootstrap()) -> dict[str, Any]:
    """The ``invariance`` section of a perturbed suite's metrics: per
    generator, the INV figures of its label-preserving pairs
    (:func:`preserving`) and the DIR figures of its label-changing ones
    (:func:`changing`, None when it has none); ``any perturbation``: the
    share of source cases flipped by at least one label-preserving copy;
    ``label_changing_generators``: the generators with a label-changing
    pair (none: no DIR test); how many perturbed cases were paired and how
    many were left out (their source case has no prediction: another
    seeded sample under a capped profile, or unanswered)."""
    pairs = pair(perturbed, source)
    by_generator: dict[str, Any] = {}
    for (gen,), part in pairs.group_by("generator", maintain_order=True):
        same = part.filter(pl.col("gold") == pl.col("gold_source"))
        other = part.filter(pl.col("gold") != pl.col("gold_source"))
        by_generator[str(gen)] = {
            "n_pairs": part.height,
            "label_preserving": preserving(same, boot) if same.height else None,
            "label_changing": changing(other, boot) if other.height else None,
        }
    per_source = any_flip(pairs)
    clusters = _clusters(per_source)
    return {
        "method": METHOD,
        "n_perturbed": perturbed.height,
        "n_paired": pairs.height,
        "n_without_source_prediction": perturbed.height - pairs.height,
        "label_changing_generators": [g for g, e in by_generator.items() if e["label_changing"] is not None],
        "by_generator": by_generator,
        "any": {
            "n": per_source.height,
            "n_clusters": M.cluster_codes(clusters, per_source.height)[1],
            "flip_rate": _share(per_source["flipped"].to_numpy(), boot, clusters),
            "n_flipped": int(per_source["flipped"].sum()) if per_source.height else 0,
        },
    }
