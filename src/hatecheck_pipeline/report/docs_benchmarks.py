"""Tables rendered from the benchmark scripts' records
(``benchmarks/records/``): the model screens of
``benchmarks/screen_model.py --record``, which docs/models.md shows."""

from __future__ import annotations

import re
from statistics import mean
from typing import Any, Mapping

from hatecheck_pipeline.report.docs_format import MHC_ORDER, md_table, num, path_cell


def _base_name(description: str) -> str:
    """A base model's name from its description (what precedes ' (' or ',')."""
    return re.split(r" \(|,", description, maxsplit=1)[0]


def screened_model(doc: Mapping[str, Any]) -> str:
    """What a screen record trained, as its table row names it: the base
    model's name, ``mean pooling`` when its classifier head read the mean
    token state (records without ``pooling`` used the model's own head), and
    the training precision where the record names one (records before it
    name theirs in their note).

    >>> screened_model({"base_model": "EmbeddingGemma-300M (25 parts)", "pooling": "mean"})
    'EmbeddingGemma-300M, mean pooling'
    >>> screened_model({"base_model": "multilingual-e5-small, dequantised"})
    'multilingual-e5-small'
    >>> screened_model({"base_model": "multilingual-e5-small", "precision": "fp32 (cpu_bf16: auto; bf16 measured 0.5x)"})
    'multilingual-e5-small, fp32 training'
    """
    name = _base_name(doc["base_model"])
    name += ", mean pooling" if doc.get("pooling", "model") == "mean" else ""
    precision = doc.get("precision")
    return name + (f", {precision.split(' ')[0]} training" if precision else "")


def screen_table(records: list[tuple[str, Mapping[str, Any]]]) -> str:
    """Model screens (``benchmarks/screen_model.py --record``; ``records``:
    path and document of each): training time, held-out macro F1 per
    dataset and MHC macro F1 per language with their mean (and its
    interval), the record's note on how it ran, one row per screen, and the
    mean over the seeds of each base model."""
    heldout = list(dict.fromkeys(k for _, doc in records for k in doc["heldout"]))
    langs = [lang for lang in MHC_ORDER if any(lang in doc["mhc"] for _, doc in records)]
    rows, by_base = [], {}
    for rel, doc in records:
        cells = [doc["heldout"].get(k, {}).get("value") for k in heldout] + [doc["mhc"].get(lang, {}).get("value") for lang in langs]
        by_base.setdefault(screened_model(doc), []).append([doc["train_seconds"], *cells, doc["mhc_mean"]])
        ci = doc.get("mhc_mean_interval")
        interval = f" [{num(ci['ci_low'])}, {num(ci['ci_high'])}]" if ci else ""
        rows.append([screened_model(doc), str(doc["seed"]), num(doc["train_seconds"], 0),
                     *(num(v) for v in cells), f"**{num(doc['mhc_mean'])}**{interval}", doc.get("note", ""), path_cell(rel)])
    for base, runs in by_base.items():
        if len(runs) > 1:
            cols = [mean(c) if all(v is not None for v in c) else None for c in zip(*runs)]
            rows.append([f"{base}, mean of {len(runs)} seeds", "", num(cols[0], 0),
                         *(num(v) for v in cols[1:-1]), f"**{num(cols[-1])}**", "", ""])
    head = ["base model (xlmt role)", "seed", "training s", *(f"held-out {k}" for k in heldout),
            *(f"MHC {lang}" for lang in langs), "MHC mean [95% interval]", "how it ran", "source"]
    return md_table(head, rows)
