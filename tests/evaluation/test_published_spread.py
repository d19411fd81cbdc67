"""The spread Chiu et al. (2022) print next to their Tables 1-3 means
("Standard Error (%)", published.yaml <metric>_se) is the sd across the 100
iterations, the spread the report shows as ± sd: each printed accuracy
spread is of the size of one iteration's binomial sd over its comments
(60 per category, 120 overall), about ten times the standard error of a
mean over 100 iterations."""

import math

import pytest

from hatecheck_pipeline.evaluation import published as P

COMMENTS = {"racist": 60, "sexist": 60, "overall": 120}  # per iteration (6,000 classifications per category)
ITERATIONS = 100


@pytest.mark.parametrize("table", ["gpt3_detection_t1", "gpt3_detection_t2", "gpt3_detection_t3"])
def test_the_printed_spread_is_the_sd_across_iterations_not_the_standard_error_of_the_mean(table):
    rows = P.load()[table]["values"]["GPT-3"]
    assert set(rows) == set(COMMENTS)
    for row, figs in rows.items():
        p = figs["accuracy"] / 100
        one_iteration_sd = 100 * math.sqrt(p * (1 - p) / COMMENTS[row])
        standard_error = one_iteration_sd / math.sqrt(ITERATIONS)
        printed = figs["accuracy_se"]
        assert 0.5 * one_iteration_sd <= printed <= 1.5 * one_iteration_sd, (table, row, printed, one_iteration_sd)
        assert printed > 5 * standard_error, (table, row, printed, standard_error)
