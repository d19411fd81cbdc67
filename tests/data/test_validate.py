import json

import polars as pl
import pytest

from hatecheck_pipeline.data import validate


def table(**overrides):
    base = {
        "id": ["1", "2", "3", "4"],
        "text": ["a", "b", "c", "d"],
        "label": ["hateful", "non-hateful", "non-hateful", "non-hateful"],
        "label_original": ["1", "0", "0", "0"],
        "language": ["english"] * 4,
        "dataset": ["toy"] * 4,
        "split": ["train", "train", "dev", "test"],
    }
    base.update(overrides)
    return pl.DataFrame(base)


def counts(n=4, q=0):
    return {"raw_rows": n + q, "kept": n, "quarantined": q}


def test_clean_table_passes():
    report = validate.validate_table("toy", table(), counts(), 0.25, 0.01, None)
    assert report["success"], validate.failure_message(report)


def test_failures_name_dataset_expectation_and_rows(tmp_path):
    bad = table(id=["1", "1", "3", "4"], label=["hateful", "maybe", "non-hateful", "non-hateful"], text=["a", "b", "c", "a"])
    path = tmp_path / "t.parquet"
    bad.write_parquet(path)
    (tmp_path / "c.json").write_text(json.dumps(counts()))
    with pytest.raises(validate.ValidationFailed) as err:
        validate.validate("toy", path, tmp_path / "c.json", tmp_path / "r.json", tmp_path / "r.md", tolerance=0.01, published_balance=0.25)
    msg = str(err.value)
    assert "'toy'" in msg
    assert "expect_column_values_to_be_unique" in msg and "id='1'" in msg
    assert "expect_column_values_to_be_in_set" in msg and "'maybe'" in msg
    assert "_text_in_train_and_test" in msg  # "a" is in train and test
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["success"] is False
    assert "FAIL" in (tmp_path / "r.md").read_text()


def test_validation_draws_no_progress_bar(capfd):
    # GX's "Calculating Metrics" tqdm bars would land on the terminal of
    # `score` and in every validation stage's log
    capfd.readouterr()
    report = validate.validate_table("toy", table(), counts(), 0.25, 0.01, None)
    out, err = capfd.readouterr()
    assert report["suites"] and report["success"]
    assert "Calculating Metrics" not in err + out and "\r" not in err + out and "it/s" not in err


def test_class_balance_and_row_accounting():
    # 6 raw rows, 1 quarantined, but only 4 kept: one row went missing
    report = validate.validate_table("toy", table(), {"raw_rows": 6, "kept": 4, "quarantined": 1}, 0.5, 0.01, None)
    failed = {c["expectation"] for s in report["suites"] for c in s["checks"] if not c["success"]}
    assert failed == {"expect_column_mean_to_be_between", "expect_table_row_count_to_equal"}


def test_suite_counts_per_mhc_language():
    t = table(language=["german", "german", "dutch", "dutch"], split=["test"] * 4)
    report = validate.validate_table("mhc", t, counts(), None, 0.01, {"german": 2, "dutch": 3})
    by_suite = {s["suite"]: s["success"] for s in report["suites"]}
    assert by_suite == {"mhc": True, "mhc_dutch": False, "mhc_german": True}


def test_load_gx_defers_what_the_pandas_checks_never_use(tmp_path):
    """In a fresh process: after load_gx(), scipy.stats and altair are
    stand-ins (loaded on first use, then the real modules), sqlalchemy is
    not imported yet importable, and a suite still runs."""
    import subprocess
    import sys

    code = """
import sys, types
from hatecheck_pipeline.data import validate
gx = validate.load_gx()
mods = sys.modules
print(type(mods["scipy.stats"]).__name__, type(mods["altair"]).__name__, "sqlalchemy" in mods)
import polars as pl
frame = pl.DataFrame({"id": ["1", "2"]})
print(validate.run_suite("t", frame, [gx.expectations.ExpectColumnValuesToBeUnique(column="id")])["success"])
from scipy import stats
half = round(float(stats.norm.cdf(0.0)), 2)
print(type(mods["scipy.stats"]).__name__, half, stats.norm is mods["scipy.stats"].norm)
import sqlalchemy
print(sqlalchemy.__name__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "_DeferredModule _DeferredModule False"
    assert out[1] == "True"
    assert out[2] == "module 0.5 True"  # the real scipy.stats once used
    assert out[3] == "sqlalchemy"


@pytest.fixture(scope="module")
def gx_as_loaded():
    """In a fresh process, after load_gx(): how each module of GX_RELIED_ON
    stands in sys.modules, and GX's attributes."""
    import subprocess
    import sys

    code = """
import json, sys
from hatecheck_pipeline.data import validate
gx = validate.load_gx()
print(json.dumps({"modules": {m: type(sys.modules[m]).__name__ if m in sys.modules else None for m, _ in validate.GX_RELIED_ON},
                  "gx": sorted(dir(gx)), "version": gx.__version__}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"load_gx() fails with the installed great-expectations: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("where, how", sorted(validate.GX_RELIED_ON), ids=lambda x: str(x))
def test_each_gx_import_internal_holds_for_the_installed_gx(gx_as_loaded, where, how):
    why = validate.GX_RELIED_ON[(where, how)]
    seen = gx_as_loaded["modules"].get(where)
    version = f"great-expectations {gx_as_loaded['version']}"
    if how == "deferred":
        assert seen == "_DeferredModule", f"{version} loads {where} while it is imported ({seen}); relied on: {why}"
    elif how == "absent":
        assert seen is None, f"{version} imported {where}; relied on: {why}"
    else:
        assert how in gx_as_loaded["gx"], f"{version}: {where} has no {how!r}; relied on: {why}"
