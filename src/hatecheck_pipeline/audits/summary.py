"""``results/bias/summary.json``: the bias phase's headline figures in one
document for the report (every entry names the file it came from)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core.files import write_text

CROWS_KEYS = [
    "variant",
    "model",
    "ran",
    "reason",
    "lowercase",
    "n_pairs",
    "complete",
    "metric_score",
    "stereo_score",
    "antistereo_score",
    "n_stereo",
    "n_antistereo",
    "n_neutral",
    "likelihood_diff_mean",
    "bias_types",
    "pairs_per_second",
    "note",
    "metric_ci",
    "bootstrap",
    "confidence",
]
EXPLAIN_KEYS = [
    "method",
    "method_label",
    "paper_row",
    "top_k",
    "iou_f1",
    "token_f1",
    "auprc",
    "comprehensiveness",
    "sufficiency",
    "n_posts",
    "n_posts_available",
]
WINOBIAS_KEYS = ["dataset", "winobias_type", "split", "label"]
SCHEMA_VERSION = 3


def _read(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text("utf-8"))


def run(
    crows: Mapping[str, Path],
    hatexplain: Mapping[str, Path],
    targets: Mapping[str, Path],
    out: Path,
    supervised: Mapping[str, Any] | None = None,
    winobias: Mapping[str, Path] | None = None,
) -> dict[str, Any]:
    """``supervised``: the attention-supervised HateXplain model's status
    when it did not run ({model, ran: false, reason}); ``winobias``:
    ``<scorer>/type<t>`` -> a WinoBias stage's metrics (under
    ``winobias.<scorer>.type<t>``)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "crows_pairs": {}, "winobias": {}, "hatexplain": {}, "targets": {}}
    for name, path in crows.items():
        m = _read(path)
        doc["crows_pairs"][name] = {k: m.get(k) for k in CROWS_KEYS} | {"source": str(path)}
        doc.setdefault("crows_pairs_paper_table2", m.get("paper_table2"))
    for key, path in (winobias or {}).items():
        name, wino_type = key.rsplit("/", 1)
        m = _read(path)
        doc["winobias"].setdefault(name, {})[wino_type] = {k: m.get(k) for k in [*CROWS_KEYS, *WINOBIAS_KEYS]} | {"source": str(path)}
    for clf, path in hatexplain.items():
        m = _read(path)
        b = m["bias"]
        doc["hatexplain"][clf] = {
            "source": str(path),
            "model": m["model"],
            **m["performance"],
            **{k: b[k] for k in ("gmb_subgroup", "gmb_bpsn", "gmb_bnsp", "power")},
            # where the bias figures come from: 2 = a paired 2-class model (the paper's protocol), 3 = this model's 1 - p(normal)
            "bias_classes": b.get("classes", 3),
            "bias_model": b.get("model"),
            "bias_score": b.get("score"),
            **{f"{k}_3class": (m.get("bias_3class") or b)[k] for k in ("gmb_subgroup", "gmb_bpsn", "gmb_bnsp")},
            "communities": b["communities"],
            "explanations": [{k: e.get(k) for k in EXPLAIN_KEYS} for e in m["explainability"]],
        }
    if supervised is not None:
        doc["hatexplain_supervised"] = dict(supervised)
    for model, path in targets.items():
        m = _read(path)
        doc["targets"][model] = {
            "source": str(path),
            "suites": {
                s: {k: v[k] for k in ("n_cases", "overall_auc", "gmb_subgroup", "gmb_bpsn", "gmb_bnsp", "communities")}
                for s, v in m["suites"].items()
            },
        }
    write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", out)
    return doc


NO_TRAIN_RATIONALES = (
    "not trained: bias.hatexplain.supervised.train_rationales is null; set it to `eraser` (HateXplain's ERASER "
    "rationales of the training posts, in the raw registry) or to a JSON file {post id: [annotator 0/1 masks over the "
    "post's words]} to train and audit it"
)


def supervised_status(supervised: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the attention-supervised model (BERT-HateXplain) ran, and why not."""
    if supervised.get("train_rationales"):
        return {"model": supervised["model"], "ran": True, "train_rationales": supervised["train_rationales"]}
    return {"model": supervised["model"], "ran": False, "reason": NO_TRAIN_RATIONALES}


def bias_summary(
    crows: Mapping[str, Path],
    hatexplain: Mapping[str, Path],
    targets: Mapping[str, Path],
    out: Path,
    supervised: Mapping[str, Any],
    winobias: Mapping[str, Path] | None = None,
) -> str:
    """Stage ``bias_summary``: the bias metrics (name -> metrics file per
    CrowS-Pairs scorer, WinoBias scorer and type, HateXplain classifier and
    target-bias model) in one
    document, with the attention-supervised HateXplain model's status
    (``bias.hatexplain.supervised``)."""
    doc = run(crows, hatexplain, targets, out, supervised_status(supervised), winobias)
    return (
        f"wrote {out} ({len(doc['crows_pairs'])} CrowS-Pairs, {sum(map(len, doc['winobias'].values()))} WinoBias, "
        f"{len(doc['hatexplain'])} HateXplain, "
        f"{len(doc['targets'])} target-bias entries)"
    )
