"""Case- vs template-level bootstrap intervals on the real suites, and the
cost of one score stage (docs/intervals.md).

The HateCheck authors' B-D predictions are not in the mirror, so this uses
predictions that are cheap to make from it:

- HateCheck: TF-IDF (word 1-2 grams) + logistic regression trained on the
  Davidson 2017 train split (binary, class 0 hate -> hateful, as the
  HateCheck paper's B-D is trained); a real classifier, not B-D;
- MHC (Italian and Spanish: no ``case_templ``, templates in the gender
  columns; German: both): the MHC annotators' majority label
  (``label_annotated_maj``) scored against the gold label.

The suites are built with the pipeline's own builders
(``data/case_suites.py``, ``data/corpora.py``) from the raw mirror, in a scratch folder. Timing: the
score stage's work (``scoring.run`` on the whole suite, 1,000 resamples, in
a fresh interpreter, imports included), best of ``--repeat``, for this
checkout and, with ``--baseline-src``, for another ``src`` folder (e.g. the
main branch before the change) in the same run.

    python benchmarks/bench_intervals.py --mirror ../shared/datasets --out intervals.json [--baseline-src ../main/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

STAGE = """
import time; t0 = time.perf_counter()
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation import scoring
from hatecheck_pipeline.suites.registry import hatecheck, mhc
suite = {suite}
gold = scoring.gold_cases(suite, {table!r})
scoring.run(suite, {pred!r}, {out!r}, boot=Bootstrap(1000, 0), gold=gold)
print(time.perf_counter() - t0)
"""


def build(mirror: Path, work: Path) -> dict[str, tuple[str, str, str, str]]:
    """Suite tables and predictions files in ``work``; name -> (suite expr, table, predictions, what)."""
    import numpy as np
    import polars as pl
    import yaml
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from hatecheck_pipeline.data import case_suites, corpora

    raw = work / "data" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for d in ("hatecheck", "mhc", "davidson2017"):
        if not (raw / d).exists():
            (raw / d).symlink_to(mirror.resolve() / d)
    os.chdir(work)
    params = yaml.safe_load((SRC.parent / "params.yaml").read_text("utf-8"))["datasets"]
    hc = case_suites.hatecheck(params["hatecheck"]).kept
    hc.write_parquet("hatecheck.parquet")
    mhc = case_suites.mhc(params["mhc"]).kept
    mhc.write_parquet("mhc.parquet")
    train = corpora.davidson2017(params["davidson2017"]).kept.filter(pl.col("split") == "train")
    model = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
        LogisticRegression(C=4.0, max_iter=2000, class_weight="balanced", random_state=0),
    )
    model.fit(train["text"].to_list(), (train["label"] == "hateful").to_numpy())
    pl.DataFrame({"case_id": hc["case_id"], "pred": model.predict(hc["text"].to_list()).astype(np.int64)}).write_parquet(
        "pred_hatecheck.parquet"
    )
    out = {
        "hatecheck": (
            "hatecheck()",
            "hatecheck.parquet",
            "pred_hatecheck.parquet",
            f"TF-IDF + LR trained on the Davidson 2017 train split ({train.height} posts, binary)",
        )
    }
    for lang in ("italian", "spanish", "german"):
        part = mhc.filter(pl.col("language") == lang)
        pl.DataFrame({"mhc_case_id": part["mhc_case_id"], "pred": part["label_annotated_maj"]}).write_parquet(f"pred_mhc_{lang}.parquet")
        out[f"mhc_{lang}"] = (f"mhc({lang!r})", "mhc.parquet", f"pred_mhc_{lang}.parquet", "MHC annotators' majority label")
    return out


def width(fig: dict) -> float:
    return round(fig["ci_high"] - fig["ci_low"], 1)


def compare(suites: dict[str, tuple[str, str, str, str]]) -> list[dict]:
    from hatecheck_pipeline.evaluation import metrics as M
    from hatecheck_pipeline.evaluation import scoring
    from hatecheck_pipeline.suites.registry import hatecheck, mhc  # noqa: F401 (the suite expressions)

    rows = []
    for name, (expr, table, pred, what) in suites.items():
        suite = eval(expr)  # noqa: S307 (our own constant expressions)
        cases = scoring.align(scoring.gold_cases(suite, table), scoring.read_predictions(pred, suite.id_column))
        doc = {u: scoring.score_cases(cases, suite.id_column, M.Bootstrap(1000, 0), u) for u in (M.CASE, M.TEMPLATE)}
        for section, fig in (("overall", "accuracy"), ("overall", "macro_f1"), ("contrast", "both_correct")):
            c, t = doc[M.CASE][section], doc[M.TEMPLATE][section]
            rows.append(
                {
                    "suite": name,
                    "predictions": what,
                    "figure": f"{section} {fig}",
                    "value": c[fig]["value"],
                    "case_ci": [c[fig]["ci_low"], c[fig]["ci_high"]],
                    "case_width": width(c[fig]),
                    "cases": c.get("n", c.get("n_pairs")),
                    "template_ci": [t[fig]["ci_low"], t[fig]["ci_high"]],
                    "template_width": width(t[fig]),
                    "templates": t["n_clusters"],
                }
            )
        for section in ("by_functionality", "by_target"):
            ratios = sorted(
                width(doc[M.TEMPLATE][section][k]["accuracy"]) / width(f["accuracy"])
                for k, f in doc[M.CASE][section].items()
                if width(f["accuracy"]) > 0
            )
            rows.append(
                {
                    "suite": name,
                    "predictions": what,
                    "figure": f"{section} accuracy: template / case interval width",
                    "groups": len(ratios),
                    "median_ratio": round(ratios[len(ratios) // 2], 2) if ratios else None,
                    "max_ratio": round(ratios[-1], 2) if ratios else None,
                }
            )
    return rows


def timing(suites: dict, srcs: dict[str, str], repeat: int, work: Path) -> dict[str, dict]:
    out = {}
    for label, src in srcs.items():
        for name in ("hatecheck", "mhc_german"):
            expr, table, pred, _ = suites[name]
            code = STAGE.format(suite=expr, table=table, pred=pred, out=str(work / f"m_{label}_{name}.json"))
            runs = []
            for _ in range(repeat):
                t = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-c", code],
                    env={**os.environ, "PYTHONPATH": src},
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=work,
                )
                runs.append((round(time.perf_counter() - t, 2), round(float(proc.stdout.split()[-1]), 2)))
            best = min(runs)
            out[f"{name} ({label})"] = {"process_s": best[0], "imports_and_scoring_s": best[1], "runs": runs}
            print(name, label, out[f"{name} ({label})"], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=os.environ.get("HATECHECK_PIPELINE_MIRROR", "../shared/datasets"))
    ap.add_argument("--out", default="intervals.json")
    ap.add_argument("--baseline-src", default=None, help="another src folder to time the same score stage with")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    out_path = Path(args.out).resolve()
    work = Path(tempfile.mkdtemp(prefix="bench_intervals_"))
    suites = build(Path(args.mirror), work)
    rows = compare(suites)
    for r in rows:
        print(r)
    srcs = {"this checkout": str(SRC)} | ({"baseline": str(Path(args.baseline_src).resolve())} if args.baseline_src else {})
    result = {
        "intervals": rows,
        "score_stage_timing": timing(suites, srcs, args.repeat, work),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    out_path.write_text(json.dumps(result, indent=1) + "\n", "utf-8")
    print(f"wrote {out_path} (scratch: {work})")


if __name__ == "__main__":
    main()
