"""ETHOS: ingest from the mirror, harmonise (binary isHate >= 0.5, the
multi-label scores joined on the whitespace-normalised comment), validate,
and the GPT-3 detection paper's evaluation sets with their counts."""

import polars as pl
import pytest
import yaml

from conftest import REPO

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import read_json
from hatecheck_pipeline.data import ethos, sources
from hatecheck_pipeline.data.prepare import prepare
from hatecheck_pipeline.data.validate import validate

ETHOS_FILES = ["Ethos_Dataset_Binary.csv", "Ethos_Dataset_Multi_Label.csv"]
PAPER_SETS = "src/hatecheck_pipeline/resources/gpt3_example_sets.yaml"
# The paper's example comments (Appendix A) that are not in this ETHOS copy,
# as (set, pool): the ethos_sets report must name exactly these.
KNOWN_NOT_FOUND: set[tuple[int, str]] = set()


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
    summary = validate(
        "ethos",
        table_path,
        counts_path,
        workdir / "v.json",
        workdir / "v.md",
        v["class_balance_tolerance"],
        v["published_balance"]["ethos"],
        v["suite_counts"]["ethos"],
    )
    assert "expectations passed" in summary


def test_a_broken_isHate_value_is_quarantined_with_its_reason(write_raw, params):
    from hatecheck_pipeline.data.annotated import ethos as build

    write_raw("ethos", "Ethos_Dataset_Binary.csv", "comment;isHate\nwomen are a joke\u00a0;1.0\nnice video;0.0\nwhat;abc\n")
    write_raw(
        "ethos",
        "Ethos_Dataset_Multi_Label.csv",
        "comment;violence;directed_vs_generalized;gender;race;national_origin;disability;religion;sexual_orientation\n"
        "women are a joke ;0;0;1;0;0;0;0;0\norphan row;0;0;0;1;0;0;0;0\n",
    )
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
    ethos.build_sets(table_path, v, REPO / PAPER_SETS, *out, **cfg)
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
    # the redraw: same seed -> same draw; another seed -> another draw; neither is the paper's pools
    redraw = {**cfg, "example_source": "redraw"}
    drawn = []
    for i, seed in enumerate((cfg["seed"], cfg["seed"], cfg["seed"] + 1)):
        again = [workdir / f"i{i}.parquet", workdir / f"p{i}.parquet", workdir / f"r{i}.json"]
        ethos.build_sets(table_path, v, REPO / PAPER_SETS, *again, **{**redraw, "seed": seed})
        drawn.append(pl.read_parquet(again[1])["comment_id"].to_list())
        assert read_json(again[2])["examples"]["source"] == "redraw"
    assert drawn[0] == drawn[1] != drawn[2] and drawn[0] != pools["comment_id"].to_list()


def test_wrong_expected_count_stops_with_the_expectation(ethos_table, params, workdir):
    cfg = params["llm"]["ethos"]
    v = workdir / "v.json"
    v.write_text('{"success": true}')
    bad = {**cfg, "expected": {**cfg["expected"], "sexist_candidates": 84}}
    with pytest.raises(ethos.EthosSetsFailed, match="ethos_candidates_sexist.*expect_table_row_count_to_equal.*observed 86"):
        ethos.build_sets(ethos_table[0], v, REPO / PAPER_SETS, workdir / "i.parquet", workdir / "p.parquet", workdir / "r.json", **bad)


def paper_sets_of(items: pl.DataFrame) -> dict[int, list[dict[str, str]]]:
    mixed = items.filter(pl.col("setting") == "mixed")
    return {r["example_set"]: r["examples"] for r in mixed.unique("example_set", keep="first").iter_rows(named=True)}


def test_the_paper_example_sets_are_found_in_ethos_and_are_the_mixed_sets(ethos_table, params, workdir):
    """Every comment of the paper's Appendix A is found in ETHOS (or named in
    KNOWN_NOT_FOUND and in the stage's report), and the mixed settings' ten
    example sets are the paper's: sexist, racist, neither, as printed."""
    cfg = params["llm"]["ethos"]
    assert cfg["example_source"] == "paper"  # the default
    v = workdir / "v.json"
    v.write_text('{"success": true}')
    out = [workdir / "items.parquet", workdir / "pools.parquet", workdir / "report.json"]
    line = ethos.build_sets(ethos_table[0], v, REPO / PAPER_SETS, *out, **cfg)
    items, pools, report = pl.read_parquet(out[0]), pl.read_parquet(out[1]), read_json(out[2])
    examples = report["examples"]
    assert examples["source"] == "paper" and len(examples["matches"]) == 30
    not_found = {(m["set"], m["pool"]) for m in examples["matches"] if m["match"] == "not_found"}
    assert not_found == KNOWN_NOT_FOUND == {(u["set"], u["pool"]) for u in examples["not_found"]}
    assert ("NOT FOUND" in line) == bool(KNOWN_NOT_FOUND)
    found = [m for m in examples["matches"] if m["match"] != "not_found"]
    assert all(m["match"] in ("exact", "normalised", "fuzzy") and m["comment_id"] for m in found)
    assert all(m["score"] >= cfg["fuzzy_threshold"] for m in found if m["match"] == "fuzzy")
    # the paper's sets are the first ten comments of each pool in the file's order ("the first n + 1 comments")
    assert all(m["file_rank"] == m["set"] - 1 for m in found)
    table = pl.read_parquet(ethos_table[0])
    text = dict(zip(table["id"], table["text"]))
    printed = yaml.safe_load((REPO / PAPER_SETS).read_text("utf-8"))["sets"]
    sets = paper_sets_of(items)
    assert sorted(sets) == list(range(1, 11))
    for entry in printed:
        i = entry["set"]
        match = {m["pool"]: m for m in found if m["set"] == i}
        assert [e["label"] for e in sets[i]] == [p for p in ("sexist", "racist", "neither") if (i, p) not in KNOWN_NOT_FOUND]
        for e in sets[i]:
            assert e["text"] == text[match[e["label"]]["comment_id"]]
            assert ethos.normalise(e["text"])[:40] == ethos.normalise(entry[e["label"]])[:40]
        per_set = items.filter((pl.col("setting") == "mixed") & (pl.col("example_set") == i))
        assert dict(per_set.group_by("label").len().rows()) == {"racist": 60, "sexist": 60, "neither": 120}
        assert not {m["comment_id"] for m in match.values()} & set(per_set["comment_id"])  # set i's examples are not its inputs
    assert pools.filter(pl.col("source") == "paper").height == 30 - len(KNOWN_NOT_FOUND)
    assert report["success"] and pools["comment_id"].n_unique() == 243


def test_a_paper_comment_not_found_is_named_and_its_set_is_built_from_the_others(ethos_table, params, workdir):
    doc = yaml.safe_load((REPO / PAPER_SETS).read_text("utf-8"))
    doc["sets"][2]["racist"] = "a comment the ETHOS data set does not hold at all"
    # a printed text that differs slightly: found by the fuzzy fallback
    doc["sets"][4]["neither"] = doc["sets"][4]["neither"].replace("kinda", "kind of")
    changed = workdir / "sets.yaml"
    changed.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    v = workdir / "v.json"
    v.write_text('{"success": true}')
    out = [workdir / "items.parquet", workdir / "pools.parquet", workdir / "report.json"]
    line = ethos.build_sets(ethos_table[0], v, changed, *out, **params["llm"]["ethos"])
    report = read_json(out[2])["examples"]
    assert [(u["set"], u["pool"]) for u in report["not_found"]] == [(3, "racist")]
    assert "NOT FOUND" in line and "set 3 racist" in line
    assert report["sets"]["3"] == {"paper_set": True, "not_found": ["racist"]}
    fuzzy = next(m for m in report["matches"] if (m["set"], m["pool"]) == (5, "neither"))
    assert fuzzy["match"] == "fuzzy" and 0.9 <= fuzzy["score"] < 1
    sets = paper_sets_of(pl.read_parquet(out[0]))
    assert [e["label"] for e in sets[3]] == ["sexist", "neither"]  # built from the two found
    assert all(len(sets[i]) == 3 for i in sets if i != 3)
    # with a threshold above the fuzzy score the slightly changed comment is not found either
    strict = ethos.build_sets(ethos_table[0], v, changed, *out, **{**params["llm"]["ethos"], "fuzzy_threshold": 0.999})
    assert "set 5 neither" in strict


def test_normalise_ignores_case_whitespace_punctuation_and_quotes():
    assert ethos.normalise("It’s  a JOKE…") == ethos.normalise("it's a joke. . .") == "its a joke"
    assert ethos.normalise("ﬁnd out") == "find out"  # the PDF's ligature
