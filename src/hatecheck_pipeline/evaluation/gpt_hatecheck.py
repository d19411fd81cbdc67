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

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.cpu import bounded_threads
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_json, write_parquet
from hatecheck_pipeline.expansion import generate as gen
from hatecheck_pipeline.expansion import llm as chat
from hatecheck_pipeline.expansion import nli, prompts, quality

NLI_JUDGE = "nli"  # gpt_hatecheck.judge naming expansion.nli.model rather than an llm.backends entry


class GPTHateCheckError(PipelineError, ValueError):
    pass


def plan(profile: Profile) -> dict[str, Any]:
    """The active profile's ``gpt_hatecheck`` block (generator, judge, caps)."""
    if not profile.get("gpt_hatecheck"):
        raise GPTHateCheckError(f"params: profiles.{profile.name}.gpt_hatecheck is not set (generator, judge, caps)")
    return profile["gpt_hatecheck"]


def backend_of(name: str, backends: Mapping[str, Any], role: str) -> dict[str, Any]:
    if name not in backends:
        raise GPTHateCheckError(f"params: gpt_hatecheck.{role} {name!r} is not an llm.backends entry ({', '.join(sorted(backends))})")
    return dict(backends[name])


PAPER_GENERATOR = "gpt-3.5-turbo-0613"
PAPER_JUDGE = "facebook/bart-large-mnli"


def describe_backend(name: str, backend: Mapping[str, Any], paper_model: str) -> str:
    """What the outputs call a generator or judge: the backend and its
    model, labelled a stand-in for the paper's model unless it is that model."""
    label = f"{name}: {model_name(backend)}"
    return label if backend["model"] == paper_model else f"{label}, a STAND-IN for {paper_model}"


def with_weights(backend: dict[str, Any], weights: Path | None) -> dict[str, Any]:
    """``backend`` with ``model: weights`` replaced by the folder of the
    profile's fetched weights (the stage's ``weights`` input)."""
    from hatecheck_pipeline.models.llm import model_ref

    return {**backend, "model": model_ref(backend["model"], weights)} if backend["kind"] == "local" else backend


def load_local(backend: Mapping[str, Any], threads: int, batch_size: int = 8):
    import torch

    from hatecheck_pipeline.models.llm import LocalLM

    torch.set_num_threads(bounded_threads(threads))
    return LocalLM.load(backend["model"], batch_size)


# A local generator's answer is opened with the start of the format the
# authors' code reads (`json.loads(response)["messages"]`): the prompt asks for
# a "JSON list format with the following key: messages", which the 1.5B
# stand-in, unprefixed, read as a bare list or a list of objects in 3 of its 4
# answers in the embedded run (the fourth was counter-speech cut at the token
# limit; docs/gpt-hatecheck.md). An endpoint model answers unprefixed.
ANSWER_PREFIX = '{"messages": ["'


def client_of(name: str, backend: Mapping[str, Any], cache_dir: Path, threads: int):
    if backend["kind"] == "openai":
        return chat.ChatClient(backend["base_url"], backend.get("api_key_env"), cache_dir, backend.get("timeout_s", 120))
    if backend["kind"] == "local":
        # keyed apart from answers asked without the prefix (their cache entries stay valid as they are)
        return chat.LocalChat(load_local(backend, threads), model_name(backend), cache_dir, answer_prefix=ANSWER_PREFIX)
    raise GPTHateCheckError(f"llm.backends.{name}.kind: {backend['kind']!r} is not one of ['openai', 'local']")


def model_name(backend: Mapping[str, Any]) -> str:
    """The model a request is keyed and recorded by: a local backend's
    weights by name and sha256 (not the folder they lie in)."""
    from hatecheck_pipeline.models.llm import describe_model

    return describe_model(backend["model"]) if backend["kind"] == "local" else backend["model"]


def draw_cells(cells: Sequence[prompts.Cell], max_cells: int | None, seed: int) -> list[prompts.Cell]:
    """A seeded sample of ``max_cells`` (functionality, target) cells in
    their original order (None = all)."""
    import random

    if max_cells is None or max_cells >= len(cells):
        return list(cells)
    keep = set(random.Random(seed).sample(range(len(cells)), max_cells))
    return [c for i, c in enumerate(cells) if i in keep]


def gpt_generate(
    language: str,
    slurs: Path,
    prompts_file: Path,
    candidates: Path,
    requests: Path,
    report: Path,
    settings: Mapping[str, Any],
    backends: Mapping[str, Any],
    profile: Profile,
    threads: int,
    weights: Path | None = None,
) -> str:
    """Stage ``expand_llm_generate_<language>``: the candidates of every
    (functionality, target group) cell from the generator the profile
    names (``settings`` = ``expansion.llm``; answers cached by request under
    ``settings.cache_dir``); every request with its bad output, if any, and
    the counts per functionality (``report``); ``slurs``: Table 12's slur
    list (``resources/expansion/gpt_hatecheck_slurs.yaml``); ``weights``: the
    fetched weights' manifest when the generator's model is ``weights``."""
    cfg = plan(profile)
    name = cfg["generator"]
    backend = with_weights(backend_of(name, backends, "generator"), weights)
    spec = prompts.load_spec(prompts_file)
    by_target = prompts.table_12_slurs(slurs)
    funcs = settings["functionalities"] or list(spec["functionalities"])
    n = min(settings["n_per_cell"], cfg["per_cell"]) if cfg.get("per_cell") else settings["n_per_cell"]
    per_request = min(settings["per_request"], n)
    max_tokens = min(settings["max_tokens"], cfg["max_tokens"]) if cfg.get("max_tokens") else settings["max_tokens"]
    max_requests = (
        min(settings["max_requests_per_cell"], cfg["max_requests"]) if cfg.get("max_requests") else settings["max_requests_per_cell"]
    )
    every = prompts.cells(spec, funcs, settings["targets"], by_target, language, per_request)
    cells = draw_cells(every, cfg.get("max_cells"), settings["seed"])
    started = time.perf_counter()
    client = client_of(name, backend, Path(settings["cache_dir"]) / name, threads)
    try:
        frame, reqs = gen.generate(
            client, model_name(backend), cells, n, per_request, max_requests, settings["temperature"], max_tokens, settings["seed"]
        )
    finally:
        client.close()
    write_parquet(frame, candidates)
    write_parquet(reqs, requests)
    used = {
        "temperature": settings["temperature"],
        "n_per_cell": n,
        "per_request": per_request,
        "max_requests_per_cell": max_requests,
        "max_tokens": max_tokens,
        "seed": settings["seed"],
        "cells_possible": len(every),
        "max_cells": cfg.get("max_cells"),
        "complete": len(cells) == len(every) and n == settings["n_per_cell"],
        "answer_prefix": ANSWER_PREFIX if backend["kind"] == "local" else None,
    }
    doc = gen.generation_report(reqs, cells, describe_backend(name, backend, PAPER_GENERATOR), used, client.queried, client.cached)
    doc["seconds"] = round(time.perf_counter() - started, 1)
    write_json(doc, report)
    return (
        f"{language}: {frame.height} candidates from {len(cells)} cells, {reqs.height} requests "
        f"({client.queried} asked, {client.cached} cached), {doc['bad_outputs']} bad outputs; "
        f"generator {doc['generator']}"
    )


def load_judge(
    cfg: Mapping[str, Any],
    backends: Mapping[str, Any],
    nli_settings: Mapping[str, Any],
    threads: int,
    batch_size: int,
    weights: Path | None = None,
):
    name = cfg["judge"]
    if name == NLI_JUDGE:
        import torch

        torch.set_num_threads(bounded_threads(threads))
        return nli.NLIScorer(nli_settings["model"], batch_size=nli_settings["batch_size"])
    backend = with_weights(backend_of(name, backends, "judge"), weights)
    if backend["kind"] != "local":
        raise GPTHateCheckError(f"params: gpt_hatecheck.judge {name!r} must be a local backend (log-probabilities) or 'nli'")
    return nli.LLMJudge(load_local(backend, threads, batch_size), describe_backend(name, backend, PAPER_JUDGE))


class NoJudgeNeeded:
    """No candidates: nothing to ask (the judge's name is kept, its model not loaded)."""

    def __init__(self, name: str):
        self.name = name

    def entailment(self, pairs):
        if pairs:
            raise GPTHateCheckError("NoJudgeNeeded was asked a question")
        return []


def judge_name(cfg: Mapping[str, Any], backends: Mapping[str, Any], nli_settings: Mapping[str, Any], weights: Path | None = None) -> str:
    if cfg["judge"] == NLI_JUDGE:
        return f"NLI model {nli_settings['model']}"
    backend = with_weights(backend_of(cfg["judge"], backends, "judge"), weights)
    return (
        f"STAND-IN judge: {describe_backend(cfg['judge'], backend, PAPER_JUDGE)} answering "
        f"'{nli.JUDGE_QUESTION.splitlines()[-1]}' (not an NLI model)"
    )


def gpt_validate(
    name: str,
    candidates: Path,
    hypotheses: Path,
    accepted: Path,
    rejected: Path,
    report: Path,
    settings: Mapping[str, Any],
    targets: Sequence[str],
    backends: Mapping[str, Any],
    profile: Profile,
    threads: int,
    batch_size: int,
    generation: Path,
    weights: Path | None = None,
) -> str:
    """Stage ``expand_llm_validate_<language>``: the hypothesis tests of
    every candidate through the judge the profile names (``settings`` =
    ``expansion.nli``); kept cases as a suite table, rejected ones with their
    first failing test, counts per functionality and target group."""
    import json

    cfg = plan(profile)
    started = time.perf_counter()
    spec = nli.load_spec(hypotheses)
    frame = pl.read_parquet(candidates)
    judge = (
        load_judge(cfg, backends, settings, threads, batch_size, weights)
        if frame.height
        else NoJudgeNeeded(judge_name(cfg, backends, settings, weights))
    )
    kept, rej, doc = gen.validate(frame, spec, judge, settings["threshold"], targets)
    generator = json.loads(Path(generation).read_text("utf-8"))["generator"]
    kept = kept.with_columns(pl.lit(generator).alias("generator"))
    write_parquet(kept, accepted)
    write_parquet(rej, rejected)
    doc = {"generator": generator, **doc, "seconds": round(time.perf_counter() - started, 1)}
    write_json(doc, report)
    return f"{name}: kept {doc['kept']}/{doc['candidates']}; judge {doc['judge']}"


def gpt_quality(reference: Path, generated: Mapping[str, Path], report: Path, settings: Mapping[str, Any], profile: Profile) -> str:
    """Stage ``expand_quality`` (Table 6): Self-BLEU 2/3/4 and perplexity of
    all of HateCheck (spelling functionalities out, duplicates dropped, as
    the authors' notebook; the profile's ``quality_cases``: a seeded sample
    of it) and of ten seeded subsamples of each generated suite of that
    size, averaged (``settings`` = ``expansion.quality``)."""
    import random

    import torch

    cap = plan(profile).get("quality_cases")
    torch.set_num_threads(bounded_threads(settings["threads"]))
    lm = load_local({"model": settings["lm"]}, settings["threads"], settings["batch_size"])
    ref = quality.reference_texts(pl.read_parquet(reference))
    if cap and cap < len(ref):
        ref = random.Random(settings["seed"]).sample(ref, cap)
    doc: dict[str, Any] = {
        "lm": settings["lm"],
        "lm_stand_in": settings.get("lm_stand_in"),
        "reference_cap": cap,
        "subsamples": settings["subsamples"],
        "seed": settings["seed"],
        "suites": {"hatecheck": quality.measure(ref, lm, settings["batch_size"])},
    }
    for name, path in generated.items():
        texts = pl.read_parquet(path, columns=["text"])["text"].unique(maintain_order=True).to_list()
        doc["suites"][name] = quality.subsampled(texts, len(ref), settings["subsamples"], settings["seed"], lm, settings["batch_size"])
    write_json(doc, report)
    return "quality: " + ", ".join(f"{k} ({v['cases']} cases)" for k, v in doc["suites"].items())


# ------------------------------------------------- Tables 8-9 (section 5)


def cases_with_predictions(table: Path, predictions: Path, id_column: str) -> pl.DataFrame:
    """The predicted cases of a suite (the profile's draw) with their gold
    label, functionality, 0/1 prediction and p(hateful)."""
    gold = pl.read_parquet(table).select(pl.col(id_column).cast(pl.Utf8).alias("id"), "label", "functionality")
    preds = pl.read_parquet(predictions).select(
        pl.col("id").cast(pl.Utf8), "p_hateful", (pl.col("pred") == "hateful").cast(pl.Int8).alias("pred")
    )
    joined = preds.join(gold, on="id", how="left")
    if joined["label"].null_count():
        raise GPTHateCheckError(f"{predictions}: {joined['label'].null_count()} id(s) not in {table}")
    return joined.with_columns((pl.col("label") == "hateful").cast(pl.Int8).alias("gold"))


def compare_suites(hc: pl.DataFrame, gpt: pl.DataFrame) -> dict[str, Any]:
    """HateCheck versus GPT-HateCheck for one model: accuracy (%) per
    functionality on each (Figure 4), Table 8's count of functionalities
    where the model is less accurate on HC, on GPT-HC or tied (accuracies
    rounded to 0.1 pp, over the functionalities both suites have), by gold
    label; Table 9's mean prediction (0/1; and mean p(hateful)) on hateful
    and non-hateful cases."""

    def per_func(frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
        agg = frame.group_by("functionality").agg(
            pl.len().alias("n"), ((pl.col("pred") == pl.col("gold")).mean() * 100).round(1).alias("accuracy"), pl.col("label").first()
        )
        return {r["functionality"]: r for r in agg.to_dicts()}

    a, b = per_func(hc), per_func(gpt)
    rows, t8 = [], {k: {"HC": 0, "GPT-HC": 0, "Tie": 0} for k in ("hateful", "non-hateful", "combined")}
    for func in sorted(set(a) | set(b)):
        ra, rb = a.get(func), b.get(func)
        rows.append(
            {
                "functionality": func,
                "label": (ra or rb)["label"],
                "HC": ra and ra["accuracy"],
                "HC_n": ra and ra["n"],
                "GPT-HC": rb and rb["accuracy"],
                "GPT-HC_n": rb and rb["n"],
            }
        )
        if ra and rb:
            lower = "Tie" if ra["accuracy"] == rb["accuracy"] else ("HC" if ra["accuracy"] < rb["accuracy"] else "GPT-HC")
            t8[ra["label"]][lower] += 1
            t8["combined"][lower] += 1

    def means(frame: pl.DataFrame) -> dict[str, Any]:
        out = {}
        for label in ("hateful", "non-hateful"):
            part = frame.filter(pl.col("label") == label)
            out[label] = {
                "n": part.height,
                "mean_prediction": round(float(part["pred"].mean()), 3) if part.height else None,
                "mean_p_hateful": round(float(part["p_hateful"].mean()), 3) if part.height else None,
            }
        return out

    return {
        "by_functionality": rows,
        "table8": t8,
        "table9": {"HC": means(hc), "GPT-HC": means(gpt)},
        "functionalities_compared": sum(1 for r in rows if r["HC"] is not None and r["GPT-HC"] is not None),
    }


def gpt_compare(
    hatecheck: Path,
    generated: Mapping[str, Path],
    predictions: Mapping[str, Path],
    report: Path,
    id_columns: Mapping[str, str],
    pairs: Mapping[str, Sequence[str]],
) -> str:
    """Stage ``gpt_hatecheck_compare``: for every model predicting both
    HateCheck and a generated suite (``pairs``: model -> [hatecheck suite,
    generated suite]; ``predictions``: "<model>/<suite>" -> file), Figure 4's
    accuracies per functionality and Tables 8-9."""
    tables = {"hatecheck": hatecheck, **generated}
    doc: dict[str, Any] = {"models": {}}
    for model, (hc_suite, gpt_suite) in pairs.items():
        hc = cases_with_predictions(tables[hc_suite], predictions[f"{model}/{hc_suite}"], id_columns[hc_suite])
        gpt = cases_with_predictions(tables[gpt_suite], predictions[f"{model}/{gpt_suite}"], id_columns[gpt_suite])
        doc["models"][model] = {
            "suites": [hc_suite, gpt_suite],
            "cases": {"HC": hc.height, "GPT-HC": gpt.height},
            **compare_suites(hc, gpt),
        }
    write_json(doc, report)
    return "compared: " + ", ".join(f"{m} ({d['functionalities_compared']} functionalities)" for m, d in doc["models"].items())
