"""GPT-HateCheck's generation on the local LLM: the requests a finished
``expand_llm_generate_<language>`` stage cached, answered again one
``generate`` call each (how LocalChat asked before it batched) and all
together (``LocalChat.complete_many``: one batched call, each answer
sampled from its own request's seed), against the cached answers.

Run in a workspace where the stage ran (its answers in
``data/expanded/llm_cache/local``, the fetched weights in
``data/llm/weights``)::

    python benchmarks/bench_gpt_generate.py [--cache data/expanded/llm_cache/local] [--threads 2]

Prints the wall time of each way, how many answers equal the cached ones,
and the answer lengths in tokens."""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=Path("data/expanded/llm_cache/local"))
    ap.add_argument("--model", default="weights", help="the local backend's model (models/llm.resolve_model)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()

    import torch

    from hatecheck_pipeline.evaluation.gpt_hatecheck import ANSWER_PREFIX
    from hatecheck_pipeline.expansion import llm
    from hatecheck_pipeline.models.llm import LocalLM

    torch.set_num_threads(args.threads)
    files = sorted(args.cache.rglob("*.json"))
    if not files:
        raise SystemExit(f"{args.cache}: no cached answers (run the expand_llm_generate stage first)")
    docs = [json.loads(f.read_text("utf-8")) for f in files]
    bodies = [d["request"] for d in docs]
    cached = [llm.content_of(d["response"]) for d in docs]
    started = time.perf_counter()
    lm = LocalLM.load(args.model, args.batch_size)
    print(
        f"{len(bodies)} cached requests; model {args.model} ({lm.precision}) loaded in "
        f"{time.perf_counter() - started:.1f} s; {platform.processor() or platform.machine()}, {args.threads} threads"
    )

    def answer(client_bodies, batched: bool, scratch: Path) -> tuple[list[str], float]:
        client = llm.LocalChat(lm, "bench", scratch, answer_prefix=ANSWER_PREFIX)
        t = time.perf_counter()
        if batched:
            out = client.complete_many(client_bodies)
        else:  # one generate call per request, seeded as before complete_many: torch.manual_seed(seed)
            out = []
            for body in client_bodies:
                msgs = {m["role"]: m["content"] for m in body["messages"]}
                prompt = llm.chat_prompt(lm.tok, msgs.get("system"), msgs["user"]) + ANSWER_PREFIX
                text = lm.generate(
                    [prompt], body["max_tokens"], body["temperature"], int(body.get("seed") or 0), first_line=False, templated=True
                )[0]
                out.append({"choices": [{"message": {"content": ANSWER_PREFIX + text}}]})
        return [llm.content_of(r) for r in out], time.perf_counter() - t

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        alone, t_alone = answer(bodies, False, Path(tmp) / "alone")
        together, t_together = answer(bodies, True, Path(tmp) / "together")
    tokens = [len(lm.tok(a, add_special_tokens=False)["input_ids"]) for a in alone]
    print(f"one generate call per request: {t_alone:.1f} s (answer tokens {tokens})")
    print(f"all requests together (complete_many, a seed per row): {t_together:.1f} s ({t_together / t_alone:.2f}x)")
    print(f"one call each equals the cached answer: {sum(a == c for a, c in zip(alone, cached))} of {len(bodies)}")
    print(f"together equals one call each: {sum(a == b for a, b in zip(together, alone))} of {len(bodies)}")


if __name__ == "__main__":
    main()
