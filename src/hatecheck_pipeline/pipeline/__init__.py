"""Pipeline layer: the stage declarations of every phase, the one registry
both runners (Snakemake, DVC) are rendered from."""
