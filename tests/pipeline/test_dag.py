"""One DAG, two runners: dvc.yaml and the Snakemake rules agree."""

import dataclasses
import subprocess

import pytest
import yaml
from conftest import REPO
from pipeline_utils import BIN, dry_run_jobs

from hatecheck_pipeline.core.stage import Stage, flatten, out, signature_mismatch
from hatecheck_pipeline.pipeline import registry as dag


def test_dvc_yaml_is_rendered_from_the_registry():
    proc = subprocess.run([str(BIN / "hatecheck-pipeline"), "dag", "write", "--check"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_snakemake_rules_match_dvc_stages(params):
    """The same stages, outputs and deps, but for one stage of dvc.yaml only:
    code_fingerprints, which refreshes the code fingerprint files for DVC.
    Snakemake refreshes them when it reads the Snakefile (common.smk), so
    that they are plain inputs of its rules, rewritten only when code
    changed; a rule making them would make every stage depend on a job."""
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    jobs = dry_run_jobs(REPO, "all", forceall=True)
    jobs.pop("all", None)
    assert set(dvc) - set(jobs) == {dag.FINGERPRINT_STAGE}, "stage names differ"
    assert set(jobs) <= set(dvc), "stage names differ"
    fingerprints = dvc.pop(dag.FINGERPRINT_STAGE)
    assert {next(iter(o)) for o in fingerprints["outs"]} == {f"code/{n}.txt" for n in dvc}
    assert all(o[next(iter(o))] == {"cache": False, "persist": True} for o in fingerprints["outs"])
    for name, entry in dvc.items():
        outs = {next(iter(o)) if isinstance(o, dict) else o for key in ("outs", "metrics", "plots") for o in entry.get(key, [])}
        assert jobs[name]["output"] == outs, name
        # checkpoints (optimiser state per epoch) are no output of either runner:
        # Snakemake would delete them before a re-run, DVC would cache and push them
        assert not any("checkpoints" in o for o in outs), name
        params_file = f".snakemake/hatecheck-params/{name}.json"  # Snakemake's view of the stage's params
        assert jobs[name]["input"] == set(entry["deps"]) | {params_file}, name
        assert f"code/{name}.txt" in entry["deps"] and not [d for d in entry["deps"] if d.endswith(".py")], name


def test_the_report_is_downstream_of_every_stage():
    """The main job builds every stage of dvc.yaml: after it, a plain
    `dvc status` is clean and a plain `dvc repro` after a parameter change
    runs only the stages that read that parameter (no stage left unbuilt)."""
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    jobs = dry_run_jobs(REPO, "reports/mhc_xtc.html", forceall=True)
    assert sorted(set(dvc) - set(jobs)) == [dag.FINGERPRINT_STAGE]  # Snakemake's are refreshed at parse time


def test_each_stage_declares_the_params_snakemake_tracks(params):
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for s in dag.build_stages(params):
        declared = set()
        for item in dvc[s.name].get("params", []):
            if isinstance(item, dict):
                declared |= {f"{f}:{k}" for f, keys in item.items() for k in keys}
            else:
                declared.add(item.replace("profiles.${profile}", f"profiles.{params['profile']}"))  # DVC resolves it
        assert declared == set(s.param_values(params)), s.name


def test_stages_depend_on_the_active_profile_only(params):
    """Editing an inactive profile changes no stage's parameter values (both
    runners: Snakemake's params files, DVC's params); a switch of profile
    changes every train and predict stage's."""
    import copy

    from hatecheck_pipeline.core.stage import get_key

    assert params["profile"] != "paper"
    edited = copy.deepcopy(params)
    edited["profiles"]["paper"]["max_epochs"] = 99  # an inactive profile
    before = {s.name: s.param_values(params) for s in dag.build_stages(params)}
    assert before == {s.name: s.param_values(edited) for s in dag.build_stages(edited)}
    assert not any(k == "profiles" or k == f"profiles.{params['profile']}" for values in before.values() for k in values)
    switched = {**params, "profile": "paper"}
    after = {s.name: s.param_values(switched) for s in dag.build_stages(switched)}
    for name in before:
        if name.startswith(("train_", "predict_")):
            assert after[name] != before[name], name
            read = {k: v for k, v in after[name].items() if k.startswith("profiles.")}
            assert read and all(k.startswith("profiles.paper.") for k in read), name
            assert read == {k: get_key(params["profiles"]["paper"], k[len("profiles.paper.") :]) for k in read}, name
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    train = dvc["train_XTC"]["params"]
    assert "profiles.${profile}.max_epochs" in train and "profiles.${profile}.base_models.xlmt" in train
    assert not {"profiles", "profiles.${profile}", "profiles.${profile}.base_models.bert"} & set(train)


def test_a_profile_key_re_runs_only_the_stages_that_read_it(params):
    """Each stage declares the keys of the active profile its function
    reads, not the whole profile: a change of the evaluation's case cap
    leaves every training stage up to date, and a change of the epoch cap
    re-runs training only (downstream stages re-run on their inputs)."""
    import copy

    active = params["profile"]
    before = {s.name: s.param_values(params) for s in dag.build_stages(params)}

    def changed_by(key: str, value: object) -> set[str]:
        edited = copy.deepcopy(params)
        edited["profiles"][active][key] = value
        return {s.name for s in dag.build_stages(edited) if s.param_values(edited) != before[s.name]}

    cases = changed_by("max_cases_per_suite", 7)
    assert cases and not any(n.startswith("train_") for n in cases)
    assert {n.split("_")[0] for n in cases} <= {"predict", "score", "target", "heldout"}, sorted(cases)
    epochs = changed_by("max_epochs", 1 + (params["profiles"][active]["max_epochs"] or 0))
    assert epochs and all(n.startswith("train_") for n in epochs), sorted(epochs)
    # the CrowS-Pairs cap: the CrowS-Pairs stages and the WinoBias ones (the same scorers)
    assert changed_by("crows_max_pairs", 3) == {n for n in before if n.startswith(("crows_pairs_", "winobias_"))}


def test_every_profile_defines_every_key_a_stage_reads(params):
    """dvc.yaml's ``profiles.${profile}.<key>`` is resolved under whichever
    profile is active: each profile must set every declared key (DVC stops
    on a missing one)."""
    for name in params["profiles"]:
        under = {**params, "profile": name}
        for s in dag.build_stages(under):
            s.param_values(under)  # raises ConfigError naming a missing key


def test_the_profile_argument_holds_the_declared_keys_only(params):
    """The function of a stage reading the profile gets one Profile: the
    active profile's name and only the keys the stage declares; reading
    another one is an error naming the stage and the key."""
    from hatecheck_pipeline.core.profile import ConfigError, Profile

    active = params["profile"]
    train = next(s for s in dag.build_stages(params) if s.name == "train_XTC")
    kwargs = train.arguments(params)
    prof = kwargs["profile"]
    assert isinstance(prof, Profile) and "profiles" not in kwargs
    assert prof.name == active and prof["max_epochs"] == params["profiles"][active]["max_epochs"]
    assert prof["base_models"] == {"xlmt": params["profiles"][active]["base_models"]["xlmt"]}
    for read in (lambda: prof["max_cases_per_suite"], lambda: prof.get("max_cases_per_suite"), lambda: "max_cases_per_suite" in prof):
        with pytest.raises(ConfigError, match=r"train_XTC.*'max_cases_per_suite'"):
            read()
    score = next(s for s in dag.build_stages(params) if s.name.startswith("score_XTC_"))
    assert set(score.arguments(params)["profile"]) == {score.args["cap_key"]}


def test_only_the_changed_dataset_is_downstream_of_its_params(params):
    stages = dag.build_stages(params)
    for s in stages:
        if s.name.startswith("prepare_"):
            assert s.param_keys == [f"datasets.{s.name[len('prepare_') :]}"], s.name
    readers = {s.name for s in stages if any(k.startswith("datasets.davidson2017") for k in s.param_keys)}
    assert readers == {"prepare_davidson2017"}


def test_snakemake_lint_is_clean():
    proc = subprocess.run([str(BIN / "snakemake"), "--lint"], cwd=REPO, capture_output=True, text=True)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout[-3000:]


def test_dag_does_not_depend_on_the_active_profile(params):
    """`dvc exp run -S profile=...` needs no new dvc.yaml."""
    rendered = {name: dag.to_dvc(dag.build_stages({**params, "profile": name})) for name in params["profiles"]}
    first = next(iter(rendered.values()))
    assert all(doc == first for doc in rendered.values())


def test_every_stage_function_takes_exactly_its_declared_arguments(params):
    """A stage's function receives only what the stage declares: every
    declared input, output, parameter and constant is an argument, and every
    required argument is declared."""
    for s in dag.build_stages(params):
        assert signature_mismatch(s) is None, f"{s.name}: {signature_mismatch(s)}"


def _takes_its_inputs(a, out):
    return a, out


def _takes_the_gate_too(a, out, gate=None):
    return a, out, gate


def test_a_dependency_only_is_tracked_by_both_runners_but_never_passed(params):
    """An input or param named in ``deps_only`` (a data-quality result that
    must pass first, a resource file read through the package) is a dep and
    a tracked key like any other, but the function does not take it; a
    function that does take it is a mismatch (it would never be passed)."""
    run = f"{__name__}:_takes_its_inputs"
    s = Stage(
        "x",
        "evaluate",
        run,
        inputs={"a": "a.csv", "gate": "gate.json"},
        outputs={"out": out("o.json")},
        params={"key": "profile"},
        deps_only=("gate", "key"),
    )
    assert s.deps == ["a.csv", "gate.json"] and s.param_keys == ["profile"]
    assert set(s.arguments(params)) == {"a", "out"} and signature_mismatch(s) is None
    taken = Stage(
        "y",
        "evaluate",
        f"{__name__}:_takes_the_gate_too",
        inputs={"a": "a.csv", "gate": "gate.json"},
        outputs={"out": out("o.json")},
        deps_only=("gate",),
    )
    assert "declares ['gate'] a dependency only" in signature_mismatch(taken)
    with pytest.raises(ValueError, match="neither inputs nor params"):
        Stage("z", "evaluate", run, inputs={"a": "a.csv"}, outputs={"out": out("o.json")}, deps_only=("gate",))
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for stage in dag.build_stages(params):
        for name in stage.deps_only:  # the registry's dependencies only are in dvc.yaml as any dep or param
            if name in stage.inputs:
                assert set(flatten(stage.inputs[name])) <= set(dvc[stage.name]["deps"]), stage.name


def test_every_stage_command_is_the_generic_entry_point():
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert dvc.pop(dag.FINGERPRINT_STAGE)["cmd"] == dag.FINGERPRINT_CMD
    assert all(entry["cmd"] == f"hatecheck-pipeline run {name}" for name, entry in dvc.items())


def test_a_stale_fingerprint_stops_the_stage_with_one_line(tmp_path):
    """`hatecheck-pipeline run STAGE` refuses where the stage's fingerprint
    file does not describe its current code (it would record another code
    version in dvc.lock than the one that ran); `dag write --check` names it."""
    for name in ("params.yaml", "workflow/schemas/params.schema.yaml", "code/prepare_davidson2017.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((REPO / name).read_text())
    stale = (REPO / "code/prepare_davidson2017.txt").read_text().replace(" ", " 0", 1)
    (tmp_path / "code/prepare_davidson2017.txt").write_text(stale)
    proc = subprocess.run([str(BIN / "hatecheck-pipeline"), "run", "prepare_davidson2017"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "prepare_davidson2017" in proc.stderr and "hatecheck-pipeline dag write" in proc.stderr


def test_one_rule_loop_declares_threads_and_resources():
    rules = sorted((REPO / "workflow/rules").glob("*.smk"))
    assert [r.name for r in rules] == ["common.smk", "stages.smk"]
    text = (REPO / "workflow/rules/stages.smk").read_text()
    assert (
        "for stage in STAGES" in text and "threads: rule_threads(stage)" in text and "mem_mb=stage.mem_mb" in text and "cpu_cores=" in text
    )


def test_one_stage_is_found_as_the_registry_builds_it_and_a_data_stage_imports_no_later_phase(params):
    stages = dag.build_stages(params)
    for s in stages[:: max(1, len(stages) // 25)] + stages[-1:]:
        assert dag.stage_by_name(params, s.name) == dataclasses.replace(s, code=()), s.name
    probe = (
        "import sys; from hatecheck_pipeline.core.config import load_params;"
        "from hatecheck_pipeline.pipeline.registry import stage_by_name;"
        "s = stage_by_name(load_params(), 'validate_ethos');"
        "print(s.name, sorted(m for m in sys.modules if m.startswith(('hatecheck_pipeline.pipeline.',"
        " 'hatecheck_pipeline.evaluation', 'hatecheck_pipeline.models'))))"
    )
    out = subprocess.run([str(BIN / "python"), "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.split(" ", 1) == ["validate_ethos", "['hatecheck_pipeline.pipeline.data', 'hatecheck_pipeline.pipeline.registry']\n"]
