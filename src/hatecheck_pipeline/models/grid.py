"""The HateCheck paper's grid search: one fresh fine-tuning per
configuration of the recipe's grid, the best on the dev split kept;
restartable trial by trial."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from hatecheck_pipeline.models.checkpoints import save_best
from hatecheck_pipeline.models.loop import train_loop
from hatecheck_pipeline.models.recipe import BINARY, GRID_KEYS, LabelSet, Recipe, trial_name
from hatecheck_pipeline.models.runtime import pick_device
from hatecheck_pipeline.models.selection import METRICS
from hatecheck_pipeline.models.splits import Split
from hatecheck_pipeline.models.trainable import load_for_training


def grid_search(
    base: str,
    tokenizer,
    train_split: Split,
    dev_split: Split,
    recipe: Recipe,
    *,
    seed: int,
    ckpt_dir: Path,
    fingerprint: Mapping[str, Any],
    max_epochs: int | None = None,
    freeze_embeddings: bool = False,
    freeze_lower_layers: float = 0.0,
    labels: LabelSet = BINARY,
    **loop: Any,
):
    """The HateCheck paper's grid search: one fresh fine-tuning of ``base``
    per configuration of ``recipe.trials()``, selected on the dev metric
    ``recipe.select_on`` (dev loss; ties keep the earlier trial). Returns
    ``(model with the selected trial's weights, log)``. ``loop``: the
    keyword options each trial's :func:`train_loop` takes as they are
    (``max_length``, ``amp``, ``cpu_bf16``, ``length_bucketing``,
    ``eval_batch_size``, ``progress``, ``on_checkpoint``).

    Restartable: each trial checkpoints and resumes like :func:`train_loop`
    under ``ckpt_dir/trials/<trial>``; a finished trial is recorded in
    ``ckpt_dir/grid_trials.json`` (the best trial's weights in
    ``ckpt_dir/grid/best``) and its checkpoints are removed, so a killed
    search re-run with the same parameters skips the finished trials and
    resumes the interrupted one."""
    from safetensors.torch import load_model

    ckpt_dir = Path(ckpt_dir)
    record = ckpt_dir / "grid_trials.json"
    fp = json.loads(json.dumps(dict(fingerprint), default=str))
    done: dict[str, dict] = {}
    if record.exists():
        state = json.loads(record.read_text("utf-8"))
        if state.get("fingerprint") == fp:
            done = {t["trial"]: t for t in state["trials"]}
        else:
            print(f"discarding the grid search in {ckpt_dir}: parameters or data changed", flush=True)
            shutil.rmtree(ckpt_dir)
    sign = -1.0 if recipe.select_on.endswith("loss") else 1.0
    trials = recipe.trials(max_epochs)
    best: dict | None = None
    for t in done.values():
        if best is None or sign * t[recipe.select_on] > sign * best[recipe.select_on]:
            best = t
    for i, r in enumerate(trials, 1):
        name = trial_name(r)
        if name in done:
            print(f"grid trial {i}/{len(trials)} {name}: recorded, skipped", flush=True)
            continue
        print(f"grid trial {i}/{len(trials)} {name}", flush=True)
        model = load_for_training(
            base, r.dropout, seed, labels, freeze_embeddings=freeze_embeddings, freeze_lower_layers=freeze_lower_layers, pooling=r.pooling
        )
        log = train_loop(
            model,
            tokenizer,
            train_split,
            dev_split,
            r,
            seed=seed,
            ckpt_dir=ckpt_dir / "trials" / name,
            fingerprint={**fp, "trial": r.fingerprint()},
            labels=labels,
            **loop,
        )
        row = next(x for x in log["epochs"] if x["epoch"] == log["selected_epoch"])
        entry = {
            "trial": name,
            "epochs": r.epochs,
            "lr": r.lr,
            "batch_size": r.batch_size,
            "selected_epoch": log["selected_epoch"],
            **{k: row[k] for k in ("train_loss", *METRICS)},
            "log": log,
        }
        if best is None or sign * entry[recipe.select_on] > sign * best[recipe.select_on]:
            best = entry
            (ckpt_dir / "grid").mkdir(parents=True, exist_ok=True)
            save_best(ckpt_dir / "grid", model)
        done[name] = entry
        tmp = record.with_suffix(".json.tmp")
        tmp.write_text(
            json.dumps({"fingerprint": fp, "trials": list(done.values()), "selected": best["trial"]}, indent=1, default=float), "utf-8"
        )
        os.replace(tmp, record)
        shutil.rmtree(ckpt_dir / "trials" / name, ignore_errors=True)
    assert best is not None
    model = load_for_training(
        base,
        recipe.dropout,
        seed,
        labels,
        freeze_embeddings=freeze_embeddings,
        freeze_lower_layers=freeze_lower_layers,
        pooling=recipe.pooling,
    )
    load_model(model, str(ckpt_dir / "grid" / "best" / "model.safetensors"), device="cpu")
    model.to(pick_device())
    ordered = [done[trial_name(r)] for r in trials]
    log = dict(best["log"])
    log["grid_search"] = {
        "selected_on": recipe.select_on,
        "selected": {k: best[k] for k in ("trial", *GRID_KEYS)},
        "trials": [{k: v for k, v in t.items() if k != "log"} | {"history": t["log"]["epochs"]} for t in ordered],
    }
    return model, log
