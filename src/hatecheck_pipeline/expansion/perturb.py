"""Spelling perturbations (HateCheck functionalities F25-F29) of any suite's
hateful cases, in any language, seeded per (seed, generator, case).

Each generator perturbs one word (or one word boundary) chosen at random
among the eligible ones; a case it cannot change (e.g. leet speak on
Mandarin, word-boundary deletion without spaces) is reported in the
coverage, never emitted as a test case.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path
from typing import Any, Callable

import polars as pl
from tqdm import tqdm

from hatecheck_pipeline.expansion import SUITE_COLUMNS

LEET = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7", "l": "1", "b": "8", "g": "9"}
WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str, min_len: int) -> list[re.Match]:
    return [m for m in WORD.finditer(text) if sum(c.isalpha() for c in m.group()) >= min_len]


def char_swap(text: str, rng: random.Random) -> str:
    """Swap two adjacent different letters inside a word."""
    spots = [
        i
        for m in _words(text, 2)
        for i in range(m.start(), m.end() - 1)
        if text[i].isalpha() and text[i + 1].isalpha() and text[i] != text[i + 1]
    ]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + text[i + 1] + text[i] + text[i + 2 :]


def char_del(text: str, rng: random.Random) -> str:
    """Delete one letter (not a word's first) of a word of 3+ letters."""
    spots = [i for m in _words(text, 3) for i in range(m.start() + 1, m.end()) if text[i].isalpha()]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + text[i + 1 :]


def space_del(text: str, rng: random.Random) -> str:
    """Delete one word boundary (a space between two word characters)."""
    spots = [m.start() for m in re.finditer(r"(?<=\w) (?=\w)", text)]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + text[i + 1 :]


def space_add(text: str, rng: random.Random) -> str:
    """Spell one word of 3+ letters with spaces between its characters."""
    words = _words(text, 3)
    if not words:
        return text
    m = rng.choice(words)
    return text[: m.start()] + " ".join(m.group()) + text[m.end() :]


def leet(text: str, rng: random.Random) -> str:
    """Replace one Latin letter of a word by its leet digit."""
    spots = [i for m in _words(text, 3) for i in range(m.start(), m.end()) if text[i].lower() in LEET]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + LEET[text[i].lower()] + text[i + 1 :]


GENERATORS: dict[str, Callable[[str, random.Random], str]] = {
    "char_swap": char_swap,
    "char_del": char_del,
    "space_del": space_del,
    "space_add": space_add,
    "leet": leet,
}


def rng_for(seed: int, generator: str, case_id: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{generator}|{case_id}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def perturb(cases: pl.DataFrame, generators: list[str], seed: int, dataset: str) -> tuple[pl.DataFrame, list[dict]]:
    """Perturbed copies of the hateful ``cases`` (columns id, text, label,
    language, functionality, target_ident[, templ_id]) and the coverage rows
    (language, generator, source cases, changed, unchanged)."""
    hateful = cases.filter(pl.col("label") == "hateful")
    if "functionality" in hateful.columns:  # never perturb an already misspelt case
        hateful = hateful.filter(~pl.col("functionality").fill_null("").str.starts_with("spell_"))
    rows, coverage = [], []
    for language in sorted(hateful["language"].unique().to_list()):
        part = hateful.filter(pl.col("language") == language)
        for gen in generators:
            fn = GENERATORS[gen]
            changed = 0
            unchanged_examples = []
            for r in tqdm(part.iter_rows(named=True), total=part.height, desc=f"{language}/{gen}", leave=False):
                new = fn(r["text"], rng_for(seed, gen, str(r["id"])))
                if new == r["text"]:
                    if len(unchanged_examples) < 3:
                        unchanged_examples.append(r["text"])
                    continue
                changed += 1
                rows.append(
                    {
                        "id": f"{r['id']}~{gen}",
                        "text": new,
                        "label": "hateful",
                        "language": language,
                        "dataset": dataset,
                        "split": "test",
                        "functionality": f"spell_{gen}_h",
                        "target_ident": r.get("target_ident"),
                        "templ_id": r.get("templ_id"),
                        "case_templ": None,
                        "source_id": str(r["id"]),
                        "generator": gen,
                        "source_functionality": r.get("functionality"),
                    }
                )
            n = part.height
            coverage.append(
                {
                    "language": language,
                    "generator": gen,
                    "source_cases": n,
                    "changed": changed,
                    "unchanged": n - changed,
                    "share_changed": round(changed / n, 6) if n else None,
                    "unchanged_examples": unchanged_examples,
                }
            )
    schema = {c: pl.Utf8 for c in SUITE_COLUMNS} | {"source_functionality": pl.Utf8}
    return pl.DataFrame(rows, schema=schema), coverage


def run(
    table: Path, languages: list[str] | None, generators: list[str], seed: int, dataset: str, out_table: Path, out_coverage: Path
) -> list[dict]:
    """Perturb one suite table (interim table, optionally one language)."""
    from hatecheck_pipeline.core.files import write_json, write_parquet

    frame = pl.scan_parquet(table)
    if languages:
        frame = frame.filter(pl.col("language").is_in(languages))
    cols = [
        c for c in ("id", "text", "label", "language", "functionality", "target_ident", "templ_id") if c in frame.collect_schema().names()
    ]
    cases = frame.select(cols).collect()
    out, coverage = perturb(cases, generators, seed, dataset)
    write_parquet(out, out_table)
    write_json({"table": str(table), "seed": seed, "coverage": coverage}, out_coverage)
    return coverage


def run_report(coverage_files: list[Path], out_json: Path, out_csv: Path) -> dict[str, Any]:
    """Merge per-suite coverage files into one report (JSON + CSV)."""
    from hatecheck_pipeline.core.files import read_json, write_csv, write_json

    rows = []
    for path in coverage_files:
        for row in read_json(path)["coverage"]:
            rows.append({"file": str(path), **row})
    flat = pl.DataFrame([{k: v for k, v in r.items() if k != "unchanged_examples"} for r in rows])
    write_csv(flat, out_csv)
    never = [f"{r['language']}/{r['generator']}" for r in rows if r["changed"] == 0]
    report = {
        "rows": rows,
        "languages": sorted({r["language"] for r in rows}),
        "generators_without_effect": never,
        "total_changed": int(flat["changed"].sum()) if rows else 0,
        "total_unchanged": int(flat["unchanged"].sum()) if rows else 0,
    }
    write_json(report, out_json)
    return report


def expand_perturb(name: str, languages: list[str] | None, table: Path, generators: list[str], seed: int, out: Path, coverage: Path) -> str:
    """Stage: seeded spelling perturbations of one suite's hateful cases
    (``table``: its interim table; ``languages``: the language filter)."""
    cov = run(table, languages, generators, seed, name, out, coverage)
    return "; ".join(f"{name} {c['language']}/{c['generator']}: changed {c['changed']}/{c['source_cases']}" for c in cov)


def expand_coverage_report(coverage: list[Path], report_json: Path, report_csv: Path) -> str:
    """Stage: perturbation coverage per language and generator (JSON + CSV)."""
    rep = run_report(coverage, report_json, report_csv)
    return f"coverage: {len(rep['languages'])} languages; no effect: {rep['generators_without_effect'] or 'none'}"
