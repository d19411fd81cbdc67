"""Template regeneration reproduces the published suites; extension with new terms."""

import polars as pl

from hatecheck_pipeline.expansion import templates as T


def test_regeneration_reproduces_published(tmp_path, mirror):
    raw = mirror  # the mirror has the data/raw layout
    res = T.run_regenerate(
        raw / "hatecheck", raw / "mhc", ["dutch", "german", "polish"], [], tmp_path / "t.parquet", tmp_path / "r.json", tmp_path / "d.csv"
    )
    per = res["per_language"]
    assert per["dutch"]["share_reproduced"] == 1.0
    assert per["english"]["share_reproduced"] > 0.95
    assert per["german"]["share_reproduced"] > 0.99  # case forms (Nom/Akk/Indef) + gendered templates
    assert per["polish"]["share_reproduced"] > 0.99
    diffs = pl.read_csv(tmp_path / "d.csv", infer_schema_length=0)
    assert set(diffs["kind"]) <= {"not_reproduced", "not_published"}
    assert diffs.filter(pl.col("language") == "dutch").height == 0


def test_case_forms_gender_and_slots():
    ph = pl.DataFrame(
        {
            "placeholder": ["[IDENT_P]", "[IDENT_P]", "[male_IDENT_S]", "[female_IDENT_S]", "[SLR_P]", "[SLR_P]"],
            "target_ident": ["men", "men", "men", "women", "men", "men"],
            "form": ["Nom", "Akk", "Nom", "Nom", "", ""],
            "slot": [0, 0, 0, 0, 0, 1],
            "value": ["Männer", "Männern", "Mann", "Frau", "S1", "S2"],
        },
        schema=T.PH_SCHEMA,
    )
    tm = pl.DataFrame(
        {
            "templ_id": ["1", "2", "3", "4"],
            "functionality": ["derog_neg_emote_h", "derog_neg_emote_h", "ident_neutral_nh", "slur_h"],
            "case_templ": ["Ich hasse [IDENT_P].", None, "Kein Platzhalter.", "Ihr [SLR_P]."],
            "label_gold": [None, None, None, None],
            "gender_male": [None, "Ein [male_IDENT_S].", None, None],
            "gender_female": [None, "Eine [female_IDENT_S].", None, None],
            "case": ["Akk", "Nom", None, None],
        }
    )
    out = T.instantiate(tm, ph, "german", "mhc")
    texts = dict(zip(out["text"], out["label"]))
    assert "Ich hasse Männern." in texts  # the template's case column
    assert {"Ein Mann.", "Eine Frau."} <= set(texts)
    assert {"Ihr S1.", "Ihr S2."} <= set(texts)  # one case per slur slot
    assert texts["Kein Platzhalter."] == "non-hateful"
    assert out.filter(pl.col("text") == "Eine Frau.")["target_ident"].item() == "women"


def test_compare_lists_differences():
    pub = pl.DataFrame(
        {
            "id": ["a", "b"],
            "text": ["X y. ", "Z."],
            "label": ["hateful"] * 2,
            "functionality": ["f_h"] * 2,
            "target_ident": ["w", "w"],
            "templ_id": ["1", "1"],
        }
    )
    gen = pl.DataFrame(
        {"text": ["X y.", "Q."], "label": ["hateful"] * 2, "functionality": ["f_h"] * 2, "target_ident": ["w", "w"], "templ_id": ["1", "1"]}
    )
    summary, diffs = T.compare(pub, gen)
    assert summary["reproduced"] == 1 and summary["share_reproduced"] == 0.5
    assert diffs.filter(pl.col("kind") == "not_reproduced")["published_id"].to_list() == ["b"]


def test_extension_with_new_terms(tmp_path, mirror):
    raw = mirror  # the mirror has the data/raw layout
    terms = tmp_path / "terms.csv"
    terms.write_text(
        "language,target_ident,placeholder,form,value\n"
        "english,elderly people,[IDENTITY_P],,elderly people\n"
        "english,elderly people,[IDENTITY_S],,elderly person\n",
        "utf-8",
    )
    out = T.run_extend([terms], raw / "hatecheck", raw / "mhc", [], [], tmp_path / "e.parquet")
    assert out.height > 100
    assert set(out["target_ident"]) == {"elderly people"}
    assert out["templ_id"].null_count() == 0 and set(out["label"]) == {"hateful", "non-hateful"}
    assert "I hate elderly people." in out["text"].to_list()
    assert out["id"].n_unique() == out.height
