"""The misspelling and censorship test of "Detecting Hate Speech with GPT-3"
(Chiu, Collins, Alexander 2022, section 5 and Appendix C, Tables 22-23).

The racist and sexist ETHOS comments (race / gender score >= the threshold)
that contain one of Table 22's profanity strings (a case-sensitive
substring test, as the authors' ``inputs/misspelling_experiment.py``
selects; the code also selects 'phuck', which ``published.yaml`` carries as
``authors_code_extra``) are asked the zero-shot and the one-shot question
unedited and once per edit that changes them (every occurrence of the
string replaced, case-insensitively, by the edit: 'fuck' -> 'fck', 'phuck',
'f*ck', 'f-ck', ...), at temperature 0. One-shot: the example is the
comment's own category's ``comment_id``-th comment without profanity (the
authors' code; the same example for every version of a comment).

A comment's classification is *changed* when an edited version's parsed
answer (yes / no / unparsed) differs from the unedited version's; the
paper: 6 of 27 racist comments, 0 of 34 sexist ones (zero-shot). Table 23's
rows are, per changed comment, the unedited version and the edited
versions whose answer differs.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl
import yaml

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_csv, write_json
from hatecheck_pipeline.data.ethos import candidates
from hatecheck_pipeline.evaluation.llm import BackendError, ask, chat_client, cut_at_stop
from hatecheck_pipeline.evaluation.llm_answers import parse_answer
from hatecheck_pipeline.models import llm as prompting

SETTINGS = ("zero_shot", "one_shot")
CATEGORIES = ("racist", "sexist")
TEXT_COLUMNS = ["category", "comment_id", "ethos_id", "status", "edit", "text", "example"]
ANSWER_COLUMNS = ["backend", "model", "variant", "setting", *TEXT_COLUMNS[:6], "answer", "verdict"]


class MisspellingError(PipelineError, ValueError):
    pass


def load_edits(published: Path) -> list[tuple[str, str]]:
    """(string, replacement) pairs: Table 22 in its order, then the authors'
    code's extra ones."""
    doc = (yaml.safe_load(Path(published).read_text("utf-8")) or {}).get("gpt3_detection_t22")
    if not doc or not doc.get("edits"):
        raise MisspellingError(f"{published}: no gpt3_detection_t22.edits (the paper's Table 22)")
    table = {**doc["edits"], **(doc.get("authors_code_extra") or {})}
    return [(s, e) for s, edits in table.items() for e in edits]


def edited_versions(text: str, edits: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(edit label, edited text) for every edit that changes the text, each
    distinct text once.

    >>> edited_versions("Fuck off, fucking die", [("fuck", "fck"), ("die", "dye"), ("kill", "k1ll"), ("fuck", "fck")])
    [('fuck -> fck', 'fck off, fcking die'), ('die -> dye', 'Fuck off, fucking dye')]
    """
    out, seen = [], {text}
    for string, edit in edits:
        new = re.sub(re.escape(string), lambda _m, e=edit: e, text, flags=re.IGNORECASE)
        if new not in seen:
            seen.add(new)
            out.append((f"{string} -> {edit}", new))
    return out


def build_texts(table: pl.DataFrame, threshold: float, edits: Sequence[tuple[str, str]], max_texts: int | None) -> pl.DataFrame:
    """Every version to ask, per category in the authors' order: the
    comments containing the first string, then the second, ... (each once),
    each comment unedited then edited; at most ``max_texts`` versions per
    category (the first ones; None = all). Comments in the ETHOS file's
    order within each string's matches."""
    strings = list(dict.fromkeys(s for s, _ in edits))
    pools = candidates(table.with_row_index("_row"), threshold, 0.0)
    rows = []
    for category in CATEGORIES:
        pool = pools[category].sort("_row").select("id", "text")  # the file's order, as the authors' pandas frames
        order: list[int] = []
        texts = pool["text"].to_list()
        for s in strings:
            order += [i for i, t in enumerate(texts) if s in t and i not in order]
        clean = [t for i, t in enumerate(texts) if i not in set(order)]
        if not clean:
            raise MisspellingError(f"ethos: no {category} comment without profanity for the one-shot example")
        count = 0
        for cid, i in enumerate(order):
            example = clean[cid % len(clean)]
            versions = [("unedited", None, texts[i]), *(("edited", e, t) for e, t in edited_versions(texts[i], edits))]
            for status, edit, text in versions:
                if max_texts is not None and count >= max_texts:
                    break
                rows.append(
                    {
                        "category": category,
                        "comment_id": cid,
                        "ethos_id": str(pool["id"][i]),
                        "status": status,
                        "edit": edit,
                        "text": text,
                        "example": example,
                    }
                )
                count += 1
    return pl.DataFrame(
        rows,
        schema={
            "category": pl.String,
            "comment_id": pl.Int64,
            "ethos_id": pl.String,
            "status": pl.String,
            "edit": pl.String,
            "text": pl.String,
            "example": pl.String,
        },
    )


def verdict(answer: str | None, category: str) -> str:
    """yes / no / unparsed, as ``score-llm`` parses a yes/no answer.

    >>> [verdict(a, "racist") for a in (" Yes.", "No,", "racist", "maybe")]
    ['yes', 'no', 'yes', 'unparsed']
    """
    parsed = parse_answer(answer, category)
    return "unparsed" if parsed is None else ("no" if parsed.startswith("not-") else "yes")


def summarise(answers: pl.DataFrame, texts_considered: Mapping[str, int]) -> dict[str, Any]:
    """Per setting, variant and category: comments, versions, unparsed,
    the comments whose classification an edit changed (yes -> no, no -> yes
    or to / from unparsed) and Table 23's rows."""
    out: dict[str, Any] = {}
    for (setting, variant, category), part in sorted(answers.group_by("setting", "variant", "category"), key=lambda kv: kv[0]):
        changed, flips, rows = [], {"yes_to_no": 0, "no_to_yes": 0, "other": 0}, []
        for (cid,), versions in sorted(part.group_by("comment_id"), key=lambda kv: kv[0]):
            base = versions.filter(pl.col("status") == "unedited")
            if base.is_empty():
                continue
            b = base.row(0, named=True)
            diff = versions.filter((pl.col("status") == "edited") & (pl.col("verdict") != b["verdict"]))
            if diff.is_empty():
                continue
            changed.append(cid)
            for d in diff.iter_rows(named=True):
                key = f"{b['verdict']}_to_{d['verdict']}"
                flips[key if key in flips else "other"] += 1
            rows += [
                {k: r[k] for k in ("comment_id", "status", "edit", "text", "answer", "verdict")} for r in (b, *diff.iter_rows(named=True))
            ]
        out.setdefault(setting, {}).setdefault(variant, {})[category] = {
            "comments": part["comment_id"].n_unique(),
            "comments_with_profanity": texts_considered.get(category),
            "versions": part.height,
            "edited_versions": part.filter(pl.col("status") == "edited").height,
            "unparsed": part.filter(pl.col("verdict") == "unparsed").height,
            "yes_share_unedited": round(
                100
                * part.filter((pl.col("status") == "unedited") & (pl.col("verdict") == "yes")).height
                / max(1, part.filter(pl.col("status") == "unedited").height),
                6,
            ),
            "changed": len(changed),
            "changed_comments": changed,
            "flipped_versions": flips,
            "rows": rows,
        }
    return out


def run_misspelling(
    name: str,
    table: Path,
    published: Path,
    answers: Path,
    metrics: Path,
    backend: Mapping[str, Any],
    threshold: float,
    seed: int,
    threads: int,
    batch_size: int,
    cache_dir: str,
    profile: Profile,
    weights: Path | None = None,
) -> str:
    """Stage ``llm_misspelling_<backend>``: the zero- and one-shot questions
    on every version of the profanity comments at temperature 0 (a local
    backend: greedy free text and/or the constrained answer; an endpoint:
    ``temperature: 0``, one iteration, cached); raw answers and the changed
    classifications. ``profiles.<p>.llm_misspelling_max_texts`` caps the
    versions per category (null = all). ``weights``: the fetched weights'
    manifest when the backend's model is ``weights`` (fetch_llm_weights)."""
    from tqdm import tqdm

    from hatecheck_pipeline.core.cpu import bounded_threads

    cap = profile.get("llm_misspelling_max_texts")
    edits = load_edits(published)
    frame = pl.read_parquet(table)
    pools = candidates(frame, threshold, 0.0)
    strings = list(dict.fromkeys(s for s, _ in edits))
    considered = {
        c: pools[c].filter(pl.any_horizontal([pl.col("text").str.contains(s, literal=True) for s in strings])).height for c in CATEGORIES
    }
    texts = build_texts(frame, threshold, edits, cap)
    templates = prompting.load_templates()
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    records = texts.to_dicts()
    stand_in = backend.get("stand_in")
    if backend["kind"] == "local":
        import torch

        torch.manual_seed(seed)
        torch.set_num_threads(bounded_threads(threads))
        ref = prompting.model_ref(backend["model"], weights)
        lm = prompting.LocalLM.load(ref, batch_size)
        model = prompting.describe_model(ref)
        stand_in = prompting.stand_in_of(ref, stand_in)
    elif backend["kind"] == "openai":
        client = chat_client(backend, Path(cache_dir) / name)
        model = backend["model"]
    else:
        raise BackendError(f"llm.backends.{name}.kind: {backend['kind']!r} is not one of ['openai', 'local']")
    at_zero = {**backend, "temperature": 0.0}
    try:
        for setting in SETTINGS:
            tpl = templates[setting]
            prompts = [prompting.render(tpl, r["text"], r["category"], [{"text": r["example"], "label": r["category"]}]) for r in records]
            variants = backend.get("variants", ["free"]) if backend["kind"] == "local" else ["free"]
            for variant in variants:
                chunk = 32
                got: list[str] = []
                for start in tqdm(range(0, len(records), chunk), desc=f"misspelling {setting} {variant}", mininterval=10):
                    recs, ps = records[start : start + chunk], prompts[start : start + chunk]
                    if backend["kind"] == "openai":
                        got += [ask(client, at_zero, p, seed, tpl.get("stop")) for p in ps]
                    elif variant == "free":
                        got += [cut_at_stop(t, tpl.get("stop")) for t in lm.generate(ps, backend["max_new_tokens"], 0.0, seed)]
                    else:
                        got += [w for w, _ in lm.choose(ps, [prompting.choices(tpl, r["category"]) for r in recs])]
                for r, a in zip(records, got):
                    rows.append(
                        {
                            "backend": name,
                            "model": model,
                            "variant": variant,
                            "setting": setting,
                            **{k: r[k] for k in TEXT_COLUMNS[:6]},
                            "answer": a,
                            "verdict": verdict(a, r["category"]),
                        }
                    )
    finally:
        if backend["kind"] == "openai":
            client.close()
    seconds = time.perf_counter() - started
    out = pl.DataFrame(rows, schema={c: (pl.Int64 if c == "comment_id" else pl.String) for c in ANSWER_COLUMNS})
    write_csv(out, answers)
    doc = {
        "backend": name,
        "model": model,
        "stand_in": stand_in,
        "temperature": 0.0,
        "settings": list(SETTINGS),
        "max_texts_per_category": cap,
        "complete": cap is None,
        "edits": [f"{s} -> {e}" for s, e in edits],
        "answers": out.height,
        "seconds": round(seconds, 1),
        "by_setting": summarise(out, considered),
    }
    write_json(doc, metrics)
    zero = doc["by_setting"].get("zero_shot", {})
    brief = "; ".join(
        f"{v}: " + ", ".join(f"{c} {m['changed']}/{m['comments']} changed" for c, m in cats.items()) for v, cats in zero.items()
    )
    return f"{name}: misspelling test, {out.height} answers in {seconds:.0f} s; zero-shot {brief}"
