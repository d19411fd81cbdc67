"""The ETHOS prompts on a local causal LM: answers, drawn iterations and the
per-prompt answer store that makes a run resumable.

- Constrained variant: one pass per prompt gives the log-probability of
  every allowed answer word (``LocalLM.choose``). At temperature ``T > 0``
  the run's ``iterations`` answers of a prompt (``mixed_iterations`` in the
  two mixed settings, which the paper classified once per example set) are
  drawn, seeded per prompt, from the tempered distribution
  ``p(w)^(1/T) / sum_v p(v)^(1/T)`` over the allowed words: the exact
  distribution of a temperature-``T`` answer restricted to those words (the
  paper's 100 iterations at 0.3, without 100 passes). At ``T = 0`` the most
  probable word, once.
- Free variant: ``free_iterations`` sampled generations per prompt (each a
  full generation; seed = run seed + iteration).
- The two mixed settings are answered as ``mixed_answers`` says, whatever
  ``variants`` lists: ``free`` (the default, the paper's protocol: a
  generated answer, ``mixed_temperature`` and ``mixed_max_new_tokens``,
  one generator seeded per prompt, so the out-of-scope answers of Table 5
  can occur) or ``constrained`` (the allowed class word, drawn as above);
  ``mixed_iterations`` answers per prompt either way.
- Prompts are answered in groups that share a prefix (setting, category,
  example set): the instruction and examples of one example set are
  encoded once (``LocalLM.continuation_logprobs``).
- :class:`AnswerStore`: every answered chunk of prompts is written at once
  (one JSON shard, temp file then rename) under the backend's cache folder,
  keyed by sha256 of (weights, prompt format, prompt, answers allowed, and
  for the free variant temperature, seed and length). A run killed midway
  and started again asks no prompt twice; a capped run's answers are reused
  by the whole-protocol run and vice versa.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from hatecheck_pipeline.core.files import write_json
from hatecheck_pipeline.models import llm as prompting

MIXED = ("mixed", "mixed_instruction")  # as evaluation.llm.MIXED
CHUNK = 32  # prompts answered (and stored) at a time


SECONDS = "__seconds__"  # a shard's entry: the seconds its chunk of prompts took to answer


class AnswerStore:
    """Per-prompt answers in JSON shards under ``folder`` (None: in memory
    only). A shard also holds the seconds its chunk took (``__seconds__``;
    shards written before it have none), so the answering time of a run
    made in pieces adds up over the pieces: :meth:`seconds_of`."""

    def __init__(self, folder: Path | None):
        self.folder = Path(folder) if folder is not None else None
        self.items: dict[str, Any] = {}
        self.cost: dict[str, float] = {}  # key -> its share of its chunk's seconds
        self.asked: dict[str, None] = {}  # the keys this run looked up, in order
        self.loaded = 0
        if self.folder is not None and self.folder.exists():
            for shard in sorted(self.folder.glob("*.json")):
                try:
                    data = json.loads(shard.read_text("utf-8"))
                except (json.JSONDecodeError, UnicodeDecodeError):  # a torn shard cannot exist (rename), but never trust it
                    continue
                self._add(data)
            self.loaded = len(self.items)
        self.added = 0

    def _add(self, data: Mapping[str, Any]) -> None:
        answers = {k: v for k, v in data.items() if k != SECONDS}
        self.items.update(answers)
        if data.get(SECONDS) is not None and answers:
            self.cost.update(dict.fromkeys(answers, data[SECONDS] / len(answers)))

    def get(self, key: str) -> Any:
        self.asked[key] = None
        return self.items.get(key)

    def put(self, answers: Mapping[str, Any], seconds: float | None = None) -> None:
        """Store a chunk of answers, and the seconds it took when given."""
        if not answers:
            return
        data = {**answers, **({SECONDS: round(seconds, 3)} if seconds is not None else {})}
        self._add(data)
        self.added += len(answers)
        if self.folder is not None:
            name = hashlib.sha256("".join(sorted(answers)).encode()).hexdigest()[:16]
            write_json(data, self.folder / f"{name}.json")

    def seconds_of(self, keys: Sequence[str] | None = None) -> dict[str, Any]:
        """The answering seconds of these prompts (default: every one this
        run looked up) summed over every run that stored them
        (``seconds``), and how many have no recorded time (``untimed``:
        stored before times were kept)."""
        keys = list(dict.fromkeys(self.asked if keys is None else keys))
        timed = [self.cost[k] for k in keys if k in self.cost]
        return {"prompts": len(keys), "seconds": round(sum(timed), 3), "untimed": len(keys) - len(timed)}


def key_of(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def tempered(logps: Mapping[str, float], temperature: float) -> dict[str, float]:
    """The distribution of a temperature-T answer over the allowed words.

    >>> p = tempered({"yes": math.log(0.6), "no": math.log(0.4)}, 1.0)
    >>> round(p["yes"], 6)
    0.6
    >>> p = tempered({"yes": math.log(0.6), "no": math.log(0.4)}, 0.3)
    >>> round(p["yes"], 3)  # 0.6^(1/0.3) / (0.6^(1/0.3) + 0.4^(1/0.3))
    0.794
    """
    scaled = {w: lp / temperature for w, lp in logps.items()}
    top = max(scaled.values())
    weights = {w: math.exp(v - top) for w, v in scaled.items()}
    total = sum(weights.values())
    return {w: v / total for w, v in weights.items()}


def draws(logps: Mapping[str, float], temperature: float, n: int, seed: Sequence[int]) -> list[str]:
    """``n`` answers drawn from the tempered distribution (seeded); the most
    probable word once at temperature 0.

    >>> lp = {"yes": math.log(0.9), "no": math.log(0.1)}
    >>> draws(lp, 0.0, 100, [0])
    ['yes']
    >>> a = draws(lp, 1.0, 1000, [0, 1]); a == draws(lp, 1.0, 1000, [0, 1]), 0.85 < a.count("yes") / 1000 < 0.95
    (True, True)
    """
    if temperature == 0:
        return [max(logps, key=logps.get)]
    import numpy as np

    p = tempered(logps, temperature)
    words = list(p)
    rng = np.random.default_rng(list(seed))
    return [words[i] for i in rng.choice(len(words), size=n, p=[p[w] for w in words])]


def _prompt_seed(seed: int, record: Mapping[str, Any]) -> list[int]:
    """A per-prompt seed: the same prompt gets the same draws whatever else the run asks."""
    ident = f"{record['setting']}|{record.get('example_set')}|{record['item_id']}"
    return [seed, int(hashlib.sha256(ident.encode()).hexdigest()[:8], 16)]


def groups_of(records: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Record indices grouped by (setting, category, example set), in first-seen order."""
    out: dict[tuple, list[int]] = {}
    for i, r in enumerate(records):
        out.setdefault((r["setting"], r["category"], r.get("example_set")), []).append(i)
    return list(out.values())


def constrained_logps(
    lm: "prompting.LocalLM",
    records: Sequence[Mapping[str, Any]],
    prompts: Sequence[str],
    templates: Mapping[str, Any],
    store: AnswerStore,
    identity: str,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, float]]:
    """Log-probability of every allowed answer word of every prompt, from
    the store where it has them, else from ``lm`` (stored chunk by chunk)."""
    out: list[dict[str, float] | None] = [None] * len(records)
    options = [prompting.choices(templates[r["setting"]], r["category"]) for r in records]
    keys = [key_of("constrained", identity, lm.prompt_format, p, o) for p, o in zip(prompts, options)]
    for i, k in enumerate(keys):
        out[i] = store.get(k)
    for group in groups_of(records):
        todo = [i for i in group if out[i] is None]
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            started = time.perf_counter()
            chosen = lm.choose([prompts[i] for i in chunk], [options[i] for i in chunk])
            store.put({keys[i]: words for i, (_, words) in zip(chunk, chosen)}, time.perf_counter() - started)
            for i, (_, words) in zip(chunk, chosen):
                out[i] = words
            if progress:
                progress(len(chunk))
    return out  # type: ignore[return-value]


def free_texts(
    lm: "prompting.LocalLM",
    prompts: Sequence[str],
    cfg: Mapping[str, Any],
    seed: int | Sequence[int],
    repeat: int,
    store: AnswerStore,
    identity: str,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Generated answers (iteration ``repeat``), from the store where it has
    them. ``seed``: one int (the run's seed; the chunk's generator gets
    seed + repeat) or one seed per prompt (each answer drawn from its own
    generator: the same whatever else a chunk holds)."""
    per_prompt = not isinstance(seed, int)
    seeds = list(seed) if per_prompt else [seed + repeat] * len(prompts)
    keys = [key_of("free", identity, lm.prompt_format, p, cfg["temperature"], cfg["max_new_tokens"], s) for p, s in zip(prompts, seeds)]
    out = [store.get(k) for k in keys]
    todo = [i for i, v in enumerate(out) if v is None]
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start : start + CHUNK]
        started = time.perf_counter()
        texts = lm.generate(
            [prompts[i] for i in chunk],
            cfg["max_new_tokens"],
            cfg["temperature"],
            [seeds[i] for i in chunk] if per_prompt else seed + repeat,
        )
        store.put({keys[i]: t for i, t in zip(chunk, texts)}, time.perf_counter() - started)
        for i, t in zip(chunk, texts):
            out[i] = t
        if progress:
            progress(len(chunk))
    return out  # type: ignore[return-value]


def iteration_label(record: Mapping[str, Any], repeat: int, iterations: int) -> str:
    """The ``iteration`` column: the repeat (1-based); in the mixed settings
    the example set, with the repeat when there are several (``<set>.<repeat>``)."""
    if record["setting"] in MIXED:
        return f"{record['example_set']}" if iterations == 1 else f"{record['example_set']}.{repeat + 1}"
    return str(repeat + 1)


MIXED_MODES = ("free", "constrained")


def mixed_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """How a backend answers the two mixed settings (``llm.backends.<b>``):
    ``mixed_answers`` (free | constrained; default free), the free answers'
    ``temperature`` and ``max_new_tokens`` (``mixed_temperature`` /
    ``mixed_max_new_tokens``, default the backend's own) and the answers per
    prompt (``mixed_iterations``, default 1: the paper classified each
    example set's comments once).

    >>> mixed_settings({"temperature": 0.3, "max_new_tokens": 2, "iterations": 100, "mixed_max_new_tokens": 4})
    {'answers': 'free', 'temperature': 0.3, 'max_new_tokens': 4, 'iterations': 1}
    """
    mode = cfg.get("mixed_answers", "free")
    if mode not in MIXED_MODES:
        raise ValueError(f"mixed_answers: {mode!r} is not one of {list(MIXED_MODES)}")
    return {
        "answers": mode,
        "temperature": cfg.get("mixed_temperature", cfg["temperature"]),
        "max_new_tokens": cfg.get("mixed_max_new_tokens", cfg["max_new_tokens"]),
        "iterations": cfg.get("mixed_iterations", 1),
    }


def mixed_seed(seed: int, record: Mapping[str, Any], repeat: int) -> int:
    """The generator seed of one free mixed answer: the run's seed, the prompt
    (setting, example set, item) and the repeat, so an answer does not depend
    on the prompts asked beside it (a resumed or capped run gets the same)."""
    ident = f"{seed}|{record['setting']}|{record.get('example_set')}|{record['item_id']}|{repeat}"
    return int(hashlib.sha256(ident.encode()).hexdigest()[:8], 16)


def local_answers(
    records: Sequence[Mapping[str, Any]],
    prompts: Sequence[str],
    cfg: Mapping[str, Any],
    lm: "prompting.LocalLM",
    templates: Mapping[str, Any],
    seed: int,
    store: AnswerStore,
    identity: str,
) -> list[dict[str, Any]]:
    """Rows (record + variant, iteration, answer): the single-category
    settings in every configured variant, the mixed settings as
    :func:`mixed_settings` says."""
    from tqdm import tqdm

    rows: list[dict[str, Any]] = []
    temperature = cfg["temperature"]
    mixed = mixed_settings(cfg)
    single = [i for i, r in enumerate(records) if r["setting"] not in MIXED]
    multi = [i for i, r in enumerate(records) if r["setting"] in MIXED]

    def constrained(idx: list[int]) -> None:
        part = [records[i] for i in idx]
        with tqdm(total=len(part), desc="llm constrained", unit="prompt", mininterval=10) as bar:
            logps = constrained_logps(lm, part, [prompts[i] for i in idx], templates, store, identity, bar.update)
        for r, lp in zip(part, logps):
            n = mixed["iterations"] if r["setting"] in MIXED else cfg["iterations"]
            answers = draws(lp, mixed["temperature"] if r["setting"] in MIXED else temperature, n, _prompt_seed(seed, r))
            for repeat, word in enumerate(answers):
                rows.append({**r, "variant": "constrained", "iteration": iteration_label(r, repeat, len(answers)), "answer": word})

    for variant in cfg["variants"]:
        if not single:
            break
        if variant == "constrained":
            constrained(single)
        else:
            n = 1 if temperature == 0 else cfg.get("free_iterations", cfg["iterations"])
            part = [records[i] for i in single]
            for repeat in range(n):
                with tqdm(total=len(part), desc=f"llm free #{repeat + 1}", unit="prompt", mininterval=10) as bar:
                    texts = free_texts(lm, [prompts[i] for i in single], cfg, seed, repeat, store, identity, bar.update)
                for r, text in zip(part, texts):
                    rows.append({**r, "variant": variant, "iteration": iteration_label(r, repeat, n), "answer": text})
    if multi and mixed["answers"] == "constrained":
        constrained(multi)
    elif multi:
        gen = {"temperature": mixed["temperature"], "max_new_tokens": mixed["max_new_tokens"]}
        n = 1 if mixed["temperature"] == 0 else mixed["iterations"]
        part = [records[i] for i in multi]
        for repeat in range(n):
            with tqdm(total=len(part), desc=f"llm mixed free #{repeat + 1}", unit="prompt", mininterval=10) as bar:
                texts = free_texts(
                    lm, [prompts[i] for i in multi], gen, [mixed_seed(seed, r, repeat) for r in part], repeat, store, identity, bar.update
                )
            for r, text in zip(part, texts):
                rows.append({**r, "variant": "free", "iteration": iteration_label(r, repeat, n), "answer": text})
    return rows
