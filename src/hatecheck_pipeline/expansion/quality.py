"""Quality of a suite (GPT-HateCheck section 5): lexical diversity as
self-BLEU 2/3/4 (sacrebleu; each case scored against all the others) and
naturalness as perplexity under a causal LM (paper: gpt2-large)."""

from __future__ import annotations

import math
import random
from typing import Any

import torch
from tqdm import tqdm


def self_bleu(texts: list[str], orders=(2, 3, 4), max_cases: int | None = 500, seed: int = 0) -> dict[str, float]:
    from sacrebleu.metrics import BLEU

    texts = [t for t in texts if t and t.strip()]
    if max_cases and len(texts) > max_cases:
        texts = random.Random(seed).sample(texts, max_cases)
    out: dict[str, float] = {}
    for n in orders:
        bleu = BLEU(max_ngram_order=n, effective_order=True)
        scores = [bleu.sentence_score(t, texts[:i] + texts[i + 1:]).score / 100 for i, t in enumerate(texts)]
        out[f"self_bleu_{n}"] = round(sum(scores) / len(scores), 6) if scores else float("nan")
    return out


@torch.inference_mode()
def perplexity(texts: list[str], model: str, max_cases: int | None = 500, seed: int = 0, batch_size: int = 8) -> dict[str, Any]:
    """Corpus perplexity exp(sum NLL / tokens), BOS prepended when defined."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model).eval()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    texts = [t for t in texts if t and t.strip()]
    if max_cases and len(texts) > max_cases:
        texts = random.Random(seed).sample(texts, max_cases)
    nll, count = 0.0, 0
    prefix = tok.bos_token or ""
    for i in tqdm(range(0, len(texts), batch_size), desc="perplexity", leave=False):
        enc = tok([prefix + t for t in texts[i: i + batch_size]], return_tensors="pt", padding=True, truncation=True,
                  max_length=128)
        logits = lm(**enc).logits[:, :-1]
        target = enc["input_ids"][:, 1:]
        mask = enc["attention_mask"][:, 1:].bool()
        lp = torch.log_softmax(logits.float(), dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        nll -= lp[mask].sum().item()
        count += int(mask.sum())
    return {"perplexity": round(math.exp(nll / count), 4) if count else float("nan"), "tokens": count,
            "cases": len(texts)}
