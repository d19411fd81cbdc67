"""The language of each suite as an ISO 639-1 code, and the suites a
scoring API (an ``http`` classifier) is not run on because its
``languages`` leave them out.

The pipeline declares a model's predict and score stages for
:func:`suites_run` (every suite :func:`~hatecheck_pipeline.suites.registry.suites_for_model`
names, less those :func:`not_run_reason` rules out); the model page and
``evaluate``'s summary list the rest with their reason
(:func:`not_run_suites`). Kept apart from the suite registry, which most
stages import: a change here re-runs only the stages that read a
suite's language.
"""

from __future__ import annotations

from typing import Any, Mapping

from hatecheck_pipeline.suites.registry import Suite, expand, suite_groups, suites_for_model

# ISO 639-1 codes of the suites' languages (MHC names its languages in English words).
LANGUAGE_CODES = {
    "english": "en",
    "arabic": "ar",
    "dutch": "nl",
    "french": "fr",
    "german": "de",
    "hindi": "hi",
    "italian": "it",
    "mandarin": "zh",
    "polish": "pl",
    "portuguese": "pt",
    "spanish": "es",
}


def language_code(language: str | None) -> str | None:
    """The ISO 639-1 code of a language name or code (None: unknown or not given).

    >>> language_code("german"), language_code("Mandarin"), language_code("en"), language_code(None), language_code("klingon")
    ('de', 'zh', 'en', None, None)
    """
    if not language:
        return None
    name = language.strip().lower()
    return name if name in LANGUAGE_CODES.values() else LANGUAGE_CODES.get(name)


def suite_language(suite: Suite) -> str | None:
    """The ISO 639-1 code of a suite's texts: HateCheck's and its
    expansions' English, an MHC language's code, an expanded table's
    language; None for a held-out set (its language is not recorded here).

    >>> from hatecheck_pipeline.suites.registry import EXPANDED, hatecheck, heldout, mhc
    >>> suite_language(hatecheck()), suite_language(mhc("mandarin")), suite_language(heldout("hateval2019_es"))
    ('en', 'zh', None)
    >>> suite_language(Suite("perturbed_mhc_german", "perturbed_mhc_german", "id", EXPANDED, source="mhc"))
    'de'
    """
    if suite.language:
        return language_code(suite.language)
    if suite.heldout:
        return None
    if suite.dataset in ("hatecheck", "perturbed_hatecheck"):
        return "en"
    for prefix in ("perturbed_mhc_", "gpt_hatecheck_"):  # the expand phase's tables, one per language
        if suite.dataset.startswith(prefix):
            return language_code(suite.dataset[len(prefix) :])
    return None


def not_run_reason(spec: Mapping[str, Any], suite: Suite) -> str | None:
    """Why a model is not run on a suite (None: it is): a scoring API whose
    ``languages`` do not include the suite's language.

    >>> from hatecheck_pipeline.suites.registry import mhc
    >>> not_run_reason({"languages": ["en", "de"]}, mhc("hindi"))
    "not run: language hi not in the API's languages (en, de)"
    >>> not_run_reason({"languages": ["en", "de"]}, mhc("german")), not_run_reason({}, mhc("hindi"))
    (None, None)
    """
    langs = spec.get("languages")
    code = suite_language(suite)
    if langs is None or code is None or code in langs:
        return None
    return f"not run: language {code} not in the API's languages ({', '.join(langs)})"


def suites_run(params: Mapping[str, Any], model: str) -> list[Suite]:
    """The suites a model is run and scored on: :func:`suites_for_model`
    less those :func:`not_run_reason` rules out."""
    spec = params["models"][model]
    return [s for s in suites_for_model(params, model) if not_run_reason(spec, s) is None]


def groups_run(params: Mapping[str, Any], model: str) -> list[tuple[str, list[Suite]]]:
    """:func:`suite_groups` less the suites :func:`not_run_reason` rules
    out (a group left empty is left out): one predict stage each."""
    spec = params["models"][model]
    groups = [(name, [s for s in suites if not_run_reason(spec, s) is None]) for name, suites in suite_groups(params, model)]
    return [(name, suites) for name, suites in groups if suites]


def not_run_suites(params: Mapping[str, Any], model: str) -> dict[str, str]:
    """suite name -> why the model is not run on it (its ``suites`` name it)."""
    spec = params["models"][model]
    named = [s for name in spec["suites"] for s in expand(name, params)]
    return {s.name: why for s in named if (why := not_run_reason(spec, s))}
