"""CPU cost of the HateXplain explanations per method on a trained model
(docs/intervals.md).

Process CPU time with ONE torch thread (on a shared, loaded machine the
wall time and the multi-threaded CPU time are inflated by the other jobs
and by spinning threads; one thread's CPU time is the steadiest figure):
attention explanations with faithfulness re-predictions on 256 posts (with
the full-post probabilities reused from the test-set predictions, as the
stage does, and predicted again, as before), the test-set predictions, and
integrated gradients and LIME (``--lime-samples`` perturbed texts per
post, the authors' 100) on the same 8 posts. ``--parts`` picks what runs;
``lime_selection`` runs LIME on the posts a profile explains (``--explain``
of them, the stage's seeded sample) twice, with LIME's own forward
selection (a scikit-learn fit per candidate) and with
``audits/lime_selection.py``, and checks that both give the same rows.
Run in a workspace where ``train_hatexplain`` ran (e.g. the smoke
profile):

    python benchmarks/bench_explain_cost.py --workspace . --max-length 32 --out explain_cost.json
    python benchmarks/bench_explain_cost.py --workspace . --max-length 96 --parts integrated_gradients,lime --lime-samples 100,50 \\
        --out explain_cost_lime.json
    python benchmarks/bench_explain_cost.py --workspace . --max-length 96 --parts lime_selection --lime-samples 50 --explain 60 \
        --out lime_selection.json                      # the embedded profile's LIME
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", default=".")
    ap.add_argument("--model", default="hatexplain")
    ap.add_argument("--max-length", type=int, default=32)
    ap.add_argument("--out", default="explain_cost.json")
    ap.add_argument("--lime-samples", default="100", help="comma-separated: LIME's num_samples, one run each")
    ap.add_argument("--parts", default="attention,predict,integrated_gradients,lime", help="comma-separated: what runs")
    ap.add_argument("--explain", type=int, default=60, help="lime_selection: the posts LIME explains (hatexplain_max_explain)")
    ap.add_argument("--seed", type=int, default=0, help="lime_selection: the sample's seed (bias.seed)")
    args = ap.parse_args()
    out_path = Path(args.out).resolve()
    os.chdir(args.workspace)

    import polars as pl
    import torch

    torch.set_num_threads(1)
    from hatecheck_pipeline.audits import explain

    model, tok = explain.load_classifier(f"models/{args.model}/final")
    test = pl.read_parquet("data/interim/hatexplain/table.parquet").filter(pl.col("split") == "test").sort("id")
    pool = explain.explained_posts(test, None, 0)
    posts = pool["post_tokens"].to_list()[:256]
    kw = {"max_length": args.max_length, "top_k": 5, "batch_size": 32, "ig_steps": 50}
    parts = set(args.parts.split(","))
    out: dict = {"model": args.model, "max_length": args.max_length, "posts_with_rationale": pool.height, "torch_threads": 1}
    if "attention" in parts:
        full = explain.predict_words(model, tok, posts, args.max_length, 32)
        for label, extra in (("attention_full_reused", {"full": full}), ("attention_full_predicted_again", {})):
            c, w = time.process_time(), time.perf_counter()
            explain.explain_posts(model, tok, posts, "attention", **kw, **extra)
            out[label] = {"posts": len(posts), "cpu_s": round(time.process_time() - c, 2), "wall_s": round(time.perf_counter() - w, 2)}
        per_post = out["attention_full_reused"]["cpu_s"] / len(posts)
        out["attention_all_posts_cpu_s_estimate"] = round(per_post * pool.height, 1)
    if "predict" in parts:
        c = time.process_time()
        explain.predict_words(model, tok, test["post_tokens"].to_list(), args.max_length, 32)
        out["predict_all_test_posts"] = {"posts": test.height, "cpu_s": round(time.process_time() - c, 2)}
    few = pool["post_tokens"].to_list()[:8]
    runs = [("integrated_gradients", "integrated_gradients", 0)] if "integrated_gradients" in parts else []
    if "lime" in parts:
        samples = [int(n) for n in args.lime_samples.split(",")]
        runs += [(f"lime_{n}" if len(samples) > 1 else "lime", "lime", n) for n in samples]
    for key, method, n in runs:
        c, w = time.process_time(), time.perf_counter()
        explain.explain_posts(model, tok, few, method, **kw, **({"lime_samples": n} if n else {}))
        out[key] = {
            "posts": len(few),
            "cpu_s": round(time.process_time() - c, 2),
            "wall_s": round(time.perf_counter() - w, 2),
            **({"num_samples": n} if n else {}),
        }
    if "lime_selection" in parts:
        out["lime_selection"] = lime_selection_ab(model, tok, test, kw, args)
    out["load_average"] = os.getloadavg()
    out_path.write_text(json.dumps(out, indent=1) + "\n", "utf-8")
    print(json.dumps(out, indent=1))


def lime_selection_ab(model, tok, test, kw: dict, args) -> dict:
    """LIME on the profile's explained posts with LIME's own forward
    selection and with ``audits/lime_selection.py``: CPU seconds, the rounds
    left to LIME's loop, and whether the rows are equal."""
    from hatecheck_pipeline.audits import explain, lime_selection

    posts = explain.explained_posts(test, args.explain, args.seed)["post_tokens"].to_list()
    samples = int(args.lime_samples.split(",")[0])
    real = lime_selection.greedy_selection
    calls = {"clear": 0, "left to LIME": 0}

    def counted(*a):
        chosen = real(*a)
        calls["clear" if chosen is not None else "left to LIME"] += 1
        return chosen

    result, rows = {"posts": len(posts), "num_samples": samples}, {}
    for label, greedy in (("lime_own_forward_selection", lambda *a: None), ("lime_selection", counted)):
        lime_selection.greedy_selection = greedy
        try:
            c, w = time.process_time(), time.perf_counter()
            rows[label] = explain.explain_posts(model, tok, posts, "lime", **kw, lime_samples=samples)
            result[label] = {"cpu_s": round(time.process_time() - c, 2), "wall_s": round(time.perf_counter() - w, 2)}
        finally:
            lime_selection.greedy_selection = real
    result["selections"] = calls
    result["same_rows"] = rows["lime_own_forward_selection"] == rows["lime_selection"]
    return result


if __name__ == "__main__":
    main()
