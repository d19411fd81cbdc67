"""The local LLM with its float32 linear layers dense (torch's default
GEMM) and packed for oneDNN (models/runtime.pack_linears, what
LocalLM.load does on a CPU): the same work timed both ways, and how far
the answers move.

- scoring: p(yes) of ``--n`` HateCheck cases (a seeded sample) under the
  zero-shot suite template (models/llm.yes_no_answers, the prompted-LLM
  predict stages' call): seconds, labels equal, largest |p difference|;
- generation: the GPT-HateCheck requests a finished
  ``expand_llm_generate_<language>`` stage cached (``--cache``), asked
  together as the stage asks them (LocalChat.complete_many, a seed per
  request): seconds, answers equal.

Run in a workspace with the fetched weights (``data/llm/weights``)::

    python benchmarks/bench_onednn.py [--model weights] [--n 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return " ".join(line.split(":", 1)[1].split())
    return "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="weights", help="the local backend's model (models/llm.resolve_model)")
    ap.add_argument("--cases", type=Path, default=Path("data/raw/hatecheck/test_suite_cases.csv"))
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--cache", type=Path, default=Path("data/expanded/llm_cache/local"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import polars as pl
    import torch

    from hatecheck_pipeline.core.cpu import machine_cores, native_bf16
    from hatecheck_pipeline.evaluation.gpt_hatecheck import ANSWER_PREFIX
    from hatecheck_pipeline.expansion import llm as chat
    from hatecheck_pipeline.models.llm import LocalLM, load_templates, yes_no_answers
    from hatecheck_pipeline.models.runtime import pack_linears

    torch.set_num_threads(args.threads)
    texts = pl.read_csv(args.cases).sample(n=args.n, seed=args.seed)["test_case"].to_list()
    template = load_templates()["suite_zero_shot_english"]
    bodies = [json.loads(f.read_text("utf-8"))["request"] for f in sorted(args.cache.rglob("*.json"))]
    lm = LocalLM.load(args.model, args.batch_size, pack=False)
    print(
        f"model {args.model} ({lm.precision}), {args.threads} threads, batch size {args.batch_size}; "
        f"{cpu_model()}, {machine_cores()} cores, native bf16 {native_bf16()}; {len(texts)} HateCheck cases, {len(bodies)} cached generation requests"
    )

    def run(tag: str) -> tuple[list, list[str]]:
        t = time.perf_counter()
        scores = yes_no_answers(lm, texts, template)
        ts = time.perf_counter() - t
        answers: list[str] = []
        tg = 0.0
        if bodies:
            with tempfile.TemporaryDirectory() as tmp:
                client = chat.LocalChat(lm, "bench", Path(tmp), answer_prefix=ANSWER_PREFIX)
                t = time.perf_counter()
                answers = [chat.content_of(r) for r in client.complete_many(bodies)]
                tg = time.perf_counter() - t
        print(f"{tag}: scoring {ts:.1f} s ({len(texts) / ts:.2f} cases/s); generation {tg:.1f} s", flush=True)
        return scores, answers

    dense = run("dense")
    packed_layers = pack_linears(lm.net, args.batch_size)
    packed = run(f"packed ({packed_layers} linear layers)")
    same = sum(a[0] == b[0] for a, b in zip(dense[0], packed[0]))
    diff = max(abs(a[1] - b[1]) for a, b in zip(dense[0], packed[0]))
    print(f"labels equal: {same} of {len(texts)}; largest |p(yes) difference|: {diff:.2e}")
    print(f"generated answers equal: {sum(a == b for a, b in zip(dense[1], packed[1]))} of {len(bodies)}")


if __name__ == "__main__":
    main()
