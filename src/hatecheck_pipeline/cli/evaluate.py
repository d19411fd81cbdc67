"""``hatecheck-pipeline evaluate MODEL``: test a classifier on the chosen
suites in one command, without editing params.yaml.

The model becomes a ``models.<name>`` entry given to Snakemake as a
``--config`` override, so the same registry builds exactly what its page
needs (in a fresh clone: the chosen suites' data stages too), the same
stages predict and score it, and the page is the ``model_page_<name>``
stage's. Stages of this model are not in ``dvc.yaml`` (the model is not in
params.yaml): Snakemake runs them and records only the declared stages it
ran (the data stages) in ``dvc.lock``. When Snakemake finishes, the
command prints a summary of the metrics files (:func:`summary_lines`); when
a stage fails, its one-line error (:func:`failed_stage_lines`), the
traceback staying in the stage's log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

import typer

from hatecheck_pipeline.cli import suites as suite_names
from hatecheck_pipeline.cli.state import STATE, fail, load
from hatecheck_pipeline.evaluation.scoring import model_failures

# The choices of --decision and --format: the parameters schema's enums of a
# model's decision and a scoring API's format (tests/cli check they agree).
Decision = Literal["threshold", "argmax"]
ApiFormat = Literal["perspective", "json"]


def model_name(ref: str) -> str:
    """A model name from its reference (file or folder stem, hub id, function).

    >>> model_name("/tmp/my-model.onnx"), model_name("cardiffnlp/twitter-roberta-base-hate"), model_name("pkg.clf:predict")
    ('my-model', 'twitter-roberta-base-hate', 'clf')
    """
    stem = Path(ref.rstrip("/")).stem if ":" not in ref or Path(ref).exists() else ref.split(":", 1)[0].rsplit(".", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", stem.split("/")[-1]) or "model"


WORKFLOW_PROFILE = Path("profiles/default/config.yaml")
QUIET_PROFILE = Path(".snakemake/hatecheck-evaluate")


def quiet_profile(source: Path = WORKFLOW_PROFILE, folder: Path = QUIET_PROFILE) -> Path | None:
    """The workflow profile without ``show-failed-logs``, for ``evaluate``'s
    Snakemake run: a failed stage's log may hold a traceback (a user's
    classifier that raised), and ``evaluate`` prints each failed stage's
    one-line error itself (:func:`failed_stage_lines`). None where the
    project has no workflow profile."""
    import yaml

    if not source.exists():
        return None
    settings = yaml.safe_load(source.read_text("utf-8")) or {}
    settings.pop("show-failed-logs", None)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(
        "# profiles/default/config.yaml without show-failed-logs (written by `evaluate`)\n" + yaml.safe_dump(settings, sort_keys=False),
        "utf-8",
    )
    return folder


def error_line(log: Path) -> str:
    """A failed stage's one-line error: the last ``error:`` line of its log,
    else its last line (an unexpected exception's type and message)."""
    try:
        lines = [line.strip() for line in log.read_text("utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"no log ({log})"
    errors = [line for line in lines if line.startswith("error: ")]
    return errors[-1][len("error: ") :] if errors else (lines[-1] if lines else "empty log")


def failed_stage_lines(params: Mapping[str, Any], started: float) -> list[str]:
    """One line per stage that failed in a run begun at ``started``: its log
    was written during the run and its outputs are not all there."""
    from hatecheck_pipeline.pipeline.registry import build_stages
    from hatecheck_pipeline.runners.compose import stages_that_ran

    failed = [s for s in stages_that_ran(build_stages(params), started) if not all(os.path.lexists(o) for o in s.all_outs)]
    lines = [(s, error_line(Path(s.log))) for s in failed]
    return [f"{s.name}: {line}" + ("" if s.log in line else f" (log: {s.log})") for s, line in lines]


def _figure(fig: Mapping[str, Any] | None) -> str:
    """A figure with its interval, as the summary prints it.

    >>> _figure({"value": 61.25, "ci_low": 59.0, "ci_high": 63.1}), _figure({"value": None}), _figure({"value": 70.0})
    ('61.2 (59.0–63.1)', 'n/a', '70.0')
    """
    if not fig or fig.get("value") is None:
        return "n/a"
    ci = f" ({fig['ci_low']:.1f}–{fig['ci_high']:.1f})" if fig.get("ci_low") is not None and fig.get("ci_high") is not None else ""
    return f"{fig['value']:.1f}{ci}"


def interval_level(docs: Mapping[str, Mapping[str, Any] | None]) -> str:
    """The intervals' level as the summary's header names it ("90% "), from
    the metrics documents' ``bootstrap.level``; "" where they record none
    or differ.

    >>> interval_level({"a": {"bootstrap": {"level": 0.9}}, "b": None}), interval_level({"a": {}})
    ('90% ', '')
    """
    levels = {(doc.get("bootstrap") or {}).get("level") for doc in docs.values() if doc}
    return f"{100 * levels.pop():g}% " if len(levels) == 1 and None not in levels else ""


def summary_lines(model: str, docs: Mapping[str, Mapping[str, Any] | None], below_mark: float, failures: Mapping[str, str]) -> list[str]:
    """The terminal summary of an ``evaluate`` run: per suite (``docs``:
    suite -> its metrics document, None when not written) n, accuracy and
    macro F1 with their intervals (at the level the metrics documents
    record, ``evaluation.ci_level``), the functional tests whose accuracy
    is below ``below_mark`` and where the failing cases are (``failures``:
    suite -> failures.csv)."""
    from hatecheck_pipeline.evaluation.published import functionality_label

    lines = [f"{model}: accuracy and macro F1 in %, with {interval_level(docs)}bootstrap intervals; functional tests below {below_mark:g}%"]
    width = max((len(s) for s in docs), default=0)
    for suite, doc in docs.items():
        if not doc:
            lines.append(f"  {suite:<{width}}  no metrics written")
            continue
        o = doc.get("overall", {})
        lines.append(
            f"  {suite:<{width}}  n={o.get('n', '?')}  accuracy {_figure(o.get('accuracy'))}  macro F1 {_figure(o.get('macro_f1'))}"
            + ("  (its training data)" if doc.get("seen_in_training") else "")
            + (f"  ({o['n_unanswered']} unanswered by the API, not scored)" if o.get("n_unanswered") else "")
        )
        tests = doc.get("by_functionality") or {}
        below = [
            (code, t["accuracy"]["value"])
            for code, t in tests.items()
            if t.get("accuracy", {}).get("value") is not None and t["accuracy"]["value"] < below_mark
        ]
        if tests:
            lines.append(
                f"  {'':<{width}}  below {below_mark:g}%: "
                + (
                    ", ".join(f"{functionality_label(code, doc.get('dataset') or 'hatecheck', short=True)} {v:.1f}" for code, v in below)
                    or "none"
                )
            )
        if suite in failures:
            lines.append(f"  {'':<{width}}  failing cases: {failures[suite]}")
    return lines


def evaluation_summary(model: str, suites: list[str], below_mark: float) -> list[str]:
    """:func:`summary_lines` from the score stages' files
    (results/<model>/<suite>/metrics.json and failures.csv)."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.core.files import read_json

    docs = {s: read_json(paths.metrics(model, s)) if Path(paths.metrics(model, s)).exists() else None for s in suites}
    failures = {s: model_failures(model, s) for s in suites if Path(model_failures(model, s)).exists()}
    return summary_lines(model, docs, below_mark, failures)


def evaluate(
    model: Annotated[
        str,
        typer.Argument(metavar="MODEL", help="a model directory, a hub id, an .onnx file, module:function or a scoring API's URL"),
    ],
    suites: Annotated[
        list[str],
        suite_names.option("the suites: hatecheck, mhc:all, mhc:<language>, heldout_<dataset> or an expanded suite group"),
    ] = ["hatecheck", "mhc:all"],
    name: Annotated[Optional[str], typer.Option(help="the model's name in results/ and reports/models/ (default: from MODEL)")] = None,
    hateful: Annotated[
        Optional[str], typer.Option(help="comma-separated classes counted hateful (labels or indices; default: guessed from the labels)")
    ] = None,
    classes: Annotated[Optional[str], typer.Option(help="ONNX: the output's classes in order, comma-separated")] = None,
    input_name: Annotated[Optional[str], typer.Option("--input", help="ONNX: the texts' input (default: its one string input)")] = None,
    output: Annotated[Optional[str], typer.Option(help="ONNX: the probabilities output (default: the one named *prob*)")] = None,
    decision: Annotated[
        Optional[Decision],
        typer.Option(help="threshold: p(hateful) >= prediction.threshold; argmax: a hateful class on top (default: threshold)"),
    ] = None,
    revision: Annotated[Optional[str], typer.Option(help="hub id: the revision")] = None,
    max_length: Annotated[Optional[int], typer.Option(help="pretrained: tokens per text (default 128)")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="texts per forward pass")] = None,
    api_format: Annotated[
        Optional[ApiFormat],
        typer.Option(
            "--format",
            help="a scoring API's format: Perspective's comments:analyze, or json ({\"text\": ...} in, score out); default perspective",
        ),
    ] = None,
    key_env: Annotated[Optional[str], typer.Option(help="a scoring API: the environment variable holding its key")] = None,
    concurrency: Annotated[Optional[int], typer.Option(help="a scoring API: requests in flight at once (default 4)")] = None,
    rate: Annotated[
        Optional[float], typer.Option(help="a scoring API: requests per second at most, all in flight together (default 1)")
    ] = None,
    snapshot: Annotated[
        Optional[str],
        typer.Option(
            help="a scoring API: the name of this audit's answers (default: the month of the "
            "first request, e.g. 2026-12); a new one asks every text again"
        ),
    ] = None,
    cores: Annotated[int, typer.Option("--cores", "-c", help="Snakemake's --cores: stages run at once")] = 2,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="print the Snakemake command and what it would run; run nothing")
    ] = False,
    dry: Annotated[bool, typer.Option("--dry", hidden=True, help="the same as --dry-run")] = False,
    progress_every: Annotated[
        float, typer.Option("--progress", help="seconds between the running stages' progress lines on stderr (0: none)")
    ] = 10.0,
) -> None:
    """Test a classifier on the chosen suites, with its page.

    Every suite's metrics and failing cases, one HTML page
    (reports/models/<name>.html), and a summary on the terminal (per suite
    n, accuracy and macro F1 with their intervals, the functional tests
    below the mark). Snakemake builds what the page needs, the suites' data
    included."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.core.config import SCHEMA_FILE, ConfigError, apply_and_validate, dumps
    from hatecheck_pipeline.models import classifier_spec, classifiers
    from hatecheck_pipeline.models.kinds.http import check_snapshot

    dry = dry or dry_run
    params = load()
    name = name or model_name(model) + (f"-{snapshot}" if snapshot else "")  # two snapshots of one API: two models to diff
    if name in params["models"]:
        fail(f"model {name!r} is already in params.yaml's models: pick another --name")
    try:
        spec = classifier_spec.classifier_spec(
            model,
            hateful=hateful.split(",") if hateful else None,
            classes=classes.split(",") if classes else None,
            input_name=input_name,
            output=output,
            decision=decision,
            revision=revision,
            max_length=max_length,
            batch_size=batch_size,
            api_format=api_format,
            key_env=key_env,
            suites=suite_names.model_entries(suites),
        )
        for key, value in (("concurrency", concurrency), ("rate_per_s", rate), ("snapshot", snapshot)):
            if value is not None:
                if spec["kind"] != "http":
                    raise classifiers.ClassifierError(f"{model}: --{'rate' if key == 'rate_per_s' else key} is for a scoring API's URL")
                spec[key] = check_snapshot(name, value) if key == "snapshot" else value
        full = apply_and_validate(params, {f"models.{name}": spec}, Path(SCHEMA_FILE), f"evaluate {model}")
    except (classifiers.ClassifierError, ConfigError) as exc:
        fail(exc)
    overrides = [f"models.{name}={dumps(spec)}", *STATE["overrides"]]
    page = paths.model_page(name)
    cmd = [str(Path(sys.executable).with_name("snakemake")), "--cores", str(cores), page, "--config", f"set={json.dumps(overrides)}"]
    if dry:
        cmd.insert(1, "-n")
    profile = quiet_profile()
    if profile is not None:
        cmd += ["--workflow-profile", str(profile)]
    typer.echo(f"{name}: {spec['kind']} {spec['model']} on {', '.join(spec['suites'])}", err=True)
    # a module:function in the working folder imports in every stage command
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    started = time.time()
    done = run_with_progress(cmd, env, 0 if dry else progress_every)
    if done.returncode != 0:
        for line in failed_stage_lines(full, started - 1):
            typer.echo(f"error: {line}", err=True)
        fail(f"snakemake stopped (exit {done.returncode}); the log of each stage that failed is under logs/")
    if not dry:
        from hatecheck_pipeline.suites.languages import not_run_suites, suites_run

        typer.echo(f"wrote {page} and results/{name}/<suite>/metrics.json, failures.csv")
        typer.echo("\n".join(evaluation_summary(name, [s.name for s in suites_run(full, name)], full["evaluation"]["below_mark"])))
        for suite, why in not_run_suites(full, name).items():  # e.g. outside a scoring API's languages
            typer.echo(f"  {suite}  {why}")


def run_with_progress(cmd: list[str], env: dict[str, str], every_s: float) -> subprocess.CompletedProcess:
    """Snakemake's run, with each running stage's latest progress line (its
    log's, which Snakemake keeps off the terminal) on stderr every
    ``every_s`` seconds while it runs (runners/progress.py)."""
    import threading

    from hatecheck_pipeline.runners import progress

    proc = subprocess.Popen(cmd, env=env)
    finished, reporter = threading.Event(), None
    if every_s > 0:
        reporter = threading.Thread(
            target=progress.report_while,
            args=(lambda: not finished.is_set(),),
            kwargs={"interval_s": every_s, "sleep": finished.wait},
            daemon=True,
        )
        reporter.start()
    returncode = proc.wait()
    finished.set()  # wakes the reporter at once
    if reporter is not None:
        reporter.join()
    return subprocess.CompletedProcess(cmd, returncode)
