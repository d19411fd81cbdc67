# One rule per stage of the registry (src/hatecheck_pipeline/pipeline), the
# same stages `hatecheck-pipeline dag write` renders into dvc.yaml.
for stage in STAGES:

    rule:
        name:
            stage.name
        input:
            stage.deps,
            params=hc_runners.params_file(stage),
        output:
            rule_outputs(stage),
        log:
            stage.log,
        conda:
            "../envs/hatecheck.yaml"
        threads: min(stage.threads, CORES)
        resources:
            mem_mb=stage.mem_mb,
            gpu=stage.gpu,
            cpu_cores=min(stage.threads, CORES),
        params:
            cmd=stage.cmd,
        shell:
            "{params.cmd} > {log} 2>&1"
