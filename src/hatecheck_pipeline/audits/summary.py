"""``results/bias/summary.json``: the bias phase's headline figures in one
document for the report (every entry names the file it came from)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core.files import write_text

CROWS_KEYS = ["variant", "model", "n_pairs", "complete", "metric_score", "stereo_score", "antistereo_score", "n_neutral", "likelihood_diff_mean", "bias_types", "pairs_per_second", "note"]
SCHEMA_VERSION = 1


def _read(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text("utf-8"))


def run(crows: Mapping[str, Path], hatexplain: Mapping[str, Path], targets: Mapping[str, Path], out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "crows_pairs": {}, "hatexplain": {}, "targets": {}}
    for name, path in crows.items():
        m = _read(path)
        doc["crows_pairs"][name] = {k: m.get(k) for k in CROWS_KEYS} | {"source": str(path)}
        doc.setdefault("crows_pairs_paper_table2", m.get("paper_table2"))
    for clf, path in hatexplain.items():
        m = _read(path)
        b, e = m["bias"], m["explainability"]
        doc["hatexplain"][clf] = {
            "source": str(path),
            "model": m["model"],
            **m["performance"],
            **{k: b[k] for k in ("gmb_subgroup", "gmb_bpsn", "gmb_bnsp", "power")},
            "communities": b["communities"],
            **{k: e[k] for k in ("method", "top_k", "iou_f1", "token_f1", "auprc", "comprehensiveness", "sufficiency", "n_posts")},
        }
        doc["hatexplain_paper_table6"] = m["paper_table6"]
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


def bias_summary(crows: Mapping[str, Path], hatexplain: Mapping[str, Path], targets: Mapping[str, Path], out: Path) -> str:
    """Stage ``bias_summary``: the bias metrics (name -> metrics file per
    CrowS-Pairs scorer, HateXplain classifier and target-bias model) in one
    document."""
    doc = run(crows, hatexplain, targets, out)
    return (
        f"wrote {out} ({len(doc['crows_pairs'])} CrowS-Pairs, {len(doc['hatexplain'])} HateXplain, "
        f"{len(doc['targets'])} target-bias entries)"
    )
