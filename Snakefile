# Functional testing of hate-speech detection models across languages.
# The stages come from one registry (src/hatecheck_pipeline/pipeline), which
# also renders dvc.yaml: both runners execute the same DAG.
from snakemake.utils import min_version

min_version("9.0")


configfile: "params.yaml"


# Nested keys cannot be given as `--config a.b=1`; give them as
# `--config set='["datasets.davidson2017.seed=7", "profiles.smoke.max_epochs=2"]'`.
# The parameters are validated once, after the overrides, in common.smk (a
# bad value stops the run before any job with one line naming the key).
NESTED_OVERRIDES = config.pop("set", [])


include: "workflow/rules/common.smk"
include: "workflow/rules/stages.smk"


rule all:
    default_target: True
    input:
        final_targets(),


# GPT-HateCheck's reports (generation, validation, quality, the comparison of
# the models listing it): `snakemake --cores 2 gpt_hatecheck`. With the
# profile's caps lifted (docs/gpt-hatecheck.md) it generates the paper's full
# 40 messages per cell.
rule gpt_hatecheck:
    input:
        gpt_hatecheck_targets(),
