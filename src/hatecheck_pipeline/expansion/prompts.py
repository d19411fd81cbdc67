"""GPT-HateCheck prompt factory (Jin et al. 2024, section 3.1, appendix A):
the skeleton filled with one instruction segment per functionality (Table
11) and, where Table 11 lists one, its demonstration; ``[identity]`` filled
with the cell's target group and ``[slur]`` with that group's slurs from
Table 12 (:func:`table_12_slurs`, ``resources/expansion/gpt_hatecheck_slurs.yaml``).
The spec is ``resources/expansion/prompts.yaml``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from hatecheck_pipeline.expansion import resource


def load_spec(path: str | Path | None = None) -> dict[str, Any]:
    text = Path(path).read_text("utf-8") if path else resource("prompts.yaml").read_text("utf-8")
    spec = yaml.safe_load(text)
    for func, entry in spec["functionalities"].items():
        if "[slur]" in entry["segment"] + (entry.get("demonstration") or "") and "[identity]" not in entry["segment"]:
            raise ValueError(f"{path or 'prompts.yaml'}: {func}: a [slur] needs an [identity] in the segment")
    return spec


def table_12_slurs(path: str | Path | None = None) -> dict[str, list[str]]:
    """Target group -> its slurs in Table 12's order (appendix A), from
    ``resources/expansion/gpt_hatecheck_slurs.yaml`` (or ``path``). A form
    the paper censors ("b*tch") must be resolved to a word with one letter
    per ``*`` and carry a note saying where the spelling comes from; an
    uncensored form is sent as printed.

    >>> table_12_slurs()["immigrants"]
    ['wetback', 'mojado']
    """
    where = str(path or "gpt_hatecheck_slurs.yaml")
    text = Path(path).read_text("utf-8") if path else resource("gpt_hatecheck_slurs.yaml").read_text("utf-8")
    out: dict[str, list[str]] = {}
    for group in yaml.safe_load(text)["groups"]:
        target = group["target"]
        if target in out:
            raise ValueError(f"{where}: target group {target!r} listed twice")
        out[target] = []
        for entry in group["slurs"]:
            printed, slur = str(entry["printed"]), str(entry["slur"])
            if "*" in printed:
                pattern = "".join("[^\\W\\d_]" if ch == "*" else re.escape(ch) for ch in printed)
                if not re.fullmatch(pattern, slur, flags=re.IGNORECASE) or not entry.get("note"):
                    raise ValueError(
                        f"{where}: {target}: {printed!r} -> {slur!r} needs a word with one letter per "
                        "'*' and a note saying where its spelling comes from"
                    )
            elif slur != printed:
                raise ValueError(f"{where}: {target}: {printed!r} is printed uncensored but sent as {slur!r}")
            out[target].append(slur)
    return out


@dataclass(frozen=True)
class Cell:
    functionality: str
    target_ident: str | None
    language: str
    system: str
    prompt: str
    demonstration: str | None


def fill(text: str, target: str | None, slurs: Sequence[str], first_slur_only: bool = False) -> str:
    """``[identity]`` -> the target group, ``[slur]`` -> its slurs (all,
    comma-separated; or the first one, for a demonstration)."""
    if "[slur]" in text:
        if not slurs:
            raise ValueError(f"no slurs for target group {target!r} (Table 12 names none)")
        text = text.replace("[slur]", slurs[0] if first_slur_only else ", ".join(slurs))
    if "[identity]" in text:
        if not target:
            raise ValueError("an [identity] needs a target group")
        text = text.replace("[identity]", target)
    return text


def build(spec: Mapping[str, Any], functionality: str, target: str | None, slurs: Sequence[str], language: str, n: int) -> Cell:
    """The prompt of one (functionality, target group) asking for ``n`` messages."""
    entry = spec["functionalities"][functionality]
    instruction = fill(entry["segment"], target, slurs).rstrip(".")
    demo = fill(entry["demonstration"], target, slurs, first_slur_only=True) if entry.get("demonstration") else None
    block = spec["demonstration_block"].format(demonstration=demo) if demo else ""
    lang = "" if language.lower() == "english" else f" in {language.capitalize()}"
    prompt = spec["skeleton"].format(n=n, language=lang, instruction=instruction, demonstration_block=block)
    return Cell(functionality, target, language, spec["system"].strip(), prompt, demo)


def has_target(spec: Mapping[str, Any], functionality: str) -> bool:
    return "[identity]" in spec["functionalities"][functionality]["segment"]


def cells(
    spec: Mapping[str, Any],
    functionalities: Sequence[str],
    targets: Sequence[str],
    slurs: Mapping[str, Sequence[str]],
    language: str,
    n: int,
) -> list[Cell]:
    """One prompt per (functionality, target group); a functionality without
    ``[identity]`` in its segment gets one cell with no target."""
    unknown = sorted(set(functionalities) - set(spec["functionalities"]))
    if unknown:
        raise ValueError(f"functionalities without an instruction segment in the prompt spec: {unknown}")
    out = []
    for func in functionalities:
        for target in targets if has_target(spec, func) else [None]:
            out.append(build(spec, func, target, list(slurs.get(target or "", [])), language, n))
    return out
