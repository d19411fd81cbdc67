"""A sequence classifier that mean-pools its encoder's last hidden states
(recipe ``pooling: mean``), and the one loader of fine-tuned classifiers.

transformers' sequence classifiers pool as their architecture does: BERT
and XLM-R through the first token (``[CLS]`` / ``<s>``, BERT's pooler), a
Gemma3 text model through its last non-pad token (``GenericForSequence
Classification``). EmbeddingGemma-300M is a Gemma3 text encoder with
bidirectional attention whose sentence embedding is the *mean* of its
token states (its sentence-transformers ``1_Pooling``:
``pooling_mode_mean_tokens``), so the last-token head reads it in a way it
was not trained for. :class:`MeanPooledClassifier` is the architecture's
own encoder (``AutoModel`` of its config, pretrained weights) with a linear
head (no bias, as transformers' generic head) over the attention-masked
mean of the last hidden states: only the pooling differs from the generic
classifier, so a screen compares that one lever.

A classifier saved with :class:`MeanPooledClassifier` names it in its
config's ``architectures``; :func:`load_classifier` reads that name and
loads the class from this package (no ``trust_remote_code``), any other
directory through ``AutoModelForSequenceClassification`` as before.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

POOLINGS = ("model", "mean")  # model: the architecture's own classifier head; mean: MeanPooledClassifier


class MeanPooledClassifier(PreTrainedModel):
    """The config's encoder (``AutoModel.from_config``) and a bias-free
    linear head over the masked mean of its last hidden states."""

    config_class = PretrainedConfig
    base_model_prefix = "model"
    _supports_sdpa = True
    _supports_flash_attn = False

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.model = AutoModel.from_config(config)
        self.score = torch.nn.Linear(config.hidden_size, config.num_labels, bias=False)
        self.post_init()

    def _init_weights(self, module):
        if module is self.score:  # the new head: the encoder's initialiser range, as transformers' heads
            torch.nn.init.normal_(module.weight, mean=0.0, std=getattr(self.config, "initializer_range", 0.02))

    def get_input_embeddings(self):
        return self.model.get_input_embeddings()

    def set_input_embeddings(self, value):
        self.model.set_input_embeddings(value)

    def forward(self, input_ids=None, attention_mask=None, labels=None, output_attentions=None, output_hidden_states=None, **kwargs):
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            **kwargs,
        )
        hidden = out.last_hidden_state
        logits = self.score(masked_mean(hidden, attention_mask))
        loss = torch.nn.functional.cross_entropy(logits.float(), labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states, attentions=out.attentions)


def masked_mean(hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """The mean of ``hidden`` (batch, tokens, dim) over each row's real
    tokens (``attention_mask`` 1; None: every token).

    >>> h = torch.tensor([[[1.0], [3.0], [101.0]]])
    >>> masked_mean(h, torch.tensor([[1, 1, 0]])).tolist(), masked_mean(h, None).tolist()
    ([[2.0]], [[35.0]])
    """
    if attention_mask is None:
        return hidden.mean(dim=1)
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


def for_training(base: str, config, pooling: str, **extra):
    """A classifier of ``config`` (labels, dropout set) from the base
    model's pretrained weights, pooled as ``pooling`` says (new head
    seeded by the caller's torch seed)."""
    if pooling not in POOLINGS:
        raise ValueError(f"training.recipes.*.pooling: {pooling!r} is not one of {list(POOLINGS)}")
    if pooling == "mean":
        model, info = MeanPooledClassifier.from_pretrained(base, config=config, output_loading_info=True, **extra)
        missing = sorted(k for k in info["missing_keys"] if not k.startswith("score."))
        if missing:  # the encoder must come from the base model, never from a fresh initialisation
            raise ValueError(f"{base}: pooling mean: encoder weights not in the checkpoint: {', '.join(missing[:5])}")
        return model
    return AutoModelForSequenceClassification.from_pretrained(base, config=config, **extra)


def load_classifier(model_dir: str | Path, **extra):
    """The fine-tuned classifier saved in ``model_dir``: the class its
    config names when that is :class:`MeanPooledClassifier`, else
    ``AutoModelForSequenceClassification`` (``extra``: from_pretrained
    options, e.g. ``attn_implementation``)."""
    config = AutoConfig.from_pretrained(str(model_dir))
    if MeanPooledClassifier.__name__ in (config.architectures or []):
        return MeanPooledClassifier.from_pretrained(str(model_dir), config=config, **extra)
    return AutoModelForSequenceClassification.from_pretrained(str(model_dir), **extra)
