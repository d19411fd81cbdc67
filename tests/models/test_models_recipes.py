"""Recipe pieces: class weights, early stopping, subsampling, config."""

from __future__ import annotations

import polars as pl
import pytest

from hatecheck_pipeline.core import config
from hatecheck_pipeline.models.recipe import Recipe, class_weights
from hatecheck_pipeline.models.selection import EarlyStopping
from hatecheck_pipeline.models.splits import stratified_cap


def test_class_weights_follow_the_hatecheck_rule():
    # 1:9 hateful:non-hateful -> hateful loss x 9 relative to non-hateful.
    w = class_weights([1] * 10 + [0] * 90, "other_class_proportion")
    assert w == pytest.approx([0.1, 0.9])
    assert w[1] / w[0] == pytest.approx(9.0)
    w = class_weights([1] * 30 + [0] * 70, "other_class_proportion")
    assert w == pytest.approx([0.3, 0.7])  # weight of a class = share of the other
    assert class_weights([0, 1, 1], "none") == [1.0, 1.0]
    with pytest.raises(ValueError):
        class_weights([0, 1], "inverse")


def test_early_stopping_stops_after_patience_epochs_without_improvement():
    curve = [0.50, 0.60, 0.58, 0.61, 0.60, 0.59, 0.55, 0.61, 0.40, 0.70]
    stopper = EarlyStopping("dev_f1_hateful", patience=5)
    stopped_at = None
    for epoch, value in enumerate(curve, start=1):
        _, stop = stopper.update(epoch, value)
        if stop:
            stopped_at = epoch
            break
    # best 0.61 at epoch 4; epochs 5..9 do not beat it (0.61 at 8 is a tie)
    assert stopper.best_epoch == 4 and stopper.best == 0.61
    assert stopped_at == 9


def test_early_stopping_on_a_loss_prefers_lower_values():
    stopper = EarlyStopping("dev_loss", patience=2)
    assert stopper.update(1, 0.7) == (True, False)
    assert stopper.update(2, 0.5) == (True, False)
    assert stopper.update(3, 0.6) == (False, False)
    assert stopper.update(4, 0.55) == (False, True)
    assert stopper.best_epoch == 2


def test_recipes_in_params_match_the_papers():
    params = config.load_params()
    mhc = Recipe.from_params(params["training"]["recipes"]["mhc"])
    assert (mhc.class_weights, mhc.lr, mhc.weight_decay, mhc.dropout, mhc.batch_size, mhc.epochs) == ("none", 5e-5, 0.01, 0.1, 32, 50)
    assert mhc.early_stopping == {"metric": "dev_f1_hateful", "patience": 5} and mhc.keep_best
    hc = Recipe.from_params(params["training"]["recipes"]["hatecheck"])
    assert (hc.class_weights, hc.batch_size, hc.epochs) == ("other_class_proportion", 16, 3)
    # the profile caps epochs
    assert Recipe.from_params(params["training"]["recipes"]["mhc"], max_epochs=2).epochs == 2
    # the HateCheck grid: epochs {2,3,4} x lr {2e-5,3e-5,5e-5} x batch {16,32}
    grid = Recipe.from_params({**params["training"]["recipes"]["hatecheck"], "grid_search": True})
    trials = grid.trials()
    assert len(trials) == 18 and not any(t.grid_search for t in trials)
    assert {(t.epochs, t.lr, t.batch_size) for t in trials} == {
        (e, lr, b) for e in (2, 3, 4) for lr in (2e-5, 3e-5, 5e-5) for b in (16, 32)
    }
    # a profile epoch cap applies to every trial (duplicates merged)
    assert {t.epochs for t in grid.trials(max_epochs=2)} == {2} and len(grid.trials(max_epochs=2)) == 6
    with pytest.raises(ValueError):
        Recipe.from_params({**params["training"]["recipes"]["hatecheck"], "grid_search": True, "grid": {"epochs": [2]}})


def test_stratified_cap_is_seeded_and_keeps_the_balance():
    frame = pl.DataFrame({"id": [str(i) for i in range(1000)], "label": ["hateful"] * 200 + ["non-hateful"] * 800})
    a = stratified_cap(frame, 100, seed=1)
    b = stratified_cap(frame, 100, seed=1)
    assert a.height == 100 and a.equals(b)
    assert (a["label"] == "hateful").sum() == 20
    assert stratified_cap(frame, None, 1).height == 1000
