"""``hatecheck-pipeline diff A B``: what changed between two models per
functional test (evaluation/diff.py), or between one model in this
workspace and at a git revision or DVC experiment (``--rev``)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli.state import fail, load


def predictions_at(path: str, rev: str, folder: Path) -> Path:
    """A DVC-tracked predictions file as it was at ``rev`` (DVC's public
    ``dvc.api.open``: from the cache or the remote), copied into ``folder``."""
    from hatecheck_pipeline.pipeline import dvc_adapter

    dest = folder / f"{rev.replace('/', '_')}-{Path(path).name}"
    try:
        dest.write_bytes(dvc_adapter.read_at(path, rev))
    except Exception as exc:  # DVC raises many kinds: a missing revision, path or cache entry
        fail(f"{path} at {rev}: {' '.join(str(exc).split())[:300]}")
    return dest


def diff(
    a: Annotated[str, typer.Argument(help="model A (a model name of this workspace, or a predictions file)")],
    b: Annotated[Optional[str], typer.Argument(help="model B (as A); omitted with --rev: A in this workspace")] = None,
    suite: Annotated[str, typer.Option(help="hatecheck, mhc:<language> or a registered suite name")] = "hatecheck",
    rev: Annotated[Optional[str], typer.Option(help="a git revision or DVC experiment: A's predictions as they were there")] = None,
    out: Annotated[Optional[Path], typer.Option(help="JSON with every functional test's comparison")] = None,
    samples: Annotated[Optional[int], typer.Option(help="paired resamples (default: evaluation.diff_samples)")] = None,
) -> None:
    """Accuracy of B minus A per functional test, with a paired template-level
    interval; flagged where Holm's correction over the tests still excludes zero."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.evaluation import diff as D
    from hatecheck_pipeline.evaluation import published as P
    from hatecheck_pipeline.evaluation.scoring import ScoringError, resolve_suite
    from hatecheck_pipeline.pipeline.evaluate import bootstrap_keys

    params = load()
    boot = bootstrap_keys("evaluation.diff_samples").value(params)  # as the diff stages get it
    if samples:
        boot = replace(boot, samples=samples)
    try:
        resolved = resolve_suite(suite, params)
    except ScoringError as exc:
        fail(exc)

    def file_of(model: str) -> str:
        return model if Path(model).is_file() else paths.predictions(model, resolved.name)

    with tempfile.TemporaryDirectory() as tmp:
        if rev is not None:
            if b is not None:
                fail("give B or --rev, not both (with --rev, B is A in this workspace)")
            b = a
            file_a, names = str(predictions_at(file_of(a), rev, Path(tmp))), (f"{a}@{rev}", a)
        else:
            if b is None:
                fail("give two models, or one and --rev REV")
            file_a, names = file_of(a), (a, b)
        file_b = file_of(b)
        for f in (file_a, file_b):
            if not Path(f).is_file():
                fail(f"{f}: no predictions (is the model scored on {resolved.name}? `snakemake {f}` builds them)")
        try:
            doc = D.run(resolved, file_a, file_b, out, names, boot)
        except ScoringError as exc:
            fail(exc)
    dataset = "mhc" if resolved.name.startswith("mhc_") else "hatecheck"
    typer.echo(f"{names[1]} minus {names[0]} on {resolved.name} (accuracy, percentage points; paired {doc['bootstrap']['resampling_unit']}-level "
               f"bootstrap, Holm-corrected over {len(doc.get('by_functionality', {}))} functional tests):")
    for code, t in sorted(doc.get("by_functionality", {}).items(), key=lambda kv: P.functionality_order(kv[0], dataset)):
        mark = "  FLAGGED" if t["flagged"] else ""
        typer.echo(f"  {P.functionality_label(code, dataset, short=True):<40} {t['accuracy_a']:5.1f} -> {t['accuracy_b']:5.1f}  "
                   f"{t['difference']:+6.1f} [{t['ci_low']:+.1f}, {t['ci_high']:+.1f}]{mark}")
    o = doc["overall"]
    typer.echo(f"  {'all cases':<40} {o['accuracy_a']:5.1f} -> {o['accuracy_b']:5.1f}  {o['difference']:+6.1f} [{o['ci_low']:+.1f}, {o['ci_high']:+.1f}]")
    typer.echo(f"flagged: {', '.join(doc['flagged']) or 'none'}" + (f" -> {out}" if out else ""))
