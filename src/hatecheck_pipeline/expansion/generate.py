"""Stage runs of the LLM branch: generate candidates, validate them by NLI,
measure suite quality."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import polars as pl
from tqdm import tqdm

from hatecheck_pipeline.core.cpu import bounded_threads
from hatecheck_pipeline.expansion import SUITE_COLUMNS, llm, nli, prompts, quality


def run_generate(suite_table: Path, language: str, cfg: Mapping[str, Any], out_table: Path) -> dict[str, Any]:
    """One candidate row per generated message and (functionality, target)
    cell. ``cfg`` = params ``expansion.llm`` (no key: it is read from the
    environment variable ``cfg['api_key_env']``)."""
    from hatecheck_pipeline.core.files import write_parquet

    suite = pl.read_parquet(suite_table)
    if "language" in suite.columns and suite.filter(pl.col("language") == language).height:
        suite = suite.filter(pl.col("language") == language)
    spec = prompts.load_spec(cfg.get("prompts"))
    funcs = cfg["functionalities"] or sorted(spec["segments"])
    cells = prompts.cells(spec, suite, funcs, cfg["targets"], cfg.get("slurs") or {}, language,
                          cfg["n_per_cell"], cfg["seed"])
    client = llm.ChatClient(cfg["base_url"], cfg.get("api_key_env"), Path(cfg["cache_dir"]), cfg["timeout_s"])
    rows = []
    try:
        for cell in tqdm(cells, desc="generate"):
            body = llm.request_body(cfg["model"], cell.system, cell.prompt, cfg["temperature"], cfg["max_tokens"],
                                    cfg["seed"])
            for k, text in enumerate(llm.messages_of(client.complete(body))[: cfg["n_per_cell"]]):
                rows.append({
                    "text": text, "functionality": cell.functionality, "target_ident": cell.target_ident,
                    "label": "hateful" if cell.functionality.endswith("_h") else "non-hateful",
                    "language": language, "prompt": cell.prompt, "demonstration": cell.demonstration,
                    "cache_key": llm.cache_key(cfg["base_url"], body), "k": k,
                })
    finally:
        client.close()
    frame = pl.DataFrame(rows, schema={"text": pl.Utf8, "functionality": pl.Utf8, "target_ident": pl.Utf8,
                                       "label": pl.Utf8, "language": pl.Utf8, "prompt": pl.Utf8,
                                       "demonstration": pl.Utf8, "cache_key": pl.Utf8, "k": pl.Int64})
    frame = frame.with_columns((pl.lit(f"gpt-{language}-") + pl.int_range(pl.len()).cast(pl.Utf8)).alias("id"))
    write_parquet(frame, out_table)
    return {"cells": len(cells), "candidates": frame.height, "queried": client.queried, "cached": client.cached}


def run_validate(candidates: Path, cfg: Mapping[str, Any], targets: list[str], out_accepted: Path,
                 out_rejected: Path, out_json: Path) -> dict[str, Any]:
    """Accepted cases as a suite table, rejected ones with the failing
    hypothesis, pass rate per functionality (``cfg`` = ``expansion.nli``)."""
    import torch

    from hatecheck_pipeline.core.files import write_json, write_parquet

    torch.set_num_threads(bounded_threads(int(cfg.get("threads", 2))))
    frame = pl.read_parquet(candidates)
    scorer = nli.NLIScorer(cfg["model"], batch_size=cfg["batch_size"])
    spec = nli.load_spec(cfg.get("hypotheses"))
    results = nli.validate(frame.to_dicts(), spec, scorer, cfg["threshold"], targets)
    checked = pl.DataFrame([{k: v for k, v in r.items() if k != "entailment"} for r in results],
                           infer_schema_length=None) if results else frame.with_columns(
        pl.lit(False).alias("accepted"), pl.lit(None, pl.Utf8).alias("failed_test"))
    accepted = checked.filter(pl.col("accepted")).with_columns(
        pl.lit("gpt_hatecheck").alias("dataset"), pl.lit("test").alias("split"), pl.lit(None, pl.Utf8).alias("templ_id"),
        pl.lit(None, pl.Utf8).alias("case_templ"), pl.lit(None, pl.Utf8).alias("source_id"),
        pl.lit("llm").alias("generator"))
    write_parquet(accepted.select(SUITE_COLUMNS), out_accepted)
    write_parquet(checked.filter(~pl.col("accepted")), out_rejected)
    rates = (checked.group_by("functionality").agg(pl.len().alias("candidates"), pl.col("accepted").sum().alias("accepted"))
             .with_columns((pl.col("accepted") / pl.col("candidates")).round(6).alias("pass_rate")).sort("functionality"))
    report = {"model": cfg["model"], "threshold": cfg["threshold"], "candidates": checked.height,
              "accepted": accepted.height, "pass_rate": round(accepted.height / checked.height, 6) if checked.height else None,
              "per_functionality": rates.to_dicts()}
    write_json(report, out_json)
    return report


def run_quality(tables: Mapping[str, Path], cfg: Mapping[str, Any], out_json: Path) -> dict[str, Any]:
    """Self-BLEU 2/3/4 and perplexity of each named suite table
    (``cfg`` = ``expansion.quality``; perplexity skipped when lm is null)."""
    import torch

    from hatecheck_pipeline.core.files import write_json

    torch.set_num_threads(bounded_threads(int(cfg.get("threads", 2))))
    out: dict[str, Any] = {"lm": cfg.get("lm"), "max_cases": cfg["max_cases"], "suites": {}}
    for name, path in tables.items():
        texts = pl.read_parquet(path, columns=["text"])["text"].to_list()
        entry = {"cases": len(texts), **quality.self_bleu(texts, max_cases=cfg["max_cases"], seed=cfg["seed"])}
        if cfg.get("lm"):
            entry.update(quality.perplexity(texts, cfg["lm"], max_cases=cfg["max_cases"], seed=cfg["seed"]))
        out["suites"][name] = entry
    write_json(out, out_json)
    return out


def api_key_present(cfg: Mapping[str, Any]) -> bool:
    return bool(cfg.get("api_key_env") and os.environ.get(cfg["api_key_env"]))


def expand_llm_generate(language: str, demonstrations: Path, prompts_file: Path, candidates: Path, *, base_url: str,
                        model: str, api_key_env: str | None, temperature: float, n_per_cell: int, max_tokens: int,
                        timeout_s: float, seed: int, targets: list[str], slurs: Mapping[str, list[str]] | None,
                        functionalities: list[str], prompts: str | None, cache_dir: str,
                        demonstrations_from: str) -> str:
    """Stage: candidate cases for one language through the OpenAI-compatible
    endpoint (responses cached content-addressed). The keyword arguments are
    the declared ``expansion.llm`` keys; ``prompts_file``: the prompt
    templates ``prompts`` names (or the shipped ones), ``demonstrations``:
    the table of the ``demonstrations_from`` suite."""
    cfg = {"base_url": base_url, "model": model, "api_key_env": api_key_env, "temperature": temperature,
           "n_per_cell": n_per_cell, "max_tokens": max_tokens, "timeout_s": timeout_s, "seed": seed,
           "targets": targets, "slurs": slurs, "functionalities": functionalities, "prompts": str(prompts_file),
           "cache_dir": cache_dir, "demonstrations_from": demonstrations_from}
    res = run_generate(demonstrations, language, cfg, candidates)
    return (f"{language}: {res['candidates']} candidates from {res['cells']} prompts "
            f"({res['queried']} queried, {res['cached']} cached)")


def expand_llm_validate(name: str, candidates: Path, hypotheses: Path, settings: Mapping[str, Any], targets: list[str],
                        accepted: Path, rejected: Path, report: Path) -> str:
    """Stage: NLI-validate one language's generated candidates
    (``settings``: ``expansion.nli``; ``hypotheses``: the hypotheses file)."""
    rep = run_validate(candidates, {**settings, "hypotheses": str(hypotheses)}, targets, accepted, rejected, report)
    return f"{name}: accepted {rep['accepted']}/{rep['candidates']}"


def expand_quality(tables: Mapping[str, Path], settings: Mapping[str, Any], report: Path) -> str:
    """Stage: Self-BLEU 2/3/4 and perplexity of the source and generated
    suites (``settings``: ``expansion.quality``)."""
    rep = run_quality(tables, settings, report)
    return f"quality: {sorted(rep['suites'])}"
