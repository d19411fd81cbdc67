"""Pipeline layer: the stage declarations of every phase, the one registry
both runners (Snakemake, DVC) are rendered from. What runs them in one
workspace is the runners layer (:mod:`hatecheck_pipeline.runners`)."""
