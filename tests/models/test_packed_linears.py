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
        assert LocalLM(net, tok, 3).generate(prompts, 8, temperature, seed, first_line=False) == LocalLM(dense, tok, 3).generate(
            prompts, 8, temperature, seed, first_line=False
        )


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


def test_packing_frees_each_dense_weight_as_its_layer_is_packed():
    """The peak of packing is the network plus one layer: a dense weight
    nothing else holds is gone once its layer is packed, not at the end."""
    import weakref

    net, _ = tiny_causal_lm(WORDS, arch="llama")
    weights = [weakref.ref(m.weight) for m in net.modules() if isinstance(m, torch.nn.Linear)]
    alive_while_packing = []
    real = PackedLinear.__init__

    def counting(self, linear, batch_hint):
        real(self, linear, batch_hint)
        alive_while_packing.append(sum(w() is not None for w in weights))

    PackedLinear.__init__ = counting
    try:
        pack_linears(net, 4)
    finally:
        PackedLinear.__init__ = real
    # while layer k is packed, the k-1 already packed have let go of their dense weights
    assert alive_while_packing == [len(weights) - k for k in range(len(weights))]
    assert all(w() is None for w in weights)


def test_a_saved_model_read_into_memory_is_the_saved_model(tmp_path):
    """models/llm.read_into_memory (weights read, the input embedding
    mapped): the same parameters and outputs as transformers' own load of
    the folder, and packed afterwards, the dense outputs."""
    from transformers import AutoModelForCausalLM

    from hatecheck_pipeline.models.llm import read_into_memory

    net, tok = tiny_causal_lm(WORDS, arch="llama")
    net.save_pretrained(tmp_path)
    got = read_into_memory(tmp_path, torch.float32).eval()
    want = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    assert got.name_or_path == str(tmp_path)
    assert {k: v.tolist() for k, v in got.state_dict().items()} == {k: v.tolist() for k, v in want.state_dict().items()}
    ids = torch.tensor([tok("is the following text sexist ? women a joke", add_special_tokens=False)["input_ids"]])
    pack_linears(got, 1)
    with torch.inference_mode():
        assert torch.allclose(got(input_ids=ids).logits, want(input_ids=ids).logits, atol=1e-5, rtol=1e-5)


def test_released_pages_of_a_mapped_file_read_back_unchanged(tmp_path):
    """models/llm_fetch.release_pages drops a read-only mapping's resident
    pages (what dequantising a GGUF does tensor by tensor); the data reads
    back the same, from the file."""
    import numpy as np

    from hatecheck_pipeline.models.llm_fetch import release_pages

    data = np.arange(3 * 4096, dtype=np.float32)
    (tmp_path / "x.bin").write_bytes(data.tobytes())
    mapped = np.memmap(tmp_path / "x.bin", dtype=np.float32, mode="r")
    assert float(mapped.sum()) == float(data.sum())
    release_pages(mapped[100:9000])
    release_pages(mapped)
    assert np.array_equal(np.asarray(mapped), data)
