"""The classifier that fine-tuning trains: a base model with a seeded head
over the label set, the recipe's dropout, frozen embeddings or lower
layers, and AdamW parameter groups (weight decay, layer-wise learning-rate
decay)."""

from __future__ import annotations

import torch

from hatecheck_pipeline.models.recipe import BINARY, LabelSet, Recipe


def load_for_training(
    base: str,
    dropout: float,
    seed: int,
    labels: LabelSet = BINARY,
    eager_attention: bool = False,
    freeze_embeddings: bool = False,
    freeze_lower_layers: float = 0.0,
    pooling: str = "model",
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
    multilingual alignment is kept as well. ``pooling``: ``model`` (the
    architecture's own classifier head) or ``mean`` (models/pooled.py: a
    head over the mean of the token states)."""
    from transformers import AutoConfig

    from hatecheck_pipeline.models.pooled import for_training

    torch.manual_seed(seed)
    extra = {"attn_implementation": "eager"} if eager_attention else {}
    config = AutoConfig.from_pretrained(base, num_labels=len(labels.classes), id2label=labels.id2label, label2id=labels.label2id)
    set_dropout(config, dropout)
    model = for_training(base, config, pooling, **extra)
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
