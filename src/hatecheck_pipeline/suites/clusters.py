"""Template clusters: the resampling unit of a functional suite's bootstrap.

HateCheck and Multilingual HateCheck cases are generated from templates (one
case per target group, or per slur, profanity, ...), so cases of one
template are not independent: a model that misreads a template misreads all
its cases. Their bootstrap intervals resample templates, not cases
(:func:`hatecheck_pipeline.evaluation.metrics.bootstrap_ci` with
``clusters``). Which cases share a template:

- HateCheck: ``case_templ`` (the template text; one-to-one with ``templ_id``);
- MHC: ``case_templ``, or for gender-inflected languages (Italian and
  Spanish leave ``case_templ`` empty for every templated case; Arabic,
  French, German, Hindi, Polish and Portuguese for some) the
  ``gender_male`` / ``gender_female`` template texts: cases sharing ANY of
  these texts form one cluster (connected components, so a chain of shared
  texts joins its cases too);
- expanded suites: ``templ_id`` (kept from the source case by the
  perturbations, set by template regeneration and extension, whose
  ``case_templ`` is the gendered variant that was filled) and ``case_templ``;
- ``templ_id`` is used wherever present: on the published suites it never
  joins cases that the template texts keep apart (checked on all eleven
  files of the mirror), on the expanded ones it is the only link.

A case with none of these columns set (an LLM-generated case) is its own
cluster. Everything is numpy: one pass of label propagation per key column
until nothing changes (two or three passes on the real suites).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

TEXT_COLUMNS = ("case_templ", "gender_male", "gender_female")  # template texts: one shared namespace
ID_COLUMNS = ("templ_id",)  # template ids: their own namespace
TEMPLATE_COLUMNS = (*ID_COLUMNS, *TEXT_COLUMNS)


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected components of ``n`` nodes linked by the edges ``a[i] - b[i]``:
    each node's label is the smallest node of its component.

    >>> components(5, np.array([0, 3]), np.array([2, 4])).tolist()
    [0, 1, 0, 3, 3]
    """
    label = np.arange(n)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if not len(a):
        return label
    while True:
        low = np.minimum(label[a], label[b])
        before = label.copy()
        np.minimum.at(label, a, low)
        np.minimum.at(label, b, low)
        label = label[label]  # pointer jumping: follow each label to its own label
        if np.array_equal(label, before):
            return label


def first_appearance_codes(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..K-1 in order of first appearance (so that
    singleton clusters are numbered like the cases themselves).

    >>> first_appearance_codes(np.array([7, 3, 7, 9, 3])).tolist()
    [0, 1, 0, 2, 1]
    """
    labels = np.asarray(labels)
    if not len(labels):
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _codes(values: pl.Series) -> np.ndarray:
    """Integer code per distinct non-empty value, -1 for null/empty."""
    text = values.cast(pl.String).str.strip_chars()
    text = pl.select(pl.when(text != "").then(text)).to_series()  # empty -> null
    return (text.rank("dense") - 1).fill_null(-1).cast(pl.Int64).to_numpy()


def template_clusters(cases: pl.DataFrame, columns: Sequence[str] = TEMPLATE_COLUMNS) -> np.ndarray:
    """One cluster code (0..K-1, in order of first appearance) per row of
    ``cases``: rows sharing a value of any template column (texts compared
    across ``case_templ`` / ``gender_male`` / ``gender_female``, ids only
    with ids) are one cluster; a row without any is its own.

    >>> frame = pl.DataFrame({"case_templ": ["t1", "t1", None, "", "t2"],
    ...                       "gender_male": [None, None, "m", None, "m"]})
    >>> template_clusters(frame).tolist()
    [0, 0, 1, 2, 1]
    """
    n = cases.height
    present = [c for c in columns if c in cases.columns]
    if not n or not present:
        return np.arange(n, dtype=np.int64)
    rows = np.arange(n, dtype=np.int64)
    edges_a, edges_b = [], []
    offset = n
    for namespace in (ID_COLUMNS, TEXT_COLUMNS):
        cols = [c for c in present if c in namespace]
        if not cols:
            continue
        # one code space per namespace: the same text in case_templ and gender_male is one node
        stacked = pl.concat([cases[c].cast(pl.String) for c in cols])
        codes = _codes(stacked).reshape(len(cols), n)
        for col_codes in codes:
            has = col_codes >= 0
            edges_a.append(rows[has])
            edges_b.append(col_codes[has] + offset)
        offset += int(codes.max()) + 1 if codes.size and codes.max() >= 0 else 0
    a = np.concatenate(edges_a) if edges_a else np.zeros(0, np.int64)
    b = np.concatenate(edges_b) if edges_b else np.zeros(0, np.int64)
    return first_appearance_codes(components(offset, a, b)[:n])


def merge_clusters(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Cluster of each pair (a hateful case and its contrast) when a pair's
    two cases may come from different clusters: pairs whose cases share a
    cluster, directly or through other pairs, form one cluster (codes
    0..K-1 in order of first appearance).

    >>> merge_clusters(np.array([0, 1, 2, 0]), np.array([5, 5, 6, 7])).tolist()
    [0, 0, 1, 0]
    """
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    if not len(left):
        return np.zeros(0, dtype=np.int64)
    nodes = np.unique(np.concatenate([left, right]))
    a, b = np.searchsorted(nodes, left), np.searchsorted(nodes, right)
    label = components(len(nodes), a, b)
    return first_appearance_codes(label[a])


FILLER_COLUMN = "target_ident"  # the target group a case's placeholder was filled with


def filler_codes(cases: pl.DataFrame, clusters: np.ndarray) -> np.ndarray:
    """The random filler of each case (codes 0..J-1 in order of first
    appearance; -1: none): the factor a template suite crosses with its
    templates and samples from a larger population.

    HateCheck and MHC fill a template's placeholder either with each of the
    protected target groups (identity templates: one case per group) or
    with each slur of each group (slur templates: several cases per group,
    generated in the same order in every template). The seven groups are
    the design of the functional test, fixed: a result is about these
    groups (and reported per group). The slurs are a sample of the slurs
    that exist for a group: a case from a template with several cases of
    its group has the filler ``<group>#<rank>`` (``women#1``: the second
    slur for women, in every slur template), resampled beside the
    templates. Every other case has none.

    >>> frame = pl.DataFrame({"target_ident": ["women", "gay people", "women", "women", None]})
    >>> filler_codes(frame, np.array([0, 0, 1, 1, 2])).tolist()
    [-1, -1, 0, 1, -1]
    """
    n = cases.height
    if FILLER_COLUMN not in cases.columns or not n:
        return np.full(n, -1, dtype=np.int64)
    frame = pl.DataFrame(
        {"target": cases[FILLER_COLUMN].cast(pl.String).str.strip_chars(), "cluster": np.asarray(clusters, dtype=np.int64)}
    )
    keyed = frame.with_columns(
        pl.int_range(pl.len()).over("cluster", "target").alias("rank"),
        pl.len().over("cluster", "target").alias("size"),
    ).select(
        pl.when(pl.col("target").is_not_null() & (pl.col("target") != "") & (pl.col("size") > 1))
        .then(pl.concat_str([pl.col("target"), pl.lit("#"), pl.col("rank").cast(pl.String)]))
        .alias("filler")
    )["filler"]
    has = keyed.is_not_null().to_numpy()
    out = np.full(n, -1, dtype=np.int64)
    if has.any():
        out[has] = first_appearance_codes(keyed.filter(keyed.is_not_null()).to_numpy())
    return out
