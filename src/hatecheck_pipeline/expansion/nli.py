"""Validation of generated cases by hypothesis tests (GPT-HateCheck section
3.2, appendix B Table 13, with the Boolean rules of the authors' notebook;
spec: ``resources/expansion/hypotheses.yaml``).

A *judge* answers P(entailment) for (premise, hypothesis) pairs; a test
passes when P > ``threshold`` and the test expects entailment (or <= when
it expects none); a case is kept when every test of its functionality
passes. Judges, one interface (``name``, ``entailment(pairs)``):

- :class:`NLIScorer`: a sequence-classification NLI model, softmax over the
  entailment and contradiction logits only (Goldzycher and Schneider 2022;
  the paper: ``facebook/bart-large-mnli``);
- :class:`LLMJudge`: a STAND-IN where no NLI model can be had: a local
  instruction LLM answers the entailment question with one fixed prompt,
  P(entailment) = P(yes) of the constrained yes/no answer, renormalised.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

import yaml

from hatecheck_pipeline.expansion import resource

PREMISES = ("text", "subsequent_clause", "subsequent_sentences", "negation_removed", "quote", "quote_context")
# the authors' notebook: quote_reg = re.compile(r" [‘“'\"](.*?)[”’'\"]"), applied to " " + message
QUOTE = re.compile(r" [‘“'\"](.*?)[”’'\"]")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’')\]]*\s+(?=\S)")
WORD = re.compile(r"\w+(?=n't)|n't|\w+|[^\w\s]")


def load_spec(path: str | Path | None = None) -> dict[str, Any]:
    where = str(path) if path else "resources/expansion/hypotheses.yaml"
    text = Path(path).read_text("utf-8") if path else resource("hypotheses.yaml").read_text("utf-8")
    spec = yaml.safe_load(text)

    def check(func: str, t: Mapping[str, Any]) -> None:
        if "any_of" in t:
            for sub in t["any_of"]:
                check(func, sub)
            return
        if ("use" in t) == ("hypothesis" in t):
            raise ValueError(f"{where}: {func}: a test names exactly one of use/hypothesis: {dict(t)}")
        if "use" in t and t["use"] not in spec["hypotheses"]:
            raise ValueError(f"{where}: {func}: unknown shared hypothesis {t['use']!r}")
        if not isinstance(t.get("expect"), bool):
            raise ValueError(f"{where}: {func}: expect must be true or false: {dict(t)}")
        if t.get("premise", "text") not in PREMISES:
            raise ValueError(f"{where}: {func}: premise must be one of {PREMISES}: {dict(t)}")

    for func, tests in spec["tests"].items():
        for t in tests:
            check(func, t)
    if not all(isinstance(w, str) for w in spec.get("negation_words", [])):
        raise ValueError(f"{where}: negation_words must be strings (quote no/not in YAML): {spec['negation_words']}")
    return spec


# ------------------------------------------------------------- premises


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text.strip()) if re.search(r"\w", s)]


def subsequent_clause(text: str) -> str | None:
    """The text after the first comma (the notebook's F12 test); None
    without a comma (fewer than two clauses: the test fails)."""
    return text[text.index(",") + 1 :].strip() if "," in text else None


def subsequent_sentences(text: str) -> str | None:
    """The sentences after the first, joined into one premise (F13, the
    notebook's ``" ".join(sents[1:])``); None for one sentence.

    >>> subsequent_sentences("Some are fine. Not them. They are trash!")
    'Not them. They are trash!'
    """
    sents = sentences(text)
    return " ".join(sents[1:]) if len(sents) >= 2 else None


def remove_negation(text: str, words: Sequence[str]) -> str:
    """The text's word tokens without the negation words (F14/F15)."""
    drop = {w.lower() for w in words}
    return " ".join(tok for tok in WORD.findall(text) if tok.lower() not in drop)


def quotes(text: str) -> list[str]:
    return QUOTE.findall(f" {text}")


def quote(text: str) -> str | None:
    """The quoted span when there is exactly one (F20); None otherwise."""
    found = quotes(text)
    return found[0] if len(found) == 1 else None


def quote_context(text: str) -> str | None:
    """The text with its one quote replaced by ``[X]`` (F20's second test)."""
    return QUOTE.sub(" [X]", f" {text}").strip() if len(quotes(text)) == 1 else None


def premise_of(on: str, text: str, negation_words: Sequence[str]) -> str | None:
    if on == "text":
        return text
    if on == "negation_removed":
        return remove_negation(text, negation_words)
    return {
        "subsequent_clause": subsequent_clause,
        "subsequent_sentences": subsequent_sentences,
        "quote": quote,
        "quote_context": quote_context,
    }[on](text)


# --------------------------------------------------------------- judges


class Judge(Protocol):
    name: str

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


class NLIScorer:
    """A sequence-classification NLI model (the paper: facebook/bart-large-mnli)."""

    def __init__(self, model: str, batch_size: int = 16, device: str = "cpu"):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.name = f"NLI model {model}"
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.model = AutoModelForSequenceClassification.from_pretrained(model).to(device).eval()
        self.batch_size = batch_size
        self.device = device
        labels = {str(v).lower(): int(k) for k, v in self.model.config.id2label.items()}
        ent = [i for name, i in labels.items() if name.startswith("entail")]
        con = [i for name, i in labels.items() if name.startswith("contra")]
        # bart-large-mnli order (contradiction, neutral, entailment) when labels are unnamed
        self.entail, self.contra = (ent[0] if ent else 2), (con[0] if con else 0)

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        import torch

        out: list[float] = []
        with torch.inference_mode():
            for i in range(0, len(pairs), self.batch_size):
                chunk = pairs[i : i + self.batch_size]
                enc = self.tokenizer(
                    [p for p, _ in chunk], [h for _, h in chunk], return_tensors="pt", padding=True, truncation="only_first", max_length=256
                ).to(self.device)
                logits = self.model(**enc).logits[:, [self.contra, self.entail]]
                out.extend(torch.softmax(logits.float(), dim=-1)[:, 1].tolist())
        return out


JUDGE_QUESTION = "Premise: {premise}\nHypothesis: {hypothesis}\nDoes the premise entail the hypothesis? Answer yes or no."
JUDGE_ANSWERS = {"yes": ["Yes", "yes", " Yes", " yes"], "no": ["No", "no", " No", " no"]}


class LLMJudge:
    """Stand-in judge: a local instruction LLM (``models.llm.LocalLM``) asked
    :data:`JUDGE_QUESTION` in its chat format; P(entailment) = P(yes) /
    (P(yes) + P(no)) from the constrained answer's log-probabilities."""

    def __init__(self, lm, label: str):
        self.lm = lm
        self.name = f"STAND-IN judge: {label} answering '{JUDGE_QUESTION.splitlines()[-1]}' (not an NLI model)"
        # the same text as evaluation.gpt_hatecheck.judge_name (the name when no candidate needs the model)

    def prompts(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        from hatecheck_pipeline.expansion.llm import chat_prompt

        return [chat_prompt(self.lm.tok, None, JUDGE_QUESTION.format(premise=p, hypothesis=h)) for p, h in pairs]

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        answers = self.lm.choose(self.prompts(pairs), [JUDGE_ANSWERS] * len(pairs))
        return [1.0 / (1.0 + math.exp(scores["no"] - scores["yes"])) for _, scores in answers]


# ----------------------------------------------------------- validation


def test_name(t: Mapping[str, Any]) -> str:
    if "any_of" in t:
        return "any_of(" + " | ".join(test_name(s) for s in t["any_of"]) + ")"
    base = t.get("use") or t["hypothesis"]
    on = t.get("premise", "text")
    return f"{'' if t['expect'] else 'NOT '}{base}" + ("" if on == "text" else f" @{on}")


class Validator:
    """The tests of one spec run through one judge, every (premise,
    hypothesis) pair asked once."""

    def __init__(self, spec: Mapping[str, Any], judge: Judge, threshold: float, all_targets: Sequence[str]):
        self.spec, self.judge, self.threshold, self.all_targets = spec, judge, threshold, list(all_targets)

    def hypotheses(self, t: Mapping[str, Any], target: str | None) -> list[str]:
        """The hypothesis texts of a test: one, or one per target group when
        it names [identity] and the case has no target (expect must be false)."""
        hyp = self.spec["hypotheses"][t["use"]] if "use" in t else t["hypothesis"]
        if "[identity]" not in hyp:
            return [hyp]
        if target:
            return [hyp.replace("[identity]", target)]
        if t["expect"]:
            raise ValueError(f"test {test_name(t)!r} expects entailment about [identity] but the case has no target")
        return [hyp.replace("[identity]", g) for g in self.all_targets]

    def pairs(self, t: Mapping[str, Any], text: str, target: str | None) -> list[tuple[str, str]]:
        if "any_of" in t:
            return [p for s in t["any_of"] for p in self.pairs(s, text, target)]
        premise = premise_of(t.get("premise", "text"), text, self.spec.get("negation_words", []))
        return [] if premise is None else [(premise, h) for h in self.hypotheses(t, target)]

    def outcome(
        self, t: Mapping[str, Any], text: str, target: str | None, probs: Mapping[tuple[str, str], float]
    ) -> tuple[bool, float | None]:
        """(passed, the deciding P(entailment): the highest over its hypotheses)."""
        if "any_of" in t:
            results = [self.outcome(s, text, target, probs) for s in t["any_of"]]
            return any(ok for ok, _ in results), max((p for _, p in results if p is not None), default=None)
        pairs = self.pairs(t, text, target)
        if not pairs:  # no second clause / sentence, not exactly one quote
            return False, None
        p = max(probs[pair] for pair in pairs)
        return (p > self.threshold) == bool(t["expect"]), p

    def run(self, cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Each case (text, functionality, target_ident) with ``accepted``,
        ``failed_test`` (the first failing test in the spec's order, or why
        the case has no tests) and ``tests`` (JSON: every test's name,
        outcome and deciding probability)."""
        needed: dict[tuple[str, str], None] = {}
        for case in cases:
            for t in self.spec["tests"].get(case["functionality"], []):
                for pair in self.pairs(t, case["text"], case.get("target_ident")):
                    needed.setdefault(pair)
        order = list(needed)
        probs = dict(zip(order, self.judge.entailment(order))) if order else {}
        out = []
        for case in cases:
            tests = self.spec["tests"].get(case["functionality"], [])
            record, failed = [], None
            for t in tests:
                ok, p = self.outcome(t, case["text"], case.get("target_ident"), probs)
                record.append({"test": test_name(t), "passed": ok, "p_entailment": None if p is None else round(p, 6)})
                if not ok and failed is None:
                    failed = test_name(t)
            if not tests:
                failed = "no tests for this functionality"
            out.append({**case, "accepted": failed is None, "failed_test": failed, "tests": json.dumps(record, ensure_ascii=False)})
        return out


def validate(
    cases: Sequence[Mapping[str, Any]], spec: Mapping[str, Any], judge: Judge, threshold: float, all_targets: Sequence[str]
) -> list[dict[str, Any]]:
    return Validator(spec, judge, threshold, all_targets).run(cases)
