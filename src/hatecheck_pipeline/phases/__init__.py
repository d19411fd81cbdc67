"""Stage builders of the later phases; each module exposes ``stages(params)``."""
