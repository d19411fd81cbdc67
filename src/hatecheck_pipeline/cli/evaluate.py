"""``hatecheck-pipeline evaluate MODEL``: test a classifier on the chosen
suites in one command, without editing params.yaml.

The model becomes a ``models.<name>`` entry given to Snakemake as a
``--config`` override, so the same registry builds exactly what its page
needs (in a fresh clone: the chosen suites' data stages too), the same
stages predict and score it, and the page is the ``model_page_<name>``
stage's. Stages of this model are not in ``dvc.yaml`` (the model is not in
params.yaml): Snakemake runs them and records only the declared stages it
ran (the data stages) in ``dvc.lock``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from hatecheck_pipeline.cli.state import STATE, fail, load


def suite_entries(suites: str) -> list[str]:
    """``--suites`` as a model's ``suites`` entries.

    >>> suite_entries("hatecheck,mhc:all,mhc:german,heldout_davidson2017")
    ['hatecheck', 'mhc', 'mhc_german', 'heldout_davidson2017']
    """
    out = []
    for item in (s.strip() for s in suites.split(",") if s.strip()):
        if item == "mhc:all":
            out.append("mhc")
        elif item.startswith("mhc:"):
            out.append("mhc_" + item[len("mhc:"):])
        else:
            out.append(item)
    return out


def model_name(ref: str) -> str:
    """A model name from its reference (file or folder stem, hub id, function).

    >>> model_name("/tmp/my-model.onnx"), model_name("cardiffnlp/twitter-roberta-base-hate"), model_name("pkg.clf:predict")
    ('my-model', 'twitter-roberta-base-hate', 'clf')
    """
    stem = Path(ref.rstrip("/")).stem if ":" not in ref or Path(ref).exists() else ref.split(":", 1)[0].rsplit(".", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", stem.split("/")[-1]) or "model"


def evaluate(
    model: Annotated[str, typer.Argument(help="a model directory, a hub id, an .onnx file, module:function or a scoring API's URL")],
    suites: Annotated[str, typer.Option(help="comma-separated: hatecheck, mhc:all, mhc:<language>, heldout_<dataset>, an expanded suite group")] = "hatecheck,mhc:all",
    name: Annotated[Optional[str], typer.Option(help="the model's name in results/ and reports/models/ (default: from MODEL)")] = None,
    hateful: Annotated[Optional[str], typer.Option(help="comma-separated classes counted hateful (labels or indices; default: guessed from the labels)")] = None,
    classes: Annotated[Optional[str], typer.Option(help="ONNX: the output's classes in order, comma-separated")] = None,
    input_name: Annotated[Optional[str], typer.Option("--input", help="ONNX: the texts' input (default: its one string input)")] = None,
    output: Annotated[Optional[str], typer.Option(help="ONNX: the probabilities output (default: the one named *prob*)")] = None,
    decision: Annotated[Optional[str], typer.Option(help="threshold (p(hateful) >= prediction.threshold) or argmax (a hateful class on top)")] = None,
    revision: Annotated[Optional[str], typer.Option(help="hub id: the revision")] = None,
    max_length: Annotated[Optional[int], typer.Option(help="pretrained: tokens per text (default 128)")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="texts per forward pass")] = None,
    api_format: Annotated[Optional[str], typer.Option("--format", help="a scoring API's format: perspective (default) or json")] = None,
    key_env: Annotated[Optional[str], typer.Option(help="a scoring API: the environment variable holding its key")] = None,
    cores: Annotated[int, typer.Option(help="Snakemake --cores")] = 2,
    dry: Annotated[bool, typer.Option("--dry", help="print the Snakemake command and what it would run; run nothing")] = False,
) -> None:
    """Test a classifier on the chosen suites: every suite's metrics and one
    HTML page (reports/models/<name>.html)."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.core.config import ConfigError, apply_and_validate, dumps
    from hatecheck_pipeline.models import classifier_spec, classifiers

    params = load()
    name = name or model_name(model)
    if name in params["models"]:
        fail(f"model {name!r} is already in params.yaml's models: pick another --name")
    try:
        spec = classifier_spec.classifier_spec(
            model, hateful=hateful.split(",") if hateful else None, classes=classes.split(",") if classes else None,
            input_name=input_name, output=output, decision=decision, revision=revision, max_length=max_length,
            batch_size=batch_size, api_format=api_format, key_env=key_env, suites=suite_entries(suites),
        )
        apply_and_validate(params, {f"models.{name}": spec}, Path("workflow/schemas/params.schema.yaml"), f"evaluate {model}")
    except (classifiers.ClassifierError, ConfigError) as exc:
        fail(exc)
    overrides = [f"models.{name}={dumps(spec)}", *STATE["overrides"]]
    page = paths.model_page(name)
    cmd = [str(Path(sys.executable).with_name("snakemake")), "--cores", str(cores), page, "--config", f"set={json.dumps(overrides)}"]
    if dry:
        cmd.insert(1, "-n")
    typer.echo(f"{name}: {spec['kind']} {spec['model']} on {', '.join(spec['suites'])}", err=True)
    # a module:function in the working folder imports in every stage command
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(cmd, env=env)
    if done.returncode != 0:
        fail(f"snakemake stopped (exit {done.returncode}); the log of the stage that failed is under logs/")
    if not dry:
        typer.echo(f"wrote {page} and results/{name}/<suite>/metrics.json")
