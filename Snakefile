# Functional testing of hate-speech detection models across languages.
# The stages come from one registry (src/hatecheck_pipeline/pipeline), which
# also renders dvc.yaml: both runners execute the same DAG.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "params.yaml"


validate(config, "workflow/schemas/params.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/stages.smk"


rule all:
    default_target: True
    input:
        final_targets(),
