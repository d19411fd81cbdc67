"""benchmarks/bench_optimizer.py: its three AdamW paths on a tiny RANDOMLY
INITIALISED BERT (test values only): each trains the same start on the same
batches, the foreach path lands on the per-tensor loop's weights bit for
bit, and a frozen word-embedding matrix is left out of the trained
parameters."""

from __future__ import annotations

import torch
from models_helpers import tiny_bert
from pipeline_utils import load_benchmark


def test_the_three_optimiser_paths_train_the_same_start(tmp_path):
    from transformers import AutoTokenizer

    bench = load_benchmark("bench_optimizer")
    base = str(tiny_bert(tmp_path / "bert"))
    tok = AutoTokenizer.from_pretrained(base)
    enc = tok(["a b c", "b c d e f", "c a", "d e"] * 4)["input_ids"]
    runs = {kind: bench.run(base, enc, tok.pad_token_id, kind, steps=4, batch=4, freeze=False, bf16=True) for kind in bench.PATHS}
    weights = {kind: dict(model.named_parameters()) for kind, (model, *_) in runs.items()}
    start = dict(bench.load_for_training(base, 0.1, 0).named_parameters())
    loop = weights["per-tensor loop"]
    assert any(not torch.equal(loop[n], start[n]) for n in loop)  # the steps moved the weights
    assert all(torch.equal(weights["foreach"][n], loop[n]) for n in loop)
    assert all(ms > 0 for _, *timings, _ in runs.values() for ms in timings)
    _, _, _, frozen = bench.run(base, enc, tok.pad_token_id, "fused", steps=3, batch=4, freeze=True, bf16=False)
    assert frozen == runs["fused"][3] - start["bert.embeddings.word_embeddings.weight"].numel()
