"""Expanded suites as registered suites (``suites.EXTRA_SUITES``).

An expanded suite reads ``data/expanded/<table>/<scheme>.parquet``
(:func:`paths.expanded_processed`) instead of ``data/processed``; its id
column is ``id`` and ``source_id`` links a perturbed case to its source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


from .. import paths
from ..suites import Suite


@dataclass(frozen=True)
class ExpandedSuite(Suite):
    def table(self, scheme: str) -> str:
        return paths.expanded_processed(self.dataset, scheme)

    def raw_table(self) -> str:
        return paths.expanded_table(self.dataset)


def perturbed_tables(params: Mapping[str, Any]) -> dict[str, str | None]:
    """expanded table name -> language filter (None: whole table)."""
    exp = params["expansion"]["perturb"]
    out: dict[str, str | None] = {}
    if "hatecheck" in exp["suites"]:
        out["perturbed_hatecheck"] = None
    for lang in params["datasets"]["mhc"]["languages"]:
        if "mhc" in exp["suites"]:
            out[f"perturbed_mhc_{lang}"] = None
    return out


def tables(params: Mapping[str, Any]) -> dict[str, list[Suite]]:
    """Registered name -> suites (each suite's dataset = its expanded table)."""
    exp = params["expansion"]
    out: dict[str, list[Suite]] = {
        "perturbed_hatecheck": [ExpandedSuite("perturbed_hatecheck", "perturbed_hatecheck", "id")]
        if "hatecheck" in exp["perturb"]["suites"] else [],
        "perturbed_mhc": [ExpandedSuite(f"perturbed_mhc_{lang}", f"perturbed_mhc_{lang}", "id")
                          for lang in params["datasets"]["mhc"]["languages"]] if "mhc" in exp["perturb"]["suites"] else [],
        "extended": [ExpandedSuite(f"extended_{lang}", "extended", "id", language=lang)
                     for lang in exp["templates"]["new_terms_languages"]] if exp["templates"]["new_terms"] else [],
        "gpt_hatecheck": [ExpandedSuite(f"gpt_hatecheck_{lang}", f"gpt_hatecheck_{lang}", "id")
                          for lang in exp["llm"]["languages"]] if exp["llm"]["enabled"] else [],
    }
    return out
