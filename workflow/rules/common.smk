# Helpers and target functions only: the rules of each phase are built from
# the stage registry in their own .smk file.
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from hatecheck_pipeline import config as hc_config
from hatecheck_pipeline import dag as hc_dag

# Values given with `snakemake --config key=value` reach every stage command
# as `--set key=value`, so both runners see the same parameters.
OVERRIDES = hc_config.flat_diff(hc_config.read_yaml(Path("params.yaml")), config)
PARAMS = hc_config.apply_and_validate(
    config, {}, Path("workflow/schemas/params.schema.yaml"), "snakemake config"
)
STAGES = hc_dag.build_stages(PARAMS)


def phase_stages(phase):
    return [s for s in STAGES if s.phase == phase]


def command(stage):
    sets = " ".join(
        f"--set {shlex.quote(f'{k}={hc_config.dumps(v)}')}"
        for k, v in OVERRIDES.items()
    )
    return stage.cmd.replace(
        "hatecheck-pipeline", f"hatecheck-pipeline {sets}".strip(), 1
    )


def rule_outputs(stage):
    return [directory(o) if o in stage.directories else o for o in stage.snakemake_outs]


def final_targets():
    return hc_dag.final_targets(PARAMS)
