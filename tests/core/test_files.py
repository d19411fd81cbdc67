"""Atomic artifact writes: a write that fails leaves neither a half file nor
its `<output>.tmp` behind."""

import errno

import polars as pl
import pytest

from hatecheck_pipeline.core import files


def disk_full_after_some_bytes(tmp, *args, **kwargs):
    """A writer that starts the temp file, then hits a full disk."""
    with open(tmp, "wb") as fh:
        fh.write(b"partial")
    raise OSError(errno.ENOSPC, "No space left on device", str(tmp))


@pytest.mark.parametrize(
    "writer, value, method",
    [
        (files.write_text, "new", None),
        (files.write_json, {"a": 1}, None),
        (files.write_csv, pl.DataFrame({"a": [1]}), "write_csv"),
        (files.write_parquet, pl.DataFrame({"a": [1]}), "write_parquet"),
    ],
)
def test_a_failed_write_removes_its_temp_file_and_keeps_the_old_output(tmp_path, monkeypatch, writer, value, method):
    target = tmp_path / "out" / "artifact"
    target.parent.mkdir()
    target.write_text("old")
    if method:  # polars writes the temp file
        monkeypatch.setattr(pl.DataFrame, method, lambda self, tmp, *a, **k: disk_full_after_some_bytes(tmp))
    else:
        monkeypatch.setattr("pathlib.Path.write_text", lambda self, *a, **k: disk_full_after_some_bytes(self))
    with pytest.raises(OSError, match="No space left"):
        writer(value, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["artifact"]  # no artifact.tmp
    assert target.read_text() == "old"


def test_a_write_that_succeeds_replaces_the_output(tmp_path):
    target = tmp_path / "a.json"
    files.write_json({"a": 1}, target)
    files.write_json({"a": 2}, target)
    assert files.read_json(target) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
