import polars as pl

from hatecheck_pipeline.data import schemes as textprep

BERT = {"lowercase": True, "url_token": "[URL]", "user_token": "[USER]", "emoji_token": "[EMOJI]", "segment_hashtags": True}
XLMT = {"lowercase": False, "url_token": "[URL]", "user_token": "[USER]", "emoji_token": None, "segment_hashtags": False}


def run(texts, scheme):
    return pl.DataFrame({"text": texts}).select(textprep.apply_scheme(pl.col("text"), scheme)).to_series().to_list()


def test_bert_scheme_follows_hatecheck_appendix_d3():
    out = run(["RT @Some_User: LOOK at https://t.co/x #BuildTheWall 😍\tnow\nok"], BERT)
    assert out == ["rt [USER]: look at [URL] build the wall [EMOJI] now ok"]


def test_xlmt_scheme_keeps_case_hashtags_and_emojis():
    out = run(["Hola @alguien\nmira www.example.com #NoMásOdio 😍"], XLMT)
    assert out == ["Hola [USER] mira [URL] #NoMásOdio 😍"]


def test_preprocess_table_keeps_raw_text():
    frame = pl.DataFrame({"text": ["I hate Women. "]}).lazy()
    out = textprep.preprocess_table(frame, BERT, "bert").collect()
    assert out.row(0, named=True) == {"text": "i hate women.", "text_raw": "I hate Women. ", "scheme": "bert"}
