"""Docs-site layer: the documentation's generated pages (``docs/generated/``),
rendered by ``hatecheck-pipeline docs``.

- :mod:`.runs`: a recorded run (``docs/runs/<name>/``), the files of one
  workspace copied at their paths, and :mod:`.pages`, the pages rendered
  from it (one module per page: :mod:`.results`, :mod:`.llm`,
  :mod:`.performance`, :mod:`.data`) and from the benchmark scripts'
  records (:mod:`.benchmarks`), with :mod:`.formatting` shared by them;
- :mod:`.config_reference`: the configuration reference, from the
  parameters schema and ``params.yaml``.

It reads files that stages wrote and the report's own names (the
``n/a`` cell, the contrast rows), never the stage registry: it sits above
``report`` and beside ``pipeline``, and no stage imports it, so a change
here re-runs nothing.
"""
