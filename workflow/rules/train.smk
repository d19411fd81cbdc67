# Phase "train": one rule per registry stage of this phase.
for stage in phase_stages("train"):

    rule:
        name:
            stage.name
        input:
            stage.deps,
        output:
            rule_outputs(stage),
        log:
            stage.log,
        conda:
            "../envs/hatecheck.yaml"
        threads: stage.threads
        resources:
            **dict(stage.resources),
        params:
            values=stage.param_values(PARAMS),
            cmd=command(stage),
        shell:
            "{params.cmd} > {log} 2>&1"
