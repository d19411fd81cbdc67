"""Every rule's resources (threads, mem_mb, runtime, gpu) come from its stage
declaration, and the params profile decides what train/predict ask a
cluster for: GPUs and a long time limit under `paper`, none on the CPU
profiles. The profiles for Snakemake exist and name the right executor."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import REPO
from pipeline_utils import BIN, copy_project, run

from hatecheck_pipeline.core import config
from hatecheck_pipeline.core.stage import PHASE_RUNTIME, Stage
from hatecheck_pipeline.pipeline import registry


def stages(profile: str) -> dict[str, Stage]:
    return {s.name: s for s in registry.build_stages(config.load_params(overrides={"profile": profile}))}


@pytest.mark.parametrize("profile", ["paper", "embedded", "smoke"])
def test_every_stage_declares_positive_resources_and_train_predict_follow_the_profile(profile):
    params = config.load_params()
    prof = params["profiles"][profile]
    for s in stages(profile).values():
        assert s.threads >= 1 and s.mem_mb >= 100 and s.runtime >= 1, s.name
        if s.phase == "train":
            assert (s.gpu, s.runtime, s.mem_mb) == (prof["gpu"], prof["train_runtime"], prof["mem_mb"]), s.name
        elif s.phase == "predict":
            # a classifier outside torch (an ONNX file, a function, an API) asks for no GPU
            kind = params["models"].get(s.args.get("model"), {}).get("kind")
            gpu = 0 if kind in ("onnx", "python", "http") else prof["gpu"]
            assert (s.gpu, s.runtime) == (gpu, prof["predict_runtime"]), s.name
        elif s.name.startswith(
            ("hatexplain_explain_", "heldout_multiclass_", "hatexplain_toxicity_")
        ):  # runs a trained transformer: the profile's GPU
            assert s.gpu == prof["gpu"] and s.runtime == PHASE_RUNTIME[s.phase], s.name
        else:
            assert s.gpu == 0 and s.runtime == PHASE_RUNTIME[s.phase], s.name


def test_paper_asks_for_gpus_and_the_cpu_profiles_do_not():
    paper, embedded = stages("paper"), stages("embedded")
    assert paper["train_XTC"].gpu == 1 and paper["predict_B-D_hatecheck"].gpu == 1
    assert embedded["train_XTC"].gpu == 0 and embedded["predict_B-D_hatecheck"].gpu == 0
    assert paper["train_XTC"].runtime > embedded["train_XTC"].runtime


def test_a_stage_without_a_runtime_gets_its_phase_default_and_an_explicit_one_wins():
    assert Stage("x", "validate", "m:f").runtime == PHASE_RUNTIME["validate"]
    assert Stage("x", "validate", "m:f", runtime=7).runtime == 7
    assert Stage("x", "some-new-phase", "m:f").runtime == 60


def test_the_snakemake_rules_carry_the_stage_resources_of_the_chosen_profile(tmp_path):
    """A dry run under `--config profile=paper` shows train's GPU and time limit
    (in a copy: a dry run writes the stages' params files)."""
    project = copy_project(tmp_path)
    out = run(
        [str(BIN / "snakemake"), "-n", "--forceall", "--cores", "1", "models/B-D/model_card.json", "--config", "profile=paper"], project
    ).stdout
    block = out[out.index("rule train_B-D:") :]
    resources = re.search(r"resources: (.*)", block).group(1)
    assert "gpu=1" in resources and "runtime=1440" in resources and "mem_mb=16000" in resources, resources
    prep = out[out.index("rule prepare_davidson2017:") :]
    assert f"runtime={PHASE_RUNTIME['prepare']}" in re.search(r"resources: (.*)", prep).group(1)


def test_the_profiles_exist_for_one_machine_and_for_slurm():
    local = yaml.safe_load((REPO / "workflow/profiles/local/config.yaml").read_text())
    slurm = yaml.safe_load((REPO / "workflow/profiles/slurm/config.yaml").read_text())
    assert "executor" not in local and local["cores"] == "all"
    assert slurm["executor"] == "slurm"
    assert slurm["slurm-status-command"] == "squeue"  # works without slurmdbd
    assert set(slurm["default-resources"]) >= {"mem_mb", "runtime"}


def test_the_default_profile_leaves_out_only_the_params_trigger_which_would_see_nothing_but_the_command():
    default = yaml.safe_load((REPO / "profiles/default/config.yaml").read_text())
    assert default["rerun-triggers"] == ["mtime", "input", "code", "software-env"]
    # Parameter values reach a rule as its params file (an input, the mtime
    # trigger); the rule's only Snakemake param is the command, set by its name.
    rules = (REPO / "workflow/rules/stages.smk").read_text()
    block = re.search(r"\n        params:\n((?:            .*\n)+)", rules).group(1)
    assert block.split() == ["cmd=stage.cmd,"], block
    assert "params=hc_runners.params_file(stage)" in rules
