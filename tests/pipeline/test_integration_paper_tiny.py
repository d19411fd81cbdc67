"""The `paper` profile end to end in everything but size (tests/paper_tiny.py:
tiny RANDOM models of the paper's architectures and tokenizer families, small
caps; the recipes, grid search, early stopping and switches are the paper's).

Both runners build the whole DAG in one workspace, as a team would mix them:
stock `dvc repro` builds, from nothing, the chain of one MHC-recipe model
(the MHC data stages, XLM-R training with early stopping and its best
checkpoint, prediction, scoring) and one masked CrowS-Pairs scorer; Snakemake
then builds the report, every other stage of the paper profile included (the
HateCheck recipe's 18-trial grid, the other masked and causal scorers,
WinoBias, the prompted rows, GPT-HateCheck generation with the NLI judge,
perturbation, HateXplain training, explanation and audits), taking DVC's
outputs as they are. Afterwards neither runner has anything to do. The
numbers these models give are test values, never results."""

from __future__ import annotations

import json
import re

import pytest
from paper_tiny import build_models, write_params
from pipeline_utils import BIN, copy_project, dvc_ran_stages, git_commit_all, run

pytestmark = pytest.mark.integration

# built by stock DVC from nothing, before Snakemake builds the rest
DVC_TARGETS = [
    "score_XLM-ES_mhc_spanish",  # MHC recipe (early stopping, best checkpoint) on XLM-R; mhc data stages; predict, score
    "crows_pairs_albert-xxlarge-v2",  # a masked scorer (ALBERT, sentencepiece)
]
REPORT = "reports/mhc_xtc.html"
# one target of every stage kind, all inside the report's DAG
TARGETS = [
    "score_B-D_hatecheck",  # train (HateCheck recipe, 18-trial grid), predict, score; davidson2017 + hatecheck data stages
    *DVC_TARGETS,
    "crows_pairs_bert-base-uncased",
    "crows_pairs_roberta-large",
    "crows_pairs_smollm2-135m",
    "winobias_albert-xxlarge-v2_type1",
    "score_LLM-EN_hatecheck",  # the prompted rows
    "expand_llm_validate_english",  # GPT-HateCheck: local generator, NLI judge
    "expand_perturbed_hatecheck",
    "hatexplain_explain_hatexplain",  # HateXplain training (keep_best on dev macro F1) and explanations
]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    models = build_models(tmp_path_factory.mktemp("paper-tiny-models"))
    project = copy_project(tmp_path_factory.mktemp("paper-tiny"))
    write_params(project, models)
    run([str(BIN / "hatecheck-pipeline"), "dag", "write"], project)
    git_commit_all(project, "paper-tiny")
    built = run([str(BIN / "dvc"), "repro", *DVC_TARGETS], project, timeout=1200)
    ran_by_dvc = dvc_ran_stages(built.stdout)
    assert set(DVC_TARGETS) <= ran_by_dvc and "train_XLM-ES" in ran_by_dvc, built.stdout[-3000:]
    snake = run([str(BIN / "snakemake"), "--cores", "2", REPORT], project, timeout=1800)
    return project, ran_by_dvc, snake.stdout + snake.stderr


def card(project, model):
    return json.loads((project[0] / f"models/{model}/model_card.json").read_text())


def test_hatecheck_recipe_runs_the_18_trial_grid_and_keeps_the_selected_configuration(project):
    c = card(project, "B-D")
    grid = c["grid_search"]
    assert {(t["epochs"], t["lr"], t["batch_size"]) for t in grid["trials"]} == {
        (e, lr, b) for e in (2, 3, 4) for lr in (2e-5, 3e-5, 5e-5) for b in (16, 32)
    } and len(grid["trials"]) == 18
    best = min(grid["trials"], key=lambda t: t["dev_loss"])  # selected on dev loss
    assert grid["selected"]["trial"] == best["trial"]
    assert {k: c["selected_recipe"][k] for k in ("epochs", "lr", "batch_size")} == {k: best[k] for k in ("epochs", "lr", "batch_size")}
    assert c["base_model"]["stand_in"] and "tiny-random" in c["base_model"]["ref"]  # labelled: never the paper's BERT


def test_mhc_recipe_stops_early_and_keeps_the_best_checkpoint(project):
    c = card(project, "XLM-ES")
    epochs = json.loads((project[0] / "models/XLM-ES/training_log.json").read_text())["epochs"]
    assert epochs[-1]["stopped_early"] and len(epochs) < 50, epochs
    best = max(epochs, key=lambda e: e["dev_f1_hateful"])  # the first of equals
    assert c["selected_epoch"] == best["epoch"] and c["final_dev"]["dev_f1_hateful"] == best["dev_f1_hateful"]
    assert len(epochs) - c["selected_epoch"] == 5  # patience 5: five epochs without improvement, then stop
    assert c["base_model"]["stand_in"] and "tiny-random" in c["base_model"]["ref"]


def test_both_runners_built_the_whole_dag_and_its_report(project):
    project, ran_by_dvc, snake_log = project
    ran_by_snakemake = set(re.findall(r"^(?:local)?rule (\S+):", snake_log, re.M))
    assert not ran_by_dvc & ran_by_snakemake, sorted(ran_by_dvc & ran_by_snakemake)  # DVC's outputs taken as they are
    assert {"train_B-D", "report"} <= ran_by_snakemake, sorted(ran_by_snakemake)
    report = (project / REPORT).read_text("utf-8")
    assert "paper-tiny" in report
    for scorer in ("bert-base-uncased", "roberta-large", "albert-xxlarge-v2", "smollm2-135m"):
        m = json.loads((project / f"results/bias/crows_pairs/{scorer}/metrics.json").read_text())
        assert m.get("ran", True) and m["n_pairs"] > 0, (scorer, m)
    for target in TARGETS:  # every stage kind is in the report's DAG, so it ran
        assert target in ran_by_dvc | ran_by_snakemake, target
    again = run([str(BIN / "snakemake"), "--cores", "2", "-n", REPORT], project)
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]
    status = run([str(BIN / "dvc"), "status"], project)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout[-3000:]
    assert dvc_ran_stages(run([str(BIN / "dvc"), "repro", "--dry"], project).stdout) == set()
    forced = run([str(BIN / "dvc"), "repro", "-f", "-s", "crows_pairs_albert-xxlarge-v2"], project)
    assert dvc_ran_stages(forced.stdout) == {"crows_pairs_albert-xxlarge-v2"}
