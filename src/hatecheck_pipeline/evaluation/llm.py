"""Zero-, one- and few-shot prompting of an LLM on the ETHOS evaluation sets
("Detecting Hate Speech with GPT-3", Chiu, Collins, Alexander 2022).

Backends (``llm.backends.<name>`` in params):

- ``openai``: any OpenAI-compatible endpoint (``base_url``, ``model``,
  ``temperature``, ``iterations``; the key only from the environment
  variable ``api_key_env``), in the backend's ``api`` style: ``chat``
  (``/chat/completions``) or ``completions`` (``/completions``, prompt /
  max_tokens / temperature: davinci-style models). Requests go through
  :class:`hatecheck_pipeline.expansion.llm.ChatClient`, whose responses are
  cached content-addressed (sha256 of the request), so a re-run queries only
  changed prompts; each iteration carries its own ``seed`` in the request.
- ``local``: a causal LM through transformers (:class:`LocalLM`), with the
  same prompts, in two variants: ``free`` (generated text, parsed) and
  ``constrained`` (the allowed answer with the highest log-probability).

The two mixed settings are answered as the backend's ``mixed_answers``
says (:func:`llm_local.mixed_settings`): ``free`` (the default; generated
text at ``mixed_temperature`` with at most ``mixed_max_new_tokens`` tokens,
cut at the template's full stop, as the paper asked GPT-3, so its
out-of-scope answers land in Table 5) or ``constrained`` (a local backend
only: the most probable class word). Each mixed prompt is asked
``mixed_iterations`` times (default 1: the paper classified each example
set once), by an endpoint as by a local model.

The answers file has the ``score-llm`` layout (category, label, answer,
iteration) plus backend, variant, setting, example_set, item_id and
comment_id; the metrics are :func:`llm_answers.score_frame` per setting and
variant. For the mixed-category settings the iteration is the example set
(the paper's Tables 4 and 7 vary over the 10 example sets), combined with
the repeat when ``iterations`` > 1 (``<set>.<repeat>``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import polars as pl

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_csv, write_json
from hatecheck_pipeline.evaluation.llm_answers import PAPER_TABLES, appendix_b, instruction_contrast, score_frame
from hatecheck_pipeline.evaluation.llm_local import AnswerStore, iteration_label, mixed_settings
from hatecheck_pipeline.models import llm as prompting

SETTINGS = ("zero_shot", "one_shot", "few_shot_single", "mixed", "mixed_instruction")
MIXED = ("mixed", "mixed_instruction")
ANSWER_COLUMNS = [
    "backend",
    "model",
    "variant",
    "setting",
    "example_set",
    "item_id",
    "comment_id",
    "category",
    "label",
    "iteration",
    "answer",
]


class BackendError(PipelineError, ValueError):
    pass


def prompts_of(items: pl.DataFrame, templates: Mapping[str, Any]) -> list[str]:
    return [
        prompting.render(templates[r["setting"]], r["text"], r["category"] if r["category"] != "mixed" else "", r["examples"] or [])
        for r in items.iter_rows(named=True)
    ]


STRATUM = ("example_set", "category", "label")


def capped(part: pl.DataFrame, max_prompts: int, seed: int) -> pl.DataFrame:
    """At most ``max_prompts`` rows per setting, drawn stratified: the
    strata are example set x category x gold label, each stratum's rows in
    a seeded random order, and the draw takes one row of every stratum in
    turn (the strata in a seeded order) until the cap is reached. So every
    category asked about has positives and negatives, and every example set
    every class, whenever the cap allows one of each and the data has them.
    Rows keep their order in ``part``.

    >>> items = pl.DataFrame({"setting": ["s"] * 8, "example_set": [None] * 8, "category": ["a"] * 4 + ["b"] * 4,
    ...                       "label": ["a", "not-a", "not-a", "not-a", "b", "not-b", "not-b", "not-b"]})
    >>> sorted(capped(items, 4, 0).select("category", "label").rows())
    [('a', 'a'), ('a', 'not-a'), ('b', 'b'), ('b', 'not-b')]
    """
    import random

    strata = sorted({tuple("" if v is None else str(v) for v in r) for r in part.select(STRATUM).iter_rows()})
    order = {k: i for i, k in enumerate(random.Random(seed).sample(strata, len(strata)))}
    key = pl.concat_list([pl.col(c).cast(pl.String).fill_null("") for c in STRATUM])
    ranked = part.with_row_index("_row").with_columns(
        pl.int_range(pl.len()).shuffle(seed=seed).over(["setting", *STRATUM]).alias("_turn"),
        key.map_elements(lambda k: order[tuple(k)], return_dtype=pl.Int64).alias("_stratum"),
    )
    kept = ranked.sort("setting", "_turn", "_stratum").filter(pl.int_range(pl.len()).over("setting") < max_prompts)["_row"]
    return ranked.filter(pl.col("_row").is_in(kept.implode())).drop("_row", "_turn", "_stratum")


def select_items(
    items: pl.DataFrame, settings: Sequence[str], example_sets: int | None, max_prompts: int | None = None, seed: int = 0
) -> pl.DataFrame:
    """The prompts to run: the configured settings; for the mixed settings
    the first ``example_sets`` example sets (None = all); at most
    ``max_prompts`` per setting (None = all), drawn stratified by example
    set x category x label (:func:`capped`, seeded: the same positions in
    every setting of the same strata)."""
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        raise BackendError(f"llm.settings: unknown setting(s) {unknown}; known: {list(SETTINGS)}")
    part = items.filter(pl.col("setting").is_in(list(settings)))
    if example_sets is not None:
        part = part.filter(pl.col("example_set").is_null() | (pl.col("example_set") <= example_sets))
    if max_prompts is not None:
        part = capped(part, max_prompts, seed)
    return part


def chat_client(cfg: Mapping[str, Any], cache_dir: Path):
    """The cached client of an ``openai`` backend (``llm.backends.<name>``):
    its ``api`` style (``chat``, the default, or ``completions``), timeout
    and retries."""
    from hatecheck_pipeline.expansion.llm import ChatClient

    return ChatClient(
        cfg["base_url"],
        cfg.get("api_key_env"),
        cache_dir,
        cfg.get("timeout_s", 60),
        retries=cfg.get("retries", 5),
        api=cfg.get("api", "chat"),
        max_backoff_s=cfg.get("max_backoff_s", 60.0),
    )


def request(cfg: Mapping[str, Any], prompt: str, seed: int, stop: Sequence[str] | None = None) -> dict[str, Any]:
    """The request body of one prompt in the backend's API style: ``chat``
    = the prompt as one user message; ``completions`` = the prompt itself
    (``prompt``, ``max_tokens``, ``temperature``), as the paper's code sends
    it to davinci. ``seed`` makes each iteration its own request (and cache
    entry); ``stop``: the template's stop sequences (the paper's code: a
    newline after yes/no, a full stop after a class word).

    >>> cfg = {"model": "davinci-002", "temperature": 0.3, "max_new_tokens": 2, "api": "completions"}
    >>> request(cfg, "Is it? Answer:", 4, ["\\n"])
    {'model': 'davinci-002', 'prompt': 'Is it? Answer:', 'temperature': 0.3, 'max_tokens': 2, 'seed': 4, 'stop': ['\\n']}
    >>> request({**cfg, "api": "chat"}, "Is it? Answer:", 4)["messages"]
    [{'role': 'user', 'content': 'Is it? Answer:'}]
    """
    api = cfg.get("api", "chat")
    if api == "completions":
        body: dict[str, Any] = {"model": cfg["model"], "prompt": prompt}
    elif api == "chat":
        body = {"model": cfg["model"], "messages": [{"role": "user", "content": prompt}]}
    else:
        raise BackendError(f"llm.backends.*.api: {api!r} is not one of ['chat', 'completions']")
    body.update({"temperature": cfg["temperature"], "max_tokens": cfg["max_new_tokens"], "seed": seed})
    if stop:
        body["stop"] = list(stop)
    return body


def ask(client, cfg: Mapping[str, Any], prompt: str, seed: int, stop: Sequence[str] | None = None) -> str:
    """One prompt to an ``openai`` backend; the answer text (a chat
    message's content or a completion's text)."""
    choice = (client.complete(request(cfg, prompt, seed, stop)).get("choices") or [{}])[0]
    return ((choice.get("message") or {}).get("content")) or choice.get("text") or ""


def cut_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """A generated answer up to the first stop sequence (what an endpoint
    returns for ``stop``), for local free generation; leading whitespace
    is skipped first (a chat model may open with a newline).

    >>> cut_at_stop(" racist. 'next", ["."]), cut_at_stop("\\nYes\\nIs", ["\\n"]), cut_at_stop("no", None)
    ('racist', 'Yes', 'no')
    """
    if stop:
        text = text.lstrip()
    for s in stop or ():
        if s and s in text:
            text = text[: text.index(s)]
    return text


def openai_answers(
    items: pl.DataFrame,
    prompts: Sequence[str],
    cfg: Mapping[str, Any],
    cache_dir: Path,
    seed: int,
    progress: Callable | None = None,
    templates: Mapping[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every single-category prompt ``iterations`` times and every mixed
    prompt ``mixed_iterations`` times (at the mixed settings' temperature
    and token limit) through the cached client; request ``repeat`` of a
    prompt carries seed + repeat."""
    mixed = mixed_settings(cfg)
    if mixed["answers"] != "free":
        raise BackendError(f"mixed_answers: {mixed['answers']!r}: an endpoint answers in free text only (mixed_answers: free)")
    mixed_cfg = {**cfg, "temperature": mixed["temperature"], "max_new_tokens": mixed["max_new_tokens"]}
    client = chat_client(cfg, cache_dir)
    templates = templates or {}
    records = list(items.iter_rows(named=True))
    counts = [mixed["iterations"] if r["setting"] in MIXED else cfg["iterations"] for r in records]
    rows = []
    try:
        for repeat in range(max(counts, default=0)):
            for r, prompt, n in zip(records, prompts, counts):
                if repeat >= n:
                    continue
                asked = mixed_cfg if r["setting"] in MIXED else cfg
                text = ask(client, asked, prompt, seed + repeat, (templates.get(r["setting"]) or {}).get("stop"))
                rows.append({**r, "variant": "free", "iteration": iteration_label(r, repeat, n), "answer": text})
            if progress:
                progress(repeat)
    finally:
        client.close()
    return rows, {"queried": client.queried, "cached": client.cached}


def local_answers(
    items: pl.DataFrame,
    prompts: Sequence[str],
    cfg: Mapping[str, Any],
    lm: "prompting.LocalLM",
    templates: Mapping[str, Any],
    seed: int,
    store: Any = None,
    identity: str = "",
) -> list[dict[str, Any]]:
    """Free and/or constrained answers of a local causal LM
    (:func:`hatecheck_pipeline.evaluation.llm_local.local_answers`: the
    constrained iterations drawn from one pass, prompts sharing a prefix
    encoded once, answers stored per prompt so a killed run resumes)."""
    from hatecheck_pipeline.evaluation.llm_local import local_answers as answer

    rows = answer(items.to_dicts(), prompts, cfg, lm, templates, seed, store or AnswerStore(None), identity)
    for r in rows:  # a generated answer ends at the template's stop sequence, as the paper's requests did
        if r["variant"] == "free":
            r["answer"] = cut_at_stop(r["answer"], templates[r["setting"]].get("stop"))
    return rows


def answers_frame(rows: Sequence[Mapping[str, Any]], name: str, model: str) -> pl.DataFrame:
    """The answers in the score-llm layout (every row read for the schema:
    the single-category rows come first with no example set)."""
    return (
        pl.DataFrame(rows, infer_schema_length=None)
        .with_columns(pl.lit(name).alias("backend"), pl.lit(model).alias("model"), pl.col("example_set").cast(pl.Int64))
        .select(ANSWER_COLUMNS)
    )


def metrics_of(answers: pl.DataFrame) -> dict[str, Any]:
    """score-llm metrics per setting and variant."""
    out: dict[str, Any] = {}
    for (setting, variant), part in sorted(answers.group_by("setting", "variant"), key=lambda kv: (SETTINGS.index(kv[0][0]), kv[0][1])):
        out.setdefault(setting, {})[variant] = score_frame(part.select("category", "label", "answer", "iteration", "setting"))
    return out


def appendix_b_of(by_setting: Mapping[str, Any]) -> dict[str, Any]:
    """The paper's Appendix B (confusion counts summed over the iterations)
    per setting and variant (:func:`llm_answers.appendix_b`)."""
    return {s: {v: appendix_b(d["by_category"], s) for v, d in vs.items()} for s, vs in by_setting.items()}


def contrast_of(by_setting: Mapping[str, Any]) -> dict[str, Any]:
    """Section 4.5's with/without-instruction contrast per variant answering
    both mixed settings (:func:`llm_answers.instruction_contrast`)."""
    without, with_ = by_setting.get("mixed") or {}, by_setting.get("mixed_instruction") or {}
    return {
        v: instruction_contrast(without[v]["by_category"]["mixed"], with_[v]["by_category"]["mixed_instruction"])
        for v in without
        if v in with_
    }


def run_ethos(
    name: str,
    items: Path,
    answers: Path,
    metrics: Path,
    backend: Mapping[str, Any],
    settings: Sequence[str],
    seed: int,
    threads: int,
    batch_size: int,
    profile: Profile,
    cache_dir: str,
    weights: Path | None = None,
) -> str:
    """Stage ``llm_ethos_<backend>``: run the configured prompting settings
    on the ETHOS evaluation sets, write the raw answers (score-llm layout)
    and their metrics. The profile's ``llm_example_sets`` caps the mixed
    example sets and ``llm_max_prompts_per_setting`` the prompts per setting
    (null = all; the metrics say ``complete: false`` otherwise). ``weights``:
    the manifest of the fetched weights (fetch_llm_weights) when the
    backend's model is ``weights``. A local backend's answers are stored per
    prompt under ``cache_dir/<backend>/local``: a killed run resumes there."""
    from hatecheck_pipeline.core.cpu import bounded_threads

    templates = prompting.load_templates()
    cap = profile.get("llm_max_prompts_per_setting")
    part = select_items(pl.read_parquet(items), settings, profile.get("llm_example_sets"), cap, seed)
    prompts = prompts_of(part, templates)
    base = part.select("setting", "example_set", "item_id", "comment_id", "category", "label")
    started = time.perf_counter()
    info: dict[str, Any] = {}
    stand_in = backend.get("stand_in")
    try:
        mixed = mixed_settings(backend)
    except ValueError as exc:
        raise BackendError(f"llm.backends.{name}.{exc}") from None
    if backend["kind"] == "openai" and mixed["answers"] != "free":
        raise BackendError(
            f"llm.backends.{name}.mixed_answers: {mixed['answers']!r} needs a local backend; an endpoint "
            "answers in free text (mixed_answers: free)"
        )
    if backend["kind"] == "openai":
        rows, info = openai_answers(base, prompts, backend, Path(cache_dir) / name, seed, templates=templates)
        model = backend["model"]
    elif backend["kind"] == "local":
        import torch

        torch.manual_seed(seed)
        torch.set_num_threads(bounded_threads(threads))
        ref = prompting.model_ref(backend["model"], weights)
        lm = prompting.LocalLM.load(ref, batch_size)
        info["load_seconds"] = round(time.perf_counter() - started, 1)
        model = prompting.describe_model(ref)
        stand_in = prompting.stand_in_of(ref, stand_in)
        store = AnswerStore(Path(cache_dir) / name / "local")
        rows = local_answers(base, prompts, backend, lm, templates, seed, store, model)
        # answering time over every piece of a run made in pieces (a killed run resumed), from the store
        info["answer_store"] = {"loaded": store.loaded, "added": store.added, "all_pieces": store.seconds_of()}
        del lm
    else:
        raise BackendError(f"llm.backends.{name}.kind: {backend['kind']!r} is not one of ['openai', 'local']")
    seconds = time.perf_counter() - started
    frame = answers_frame(rows, name, model)
    write_csv(frame, answers)
    doc = {
        "backend": name,
        "kind": backend["kind"],
        "model": model,
        "stand_in": stand_in,
        "settings": list(settings),
        "example_sets": profile.get("llm_example_sets"),
        "max_prompts_per_setting": cap,
        "complete": cap is None and profile.get("llm_example_sets") is None,
        "prompts": len(prompts),
        "answers": frame.height,
        "seconds": round(seconds, 1),
        "prompts_per_second": round(frame.height / seconds, 3) if seconds else None,
        "threads": threads,
        **info,
        "mixed": mixed,
        "by_setting": (by_setting := metrics_of(frame)),
        "instruction_contrast": contrast_of(by_setting),
        "appendix_b": appendix_b_of(by_setting),
        "paper_tables": {k: v for k, v in PAPER_TABLES.items() if k in settings},
    }
    write_json(doc, metrics)
    summary = {
        s: {
            v: {
                c: m["f1"]["mean"] if c not in MIXED else {k: b["pooled"]["f1"] for k, b in m["by_class"].items()}
                for c, m in d["by_category"].items()
            }
            for v, d in vs.items()
        }
        for s, vs in doc["by_setting"].items()
    }
    return f"{name}: {frame.height} answers in {seconds:.0f} s; F1 {json.dumps(summary)}"
