"""A prompted LLM as a hate-speech classifier on the functional suites (the
``llm`` model kind, ``models.<name>.kind: llm``).

Every case of HateCheck and of each MHC language is put to one of
``llm.backends`` with a yes/no question (``suite_zero_shot_<language>`` of
``resources/llm/prompts.yaml``: the instruction in English, or in the
suite's own language when the model's ``prompt_language`` is ``suite``):

- a ``local`` backend (a causal LM through transformers) answers by the
  constrained variant: p(hateful) = the probability of the "yes" answer
  among "yes" and "no" (log-probabilities of the allowed continuations,
  renormalised), so the predictions have real scores (AUCs, thresholds);
- an ``openai`` backend (any OpenAI-compatible endpoint, cached
  content-addressed) answers in free text, parsed as ``score-llm`` parses
  the paper's answers (the first word: the language's yes or no word);
  p(hateful) is 1 for yes, 0 for no, and an unparsed answer counts as
  non-hateful (p 0) and is counted in the answers file and the stage log.

The predictions files have the layout of ``models/predict.py`` (id,
p_hateful, pred, model, suite), one per (model, suite), so the existing
score, tables, bias and report stages read them as any model's; the raw
answers of every suite go to one CSV beside them (suite, id, language of
the instruction, answer, p_hateful, parsed).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import PRECISION_KEY, write_csv, write_parquet
from hatecheck_pipeline.evaluation.llm import ask, chat_client
from hatecheck_pipeline.models import llm as prompting
from hatecheck_pipeline.models.predict import predictions_frame
from hatecheck_pipeline.suites.registry import Suite
from hatecheck_pipeline.suites.sample import drawn_cases

ANSWER_COLUMNS = ["suite", "id", "prompt_language", "template", "answer", "p_hateful", "parsed"]
WORD = re.compile(r"[^\W_]+", re.UNICODE)


class TemplateError(PipelineError, KeyError):
    """A model names a template (or a language) the prompts file lacks."""


def instruction_language(suite: Suite, prompt_language: str) -> str:
    """The language the question is asked in: English, or the suite's own
    (HateCheck's is English).

    >>> from hatecheck_pipeline.suites.registry import hatecheck, mhc
    >>> [instruction_language(s, p) for s in (hatecheck(), mhc("german")) for p in ("english", "suite")]
    ['english', 'english', 'english', 'german']
    """
    return "english" if prompt_language == "english" else (suite.language or "english")


def suite_template(templates: Mapping[str, Any], family: str, language: str) -> tuple[str, dict[str, Any]]:
    name = f"{family}_{language}"
    if name not in templates:
        have = sorted(k for k in templates if k.startswith(family + "_"))
        raise TemplateError(f"{prompting.TEMPLATES_FILE}: no template {name!r} (templates of {family!r}: {', '.join(have) or 'none'})")
    template = templates[name]
    if set(prompting.choices(template)) != {"yes", "no"}:
        raise TemplateError(f"{prompting.TEMPLATES_FILE}: template {name!r} must allow the answers yes and no")
    return name, template


def parse_yes_no(answer: str | None, template: Mapping[str, Any]) -> bool | None:
    """True / False when the answer's first word is one of the template's
    yes / no words (any case), None when it is neither.

    >>> t = {"choices": {"yes": [" sí", " Sí"], "no": [" no"]}}
    >>> [parse_yes_no(a, t) for a in ("Sí.", " no, it is not", "quizás", "")]
    [True, False, None, None]
    """
    words = WORD.findall((answer or "").lower())
    if not words:
        return None
    opts = prompting.choices(template)
    yes = {c.strip().lower() for c in opts["yes"]}
    no = {c.strip().lower() for c in opts["no"]}
    return True if words[0] in yes else False if words[0] in no else None


def openai_scores(
    client, cfg: Mapping[str, Any], texts: Sequence[str], template: Mapping[str, Any], seed: int
) -> list[tuple[str, float | None]]:
    """(raw answer, 1 / 0 / None when unparsed) per text, one request each
    (cached by the client)."""
    out = []
    for text in texts:
        answer = ask(client, cfg, prompting.render(template, text), seed)
        verdict = parse_yes_no(answer, template)
        out.append((answer, None if verdict is None else float(verdict)))
    return out


def predict_suites(
    model: str,
    backend_name: str,
    suites: Sequence[Suite],
    tables: Mapping[str, Path],
    predictions: Sequence[Path],
    answers: Path,
    backend: Mapping[str, Any],
    template: str,
    prompt_language: str,
    seed: int,
    threshold: float,
    threads: int,
    batch_size: int,
    cache_dir: str,
    profile: Profile,
    weights: Path | None = None,
) -> str:
    """Stage ``predict_<model>`` of an ``llm`` model: every suite of the
    model in one process (the LLM loaded once), one predictions file per
    suite (``predictions`` in the order of ``suites``) and the raw answers.
    A profile capping ``llm_max_cases_per_suite`` predicts a draw seeded
    with the model's ``seed`` (the score stage scores the same draw).
    ``weights``: the fetched weights' manifest when the backend's model is
    ``weights`` (fetch_llm_weights)."""
    from tqdm import tqdm

    from hatecheck_pipeline.core.cpu import bounded_threads

    cap = profile.get("llm_max_cases_per_suite")
    templates = prompting.load_templates()
    languages = {s.name: instruction_language(s, prompt_language) for s in suites}
    chosen = {s.name: suite_template(templates, template, languages[s.name]) for s in suites}
    client = lm = None
    if backend["kind"] == "local":
        import torch

        torch.manual_seed(seed)
        torch.set_num_threads(bounded_threads(threads))
        lm = prompting.LocalLM.load(prompting.model_ref(backend["model"], weights), batch_size)
    elif backend["kind"] == "openai":
        client = chat_client(backend, Path(cache_dir) / backend_name)
    else:
        raise PipelineError(f"llm.backends.{backend_name}.kind: {backend['kind']!r} is not one of ['openai', 'local']")
    started = time.perf_counter()
    rows: list[pl.DataFrame] = []
    lines = []
    try:
        for suite, out in tqdm(list(zip(suites, predictions)), desc=f"{model} suites", mininterval=10):
            name, tpl = chosen[suite.name]
            cases = drawn_cases(suite.load_raw(str(tables[suite.name])), suite.id_column, cap, seed)
            texts = cases["text"].to_list()
            scored = prompting.yes_no_answers(lm, texts, tpl) if lm is not None else openai_scores(client, backend, texts, tpl, seed)
            p = [0.0 if v is None else v for _, v in scored]
            frame = predictions_frame(cases["id"], p, threshold, model, suite.name)
            write_parquet(frame, out, metadata={PRECISION_KEY: lm.precision} if lm is not None else None)
            unparsed = sum(v is None for _, v in scored)
            rows.append(
                pl.DataFrame(
                    {
                        "suite": [suite.name] * cases.height,
                        "id": cases["id"],
                        "prompt_language": [languages[suite.name]] * cases.height,
                        "template": [name] * cases.height,
                        "answer": [a for a, _ in scored],
                        "p_hateful": pl.Series([v for _, v in scored], dtype=pl.Float64),
                        "parsed": [v is not None for _, v in scored],
                    }
                ).select(ANSWER_COLUMNS)
            )
            lines.append(
                f"{suite.name}: {cases.height} cases, {(frame['pred'] == 'hateful').mean():.1%} hateful"
                + (f", {unparsed} unparsed (counted non-hateful)" if client is not None else "")
            )
    finally:
        if client is not None:
            client.close()
    write_csv(pl.concat(rows), answers)
    seconds = time.perf_counter() - started
    return f"{model} ({backend_name}, {template}, instruction {prompt_language}) in {seconds:.0f} s: " + "; ".join(lines)
