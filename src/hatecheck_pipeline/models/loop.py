"""The fine-tuning loop: one plain torch loop for CPU and CUDA (autocast
mixed precision when CUDA is present; bf16 autocast on a CPU when the
profile asks). Each epoch ends with a checkpoint under the model's
checkpoint folder (:mod:`~hatecheck_pipeline.models.checkpoints`). A killed
run (even ``kill -9``) re-run with the same parameters resumes from the
last complete checkpoint and reaches the same weights as an uninterrupted
run: the data order of every epoch is drawn from a generator seeded by
(seed, epoch), and dropout's RNG state is saved."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import torch

from hatecheck_pipeline.models.attention import Supervision, attention_loss, pad_targets, token_targets
from hatecheck_pipeline.models.checkpoints import last_checkpoint, load_optimizer, restore_rng, save_best, save_checkpoint
from hatecheck_pipeline.models.recipe import BINARY, LabelSet, Recipe, class_weights
from hatecheck_pipeline.models.runtime import autocast_ctx, bucketed_batches, collate, encode, forward_logits, pick_device, precision
from hatecheck_pipeline.models.selection import EarlyStopping, dev_metrics
from hatecheck_pipeline.models.splits import Split
from hatecheck_pipeline.models.trainable import param_groups


def train_loop(
    model,
    tokenizer,
    train_split: Split,
    dev_split: Split,
    recipe: Recipe,
    *,
    seed: int,
    max_length: int,
    ckpt_dir: Path,
    fingerprint: Mapping[str, Any],
    amp: bool = True,
    cpu_bf16: bool | str = False,
    length_bucketing: bool = False,
    eval_batch_size: int = 64,
    progress: bool = True,
    on_checkpoint: Callable[[int], None] | None = None,
    scripted_dev: Callable[[int], dict] | None = None,
    labels: LabelSet = BINARY,
    supervision: Supervision | None = None,
) -> dict:
    """Fine-tune ``model`` in place (ending with the selected epoch's
    weights) and return the log ``{"epochs": [...], "best_epoch", ...}``.

    Resumes from ``ckpt_dir`` when it holds a checkpoint with the same
    ``fingerprint`` (anything else there is discarded). ``on_checkpoint``
    runs after each epoch's checkpoint (tests simulate a crash there);
    ``scripted_dev`` replaces dev evaluation (tests of early stopping).
    ``supervision`` adds BERT-HateXplain's attention loss (needs
    ``train_split.rationales`` and a model with eager attention).
    ``cpu_bf16``: training steps on a CPU under bf16 autocast (dev
    evaluation stays fp32).
    """
    from safetensors.torch import load_model
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    device = pick_device()
    model.to(device)
    weights = class_weights(train_split.labels, recipe.class_weights, len(labels.classes))
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(weights, dtype=torch.float32, device=device))
    train_ids = encode(tokenizer, train_split.texts, max_length)
    dev_ids = encode(tokenizer, dev_split.texts, max_length)
    train_y = torch.tensor(train_split.labels, dtype=torch.long)
    if supervision is not None:
        if train_split.rationales is None:
            raise ValueError("attention supervision needs rationales for the training examples")
        att_targets = token_targets(tokenizer, train_split.texts, train_split.rationales, max_length, supervision.temperature)
    dev_y = np.asarray(dev_split.labels)
    n = len(train_ids)
    steps_per_epoch = math.ceil(n / recipe.batch_size)
    total = steps_per_epoch * recipe.epochs

    opt = torch.optim.AdamW(param_groups(model, recipe), lr=recipe.lr)
    sched = get_linear_schedule_with_warmup(opt, int(recipe.warmup_ratio * total), total)
    use_scaler = amp and device.type == "cuda" and not torch.cuda.is_bf16_supported()
    scaler = torch.amp.GradScaler("cuda", enabled=use_scaler) if device.type == "cuda" else None

    metric = (recipe.early_stopping or {}).get("metric", recipe.select_on)
    stopper = EarlyStopping(metric, (recipe.early_stopping or {}).get("patience"))
    selector = EarlyStopping(recipe.select_on, None)
    history: list[dict] = []
    start_epoch, stopped = 1, False
    fp = json.loads(json.dumps(dict(fingerprint), default=str))

    ckpt_dir = Path(ckpt_dir)
    last = last_checkpoint(ckpt_dir) if ckpt_dir.exists() else None
    if last is not None:
        state = json.loads((last / "state.json").read_text("utf-8"))
        if state.get("fingerprint") == fp:
            load_model(model, str(last / "model.safetensors"), device=str(device))
            load_optimizer(opt, last, device)
            sched.load_state_dict(state["scheduler"])
            if scaler is not None and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
            restore_rng(last)
            history = state["history"]
            stopper = EarlyStopping(**state["stopper"])
            selector = EarlyStopping(**state["selector"])
            start_epoch, stopped = state["epoch"] + 1, state["stopped"]
            print(f"resuming from {last} (epoch {state['epoch']} done)", flush=True)
        else:
            print(f"discarding checkpoints in {ckpt_dir}: parameters or data changed", flush=True)
            shutil.rmtree(ckpt_dir)
    for leftover in ckpt_dir.glob("*.tmp-*") if ckpt_dir.exists() else []:
        shutil.rmtree(leftover, ignore_errors=True)

    for epoch in range(start_epoch, recipe.epochs + 1):
        if stopped:
            break
        model.train()
        gen = torch.Generator().manual_seed(seed * 100_003 + epoch)
        if length_bucketing:
            batches = bucketed_batches([len(x) for x in train_ids], recipe.batch_size, gen)
        else:
            order = torch.randperm(n, generator=gen)
            batches = [order[i : i + recipe.batch_size] for i in range(0, n, recipe.batch_size)]
        total_loss, seen = 0.0, 0
        bar = tqdm(batches, desc=f"epoch {epoch}/{recipe.epochs}", disable=not progress, mininterval=5)
        for idx in bar:
            batch = collate([train_ids[i] for i in idx.tolist()], tokenizer.pad_token_id, device)
            y = train_y[idx].to(device)
            with autocast_ctx(device, amp, cpu_bf16):
                output = model(**batch, **({"output_attentions": True} if supervision is not None else {}))
            loss = loss_fn(output.logits.float(), y)
            if supervision is not None:
                width = batch["input_ids"].shape[1]
                loss = loss + attention_loss(
                    output.attentions, pad_targets([att_targets[i] for i in idx.tolist()], width, device), supervision
                )
            opt.zero_grad(set_to_none=True)
            if scaler is not None and scaler.is_enabled():
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            sched.step()
            total_loss += float(loss.detach()) * len(idx)
            seen += len(idx)
            bar.set_postfix(loss=f"{total_loss / seen:.4f}")
        if scripted_dev is not None:
            dev = scripted_dev(epoch)
        else:
            logits = forward_logits(model, dev_ids, tokenizer.pad_token_id, eval_batch_size, device, amp)
            dev = dev_metrics(dev_y, torch.softmax(logits, -1).numpy(), weights, labels)
        row = {"epoch": epoch, "train_loss": total_loss / max(seen, 1), **dev}
        improved, stop = stopper.update(epoch, dev[stopper.metric])
        sel_improved, _ = selector.update(epoch, dev[selector.metric])
        row["stopped_early"] = bool(stop and epoch < recipe.epochs)
        history.append(row)
        print(json.dumps(row), flush=True)
        if recipe.keep_best and sel_improved:
            ckpt_dir.mkdir(parents=True, exist_ok=True)
            save_best(ckpt_dir, model)
        stopped = stop
        loop_state = {
            "fingerprint": fp,
            "epoch": epoch,
            "stopped": stopped,
            "history": history,
            "stopper": stopper.state(),
            "selector": selector.state(),
        }
        save_checkpoint(ckpt_dir, epoch, model, opt, sched, scaler, loop_state)
        if on_checkpoint is not None:
            on_checkpoint(epoch)

    chosen = history[-1]["epoch"] if history else 0
    if recipe.keep_best and (ckpt_dir / "best").exists():
        load_model(model, str(ckpt_dir / "best" / "model.safetensors"), device=str(device))
        chosen = selector.best_epoch
    return {
        "epochs": history,
        "selected_epoch": chosen,
        "selected_on": recipe.select_on if recipe.keep_best else "last epoch",
        "early_stopping": recipe.early_stopping,
        "class_weights": weights,
        "train_examples": n,
        "dev_examples": len(dev_ids),
        "device": str(device),
        "amp": bool(amp and device.type == "cuda"),
        "precision": precision(device, amp, cpu_bf16),
        "recipe": asdict(recipe),
        **({"attention_supervision": asdict(supervision)} if supervision is not None else {}),
    }
