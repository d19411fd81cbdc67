"""Command-line layer: ``hatecheck-pipeline`` (run STAGE, score, compare,
lineage, dag)."""
