"""Stages of the expand phase (built from params; see hatecheck_pipeline.dag)."""

from __future__ import annotations

from typing import Any, Mapping

from ..dag import Stage


def stages(params: Mapping[str, Any]) -> list[Stage]:
    return []
