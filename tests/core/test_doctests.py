"""Docstring examples of modules outside the evaluation layer (that layer's
are run in tests/evaluation/test_eval_metrics.py)."""

import doctest

import pytest

from hatecheck_pipeline.audits import crows
from hatecheck_pipeline.core import cpu
from hatecheck_pipeline.data import schemes
from hatecheck_pipeline.models import base, recipe, runtime
from hatecheck_pipeline.docsite import (
    audits as docs_audits,
    benchmarks as docs_benchmarks,
    figures as docs_figures,
    formatting as docs_format,
)
from hatecheck_pipeline.report import llm as report_llm
from hatecheck_pipeline.report import sections


@pytest.mark.parametrize(
    "module",
    [crows, cpu, schemes, base, recipe, runtime, sections, report_llm, docs_format, docs_benchmarks, docs_audits, docs_figures],
    ids=lambda m: m.__name__,
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
