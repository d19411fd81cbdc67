"""Per-prompt cost of the local LLM stand-in on the ETHOS prompts (a slice), and
the token counts of the whole protocol (the prefix each group of prompts
shares, encoded once, and each prompt's own tokens).

    python benchmarks/bench_local_llm.py DTYPE N OUT.json

in a workspace where fetch_llm_weights and ethos_sets ran; DTYPE float32 or
bfloat16 overrides the manifest's; N prompts of zero-shot (racist) and of
the first mixed example set are timed (wall and CPU seconds).
Record of 2026-11-26: benchmarks/records/local_llm_cost_2026-11-26.json."""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import torch

from hatecheck_pipeline.evaluation import llm
from hatecheck_pipeline.models import llm as prompting
from hatecheck_pipeline.models.llm import common_prefix
from hatecheck_pipeline.models.weights import read_manifest

dtype, n, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
work = tempfile.mkdtemp()
torch.set_num_threads(2)
info = read_manifest(Path("data/llm/weights"))
info["dtype"] = dtype
os.symlink(os.path.abspath("data/llm/weights/model.gguf"), f"{work}/model.gguf")
json.dump(info, open(f"{work}/weights.json", "w"))
t = time.perf_counter()
lm = prompting.LocalLM.load(work, 8)
load = time.perf_counter() - t
items = pl.read_parquet("data/ethos_sets/items.parquet")
templates = prompting.load_templates()
prompts = llm.prompts_of(items, templates)
recs = items.to_dicts()
# token counts of the whole protocol: per group the shared prefix and each prompt's own tokens
stats = {}
groups = {}
for r, p in zip(recs, prompts):
    groups.setdefault((r["setting"], r["category"], r["example_set"]), []).append(lm._ids(lm.wrap(p)))
for (s, c, e), ids in groups.items():
    pre = min(common_prefix(ids), min(map(len, ids)) - 1)
    d = stats.setdefault(s, {"prompts": 0, "prefix_tokens": 0, "own_tokens": 0, "groups": 0})
    d["prompts"] += len(ids)
    d["groups"] += 1
    d["prefix_tokens"] += pre
    d["own_tokens"] += sum(len(x) - pre for x in ids)
out = {"dtype": dtype, "load_s": round(load, 1), "tokens": stats, "timing": {}}
print(json.dumps(out), flush=True)
for setting, es in (("zero_shot", None), ("mixed", 1)):
    sel = [i for i, r in enumerate(recs) if r["setting"] == setting and (es is None or r["example_set"] == es)][:n]
    if setting == "zero_shot":
        sel = [i for i, r in enumerate(recs) if r["setting"] == setting and r["category"] == "racist"][:n]
    opts = [prompting.choices(templates[recs[i]["setting"]], recs[i]["category"]) for i in sel]
    cpu0 = time.process_time()
    t = time.perf_counter()
    res = lm.choose([prompts[i] for i in sel], opts)
    wall = time.perf_counter() - t
    cpu = time.process_time() - cpu0
    out["timing"][setting] = {
        "prompts": len(sel),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "answers": [w for w, _ in res],
        "labels": [recs[i]["label"] for i in sel],
    }
    print(json.dumps(out["timing"][setting]), flush=True)
json.dump(out, open(dest, "w"), indent=1)
