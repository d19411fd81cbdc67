"""Constrained answers on the ETHOS mixed prompts: this checkout's
``LocalLM.choose`` against another version of ``models/llm.py`` (e.g. the
one before the three-level cache), on the same loaded model, back to back.

    git show fb57006~1:src/hatecheck_pipeline/models/llm.py > /tmp/old_llm.py
    python benchmarks/bench_llm_levels.py EXAMPLE_SET N /tmp/old_llm.py [OTHER.py ...]

in a workspace where fetch_llm_weights and ethos_sets ran. Prints seconds
per prompt of each, and the largest log-probability difference.
Record of 2026-11-26: benchmarks/records/local_llm_levels_2026-11-26.txt."""

import importlib.util
import sys
import time

import polars as pl
import torch

from hatecheck_pipeline.evaluation.llm import prompts_of, select_items
from hatecheck_pipeline.models import llm as prompting

example_set, n, others = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
torch.set_num_threads(2)
lm = prompting.LocalLM.load("data/llm/weights", 8)
models = {"this checkout": lm}
for k, path in enumerate(others):
    spec = importlib.util.spec_from_file_location(f"other_llm_{k}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    models[path] = module.LocalLM(lm.net, lm.tok, 8, lm.prompt_format)
templates = prompting.load_templates()
part = select_items(pl.read_parquet("data/ethos_sets/items.parquet"), ["mixed"], None, None, 0)
prompts, recs = prompts_of(part, templates), part.to_dicts()
chunk = [i for i, r in enumerate(recs) if r["example_set"] == example_set][:n]
asked = [prompts[i] for i in chunk]
options = [prompting.choices(templates["mixed"], "")] * len(asked)
got = {}
for rep in (1, 2):
    for name, model in models.items():
        start = time.perf_counter()
        got[name] = model.choose(asked, options)
        print(f"round {rep}, {name}: {(time.perf_counter() - start) / len(asked):.2f} s/prompt over {len(asked)} mixed prompts", flush=True)
a = got["this checkout"]
for name, b in got.items():
    print(
        f"{name} against this checkout: max |d log p|",
        max(abs(x[1][w] - y[1][w]) for x, y in zip(a, b) for w in x[1]),
        "same answers",
        sum(x[0] == y[0] for x, y in zip(a, b)),
        "/",
        len(a),
    )
