"""The active profile a stage's function receives (:class:`Profile`) and
the error of invalid parameters (:class:`ConfigError`).

A stage module imports this module, never the loader
(:mod:`hatecheck_pipeline.core.config`): the loader's schema checks and
cross-checks are no stage's code, so editing them re-runs nothing.
"""

from __future__ import annotations

from typing import Any, Mapping

from hatecheck_pipeline.core.errors import PipelineError


class ConfigError(PipelineError, ValueError):
    """Invalid parameters: names the file and the failing key."""


class Profile(dict):
    """The active profile as one value: its name (``name``) and its
    settings (base models, budgets), the mapping itself.

    A stage's function receives a profile holding only the keys its stage
    declares it reads (``core.stage.profile_params``; ``stage`` names the
    stage): reading any other key (``[]``, ``get`` or ``in``) raises, so
    that no stage can depend on a profile setting that DVC and Snakemake
    would not re-run it for. Without ``stage`` it is the whole profile, an
    ordinary mapping.

    >>> p = Profile("smoke", {"max_length": 64}, stage="train_X")
    >>> p.name, p["max_length"]
    ('smoke', 64)
    >>> p.get("max_epochs")
    Traceback (most recent call last):
    ...
    hatecheck_pipeline.core.profile.ConfigError: stage train_X: reads the profile key 'max_epochs', which it does not declare (declared: max_length); add it to the keys its stage passes to profile_params, so that a change of it re-runs the stage
    """

    def __init__(self, name: str, values: Mapping[str, Any], stage: str | None = None) -> None:
        super().__init__(values)
        self.name = name
        self.stage = stage

    def __repr__(self) -> str:
        return f"Profile({self.name!r}, {dict.__repr__(self)}{'' if self.stage is None else f', stage={self.stage!r}'})"

    def _undeclared(self, key: Any) -> ConfigError:
        return ConfigError(
            f"stage {self.stage}: reads the profile key {key!r}, which it does not declare "
            f"(declared: {', '.join(sorted(self)) or 'none'}); add it to the "
            "keys its stage passes to profile_params, so that a change of it re-runs the stage"
        )

    def __missing__(self, key: Any) -> Any:
        if self.stage is None:
            raise KeyError(key)
        raise self._undeclared(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if self.stage is None:
            return default
        raise self._undeclared(key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        if self.stage is None:
            return False
        raise self._undeclared(key)
