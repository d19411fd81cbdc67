"""Stage ``train_<model>``: fine-tune one classifier with its paper's recipe
under the active profile's budget, and write its ``save_pretrained``
directory, training log and model card.

The pieces: :mod:`~hatecheck_pipeline.models.recipe` (recipe, labels,
budget), :mod:`~hatecheck_pipeline.models.splits` (train and dev data),
:mod:`~hatecheck_pipeline.models.trainable` (the classifier and its
parameter groups), :mod:`~hatecheck_pipeline.models.loop` (the restartable
loop), :mod:`~hatecheck_pipeline.models.grid` (the grid search),
:mod:`~hatecheck_pipeline.models.selection` (dev metrics, early stopping)
and :mod:`~hatecheck_pipeline.models.checkpoints`.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.cpu import bounded_threads
from hatecheck_pipeline.core.files import write_text
from hatecheck_pipeline.models.attention import Supervision, read_rationales
from hatecheck_pipeline.models.bf16 import cpu_bf16_on
from hatecheck_pipeline.models.checkpoints import clear_checkpoints, save_dir_atomic
from hatecheck_pipeline.models.grid import grid_search
from hatecheck_pipeline.models.loop import train_loop
from hatecheck_pipeline.models.recipe import BINARY, LabelSet, Recipe, budget, budget_note, effective_recipe
from hatecheck_pipeline.models.splits import load_splits
from hatecheck_pipeline.models.trainable import load_for_training


def git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def run(
    model_name: str,
    base_ref: str,
    data_files: Sequence[Path],
    recipe_params: Mapping[str, Any],
    profile: Profile,
    seed: int,
    out_dir: Path,
    ckpt_dir: Path,
    log_path: Path,
    card_path: Path,
    threads: int = 2,
    amp: bool = True,
    eval_batch_size: int = 64,
    progress: bool = True,
    on_checkpoint: Callable[[int], None] | None = None,
    bases: Mapping[str, Path] | None = None,
    rationales_file: Path | None = None,
    recipe_override: Mapping[str, Any] | None = None,
) -> dict:
    """Train one model and write its directory, training log and card
    (``on_checkpoint``: see :func:`train_loop`; ``bases``: the pipeline base
    model directories, see :func:`~hatecheck_pipeline.models.base.resolve`;
    ``rationales_file``: the training posts' rationales, for a recipe with
    ``attention_supervision``; ``recipe_override``: the recipe settings the
    profile set for the model's role, already in ``recipe_params``, named in
    the card's budget note)."""
    from hatecheck_pipeline import __version__
    from hatecheck_pipeline.models import base as basemodels

    torch.set_num_threads(bounded_threads(threads))
    resolved = basemodels.resolve(base_ref, bases)
    recipe = Recipe.from_params(recipe_params, profile.get("max_epochs"))
    freeze = bool(profile.get("freeze_embeddings", False))
    lower = float(profile.get("freeze_lower_layers") or 0.0)
    bucketing = bool(profile.get("length_bucketing", False))
    cpu_bf16 = profile.get("cpu_bf16", False)  # true | false | "auto" (models/bf16.py: cpu_bf16_on)
    labels = LabelSet.from_recipe(recipe_params)
    supervision = Supervision.from_recipe(recipe_params)
    train_split, dev_split, counts = load_splits(
        data_files, profile.get("max_train_per_model"), seed, labels, profile.get("max_train_per_dataset")
    )
    if supervision is not None:
        if recipe.grid_search or rationales_file is None:
            raise ValueError("attention supervision needs a rationales file for the training posts (and no grid search)")
        given = read_rationales(Path(rationales_file))
        train_split.rationales = [given.get(i, []) for i in train_split.ids]
        counts.append({"rationales_file": str(rationales_file), "train_with_rationales": sum(bool(r) for r in train_split.rationales)})
    data_hashes = {str(f): basemodels.content_hash(f) for f in data_files}
    base_hash = basemodels.local_hash(resolved)
    fingerprint = {
        "base": base_ref,
        "base_hash": base_hash,
        "data": data_hashes,
        "recipe": recipe.fingerprint(),
        "seed": seed,
        "max_length": profile["max_length"],
        "max_train_per_model": profile.get("max_train_per_model"),
        "freeze_embeddings": freeze,
        "length_bucketing": bucketing,
    }
    if lower:
        fingerprint["freeze_lower_layers"] = lower
    if cpu_bf16_on(cpu_bf16):  # what ran: "auto" where bf16 is not faster trains the fp32 run
        fingerprint["cpu_bf16"] = True
    if profile.get("max_train_per_dataset") is not None:
        fingerprint["max_train_per_dataset"] = profile["max_train_per_dataset"]
    if labels != BINARY:  # binary models keep their fingerprint (and checkpoints)
        fingerprint["labels"] = asdict(labels)
    if supervision is not None:
        fingerprint["attention_supervision"] = asdict(supervision)
        fingerprint["rationales"] = basemodels.content_hash(Path(rationales_file))
    tokenizer = basemodels.load_tokenizer(resolved)
    common = dict(
        seed=seed,
        max_length=profile["max_length"],
        ckpt_dir=ckpt_dir,
        fingerprint=fingerprint,
        amp=amp,
        cpu_bf16=cpu_bf16,
        length_bucketing=bucketing,
        eval_batch_size=eval_batch_size,
        progress=progress,
        on_checkpoint=on_checkpoint,
        labels=labels,
    )
    started = time.perf_counter()
    if recipe.grid_search:
        model, log = grid_search(
            resolved, tokenizer, train_split, dev_split, recipe,
            max_epochs=profile.get("max_epochs"), freeze_embeddings=freeze, freeze_lower_layers=lower, **common,
        )  # fmt: skip
    else:
        model = load_for_training(
            resolved,
            recipe.dropout,
            seed,
            labels,
            eager_attention=supervision is not None,
            freeze_embeddings=freeze,
            freeze_lower_layers=lower,
            pooling=recipe.pooling,
        )
        log = train_loop(model, tokenizer, train_split, dev_split, recipe, supervision=supervision, **common)
    log["model"] = model_name
    log["data"] = counts
    log["freeze_embeddings"] = freeze
    log["freeze_lower_layers"] = lower
    log["trainable_parameters"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log["train_seconds"] = round(time.perf_counter() - started, 1)  # this run (a resumed run: since the resume)

    def write(tmp: Path) -> None:
        model.cpu().save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    save_dir_atomic(Path(out_dir), write)
    write_text(json.dumps(log, indent=2), log_path)  # atomic: a killed run leaves no partial log
    stand_in = not base_ref.startswith(("bert-base", "cardiffnlp/"))
    card = {
        "model": model_name,
        "base_model": {
            "ref": base_ref,
            "resolved": resolved,
            "description": basemodels.describe(base_ref),
            "content_sha256": base_hash,
            "stand_in": stand_in,
        },
        "profile": profile.name,
        "budget": budget(profile),
        "budget_note": budget_note(profile, len(data_files), log.get("precision") == "bf16 autocast (CPU)", recipe_override),
        "training_data": counts,
        "training_data_sha256": data_hashes,
        "recipe": asdict(recipe),
        "grid_search": (
            {
                **{k: v for k, v in log["grid_search"].items() if k != "trials"},
                "trials": [{k: v for k, v in t.items() if k != "history"} for t in log["grid_search"]["trials"]],
                "note": "final model = the selected configuration's weights",
            }
            if recipe.grid_search
            else None
        ),
        "selected_recipe": log["recipe"],
        "seed": seed,
        "selected_epoch": log["selected_epoch"],
        "train_seconds": log["train_seconds"],
        "final_dev": next((r for r in log["epochs"] if r["epoch"] == log["selected_epoch"]), None),
        "device": log["device"],
        "precision": log.get("precision"),  # what the training steps ran in (models/runtime.py: precision)
        "code_version": __version__,
        "git_commit": git_commit(),
        "labels": labels.id2label,
        **({"label_column": labels.column} if labels != BINARY else {}),
        **({"attention_supervision": asdict(supervision)} if supervision is not None else {}),
    }
    write_text(json.dumps(card, indent=2), card_path)
    clear_checkpoints(Path(ckpt_dir))  # last: a kill before here resumes from them
    return log


def train(
    model: str,
    data: Sequence[Path],
    bases: Mapping[str, Path],
    model_dir: Path,
    card: Path,
    checkpoints: Path,
    training_log: Path,
    profile: Profile,
    spec: Mapping[str, Any],
    recipe: Mapping[str, Any],
    amp: bool,
    threads: int,
    rationales: Path | None = None,
) -> str:
    """Stage ``train_<model>``: fine-tune ``model`` (its params ``spec``) with
    ``recipe`` on its processed training tables ``data``, starting from the
    active profile's base model for its role (a ``pipeline:`` base is read
    from ``bases``). Resumes from ``checkpoints``; writes ``model_dir``,
    ``training_log`` and the model ``card``, then empties ``checkpoints``. ``rationales``: the training
    posts' rationales of an attention-supervised recipe (BERT-HateXplain:
    cross-entropy + lambda x attention loss)."""
    from hatecheck_pipeline.models.base import role_ref

    # the profile's recipe settings for this role (a small budget wants a
    # larger step) and its grid-search switch; in the card's recipe
    recipe, override = effective_recipe(recipe, profile, spec["role"])
    log = run(
        model,
        role_ref(profile, spec["role"]),
        [Path(f) for f in data],
        recipe,
        profile,
        spec["seed"],
        Path(model_dir),
        Path(checkpoints),
        Path(training_log),
        Path(card),
        threads=threads,
        amp=amp,
        bases=bases,
        rationales_file=Path(rationales) if rationales is not None else None,
        recipe_override=override,
    )
    best = next(r for r in log["epochs"] if r["epoch"] == log["selected_epoch"])
    kind = " (attention-supervised)" if rationales is not None else ""
    return f"{model}{kind}: epoch {log['selected_epoch']} dev macro F1 {best['dev_macro_f1']:.3f} -> {model_dir}"
