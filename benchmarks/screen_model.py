"""Quality screen of a fine-tuning setting (a script, not a test).

Trains one model (default XTC) with the given parameter overrides, predicts
and scores its held-out sets in full and a seeded draw of ``--cases`` cases
of each MHC language, and prints the training time, the held-out macro F1
next to the paper's (MHC Table 6) and the MHC macro F1 per language with
their mean next to the paper's (MHC Table 7). This is how the settings in
the embedded profile (docs/models.md) were screened: a draw of
1,000 cases per language gives the mean within about +/-1.5 points of
run-to-run spread, in ~10 minutes for XTC on 2 cores instead of ~40 for the
full suites.

Run it in a scratch clone with the data stages built (e.g.
``python benchmarks/bench_pipeline.py --run data`` and ``hatecheck-pipeline
run convert_multilingual-e5-small``): the stages run through
``hatecheck-pipeline --set ... run STAGE``, so with overrides the outputs no
longer match ``params.yaml`` and ``dvc.lock`` (``dvc repro`` re-makes them).

    python benchmarks/screen_model.py [--model XTC] [--cases 1000] [--set KEY=VALUE ...] [--project DIR] [--record FILE]

``--record FILE`` also writes the figures as JSON (the docs quote screens
from such records); ``--no-run`` only collects the outputs a screen already
wrote (the training time from the model card).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.evaluation import published
from hatecheck_pipeline.evaluation.cells import Source
from hatecheck_pipeline.evaluation.shot_tables import ShotReplicates, with_interval
from hatecheck_pipeline.pipeline.registry import build_stages

BIN = Path(sys.executable).parent


def screen_stages(params: Mapping[str, Any], model: str) -> dict[str, list]:
    """The model's train stage, and its held-out and MHC predict/score stages
    (registry order)."""
    stages = build_stages(params)
    picked: dict[str, list] = {"train": [], "heldout": [], "mhc": []}
    for s in stages:
        if s.name == f"train_{model}":
            picked["train"].append(s)
        for group in ("heldout", "mhc"):
            if (
                s.name == f"predict_{model}_{group}"
                or s.name.startswith(f"predict_{model}_{group}_")
                or s.name.startswith(f"score_{model}_{group}_")
            ):
                picked[group].append(s)
    if not picked["train"]:
        raise SystemExit(f"no stage train_{model}: is {model} a fine-tuned model of params.yaml?")
    return picked


def macro_f1(doc: Mapping[str, Any]) -> float:
    return float(doc["overall"]["macro_f1"]["value"])


def summary(model: str, metrics: Mapping[str, Mapping[str, Any]], tables: Mapping[str, Any], train_s: float) -> str:
    """Markdown tables of held-out and MHC macro F1 (``metrics``: suite name
    -> metrics document) with the paper's figures from ``tables``."""
    t6 = published.lookup("mhc_t6", model, tables)  # (dataset, metric) -> (value, table, source)
    t7 = published.lookup("mhc_t7", model, tables)
    lines = [f"{model}: training {train_s:.0f} s", "", "| held-out set | n | macro F1 | paper | difference |", "|---|---|---|---|---|"]
    for name, doc in metrics.items():
        if name.startswith("heldout_"):
            dataset = name.removeprefix("heldout_")
            paper = t6.get((dataset, "macro_f1"), (None,))[0]
            diff = f"{macro_f1(doc) - paper:+.1f}" if paper is not None else ""
            lines.append(f"| {dataset} | {doc['overall']['n']} | {macro_f1(doc):.1f} | {paper if paper is not None else ''} | {diff} |")
    mhc = {name.removeprefix("mhc_"): doc for name, doc in metrics.items() if name.startswith("mhc_")}
    if mhc:
        langs = list(mhc)
        ours = [macro_f1(mhc[lang]) for lang in langs]
        paper = [t7.get((lang, "macro_f1"), (None,))[0] for lang in langs]
        lines += ["", "| | " + " | ".join(langs) + " | mean |", "|---|" + "---|" * (len(langs) + 1)]
        lines.append(
            f"| macro F1 (n={mhc[langs[0]]['overall']['n']} per language) | "
            + " | ".join(f"{v:.1f}" for v in ours)
            + f" | **{sum(ours) / len(ours):.1f}** |"
        )
        if all(v is not None for v in paper):
            lines.append("| paper | " + " | ".join(f"{v:.1f}" for v in paper) + f" | {sum(paper) / len(paper):.1f} |")
    return "\n".join(lines)


def mean_interval(model: str, replicates: Mapping[str, str], mean: float, level: float = 0.95) -> dict[str, Any] | None:
    """The bootstrap interval of the MHC macro F1 mean over languages
    (``mean``, in percent; ``replicates``: suite -> its score stage's
    bootstrap values), each language resampled independently as in the
    report's shots tables; None where a language has no bootstrap values."""
    reps = ShotReplicates([Source(model, suite, suite, None, "", "", replicates=path) for suite, path in replicates.items()])
    values = reps.mean(model, list(replicates), "overall", None, "macro_f1")
    fig = with_interval(mean, values, level)
    if "ci_low" not in fig:
        return None
    return {"ci_low": fig["ci_low"], "ci_high": fig["ci_high"], "level": level}


def record(
    model: str,
    overrides: list[str],
    cases: int,
    metrics: Mapping[str, Mapping[str, Any]],
    card: Mapping[str, Any],
    replicates: Mapping[str, str],
) -> dict:
    """The screen's figures: held-out and MHC macro F1 with their bootstrap
    intervals, the MHC mean and its interval, the training time and what
    was trained."""

    def f1(doc):
        return {k: doc["overall"]["macro_f1"][k] for k in ("value", "ci_low", "ci_high")} | {"n": doc["overall"]["n"]}

    mhc = {name.removeprefix("mhc_"): f1(doc) for name, doc in metrics.items() if name.startswith("mhc_")}
    mean = round(sum(v["value"] for v in mhc.values()) / len(mhc), 2) if mhc else None
    return {
        "model": model,
        "overrides": overrides,
        "base_model": card["base_model"]["description"],
        "base_model_sha256": card["base_model"].get("content_sha256"),
        "pooling": card["recipe"].get("pooling", "model"),  # the classifier head (models/pooled.py)
        "profile": card["profile"],
        "seed": card["seed"],
        "train_seconds": card["train_seconds"],
        "precision": card.get("precision"),  # what training ran in (models/bf16.py for auto)
        "device": card.get("device"),
        "git_commit": card.get("git_commit"),
        "mhc_cases_per_language": cases or None,
        "heldout": {name.removeprefix("heldout_"): f1(doc) for name, doc in metrics.items() if name.startswith("heldout_")},
        "mhc": mhc,
        "mhc_mean": mean,
        "mhc_mean_interval": mean_interval(model, replicates, mean) if replicates and mean is not None else None,
    }


def run_stage(name: str, overrides: list[str], project: Path, log) -> float:
    cmd = [str(BIN / "hatecheck-pipeline"), *[a for o in overrides for a in ("--set", o)], "run", name]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=project, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}); see {log.name}")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", type=Path, default=Path.cwd())
    ap.add_argument("--model", default="XTC")
    ap.add_argument("--cases", type=int, default=1000, help="seeded draw of cases per MHC language (0 = all)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--log", type=Path, default=Path("logs/screen_model.log"))
    ap.add_argument("--record", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--no-run", action="store_true", help="collect the outputs a screen already wrote")
    ap.add_argument("--note", default=None, help="how the screen ran (e.g. beside another job), kept in the record")
    args = ap.parse_args()
    project = args.project.resolve()
    os.chdir(project)
    params = load_params("params.yaml", args.overrides)
    stages = screen_stages(params, args.model)
    cap = [f"profiles.{params['profile']}.max_cases_per_suite={args.cases}"] if args.cases else []
    args.log.parent.mkdir(parents=True, exist_ok=True)
    metrics: dict[str, Any] = {}
    replicates: dict[str, str] = {}
    with args.log.open("a" if args.no_run else "w") as log:
        if not args.no_run:
            print(f"training {args.model} ({', '.join(args.overrides) or 'params.yaml as is'}); log: {args.log}", flush=True)
            run_stage(stages["train"][0].name, args.overrides, project, log)
        for group, extra in (("heldout", []), ("mhc", cap)):
            for s in stages[group]:
                if not args.no_run:
                    print(f"  {s.name}", flush=True)
                    run_stage(s.name, [*args.overrides, *extra], project, log)
                if s.name.startswith("score_"):
                    metrics[s.args["suite"].name] = json.loads(Path(s.outputs["metrics"].path).read_text("utf-8"))
                    if group == "mhc":
                        replicates[s.args["suite"].name] = s.outputs["replicates"].path
    card = json.loads(Path(stages["train"][0].outputs["card"].path).read_text("utf-8"))
    print(summary(args.model, metrics, published.load(), card["train_seconds"]))
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        doc = record(args.model, args.overrides, args.cases, metrics, card, replicates) | ({"note": args.note} if args.note else {})
        args.record.write_text(json.dumps(doc, indent=1) + "\n", "utf-8")
        print(f"wrote {args.record}")


if __name__ == "__main__":
    main()
