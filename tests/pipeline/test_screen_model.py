"""benchmarks/screen_model.py: which stages a screen runs, and its tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_utils import load_benchmark

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.evaluation import published

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def screen():
    return load_benchmark("screen_model")


def test_screen_runs_the_models_train_heldout_and_mhc_stages_only(screen):
    params = load_params(ROOT / "params.yaml")
    picked = screen.screen_stages(params, "XTC")
    assert [s.name for s in picked["train"]] == ["train_XTC"]
    heldout = [s.name for s in picked["heldout"]]
    assert sorted(n for n in heldout if n.startswith("score_")) == [
        "score_XTC_heldout_fortuna2019",
        "score_XTC_heldout_haspeede2020",
        "score_XTC_heldout_hateval2019_es",
    ]
    assert all(n.index("predict_") == 0 for n in heldout if not n.startswith("score_"))
    mhc = [s.name for s in picked["mhc"]]
    assert mhc[0] == "predict_XTC_mhc" and len([n for n in mhc if n.startswith("score_XTC_mhc_")]) == 10
    assert not any("perturbed" in n for n in mhc)  # the expanded suites are not part of a screen
    with pytest.raises(SystemExit, match="train_LLM-EN"):
        screen.screen_stages(params, "LLM-EN")


def _doc(n: int, f1: float) -> dict:
    return {"overall": {"n": n, "macro_f1": {"value": f1}}}


def test_summary_sets_our_figures_next_to_the_papers(screen):
    metrics = {"heldout_haspeede2020": _doc(1256, 70.0), "mhc_arabic": _doc(1000, 56.0), "mhc_hindi": _doc(1000, 50.0)}
    text = screen.summary("XTC", metrics, published.load(), 412.4)
    assert text.startswith("XTC: training 412 s")
    assert "| haspeede2020 | 1256 | 70.0 | 76.3 | -6.3 |" in text
    assert "| macro F1 (n=1000 per language) | 56.0 | 50.0 | **53.0** |" in text
    assert "| paper | 59.4 | 58.1 | 58.8 |" in text  # MHC Table 7, XTC on Arabic and Hindi


def test_the_mhc_means_interval_comes_from_the_languages_bootstrap_values(screen, tmp_path):
    """Two languages' bootstrap values (the score stages' layout): the
    mean's interval lies between the languages' own, around the mean; a
    language without values gives no interval."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(0)
    files = {}
    for suite, centre in (("mhc_a", 0.50), ("mhc_b", 0.70)):
        values = centre + rng.normal(0, 0.02, 1000)
        frame = pl.DataFrame(
            {
                "replicate": np.arange(1000),
                "section": "overall",
                "group": pl.Series([None] * 1000, dtype=pl.String),
                "figure": "macro_f1",
                "value": values,
            }
        )
        files[suite] = str(tmp_path / f"{suite}.parquet")
        frame.write_parquet(files[suite])
    got = screen.mean_interval("XTC", files, 60.0)
    assert got["level"] == 0.95 and 57.0 < got["ci_low"] < 60.0 < got["ci_high"] < 63.0, got
    assert screen.mean_interval("XTC", {**files, "mhc_c": str(tmp_path / "absent.parquet")}, 60.0) is None
