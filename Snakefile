# Functional testing of hate-speech detection models across languages.
# The stages come from one registry (src/hatecheck_pipeline/dag.py), which
# also renders dvc.yaml: both runners execute the same DAG.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "params.yaml"


validate(config, "workflow/schemas/params.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/convert.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/predict.smk"
include: "workflow/rules/expand.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/bias.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        final_targets(),
