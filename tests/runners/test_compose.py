"""The glue that makes Snakemake and DVC compose: parameter files tracked by
content, the lock record, and one runner at a time per workspace."""

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import REPO

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.stage import Stage, out
from hatecheck_pipeline.runners import compose


def stage(name="prepare_x", key="datasets.x"):
    return Stage(name, "prepare", "m:f", outputs={"o": out(f"data/{name}.parquet")}, params={"settings": key})


PARAMS = {"datasets": {"x": {"seed": 1}}}


def write_lock(workdir, seed):
    (workdir / "dvc.lock").write_text(
        f"schema: '2.0'\nstages:\n  prepare_x:\n    cmd: c\n    params:\n      params.yaml:\n        datasets.x:\n          seed: {seed}\n"
    )


def test_params_file_changes_only_with_the_values(workdir):
    s = stage()
    assert compose.sync_params_files([s], PARAMS) == ["prepare_x"]
    path = workdir / compose.params_file(s)
    assert json.loads(path.read_text()) == {"datasets.x": {"seed": 1}}
    before = path.stat().st_mtime_ns
    time.sleep(0.01)
    assert compose.sync_params_files([s], PARAMS) == []  # same values: untouched
    assert path.stat().st_mtime_ns == before
    assert compose.sync_params_files([s], {"datasets": {"x": {"seed": 2}}}) == ["prepare_x"]
    assert path.stat().st_mtime > before / 1e9 - 1


def test_values_the_lock_already_records_are_no_reason_to_run(workdir):
    """After `dvc repro` with new values, Snakemake must not redo the stage."""
    s = stage()
    compose.sync_params_files([s], PARAMS)
    write_lock(workdir, 2)  # DVC ran the stage with seed 2
    assert compose.sync_params_files([s], {"datasets": {"x": {"seed": 2}}}) == []
    assert (workdir / compose.params_file(s)).stat().st_mtime == compose.OLD
    assert compose.sync_params_files([s], {"datasets": {"x": {"seed": 3}}}) == ["prepare_x"]  # not recorded: run


def test_stages_that_ran_are_read_from_their_logs(workdir):
    a, b = stage("a"), stage("b")
    (workdir / "logs").mkdir()
    (workdir / a.log).write_text("old")
    os.utime(workdir / a.log, (1, 1))
    started = time.time() - 1
    (workdir / b.log).write_text("new")
    assert [s.name for s in compose.stages_that_ran([a, b], started)] == ["b"]


def test_a_live_dvc_stage_run_blocks_snakemake_naming_it(workdir):
    """The rwlock as DVC itself writes it around a stage's command."""
    from dvc.fs import LocalFileSystem
    from dvc.rwlock import rwlock

    (workdir / ".dvc" / "tmp").mkdir(parents=True)
    with rwlock(str(workdir / ".dvc/tmp"), LocalFileSystem(), "dvc repro prepare_x", [], [str(workdir / "data/x")], False):
        rw = json.loads((workdir / ".dvc/tmp/rwlock").read_text())
        with pytest.raises(PipelineError, match=r"rwlock: DVC is running a stage.*dvc repro prepare_x"):
            compose.hold_dvc_lock()
    rw["write"][str(workdir / "data/x")]["pid"] = 2**22 + 12345  # a dead process: stale entry, ignored
    (workdir / ".dvc/tmp/rwlock").write_text(json.dumps(rw))
    assert compose.hold_dvc_lock() is True
    compose.release_dvc_lock()


def test_the_dvc_repository_lock_held_elsewhere_blocks_snakemake(workdir):
    (workdir / ".dvc" / "tmp").mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import time; from dvc.lock import make_lock\n"
                "l = make_lock('.dvc/tmp/lock', tmp_dir='.dvc/tmp'); l.lock(); print('held', flush=True); time.sleep(30)"
            ),
        ],
        cwd=workdir,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(PipelineError, match=r"\.dvc/tmp/lock: DVC or another Snakemake run is working"):
            compose.hold_dvc_lock()
    finally:
        holder.kill()
        holder.wait()
    assert compose.hold_dvc_lock() is True
    compose.release_dvc_lock()


def test_no_dvc_project_no_lock(workdir):
    assert compose.hold_dvc_lock() is False


def test_stale_snakemake_locks_go_only_when_no_run_is_alive(workdir):
    """A run killed with kill -9 leaves .snakemake/locks behind; they are
    removed once no run of the workspace holds its live-run file."""
    locks = workdir / ".snakemake/locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("data/x\n")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from hatecheck_pipeline.runners import compose\n"
                "compose.register_run(); print('live', flush=True); time.sleep(30)"
            ),
        ],
        cwd=workdir,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "live"
        assert compose.live_runs() == [str(holder.pid)]
        assert compose.clear_stale_locks() == []  # a live run: its locks stay
        assert (locks / "0.input.lock").exists()
    finally:
        holder.kill()
        holder.wait()
    assert compose.live_runs() == []  # the dead run's file is gone
    assert compose.clear_stale_locks() == [".snakemake/locks/0.input.lock"]
    assert not list(locks.iterdir())


def test_a_float_without_a_dot_in_a_lock_dvc_wrote_matches_params(workdir):
    """DVC writes params.yaml's `5.0e-5` into dvc.lock as `5e-05` (YAML 1.2: a
    float; YAML 1.1: a string): read as DVC wrote it, the lock matches the
    params, so Snakemake has nothing to redo after `dvc repro`."""
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*dvc, "init", "-q"], check=True)
    (workdir / "params.yaml").write_text("training:\n  recipes:\n    r:\n      lr: 5.0e-5\n      epochs: 2\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n  train_x:\n    cmd: echo done > out.txt\n    params:\n    - training.recipes.r\n    outs:\n    - out.txt\n"
    )
    subprocess.run([*dvc, "repro", "-q"], check=True)
    assert "lr: 5e-05" in (workdir / "dvc.lock").read_text()  # how DVC writes it
    s = Stage("train_x", "train", "m:f", outputs={"o": out("out.txt")}, params={"recipe": "training.recipes.r"})
    params = {"training": {"recipes": {"r": {"lr": 5.0e-5, "epochs": 2}}}}
    assert compose.locked_params()["train_x"] == {"training.recipes.r": {"lr": 5.0e-5, "epochs": 2}}
    assert compose.sync_params_files([s], params) == []  # recorded by DVC: no reason to run
    assert (workdir / compose.params_file(s)).stat().st_mtime == compose.OLD


def test_threads_are_capped_by_the_local_cores_only():
    """On Slurm a login node with fewer cores must not shrink every job."""
    assert compose.rule_threads(8, 2, local=True) == 2
    assert compose.rule_threads(8, 2, local=False) == 8
    assert compose.rule_threads(1, 16, local=True) == 1
    rules = (REPO / "workflow/rules/stages.smk").read_text()
    assert "threads: rule_threads(stage)" in rules and "cpu_cores=rule_threads(stage)" in rules
    assert "CORES)" not in rules  # no other cap of a rule's threads


def test_a_failed_stage_log_reaches_the_terminal_through_the_default_profile(workdir):
    """The default workflow profile prints a failed job's log: the stage's
    one-line error is on the terminal, not only in logs/<stage>.log."""
    import shutil

    shutil.copytree(REPO / "profiles", workdir / "profiles")
    message = "error: data/raw/x.csv: sha256 0123 does not match the expected abcd"
    (workdir / "message.txt").write_text(message + "\n")  # not in the rule's command, which Snakemake prints
    (workdir / "Snakefile").write_text(
        'rule ingest_x:\n    output: "data/x.csv"\n    log: "logs/ingest_x.log"\n    shell: "cat message.txt > {log}; exit 1"\n'
    )
    snakemake = os.path.join(os.path.dirname(sys.executable), "snakemake")
    done = subprocess.run([snakemake, "--cores", "1", "data/x.csv"], capture_output=True, text=True)
    assert done.returncode == 1
    assert message in done.stdout + done.stderr


def test_dvc_follows_the_active_profile_only(workdir):
    """dvc.yaml declares `profiles.${profile}.<key>` for each key the stage
    reads (as `dag write` renders it): DVC resolves it from params.yaml, so
    editing an inactive profile, or a key of the active one the stage does
    not read, leaves the stage up to date, while a change of a key it reads
    or a switch of profile makes it stale."""
    from hatecheck_pipeline.core.stage import profile_params
    from hatecheck_pipeline.pipeline.registry import to_dvc

    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*dvc, "init", "-q"], check=True)
    params = "profile: a\nprofiles:\n  a: {max_epochs: 1, lr: 5.0e-5}\n  b: {max_epochs: 2, lr: 5.0e-5}\n"
    (workdir / "params.yaml").write_text(params)
    s = Stage("train_x", "train", "m:f", outputs={"o": out("out.txt")}, params=profile_params({"profile": "a"}, ["max_epochs"]))
    doc = to_dvc([s])
    assert doc["stages"]["train_x"]["params"] == ["profile", "profiles.${profile}.max_epochs"]
    doc["stages"]["train_x"]["cmd"] = "echo done > out.txt"
    import yaml

    (workdir / "dvc.yaml").write_text(yaml.safe_dump(doc))
    subprocess.run([*dvc, "repro", "-q"], check=True)
    assert compose.locked_params()["train_x"] == {"profile": "a", "profiles.a.max_epochs": 1}
    status = lambda: subprocess.run([*dvc, "status", "--json"], capture_output=True, text=True, check=True).stdout  # noqa: E731
    (workdir / "params.yaml").write_text(params.replace("max_epochs: 2", "max_epochs: 3"))  # inactive profile
    assert json.loads(status()) == {}
    (workdir / "params.yaml").write_text(params.replace("a: {max_epochs: 1, lr: 5.0e-5}", "a: {max_epochs: 1, lr: 1.0e-4}"))
    assert json.loads(status()) == {}  # a key of the active profile the stage does not read
    assert compose.sync_params_files([s], {"profile": "a", "profiles": {"a": {"max_epochs": 1, "lr": 1.0e-4}, "b": {}}}) == []
    (workdir / "params.yaml").write_text(params.replace("a: {max_epochs: 1,", "a: {max_epochs: 4,"))
    assert "train_x" in json.loads(status())  # a key it reads
    (workdir / "params.yaml").write_text(params.replace("profile: a", "profile: b"))  # a switch
    assert "train_x" in json.loads(status())


def test_outputs_dvc_records_as_up_to_date_get_times_after_their_inputs(workdir):
    """After `dvc pull` files carry the time DVC wrote them, in any order:
    stages DVC's record calls up to date get output times after their
    inputs in DAG order (Snakemake agrees); a changed stage keeps its times."""
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*dvc, "init", "-q"], check=True)
    (workdir / "in.txt").write_text("raw\n")
    (workdir / "params.yaml").write_text("x: 1\n")
    (workdir / "dvc.yaml").write_text(
        "stages:\n  a:\n    cmd: cp in.txt a.txt\n    deps: [in.txt]\n    outs: [a.txt]\n"
        "  b:\n    cmd: cp a.txt b.txt\n    deps: [a.txt]\n    outs: [b.txt]\n"
    )
    subprocess.run([*dvc, "repro", "-q"], check=True)
    a = Stage("a", "prepare", "m:f", inputs={"i": "in.txt"}, outputs={"o": out("a.txt")})
    b = Stage("b", "prepare", "m:f", inputs={"i": "a.txt"}, outputs={"o": out("b.txt")})
    compose.sync_params_files([a, b], {})
    assert compose.align_to_record([a, b]) == []  # consistent already: no DVC call
    os.utime("b.txt", (100, 100))  # pulled first
    os.utime("a.txt", (200, 200))  # pulled second: b looks older than its input
    before = time.time()
    assert compose.align_to_record([a, b]) == ["a", "b"]
    assert os.path.getmtime("in.txt") < os.path.getmtime("a.txt") < os.path.getmtime("b.txt")
    # never in the future: a stage run right after this writes newer outputs
    assert os.path.getmtime("b.txt") <= before
    os.utime("b.txt", (100, 100))
    os.utime("a.txt", (200, 200))
    # the registry's order is not the DAG's (a prediction on an expanded
    # suite is listed before the expansion): upstream is stamped first anyway,
    # else b stays older than a and every run pays a `dvc status` again
    assert compose.align_to_record([b, a]) == ["a", "b"]
    assert os.path.getmtime("a.txt") < os.path.getmtime("b.txt")
    assert compose.align_to_record([b, a]) == []
    (workdir / "a.txt").write_text("edited\n")  # a's output edited: both stages changed for DVC
    os.utime("b.txt", (100, 100))
    assert compose.align_to_record([a, b]) == []
    assert os.path.getmtime("b.txt") == 100  # b keeps its time: it re-runs in Snakemake too
    subprocess.run([*dvc, "repro", "-q"], check=True)
    os.utime("b.txt", (100, 100))
    os.utime("a.txt", (200, 200))
    # a's values overridden on Snakemake's command line (DVC, reading
    # params.yaml, calls it up to date): a keeps its times and re-runs
    assert compose.align_to_record([a, b], skip=["a"]) == ["b"]
    assert os.path.getmtime("a.txt") == 200


def test_a_successful_run_records_what_a_killed_run_finished(workdir, monkeypatch):
    """A Snakemake run killed part-way records nothing in dvc.lock; the next
    successful run records, besides what it ran, the stages of its DAG that
    the killed run finished (else `lineage` finds no record of them)."""
    committed = []
    monkeypatch.setattr(compose.dvc_adapter, "commit_stages", lambda names, overrides=None: committed.extend(names))
    stages = {n: stage(n) for n in ["done_before", "recorded", "ran_now", "half_done", "not_in_run"]}
    (workdir / "logs").mkdir()
    (workdir / "data").mkdir()
    for name, s in stages.items():
        (workdir / s.log).write_text("log")
        if name != "half_done":  # killed before writing its output
            (workdir / f"data/{name}.parquet").write_text("x")
    (workdir / "dvc.lock").write_text("schema: '2.0'\nstages:\n  recorded:\n    cmd: c\n")
    os.utime(workdir / "dvc.lock", (100, 100))
    os.utime(workdir / stages["recorded"].log, (50, 50))  # ran before the lock was written
    for name in ["done_before", "half_done", "not_in_run"]:
        os.utime(workdir / stages[name].log, (10, 10))  # earlier (killed) run
    started = time.time() - 1
    in_run = ["done_before", "recorded", "ran_now", "half_done"]
    ran = compose.record_in_dvc(stages.values(), started, in_run=in_run)
    assert ran == committed == ["ran_now", "done_before"]
    # a stage the lock records but whose log is newer (re-ran in the killed run) is recorded again
    (workdir / "dvc.lock").write_text(  # what the commit wrote
        "schema: '2.0'\nstages:\n" + "".join(f"  {n}:\n    cmd: c\n" for n in ["recorded", *committed])
    )
    os.utime(workdir / "dvc.lock", (1000, 1000))
    committed.clear()
    for name in ["ran_now", "done_before"]:
        os.utime(workdir / stages[name].log, (900, 900))
    os.utime(workdir / stages["recorded"].log, (2000, 2000))
    assert compose.record_in_dvc(stages.values(), time.time() + 10, in_run=in_run) == ["recorded"]
    assert compose.record_in_dvc(stages.values(), time.time() + 10) == []  # without the DAG: only what ran


def test_the_snakemake_internals_relied_on_hold_for_the_installed_snakemake(workdir):
    """A real run of the installed Snakemake: at onstart the scheduler has a
    job rate limiter and disable_job_rate_limiter removes it; while a job
    runs, Snakemake's locks are in SNAKEMAKE_LOCKS; a directory output gets
    its .snakemake_timestamp; at onsuccess dag_job_names names every job of
    the DAG, the up-to-date ones included. Each check names its entry of
    SNAKEMAKE_RELIED_ON."""
    relied = compose.SNAKEMAKE_RELIED_ON
    (workdir / "done.txt").write_text("up to date\n")
    (workdir / "Snakefile").write_text(f"""
import json, sys
sys.path.insert(0, {str(REPO / "src")!r})
from hatecheck_pipeline.runners import compose

seen = {{}}

onstart:
    seen["local_exec"] = workflow.local_exec
    seen["had_limiter"] = workflow.scheduler.job_rate_limiter is not None
    seen["disabled"] = compose.disable_job_rate_limiter(workflow)
    seen["limiter_after"] = repr(workflow.scheduler.job_rate_limiter)

onsuccess:
    seen["dag"] = sorted(compose.dag_job_names(workflow))
    open("seen.json", "w").write(json.dumps(seen))

rule all:
    input: "d", "done.txt"

rule old:
    output: "done.txt"
    shell: "echo never > {{output}}"

rule make_d:
    output: directory("d")
    shell: "mkdir -p {{output}} && ls {compose.SNAKEMAKE_LOCKS} > locks.txt"
""")
    os.utime(workdir / "Snakefile", (1, 1))
    snakemake = os.path.join(os.path.dirname(sys.executable), "snakemake")
    done = subprocess.run([snakemake, "--cores", "1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads((workdir / "seen.json").read_text())
    assert seen["local_exec"] is True, relied[("workflow", "local_exec")]
    assert seen["had_limiter"] and seen["disabled"] and seen["limiter_after"] == "None", relied[("workflow.scheduler", "job_rate_limiter")]
    assert seen["dag"] == ["all", "make_d", "old"], relied[("workflow.dag", "jobs")]
    assert (workdir / "locks.txt").read_text().split(), relied[(compose.SNAKEMAKE_LOCKS, "*")]
    assert (workdir / "d/.snakemake_timestamp").is_file(), relied[("directory()", ".snakemake_timestamp")]


def test_a_snakemake_without_the_job_rate_limiter_warns_once(monkeypatch):
    """Setting an attribute Snakemake no longer has would silently do
    nothing: one warning instead, and the run goes on as it is."""
    from types import SimpleNamespace

    monkeypatch.setattr(compose, "_WARNED", set())
    renamed = SimpleNamespace(local_exec=True, scheduler=SimpleNamespace(rate_limiter="kept"))
    with pytest.warns(RuntimeWarning, match="no job_rate_limiter"):
        assert compose.disable_job_rate_limiter(renamed) is False
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compose.disable_job_rate_limiter(renamed) is False  # warned once
        assert compose.disable_job_rate_limiter(SimpleNamespace(local_exec=False)) is False  # Slurm: left as it is
    assert not hasattr(renamed.scheduler, "job_rate_limiter")
    present = SimpleNamespace(local_exec=True, scheduler=SimpleNamespace(job_rate_limiter=object()))
    assert compose.disable_job_rate_limiter(present) is True and present.scheduler.job_rate_limiter is None
