"""benchmarks/probe_pooling.py: the three poolings it probes, on a tiny
RANDOMLY INITIALISED BERT (test values only)."""

from __future__ import annotations

import torch
from models_helpers import tiny_bert
from pipeline_utils import load_benchmark


def test_the_probe_pools_mean_last_and_first_real_token(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    probe = load_benchmark("probe_pooling")
    base = tiny_bert(tmp_path / "bert")
    model, tok = AutoModel.from_pretrained(base).eval(), AutoTokenizer.from_pretrained(base)
    texts = ["a b c d", "a"]
    feats = probe.pooled_features(model, tok, texts, max_length=16)
    assert set(feats) == {"mean", "last token", "first token"} and all(v.shape == (2, model.config.hidden_size) for v in feats.values())
    with torch.no_grad():
        alone = model(**tok(["a"], return_tensors="pt")).last_hidden_state[0]  # the short text unpadded
    torch.testing.assert_close(torch.from_numpy(feats["mean"][1]), alone.mean(dim=0), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(feats["last token"][1]), alone[-1], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(feats["first token"][1]), alone[0], rtol=1e-4, atol=1e-5)
