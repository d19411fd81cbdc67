"""Stages of GPT-HateCheck (Jin et al. 2024) that load models: generation
by an ``llm.backends`` entry (a local causal LM through ``models.llm``, or an
OpenAI-compatible endpoint), validation by a judge (the NLI model, or a
local LLM as a labelled stand-in), and the quality measures of Table 6.
The domain logic is in ``expansion/`` (prompts, nli, generate, quality);
this module only picks and loads the models the profile names
(``profiles.<p>.gpt_hatecheck``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

from hatecheck_pipeline.core.config import active_profile
from hatecheck_pipeline.core.cpu import bounded_threads
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_json, write_parquet
from hatecheck_pipeline.expansion import generate as gen
from hatecheck_pipeline.expansion import llm as chat
from hatecheck_pipeline.expansion import nli, prompts, quality

NLI_JUDGE = "nli"  # gpt_hatecheck.judge naming expansion.nli.model rather than an llm.backends entry


class GPTHateCheckError(PipelineError, ValueError):
    pass


def plan(profile: str, profiles: Mapping[str, Any]) -> dict[str, Any]:
    """The active profile's ``gpt_hatecheck`` block (generator, judge, caps)."""
    prof = active_profile(profile, profiles)
    if not prof.get("gpt_hatecheck"):
        raise GPTHateCheckError(f"params: profiles.{profile}.gpt_hatecheck is not set (generator, judge, caps)")
    return prof["gpt_hatecheck"]


def backend_of(name: str, backends: Mapping[str, Any], role: str) -> dict[str, Any]:
    if name not in backends:
        raise GPTHateCheckError(f"params: gpt_hatecheck.{role} {name!r} is not an llm.backends entry "
                                f"({', '.join(sorted(backends))})")
    return dict(backends[name])


def describe_backend(name: str, backend: Mapping[str, Any]) -> str:
    """What the outputs call a generator or judge: the backend, its model and
    its stand-in label where it has one."""
    from hatecheck_pipeline.models.llm import describe_model

    model = describe_model(backend["model"]) if backend["kind"] == "local" else backend["model"]
    label = f"{name}: {model}"
    return f"{label} (STAND-IN: {backend['stand_in']})" if backend.get("stand_in") else label


def load_local(backend: Mapping[str, Any], threads: int, batch_size: int = 8):
    import torch

    from hatecheck_pipeline.models.llm import LocalLM

    torch.set_num_threads(bounded_threads(threads))
    return LocalLM.load(backend["model"], batch_size)


def client_of(name: str, backend: Mapping[str, Any], cache_dir: Path, threads: int):
    if backend["kind"] == "openai":
        return chat.ChatClient(backend["base_url"], backend.get("api_key_env"), cache_dir, backend.get("timeout_s", 120))
    if backend["kind"] == "local":
        return chat.LocalChat(load_local(backend, threads), backend["model"], cache_dir)
    raise GPTHateCheckError(f"llm.backends.{name}.kind: {backend['kind']!r} is not one of ['openai', 'local']")


def draw_cells(cells: Sequence[prompts.Cell], max_cells: int | None, seed: int) -> list[prompts.Cell]:
    """A seeded sample of ``max_cells`` (functionality, target) cells in
    their original order (None = all)."""
    import random

    if max_cells is None or max_cells >= len(cells):
        return list(cells)
    keep = set(random.Random(seed).sample(range(len(cells)), max_cells))
    return [c for i, c in enumerate(cells) if i in keep]


def gpt_generate(language: str, placeholders: Path, prompts_file: Path, candidates: Path, requests: Path, report: Path,
                 settings: Mapping[str, Any], backends: Mapping[str, Any], profile: str, profiles: Mapping[str, Any],
                 threads: int) -> str:
    """Stage ``expand_llm_generate_<language>``: the candidates of every
    (functionality, target group) cell from the generator the profile
    names (``settings`` = ``expansion.llm``; answers cached by request under
    ``settings.cache_dir``); every request with its bad output, if any, and
    the counts per functionality (``report``)."""
    cfg = plan(profile, profiles)
    name = cfg["generator"]
    backend = backend_of(name, backends, "generator")
    spec = prompts.load_spec(prompts_file)
    slurs = prompts.hatecheck_slurs(placeholders)
    funcs = settings["functionalities"] or list(spec["functionalities"])
    n = min(settings["n_per_cell"], cfg["per_cell"]) if cfg.get("per_cell") else settings["n_per_cell"]
    per_request = min(settings["per_request"], n)
    max_tokens = min(settings["max_tokens"], cfg["max_tokens"]) if cfg.get("max_tokens") else settings["max_tokens"]
    max_requests = min(settings["max_requests_per_cell"], cfg["max_requests"]) if cfg.get("max_requests") \
        else settings["max_requests_per_cell"]
    every = prompts.cells(spec, funcs, settings["targets"], slurs, language, per_request)
    cells = draw_cells(every, cfg.get("max_cells"), settings["seed"])
    started = time.perf_counter()
    client = client_of(name, backend, Path(settings["cache_dir"]) / name, threads)
    try:
        frame, reqs = gen.generate(client, backend["model"], cells, n, per_request, max_requests,
                                   settings["temperature"], max_tokens, settings["seed"])
    finally:
        client.close()
    write_parquet(frame, candidates)
    write_parquet(reqs, requests)
    used = {"temperature": settings["temperature"], "n_per_cell": n, "per_request": per_request,
            "max_requests_per_cell": max_requests, "max_tokens": max_tokens,
            "seed": settings["seed"], "cells_possible": len(every), "max_cells": cfg.get("max_cells"),
            "complete": len(cells) == len(every) and n == settings["n_per_cell"]}
    doc = gen.generation_report(reqs, cells, describe_backend(name, backend), used, client.queried, client.cached)
    doc["seconds"] = round(time.perf_counter() - started, 1)
    write_json(doc, report)
    return (f"{language}: {frame.height} candidates from {len(cells)} cells, {reqs.height} requests "
            f"({client.queried} asked, {client.cached} cached), {doc['bad_outputs']} bad outputs; "
            f"generator {doc['generator']}")


def load_judge(cfg: Mapping[str, Any], backends: Mapping[str, Any], nli_settings: Mapping[str, Any], threads: int,
               batch_size: int):
    name = cfg["judge"]
    if name == NLI_JUDGE:
        import torch

        torch.set_num_threads(bounded_threads(threads))
        return nli.NLIScorer(nli_settings["model"], batch_size=nli_settings["batch_size"])
    backend = backend_of(name, backends, "judge")
    if backend["kind"] != "local":
        raise GPTHateCheckError(f"params: gpt_hatecheck.judge {name!r} must be a local backend (log-probabilities) or 'nli'")
    return nli.LLMJudge(load_local(backend, threads, batch_size), describe_backend(name, backend))


def gpt_validate(name: str, candidates: Path, hypotheses: Path, accepted: Path, rejected: Path, report: Path,
                 settings: Mapping[str, Any], targets: Sequence[str], backends: Mapping[str, Any], profile: str,
                 profiles: Mapping[str, Any], threads: int, batch_size: int, generation: Path) -> str:
    """Stage ``expand_llm_validate_<language>``: the hypothesis tests of
    every candidate through the judge the profile names (``settings`` =
    ``expansion.nli``); kept cases as a suite table, rejected ones with their
    first failing test, counts per functionality and target group."""
    import json

    cfg = plan(profile, profiles)
    started = time.perf_counter()
    judge = load_judge(cfg, backends, settings, threads, batch_size)
    spec = nli.load_spec(hypotheses)
    frame = pl.read_parquet(candidates)
    kept, rej, doc = gen.validate(frame, spec, judge, settings["threshold"], targets)
    generator = json.loads(Path(generation).read_text("utf-8"))["generator"]
    kept = kept.with_columns(pl.lit(generator).alias("generator"))
    write_parquet(kept, accepted)
    write_parquet(rej, rejected)
    doc = {"generator": generator, **doc, "seconds": round(time.perf_counter() - started, 1)}
    write_json(doc, report)
    return f"{name}: kept {doc['kept']}/{doc['candidates']}; judge {doc['judge']}"


def gpt_quality(reference: Path, generated: Mapping[str, Path], report: Path, settings: Mapping[str, Any]) -> str:
    """Stage ``expand_quality`` (Table 6): Self-BLEU 2/3/4 and perplexity of
    all of HateCheck (spelling functionalities out, duplicates dropped, as
    the authors' notebook) and of ten seeded subsamples of each generated
    suite of HateCheck's size, averaged (``settings`` =
    ``expansion.quality``)."""
    import torch

    torch.set_num_threads(bounded_threads(settings["threads"]))
    lm = load_local({"model": settings["lm"]}, settings["threads"], settings["batch_size"])
    ref = quality.reference_texts(pl.read_parquet(reference))
    doc: dict[str, Any] = {"lm": settings["lm"], "lm_stand_in": settings.get("lm_stand_in"),
                           "subsamples": settings["subsamples"], "seed": settings["seed"],
                           "suites": {"hatecheck": quality.measure(ref, lm, settings["batch_size"])}}
    for name, path in generated.items():
        texts = pl.read_parquet(path, columns=["text"])["text"].unique(maintain_order=True).to_list()
        doc["suites"][name] = quality.subsampled(texts, len(ref), settings["subsamples"], settings["seed"], lm,
                                                 settings["batch_size"])
    write_json(doc, report)
    return "quality: " + ", ".join(f"{k} ({v['cases']} cases)" for k, v in doc["suites"].items())
