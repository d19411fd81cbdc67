"""GPT-HateCheck's human validation (Jin et al. 2024, section 4, RQ3,
Table 7 and Appendix C) as a round trip: export a sample of the generated
cases for annotators, read the returned file back and compute Table 7.

What the paper did: "we select all 795 GPT-generated messages targeting
trans people and 156 messages that do not target any protected group" --
every candidate (before the hypothesis tests) of those two target groups,
so every functionality is in the sample. Two tasks, three annotators per
message each: how hateful the message is (1 not hateful .. 5 extremely
hateful; the three scores averaged, "higher than 3" = hateful), and whether
the message is consistent with its functionality (majority vote); a domain
expert judged functionality consistency once more. Fleiss' kappa 0.63 on
the binarised hateful labels (all three agreeing on 72.3%), 0.05 on
consistency (49.3%). Table 7: the share of messages whose hateful label
agrees with the intended one, and the share consistent with their
functionality (crowd, expert), on the kept cases (GPT-HC) and on every
candidate (GPT-HC -filter).

:func:`sample_cases` draws per (functionality, target) cell -- every case
of the cell as the paper (``per_cell`` None) or a seeded draw of at most
``per_cell`` -- from the candidates of the chosen target groups (default
the paper's two). :func:`export` writes the annotators' CSV (blank columns
``hateful_<i>`` and ``consistent_<i>`` per annotator, ``consistent_expert``),
the answer key beside it (the intended label and whether the hypothesis
tests kept the case: not shown to annotators) and a README with the
guidelines' questions. :func:`read_annotations` checks the returned file
(every error one line naming the file, the line and the rule broken);
:func:`table7` computes the figures, with the paper's beside them.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any, Mapping, Sequence

import polars as pl

from hatecheck_pipeline.core.files import InputError, write_json, write_text
from hatecheck_pipeline.evaluation.agreement import fleiss_kappa

PAPER_TARGETS = ("trans people", "none")  # "all ... messages targeting trans people and ... that do not target any protected group"
NO_TARGET = "none"  # expansion.generate.NO_TARGET: Table 4's row without a protected target
ANNOTATORS = 3  # "each message was labelled by three distinct annotators"
HATEFUL_ABOVE = 3  # mean score "higher than 3 as hateful"
SCORES = (1, 2, 3, 4, 5)
YES, NO = ("yes", "y", "1", "true"), ("no", "n", "0", "false")
SOURCE = "GPT-HateCheck (Jin et al., 2024), Table 7 and section 4 (RQ3)"
KEY_COLUMNS = ("case_id", "functionality", "target", "label", "nli_kept")
SHOWN_COLUMNS = ("case_id", "functionality", "functionality_description", "target", "text")

SCORE_GUIDE = (
    "1 (Not hateful at all): objective statements, statements not targeting the group, positive or neutral statements about it.\n"
    "2 (Not hateful to most people): statements that are primarily objective but might upset a specific group.\n"
    "3 (Ambivalent): might be hateful or not hateful depending on the interpretation and context.\n"
    "4 (Unambiguously hateful): negative opinion against the group that doesn't contain profanity or dehumanization.\n"
    "5 (Extremely hateful. Should be censored): messages involving profanity, dehumanization, threat, or calling for "
    "discrimination, violence against the group."
)


def hateful_column(i: int) -> str:
    return f"hateful_{i}"


def consistent_column(i: int) -> str:
    return f"consistent_{i}"


EXPERT = "consistent_expert"


def candidates_of(kept: pl.DataFrame, rejected: pl.DataFrame) -> pl.DataFrame:
    """Every candidate the hypothesis tests saw (the kept suite table and the
    rejected table of a ``expand_llm_validate_<language>`` stage): id, text,
    functionality, target (``none`` for no protected target), the intended
    label and ``nli_kept``."""
    cols = ["id", "text", "functionality", "target_ident", "label"]
    both = pl.concat(
        [
            kept.select(cols).with_columns(pl.lit(True).alias("nli_kept")),
            rejected.select(cols).with_columns(pl.lit(False).alias("nli_kept")),
        ]
    )
    return both.with_columns(pl.col("id").cast(pl.Utf8), pl.col("target_ident").fill_null(NO_TARGET).alias("target")).drop("target_ident")


def sample_cases(
    candidates: pl.DataFrame, targets: Sequence[str] = PAPER_TARGETS, per_cell: int | None = None, seed: int = 0
) -> pl.DataFrame:
    """The cases to annotate, stratified by (functionality, target): of every
    cell of the chosen ``targets``, all its cases (``per_cell`` None: the
    paper's selection) or a seeded draw of ``per_cell`` of them; then the
    rows shuffled with the same seed (annotators see no grouping by
    functionality or by the hypothesis tests' verdict). Rows of the same
    input give the same sample whatever their order."""
    if per_cell is not None and per_cell < 1:
        raise InputError(f"per_cell {per_cell}: must be at least 1 (or None for every case)")
    part = candidates.filter(pl.col("target").is_in(list(targets))).sort("id")
    rng = random.Random(seed)
    picked: list[dict[str, Any]] = []
    for (func, target), cell in sorted(part.group_by(["functionality", "target"]), key=lambda g: g[0]):
        rows = cell.to_dicts()
        picked += rows if per_cell is None or per_cell >= len(rows) else rng.sample(rows, per_cell)
    rng.shuffle(picked)
    return pl.DataFrame(picked, schema=part.schema)


def describe(functionality: str) -> str:
    from hatecheck_pipeline.evaluation.published import functionalities

    known = functionalities("hatecheck").get(functionality)
    return f"F{known[0]}: {known[1]}" if known else functionality


def readme(annotators: int, file: str) -> str:
    """The annotators' instructions: the guidelines' two questions (Appendix
    C.1) and what to write in each column."""
    cols = ", ".join(hateful_column(i) for i in range(1, annotators + 1))
    cons = ", ".join(consistent_column(i) for i in range(1, annotators + 1))
    return f"""# Annotating {file}

The messages were written by a language model (GPT-HateCheck, Jin et al.
2024). They may contain offensive content. Annotators must be at least 18
and comfortable with annotating adult content.

Each row is one message (`text`), the group it was written about (`target`;
`none`: no protected group) and the functionality it was asked to test
(`functionality_description`; ignore the "FXX: " prefix). Fill one
column of each task per annotator; leave no cell of an annotator's columns
blank. Do not edit `case_id`, `text` or the other given columns.

## Task 1: hateful ({cols})

Read the message and determine how hateful it is to the target group
(for `none`: to any protected group). Hate speech consists of offensive,
aggressive, or abusive comments against a specific minority group. Write
one score, 1 to 5:

{SCORE_GUIDE}

## Task 2: functionality consistency ({cons})

Is the message consistent with the given functionality (the instruction
used to generate it)? Write `yes` or `no`.

`{EXPERT}`: the same question answered by one domain expert (the paper's
Func_expert); leave the whole column blank if there is no expert.

Then give the file back to `hatecheck-pipeline human-validation read`.
"""


def export(
    candidates: pl.DataFrame,
    out: Path,
    annotators: int = ANNOTATORS,
    targets: Sequence[str] = PAPER_TARGETS,
    per_cell: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Write the annotators' CSV ``out`` (the shown columns, then blank
    ``hateful_<i>``, ``consistent_<i>`` for i = 1..``annotators`` and
    ``consistent_expert``), its answer key (:func:`key_path`) and README
    (:func:`readme_path`); return what was written."""
    if annotators < 2:
        raise InputError(f"annotators {annotators}: Fleiss' kappa needs at least 2 per message")
    sample = sample_cases(candidates, targets, per_cell, seed)
    if not sample.height:
        raise InputError(f"no generated case has a target among {list(targets)}: nothing to annotate")
    blank = [*(hateful_column(i) for i in range(1, annotators + 1)), *(consistent_column(i) for i in range(1, annotators + 1)), EXPERT]
    shown = sample.select(
        pl.col("id").alias("case_id"),
        "functionality",
        pl.col("functionality").map_elements(describe, return_dtype=pl.Utf8).alias("functionality_description"),
        "target",
        "text",
    ).with_columns(*(pl.lit("").alias(c) for c in blank))
    out.parent.mkdir(parents=True, exist_ok=True)
    shown.write_csv(out)
    key = sample.select(pl.col("id").alias("case_id"), "functionality", "target", "label", "nli_kept")
    key.write_csv(key_path(out))
    write_text(readme(annotators, out.name), readme_path(out))
    cells = sample.group_by(["functionality", "target"]).len()
    return {
        "file": str(out),
        "key": str(key_path(out)),
        "readme": str(readme_path(out)),
        "cases": sample.height,
        "cells": cells.height,
        "annotators": annotators,
        "targets": list(targets),
        "per_cell": per_cell,
        "seed": seed,
        "nli_kept": int(sample["nli_kept"].sum()),
    }


def key_path(out: Path) -> Path:
    return out.with_name(out.stem + ".key.csv")


def readme_path(out: Path) -> Path:
    return out.with_name(out.stem + ".README.md")


# ------------------------------------------------- reading the returned file


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    if not path.exists():
        raise InputError(f"{path}: file not found")
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = list(reader.fieldnames or [])
        rows = [dict(r) for r in reader]
    return header, rows


def read_annotations(returned: Path, key: Path) -> list[dict[str, Any]]:
    """One record per case of the returned file ``returned`` joined with its
    answer ``key``: case_id, functionality, target, label, nli_kept, the
    annotators' scores (int 1-5), consistency votes (bool) and the expert's
    vote (None when the column is blank throughout). Line numbers in errors
    are the file's (the header is line 1)."""
    header, rows = _rows(returned)
    n = sum(1 for c in header if c.startswith("hateful_"))
    need = [*SHOWN_COLUMNS[:1], *(hateful_column(i) for i in range(1, n + 1)), *(consistent_column(i) for i in range(1, n + 1))]
    missing = [c for c in need if c not in header]
    if n < 2 or missing:
        raise InputError(
            f"{returned}: line 1: columns {missing or 'hateful_1, hateful_2'} missing "
            f"(rule: case_id, hateful_<i> and consistent_<i> for i = 1..n, n >= 2 annotators)"
        )
    _, key_rows = _rows(key)
    if not key_rows or any(c not in key_rows[0] for c in KEY_COLUMNS):
        raise InputError(f"{key}: line 1: the answer key needs columns {list(KEY_COLUMNS)} (as export wrote it)")
    answers = {r["case_id"]: r for r in key_rows}
    has_expert = EXPERT in header and any((r.get(EXPERT) or "").strip() for r in rows)
    seen: dict[str, int] = {}
    out = []
    for line, r in enumerate(rows, start=2):
        where = f"{returned}: line {line}"
        cid = (r.get("case_id") or "").strip()
        if cid not in answers:
            raise InputError(f"{where}: case_id {cid!r} is not in the answer key {key.name} (rule: case_id as exported, unedited)")
        if cid in seen:
            raise InputError(f"{where}: case_id {cid} repeats line {seen[cid]} (rule: one row per case)")
        seen[cid] = line
        scores, votes = [], []
        for i in range(1, n + 1):
            raw = (r.get(hateful_column(i)) or "").strip()
            if raw not in {str(s) for s in SCORES}:
                raise InputError(f"{where}: {hateful_column(i)} = {raw!r} (rule: a hateful score 1-5, every annotator, no blanks)")
            scores.append(int(raw))
            votes.append(_vote(r.get(consistent_column(i)), consistent_column(i), where))
        expert = _vote(r.get(EXPERT), EXPERT, where, "the expert column is filled on some rows, so on every row") if has_expert else None
        a = answers[cid]
        out.append(
            {
                "case_id": cid,
                "functionality": a["functionality"],
                "target": a["target"],
                "label": a["label"],
                "nli_kept": a["nli_kept"].strip().lower() == "true",
                "scores": scores,
                "consistent": votes,
                "expert": expert,
            }
        )
    absent = [c for c in answers if c not in seen]
    if absent:
        raise InputError(
            f"{returned}: {len(absent)} case(s) of the answer key missing, e.g. {absent[:3]} (rule: every exported row returned)"
        )
    return out


def _vote(value: str | None, column: str, where: str, why: str = "every annotator, no blanks") -> bool:
    raw = (value or "").strip().lower()
    if raw in YES:
        return True
    if raw in NO:
        return False
    raise InputError(f"{where}: {column} = {raw!r} (rule: yes or no, {why})")


# ------------------------------------------------- Table 7


def hateful_label(scores: Sequence[int]) -> str:
    """The case's label from its annotators' scores: mean above 3 = hateful.

    >>> hateful_label([4, 3, 2]), hateful_label([4, 4, 2]), hateful_label([5, 1, 3])
    ('non-hateful', 'hateful', 'non-hateful')
    """
    return "hateful" if sum(scores) / len(scores) > HATEFUL_ABOVE else "non-hateful"


def majority(votes: Sequence[bool]) -> bool:
    """More yes than no (a tie, with an even number of annotators, is no)."""
    return sum(votes) * 2 > len(votes)


def _pct(k: int, n: int) -> float | None:
    return round(100.0 * k / n, 2) if n else None


def _kappa(rows: Sequence[Sequence[bool]]) -> float | None:
    counts = [[sum(r), len(r) - sum(r)] for r in rows]
    k = fleiss_kappa(counts) if counts else None
    return None if k is None else round(k, 4)


def figures(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Table 7's columns on ``cases``: Hateful (% whose label from the mean
    score equals the intended label), Func_crowd (% consistent by majority),
    Func_expert (% the expert judged consistent; None without an expert),
    and valid (% both: the hateful label agrees and the crowd's majority
    says consistent)."""
    n = len(cases)
    agree = [hateful_label(c["scores"]) == c["label"] for c in cases]
    crowd = [majority(c["consistent"]) for c in cases]
    expert = [c["expert"] for c in cases if c["expert"] is not None]
    return {
        "n": n,
        "hateful": _pct(sum(agree), n),
        "func_crowd": _pct(sum(crowd), n),
        "func_expert": _pct(sum(expert), len(expert)) if expert else None,
        "valid": _pct(sum(a and b for a, b in zip(agree, crowd)), n),
    }


def table7(cases: Sequence[Mapping[str, Any]], paper: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Table 7 and the agreement figures of section 4 (RQ3) from the read
    annotations, with the paper's figures (``published.yaml``:
    ``gpt_hatecheck_t7``) beside ours."""
    raters = {len(c["scores"]) for c in cases}
    binary = [[s > HATEFUL_ABOVE for s in c["scores"]] for c in cases]
    votes = [c["consistent"] for c in cases]
    kept = [c for c in cases if c["nli_kept"]]
    per_func = {}
    for func in sorted({c["functionality"] for c in cases}):
        per_func[func] = figures([c for c in cases if c["functionality"] == func])
    ours = {
        "annotators_per_case": raters.pop() if len(raters) == 1 else sorted(raters),
        "cases": len(cases),
        "targets": sorted({c["target"] for c in cases}),
        "rows": {"GPT-HC": figures(kept), "GPT-HC -filter": figures(cases)},
        "agreement": {
            "hateful": {"fleiss_kappa": _kappa(binary), "all_agree_pct": _pct(sum(len(set(b)) == 1 for b in binary), len(cases))},
            "functionality": {"fleiss_kappa": _kappa(votes), "all_agree_pct": _pct(sum(len(set(v)) == 1 for v in votes), len(cases))},
        },
        "per_functionality": per_func,
    }
    return {
        "table": "gpt_hatecheck_t7",
        "paper_source": SOURCE,
        "rules": {
            "hateful": f"mean of the annotators' 1-5 scores > {HATEFUL_ABOVE} = hateful, compared with the intended label",
            "kappa_hateful": f"Fleiss' kappa over each annotator's score binarised (> {HATEFUL_ABOVE} = hateful)",
            "func_crowd": "majority vote of the annotators' yes/no",
            "func_expert": "the expert's yes/no",
            "valid": "hateful label agrees and func_crowd says consistent (not a figure the paper reports)",
            "GPT-HC": "cases the hypothesis tests kept",
            "GPT-HC -filter": "every annotated candidate",
        },
        "ours": ours,
        "paper": dict(paper or {}),
    }


def read_and_score(returned: Path, key: Path, out: Path, paper: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read ``returned`` (checked against ``key``), compute :func:`table7`
    and write it to ``out`` (JSON)."""
    doc = table7(read_annotations(returned, key), paper)
    doc["files"] = {"annotations": str(returned), "key": str(key)}
    write_json(doc, out)
    return doc
