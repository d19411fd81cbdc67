"""Deliberately broken raw files: each is quarantined with its reason, or
stops with an error naming the file and the rule; nothing disappears."""

import json

import polars as pl
import pytest

from broken_raw import HEADER, SPLIT, davidson_rows, reasons

from hatecheck_pipeline.core.files import InputError
from hatecheck_pipeline.data import prepare
from hatecheck_pipeline.data import corpora, harmonise


def test_clean_file_keeps_every_row(write_raw):
    write_raw("davidson2017", "labeled_data.csv", HEADER + davidson_rows())
    h = corpora.davidson2017(SPLIT)
    assert h.kept.height == 20 and h.quarantine.height == 0
    assert set(h.kept["label"]) == {"hateful", "non-hateful"}


def test_malformed_row_is_quarantined(write_raw):
    write_raw("davidson2017", "labeled_data.csv", HEADER + davidson_rows(5) + "99,3,0,extra,field,0,2,oops\n")
    h = corpora.davidson2017(SPLIT)
    assert reasons(h)[6].startswith("malformed_row: expected 7 fields, found 8")
    assert h.raw_rows == h.kept.height + h.quarantine.height == 6
    assert "oops" in h.quarantine["record"][0]


def test_missing_column_names_file_and_column(write_raw):
    path = write_raw("davidson2017", "labeled_data.csv", ",count,tweet\n0,3,hi\n")
    with pytest.raises(InputError) as err:
        corpora.davidson2017(SPLIT)
    assert str(path.relative_to(path.parents[3])) in str(err.value) and "class" in str(err.value)


def test_unknown_label_empty_text_and_duplicate_id(write_raw):
    body = davidson_rows(4) + "10,3,0,0,3,7,a label nobody knows\n" + "11,3,0,0,3,2,   \n" + "1,3,0,0,3,2,same id again\n"
    write_raw("davidson2017", "labeled_data.csv", HEADER + body)
    h = corpora.davidson2017(SPLIT)
    r = reasons(h)
    assert r[5] == "unknown_label: 7"
    assert r[6] == "empty_text"
    assert r[7] == "duplicate_id: first seen at row 2"
    assert h.kept.height == 4


def test_wrong_encoding_is_quarantined(write_raw):
    content = (HEADER + davidson_rows(3)).encode() + "5,3,0,0,3,2,caf\xe9 latin-1\n".encode("latin-1")
    write_raw("davidson2017", "labeled_data.csv", content)
    h = corpora.davidson2017(SPLIT)
    assert reasons(h)[4].startswith("bad_encoding")
    assert h.kept.height == 3


def test_duplicate_text_keeps_first(write_raw):
    write_raw("davidson2017", "labeled_data.csv", HEADER + davidson_rows(3) + "7,3,0,0,3,2,tweet number 1\n")
    h = corpora.davidson2017(SPLIT)
    assert reasons(h) == {4: "duplicate_text: first seen at row 2"}


def test_prepare_writes_table_quarantine_and_counts_that_add_up(write_raw, workdir):
    write_raw("davidson2017", "labeled_data.csv", HEADER + davidson_rows(10) + "10,3,0,0,3,9,bad label\n")
    raw = [workdir / "data/raw/davidson2017/labeled_data.csv"]
    line = prepare.prepare("davidson2017", SPLIT, raw, workdir / "t.parquet", workdir / "q.parquet", workdir / "c.json")
    assert line == "davidson2017: raw 11 = kept 10 + quarantined 1"
    summary = json.loads((workdir / "c.json").read_text())
    assert summary["raw_rows"] == 11 and summary["kept"] == 10 and summary["quarantined"] == 1
    assert pl.read_parquet(workdir / "q.parquet")["reason"].to_list() == ["unknown_label: 9"]


def test_prepare_names_a_missing_raw_file_and_the_stage_that_makes_it(workdir):
    raw = [workdir / "data/raw/davidson2017/labeled_data.csv"]
    with pytest.raises(InputError, match="labeled_data.csv.*run ingest_davidson2017"):
        prepare.prepare("davidson2017", SPLIT, raw, workdir / "t.parquet", workdir / "q.parquet", workdir / "c.json")


def test_founta_ids_only_file_asks_for_hydration(write_raw):
    write_raw("founta2018", "hatespeech_labels.csv", "tweet_id,label\n849667487180259329,abusive\n")
    with pytest.raises(corpora.HydrationRequired, match="(?i)hydrat"):
        corpora.founta2018({"source": "ids"})
    # an ids-only file in place of a text file is recognised too
    for name in ("fou18_en_train_20065.csv", "fou18_en_dev_500.csv", "fou18_en_test_2000.csv"):
        write_raw("founta2018", name, "tweet_id,label\n1,0\n")
    with pytest.raises(corpora.HydrationRequired, match="tweet ids only"):
        corpora.founta2018({"source": "text_subsample"})


def test_stratified_split_is_seeded_and_stratified():
    frame = pl.DataFrame({"id": [str(i) for i in range(1000)], "label": ["hateful"] * 100 + ["non-hateful"] * 900})
    fr = {"train": 0.8, "dev": 0.1, "test": 0.1}
    a = harmonise.stratified_split(frame.lazy(), 3, fr).collect()
    b = harmonise.stratified_split(frame.lazy(), 3, fr).collect()
    c = harmonise.stratified_split(frame.lazy(), 4, fr).collect()
    assert a["split"].to_list() == b["split"].to_list()
    assert a["split"].to_list() != c["split"].to_list()
    counts = dict(a.group_by("split", "label").len().select(pl.concat_str("split", "label"), "len").rows())
    assert counts["testhateful"] == 10 and counts["trainhateful"] == 80 and counts["devnon-hateful"] == 90
