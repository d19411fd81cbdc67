"""Pages rendered from the benchmark scripts' records: the model screens
of ``benchmarks/screen_model.py --record`` (``benchmarks/records/``), which
docs/models.md includes, and the intervals page from
``benchmarks/intervals.json`` (``benchmarks/bench_intervals.py``: case- vs
template-level bootstrap intervals on the real suites and the time of one
score stage), which docs/intervals.md includes."""

from __future__ import annotations

import re
from pathlib import Path
from statistics import mean
from typing import Any, Mapping

from hatecheck_pipeline.docsite.formatting import MHC_ORDER, md_table, num, path_cell, read_json


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
        rows.append(
            [
                screened_model(doc),
                str(doc["seed"]),
                num(doc["train_seconds"], 0),
                *(num(v) for v in cells),
                f"**{num(doc['mhc_mean'])}**{interval}",
                doc.get("note", ""),
                path_cell(rel),
            ]
        )
    for base, runs in by_base.items():
        if len(runs) > 1:
            cols = [mean(c) if all(v is not None for v in c) else None for c in zip(*runs)]
            rows.append(
                [f"{base}, mean of {len(runs)} seeds", "", num(cols[0], 0), *(num(v) for v in cols[1:-1]), f"**{num(cols[-1])}**", "", ""]
            )
    head = [
        "base model (xlmt role)",
        "seed",
        "training s",
        *(f"held-out {k}" for k in heldout),
        *(f"MHC {lang}" for lang in langs),
        "MHC mean [95% interval]",
        "how it ran",
        "source",
    ]
    return md_table(head, rows)


def screens_page(pattern: Path) -> str:
    """The screen table of the records matching ``pattern`` (relative to the
    working directory), in the order of their names."""
    return screen_table([(p.as_posix(), read_json(p)) for p in sorted(Path().glob(Path(pattern).as_posix()))]) + "\n"


INTERVALS_SCRIPT = "benchmarks/bench_intervals.py"
FIGURE_NAMES = {"overall accuracy": "accuracy", "overall macro_f1": "macro F1", "contrast both_correct": "contrast pairs both right"}
BREAKDOWNS = {"by_functionality": "per functionality", "by_target": "per target group"}


def suite_name(suite: str) -> str:
    """A suite's name as the pages write it.

    >>> suite_name("hatecheck"), suite_name("mhc_italian")
    ('HateCheck', 'MHC Italian')
    """
    return "HateCheck" if suite == "hatecheck" else "MHC " + suite.removeprefix("mhc_").capitalize()


def _ratio(template: float, case: float) -> str:
    return num(template / case) if case else "–"


def intervals_page(source: Path) -> str:
    """``benchmarks/intervals.json`` as tables: each overall figure with its
    case- and template-level interval and how many times wider the
    template-level one is, the median and largest ratio of the widths per
    functionality and per target group, and the score stage's time."""
    doc = read_json(Path(source))
    rel = path_cell(Path(source).as_posix())
    figures, breakdowns, last = [], [], None
    for row in doc["intervals"]:
        what = "same" if row["predictions"] == last else row["predictions"]
        last = row["predictions"]
        if "groups" in row:
            section = row["figure"].split(" ", 1)[0]
            breakdowns.append(
                [
                    suite_name(row["suite"]),
                    BREAKDOWNS.get(section, section),
                    str(row["groups"]),
                    num(row["median_ratio"], 2),
                    num(row["max_ratio"], 2),
                ]
            )
            continue
        pairs = " pairs" if row["figure"].startswith("contrast") else ""
        figures.append(
            [
                suite_name(row["suite"]),
                what,
                FIGURE_NAMES.get(row["figure"], row["figure"]),
                num(row["value"]),
                f"[{num(row['case_ci'][0])}, {num(row['case_ci'][1])}] ({num(row['case_width'])})",
                f"[{num(row['template_ci'][0])}, {num(row['template_ci'][1])}] ({num(row['template_width'])})",
                _ratio(row["template_width"], row["case_width"]),
                f"{row['cases']:,}{pairs} / {row['templates']:,}",
            ]
        )
    parts = [
        f"Every figure below is from {rel}, written by `python {INTERVALS_SCRIPT}` on a machine with "
        f"{doc.get('cpus', '?')} CPUs (1-minute load average {num((doc.get('load_average') or [None])[0], 1)} when it finished).",
        "### Interval widths\n\nIn percent; the width in brackets; *ratio*: the template-level width over the case-level "
        "one; *cases / templates*: the cases (contrast: pairs) and the templates (clusters) resampled.\n\n"
        + md_table(
            [
                "suite",
                "predictions",
                "figure",
                "value",
                "case-level 95% CI (width)",
                "template-level 95% CI (width)",
                "ratio",
                "cases / templates",
            ],
            figures,
        ),
        "### Per functionality and per target group\n\nThe template-level interval width of each group's accuracy over "
        "its case-level width (groups whose case-level width is not zero).\n\n"
        + md_table(["suite", "groups", "groups compared", "median ratio", "largest ratio"], breakdowns),
    ]
    timing = doc.get("score_stage_timing") or {}
    if timing:
        rows = [
            [
                name,
                num(t["process_s"], 2),
                num(t["imports_and_scoring_s"], 2),
                ", ".join(f"{num(a, 2)} / {num(b, 2)}" for a, b in t.get("runs") or []),
            ]
            for name, t in timing.items()
        ]
        parts.append(
            "### Time of one score stage\n\nThe score stage's work on the whole suite (1,000 resamples) in a fresh "
            "interpreter, best of the runs, in seconds; *baseline*: another source folder timed in the same run.\n\n"
            + md_table(["suite (source)", "process s", "imports and scoring s", "runs (process / imports and scoring)"], rows)
        )
    return "\n\n".join(parts) + "\n"


def paired_test_page(pattern: Path) -> str:
    """The level, power, coverage and speed of the paired test and the
    two-way intervals, from the newest record of
    ``benchmarks/bench_paired_test.py --record`` matching ``pattern``."""
    path = sorted(Path().glob(Path(pattern).as_posix()))[-1]
    doc = read_json(path)
    s, d = doc["settings"], doc["design"]
    level_rows = [
        [
            label,
            f"{r['sims']:,}",
            num(100 * r["family_wise_error_rate"]),
            num(100 * r["mc_se"]),
            num(100 * r["unadjusted_rejection_rate_per_test"]),
            str(r["flags"]),
        ]
        for label, r in doc["level"].items()
    ]
    power_rows = [
        [
            f"`{name.split(', ', 1)[0]}`",
            name.split(", ", 1)[1] if ", " in name else "",
            f"{r['cases']:,}",
            str(r["templates"]),
            str(r["slurs"]),
            num(r.get("mean_difference")),
            num(100 * r["flagged_worse_share"]),
        ]
        for name, r in doc["power"].items()
    ]
    cover_rows = [
        [
            label,
            num(r["truth"]),
            num(100 * r["two_way_coverage"]),
            num(r["two_way_mean_width"]),
            num(100 * r["template_only_coverage"]),
            num(r["template_only_mean_width"]),
        ]
        for label, r in doc["coverage"].items()
    ]
    sp = doc["speed"]
    return (
        f"From {path_cell(path.as_posix())} (`{doc['script']}`, {doc['when']}, {doc['machine']}): the real HateCheck design "
        f"({d['cases']:,} cases, {d['functional_tests']} functional tests, {d['templates']} templates, {d['slur_fillers']} slur "
        f"fillers), {s['samples']:,} sign draws per test, seed {s['seed']}, alpha {doc['alpha']}.\n\n"
        "**Level**: two classifiers that differ only by chance (the same accuracy per functional test); "
        "family-wise error rate = share of simulated pairs with any functional test flagged (Holm over all of them).\n\n"
        + md_table(
            [
                "simulated classifiers",
                "pairs",
                "family-wise error rate %",
                "its Monte Carlo s.e. at 5%",
                "share of tests with p ≤ 0.05 %",
                "flags in all",
            ],
            level_rows,
        )
        + "\n\n**Power**: B's accuracy lower on one functional test (by about 20 points); share of pairs where that test is "
        "flagged worse.\n\n"
        + md_table(
            ["functional test", "simulated classifiers", "cases", "templates", "slurs", "mean difference", "flagged worse %"], power_rows
        )
        + f"\n\n**Coverage** of the score stages' 95% intervals ({s['boot']:,} resamples) on a slur_h-shaped design "
        "(8 templates × 18 slurs), truth = the population accuracy:\n\n"
        + md_table(
            ["errors", "truth %", "two-way coverage %", "two-way mean width", "templates-only coverage %", "templates-only mean width"],
            cover_rows,
        )
        + f"\n\n**Speed**: one suite's paired test (29 functional tests and all cases, {sp['samples']:,} sign draws), "
        f"median of {sp['repeats']}: {sp['median_s']} s on one core.\n"
    )
