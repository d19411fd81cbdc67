"""Training, checkpoint/resume and prediction on a tiny RANDOMLY
INITIALISED BERT (2 layers, hidden 32; test values only)."""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from models_helpers import processed_table, tiny_bert
from safetensors.torch import load_file

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.files import recorded_precision
from hatecheck_pipeline.models import base as basemodels
from hatecheck_pipeline.models import predict, runtime
from hatecheck_pipeline.models import train as training
from hatecheck_pipeline.models.loop import train_loop
from hatecheck_pipeline.models.recipe import LABEL2ID, Recipe
from hatecheck_pipeline.models.selection import binary_metrics
from hatecheck_pipeline.models.splits import load_splits
from hatecheck_pipeline.models.trainable import layer_depths, load_for_training, lower_layers, param_groups

torch.set_num_threads(1)

RECIPE = {
    "class_weights": "other_class_proportion",
    "lr": 1e-3,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "batch_size": 8,
    "epochs": 2,
    "warmup_ratio": 0.0,
    "early_stopping": None,
    "keep_best": False,
    "select_on": "dev_loss",
    "grid_search": False,
}
PROFILE = {"max_train_per_model": None, "max_epochs": None, "max_length": 24}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return processed_table(tmp_path_factory.mktemp("data") / "toy" / "bert.parquet")


def run_training(base: Path, data: Path, root: Path, recipe=RECIPE, profile=PROFILE, **kw):
    return training.run(
        "TINY",
        str(base),
        [data],
        recipe,
        Profile("test", profile),
        7,
        root / "final",
        root / "checkpoints",
        root / "training_log.json",
        root / "model_card.json",
        threads=1,
        progress=False,
        **kw,
    )


def test_train_save_reload_predict(base, data, tmp_path):
    log = run_training(base, data, tmp_path)
    assert [r["epoch"] for r in log["epochs"]] == [1, 2]
    for row in log["epochs"]:
        assert set(row) >= {"train_loss", "dev_loss", "dev_f1_hateful", "dev_macro_f1"}
    # 20 of 60 training rows are hateful: weights [1/3, 2/3]
    assert log["class_weights"] == pytest.approx([1 / 3, 2 / 3])
    final = tmp_path / "final"
    assert (final / "model.safetensors").exists() and (final / "tokenizer.json").exists()
    assert not list(tmp_path.glob("final.tmp-*"))
    card = json.loads((tmp_path / "model_card.json").read_text())
    assert card["seed"] == 7 and card["base_model"]["content_sha256"] == basemodels.content_hash(base)
    assert card["training_data_sha256"] == {str(data): basemodels.content_hash(data)}
    ran = runtime.precision(runtime.pick_device(), amp=True)  # fp32 on a CPU; CUDA's mixed precision on a GPU
    assert card["code_version"] and card["labels"] == {"0": "non-hateful", "1": "hateful"} and card["precision"] == ran
    logged = json.loads((tmp_path / "training_log.json").read_text())
    assert logged["epochs"] == log["epochs"]

    cases = pl.read_parquet(data).filter(pl.col("split") == "test").select("id", "text")
    out = tmp_path / "pred.parquet"
    frame = predict.run(final, cases, "TINY", "toy_test", out, max_length=24, batch_size=4, threads=1, progress=False)
    back = pl.read_parquet(out)
    assert back.columns == ["id", "p_hateful", "pred", "model", "suite"]
    assert back["id"].to_list() == cases["id"].to_list()
    assert back["p_hateful"].is_between(0, 1).all()
    assert ((back["p_hateful"] >= 0.5) == (back["pred"] == "hateful")).all()
    assert frame.equals(back)
    # the reloaded model gives the same dev metrics as the last logged epoch
    model, tok = predict.load_model(final)
    dev = pl.read_parquet(data).filter(pl.col("split") == "dev")
    p = predict.predict_proba(model, tok, dev["text"].to_list(), 24, 64)
    y = np.array([LABEL2ID[x] for x in dev["label"]])
    m = binary_metrics(y, np.stack([1 - p, p], 1), log["class_weights"])
    assert m["dev_loss"] == pytest.approx(log["epochs"][-1]["dev_loss"], abs=1e-5)


def test_batched_prediction_matches_unbatched(base, data):
    model = load_for_training(str(base), 0.1, 0)
    tok = basemodels.load_tokenizer(str(base))
    texts = pl.read_parquet(data)["text"].to_list()
    batched = predict.predict_proba(model, tok, texts, 24, 16)
    single = np.array([predict.predict_proba(model, tok, [t], 24, 1)[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


@pytest.mark.usefixtures("cpu_only")  # CPU precision labels and paths
def test_bf16_prediction_agrees_with_fp32_and_records_its_precision(base, data, tmp_path):
    """predict_cpu_bf16: bf16 autocast forward passes on a CPU. On a trained
    (tiny, test-only) model the probabilities stay within bf16's rounding of
    the fp32 run's, every label away from the threshold agrees, and each
    file's Parquet metadata names the precision that ran; `lineage` reads it."""
    from hatecheck_pipeline.report.lineage import ran_in

    run_training(base, data, tmp_path, recipe={**RECIPE, "lr": 3e-3, "epochs": 6})  # long enough to separate the classes
    cases = pl.read_parquet(data).select("id", "text")
    runs = {}
    for cpu_bf16 in (False, True):
        out = tmp_path / f"pred-{cpu_bf16}.parquet"
        runs[cpu_bf16] = predict.run(
            tmp_path / "final", cases, "TINY", "toy", out, max_length=24, batch_size=8, threads=1, progress=False, cpu_bf16=cpu_bf16
        )
        assert recorded_precision(out) == ran_in(out) == ("bf16 autocast (CPU)" if cpu_bf16 else "fp32")
    fp32, bf16 = runs[False]["p_hateful"].to_numpy(), runs[True]["p_hateful"].to_numpy()
    assert not np.array_equal(fp32, bf16)  # the bf16 path really ran
    np.testing.assert_allclose(bf16, fp32, atol=0.02)
    clear = np.abs(fp32 - 0.5) > 0.02  # labels bf16's rounding cannot flip
    assert clear.mean() > 0.9 and (runs[False]["pred"].to_numpy()[clear] == runs[True]["pred"].to_numpy()[clear]).all()
    # the same columns either way: only the metadata differs
    assert runs[True].columns == predict.COLUMNS and pl.read_parquet(tmp_path / "pred-True.parquet").equals(runs[True])


class Crash(RuntimeError):
    pass


def test_resume_after_crash_reaches_the_uninterrupted_result(base, data, tmp_path):
    run_training(base, data, tmp_path / "straight")

    def crash(epoch):
        if epoch == 1:
            raise Crash

    with pytest.raises(Crash):
        run_training(base, data, tmp_path / "resumed", on_checkpoint=crash)
    ckpts = tmp_path / "resumed" / "checkpoints"
    assert (ckpts / "epoch-1" / "optimizer.safetensors").exists()
    assert not (tmp_path / "resumed" / "final").exists()  # only appears when complete
    # a partly written checkpoint (as after kill -9 mid-write) is ignored
    (ckpts / "epoch-2.tmp-xyz").mkdir()
    (ckpts / "epoch-2.tmp-xyz" / "model.safetensors").write_bytes(b"garbage")
    log = run_training(base, data, tmp_path / "resumed")
    assert [r["epoch"] for r in log["epochs"]] == [1, 2]
    a = load_file(str(tmp_path / "straight" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "final" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-6, atol=1e-7)
    straight = json.loads((tmp_path / "straight" / "training_log.json").read_text())
    assert straight["epochs"] == log["epochs"]
    assert not list(ckpts.glob("*.tmp-*"))


def test_changed_parameters_discard_old_checkpoints(base, data, tmp_path):
    run_training(base, data, tmp_path, recipe={**RECIPE, "epochs": 1})
    log = run_training(base, data, tmp_path, recipe={**RECIPE, "epochs": 1, "lr": 5e-4})
    assert log["recipe"]["lr"] == 5e-4 and [r["epoch"] for r in log["epochs"]] == [1]


def test_early_stopping_and_keep_best_on_a_scripted_dev_curve(base, data, tmp_path):
    recipe = Recipe.from_params(
        {
            **RECIPE,
            "epochs": 10,
            "early_stopping": {"metric": "dev_f1_hateful", "patience": 2},
            "keep_best": True,
            "select_on": "dev_f1_hateful",
        }
    )
    curve = {1: 0.3, 2: 0.5, 3: 0.4, 4: 0.45, 5: 0.9}
    snapshots = {}
    model = load_for_training(str(base), 0.1, 0)
    tok = basemodels.load_tokenizer(str(base))
    train, dev, _ = load_splits([data], None, 0)

    def snapshot(epoch):
        snapshots[epoch] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    log = train_loop(
        model,
        tok,
        train,
        dev,
        recipe,
        seed=0,
        max_length=24,
        ckpt_dir=tmp_path / "ck",
        fingerprint={"t": 1},
        progress=False,
        on_checkpoint=snapshot,
        scripted_dev=lambda e: {"dev_f1_hateful": curve[e], "dev_macro_f1": curve[e], "dev_loss": 1 - curve[e]},
    )
    assert [r["epoch"] for r in log["epochs"]] == [1, 2, 3, 4]  # best at 2, patience 2 -> stop after 4
    assert log["epochs"][-1]["stopped_early"] and log["selected_epoch"] == 2
    for k, v in model.state_dict().items():  # the kept weights are epoch 2's
        torch.testing.assert_close(v, snapshots[2][k])


def test_grid_search_selects_on_dev_loss_and_resumes(base, data, tmp_path):
    """A 2-point grid (lr) on the tiny random model: every trial logged,
    the final model is the dev-loss winner's, and a search killed in its
    second trial skips the first on re-run and ends where a straight run does."""
    recipe = {**RECIPE, "epochs": 1, "grid_search": True, "grid": {"epochs": [1], "lr": [1e-3, 1e-5], "batch_size": [8]}}
    log = run_training(base, data, tmp_path / "straight", recipe=recipe)
    trials = log["grid_search"]["trials"]
    assert [(t["epochs"], t["lr"], t["batch_size"]) for t in trials] == [(1, 1e-3, 8), (1, 1e-5, 8)]
    for t in trials:
        assert set(t) >= {"dev_loss", "dev_f1_hateful", "dev_macro_f1", "history"}
    best = min(trials, key=lambda t: t["dev_loss"])
    assert log["grid_search"]["selected"]["lr"] == best["lr"] and log["recipe"]["lr"] == best["lr"]
    card = json.loads((tmp_path / "straight" / "model_card.json").read_text())
    assert [t["dev_loss"] for t in card["grid_search"]["trials"]] == [t["dev_loss"] for t in trials]
    assert card["selected_recipe"]["lr"] == best["lr"]
    # the saved model reproduces the selected trial's dev loss
    model, tok = predict.load_model(tmp_path / "straight" / "final")
    dev = pl.read_parquet(data).filter(pl.col("split") == "dev")
    p = predict.predict_proba(model, tok, dev["text"].to_list(), 24, 64)
    y = np.array([LABEL2ID[x] for x in dev["label"]])
    assert binary_metrics(y, np.stack([1 - p, p], 1), log["class_weights"])["dev_loss"] == pytest.approx(best["dev_loss"], abs=1e-5)

    calls = []

    def crash(epoch):  # the 2nd checkpoint = the second trial's epoch 1
        calls.append(epoch)
        if len(calls) == 2:
            raise Crash

    with pytest.raises(Crash):
        run_training(base, data, tmp_path / "resumed", recipe=recipe, on_checkpoint=crash)
    ckpts = tmp_path / "resumed" / "checkpoints"
    recorded = json.loads((ckpts / "grid_trials.json").read_text())
    assert [t["trial"] for t in recorded["trials"]] == [trials[0]["trial"]]
    calls.clear()
    log2 = run_training(base, data, tmp_path / "resumed", recipe=recipe, on_checkpoint=crash)
    assert calls == []  # trial 1 skipped, trial 2 resumed from its finished checkpoint
    assert [t["dev_loss"] for t in log2["grid_search"]["trials"]] == pytest.approx([t["dev_loss"] for t in trials], abs=1e-7)
    a = load_file(str(tmp_path / "straight" / "final" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "final" / "model.safetensors"))
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-6, atol=1e-7)


def test_collate_pads_dynamically_and_masks_only_when_needed():
    b = runtime.collate([[5, 6, 7], [8]], 0, torch.device("cpu"))
    assert b["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert b["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    same = runtime.collate([[5, 6], [8, 9]], 0, torch.device("cpu"))
    assert set(same) == {"input_ids"} and same["input_ids"].tolist() == [[5, 6], [8, 9]]
    assert 1 <= runtime.available_threads() <= (len(__import__("os").sched_getaffinity(0)))


def test_training_budget_is_per_model_and_spread_evenly_over_datasets(tmp_path):
    """max_train_per_model = 40 over two datasets: 20 train (and dev capped
    to 5) from each, so a multi-dataset model gets as many examples as a
    single-dataset one."""
    a = processed_table(tmp_path / "a" / "bert.parquet", dataset="a", seed=1)
    b = processed_table(tmp_path / "b" / "bert.parquet", dataset="b", seed=2)
    train, dev, counts = load_splits([a, b], 40, 0)
    assert len(train.texts) == 40 and sorted(set(train.sources)) == ["a", "b"]
    assert [(c["dataset"], c["train_used"], c["dev_used"]) for c in counts] == [("a", 20, 5), ("b", 20, 5)]
    single, _, _ = load_splits([a], 40, 0)
    assert len(single.texts) == 40


def test_training_budget_per_dataset_gives_a_union_of_the_single_dataset_samples(tmp_path):
    """max_train_per_dataset = 20: each dataset gives 20 train examples (dev
    capped to 5), so a two-dataset model sees 40, exactly the union of what
    the two single-dataset models see with the same seed; with a per-model
    cap as well the smaller share wins."""
    a = processed_table(tmp_path / "a" / "bert.parquet", dataset="a", seed=1)
    b = processed_table(tmp_path / "b" / "bert.parquet", dataset="b", seed=2)
    both, _, counts = load_splits([a, b], None, 0, max_per_dataset=20)
    assert [(c["dataset"], c["train_used"], c["dev_used"]) for c in counts] == [("a", 20, 5), ("b", 20, 5)]
    only_a, _, _ = load_splits([a], None, 0, max_per_dataset=20)
    only_b, _, _ = load_splits([b], None, 0, max_per_dataset=20)
    assert both.ids == only_a.ids + only_b.ids and both.texts == only_a.texts + only_b.texts
    _, _, capped = load_splits([a, b], 30, 0, max_per_dataset=20)
    assert [c["train_used"] for c in capped] == [15, 15]


@pytest.mark.usefixtures("cpu_only")  # CPU precision labels and paths
def test_train_and_predict_stage_functions(base, data, tmp_path):
    """The stage functions through the stage model (`hatecheck-pipeline run`):
    train starts from the active profile's base model for the role (a
    `pipeline:` base read from the declared `bases` input), predict reads the
    suite's cases from its declared table, capped by the profile with the
    model's seed."""
    from hatecheck_pipeline.core.stage import Stage, call, metric, out, profile_params
    from hatecheck_pipeline.models.recipe import BUDGET_KEYS
    from hatecheck_pipeline.suites.registry import Suite
    from hatecheck_pipeline.suites.sample import sample_cases

    params = {
        "profile": "test",
        "profiles": {
            "test": {
                **dict.fromkeys(BUDGET_KEYS),
                "cpu_bf16": False,
                **PROFILE,
                "base_models": {"tiny": "pipeline:multilingual-e5-small"},
                "max_cases_per_suite": 5,
                "max_expanded_cases_per_suite": 3,
                "predict_cpu_bf16": False,
            }
        },
        "models": {"TINY": {"role": "tiny", "scheme": "bert", "train": ["toy"], "suites": [], "recipe": "r", "seed": 7}},
        "training": {"recipes": {"r": {**RECIPE, "epochs": 1}}, "amp": False, "threads": 1},
        "prediction": {"batch_size": 4, "threshold": 0.5, "threads": 1},
    }
    final, card, ckpts, log = tmp_path / "final", tmp_path / "model_card.json", tmp_path / "checkpoints", tmp_path / "training_log.json"
    train = Stage(
        "train_TINY",
        "train",
        "hatecheck_pipeline.models.train:train",
        inputs={"data": [str(data)], "bases": {"multilingual-e5-small": str(base)}},
        outputs={
            "model_dir": out(str(final), directory=True),
            "card": out(str(card)),
            "checkpoints": out(str(ckpts), directory=True, persist=True),
            "training_log": metric(str(log)),
        },
        params={
            **profile_params(params, [*BUDGET_KEYS, "base_models.tiny"]),
            "spec": "models.TINY",
            "recipe": "training.recipes.r",
            "amp": "training.amp",
        },
        args={"model": "TINY", "threads": 1},
    )
    summary = call(train, params)
    assert summary.startswith("TINY: epoch 1 dev macro F1 ") and summary.endswith(f"-> {final}")
    written = json.loads(card.read_text())
    assert written["base_model"]["ref"] == "pipeline:multilingual-e5-small" and written["base_model"]["resolved"] == str(base)
    assert written["profile"] == "test" and written["seed"] == 7 and (final / "model.safetensors").exists()
    assert [r["epoch"] for r in json.loads(log.read_text())["epochs"]] == [1]
    assert ckpts.is_dir() and not any(ckpts.iterdir())  # a finished run keeps no checkpoint

    suite = Suite("heldout_toy", "toy", "id", "heldout", split="test")
    # an expanded suite in the same group takes max_expanded_cases_per_suite
    expanded = Suite("perturbed_toy", "toy", "id", "expanded", split="test", source="toy")
    pred = tmp_path / "results" / "predictions.parquet"
    pred_expanded = tmp_path / "results" / "expanded.parquet"
    predict_stage = Stage(
        "predict_TINY_heldout_toy",
        "predict",
        "hatecheck_pipeline.models.predict:predict",
        inputs={"model_dir": str(final), "tables": {"heldout_toy": str(data), "perturbed_toy": str(data)}},
        outputs={"predictions": (out(str(pred)), out(str(pred_expanded)))},
        params={
            **profile_params(params, ["max_length", "predict_cpu_bf16", "max_cases_per_suite", "max_expanded_cases_per_suite"]),
            "seed": "models.TINY.seed",
            "scheme": "models.TINY.scheme",
            "prediction": "prediction",
        },
        args={"model": "TINY", "suites": [suite, expanded], "amp": False},
    )
    summary = call(predict_stage, params)
    assert summary.startswith("TINY on heldout_toy: 5 cases, ") and f"(fp32) -> {pred}\nTINY on perturbed_toy: 3 cases, " in summary
    frame = pl.read_parquet(pred)
    cases = pl.read_parquet(data).filter(pl.col("split") == "test").select(pl.col("id").cast(pl.Utf8), "text").sort("id")
    assert frame["id"].to_list() == sample_cases(cases, 5, 7)["id"].to_list()
    assert frame["suite"].unique().to_list() == ["heldout_toy"] and frame["model"].unique().to_list() == ["TINY"]
    assert pl.read_parquet(pred_expanded)["id"].to_list() == sample_cases(cases, 3, 7)["id"].to_list()
    # the profile's predict_cpu_bf16 picks bf16 autocast; the file records it
    bf16_params = {**params, "profiles": {"test": {**params["profiles"]["test"], "predict_cpu_bf16": True}}}
    assert "(bf16 autocast (CPU)) -> " in call(predict_stage, bf16_params)
    assert recorded_precision(pred) == "bf16 autocast (CPU)" and pl.read_parquet(pred)["id"].to_list() == frame["id"].to_list()
    # a base the stage does not declare is an error, not a silent path lookup
    with pytest.raises(Exception, match="not among the stage's base model inputs"):
        call(dataclasses.replace(train, inputs={"data": [str(data)], "bases": {}}), params)


def test_frozen_word_embeddings_keep_their_pretrained_values(base, data, tmp_path):
    frozen = {**PROFILE, "freeze_embeddings": True}
    log = training.run(
        "TINY", str(base), [data], RECIPE, Profile("test", frozen), 7, tmp_path / "final", tmp_path / "ckpt",
        tmp_path / "log.json", tmp_path / "card.json", threads=1, progress=False,
    )  # fmt: skip
    assert log["freeze_embeddings"] is True
    before = load_file(str(base / "model.safetensors"))
    after = load_file(str(tmp_path / "final" / "model.safetensors"))
    key = next(k for k in after if k.endswith("word_embeddings.weight"))
    base_key = next(k for k in before if k.endswith("word_embeddings.weight"))
    assert torch.equal(after[key], before[base_key])
    # everything else trained: the encoder's first layer moved away from the base
    plain = {k.removeprefix("bert."): v for k, v in before.items()}
    moved = [k for k in after if "layer.0." in k and k.removeprefix("bert.") in plain]
    assert moved and any(not torch.equal(after[k], plain[k.removeprefix("bert.")]) for k in moved)
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["budget"]["freeze_embeddings"] is True and "word embeddings frozen" in card["budget_note"]
    # a different freezing choice is a different training run (checkpoints not reused)
    unfrozen = run_training(base, data, tmp_path / "unfrozen")
    assert unfrozen["freeze_embeddings"] is False


def test_frozen_lower_layers_keep_their_pretrained_values(base, data, tmp_path):
    """freeze_lower_layers 0.5: the embedding block and the lower half of
    the encoder layers keep the base model's weights, the upper half and
    the head train; the share is in the log, the card and the fingerprint."""
    profile = {**PROFILE, "freeze_lower_layers": 0.5}
    log = training.run(
        "TINY", str(base), [data], RECIPE, Profile("test", profile), 7, tmp_path / "final", tmp_path / "ckpt",
        tmp_path / "log.json", tmp_path / "card.json", threads=1, progress=False,
    )  # fmt: skip
    before = {k.removeprefix("bert."): v for k, v in load_file(str(base / "model.safetensors")).items()}
    after = {k.removeprefix("bert."): v for k, v in load_file(str(tmp_path / "final" / "model.safetensors")).items()}
    n_layers = len({k.split(".")[2] for k in after if k.startswith("encoder.layer.")})
    assert n_layers >= 2
    frozen = [k for k in after if k.startswith("embeddings.") or any(k.startswith(f"encoder.layer.{i}.") for i in range(n_layers // 2))]
    trained = [k for k in after if any(k.startswith(f"encoder.layer.{i}.") for i in range(n_layers // 2, n_layers))]
    assert frozen and trained
    assert all(torch.equal(after[k], before[k]) for k in frozen)
    assert any(not torch.equal(after[k], before[k]) for k in trained)
    assert log["freeze_lower_layers"] == 0.5 and log["trainable_parameters"] < sum(v.numel() for v in after.values())
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["budget"]["freeze_lower_layers"] == 0.5 and "lowest 0.5 of the encoder layers frozen" in card["budget_note"]
    with pytest.raises(ValueError, match="SimpleNamespace has no encoder.layer list"):
        lower_layers(types.SimpleNamespace(base_model=object()), 0.5)


def test_length_bucketed_training_is_seeded_and_recorded(base, data, tmp_path):
    bucketed = {**PROFILE, "length_bucketing": True}
    a, b = (run_training(base, data, tmp_path / r, profile=bucketed) for r in "ab")
    assert a["epochs"] == b["epochs"]  # same seed, same batches, same losses
    wa = load_file(str(tmp_path / "a" / "final" / "model.safetensors"))
    wb = load_file(str(tmp_path / "b" / "final" / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    card = json.loads((tmp_path / "a" / "model_card.json").read_text())
    assert card["budget"]["length_bucketing"] is True
    plain = run_training(base, data, tmp_path / "plain")
    assert plain["epochs"][0]["train_loss"] != a["epochs"][0]["train_loss"]  # a different batch order


@pytest.mark.usefixtures("cpu_only")  # CPU precision labels and paths
def test_cpu_bf16_trains_under_bf16_autocast_and_is_recorded(base, data, tmp_path):
    """cpu_bf16: the training steps' matmuls run in bf16 on a CPU (fp32
    weights saved, dev evaluation and prediction fp32); deterministic, a
    different training run from fp32's, and said in the log and the card."""
    mixed = {**PROFILE, "cpu_bf16": True}
    with runtime.autocast_ctx(torch.device("cpu"), amp=False, cpu_bf16=True):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3)).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
    assert runtime.precision(torch.device("cpu"), amp=True, cpu_bf16=False) == "fp32"  # amp alone is CUDA's
    a, b = (run_training(base, data, tmp_path / r, profile=mixed) for r in "ab")
    assert a["precision"] == "bf16 autocast (CPU)" and a["epochs"] == b["epochs"]
    weights = load_file(str(tmp_path / "a" / "final" / "model.safetensors"))
    assert all(v.dtype == torch.float32 for v in weights.values() if v.is_floating_point())
    card = json.loads((tmp_path / "a" / "model_card.json").read_text())
    assert card["budget"]["cpu_bf16"] is True and "bf16 mixed precision on CPU" in card["budget_note"]
    assert card["precision"] == "bf16 autocast (CPU)"
    fp32 = run_training(base, data, tmp_path / "fp32")
    assert fp32["precision"] == "fp32" and "bf16" not in json.loads((tmp_path / "fp32" / "model_card.json").read_text())["budget_note"]
    assert fp32["epochs"][0]["train_loss"] != a["epochs"][0]["train_loss"]  # bf16 rounding: another run


def test_profile_recipe_by_role_overrides_the_recipe_and_is_recorded(base, data, tmp_path):
    def stage(root, recipe_by_role):
        prof = {**PROFILE, "base_models": {"bert": str(base)}, **({"recipe_by_role": recipe_by_role} if recipe_by_role else {})}
        training.train(
            "TINY", [data], {}, root / "final", root / "card.json", root / "ckpt", root / "log.json",
            Profile("test", prof), {"role": "bert", "seed": 7}, RECIPE, amp=False, threads=1,
        )  # fmt: skip
        return json.loads((root / "card.json").read_text()), json.loads((root / "log.json").read_text())

    by_role = {"bert": {"lr": 3e-3, "class_weights": "none"}, "xlmt": {"lr": 1e-5}}
    card, log = stage(tmp_path / "scaled", by_role)
    assert card["recipe"]["lr"] == 3e-3 and card["recipe"]["class_weights"] == "none"
    assert card["recipe"]["epochs"] == RECIPE["epochs"] and card["budget"]["recipe_by_role"] == by_role
    plain_card, plain_log = stage(tmp_path / "plain", None)
    assert plain_card["recipe"]["lr"] == RECIPE["lr"] and plain_card["recipe"]["class_weights"] == RECIPE["class_weights"]
    assert plain_card["budget"]["recipe_by_role"] is None
    assert log["epochs"][0]["train_loss"] != plain_log["epochs"][0]["train_loss"]  # the larger, unweighted step was taken


def test_per_dataset_training_budget_is_in_the_model_card(base, data, tmp_path):
    profile = {**PROFILE, "max_train_per_dataset": 20}
    log = training.run(
        "TINY", str(base), [data], RECIPE, Profile("test", profile), 7, tmp_path / "final", tmp_path / "ckpt",
        tmp_path / "log.json", tmp_path / "card.json", threads=1, progress=False,
    )  # fmt: skip
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["budget"]["max_train_per_dataset"] == 20 and card["training_data"][0]["train_used"] == 20
    assert card["budget_note"].startswith("training data subsampled to at most 20 train examples (stratified); ")
    assert log["epochs"]


def test_layer_lr_decay_groups_and_training(base, data, tmp_path):
    """layer_lr_decay: the head trains at lr, encoder layer i of n at
    lr x decay^(n - i), the embedding block at lr x decay^(n + 1); biases and
    norms without weight decay; 1.0 keeps one lr (two groups, as before);
    a decayed run trains, is recorded in the card's recipe, and its lower
    layers move less than with one lr."""
    model = load_for_training(str(base), 0.1, 0)
    n = len(model.base_model.encoder.layer)
    depths = layer_depths(model)
    assert depths["bert.embeddings.word_embeddings.weight"] == 0
    assert depths["bert.encoder.layer.0.attention.self.query.weight"] == 1
    assert depths[f"bert.encoder.layer.{n - 1}.output.dense.weight"] == n
    assert depths["classifier.weight"] == n + 1
    recipe = Recipe.from_params({**RECIPE, "layer_lr_decay": 0.5})
    groups = param_groups(model, recipe)
    lr_of = {id(p): g["lr"] for g in groups for p in g["params"]}
    wd_of = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
    params = dict(model.named_parameters())
    assert lr_of[id(params["classifier.weight"])] == pytest.approx(1e-3)
    assert lr_of[id(params[f"bert.encoder.layer.{n - 1}.output.dense.weight"])] == pytest.approx(1e-3 * 0.5)
    assert lr_of[id(params["bert.encoder.layer.0.output.dense.weight"])] == pytest.approx(1e-3 * 0.5**n)
    assert lr_of[id(params["bert.embeddings.word_embeddings.weight"])] == pytest.approx(1e-3 * 0.5 ** (n + 1))
    assert wd_of[id(params["bert.encoder.layer.0.output.dense.bias"])] == 0.0
    assert wd_of[id(params["bert.encoder.layer.0.output.dense.weight"])] == 0.01
    assert sum(len(g["params"]) for g in groups) == len(params)
    flat = param_groups(model, Recipe.from_params(RECIPE))
    assert len(flat) == 2 and {g["lr"] for g in flat} == {1e-3}

    before = {k: v.clone() for k, v in load_for_training(str(base), 0.1, 7).state_dict().items()}
    moved = {}
    for decay in (1.0, 0.1):
        root = tmp_path / f"decay-{decay}"
        override = {"layer_lr_decay": decay, "class_weights": "none"} if decay != 1.0 else None
        log = run_training(base, data, root, recipe={**RECIPE, **(override or {})}, recipe_override=override)
        after = load_file(str(root / "final" / "model.safetensors"))
        card = json.loads((root / "model_card.json").read_text())
        assert card["recipe"]["layer_lr_decay"] == decay and log["epochs"]
        # the profile's per-role recipe settings are named in the budget note
        named = "the profile's recipe for this role: class_weights none, layer_lr_decay 0.1"
        assert (named in card["budget_note"]) == (override is not None), card["budget_note"]
        moved[decay] = float(
            (after["bert.encoder.layer.0.output.dense.weight"] - before["bert.encoder.layer.0.output.dense.weight"]).abs().sum()
        )
    assert 0 < moved[0.1] < moved[1.0] / 10


def test_cpu_bf16_auto_runs_bf16_only_where_native_bf16_measured_faster(tmp_path, monkeypatch):
    """cpu_bf16: auto (the default profile): bf16 autocast where the CPU's
    flags name native bf16 and the probe (models/bf16.py) measured it faster
    than fp32; fp32 elsewhere (emulated bf16 took 10x the fp32 step here;
    native bf16 on an Intel Xeon ran at 0.57x of fp32), and the card's
    precision says which ran and why."""
    from hatecheck_pipeline.core import cpu
    from hatecheck_pipeline.models import bf16

    flags = {"avx2 fma": False, "avx2 avx512f avx512_bf16": True, "avx2 amx_bf16 amx_tile": True}
    for i, (line, native) in enumerate(flags.items()):
        info = tmp_path / f"cpuinfo{i}"
        info.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {line}\n")
        assert cpu.native_bf16.__wrapped__(str(info)) is native
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n")
    assert cpu.native_bf16.__wrapped__(str(arm)) is True
    assert cpu.native_bf16.__wrapped__(str(tmp_path / "missing")) is False

    device = torch.device("cpu")
    monkeypatch.setattr(bf16, "native_bf16", lambda: False)
    monkeypatch.setattr(bf16, "bf16_speedup", lambda: 4.5)  # never asked without native bf16
    assert runtime.autocast_dtype(device, amp=False, cpu_bf16="auto") is None
    assert runtime.precision(device, amp=False, cpu_bf16="auto") == "fp32 (cpu_bf16: auto; this CPU has no native bf16)"
    assert runtime.autocast_dtype(device, amp=False, cpu_bf16=True) == torch.bfloat16  # true forces it
    monkeypatch.setattr(bf16, "native_bf16", lambda: True)
    assert runtime.autocast_dtype(device, amp=False, cpu_bf16="auto") == torch.bfloat16
    assert runtime.precision(device, amp=False, cpu_bf16="auto") == "bf16 autocast (CPU)"
    monkeypatch.setattr(bf16, "bf16_speedup", lambda: 0.52)  # native, measured slower: fp32
    assert runtime.autocast_dtype(device, amp=False, cpu_bf16="auto") is None
    assert runtime.precision(device, amp=False, cpu_bf16="auto") == (
        "fp32 (cpu_bf16: auto; bf16 measured 0.5x of fp32 on this CPU, not faster than the 1.2x asked)"
    )
    assert runtime.autocast_dtype(device, amp=False, cpu_bf16=True) == torch.bfloat16  # true still forces it
    assert runtime.autocast_dtype(device, amp=False, cpu_bf16=False) is None
    with pytest.raises(ValueError, match="'yes' is not true, false or 'auto'"):
        bf16.cpu_bf16_on("yes")
