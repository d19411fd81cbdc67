"""ETHOS: ingest from the mirror, harmonise (binary isHate >= 0.5, the
multi-label scores joined on the whitespace-normalised comment), validate,
and the GPT-3 detection paper's evaluation sets with their counts."""

import polars as pl
import pytest

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import read_json
from hatecheck_pipeline.data import ethos, sources
from hatecheck_pipeline.data.prepare import prepare
from hatecheck_pipeline.data.validate import validate

ETHOS_FILES = ["Ethos_Dataset_Binary.csv", "Ethos_Dataset_Multi_Label.csv"]


@pytest.fixture
def ethos_table(mirror, workdir, monkeypatch, params):
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)
    registry = sources.load_registry()
    files = [f.path for f in sources.raw_files("ethos", registry)]
    sources.ingest("ethos", registry["ethos"], str(mirror), files)
    out = [workdir / p for p in (paths.interim_table("ethos"), paths.quarantine("ethos"), paths.counts("ethos"))]
    prepare("ethos", params["datasets"]["ethos"], [workdir / paths.raw("ethos", f) for f in ETHOS_FILES], *out)
    return out


def test_ethos_harmonised_counts_and_scores(ethos_table, params, workdir):
    table_path, quarantine_path, counts_path = ethos_table
    table = pl.read_parquet(table_path)
    counts = read_json(counts_path)
    assert counts["raw_rows"] == 998 and counts["kept"] + counts["quarantined"] == 998
    assert (table["label"] == "hateful").sum() == 433
    hateful = table.filter(pl.col("label") == "hateful")
    # every hateful comment got its multi-label scores (23 only match after whitespace normalisation)
    assert hateful["race"].null_count() == 0 and hateful["gender"].null_count() == 0
    assert table.filter(pl.col("label") == "non-hateful")["race"].null_count() == 998 - 433
    assert (hateful["race"] >= 0.5).sum() == 76
    v = params["validation"]
    summary = validate("ethos", table_path, counts_path, workdir / "v.json", workdir / "v.md", v["class_balance_tolerance"],
                       v["published_balance"]["ethos"], v["suite_counts"]["ethos"])
    assert "expectations passed" in summary


def test_a_broken_isHate_value_is_quarantined_with_its_reason(write_raw, params):
    from hatecheck_pipeline.data.specs import ethos as build

    write_raw("ethos", "Ethos_Dataset_Binary.csv", "comment;isHate\nwomen are a joke\u00a0;1.0\nnice video;0.0\nwhat;abc\n")
    write_raw("ethos", "Ethos_Dataset_Multi_Label.csv",
              "comment;violence;directed_vs_generalized;gender;race;national_origin;disability;religion;sexual_orientation\n"
              "women are a joke ;0;0;1;0;0;0;0;0\norphan row;0;0;0;1;0;0;0;0\n")
    h = build(params["datasets"]["ethos"])
    assert h.kept["label"].to_list() == ["hateful", "non-hateful"]
    assert h.kept["gender"].to_list() == [1.0, None]
    reasons = sorted(h.quarantine["reason"].to_list())
    assert reasons == ["multi_label_without_hateful_comment", "unknown_label: abc"]
    assert h.raw_rows == h.kept.height + h.quarantine.height


def test_paper_evaluation_sets_counts(ethos_table, params, workdir):
    table_path = ethos_table[0]
    cfg = params["llm"]["ethos"]
    v = workdir / "v.json"
    v.write_text('{"success": true}')
    out = [workdir / "items.parquet", workdir / "pools.parquet", workdir / "report.json"]
    ethos.build_sets(table_path, v, *out, **cfg)
    items, pools, report = pl.read_parquet(out[0]), pl.read_parquet(out[1]), read_json(out[2])
    assert report["success"] and report["counts"]["candidates"] == {"racist": 76, "sexist": 86, "neither": 354}
    assert dict(pools.group_by("pool").len().rows()) == {"racist": 61, "sexist": 61, "neither": 121}
    assert pools["comment_id"].n_unique() == 243
    for setting in ethos.SINGLE:  # 30 racist + 30 neither asked "racist?", 30 sexist + 30 neither asked "sexist?"
        part = items.filter(pl.col("setting") == setting)
        assert dict(part.group_by("label").len().rows()) == {"racist": 30, "not-racist": 30, "sexist": 30, "not-sexist": 30}
        assert part["comment_id"].n_unique() == 120
    one = items.filter(pl.col("setting") == "one_shot")
    assert one["examples"].list.len().unique().to_list() == [1]
    few = items.filter(pl.col("setting") == "few_shot_single").row(0, named=True)
    assert [e["label"] for e in few["examples"]] == [few["category"], f"not-{few['category']}", few["category"]]
    mixed = items.filter(pl.col("setting") == "mixed")
    assert mixed.height == 2400 and mixed["example_set"].unique().sort().to_list() == list(range(1, 11))
    per_set = mixed.filter(pl.col("example_set") == 3)
    assert dict(per_set.group_by("label").len().rows()) == {"racist": 60, "sexist": 60, "neither": 120}
    shown = {e["text"] for e in per_set["examples"][0]}
    assert not shown & set(per_set["text"].to_list())  # set i's examples are dropped from its inputs
    assert set(mixed["comment_id"]) | set() == set(pools["comment_id"])  # 243 unique over the 10 sets
    assert items.filter(pl.col("setting") == "mixed_instruction").height == 2400
    # same seed -> same bytes of the draw; another seed -> another draw
    again = [workdir / "i2.parquet", workdir / "p2.parquet", workdir / "r2.json"]
    ethos.build_sets(table_path, v, *again, **{**cfg, "seed": cfg["seed"] + 1})
    assert pl.read_parquet(again[1])["comment_id"].to_list() != pools["comment_id"].to_list()


def test_wrong_expected_count_stops_with_the_expectation(ethos_table, params, workdir):
    cfg = params["llm"]["ethos"]
    v = workdir / "v.json"
    v.write_text('{"success": true}')
    bad = {**cfg, "expected": {**cfg["expected"], "sexist_candidates": 84}}
    with pytest.raises(ethos.EthosSetsFailed, match="ethos_candidates_sexist.*expect_table_row_count_to_equal.*observed 86"):
        ethos.build_sets(ethos_table[0], v, workdir / "i.parquet", workdir / "p.parquet", workdir / "r.json", **bad)
