"""Torch runtime helpers shared by training and prediction: device choice,
thread budget, tokenisation, dynamic padding, length bucketing, autocast,
batched forward passes, and float32 linear layers packed for oneDNN."""

from __future__ import annotations

import contextlib
import os
from typing import Sequence

import numpy as np
import torch

from hatecheck_pipeline.models.bf16 import auto_bf16, cpu_bf16_on


def pick_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def available_threads() -> int:
    """CPU threads worth using now: the cores this process may run on minus
    the load other processes put on them (1-minute load average), at least 1.

    On a shared machine an OpenMP team larger than the idle cores waits at
    every barrier for a descheduled thread: on 2 cores under a load of ~4,
    1 thread ran MiniLM prediction 2-3x faster than 2 threads."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return max(1, min(cores, int(cores - load + 0.5)))


def autocast_dtype(device: torch.device, amp: bool, cpu_bf16: bool | str = False) -> torch.dtype | None:
    """The autocast dtype of a training step or prediction: bf16 (fp16
    without bf16) on CUDA when ``amp``; bf16 on a CPU when ``cpu_bf16`` is
    on (models/bf16.cpu_bf16_on); None = fp32. Master weights and optimiser
    state stay fp32 either way."""
    if amp and device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "cpu" and cpu_bf16_on(cpu_bf16):
        return torch.bfloat16
    return None


def autocast_ctx(device: torch.device, amp: bool, cpu_bf16: bool | str = False):
    dtype = autocast_dtype(device, amp, cpu_bf16)
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


def precision(device: torch.device, amp: bool, cpu_bf16: bool | str = False) -> str:
    """What :func:`autocast_ctx` runs in, for logs and cards.

    >>> precision(torch.device("cpu"), amp=True), precision(torch.device("cpu"), amp=False, cpu_bf16=True)
    ('fp32', 'bf16 autocast (CPU)')
    """
    dtype = autocast_dtype(device, amp, cpu_bf16)
    if dtype is None:
        return f"fp32 (cpu_bf16: auto; {auto_bf16()[1]})" if cpu_bf16 == "auto" and device.type == "cpu" else "fp32"
    return f"{'bf16' if dtype == torch.bfloat16 else 'fp16'} autocast ({device.type.upper()})"


def encode(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids per text (with special tokens, truncated, unpadded)."""
    return tokenizer(list(texts), truncation=True, max_length=max_length, add_special_tokens=True)["input_ids"]


def collate(seqs: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Pad to the longest sequence of the batch (dynamic padding). A batch
    whose sequences all have the same length gets no attention mask (nothing
    to mask; the model then skips building the additive mask)."""
    lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    width = int(lens.max())
    ids = np.full((len(seqs), width), pad_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, : lens[i]] = s
    batch = {"input_ids": torch.from_numpy(ids).to(device)}
    if lens.min() < width:
        batch["attention_mask"] = torch.from_numpy((np.arange(width)[None, :] < lens[:, None]).astype(np.int64)).to(device)
    return batch


def length_batches(seqs: Sequence[Sequence[int]], batch_size: int) -> list[np.ndarray]:
    """Index batches of similar token length (longest first), so padding
    stays within a batch's narrow length range."""
    order = np.argsort([-len(s) for s in seqs], kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def bucketed_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator, pool: int = 50) -> list[torch.Tensor]:
    """One epoch's training batches, grouped by length: a random order cut
    into pools of ``pool`` batches, each pool sorted by token length and cut
    into batches, and the batches shuffled (the same generator). Every
    example appears once; a batch holds examples of similar length, so
    dynamic padding wastes little; the batch count equals plain batching's.

    >>> g = torch.Generator().manual_seed(0)
    >>> batches = bucketed_batches([5, 1, 9, 3, 7, 2], 2, g, pool=3)
    >>> sorted(int(i) for b in batches for i in b), len(batches)
    ([0, 1, 2, 3, 4, 5], 3)
    """
    order = torch.randperm(len(lengths), generator=generator)
    size = batch_size * pool
    batches: list[torch.Tensor] = []
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        chunk = chunk[torch.argsort(torch.as_tensor([lengths[int(i)] for i in chunk]), stable=True)]
        batches += list(chunk.split(batch_size))
    return [batches[int(i)] for i in torch.randperm(len(batches), generator=generator)]


def forward_logits(
    model,
    seqs,
    pad_id: int,
    batch_size: int,
    device: torch.device | None = None,
    amp: bool = True,
    progress: bool = False,
    cpu_bf16: bool | str = False,
) -> torch.Tensor:
    """fp32 logits on CPU, in the order of ``seqs``; the forward passes run
    under :func:`autocast_ctx` (``cpu_bf16``: bf16 autocast on a CPU)."""
    from tqdm.auto import tqdm

    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = torch.empty((len(seqs), model.config.num_labels), dtype=torch.float32)
    with torch.inference_mode(), autocast_ctx(device, amp, cpu_bf16):
        for idx in tqdm(length_batches(seqs, batch_size), disable=not progress, desc="predict", mininterval=5):
            batch = collate([seqs[i] for i in idx], pad_id, device)
            out[torch.as_tensor(idx)] = model(**batch).logits.float().cpu()
    model.train(was_training)
    return out


class PackedLinear(torch.nn.Module):
    """An inference-only ``nn.Linear`` whose float32 weight is kept in
    oneDNN's blocked layout (reordered once, for ``batch_hint`` rows) and
    applied with oneDNN's linear kernel: the same float32 product, summed in
    another order. The dense path's GEMM packs the weight again on every
    call, which dominates a decoding step of a few rows
    (``benchmarks/records/onednn_linears_2026-11-28.txt``, docs/performance.md)."""

    def __init__(self, linear: torch.nn.Linear, batch_hint: int):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight_packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), max(1, batch_hint))
        self.bias = None if linear.bias is None else linear.bias.detach()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.weight_packed, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, oneDNN"


def can_pack_linears(net: torch.nn.Module) -> bool:
    """Whether :func:`pack_linears` applies: a float32 network on a CPU,
    with torch's oneDNN kernels built in."""
    first = next(net.parameters(), None)
    return (
        first is not None
        and first.device.type == "cpu"
        and first.dtype == torch.float32
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


def pack_linears(net: torch.nn.Module, batch_hint: int) -> int:
    """Replace every ``nn.Linear`` of an inference-only float32 CPU network
    by a :class:`PackedLinear` (the weights reordered once; a tied output
    layer gets its own packed copy, its embedding stays as it is); the
    number replaced, 0 where :func:`can_pack_linears` says no. Outputs
    match the dense path up to float32 rounding (summation order). Memory:
    a dense weight nothing else holds is freed as its layer is packed, so
    the peak is the network plus one layer (weights read into memory, not
    mapped from a file: freeing a mapped tensor frees no resident pages)."""
    if not can_pack_linears(net):
        return 0
    places = [(parent, name) for parent in net.modules() for name, child in parent.named_children() if isinstance(child, torch.nn.Linear)]
    for parent, name in places:  # one layer at a time: its dense weight is freed as its packed copy is made
        setattr(parent, name, PackedLinear(getattr(parent, name), batch_hint))
    return len(places)
