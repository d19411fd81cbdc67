"""Command-line layer: ``hatecheck-pipeline``, its commands in four groups
(:mod:`hatecheck_pipeline.cli.app` describes each): test a classifier
(``evaluate``, ``diff``, ``score``, ``score-llm``, ``export``,
``compare``), reproduce the papers (``repro``, ``pull``, ``fetch-data``,
``follow``, ``human-validation``), inspect (``lineage``, ``dag``) and
internals (``run STAGE``, ``docs``)."""
