# One rule per stage of the registry (src/hatecheck_pipeline/pipeline), the
# same stages `hatecheck-pipeline dag write` renders into dvc.yaml. Resources
# (threads, mem_mb, runtime in minutes, gpu) come from the stage declarations;
# the Slurm executor maps them to --cpus-per-task, --mem, -t and --gpus.
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
        threads: rule_threads(stage)
        priority: PRIORITY[stage.name]
        resources:
            mem_mb=stage.mem_mb,
            runtime=stage.runtime,
            gpu=stage.gpu,
            cpu_cores=rule_threads(stage),
        params:
            cmd=stage.cmd,
        shell:
            "{params.cmd} > {log} 2>&1"
