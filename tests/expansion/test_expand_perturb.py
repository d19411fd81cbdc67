"""Spelling perturbations: effect, seeding, source links and coverage."""

import random

import polars as pl

from hatecheck_pipeline.expansion import perturb as P


def test_generators_change_text():
    rng = lambda: random.Random(0)  # noqa: E731
    text = "I really hate women."
    for name, fn in P.GENERATORS.items():
        new = fn(text, rng())
        assert new != text, name
    assert P.space_del(text, rng()).count(" ") == text.count(" ") - 1
    assert len(P.char_del(text, rng())) == len(text) - 1
    assert sorted(P.char_swap(text, rng())) == sorted(text)


def test_perturb_seeded_linked_and_coverage(tmp_path):
    cases = pl.DataFrame(
        {
            "id": ["e1", "e2", "m1", "n1"],
            "text": ["I hate women.", "Immigrants are scum.", "我讨厌女人。", "I love cats."],
            "label": ["hateful", "hateful", "hateful", "non-hateful"],
            "language": ["english", "english", "mandarin", "english"],
            "functionality": ["derog_neg_emote_h"] * 3 + ["ident_pos_nh"],
            "target_ident": ["women", "immigrants", "women", None],
        }
    )
    out1, cov = P.perturb(cases, list(P.GENERATORS), 3, "x")
    out2, _ = P.perturb(cases, list(P.GENERATORS), 3, "x")
    assert out1.equals(out2)
    assert set(out1["source_id"]) <= {"e1", "e2", "m1"}  # non-hateful never perturbed
    merged = out1.join(cases.select(pl.col("id").alias("source_id"), pl.col("text").alias("src")), on="source_id")
    assert (merged["text"] != merged["src"]).all()
    c = {(r["language"], r["generator"]): r for r in cov}
    assert c[("mandarin", "leet")]["changed"] == 0 and c[("mandarin", "leet")]["unchanged"] == 1
    assert c[("mandarin", "space_del")]["changed"] == 0
    assert c[("english", "leet")]["changed"] == 2
    assert out1.filter((pl.col("language") == "mandarin") & (pl.col("generator") == "leet")).height == 0
    # a stage run and the merged report
    table = tmp_path / "t.parquet"
    cases.write_parquet(table)
    P.run(table, None, ["leet", "space_del"], 3, "x", tmp_path / "o.parquet", tmp_path / "c.json")
    rep = P.run_report([tmp_path / "c.json"], tmp_path / "r.json", tmp_path / "r.csv")
    assert "mandarin/leet" in rep["generators_without_effect"]
    assert pl.read_csv(tmp_path / "r.csv").height == 4
