"""Float32 linear layers packed for oneDNN (models/runtime.pack_linears) on
tiny RANDOMLY INITIALISED causal LMs built here: the packed network gives
the dense network's outputs up to float32 rounding, and only where it
applies (a float32 CPU network)."""

import copy

import pytest
import torch
from tiny_causal_lm import tiny_causal_lm

from hatecheck_pipeline.models.llm import LocalLM
from hatecheck_pipeline.models.runtime import PackedLinear, can_pack_linears, pack_linears

WORDS = "<pad> <unk> is the following text sexist ? women a joke : 'text' classify racist yes no answer".split()



def test_the_pinned_torch_has_onednn():
    assert torch.backends.mkldnn.is_available()  # torch==2.13.0's CPU build: else nothing below would be packed


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_a_packed_network_gives_the_dense_outputs(arch):
    net, tok = tiny_causal_lm(WORDS, arch=arch)
    dense = copy.deepcopy(net)
    linears = sum(isinstance(m, torch.nn.Linear) for m in net.modules())
    assert pack_linears(net, 4) == linears > 0
    assert not any(isinstance(m, torch.nn.Linear) for m in net.modules())
    assert sum(isinstance(m, PackedLinear) for m in net.modules()) == linears
    ids = torch.tensor([tok("is the following text sexist ? women a joke", add_special_tokens=False)["input_ids"]] * 3)
    with torch.inference_mode():
        got, want = net(input_ids=ids).logits, dense(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-5) and not torch.equal(got, torch.zeros_like(got))
    # greedy answers, and sampled ones with a seed per prompt, are the dense network's
    prompts = ["is the following text sexist ?", "women a joke : 'text' :", "classify"]
    for temperature, seed in ((0.0, 0), (0.7, [1, 2, 3])):
        assert (LocalLM(net, tok, 3).generate(prompts, 8, temperature, seed, first_line=False)
                == LocalLM(dense, tok, 3).generate(prompts, 8, temperature, seed, first_line=False))


def test_a_tied_output_layer_is_packed_apart_and_the_embedding_kept():
    net, _ = tiny_causal_lm(WORDS, arch="llama")
    net.config.tie_word_embeddings = True
    net.tie_weights()
    embedding = net.get_input_embeddings().weight
    assert net.get_output_embeddings().weight is embedding
    pack_linears(net, 8)
    assert isinstance(net.get_output_embeddings(), PackedLinear) and net.get_input_embeddings().weight is embedding


def test_only_float32_cpu_networks_are_packed():
    net, _ = tiny_causal_lm(WORDS, arch="llama")
    half = copy.deepcopy(net).to(torch.bfloat16)
    assert not can_pack_linears(half) and pack_linears(half, 4) == 0
    assert any(isinstance(m, torch.nn.Linear) for m in half.modules())
    assert can_pack_linears(net)
