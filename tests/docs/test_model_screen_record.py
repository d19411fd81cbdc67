"""The EmbeddingGemma-300M screen (issue: a stronger multilingual stand-in,
screened as XTC against multilingual-e5-small at the same budget): its
records are kept in benchmarks/records/, docs/models.md shows the table
``report.docs_pages.screen_table`` renders from them, and the default
profile follows the rule the issue set (adopt only if XTC's MHC mean rises
by more than the interval's width)."""

from __future__ import annotations

import json

from conftest import REPO

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.report import docs_pages

RECORDS = sorted((REPO / "benchmarks/records").glob("screen_XTC_*.json"))
PAGE = REPO / "docs/models.md"


def loaded():
    return [(p.relative_to(REPO).as_posix(), json.loads(p.read_text("utf-8"))) for p in RECORDS]


def test_the_screens_compare_like_with_like():
    docs = [doc for _, doc in loaded()]
    bases = {doc["base_model"].split(" ")[0] for doc in docs}
    assert {"EmbeddingGemma-300M", "multilingual-e5-small,"} <= bases
    # the same budget (the embedded profile's), the same MHC draw per seed
    assert {doc["mhc_cases_per_language"] for doc in docs} == {1000}
    assert {doc["profile"] for doc in docs} == {"embedded", "embeddinggemma"}
    for doc in docs:
        assert len(doc["mhc"]) == 10 and {d["n"] for d in doc["mhc"].values()} == {1000}
        assert doc["mhc_mean_interval"]["ci_low"] <= doc["mhc_mean"] <= doc["mhc_mean_interval"]["ci_high"]
    seeds = {doc["seed"] for doc in docs if doc["profile"] == "embeddinggemma"}
    assert seeds <= {doc["seed"] for doc in docs if doc["profile"] == "embedded"}


def test_the_models_page_quotes_the_screen_table():
    assert docs_pages.screen_table(loaded()) in PAGE.read_text("utf-8"), \
        "docs/models.md does not show the screen records' table (render it with docs_pages.screen_table)"


def test_the_default_follows_the_adoption_rule():
    """Each screened EmbeddingGemma variant (its own classifier head, mean
    pooling) against multilingual-e5-small at the same seeds: adopted only
    with a gain above the interval's width."""
    docs = [doc for _, doc in loaded()]
    xlmt = load_params(REPO / "params.yaml")["profiles"]["embedded"]["base_models"]["xlmt"]
    variants = {d.get("pooling", "model") for d in docs if d["profile"] == "embeddinggemma"}
    assert variants == {"model", "mean"}
    for pooling in sorted(variants):
        gemma = [d for d in docs if d["profile"] == "embeddinggemma" and d.get("pooling", "model") == pooling]
        # paired with the baseline screens of that round (the records naming a training
        # precision are stop 52's fp32 screens on an Intel Xeon, a question of precision)
        e5 = [d for d in docs if d["profile"] == "embedded" and d["seed"] in {g["seed"] for g in gemma} and "precision" not in d]
        assert len(gemma) >= 3 and len(e5) == len(gemma), (pooling, len(gemma), len(e5))  # >= 3 seeds each, paired
        gain = sum(d["mhc_mean"] for d in gemma) / len(gemma) - sum(d["mhc_mean"] for d in e5) / len(e5)
        width = max(d["mhc_mean_interval"]["ci_high"] - d["mhc_mean_interval"]["ci_low"] for d in e5)
        assert xlmt != "pinned:embeddinggemma-300m" or gain > width, (pooling, gain, width)
        if gain <= width:  # the page says it was not adopted, and why
            assert "not adopted" in PAGE.read_text("utf-8").lower()


def test_the_fp32_screens_on_the_xeon_are_quoted():
    """Stop 52's fp32 screens (``auto`` measured on an Intel Xeon): they name
    their precision, pair with the bf16 screens at the same seeds and draws,
    and the page's paragraph quotes them."""
    docs = [doc for _, doc in loaded()]
    fp32 = {d["seed"]: d for d in docs if (d.get("precision") or "").startswith("fp32 (cpu_bf16: auto; bf16 measured")}
    assert set(fp32) == {7, 1234}
    bf16 = {d["seed"]: d for d in docs if d["profile"] == "embedded" and "precision" not in d and d["seed"] in fp32}
    text = " ".join(PAGE.read_text("utf-8").split())
    assert (f"MHC means of {fp32[7]['mhc_mean']:.1f} and {fp32[1234]['mhc_mean']:.1f} against bf16's "
            f"{bf16[7]['mhc_mean']:.1f} and {bf16[1234]['mhc_mean']:.1f}") in text
    moves = [abs(fp32[s]["mhc_mean"] - bf16[s]["mhc_mean"]) for s in fp32]
    widths = [d["mhc_mean_interval"]["ci_high"] - d["mhc_mean_interval"]["ci_low"] for d in fp32.values()]
    assert max(moves) <= 0.2 and max(moves) <= min(widths) / 10
    assert "moved XTC's MHC mean by 0.2 points or less, a tenth of the interval's width" in text
