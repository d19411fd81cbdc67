"""CLI subcommands of the expand phase (registered on the main app)."""

from __future__ import annotations

from pathlib import Path

import typer

from . import paths
from .cli import app, load  # noqa: F401

RAW_HATECHECK = Path("data/raw/hatecheck")
RAW_MHC = Path("data/raw/mhc")


@app.command("expand-templates")
def expand_templates() -> None:
    """Regenerate HateCheck and MHC from their templates; reproduction report."""
    from .expansion import templates

    p = load()
    res = templates.run_regenerate(
        RAW_HATECHECK, RAW_MHC, p["datasets"]["mhc"]["languages"], p["expansion"]["templates"]["lowercase_languages"],
        Path(paths.expansion_file("regenerated", "table.parquet")),
        Path(paths.expansion_file("regenerated", "reproduction.json")),
        Path(paths.expansion_file("regenerated", "differences.csv")),
    )
    for lang, s in res["per_language"].items():
        typer.echo(f"{lang}: reproduced {s['reproduced']}/{s['published_template_cases']} ({s['share_reproduced']:.2%})")


@app.command("expand-extend")
def expand_extend() -> None:
    """New cases for the identity terms/slurs of expansion.templates.new_terms."""
    from .expansion import templates
    from .phases.expand import resolve

    p = load()
    t = p["expansion"]["templates"]
    frame = templates.run_extend([Path(resolve(f)) for f in t["new_terms"]], RAW_HATECHECK, RAW_MHC,
                                 p["datasets"]["mhc"]["languages"], t["lowercase_languages"],
                                 Path(paths.expanded_table("extended")))
    typer.echo(f"extended: {frame.height} new cases")


@app.command("expand-perturb")
def expand_perturb(name: str) -> None:
    """Spelling perturbations of one suite's hateful cases (perturbed_hatecheck, perturbed_mhc_<language>)."""
    from .expansion import perturb

    p = load()
    cfg = p["expansion"]["perturb"]
    if name == "perturbed_hatecheck":
        table, langs = paths.interim_table("hatecheck"), None
    elif name.startswith("perturbed_mhc_"):
        table, langs = paths.interim_table("mhc"), [name[len("perturbed_mhc_"):]]
    else:
        raise typer.BadParameter(f"unknown perturbed suite {name!r}")
    cov = perturb.run(Path(table), langs, cfg["generators"], cfg["seed"], name,
                      Path(paths.expanded_table(name)), Path(paths.expansion_file(name, "coverage.json")))
    for c in cov:
        typer.echo(f"{name} {c['language']}/{c['generator']}: changed {c['changed']}/{c['source_cases']}")


@app.command("expand-coverage")
def expand_coverage() -> None:
    """Perturbation coverage per language and generator (JSON + CSV)."""
    from .expansion import perturb
    from .expansion.registry import perturbed_tables

    p = load()
    files = [Path(paths.expansion_file(n, "coverage.json")) for n in perturbed_tables(p)]
    rep = perturb.run_report(files, Path(paths.expansion_file("reports", "perturbation_coverage.json")),
                             Path(paths.expansion_file("reports", "perturbation_coverage.csv")))
    typer.echo(f"coverage: {len(rep['languages'])} languages; no effect: {rep['generators_without_effect'] or 'none'}")


@app.command("expand-preprocess")
def expand_preprocess(name: str, scheme: str) -> None:
    """Write an expanded suite through one preprocessing scheme."""
    import polars as pl

    from .io import write_parquet
    from .textprep import preprocess_table

    p = load()
    frame = preprocess_table(pl.scan_parquet(paths.expanded_table(name)), p["preprocessing"]["schemes"][scheme],
                             scheme).collect()
    write_parquet(frame, paths.expanded_processed(name, scheme))
    typer.echo(f"{name}/{scheme}: {frame.height} rows")


@app.command("expand-generate")
def expand_generate(language: str) -> None:
    """Generate candidate cases through the OpenAI-compatible endpoint (cached)."""
    from .expansion import generate

    p = load()
    cfg = p["expansion"]["llm"]
    res = generate.run_generate(Path(paths.interim_table(cfg["demonstrations_from"])), language, cfg,
                                Path(paths.expansion_file(f"gpt_candidates_{language}", "candidates.parquet")))
    typer.echo(f"{language}: {res['candidates']} candidates from {res['cells']} prompts "
               f"({res['queried']} queried, {res['cached']} cached)")


@app.command("expand-validate")
def expand_validate(language: str) -> None:
    """NLI-validate the generated candidates of one language."""
    from .expansion import generate

    p = load()
    name = f"gpt_hatecheck_{language}"
    rep = generate.run_validate(Path(paths.expansion_file(f"gpt_candidates_{language}", "candidates.parquet")),
                                p["expansion"]["nli"], p["expansion"]["llm"]["targets"],
                                Path(paths.expanded_table(name)), Path(paths.expansion_file(name, "rejected.parquet")),
                                Path(paths.expansion_file(name, "nli_report.json")))
    typer.echo(f"{name}: accepted {rep['accepted']}/{rep['candidates']}")


@app.command("expand-quality")
def expand_quality() -> None:
    """Self-BLEU 2/3/4 and perplexity of the source and generated suites."""
    from .expansion import generate
    from .phases.expand import quality_tables

    p = load()
    rep = generate.run_quality({k: Path(v) for k, v in quality_tables(p).items()}, p["expansion"]["quality"],
                               Path(paths.expansion_file("reports", "quality.json")))
    typer.echo(f"quality: {sorted(rep['suites'])}")
