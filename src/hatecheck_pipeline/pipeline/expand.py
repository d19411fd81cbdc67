"""Stages of the expand phase (placeholder while the redesign lands)."""


def stages(params):
    return []
