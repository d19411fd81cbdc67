# Helpers only: the rules are built from the stage registry in stages.smk.
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from hatecheck_pipeline.core import config as hc_config
from hatecheck_pipeline.core import yamlio as hc_yaml
from hatecheck_pipeline.core.cpu import machine_cores
from hatecheck_pipeline.pipeline import registry as hc_registry
from hatecheck_pipeline.runners import compose as hc_runners
from hatecheck_pipeline.runners import schedule as hc_schedule

STARTED = time.time()
# Locks left by a killed run (kill -9, power loss) would stop every later run
# with "Directory cannot be locked": removed when no run of this workspace is
# alive. Then this process marks itself live (before Snakemake locks).
for stale in hc_runners.clear_stale_locks():
    print(
        f"removed a stale Snakemake lock left by a killed run: {stale}", file=sys.stderr
    )
hc_runners.register_run()
# Values given with `snakemake --config key=value` reach every stage command
# through the environment (hatecheck-pipeline reads HATECHECK_PIPELINE_SET),
# so both runners see the same parameters and the commands stay the same.
# params.yaml as the loader reads it (YAML 1.2's floats), once: Snakemake's
# own parse reads DVC's `3e-05` as a string, and the overrides are what
# differs from the file.
PARAMS_AS_WRITTEN = hc_yaml.read_yaml(Path(hc_config.PARAMS_FILE))
try:
    PARAMS = hc_config.apply_and_validate(
        hc_yaml.with_yaml12_floats(config, PARAMS_AS_WRITTEN),
        NESTED_OVERRIDES,
        Path(hc_config.SCHEMA_FILE),
        "params.yaml with snakemake --config",
    )
except hc_config.ConfigError as exc:
    # One line, before any job starts (raised, Snakemake would add three
    # lines of traceback into this file and the config module).
    print(f"error: {exc}", file=sys.stderr)
    raise SystemExit(1)
OVERRIDES = hc_config.flat_diff(PARAMS_AS_WRITTEN, PARAMS)
os.environ[hc_config.OVERRIDES_ENV] = json.dumps(OVERRIDES)
STAGES = hc_registry.build_stages(PARAMS)
# Each stage's code fingerprint (code/<stage>.txt: its modules with the hash of
# their code without comments, formatting or docstrings), a plain input of its
# rule, rewritten only when that code changed: a comment edit re-runs nothing.
# (The main process only: a cluster job re-reads this file mid-run.)
if workflow.is_main_process:
    hc_registry.sync_fingerprints(STAGES)
# Ready jobs start longest expected work ahead first (each rule's priority:
# its stage's upward rank from recorded stage times, runners/schedule.py).
PRIORITY = hc_schedule.priorities(STAGES, PARAMS["profile"])
CORES = machine_cores()
# Never more threads at once than the machine has, whatever --cores says, and
# never stages whose declared memory together exceeds what it has available
# (HATECHECK_PIPELINE_MEM_MB or --resources mem_mb=... overrides; local runs
# only: on a cluster the scheduler places jobs on its nodes).
hc_runners.register_local_resources(workflow, CORES)
# One file per stage with its parameter values, rewritten only when they change.
PARAMS_CHANGED = hc_runners.sync_params_files(STAGES, PARAMS)
# Outputs DVC pulled or checked out carry the time they were written: where
# DVC's record says a stage is up to date, its outputs get times after its
# inputs, so that Snakemake agrees (docs/sharing.md).
# (The main process only: a cluster job re-reads this file mid-run.)
if workflow.is_main_process:
    hc_runners.align_to_record(
        STAGES,
        echo=lambda line: print(line, file=sys.stderr),
        skip=PARAMS_CHANGED,
        overrides=OVERRIDES,
    )


def rule_threads(stage):
    # capped by this machine's cores only when the jobs run here (not on Slurm)
    return hc_runners.rule_threads(stage.threads, CORES, workflow.local_exec)


def rule_outputs(stage):
    return [directory(o.path) if o.directory else o.path for o in stage.snakemake_outs]


def final_targets():
    return hc_registry.final_targets(PARAMS)


onstart:
    # DVC's repository lock, held for the run: `dvc repro` meanwhile refuses,
    # and this run refuses (one line) while DVC or another run holds it.
    try:
        hc_runners.hold_dvc_lock()
    except hc_runners.PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1)
    # No job rate limiter for local jobs (runners/compose.disable_job_rate_limiter).
    hc_runners.disable_job_rate_limiter(workflow)


onerror:
    hc_runners.release_dvc_lock()


onsuccess:
    hc_runners.release_dvc_lock()
    # Record the stages that ran in dvc.lock (outputs cached, nothing re-run),
    # and those of this run's DAG that a killed earlier run finished unrecorded,
    # with the parameter values they ran with (--config overrides included).
    ran = hc_runners.record_in_dvc(
        STAGES,
        STARTED,
        in_run=hc_runners.dag_job_names(workflow),
        overrides=OVERRIDES,
    )
    if ran:
        print(f"dvc.lock: recorded {len(ran)} stage(s) that ran", file=sys.stderr)


def gpt_hatecheck_targets():
    """The GPT-HateCheck branch's reports (the named target `gpt_hatecheck`)."""
    from hatecheck_pipeline.pipeline.report import gpt_hatecheck_files

    return [p for k, p in gpt_hatecheck_files(PARAMS).items() if k != "requests"]
