"""A user's classifier function that raises: one line naming the function,
the exception (type and message) and the file:line in the user's code where
it was raised; the full traceback kept in the stage's log."""

from __future__ import annotations

import shutil
import sys

import pytest
from conftest import REPO
from typer.testing import CliRunner

from hatecheck_pipeline.cli.app import app
from hatecheck_pipeline.core.config import dumps
from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.models.user_code import UserCodeError
from hatecheck_pipeline.models import classifiers

USER_CODE = """import json


def _load_weights():
    raise ValueError("no weights in\\n./weights.bin")


def boom(texts):
    return _load_weights()


def parse(texts):
    return json.loads("{")
"""


@pytest.fixture
def user_module(workdir, monkeypatch):
    (workdir / "userraise.py").write_text(USER_CODE)
    (workdir / "userbroken.py").write_text("x = 1\nraise RuntimeError('module-level failure')\n")
    monkeypatch.syspath_prepend(str(workdir))
    yield workdir
    for name in ("userraise", "userbroken"):
        sys.modules.pop(name, None)


def line_of(part: str) -> int:
    """The line of the user's file holding ``part``."""
    return next(i for i, line in enumerate(USER_CODE.splitlines(), 1) if part in line)


def test_a_function_that_raises_is_one_line_naming_it_the_exception_and_the_users_line(user_module):
    clf = classifiers.load("u", {"kind": "python", "model": "userraise:boom"})
    with pytest.raises(UserCodeError) as info:
        clf.p_hateful(["a", "b"])
    message = str(info.value)
    assert isinstance(info.value, PipelineError) and "\n" not in message
    # the deepest frame: the helper the function called, in the user's file
    assert (
        message == f"model u: userraise:boom raised ValueError: no weights in ./weights.bin at userraise.py:{line_of('raise ValueError')}"
    )
    details = info.value.details
    assert details.startswith("Traceback") and "in _load_weights" in details and "in boom" in details


def test_an_exception_from_a_library_names_the_users_line_that_called_it(user_module):
    with pytest.raises(UserCodeError) as info:
        classifiers.load("u", {"kind": "python", "model": "userraise:parse"}).p_hateful(["a"])
    message = str(info.value)
    assert message.startswith("model u: userraise:parse raised JSONDecodeError: ")
    assert message.endswith(f" at userraise.py:{line_of('json.loads')}")  # not json/decoder.py
    assert "json/decoder.py" in info.value.details


def test_a_module_that_raises_on_import_is_one_line(user_module):
    with pytest.raises(
        UserCodeError, match=r"^model u: importing userbroken raised RuntimeError: module-level failure at userbroken.py:2$"
    ):
        classifiers.load("u", {"kind": "python", "model": "userbroken:predict"})


def test_the_stage_prints_one_line_and_keeps_the_traceback_in_its_log(user_module):
    """`hatecheck-pipeline run classifier_<model>` (what both runners call):
    the error is one line naming the log; the log holds the traceback."""
    shutil.copy(REPO / "params.yaml", user_module / "params.yaml")
    (user_module / "workflow/schemas").mkdir(parents=True)
    shutil.copy(REPO / "workflow/schemas/params.schema.yaml", user_module / "workflow/schemas/params.schema.yaml")
    spec = {"kind": "python", "model": "userraise:boom", "suites": ["hatecheck"], "seed": 1}
    result = CliRunner().invoke(app, ["--set", f"models.bad={dumps(spec)}", "run", "classifier_bad"])
    assert isinstance(result.exception, UserCodeError), result.output
    message = str(result.exception)
    assert "\n" not in message and "Traceback" not in result.output
    assert message.startswith("model bad: userraise:boom raised ValueError: no weights in ./weights.bin at userraise.py:")
    assert message.endswith("(traceback in logs/classifier_bad.log)")
    log = (user_module / "logs/classifier_bad.log").read_text()
    assert "Traceback (most recent call last)" in log and "in _load_weights" in log and "ValueError: no weights in" in log


def test_under_snakemake_the_traceback_goes_to_the_log_through_stderr(workdir):
    """A Snakemake job's stderr is its log (``> log 2>&1``): the traceback is
    written there once, in order with the one-line error after it."""
    import subprocess

    log = workdir / "logs/stage.log"
    log.parent.mkdir()
    code = (
        "import sys; from hatecheck_pipeline.runners.compose import keep_traceback; "
        "keep_traceback('logs/stage.log', 'Traceback: the frames'); print('error: one line', file=sys.stderr)"
    )
    with log.open("w") as fh:
        subprocess.run(
            [sys.executable, "-c", code],
            stdout=fh,
            stderr=subprocess.STDOUT,
            check=True,
            cwd=workdir,
            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        )
    assert log.read_text().splitlines() == ["Traceback: the frames", "error: one line"]
