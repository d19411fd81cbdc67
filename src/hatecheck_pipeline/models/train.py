"""Fine-tuning a binary hate-speech classifier with the papers' recipes.

One plain torch loop for CPU and CUDA (autocast mixed precision when CUDA
is present). Each epoch ends with a checkpoint under the model's
checkpoint folder: model weights, optimizer tensors and RNG state as
safetensors, scalars (optimizer hyper-parameters, scheduler, loop state)
as JSON; no pickles. A killed run (even ``kill -9``) re-run with the same
parameters resumes from the last complete checkpoint and reaches the same
weights as an uninterrupted run: the data order of every epoch is drawn
from a generator seeded by (seed, epoch), and dropout's RNG state is saved.

Labels: 0 = non-hateful, 1 = hateful (the column ``label``), unless the
recipe names another label set (``labels``: a column and its classes, e.g.
HateXplain's 3 classes in ``label3``); binary models are unaffected by it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import polars as pl
import torch

from hatecheck_pipeline.core.cpu import bounded_threads
from hatecheck_pipeline.core.files import write_text
from hatecheck_pipeline.models.attention import Supervision, attention_loss, pad_targets, read_rationales, token_targets
from hatecheck_pipeline.models.runtime import (
    autocast_ctx,
    bucketed_batches,
    cpu_bf16_on,
    collate,
    encode,
    forward_logits,
    pick_device,
    precision,
)

ID2LABEL = {0: "non-hateful", 1: "hateful"}
LABEL2ID = {v: k for k, v in ID2LABEL.items()}
METRICS = ("dev_f1_hateful", "dev_macro_f1", "dev_loss")


@dataclass(frozen=True)
class LabelSet:
    """The classes a model predicts: the table ``column`` holding them, the
    class names in index order, and the class that counts as hateful
    (``dev_f1_hateful``; p(hateful) on the binary suites)."""

    column: str
    classes: tuple[str, ...]
    hateful: str
    # (column value, class) pairs when classes merge column values (HateXplain's
    # 2 classes: hatespeech and offensive -> toxic, normal -> non-toxic); () = the values are the classes
    merge: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_recipe(cls, section: Mapping[str, Any]) -> "LabelSet":
        """The recipe's ``labels`` ({column, classes, hateful, merge}); the
        binary set when the recipe names none."""
        spec = section.get("labels")
        if not spec:
            return BINARY
        merge = tuple(sorted((str(v), str(c)) for c, values in (spec.get("merge") or {}).items() for v in values))
        labels = cls(spec["column"], tuple(spec["classes"]), spec["hateful"], merge)
        if labels.hateful not in labels.classes or len(set(labels.classes)) != len(labels.classes) or len(labels.classes) < 2:
            raise ValueError(f"training.recipes.*.labels: classes {list(labels.classes)} must be distinct (at least 2) and hold hateful={labels.hateful!r}")
        if merge and ({c for _, c in merge} != set(labels.classes) or len({v for v, _ in merge}) != len(merge)):
            raise ValueError(f"training.recipes.*.labels.merge: every class of {list(labels.classes)} needs its column values, each value in one class")
        return labels

    def encode(self, value: str) -> int:
        """The class index of a ``column`` value (through ``merge`` when set)."""
        if self.merge:
            value = dict(self.merge)[value]
        return self.label2id[value]

    @property
    def id2label(self) -> dict[int, str]:
        return dict(enumerate(self.classes))

    @property
    def label2id(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}


BINARY = LabelSet("label", (ID2LABEL[0], ID2LABEL[1]), ID2LABEL[1])


@dataclass(frozen=True)
class Recipe:
    class_weights: str  # none | other_class_proportion
    lr: float
    weight_decay: float
    dropout: float
    batch_size: int
    epochs: int
    warmup_ratio: float = 0.0
    layer_lr_decay: float = 1.0  # lr of encoder layer i = lr x decay^(layers - i); 1 = one lr for all
    early_stopping: Mapping[str, Any] | None = None  # {metric, patience}
    keep_best: bool = False
    select_on: str = "dev_loss"
    grid_search: bool = False
    grid: Mapping[str, Sequence[Any]] | None = None  # {epochs: [...], lr: [...], batch_size: [...]} when grid_search

    @classmethod
    def from_params(cls, section: Mapping[str, Any], max_epochs: int | None = None) -> "Recipe":
        values = {k: section[k] for k in cls.__dataclass_fields__ if k in section}
        if values.get("grid_search"):
            grid = values.get("grid") or {}
            missing = [k for k in GRID_KEYS if not grid.get(k)]
            if missing:
                raise ValueError(f"training.recipes.*.grid_search: the grid needs non-empty lists for {missing}")
            values["grid"] = {k: list(grid[k]) for k in GRID_KEYS}
        else:
            values["grid"] = None
        if max_epochs is not None:
            values["epochs"] = min(values["epochs"], max_epochs)
        return cls(**values)

    def trials(self, max_epochs: int | None = None) -> list["Recipe"]:
        """The grid's configurations (epochs x lr x batch_size, in that
        nesting order), each a plain recipe; ``[self]`` without a search.
        The profile's epoch cap applies to every trial (duplicates merged)."""
        if not self.grid_search:
            return [self]
        from dataclasses import replace
        from itertools import product

        cap = max_epochs or max(self.grid["epochs"])
        out: list[Recipe] = []
        for e, lr, bs in product(self.grid["epochs"], self.grid["lr"], self.grid["batch_size"]):
            r = replace(self, epochs=min(int(e), cap), lr=float(lr), batch_size=int(bs), grid_search=False, grid=None)
            if r not in out:
                out.append(r)
        return out


GRID_KEYS = ("epochs", "lr", "batch_size")


def trial_name(r: "Recipe") -> str:
    return f"e{r.epochs}-lr{r.lr:g}-b{r.batch_size}"


# --------------------------------------------------------------------------
# Recipe pieces (unit-tested on their own)


def class_weights(labels: Sequence[int], rule: str, n_classes: int = 2) -> list[float]:
    """Cross-entropy weights per class (index 0, 1; ``none``: any number of
    classes).

    ``other_class_proportion`` (HateCheck paper): the weight of a class is
    the relative proportion of the other class, so 1:9 hateful:non-hateful
    gives hateful x 9 relative to non-hateful.

    >>> class_weights([0] * 9 + [1], "other_class_proportion")
    [0.1, 0.9]
    >>> class_weights([0, 1, 1], "none")
    [1.0, 1.0]
    """
    if rule == "none":
        return [1.0] * n_classes
    if rule != "other_class_proportion":
        raise ValueError(f"unknown class weight rule {rule!r}")
    if n_classes != 2:
        raise ValueError(f"class weight rule {rule!r} is defined for 2 classes, not {n_classes}")
    labels = np.asarray(labels)
    share1 = float((labels == 1).mean())
    return [round(share1, 12), round(1.0 - share1, 12)]


class EarlyStopping:
    """Patience on a dev metric (higher is better except for losses)."""

    def __init__(self, metric: str, patience: int | None, best: float | None = None, best_epoch: int = 0, bad: int = 0):
        self.metric, self.patience = metric, patience
        self.sign = -1.0 if metric.endswith("loss") else 1.0
        self.best, self.best_epoch, self.bad = best, best_epoch, bad

    def update(self, epoch: int, value: float) -> tuple[bool, bool]:
        """Record an epoch's value: (improved, stop now)."""
        improved = self.best is None or self.sign * value > self.sign * self.best
        if improved:
            self.best, self.best_epoch, self.bad = value, epoch, 0
        else:
            self.bad += 1
        return improved, self.patience is not None and self.bad >= self.patience

    def state(self) -> dict:
        return {"metric": self.metric, "patience": self.patience, "best": self.best, "best_epoch": self.best_epoch, "bad": self.bad}


def binary_metrics(labels: np.ndarray, probs: np.ndarray, weights: Sequence[float]) -> dict[str, float]:
    from sklearn.metrics import f1_score

    pred = (probs[:, 1] >= 0.5).astype(int)
    logp = np.log(np.clip(probs, 1e-12, 1.0))
    w = np.asarray(weights)[labels]
    loss = float(-(w * logp[np.arange(len(labels)), labels]).sum() / w.sum())
    return {
        "dev_loss": loss,
        "dev_f1_hateful": float(f1_score(labels, pred, pos_label=1, zero_division=0)),
        "dev_macro_f1": float(f1_score(labels, pred, average="macro", zero_division=0)),
    }


def multiclass_metrics(labels: np.ndarray, probs: np.ndarray, weights: Sequence[float], hateful: int) -> dict[str, float]:
    """Dev metrics of an N-class model: weighted loss, F1 of the hateful
    class and macro F1 over all classes of the argmax prediction."""
    from sklearn.metrics import f1_score

    pred = probs.argmax(axis=1)
    logp = np.log(np.clip(probs, 1e-12, 1.0))
    w = np.asarray(weights)[labels]
    loss = float(-(w * logp[np.arange(len(labels)), labels]).sum() / w.sum())
    every = list(range(probs.shape[1]))
    return {
        "dev_loss": loss,
        "dev_f1_hateful": float(f1_score(labels, pred, labels=[hateful], average="macro", zero_division=0)),
        "dev_macro_f1": float(f1_score(labels, pred, labels=every, average="macro", zero_division=0)),
    }


def dev_metrics(labels: np.ndarray, probs: np.ndarray, weights: Sequence[float], label_set: LabelSet) -> dict[str, float]:
    if label_set == BINARY:
        return binary_metrics(labels, probs, weights)
    return multiclass_metrics(labels, probs, weights, label_set.label2id[label_set.hateful])


# --------------------------------------------------------------------------
# Data


@dataclass
class Split:
    texts: list[str]
    labels: list[int]
    sources: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    rationales: list[list[list[int]]] | None = None  # per example: annotators' 0/1 masks (attention supervision)


def stratified_cap(frame: pl.DataFrame, cap: int | None, seed: int) -> pl.DataFrame:
    """A seeded stratified sample of ``cap`` rows (all rows when None or smaller)."""
    if cap is None or frame.height <= cap:
        return frame
    parts = []
    for i, (_, group) in enumerate(sorted(frame.group_by("label", maintain_order=True), key=lambda kv: kv[0])):
        n = max(1, round(cap * group.height / frame.height))
        parts.append(group.sample(n=min(n, group.height), seed=seed + i, shuffle=True))
    return pl.concat(parts).sort("id")


def per_dataset_cap(max_train: int | None, n_datasets: int, max_per_dataset: int | None = None) -> int | None:
    """Train examples drawn from each of a model's ``n_datasets`` datasets
    when the model may see ``max_train`` in total (an even share, at least 2)
    and each dataset may give ``max_per_dataset`` (the smaller cap wins; None
    = no cap of that kind).

    >>> per_dataset_cap(3000, 1), per_dataset_cap(3000, 3), per_dataset_cap(None, 3)
    (3000, 1000, None)
    >>> per_dataset_cap(None, 3, 1500), per_dataset_cap(3000, 3, 1500), per_dataset_cap(3000, 1, 1500)
    (1500, 1000, 1500)
    """
    caps = [c for c in (None if max_train is None else max(2, max_train // max(1, n_datasets)), max_per_dataset) if c is not None]
    return min(caps) if caps else None


def load_splits(
    files: Sequence[Path], max_train: int | None, seed: int, labels: LabelSet = BINARY, max_per_dataset: int | None = None
) -> tuple[Split, Split, list[dict]]:
    """Train and dev splits of processed tables. ``max_train`` caps the
    model's train examples in total, spread evenly over its datasets, and
    ``max_per_dataset`` each dataset's (a stratified sample of each; see
    :func:`per_dataset_cap`); each dev split is capped to a quarter of that
    dataset's share. Labels come from ``labels.column``."""
    train, dev, counts = Split([], [], []), Split([], [], []), []
    max_train = per_dataset_cap(max_train, len(files), max_per_dataset)
    for f in files:
        table = pl.read_parquet(f, columns=["id", "text", labels.column, "split", "dataset"])
        if labels.column != "label":
            table = table.rename({labels.column: "label"})
        name = table["dataset"][0] if table.height else Path(f).parent.name
        row = {"dataset": name, "file": str(f)}
        for split, target, cap in (("train", train, max_train), ("dev", dev, None if max_train is None else max(2, max_train // 4))):
            part = table.filter(pl.col("split") == split).with_columns(pl.col("id").cast(pl.Utf8))
            row[f"{split}_available"] = part.height
            part = stratified_cap(part, cap, seed)
            row[f"{split}_used"] = part.height
            target.texts += part["text"].to_list()
            target.labels += [labels.encode(x) for x in part["label"].to_list()]  # merged after the cap: the same posts as unmerged
            target.sources += [name] * part.height
            target.ids += part["id"].to_list()
        counts.append(row)
    if not train.texts or not dev.texts:
        raise ValueError(f"no train/dev rows in {list(map(str, files))}")
    return train, dev, counts


# --------------------------------------------------------------------------
# Checkpoints (safetensors + JSON, no pickles)


def _save_optimizer(opt: torch.optim.Optimizer, directory: Path) -> None:
    from safetensors.torch import save_file

    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for idx, state in sd["state"].items():
        for key, value in state.items():
            if torch.is_tensor(value):
                tensors[f"{idx}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{idx}.{key}"] = value
    save_file(tensors, str(directory / "optimizer.safetensors"))
    (directory / "optimizer.json").write_text(json.dumps({"param_groups": sd["param_groups"], "scalars": scalars}), "utf-8")


def _load_optimizer(opt: torch.optim.Optimizer, directory: Path, device: torch.device) -> None:
    from safetensors.torch import load_file

    meta = json.loads((directory / "optimizer.json").read_text("utf-8"))
    state: dict[int, dict] = {}
    for name, tensor in load_file(str(directory / "optimizer.safetensors")).items():
        idx, key = name.split(".", 1)
        state.setdefault(int(idx), {})[key] = tensor if key == "step" else tensor.to(device)
    for name, value in meta["scalars"].items():
        idx, key = name.split(".", 1)
        state.setdefault(int(idx), {})[key] = value
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def _rng_tensors() -> dict[str, torch.Tensor]:
    out = {"torch_cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            out[f"torch_cuda_{i}"] = s
    return out


def _restore_rng(directory: Path) -> None:
    from safetensors.torch import load_file

    rng = load_file(str(directory / "rng.safetensors"))
    torch.set_rng_state(rng["torch_cpu"])
    cuda = [rng[k] for k in sorted(k for k in rng if k.startswith("torch_cuda_"))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def save_checkpoint(ckpt_dir: Path, epoch: int, model, opt, sched, scaler, loop_state: dict) -> Path:
    """Write ``epoch-N`` atomically (temp dir + rename); keep only the last."""
    from safetensors.torch import save_file, save_model

    ckpt_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"epoch-{epoch}.tmp-", dir=ckpt_dir))
    save_model(model, str(tmp / "model.safetensors"))
    _save_optimizer(opt, tmp)
    save_file(_rng_tensors(), str(tmp / "rng.safetensors"))
    extra = {"scheduler": sched.state_dict(), "scaler": scaler.state_dict() if scaler is not None and scaler.is_enabled() else None}
    (tmp / "state.json").write_text(json.dumps({**loop_state, **extra}, indent=1, default=float), "utf-8")
    final = ckpt_dir / f"epoch-{epoch}"
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in ckpt_dir.glob("epoch-*"):
        if old != final and old.name != "best":
            shutil.rmtree(old, ignore_errors=True)
    return final


def last_checkpoint(ckpt_dir: Path) -> Path | None:
    done = [p for p in ckpt_dir.glob("epoch-*") if p.is_dir() and ".tmp" not in p.name and (p / "state.json").exists()]
    return max(done, key=lambda p: int(p.name.split("-")[1]), default=None)


def save_best(ckpt_dir: Path, model) -> None:
    from safetensors.torch import save_model

    tmp = Path(tempfile.mkdtemp(prefix="best.tmp-", dir=ckpt_dir))
    save_model(model, str(tmp / "model.safetensors"))
    if (ckpt_dir / "best").exists():
        shutil.rmtree(ckpt_dir / "best")
    os.replace(tmp, ckpt_dir / "best")


# --------------------------------------------------------------------------
# The loop


def load_for_training(
    base: str, dropout: float, seed: int, labels: LabelSet = BINARY, eager_attention: bool = False, freeze_embeddings: bool = False,
    freeze_lower_layers: float = 0.0,
):
    """A classifier over ``labels`` (2 by default) from a base model (head
    seeded); ``eager_attention``: attention weights it can return (and
    train), for attention supervision. With ``freeze_embeddings`` the
    word-embedding matrix keeps its pretrained values (no gradient, no
    optimiser state): most of a multilingual encoder's parameters, and a
    known aid to zero-shot cross-lingual transfer, since languages unseen in
    fine-tuning keep embeddings that stay aligned with the fine-tuned
    encoder. ``freeze_lower_layers`` (a share of the encoder layers, 0-1)
    also keeps the whole embedding block and the lowest
    ``floor(share x layers)`` encoder layers at their pretrained values:
    backward then stops at the first trainable layer, and the lower layers'
    multilingual alignment is kept as well."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    torch.manual_seed(seed)
    extra = {"attn_implementation": "eager"} if eager_attention else {}
    config = AutoConfig.from_pretrained(base, num_labels=len(labels.classes), id2label=labels.id2label, label2id=labels.label2id)
    set_dropout(config, dropout)
    model = AutoModelForSequenceClassification.from_pretrained(base, config=config, **extra)
    if freeze_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    if freeze_lower_layers > 0:
        for module in (model.base_model.embeddings, *lower_layers(model, freeze_lower_layers)):
            module.requires_grad_(False)
    return model


DROPOUT_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "attention_dropout")


def set_dropout(config, dropout: float) -> list[str]:
    """The recipe's dropout on every dropout setting the architecture's
    config has (BERT / XLM-R: hidden and attention dropout; Gemma3, which
    has no hidden dropout: attention dropout); the keys set."""
    keys = [k for k in DROPOUT_KEYS if hasattr(config, k)]
    for key in keys:
        setattr(config, key, dropout)
    return keys


def encoder_layers(model, setting: str) -> list:
    """The ``n`` layers of a BERT-style encoder, lowest first (``setting``:
    the profile or recipe key that needs them, named in the error)."""
    layers = getattr(getattr(model.base_model, "encoder", None), "layer", None)
    if layers is None:
        raise ValueError(f"{setting}: {type(model).__name__} has no encoder.layer list")
    return list(layers)


def lower_layers(model, share: float) -> list:
    """The lowest ``floor(share x n)`` of a BERT-style encoder's ``n`` layers."""
    layers = encoder_layers(model, "freeze_lower_layers")
    return layers[: int(share * len(layers))]


NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


def layer_depths(model) -> dict[str, int]:
    """Depth of every parameter of a BERT-style classifier: 0 for the
    embedding block, ``i + 1`` for encoder layer ``i``, ``layers + 1`` for
    everything above the encoder (pooler, classification head)."""
    layers = encoder_layers(model, "layer_lr_decay")
    blocks = [model.base_model.embeddings, *layers]
    depth = {id(p): d for d, block in enumerate(blocks) for p in block.parameters()}
    return {name: depth.get(id(p), len(blocks)) for name, p in model.named_parameters()}


def param_groups(model, recipe: "Recipe") -> list[dict]:
    """AdamW parameter groups of the trainable parameters: weight decay off
    for biases and norms, and with ``recipe.layer_lr_decay`` < 1 layer-wise
    learning-rate decay (Howard & Ruder 2018; Sun et al. 2019): the head
    trains at ``lr``, encoder layer ``i`` of ``n`` at ``lr x decay^(n - i)``,
    the embedding block at ``lr x decay^(n + 1)``."""
    trainable = [(nm, p) for nm, p in model.named_parameters() if p.requires_grad]
    decay = float(recipe.layer_lr_decay)
    depths = layer_depths(model) if decay != 1.0 else {nm: 0 for nm, _ in trainable}
    top = max(depths.values(), default=0)
    groups: dict[tuple[int, bool], dict] = {}
    for nm, p in trainable:
        key = (depths[nm], nm.endswith(NO_DECAY))
        if key not in groups:
            groups[key] = {"params": [], "weight_decay": 0.0 if key[1] else recipe.weight_decay, "lr": recipe.lr * decay ** (top - key[0])}
        groups[key]["params"].append(p)
    return [groups[k] for k in sorted(groups)]


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
            _load_optimizer(opt, last, device)
            sched.load_state_dict(state["scheduler"])
            if scaler is not None and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
            _restore_rng(last)
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
                loss = loss + attention_loss(output.attentions, pad_targets([att_targets[i] for i in idx.tolist()], width, device), supervision)
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


def grid_search(
    base: str,
    tokenizer,
    train_split: Split,
    dev_split: Split,
    recipe: Recipe,
    *,
    seed: int,
    max_length: int,
    ckpt_dir: Path,
    fingerprint: Mapping[str, Any],
    max_epochs: int | None = None,
    freeze_embeddings: bool = False,
    freeze_lower_layers: float = 0.0,
    amp: bool = True,
    cpu_bf16: bool | str = False,
    length_bucketing: bool = False,
    eval_batch_size: int = 64,
    progress: bool = True,
    on_checkpoint: Callable[[int], None] | None = None,
    labels: LabelSet = BINARY,
):
    """The HateCheck paper's grid search: one fresh fine-tuning of ``base``
    per configuration of ``recipe.trials()``, selected on the dev metric
    ``recipe.select_on`` (dev loss; ties keep the earlier trial). Returns
    ``(model with the selected trial's weights, log)``.

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
        model = load_for_training(base, r.dropout, seed, labels, freeze_embeddings=freeze_embeddings, freeze_lower_layers=freeze_lower_layers)
        log = train_loop(
            model, tokenizer, train_split, dev_split, r,
            seed=seed, max_length=max_length, ckpt_dir=ckpt_dir / "trials" / name,
            fingerprint={**fp, "trial": asdict(r)}, amp=amp, cpu_bf16=cpu_bf16, length_bucketing=length_bucketing, eval_batch_size=eval_batch_size,
            progress=progress, on_checkpoint=on_checkpoint, labels=labels,
        )
        row = next(x for x in log["epochs"] if x["epoch"] == log["selected_epoch"])
        entry = {
            "trial": name, "epochs": r.epochs, "lr": r.lr, "batch_size": r.batch_size,
            "selected_epoch": log["selected_epoch"], **{k: row[k] for k in ("train_loss", *METRICS)}, "log": log,
        }
        if best is None or sign * entry[recipe.select_on] > sign * best[recipe.select_on]:
            best = entry
            (ckpt_dir / "grid").mkdir(parents=True, exist_ok=True)
            save_best(ckpt_dir / "grid", model)
        done[name] = entry
        tmp = record.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"fingerprint": fp, "trials": list(done.values()), "selected": best["trial"]}, indent=1, default=float), "utf-8")
        os.replace(tmp, record)
        shutil.rmtree(ckpt_dir / "trials" / name, ignore_errors=True)
    assert best is not None
    model = load_for_training(base, recipe.dropout, seed, labels, freeze_embeddings=freeze_embeddings, freeze_lower_layers=freeze_lower_layers)
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


# --------------------------------------------------------------------------
# Stage entry point


def git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def save_dir_atomic(out_dir: Path, write: Callable[[Path], None]) -> None:
    """Write a directory under a temporary name, then rename it into place
    (a half-written one left by a killed run is removed first)."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for leftover in out_dir.parent.glob(out_dir.name + ".tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".tmp-", dir=out_dir.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o755)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def run(
    model_name: str,
    base_ref: str,
    data_files: Sequence[Path],
    recipe_params: Mapping[str, Any],
    profile: Mapping[str, Any],
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
    cpu_bf16 = profile.get("cpu_bf16", False)  # true | false | "auto" (models/runtime.py: cpu_bf16_on)
    labels = LabelSet.from_recipe(recipe_params)
    supervision = Supervision.from_recipe(recipe_params)
    train_split, dev_split, counts = load_splits(data_files, profile.get("max_train_per_model"), seed, labels, profile.get("max_train_per_dataset"))
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
        "recipe": asdict(recipe),
        "seed": seed,
        "max_length": profile["max_length"],
        "max_train_per_model": profile.get("max_train_per_model"),
        "freeze_embeddings": freeze,
        "length_bucketing": bucketing,
    }
    if lower:
        fingerprint["freeze_lower_layers"] = lower
    if cpu_bf16_on(cpu_bf16):  # what ran: "auto" without native bf16 trains the fp32 run
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
            resolved, recipe.dropout, seed, labels, eager_attention=supervision is not None, freeze_embeddings=freeze, freeze_lower_layers=lower
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
        "profile": profile["name"],
        "budget": {k: profile.get(k) for k in ("max_train_per_model", "max_train_per_dataset", "max_epochs", "max_length", "freeze_embeddings", "freeze_lower_layers", "length_bucketing", "cpu_bf16", "recipe_by_role", "grid_search")},
        "budget_note": (
            f"training data subsampled to at most {cap} train examples"
            + (f" per dataset ({cap * len(data_files)} over its {len(data_files)} datasets, stratified)" if len(data_files) > 1 else " (stratified)")
            if (cap := per_dataset_cap(profile.get("max_train_per_model"), len(data_files), profile.get("max_train_per_dataset")))
            else "full training data"
        )
        + (f"; epochs capped at {profile['max_epochs']}" if profile.get("max_epochs") else "; the recipe's epochs")
        + ("; word embeddings frozen" if freeze else "")
        + (f"; embedding block and the lowest {lower:g} of the encoder layers frozen" if lower else "")
        + ("; length-bucketed batches" if bucketing else "")
        + ("; bf16 mixed precision on CPU (autocast; fp32 weights, optimiser and prediction)" if log.get("precision") == "bf16 autocast (CPU)" else "")
        + ("; the recipe's grid search skipped (profile grid_search: false): the recipe's own configuration trained once"
           if (recipe_override or {}).get("grid_search") is False else "")
        + (
            "; the profile's recipe for this role: " + ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                                                                 for k, v in sorted(recipe_override.items()) if k != "grid_search")
            if any(k != "grid_search" for k in (recipe_override or {}))
            else ""
        ),
        "training_data": counts,
        "training_data_sha256": data_hashes,
        "recipe": asdict(recipe),
        "grid_search": (
            {**{k: v for k, v in log["grid_search"].items() if k != "trials"},
             "trials": [{k: v for k, v in t.items() if k != "history"} for t in log["grid_search"]["trials"]],
             "note": "final model = the selected configuration's weights"}
            if recipe.grid_search
            else None
        ),
        "selected_recipe": log["recipe"],
        "seed": seed,
        "selected_epoch": log["selected_epoch"],
        "train_seconds": log["train_seconds"],
        "final_dev": next((r for r in log["epochs"] if r["epoch"] == log["selected_epoch"]), None),
        "device": log["device"],
        "code_version": __version__,
        "git_commit": git_commit(),
        "labels": labels.id2label,
        **({"label_column": labels.column} if labels != BINARY else {}),
        **({"attention_supervision": asdict(supervision)} if supervision is not None else {}),
    }
    write_text(json.dumps(card, indent=2), card_path)
    return log


def effective_recipe(recipe: Mapping[str, Any], profile: Mapping[str, Any], role: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The recipe a model of ``role`` trains with under ``profile`` (the
    active profile's settings), and what the profile changed in it: the
    profile's ``recipe_by_role`` settings for the role on top of the model's
    recipe, and the recipe's grid search switched off where the profile
    sets ``grid_search: false`` (a budget that cannot afford the HateCheck
    paper's 18 fine-tuning runs). A profile that sets neither trains the
    recipe as written (the ``paper`` profile: the papers' recipes).

    >>> hc = {"lr": 5e-5, "grid_search": True, "grid": {"epochs": [2]}}
    >>> effective_recipe(hc, {"grid_search": False, "recipe_by_role": {"bert": {"lr": 1e-4}}}, "bert")
    ({'lr': 0.0001, 'grid_search': False, 'grid': {'epochs': [2]}}, {'lr': 0.0001, 'grid_search': False})
    >>> effective_recipe(hc, {}, "bert") == (hc, {})
    True
    """
    override = dict((profile.get("recipe_by_role") or {}).get(role) or {})
    if recipe.get("grid_search") and profile.get("grid_search") is False:
        override["grid_search"] = False
    return {**recipe, **override}, override


def train(
    model: str,
    data: Sequence[Path],
    bases: Mapping[str, Path],
    model_dir: Path,
    card: Path,
    checkpoints: Path,
    training_log: Path,
    profile: str,
    profiles: Mapping[str, Any],
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
    ``training_log`` and the model ``card``. ``rationales``: the training
    posts' rationales of an attention-supervised recipe (BERT-HateXplain:
    cross-entropy + lambda x attention loss)."""
    from hatecheck_pipeline.core.config import active_profile
    from hatecheck_pipeline.models.base import role_ref

    prof = active_profile(profile, profiles)
    # the profile's recipe settings for this role (a small budget wants a
    # larger step) and its grid-search switch; in the card's recipe
    recipe, override = effective_recipe(recipe, prof, spec["role"])
    log = run(
        model,
        role_ref(prof, spec["role"]),
        [Path(f) for f in data],
        recipe,
        prof,
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
