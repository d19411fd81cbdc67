"""The `paper` profile trains every model with its paper's recipe: the
HateCheck recipe's grid search on, the MHC recipe as published, and none of
the embedded profile's budget levers (recipe_by_role, max_train_per_dataset,
cpu_bf16, freeze_*, length bucketing) leaking into it.

The expected recipes are written out here from the papers' texts
(/work/shared/papers), not read back from params.yaml:
- HateCheck (Röttger et al. 2021), appendix E: cross-entropy weighted by the
  other class's share, AdamW lr 5e-5, weight decay 0.01, dropout 0.1, batch
  16, 3 epochs; epochs x lr x batch size "determined by exhaustive grid
  search" over [2, 3, 4] x [2e-5, 3e-5, 5e-5] x [16, 32] (18 runs).
- HateCheck appendix F: unweighted multiclass versions of B-D and B-F "using
  the same model parameters described in appendix E".
- Multilingual HateCheck (Röttger et al. 2022), appendix G: unweighted CE,
  AdamW lr 5e-5, weight decay 0.01, dropout 0.1, batch 32, 50 epochs, early
  stopping with patience 5 on the binary F1 of the validation split, the
  checkpoint with the highest binary F1 kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hatecheck_pipeline.core import config, kinds
from hatecheck_pipeline.models import train as T
from hatecheck_pipeline.models.recipe import Recipe

HATECHECK = {
    "class_weights": "other_class_proportion",
    "lr": 5e-5,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "batch_size": 16,
    "epochs": 3,
    "grid_search": True,
    "grid": {"epochs": [2, 3, 4], "lr": [2e-5, 3e-5, 5e-5], "batch_size": [16, 32]},
    "select_on": "dev_loss",
    "early_stopping": None,
    "keep_best": False,
    "warmup_ratio": 0.0,
}
HATECHECK_MULTICLASS = {
    "class_weights": "none",
    "lr": 5e-5,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "batch_size": 16,
    "epochs": 3,
    "early_stopping": None,
    "keep_best": False,
    "warmup_ratio": 0.0,
}
MHC = {
    "class_weights": "none",
    "lr": 5e-5,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "batch_size": 32,
    "epochs": 50,
    "early_stopping": {"metric": "dev_f1_hateful", "patience": 5},
    "keep_best": True,
    "select_on": "dev_f1_hateful",
    "grid_search": False,
    "warmup_ratio": 0.0,
}
# the paper each model comes from -> the recipe it trains with
PAPER_RECIPE = {"B-D": HATECHECK, "B-F": HATECHECK, "XLM-ES": MHC, "XLM-IT": MHC, "XLM-PT": MHC, "XTC": MHC}
# budget levers that must be off (absent or at the papers' value) in the paper profile
PAPER_BUDGET = {
    "max_train_per_model": None,
    "max_train_per_dataset": None,
    "max_epochs": None,
    "recipe_by_role": None,
    "freeze_embeddings": False,
    "freeze_lower_layers": 0,
    "length_bucketing": False,
    "cpu_bf16": False,
}


@pytest.fixture(scope="module")
def params():
    return config.load_params()


def trained_recipes(params, profile: str, monkeypatch) -> dict[str, tuple[dict, dict]]:
    """(recipe, profile) each fine-tuned model's train stage hands to the
    training run under ``profile``: the real ``train`` stage function, its
    ``run`` replaced by a recorder (nothing is trained)."""
    seen: dict[str, tuple[dict, dict]] = {}

    def record(model_name, base_ref, data_files, recipe_params, prof, *args, **kwargs):
        seen[model_name] = (dict(recipe_params), dict(prof))
        return {"epochs": [{"epoch": 1, "dev_macro_f1": 0.0}], "selected_epoch": 1}

    monkeypatch.setattr(T, "run", record)
    for name, spec in params["models"].items():
        if not kinds.is_finetuned(spec):  # a prompted LLM or a classifier trained elsewhere: no training
            continue
        T.train(
            name,
            [],
            {},
            Path("m"),
            Path("c"),
            Path("k"),
            Path("l"),
            config.profile_named(params, profile),
            spec,
            params["training"]["recipes"][spec["recipe"]],
            amp=True,
            threads=1,
        )
    return seen


def test_paper_profile_trains_every_model_with_its_papers_recipe(params, monkeypatch):
    seen = trained_recipes(params, "paper", monkeypatch)
    checked = 0
    for model, expected in PAPER_RECIPE.items():
        if model not in seen:
            continue
        recipe, _ = seen[model]
        got = {k: recipe.get(k) for k in expected}
        assert got == expected, f"{model}: paper-profile recipe {got} != the paper's {expected}"
        # the grid the training loop will run is the paper's 18 configurations
        r = Recipe.from_params(recipe, max_epochs=None)
        assert len(r.trials()) == (18 if expected is HATECHECK else 1), model
        checked += 1
    assert checked >= 6  # every model of the papers' tables is configured
    for model, (recipe, _) in seen.items():
        if model.startswith(("B-D-", "B-F-")) and recipe.get("labels"):  # HateCheck appendix F
            assert {k: recipe.get(k) for k in HATECHECK_MULTICLASS} == HATECHECK_MULTICLASS, model


def test_paper_profile_sets_no_budget_lever(params, monkeypatch):
    seen = trained_recipes(params, "paper", monkeypatch)
    for model, (_, prof) in seen.items():
        for key, paper_value in PAPER_BUDGET.items():
            assert prof.get(key) in (None, paper_value) if paper_value is not None else prof.get(key) is None, (model, key, prof.get(key))
        assert prof.get("grid_search") is not False, model


def test_embedded_profile_changes_only_what_it_names(params, monkeypatch):
    """The embedded profile's budget shows in the effective recipe (grid
    search skipped, the xlmt role's lr and class weights) and nowhere else:
    the same function turns it off for the paper profile."""
    seen = trained_recipes(params, "embedded", monkeypatch)
    assert seen["B-D"][0]["grid_search"] is False and seen["B-D"][0]["lr"] == 5e-5
    xtc = seen["XTC"][0]
    override = params["profiles"]["embedded"]["recipe_by_role"]["xlmt"]
    assert {k: xtc[k] for k in override} == override
    assert {k: v for k, v in xtc.items() if k not in override} == {
        k: v for k, v in params["training"]["recipes"]["mhc"].items() if k not in override
    }
