"""A tiny RANDOMLY INITIALISED GPT-2 with a word-level tokenizer, built in
the test process: its answers mean nothing beyond checking the arithmetic
and the plumbing of the prompted-LLM code."""

from __future__ import annotations

from typing import Sequence

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast


def tiny_causal_lm(words: Sequence[str], seed: int = 0, arch: str = "gpt2"):
    """(network, tokenizer); ``words[0]`` is the pad token, ``words[1]`` unk;
    ``arch``: ``gpt2`` (learned positions) or ``llama`` (rotary positions, as
    the local LLMs have)."""
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=words[1]))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=words[0], unk_token=words[1], eos_token=words[0])
    torch.manual_seed(seed)
    if arch == "llama":
        net = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=len(words),
                hidden_size=16,
                intermediate_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                max_position_embeddings=256,
                pad_token_id=0,
                bos_token_id=None,
                eos_token_id=None,
            )
        ).eval()
    else:
        net = GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_embd=16, n_layer=2, n_head=2, n_positions=256)).eval()
    return net, fast
