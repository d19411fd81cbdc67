"""benchmarks/bench_compile.py: its eager-against-compiled harness on a tiny
RANDOMLY INITIALISED BERT (test values only), compiled with the
``aot_eager`` backend (torch.compile's tracing without inductor's C++
kernels, so no compiler is needed): the compiled prediction gives eager's
logits, every round is timed, and both training variants start from the
same seeded weights and take the same steps."""

from __future__ import annotations

import torch
from models_helpers import tiny_bert
from pipeline_utils import load_benchmark


def test_the_compile_harness_compares_like_with_like(tmp_path):
    from transformers import AutoTokenizer

    bench = load_benchmark("bench_compile")
    base = str(tiny_bert(tmp_path / "bert"))
    tok = AutoTokenizer.from_pretrained(base)
    seqs = tok(["a b c", "b c d e f", "c a", "d e", "a"] * 3)["input_ids"]
    model = bench.load_for_training(base, 0.1, 0).eval()
    first, pairs, diff, equal = bench.prediction(model, seqs, tok.pad_token_id, 4, 2, "aot_eager")
    assert first > 0 and len(pairs) == 2 and all(e > 0 and c > 0 for e, c in pairs)
    assert diff < 1e-5 and equal == 1.0

    batches = [seqs[i : i + 4] for i in range(0, 12, 4)]
    eager, m_eager = bench.trainer(base, batches, tok.pad_token_id, None)
    compiled, m_comp = bench.trainer(base, batches, tok.pad_token_id, "aot_eager")
    start = {n: p.detach().clone() for n, p in m_eager.named_parameters()}
    assert all(torch.equal(start[n], p) for n, p in m_comp.named_parameters())  # the same start
    eager(), compiled()
    moved = [n for n, p in m_eager.named_parameters() if not torch.equal(start[n], p)]
    assert moved and "bert.embeddings.word_embeddings.weight" not in moved  # trained, embeddings frozen
    comp = dict(m_comp.named_parameters())
    assert all(torch.allclose(comp[n], p, atol=1e-5) for n, p in m_eager.named_parameters())  # the same steps
