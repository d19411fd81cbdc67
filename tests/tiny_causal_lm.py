"""A tiny RANDOMLY INITIALISED GPT-2 with a word-level tokenizer, built in
the test process: its answers mean nothing beyond checking the arithmetic
and the plumbing of the prompted-LLM code."""

from __future__ import annotations

from typing import Sequence

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast


def tiny_causal_lm(words: Sequence[str], seed: int = 0):
    """(network, tokenizer); ``words[0]`` is the pad token, ``words[1]`` unk."""
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=words[1]))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=words[0], unk_token=words[1], eos_token=words[0])
    torch.manual_seed(seed)
    net = GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_embd=16, n_layer=2, n_head=2, n_positions=256)).eval()
    return net, fast
