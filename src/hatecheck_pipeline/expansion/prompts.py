"""GPT-HateCheck prompt factory: skeleton + one instruction segment per
functionality (appendix A), ``[identity]``/``[slur]`` filled per target
group, one demonstration drawn (seeded) from the suite, and a language."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Mapping

import polars as pl
import yaml

from hatecheck_pipeline.expansion import resource


def load_spec(path: str | None = None) -> dict[str, Any]:
    text = open(path, encoding="utf-8").read() if path else resource("prompts.yaml").read_text("utf-8")
    return yaml.safe_load(text)


@dataclass(frozen=True)
class Cell:
    functionality: str
    target_ident: str | None
    language: str
    system: str
    prompt: str
    demonstration: str | None


def draw_demonstration(suite: pl.DataFrame, functionality: str, seed: int) -> str | None:
    """A generic case of the functionality: its template text with the
    identity placeholder written as ``[identity]`` (same for all groups)."""
    rows = suite.filter(pl.col("functionality") == functionality)
    if rows.is_empty():
        return None
    col = "case_templ" if "case_templ" in rows.columns and rows["case_templ"].drop_nulls().len() else "text"
    options = sorted(set(rows[col].drop_nulls().to_list()))
    if not options:
        return None
    demo = random.Random(f"{seed}|{functionality}").choice(options)
    return re.sub(r"\[(?:male_|female_)?IDENT(?:ITY)?_[A-Z]+\]", "[identity]", demo)


def build(spec: Mapping[str, Any], functionality: str, target: str | None, slurs: list[str], language: str,
          n: int, demonstration: str | None) -> Cell:
    instruction = spec["segments"][functionality]
    demo_block = spec["demonstration_block"].format(demonstration=demonstration) if demonstration else ""
    prompt = spec["skeleton"].format(n=n, language=language.capitalize(), instruction=instruction,
                                     demonstration_block=demo_block)
    prompt = prompt.replace("[slur]", ", ".join(slurs)).replace("[identity]", target or "people")
    return Cell(functionality, target, language, spec["system"].strip(), prompt, demonstration)


def cells(spec: Mapping[str, Any], suite: pl.DataFrame, functionalities: list[str], targets: list[str],
          slurs: Mapping[str, list[str]], language: str, n: int, seed: int) -> list[Cell]:
    """One prompt per (functionality, target group); functionalities without
    ``[identity]`` in their segment get one cell with no target."""
    out = []
    for func in functionalities:
        demo = draw_demonstration(suite, func, seed)
        groups = targets if "[identity]" in spec["segments"][func] else [None]
        for target in groups:
            out.append(build(spec, func, target, list(slurs.get(target or "", [])), language, n, demo))
    return out
