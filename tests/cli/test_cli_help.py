"""The command line as its users meet it: every command and every parameter
has plain help, the commands are grouped (the user's first), options with a
fixed set of values are choices that reject a bad value in one line, the
suites are read one way everywhere, ``-n`` is a dry run, ``--version``
prints the version."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import version
from typing import get_args

import pytest
import typer
import yaml
from conftest import REPO
from typer.testing import CliRunner

from hatecheck_pipeline.cli import suites
from hatecheck_pipeline.cli.app import app, cli
from hatecheck_pipeline.cli.evaluate import ApiFormat, Decision
from hatecheck_pipeline.cli.panels import INSPECT, INTERNALS, REPRODUCE, TEST

ROOT = typer.main.get_command(app)


def commands(group=ROOT, path=()):
    """(path, click command) of every command and group, the app's own first."""
    yield path, group
    for name in getattr(group, "commands", {}):
        yield from commands(group.commands[name], (*path, name))


COMMANDS = list(commands())
IDS = [" ".join(path) or "hatecheck-pipeline" for path, _ in COMMANDS]


def console(capsys, monkeypatch, *args):
    """The console entry point (:func:`cli`) run here: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["hatecheck-pipeline", *args])
    with pytest.raises(SystemExit) as done:
        cli()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_every_command_and_parameter_has_help(path, command):
    assert (command.help or "").strip(), f"{IDS[COMMANDS.index((path, command))]}: no help"
    for param in command.params:
        if not getattr(param, "hidden", False):
            assert (getattr(param, "help", None) or "").strip(), f"{' '.join(path)} {param.name}: no help"


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_help_is_plain_text(path, command):
    """Help is shown as written: no reStructuredText markup, no rich boxes,
    and each command's one-line summary whole in an 80-column terminal
    (click's 78 columns of help less the command names' column)."""
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    for markup in ("``", ":func:", ":mod:", ":class:", "╭", "│"):
        assert markup not in result.output, f"{' '.join(path)} --help shows {markup!r}"
    subcommands = getattr(command, "commands", {})
    for name, sub in subcommands.items():
        summary = sub.get_short_help_str(limit=1000)
        assert len(summary) <= 78 - 6 - max(map(len, subcommands)) and not summary.endswith("..."), f"{name}: {summary!r} is cut"
        assert summary in result.output


def test_commands_are_grouped_the_users_first():
    text = CliRunner().invoke(app, ["--help"]).output
    headings = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings[headings.index("Options") + 1 :] == [TEST, REPRODUCE, INSPECT, INTERNALS]
    listed = [line.split()[0] for line in text.split(TEST + ":")[1].splitlines() if line.startswith("  ")]
    assert listed[:2] == ["evaluate", "diff"] and listed[-2:] == ["run", "docs"]
    assert set(listed) == set(ROOT.commands)


def test_h_is_help():
    assert CliRunner().invoke(app, ["evaluate", "-h"]).output == CliRunner().invoke(app, ["evaluate", "--help"]).output


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (["evaluate", "m", "--decision", "maybe"], "'threshold', 'argmax'"),
        (["evaluate", "m", "--format", "xml"], "'perspective', 'json'"),
    ],
)
def test_a_value_not_among_the_choices_is_one_line(capsys, monkeypatch, args, choices):
    code, out, err = console(capsys, monkeypatch, *args)
    assert code == 2 and not out
    assert err.count("\n") == 1 and err.startswith("error: Invalid value for '--"), err
    assert f"{args[-1]!r} is not one of {choices}" in err and "evaluate --help" in err


def test_an_unknown_option_is_one_line(capsys, monkeypatch):
    code, _, err = console(capsys, monkeypatch, "score", "--suites", "hatecheck", "--predicitons", "p.csv")
    assert code == 2 and err.count("\n") == 1 and "--predicitons" in err, err


def test_the_choices_are_the_schemas():
    """--decision and --format offer exactly the values the parameters schema allows."""
    schema = yaml.safe_load((REPO / "workflow/schemas/params.schema.yaml").read_text("utf-8"))

    def enums(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, dict) and "enum" in value:
                    yield key, value["enum"]
                yield from enums(value)

    found = dict(enums(schema))
    shown = CliRunner().invoke(app, ["evaluate", "--help"]).output
    for option, choices, key in (("--decision", Decision, "decision"), ("--format", ApiFormat, "format")):
        assert list(get_args(choices)) == found[key]
        assert f"{option} <{'|'.join(found[key])}>" in shown


FORMS = [
    ["--suites", "hatecheck,mhc:german"],
    ["--suite", "hatecheck,mhc:german"],
    ["--suite", "hatecheck", "--suite", "mhc:german"],
    ["--suites", "hatecheck", "--suites", "mhc:german"],
    ["--suite", "hatecheck", "--suites", " mhc:german,"],
    ["--suites", "hatecheck,mhc:german", "--suite", "hatecheck"],
]
SUITE_COMMANDS = {  # command -> (the parameter, the other arguments it needs)
    "evaluate": ("suites", ["m"]),
    "score": ("suite", ["--predictions", "p.csv", "--out", "m.json"]),
    "export": ("suite", ["--out", "cases.csv"]),
}


@pytest.mark.parametrize("name", SUITE_COMMANDS)
@pytest.mark.parametrize("form", FORMS, ids=[" ".join(f) for f in FORMS])
def test_suite_and_suites_are_one_option_read_one_way(name, form):
    param, others = SUITE_COMMANDS[name]
    ctx = ROOT.commands[name].make_context(name, [*others, *form])
    assert ctx.params[param] == ["hatecheck", "mhc:german"]


def test_every_list_of_suites_is_that_option():
    """No command reads suites any other way: an option named suite(s) is
    the shared one (diff's takes one suite)."""
    found = {" ".join(path): p for path, c in COMMANDS for p in c.params if p.name in ("suite", "suites") or "--suites" in p.opts}
    assert set(found) == {*SUITE_COMMANDS, "diff"}
    for p in found.values():
        assert set(p.opts) == {"--suite", "--suites"}
    diff = ROOT.commands["diff"]
    assert diff.make_context("diff", ["a", "b", "--suites", "mhc:german"]).params["suite"] == ["mhc:german"]
    with pytest.raises(typer.BadParameter, match="one suite, not 2"):
        diff.make_context("diff", ["a", "b", "--suite", "hatecheck,mhc:german"])


def test_the_suites_parser():
    assert suites.split(["a,b", "b", " c ,", ","]) == ["a", "b", "c"]
    assert suites.model_entries(["hatecheck", "mhc:all", "mhc:hindi"]) == ["hatecheck", "mhc", "mhc_hindi"]
    with pytest.raises(typer.BadParameter, match="no suite named"):
        ROOT.commands["export"].make_context("export", ["--suite", ",", "--out", "x.csv"])


@pytest.fixture
def evaluate_here(workdir, monkeypatch):
    """evaluate in a scratch folder with the project's configuration, its
    Snakemake run replaced by a record of the command."""
    for name in ("params.yaml", "workflow/schemas/params.schema.yaml", "profiles/default/config.yaml"):
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, workdir / name)
    ran = []

    def snakemake(cmd, env, every_s):
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr("hatecheck_pipeline.cli.evaluate.run_with_progress", snakemake)
    return ran


@pytest.mark.parametrize("flag", ["-n", "--dry-run", "--dry"])
def test_n_is_a_dry_run_of_evaluate(evaluate_here, flag):
    result = CliRunner().invoke(app, ["evaluate", "https://api.example/score", "--suites", "hatecheck", "--name", "api", flag])
    assert result.exit_code == 0, result.output
    (cmd,) = evaluate_here
    assert cmd[1] == "-n" and "wrote" not in result.output


def test_without_n_evaluate_runs(evaluate_here):
    CliRunner().invoke(app, ["evaluate", "https://api.example/score", "--suites", "hatecheck", "--name", "api", "--progress", "0"])
    (cmd,) = evaluate_here
    assert "-n" not in cmd


@pytest.mark.parametrize(("flag", "dry"), [("-n", True), ("--dry-run", True), ("--dry", True), ("--force", False)])
def test_n_is_a_dry_run_of_repro(monkeypatch, flag, dry):
    from hatecheck_pipeline.runners import dvc_adapter

    calls = []
    monkeypatch.setattr(dvc_adapter, "reproduce", lambda targets, **kw: calls.append(kw) or [])
    result = CliRunner().invoke(app, ["repro", flag, "report"])
    assert result.exit_code == 0, result.output
    assert calls == [{"force": flag == "--force", "dry": dry}]


def test_version_through_the_console_entry_point():
    proc = subprocess.run([sys.executable, "-m", "hatecheck_pipeline", "--version"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout == f"hatecheck-pipeline {version('hatecheck-pipeline')}\n", proc.stderr
