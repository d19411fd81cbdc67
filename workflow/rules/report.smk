# Phase "report": one rule per registry stage of this phase.
for stage in phase_stages("report"):

    rule:
        name:
            stage.name
        input:
            stage.deps,
        output:
            stage.all_outs,
        params:
            values=stage.param_values(PARAMS),
            cmd=command(stage),
        log:
            stage.log,
        resources:
            **dict(stage.resources),
        shell:
            "{params.cmd} > {log} 2>&1"
