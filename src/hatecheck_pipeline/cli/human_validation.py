"""``hatecheck-pipeline human-validation``: GPT-HateCheck's human validation
(Jin et al. 2024, Table 7) as a round trip with annotators.

- ``export``: a sample of the generated cases (every candidate of the
  paper's two target groups, stratified by functionality and target; or a
  seeded draw per cell) as a CSV with blank columns per annotator, its
  answer key and a README with the guidelines' questions;
- ``read``: the returned CSV checked (one line per error: file, line, rule)
  and Table 7 computed, the paper's figures beside ours, into a JSON.

Nothing is computed until annotators return the file: no stage runs this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli.panels import new_app
from hatecheck_pipeline.cli.state import fail

human_app = new_app(
    """GPT-HateCheck's human validation (Table 7).

    export writes a sample of the generated cases for annotators; read checks
    the file they return and computes Table 7. No stage runs this."""
)

SUITE = "gpt_hatecheck_english"


def _default(file: str) -> Path:
    from hatecheck_pipeline.core import paths

    return Path(paths.expansion_file(SUITE, file))


@human_app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Option(help="CSV for the annotators (the key and README are written beside it)")],
    kept: Annotated[Optional[Path], typer.Option(help="the kept cases (default: the validate stage's table.parquet)")] = None,
    rejected: Annotated[Optional[Path], typer.Option(help="the rejected candidates (default: its rejected.parquet)")] = None,
    target: Annotated[
        Optional[list[str]],
        typer.Option(metavar="GROUP", help="a target group to sample (repeatable; default the paper's: 'trans people' and 'none')"),
    ] = None,
    per_cell: Annotated[Optional[int], typer.Option(help="cases drawn per (functionality, target) cell; default all, as the paper")] = None,
    annotators: Annotated[int, typer.Option(help="annotators per message (the paper: 3)")] = 3,
    seed: Annotated[int, typer.Option(help="seed of the draw and of the row order")] = 0,
) -> None:
    """Export the cases to annotate (GPT-HateCheck, Table 7).

    Every candidate of the paper's two target groups, stratified by
    functionality and target (or a seeded draw per cell), as a CSV with
    blank columns per annotator, with its answer key and a README with the
    guidelines' questions beside it."""
    import polars as pl

    from hatecheck_pipeline.evaluation import gpt_human

    kept, rejected = kept or _default("table.parquet"), rejected or _default("rejected.parquet")
    for p in (kept, rejected):
        if not p.exists():
            fail(f"{p}: not found (run the expand_llm_validate_english stage first, or pass --kept/--rejected)")
    cands = gpt_human.candidates_of(pl.read_parquet(kept), pl.read_parquet(rejected))
    doc = gpt_human.export(cands, out, annotators, tuple(target or gpt_human.PAPER_TARGETS), per_cell, seed)
    typer.echo(
        f"{doc['cases']} cases ({doc['nli_kept']} kept by the hypothesis tests) from {doc['cells']} "
        f"(functionality, target) cells -> {doc['file']}; answer key {doc['key']} (do not send it); "
        f"instructions {doc['readme']}"
    )


@human_app.command("read")
def read_cmd(
    annotations: Annotated[Path, typer.Option(help="the CSV the annotators returned")],
    out: Annotated[Path, typer.Option(help="JSON to write (Table 7, ours and the paper's)")],
    key: Annotated[Optional[Path], typer.Option(help="answer key (default: <annotations' export name>.key.csv beside it)")] = None,
) -> None:
    """Check the returned annotations and compute Table 7.

    The returned CSV is checked (one line per error: file, line, rule) and
    Table 7 is computed, the paper's figures beside ours, into a JSON."""
    from hatecheck_pipeline.evaluation import gpt_human, published

    if key is None:
        found = sorted(annotations.parent.glob("*.key.csv"))
        key = gpt_human.key_path(annotations)
        if not key.exists() and len(found) == 1:
            key = found[0]
    if not key.exists():
        fail(f"{key}: answer key not found (pass --key: the .key.csv export wrote)")
    doc = gpt_human.read_and_score(annotations, key, out, published.load().get("gpt_hatecheck_t7"))
    ours = doc["ours"]
    row, ag = ours["rows"]["GPT-HC"], ours["agreement"]
    typer.echo(
        f"{ours['cases']} cases, {ours['annotators_per_case']} annotators: Fleiss' kappa hateful "
        f"{ag['hateful']['fleiss_kappa']} (paper 0.63), functionality {ag['functionality']['fleiss_kappa']}; "
        f"GPT-HC hateful {row['hateful']}%, func_crowd {row['func_crowd']}%, valid {row['valid']}% -> {out}"
    )
