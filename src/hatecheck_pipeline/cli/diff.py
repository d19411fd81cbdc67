"""``hatecheck-pipeline diff A B``: what changed between two models per
functional test (evaluation/diff.py), or between one model in this
workspace and at a git revision or DVC experiment (``--rev``).

``--check`` makes it a release gate: exit 1 when any functional test is
flagged worse for B (printing those tests and the cases that went from
right to wrong), 0 when none is, 2 when the comparison could not be made."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli import suites as suite_names
from hatecheck_pipeline.cli.state import fail, load

SHOWN_CASES = 5  # cases that went from right to wrong printed per worse test (all of them are in --out)


def predictions_at(path: str, rev: str, folder: Path, code: int = 1) -> Path:
    """A DVC-tracked predictions file as it was at ``rev`` (DVC's public
    ``dvc.api.open``: from the cache or the remote), copied into ``folder``."""
    from hatecheck_pipeline.runners import dvc_adapter

    dest = folder / f"{rev.replace('/', '_')}-{Path(path).name}"
    try:
        dest.write_bytes(dvc_adapter.read_at(path, rev))
    except Exception as exc:  # DVC raises many kinds: a missing revision, path or cache entry
        fail(f"{path} at {rev}: {' '.join(str(exc).split())[:300]}", code)
    return dest


def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="model A (a model name of this workspace, or a predictions file)")],
    b: Annotated[Optional[str], typer.Argument(metavar="B", help="model B (as A); omitted with --rev: A in this workspace")] = None,
    suite: Annotated[
        list[str], suite_names.option("the suite to compare on: hatecheck, mhc:<language> or a registered suite name", several=False)
    ] = ["hatecheck"],
    rev: Annotated[Optional[str], typer.Option(help="a git revision or DVC experiment: A's predictions as they were there")] = None,
    out: Annotated[Optional[Path], typer.Option(help="JSON with every functional test's comparison")] = None,
    samples: Annotated[Optional[int], typer.Option(help="random sign draws of the paired test (default: evaluation.diff_samples)")] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="a release gate: exit 1 when any functional test is flagged worse for B, "
            "0 otherwise (2: the comparison could not be made)",
        ),
    ] = False,
) -> None:
    """What changed between two models per functional test.

    Accuracy of B minus A per functional test, with the paired sign-flip
    test's interval and p-value; flagged where Holm's adjusted p-value is at
    most 1 - ci_level, worse where flagged with B below A."""
    from hatecheck_pipeline.cli.tools import ensure_tables
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.core.errors import PipelineError
    from hatecheck_pipeline.evaluation import diff as D
    from hatecheck_pipeline.evaluation.scoring import ScoringError, resolve_suite
    from hatecheck_pipeline.pipeline.evaluate import bootstrap_keys

    error = 2 if check else 1  # a gate tells "worse" (1) from "could not compare" (2)
    params = load()
    boot = bootstrap_keys("evaluation.diff_samples").value(params)  # as the diff stages get it
    if samples:
        boot = replace(boot, samples=samples)
    try:
        resolved = resolve_suite(suite[0], params)
        ensure_tables(params, [resolved])  # a fresh clone builds the suite's gold table first, as `score` does
    except (ScoringError, PipelineError) as exc:
        fail(exc, error)

    def file_of(model: str) -> str:
        return model if Path(model).is_file() else paths.predictions(model, resolved.name)

    with tempfile.TemporaryDirectory() as tmp:
        if rev is not None:
            if b is not None:
                fail("give B or --rev, not both (with --rev, B is A in this workspace)", error)
            b = a
            typer.echo(f"reading {file_of(a)} as it was at {rev} (DVC)", err=True)
            file_a, names = str(predictions_at(file_of(a), rev, Path(tmp), error)), (f"{a}@{rev}", a)
        else:
            if b is None:
                fail("give two models, or one and --rev REV", error)
            file_a, names = file_of(a), (a, b)
        file_b = file_of(b)
        for f in (file_a, file_b):
            if not Path(f).is_file():
                fail(f"{f}: no predictions (is the model scored on {resolved.name}? `snakemake {f}` builds them)", error)
        typer.echo(
            f"testing {names[1]} against {names[0]} on {resolved.name}: a paired test per functional test "
            f"(up to {boot.samples} random sign draws each)",
            err=True,
        )
        try:
            doc = D.run(resolved, file_a, file_b, out, names, boot)
        except (ScoringError, PipelineError) as exc:
            fail(exc, error)
    for line in report_lines(doc, resolved.dataset, out):
        typer.echo(line)
    if check and gate_failures(doc):
        raise typer.Exit(code=1)


def gate_failures(doc: dict) -> list[str]:
    """The functional tests flagged worse for B (on a suite without
    functional tests: ``all cases`` when it is)."""
    if "by_functionality" in doc:
        return list(doc["worse"])
    return ["all cases"] if doc["overall"].get("worse") else []


def report_lines(doc: dict, dataset: str, out: Path | None) -> list[str]:
    """What ``diff`` prints: one line per functional test (A -> B, the
    difference with its interval, p and Holm's adjusted p, the verdict),
    then each test flagged worse with the cases that went from right to
    wrong."""
    from hatecheck_pipeline.evaluation import published as P

    dataset = "mhc" if dataset == "mhc" else "hatecheck"
    tests = doc.get("by_functionality", {})
    method = (
        "templates" + (" and fillers" if doc["bootstrap"].get("fillers") else "")
        if doc["bootstrap"]["resampling_unit"] == "template"
        else "cases"
    )
    lines = [
        f"{doc['b']['model']} minus {doc['a']['model']} on {doc['suite']} (accuracy, percentage points; paired sign-flip test "
        f"over {method}, Holm-adjusted over {len(tests)} functional tests):"
    ]

    def line(label: str, t: dict) -> str:
        verdict = "  WORSE" if t.get("worse") else "  FLAGGED" if t.get("flagged") else ""
        return (
            f"  {label:<40} {t['accuracy_a']:5.1f} -> {t['accuracy_b']:5.1f}  {t['difference']:+6.1f} "
            f"[{t['ci_low']:+.1f}, {t['ci_high']:+.1f}]  p={t['p_value']:.4g} holm={t['p_holm']:.4g}{verdict}"
        )

    ordered = sorted(tests.items(), key=lambda kv: P.functionality_order(kv[0], dataset))
    lines += [line(P.functionality_label(code, dataset, short=True), t) for code, t in ordered]
    lines.append(line("all cases", doc["overall"]))
    lines.append(
        f"flagged: {', '.join(doc['flagged']) or 'none'}; worse: {', '.join(doc.get('worse', [])) or 'none'}"
        + (f" -> {out}" if out else "")
    )
    worse = [(code, t) for code, t in ordered if t.get("worse")] or ([("all cases", doc["overall"])] if doc["overall"].get("worse") else [])
    for code, t in worse:
        label = code if code == "all cases" else P.functionality_label(code, dataset, short=True)
        lines.append(f"{label}: {t['n_went_wrong']} case(s) right for {doc['a']['model']}, wrong for {doc['b']['model']}:")
        for c in t.get("went_wrong", [])[:SHOWN_CASES]:
            lines.append(f"    {c['id']}  [{c['gold']}]  {str(c.get('text', '')).strip()}")
        if t["n_went_wrong"] > SHOWN_CASES:
            lines.append(f"    ... {t['n_went_wrong'] - SHOWN_CASES} more" + (f" in {out}" if out else " (--out writes them all)"))
    return lines
