"""A run that would fill the disk stops before it starts, saying what it
needs and what is free, instead of failing part-way through a training
step with "No space left on device"."""

import shutil

import pytest
from pipeline_utils import require_free_disk


def test_enough_free_space_lets_the_run_start(tmp_path):
    require_free_disk(tmp_path, 0, "a run")


def test_too_little_free_space_fails_at_once_naming_the_need_and_the_free_space(tmp_path):
    free_gib = shutil.disk_usage(tmp_path).free / 2**30
    with pytest.raises(pytest.fail.Exception) as failed:
        require_free_disk(tmp_path, free_gib + 1000, "a huge run")
    message = str(failed.value)
    assert "a huge run" in message and str(tmp_path) in message
    assert f"{free_gib + 1000:g}" in message
