"""Unintended-bias AUCs (Borkan et al. 2019), as HateXplain uses them.

For a community c, with binary gold y (toxic / hateful = 1) and a score s:

- Subgroup AUC: ROC-AUC on the posts that mention c;
- BPSN AUC (background positive, subgroup negative): the negative posts
  that mention c plus the positive posts that do not;
- BNSP AUC (background negative, subgroup positive): the positive posts
  that mention c plus the negative posts that do not;
- GMB: generalised power mean over communities, ``(mean(m_c ** p)) ** (1/p)``
  with p = -5 (the Jigsaw competition and HateXplain).

An AUC is ``None`` where its set holds one class only; the power mean then
runs over the communities where it is defined (and says how many).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import polars as pl

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.files import write_csv, write_text
from hatecheck_pipeline.suites.registry import Suite
from hatecheck_pipeline.suites.sample import predicted_subsample

# How `dvc plots` draws a communities.csv (HateXplain's and the target-group one).
COMMUNITIES_PLOT = {
    "template": "bar_horizontal",
    "x": "bpsn_auc",
    "y": "community",
    "title": "BPSN AUC per community (low = false positives on its non-hateful posts)",
    "x_label": "BPSN AUC",
}

HATEXPLAIN_COMMUNITIES = ["African", "Islam", "Jewish", "Homosexual", "Women", "Refugee", "Arab", "Caucasian", "Hispanic", "Asian"]


def _auc(y: np.ndarray, s: np.ndarray) -> float | None:
    if len(y) == 0 or y.min() == y.max():
        return None
    from sklearn.metrics import roc_auc_score  # heavy: imported when an AUC is computed

    return float(roc_auc_score(y, s))


def community_aucs(y: Sequence[int], score: Sequence[float], in_group: Sequence[bool]) -> dict[str, Any]:
    """Subgroup, BPSN and BNSP AUC of one community (plus set sizes)."""
    y = np.asarray(y, dtype=int)
    s = np.asarray(score, dtype=float)
    g = np.asarray(in_group, dtype=bool)
    sub = g
    bpsn = (g & (y == 0)) | (~g & (y == 1))
    bnsp = (g & (y == 1)) | (~g & (y == 0))
    return {
        "n": int(g.sum()),
        "n_pos": int((g & (y == 1)).sum()),
        "n_neg": int((g & (y == 0)).sum()),
        "subgroup_auc": _auc(y[sub], s[sub]),
        "bpsn_auc": _auc(y[bpsn], s[bpsn]),
        "bnsp_auc": _auc(y[bnsp], s[bnsp]),
    }


def power_mean(values: Iterable[float | None], p: float = -5.0) -> float | None:
    """Generalised mean of the defined values.

    >>> round(power_mean([0.5, 1.0], p=1), 3)
    0.75
    """
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return None
    if p < 0 and min(vals) == 0:
        return 0.0  # the limit: a zero AUC dominates a negative-power mean
    if p == 0:
        return float(np.exp(np.mean(np.log(vals))))
    return float(np.mean(np.power(vals, p)) ** (1.0 / p))


def bias_table(
    y: Sequence[int], score: Sequence[float], groups: Sequence[Sequence[str] | str | None], communities: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per community; ``groups`` holds each item's communities (a
    list, one string, or None)."""
    sets = [set(g) if isinstance(g, (list, tuple, set, np.ndarray)) else ({g} if g else set()) for g in groups]
    return [{"community": c, **community_aucs(y, score, [c in s for s in sets])} for c in communities]


def gmb(rows: Sequence[dict[str, Any]], p: float = -5.0) -> dict[str, Any]:
    out: dict[str, Any] = {"power": p}
    for key, name in (("subgroup_auc", "gmb_subgroup"), ("bpsn_auc", "gmb_bpsn"), ("bnsp_auc", "gmb_bnsp")):
        vals = [r[key] for r in rows]
        out[name] = power_mean(vals, p)
        out[f"{name}_n_communities"] = sum(v is not None for v in vals)
    return out


# --------------------------------------------------------------------------
# Target-group bias on the functional suites (HateCheck, MHC languages)


def suite_bias(cases: pl.DataFrame, predictions: pl.DataFrame, id_column: str, p: float = -5.0, min_cases: int = 1) -> dict[str, Any]:
    """Bias AUCs with ``target_ident`` as the community and ``p_hateful``
    as the score. ``cases`` holds the suite's gold (``id_column``, label,
    target_ident); ``predictions`` holds id, p_hateful."""
    gold = cases.select(pl.col(id_column).cast(pl.String).alias("id"), "label", "target_ident")
    joined = gold.join(predictions.select(pl.col("id").cast(pl.String), "p_hateful"), on="id", how="inner")
    if joined.height != gold.height:
        raise ValueError(f"predictions cover {joined.height} of {gold.height} cases")
    y = (joined["label"] == "hateful").cast(pl.Int8).to_numpy()
    s = joined["p_hateful"].to_numpy()
    groups = joined["target_ident"].to_list()
    counts = joined.filter(pl.col("target_ident").is_not_null())["target_ident"].value_counts()
    communities = sorted(r["target_ident"] for r in counts.to_dicts() if r["count"] >= min_cases)
    rows = bias_table(y, s, groups, communities)
    return {"n_cases": joined.height, "overall_auc": _auc(y, s), "communities": rows, **gmb(rows, p)}


def run_targets(model: str, suites: list[tuple[str, pl.DataFrame, str, Path]], out_json: Path, out_csv: Path, p: float) -> dict[str, Any]:
    """Per model: one entry per suite (name, gold cases, id column, predictions path)."""
    result: dict[str, Any] = {"model": model, "score": "p_hateful", "community": "target_ident", "suites": {}}
    flat: list[dict[str, Any]] = []
    for name, cases, id_column, pred_path in suites:
        entry = suite_bias(cases, pl.read_parquet(pred_path), id_column, p)
        result["suites"][name] = entry
        flat += [{"model": model, "suite": name, **row} for row in entry["communities"]]
    write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", out_json)
    schema = {
        "model": pl.String,
        "suite": pl.String,
        "community": pl.String,
        "n": pl.Int64,
        "n_pos": pl.Int64,
        "n_neg": pl.Int64,
        "subgroup_auc": pl.Float64,
        "bpsn_auc": pl.Float64,
        "bnsp_auc": pl.Float64,
    }
    write_csv(pl.DataFrame(flat, schema=schema), out_csv)
    return result


def target_bias(
    model: str,
    suites: Sequence[Suite],
    gold: Mapping[str, Path],
    predictions: Mapping[str, Path],
    metrics: Path,
    communities_csv: Path,
    power: float,
    profile: Profile,
    seed: int,
    cap_key: str = "max_cases_per_suite",
) -> str:
    """Stage ``target_bias_<model>``: Subgroup/BPSN/BNSP AUCs per
    ``target_ident`` on the model's functional suites. ``gold`` and
    ``predictions`` are keyed by suite name; a profile capping the cases
    (``cap_key``: ``max_cases_per_suite``, or ``llm_max_cases_per_suite``
    for an ``llm`` model) audits the cases its predict stage drew (same
    seeded draw, the model's ``seed``)."""
    cap = profile.get(cap_key)
    entries = [
        (s.name, predicted_subsample(s.load_raw(str(gold[s.name])).collect(), "id", cap, seed), "id", Path(predictions[s.name]))
        for s in suites
    ]
    result = run_targets(model, entries, Path(metrics), Path(communities_csv), power)
    return f"{model}: target-group bias on {len(result['suites'])} suite(s)"
