"""Quality of a suite (GPT-HateCheck section 4, RQ2, Table 6), as the
authors' notebook (notebooks_for_manuscript/RQ2.ipynb) computes it:

- Self-BLEU 2/3/4: each case's sentence BLEU (nltk's ``sentence_bleu``
  semantics: clipped n-gram precision against all the other cases as
  references, brevity penalty from the closest reference length, uniform
  weights, no smoothing) averaged over the cases; tokens = lower-cased
  alphabetic words. Computed exactly in one pass over n-gram counts
  (:func:`self_bleu`) instead of the notebook's quadratic loop;
- perplexity: exp of the mean over cases of each case's mean token
  negative log-likelihood under a causal LM (the notebook: gpt2-large,
  ``labels=input_ids``);
- HateCheck in full (spelling functionalities left out, duplicates dropped),
  the generated suite as ten seeded subsamples of HateCheck's size, averaged
  (:func:`subsampled`)."""

from __future__ import annotations

import math
import random
import re
from bisect import bisect_left
from collections import Counter
from typing import Any, Sequence

import polars as pl
from tqdm import tqdm

WORD = re.compile(r"\w+(?=n't)|n't|'\w+|\w+")
ORDERS = (2, 3, 4)


def tokens(text: str) -> list[str]:
    """Lower-cased alphabetic word tokens (the notebook: nltk word_tokenize,
    ``isalpha()``)."""
    return [w.lower() for w in WORD.findall(str(text)) if w.isalpha()]


def reference_texts(hatecheck: pl.DataFrame) -> list[str]:
    """HateCheck as Table 6 measures it: every case outside the spelling
    functionalities (``spell_*``), duplicates dropped (first kept)."""
    rows = hatecheck.filter(~pl.col("functionality").str.starts_with("spell_"))
    return rows["text"].unique(maintain_order=True).to_list()


def _ngrams(toks: Sequence[str], n: int) -> Counter:
    return Counter(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))


def self_bleu(texts: Sequence[str], orders: Sequence[int] = ORDERS) -> dict[str, float]:
    """Mean sentence BLEU-n of each text against all the others (nltk
    semantics, see the module doc); 0 for a text with no unigram match;
    None for fewer than two texts."""
    toks = [tokens(t) for t in texts]
    if len(toks) < 2:
        return {f"self_bleu_{n}": None for n in orders}  # no other case to compare with
    top = max(orders)
    counts = [[_ngrams(t, k) for k in range(1, top + 1)] for t in toks]
    # per n-gram: the highest count over the texts, how many texts reach it, the second highest
    best: list[dict[tuple, list[int]]] = [dict() for _ in range(top)]
    for per in counts:
        for k in range(top):
            table = best[k]
            for g, c in per[k].items():
                entry = table.get(g)
                if entry is None:
                    table[g] = [c, 1, 0]
                elif c > entry[0]:
                    table[g] = [c, 1, entry[0]]
                elif c == entry[0]:
                    entry[1] += 1
                elif c > entry[2]:
                    entry[2] = c
    lengths = Counter(len(t) for t in toks)
    sorted_lengths = sorted(lengths)
    sums = {n: 0.0 for n in orders}
    for per, t in zip(counts, toks):
        numerators, denominators = [], []
        for k in range(top):
            matched = 0
            for g, c in per[k].items():
                m, reach, second = best[k][g]
                other = m if (c < m or reach >= 2) else second  # the highest count among the other texts
                matched += min(c, other)
            numerators.append(matched)
            denominators.append(max(1, sum(per[k].values())))
        bp = _brevity(len(t), lengths, sorted_lengths)
        for n in orders:
            if numerators[0] == 0 or bp == 0:
                continue  # nltk: no unigram match -> 0
            logs = [math.log(numerators[k] / denominators[k]) if numerators[k] else -745.0 for k in range(n)]
            sums[n] += bp * math.exp(sum(logs) / n)
    return {f"self_bleu_{n}": round(sums[n] / len(toks), 6) for n in orders}


def _brevity(hyp: int, lengths: Counter, sorted_lengths: list[int]) -> float:
    """nltk's brevity penalty against the closest length among the other
    texts (ties: the shorter)."""
    if hyp == 0:
        return 0.0
    if lengths[hyp] >= 2:
        return 1.0
    i = bisect_left(sorted_lengths, hyp)
    options = [sorted_lengths[j] for j in (i - 1, i + 1) if 0 <= j < len(sorted_lengths)]
    ref = min(options, key=lambda r: (abs(r - hyp), r))
    return 1.0 if hyp > ref else math.exp(1 - ref / hyp)


def perplexity(texts: Sequence[str], net, tokenizer, batch_size: int = 64) -> dict[str, Any]:
    """exp(mean over texts of each text's mean token NLL), each text scored
    alone (the notebook's ``labels=input_ids``: the first token is not
    predicted; a text of one token has no prediction and is counted apart).

    Texts are batched by token length (little padding; right padding keeps
    every real token's position, so a text's NLL does not depend on its
    batch) and the NLLs are summed in the input order."""
    import torch

    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    scorable = [ids for ids in encoded if len(ids) >= 2]
    losses = [0.0] * len(scorable)
    order = sorted(range(len(scorable)), key=lambda k: (len(scorable[k]), k))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    device = next(net.parameters()).device
    with torch.inference_mode():
        for i in tqdm(range(0, len(order), batch_size), desc="perplexity", leave=False):
            rows = order[i : i + batch_size]
            chunk = [scorable[k] for k in rows]
            width = max(map(len, chunk))
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            att = torch.zeros((len(chunk), width), dtype=torch.long)
            for b, s in enumerate(chunk):
                ids[b, : len(s)] = torch.tensor(s)
                att[b, : len(s)] = 1
            ids, att = ids.to(device), att.to(device)
            logp = torch.log_softmax(net(input_ids=ids, attention_mask=att).logits[:, :-1].float(), dim=-1)
            nll = -logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
            mask = att[:, 1:].float()
            for k, v in zip(rows, ((nll * mask).sum(-1) / mask.sum(-1)).tolist()):
                losses[k] = v
    return {
        "perplexity": round(math.exp(sum(losses) / len(losses)), 4) if losses else None,
        "scored": len(losses),
        "too_short": len(encoded) - len(scorable),
    }


def measure(texts: Sequence[str], lm, batch_size: int) -> dict[str, Any]:
    """Self-BLEU 2/3/4 and perplexity of one set of texts (``lm``: an object
    with ``net`` and ``tok``, or None for Self-BLEU only)."""
    out: dict[str, Any] = {"cases": len(texts), **self_bleu(texts)}
    if lm is not None:
        out.update(perplexity(texts, lm.net, lm.tok, batch_size))
    return out


def subsampled(texts: Sequence[str], size: int, draws: int, seed: int, lm, batch_size: int) -> dict[str, Any]:
    """Mean and standard deviation over ``draws`` seeded subsamples of
    ``size`` texts (the notebook: ``df.sample(n=len(HateCheck),
    random_state=i)``); a suite smaller than ``size`` is measured whole,
    once, and says so (``subsample_size``, ``draws``)."""
    if len(texts) <= size:
        one = measure(list(texts), lm, batch_size)
        return {**one, "subsample_size": len(texts), "draws": 1, "smaller_than_reference": len(texts) < size}
    runs = [measure(random.Random(seed + i).sample(list(texts), size), lm, batch_size) for i in range(draws)]
    out: dict[str, Any] = {"cases": len(texts), "subsample_size": size, "draws": draws, "smaller_than_reference": False}
    for key in [k for k in runs[0] if k.startswith("self_bleu") or k == "perplexity"]:
        vals = [r[key] for r in runs]
        mean = sum(vals) / len(vals)
        out[key] = round(mean, 6)
        out[f"{key}_sd"] = round(math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)), 6)
    return out
