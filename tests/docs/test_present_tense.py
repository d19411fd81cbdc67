"""The code, its configuration, its tests and its documentation describe
what is true now: none of them names a work item of the project's tracker
("issue" or "stop" with a number) or a working sitting of whoever wrote it.
The history of the work lives with the records (benchmarks/records/) and in
git. The generated pages (docs/generated/), the recorded runs (docs/runs/)
and the records (benchmarks/records/) are left out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

# A numbered work item ("issue" or "stop", a number, maybe a "#").
WORK_ITEM = re.compile(r"\b(?:issue|stop)s?\s+#?\d+\b", re.I)
# A working sitting: "session" after a determiner or a count. An HTTP
# session, an ONNX InferenceSession or pytest's session scope (scope=,
# "the pytest session") is left alone.
SITTING = re.compile(
    r"\b(?:this|that|the|a|an|each|every|one|another|same|next|earlier|previous|later|other)\s+sessions?\b"
    r"|\d+\s+sessions\b",
    re.I,
)
# the examples below spell the words through these, so this file passes its own test
I, S, ST = "issue", "session", "stop"

ROOTS = ("src", "tests", "docs", "benchmarks", "scripts", "workflow", "Snakefile", "params.yaml", "pyproject.toml", "README.md")
# rendered from records, and the records themselves (the history)
GENERATED = ("docs/generated", "docs/runs", "benchmarks/records")


def checked_files() -> list[Path]:
    out = []
    for root in ROOTS:
        path = REPO / root
        for file in sorted([path] if path.is_file() else path.rglob("*")):
            rel = file.relative_to(REPO).as_posix()
            if not file.is_file() or "__pycache__" in file.parts or rel.startswith(GENERATED):
                continue
            out.append(file)
    return out


def matches(text: str) -> list[re.Match]:
    return sorted((m for rule in (WORK_ITEM, SITTING) for m in rule.finditer(text)), key=lambda m: m.start())


def hits(text: str) -> list[str]:
    return [" ".join(m.group(0).split()) for m in matches(text)]


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"the cluster bootstrap ({I} 30, point 1)", [f"{I} 30"]),
        (f"{I.title()} 30's 'done when'", [f"{I.title()} 30"]),
        (f"{ST} 52's fp32 screens", [f"{ST} 52"]),
        (f"see {I}s #5 and more", [f"{I}s #5"]),
        (f"quoted in {I}\n    32's record", [f"{I} 32"]),
        (f"measured under this {S}'s load", [f"this {S}"]),
        (f"in an earlier {S} the same day", [f"earlier {S}"]),
        (f"a host shared by ~7 {S}s", [f"7 {S}s"]),
        ("self.session = requests.Session()", []),
        ("ort.InferenceSession(path)", []),
        ('@pytest.fixture(scope="session")', []),
        ("collected once for the pytest session", []),
        ("A kept HTTP session against the endpoint", []),
        ("the issue owner decides; stop the run at 5", []),
    ],
)
def test_the_rule_finds_work_tracking_words_only(text, expected):
    assert hits(text) == expected


def test_the_files_are_found():
    files = {f.relative_to(REPO).as_posix() for f in checked_files()}
    assert {"params.yaml", "README.md", "docs/performance.md", "tests/conftest.py"} <= files
    assert any(f.startswith("src/hatecheck_pipeline/") for f in files)
    assert not any(f.startswith(GENERATED) for f in files)


def test_no_work_tracking_words():
    found = []
    for file in checked_files():
        try:
            text = file.read_text("utf-8")
        except UnicodeDecodeError:
            continue  # a binary fixture
        # a match may span a line break ("issue" at a line's end, its number on the next)
        found += [f"{file.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}" for m in matches(text)]
    assert not found, "work-tracking words (describe what is true now):\n" + "\n".join(found)
