"""Every module's docstring examples run: the modules are found by their
``>>>`` lines, so a new module's examples are tested without being listed."""

import doctest
import importlib

import pytest
from conftest import REPO

SRC = REPO / "src"


def modules_with_examples() -> list[str]:
    names = []
    for path in sorted((SRC / "hatecheck_pipeline").rglob("*.py")):
        if ">>>" in path.read_text("utf-8"):
            names.append(".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__"))
    return names


def test_the_examples_are_found():
    found = modules_with_examples()
    assert len(found) > 40 and "hatecheck_pipeline.core.codedeps" in found and "hatecheck_pipeline.runners.schedule" in found


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
