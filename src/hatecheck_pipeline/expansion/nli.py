"""NLI validation of generated cases (GPT-HateCheck section 3.2, appendix B).

Each functionality has hypothesis tests (``resources/expansion/
hypotheses.yaml``); a test is passed when P(entailment) of a softmax over
the entailment and contradiction logits only (Goldzycher and Schneider
2022) is >= ``threshold`` and the test expects entailment (or < when it
expects none). All tests of a functionality must pass (Boolean AND; a list
of hypotheses inside one test is an OR)."""

from __future__ import annotations

import re
from typing import Any, Mapping

import torch
import yaml

from hatecheck_pipeline.expansion import resource

QUOTE = re.compile(r"[\"“”‘’«»']([^\"“”‘’«»']{3,})[\"“”‘’«»']")


def load_spec(path: str | None = None) -> dict[str, Any]:
    text = open(path, encoding="utf-8").read() if path else resource("hypotheses.yaml").read_text("utf-8")
    return yaml.safe_load(text)


# ------------------------------------------------------------- helpers


def at_least_two_sentences(text: str) -> bool:
    parts = [p for p in re.split(r"(?<=[.!?])\s+", text.strip()) if re.search(r"\w", p)]
    return len(parts) >= 2


def at_least_two_clauses(text: str) -> bool:
    if at_least_two_sentences(text):
        return True
    return len([p for p in re.split(r"[,;:]|\b(?:and|but|because|although|though|while|so|yet|which|who)\b", text)
                if re.search(r"\w", p)]) >= 2


def extract_quote(text: str) -> str | None:
    m = QUOTE.search(text)
    return m.group(1).strip() if m else None


def remove_negation(text: str, words: list[str]) -> str:
    out = text
    for w in sorted(words, key=len, reverse=True):
        pattern = re.escape(w) if w.startswith("n'") else r"\b" + re.escape(w) + r"\b"
        out = re.sub(pattern, "", out, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", out).strip()


HELPERS = {
    "at_least_two_clauses": at_least_two_clauses,
    "at_least_two_sentences": at_least_two_sentences,
    "has_quote": lambda t: extract_quote(t) is not None,
}


# --------------------------------------------------------------- model


class NLIScorer:
    def __init__(self, model: str, batch_size: int = 16, device: str = "cpu"):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.model = AutoModelForSequenceClassification.from_pretrained(model).to(device).eval()
        self.batch_size = batch_size
        self.device = device
        labels = {str(v).lower(): int(k) for k, v in self.model.config.id2label.items()}
        ent = [i for name, i in labels.items() if name.startswith("entail")]
        con = [i for name, i in labels.items() if name.startswith("contra")]
        # bart-large-mnli order (contradiction, neutral, entailment) when labels are unnamed
        self.entail, self.contra = (ent[0] if ent else 2), (con[0] if con else 0)

    @torch.inference_mode()
    def entailment(self, pairs: list[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        for i in range(0, len(pairs), self.batch_size):
            chunk = pairs[i: i + self.batch_size]
            enc = self.tokenizer([p for p, _ in chunk], [h for _, h in chunk], return_tensors="pt",
                                 padding=True, truncation=True, max_length=256).to(self.device)
            logits = self.model(**enc).logits[:, [self.contra, self.entail]]
            out.extend(torch.softmax(logits.float(), dim=-1)[:, 1].tolist())
        return out


# ----------------------------------------------------------- validation


def expand_tests(spec: Mapping[str, Any], functionality: str, label: str, target: str | None,
                 all_targets: list[str]) -> list[dict[str, Any]]:
    """The concrete tests of one case (nli-hate / nli-target resolved)."""
    tests = []
    for t in spec["tests"].get(functionality, []):
        if t == "nli-hate":
            tests.append({"name": "nli-hate", "hypothesis": [spec["nli_hate"]], "expect": label == "hateful"})
        elif t == "nli-target":
            groups = [target] if target else all_targets
            for g in groups:  # expected: about none of them
                tests.append({"name": f"nli-target:{g}", "hypothesis": [spec["nli_target"].replace("[identity]", g)],
                              "expect": False})
        elif "helper" in t:
            tests.append({"name": t["helper"], "helper": t["helper"]})
        else:
            hyps = t["hypothesis"] if isinstance(t["hypothesis"], list) else [t["hypothesis"]]
            hyps = [h.replace("[identity]", target or "people") for h in hyps]
            tests.append({"name": " | ".join(hyps), "hypothesis": hyps, "expect": bool(t["expect"]),
                          "on": t.get("on", "text")})
    return tests


def validate(cases: list[dict[str, Any]], spec: Mapping[str, Any], scorer: NLIScorer, threshold: float,
             all_targets: list[str]) -> list[dict[str, Any]]:
    """Adds ``accepted`` and ``failed_test`` (first failing test) to each case
    (dicts with text, functionality, label, target_ident)."""
    plans, pairs = [], []
    for case in cases:
        tests = expand_tests(spec, case["functionality"], case["label"], case.get("target_ident"), all_targets)
        plan = []
        for t in tests:
            if "helper" in t:
                plan.append((t, HELPERS[t["helper"]](case["text"]), None))
                continue
            premise = case["text"]
            if t.get("on") == "quote":
                premise = extract_quote(case["text"]) or case["text"]
            elif t.get("on") == "negation_removed":
                premise = remove_negation(case["text"], spec.get("negation_words", []))
            idx = []
            for h in t["hypothesis"]:
                idx.append(len(pairs))
                pairs.append((premise, h))
            plan.append((t, None, idx))
        plans.append(plan)
    probs = scorer.entailment(pairs) if pairs else []
    out = []
    for case, plan in zip(cases, plans):
        failed, scores = None, {}
        for t, helper_ok, idx in plan:
            if idx is None:
                ok = bool(helper_ok)
            else:
                entailed = [probs[i] >= threshold for i in idx]
                scores[t["name"]] = round(max(probs[i] for i in idx), 6)
                ok = any(entailed) if t["expect"] else not any(entailed)
            if not ok and failed is None:
                failed = t["name"]
        out.append({**case, "accepted": failed is None and bool(plan), "failed_test": failed if plan else "no tests",
                    "entailment": scores})
    return out
