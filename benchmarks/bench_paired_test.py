"""Does the paired test behind ``diff`` hold its level, and does it find a
known difference? Do the score stages' two-way intervals cover the truth
when errors depend on the filler, on the template or on neither? And how
long does one suite's test take on one core?

Every simulation uses the real HateCheck design from the dataset mirror
(its 29 functional tests, 845 templates and the slurs crossed with the slur
templates, as ``scoring.with_clusters`` finds them), so the numbers of
units are the suite's own.

- Level: two classifiers that differ only by chance. Each case's
  probability of being right is ``sigmoid(mu_f + u_t + v_s)`` with the
  functional test's ``mu_f`` the same for both, and random template effects
  ``u_t`` and slur effects ``v_s``: each classifier's own (scenarios:
  independent cases; template effects; template and slur effects), or a
  difficulty both share (sd 1.0) plus small effects of their own (sd 0.3),
  as two classifiers meet the same hard templates. The family-wise error
  rate is the share of simulated pairs with any flag.
- Power: B's ``mu_f`` lowered on one functional test by the amount that
  takes its accuracy down by about 20 points; the share of pairs where that
  test is flagged worse (a test crossed with slurs and one with templates
  only), with shared difficulty and with effects of each classifier's own.
- Coverage: one classifier on a slur_h-shaped design (8 templates x 18
  slurs) whose probability of being right is ``0.5 + a_t + b_s`` (mean-zero
  template and slur effects, so the population accuracy is 0.5): errors
  only by filler (``b_s = +-0.5``), only by template (``a_t = +-0.4``), or
  independent; the share of 95% intervals that contain 0.5, for the two-way
  bootstrap the score stages use and the template-only one it replaced.

Usage: python benchmarks/bench_paired_test.py [--sims 200] [--record FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl

from hatecheck_pipeline.evaluation import diff as D
from hatecheck_pipeline.evaluation import metrics as M
from hatecheck_pipeline.evaluation import scoring

MIRROR = Path(os.environ.get("HATECHECK_PIPELINE_MIRROR", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def design() -> pl.DataFrame:
    """HateCheck's cases with their template clusters and slur fillers."""
    raw = pl.read_csv(MIRROR / "hatecheck" / "test_suite_cases.csv")
    cases = raw.select(
        pl.col("case_id").cast(pl.String).alias("id"),
        (pl.col("label_gold") == "hateful").cast(pl.Int8).alias("gold"),
        "functionality",
        "target_ident",
        "templ_id",
        "case_templ",
    ).with_row_index("_order")
    return scoring.with_clusters(cases, M.TEMPLATE, fillers=True)


def effects(rng, rows: np.ndarray, cols: np.ndarray, sd_t: float, sd_s: float) -> np.ndarray:
    """Random template and slur effects (logits) per case."""
    u = rng.normal(0, sd_t, rows.max() + 1)[rows]
    return u + np.where(cols >= 0, rng.normal(0, sd_s, cols.max() + 2)[cols], 0.0)


def correct_draw(
    rng, mu: np.ndarray, rows: np.ndarray, cols: np.ndarray, sd_t: float, sd_s: float, shared: np.ndarray | float = 0.0
) -> np.ndarray:
    """One classifier's right (1) / wrong (0) per case: its own effects
    (``sd_t``, ``sd_s``) on top of a ``shared`` difficulty."""
    logit = mu + shared + effects(rng, rows, cols, sd_t, sd_s)
    return (rng.random(len(mu)) < 1 / (1 + np.exp(-logit))).astype(np.int8)


def as_pair(cases: pl.DataFrame, a: np.ndarray, b: np.ndarray) -> pl.DataFrame:
    """Cases with predictions that are right exactly where a / b say."""
    gold = cases["gold"].to_numpy()
    return cases.with_columns(pred_a=pl.Series(np.where(a == 1, gold, 1 - gold)), pred_b=pl.Series(np.where(b == 1, gold, 1 - gold)))


def level_and_power(cases: pl.DataFrame, sims: int, samples: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    funcs = cases["functionality"].to_numpy()
    names = list(dict.fromkeys(funcs))
    rows, cols = cases[scoring.CLUSTER].to_numpy(), cases[scoring.FILLER].to_numpy()
    base = {f: rng.uniform(0.6, 2.2) for f in names}  # accuracies of about 65-90% per test
    mu = np.array([base[f] for f in funcs])
    out = {}
    scenarios = {
        "independent cases": (0.0, 0.0, 0.0),
        "own template effects (sd 1.0)": (1.0, 0.0, 0.0),
        "own template and slur effects (sd 1.0, 1.0)": (1.0, 1.0, 0.0),
        "shared difficulty (sd 1.0) + own effects (sd 0.3)": (0.3, 0.3, 1.0),
    }
    boot = M.Bootstrap(samples, 0, 0.95)
    for label, (sd_t, sd_s, sd_shared) in scenarios.items():
        any_flag, per_test, n_flags = 0, 0, 0
        start = time.perf_counter()
        for _ in range(sims):
            shared = effects(rng, rows, cols, sd_shared, sd_shared)
            pair = as_pair(
                cases, correct_draw(rng, mu, rows, cols, sd_t, sd_s, shared), correct_draw(rng, mu, rows, cols, sd_t, sd_s, shared)
            )
            doc = D.compare(pair, boot)
            tests = doc["by_functionality"].values()
            flags = sum(t["flagged"] for t in tests)
            any_flag += flags > 0
            n_flags += flags
            per_test += sum(t["p_value"] <= 0.05 for t in tests)
        share = any_flag / sims
        out[label] = {
            "sims": sims,
            "family_wise_error_rate": share,
            "mc_se": round(float(np.sqrt(0.05 * 0.95 / sims)), 4),
            "flags": n_flags,
            "unadjusted_rejection_rate_per_test": round(per_test / (sims * len(names)), 4),
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(
            f"level  {label:<42} FWER {share:.3f} (alpha 0.05, MC se {out[label]['mc_se']}); "
            f"per-test p<=0.05 rate {out[label]['unadjusted_rejection_rate_per_test']:.3f}",
            flush=True,
        )
    power = {}
    settings = {
        "shared difficulty (sd 1.0) + own effects (sd 0.3)": (0.3, 0.3, 1.0),
        "own template and slur effects (sd 1.0, 1.0)": (1.0, 1.0, 0.0),
    }
    for setting, (sd_t, sd_s, sd_shared) in settings.items():
        for target in ("slur_h", "derog_neg_emote_h"):
            hits, diffs = 0, []
            drop = np.where(funcs == target, 1.2, 0.0)  # about 20 points lower accuracy on that test
            for _ in range(sims):
                shared = effects(rng, rows, cols, sd_shared, sd_shared)
                a = correct_draw(rng, mu, rows, cols, sd_t, sd_s, shared)
                b = correct_draw(rng, mu - drop, rows, cols, sd_t, sd_s, shared)
                doc = D.compare(as_pair(cases, a, b), boot)
                hits += doc["by_functionality"][target]["worse"]
                diffs.append(doc["by_functionality"][target]["difference"])
            t = doc["by_functionality"][target]
            power[f"{target}, {setting}"] = {
                "sims": sims,
                "flagged_worse_share": hits / sims,
                "templates": t["n_templates"],
                "slurs": t["n_fillers"],
                "cases": t["n"],
                "mean_difference": round(float(np.mean(diffs)), 1),
            }
            print(
                f"power  {target:<18} {setting:<48} ({t['n_templates']} templates, {t['n_fillers']} slurs, "
                f"mean difference {np.mean(diffs):+.1f}): flagged worse in {hits}/{sims}",
                flush=True,
            )
    return {"level": out, "power": power}


def coverage(sims: int, samples: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    rows, cols = np.repeat(np.arange(8), 18), np.tile(np.arange(18), 8)
    out = {}
    patterns = {
        "errors by filler only": lambda: 0.5 + rng.choice([-0.5, 0.5], 18)[cols],
        "errors by template only": lambda: 0.5 + rng.choice([-0.4, 0.4], 8)[rows],
        "independent errors": lambda: np.full(len(rows), 0.7),
    }
    truth = {"errors by filler only": 0.5, "errors by template only": 0.5, "independent errors": 0.7}
    for label, draw in patterns.items():
        hit2 = hit1 = 0
        widths2, widths1 = [], []
        for i in range(sims):
            right = (rng.random(len(rows)) < draw()).astype(int)
            gold = np.ones(len(rows), dtype=int)
            boot = M.Bootstrap(samples, i, 0.95)
            lo2, hi2 = M.bootstrap_ci(gold, right, ["accuracy"], boot, rows, fillers=cols)["accuracy"]
            lo1, hi1 = M.bootstrap_ci(gold, right, ["accuracy"], boot, rows)["accuracy"]
            t = truth[label] * 100
            hit2 += lo2 <= t <= hi2
            hit1 += lo1 <= t <= hi1
            widths2.append(hi2 - lo2)
            widths1.append(hi1 - lo1)
        out[label] = {
            "sims": sims,
            "truth": truth[label] * 100,
            "two_way_coverage": hit2 / sims,
            "template_only_coverage": hit1 / sims,
            "two_way_mean_width": round(float(np.mean(widths2)), 1),
            "template_only_mean_width": round(float(np.mean(widths1)), 1),
        }
        print(
            f"cover  {label:<26} two-way {hit2 / sims:.3f} (width {out[label]['two_way_mean_width']}), "
            f"templates only {hit1 / sims:.3f} (width {out[label]['template_only_mean_width']})",
            flush=True,
        )
    return out


def speed(cases: pl.DataFrame, samples: int, repeats: int = 5) -> dict:
    rng = np.random.default_rng(1)
    gold = cases["gold"].to_numpy()
    a = (rng.random(len(gold)) < 0.8).astype(np.int8)
    b = (rng.random(len(gold)) < 0.8).astype(np.int8)
    pair = as_pair(cases, a, b)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        D.compare(pair, M.Bootstrap(samples))
        times.append(time.perf_counter() - start)
    print(
        f"speed  one suite (29 tests + all cases), {samples} sign draws: median {np.median(times):.2f} s "
        f"({os.environ.get('OMP_NUM_THREADS', 'default')} BLAS threads)",
        flush=True,
    )
    return {"samples": samples, "repeats": repeats, "median_s": round(float(np.median(times)), 3), "max_s": round(float(max(times)), 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--samples", type=int, default=20000, help="sign draws per test (evaluation.diff_samples)")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap resamples of the coverage runs (evaluation.bootstrap_samples)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", type=Path)
    args = parser.parse_args()
    cases = design()
    doc = {
        "script": "benchmarks/bench_paired_test.py",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "alpha": 0.05,
        "settings": {"sims": args.sims, "samples": args.samples, "boot": args.boot, "seed": args.seed},
        "design": {
            "cases": cases.height,
            "templates": int(cases[scoring.CLUSTER].max()) + 1,
            "slur_fillers": int(cases[scoring.FILLER].max()) + 1,
            "functional_tests": cases["functionality"].n_unique(),
        },
        "speed": speed(cases, args.samples),
        **level_and_power(cases, args.sims, args.samples, args.seed),
        "coverage": coverage(args.sims, args.boot, args.seed),
    }
    if args.record:
        args.record.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.record}")


if __name__ == "__main__":
    main()
