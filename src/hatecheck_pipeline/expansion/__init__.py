"""Suite expansion: template regeneration and extension, spelling
perturbations, LLM generation validated by NLI (GPT-HateCheck), quality
measures. Stages are declared in :mod:`hatecheck_pipeline.pipeline.expand`."""

from importlib import resources

SUITE_COLUMNS = [
    "id",
    "text",
    "label",
    "language",
    "dataset",
    "split",
    "functionality",
    "target_ident",
    "templ_id",
    "case_templ",
    "source_id",
    "generator",
]


def resource(name: str):
    """A data file shipped under ``resources/expansion``."""
    return resources.files("hatecheck_pipeline").joinpath("resources", "expansion", name)
