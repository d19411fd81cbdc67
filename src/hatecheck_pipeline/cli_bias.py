"""CLI subcommands of the bias phase (registered on the main app)."""

from __future__ import annotations

from pathlib import Path

import typer

from . import paths
from .cli import app, load  # noqa: F401


def crows_pair_cap(scorer_cap: int | None, profile_cap: int | None) -> int | None:
    """Pairs a CrowS-Pairs stage scores: the smaller of the scorer's
    ``max_pairs`` and the profile's ``crows_max_pairs`` (None = no cap).

    >>> crows_pair_cap(None, 20), crows_pair_cap(100, None), crows_pair_cap(10, 20), crows_pair_cap(None, None)
    (20, 100, 10, None)
    """
    caps = [c for c in (scorer_cap, profile_cap) if c is not None]
    return min(caps) if caps else None


@app.command("crows-pairs")
def crows_pairs(scorer: str) -> None:
    """Score CrowS-Pairs with one configured scorer (bias.crows_pairs.scorers)."""
    from .audits import crows

    params = load()
    b = params["bias"]
    spec = b["crows_pairs"]["scorers"][scorer]
    summary = crows.run(
        Path(paths.interim_table("crows_pairs")),
        Path(paths.crows_pairs(scorer)),
        Path(paths.crows_metrics(scorer)),
        scorer,
        spec["variant"],
        spec["model"],
        crows_pair_cap(spec["max_pairs"], params["profiles"][params["profile"]].get("crows_max_pairs")),
        b["seed"],
        b["crows_pairs"]["batch_size"],
        b["threads"],
    )
    typer.echo(f"crows-pairs {scorer} ({summary['variant']}): {summary['metric_score']}% of {summary['n_pairs']} pairs, {summary['pairs_per_second']} pairs/s")


@app.command("hatexplain-standin")
def hatexplain_standin() -> None:
    """Train the TF-IDF + LR stand-in on HateXplain; test predictions and attributions."""
    from .audits import hatexplain
    from .phases.bias import STANDIN

    params = load()
    hx = params["bias"]["hatexplain"]
    card = hatexplain.run_standin(
        Path(paths.interim_table("hatexplain")),
        Path(paths.hatexplain_predictions(STANDIN)),
        Path(paths.hatexplain_attributions(STANDIN)),
        Path(paths.hatexplain_card(STANDIN)),
        params["bias"]["seed"],
        hx["standin"]["C"],
        hx["standin"]["max_features"],
        hx["top_k"],
    )
    typer.echo(f"{card['model']}: trained on {card['train_posts']} posts, scored {card['test_posts']}")


@app.command("hatexplain-metrics")
def hatexplain_metrics(classifier: str) -> None:
    """HateXplain performance, bias AUCs and rationale metrics of one classifier."""
    from .audits import hatexplain

    params = load()
    hx = params["bias"]["hatexplain"]
    r = hatexplain.run_metrics(
        Path(paths.interim_table("hatexplain")),
        Path(paths.hatexplain_predictions(classifier)),
        Path(paths.hatexplain_attributions(classifier)),
        Path(paths.hatexplain_metrics(classifier)),
        Path(paths.hatexplain_communities(classifier)),
        hx["communities"],
        hx["power"],
        hx["top_k"],
        hx["iou_threshold"],
        hx["gold_rationale"],
        classifier,
    )
    b, e = r["bias"], r["explainability"]
    typer.echo(
        f"{classifier}: macro F1 {r['performance']['macro_f1']:.3f}, GMB-Sub {b['gmb_subgroup']:.3f}, "
        f"BPSN {b['gmb_bpsn']:.3f}, BNSP {b['gmb_bnsp']:.3f}, token F1 {e['token_f1']:.3f}"
    )


@app.command("target-bias")
def target_bias(model: str) -> None:
    """Target-group bias AUCs of one model on its HateCheck / MHC suites."""
    from .audits import bias_auc
    from .phases.bias import functional_suites
    from .predict import predicted_subsample

    params = load()
    entries = [
        (s.name, predicted_subsample(params, model, s.load_raw().collect(), "id"), "id", Path(paths.predictions(model, s.name)))
        for s in functional_suites(params, model)
    ]
    result = bias_auc.run_targets(model, entries, Path(paths.target_bias(model)), Path(paths.target_bias_csv(model)), params["bias"]["targets"]["power"])
    typer.echo(f"{model}: target-group bias on {len(result['suites'])} suite(s)")


@app.command("bias-summary")
def bias_summary() -> None:
    """Collect the bias-phase metrics into results/bias/summary.json."""
    from .audits import summary
    from .phases.bias import crows_scorers, target_models

    params = load()
    doc = summary.run(
        {n: Path(paths.crows_metrics(n)) for n in crows_scorers(params)},
        {c: Path(paths.hatexplain_metrics(c)) for c in params["bias"]["hatexplain"]["classifiers"]},
        {m: Path(paths.target_bias(m)) for m in target_models(params)},
        Path(paths.bias_summary()),
    )
    typer.echo(f"wrote {paths.bias_summary()} ({len(doc['crows_pairs'])} CrowS-Pairs, {len(doc['hatexplain'])} HateXplain, {len(doc['targets'])} target-bias entries)")
