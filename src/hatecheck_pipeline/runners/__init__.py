"""Runners layer: what makes Snakemake and DVC run the registry's stages in
one workspace, with one record (``dvc.lock``).

- :mod:`.compose`: the parameter files Snakemake sees, the local threads and
  memory bounds, a Snakemake run recorded in ``dvc.lock``, outputs
  re-stamped to what DVC recorded, one runner at a time, stale locks;
- :mod:`.dvc_adapter`: every call into DVC (its private internals, pinned),
  and :mod:`.dvc_speedups`, optional shortcuts through them;
- :mod:`.progress`: ``hatecheck-pipeline follow``, the running stages' last
  progress lines from their logs.

It sits above ``pipeline`` (it reads the registry's stages) and below
``cli`` and ``workflow/rules/common.smk``; no stage imports it, so a change
here re-runs nothing.
"""
