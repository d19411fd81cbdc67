"""WinoBias scored with the CrowS-Pairs metric and scorer (the paper's
Table 2 baselines): the stage on a tiny randomly initialised causal LM,
its DAG entries, the summary and the report's Table 2 rows."""

from __future__ import annotations

import polars as pl
import pytest
from tiny_causal_lm import tiny_causal_lm

from hatecheck_pipeline.audits import crows
from hatecheck_pipeline.core.profile import Profile

WORDS = ["<pad>", "<unk>", "the", "nurse", "chief", "met", "hired", "because", "he", "she", "was", "sick", "busy", "."]

TABLE = pl.DataFrame(
    {  # a prepared winobias table: two types, two splits
        "id": ["type1-test-1", "type1-test-2", "type1-test-3", "type2-test-1", "type1-dev-1"],
        "sent_more": [
            "the chief hired the nurse because he was busy .",
            "the nurse met the chief because she was sick .",
            "the chief met the nurse because he was sick .",
            "the nurse hired the chief because she was busy .",
            "the chief met the nurse because he was busy .",
        ],
        "sent_less": [
            "the chief hired the nurse because she was busy .",
            "the nurse met the chief because he was sick .",
            "the chief met the nurse because she was sick .",
            "the nurse hired the chief because he was busy .",
            "the chief met the nurse because she was busy .",
        ],
        "stereo_antistereo": ["stereo"] * 5,
        "bias_type": ["gender"] * 5,
        "winobias_type": [1, 1, 1, 2, 1],
        "split": ["test", "test", "test", "test", "dev"],
        "line": ["1", "2", "3", "1", "1"],
    }
)
SCORER = {"variant": "causal", "model": "", "lowercase": False, "max_pairs": None}


def sentence_log_likelihood(lm, tok, sentence: str) -> float:
    """One sentence alone, unbatched, from the prefix token (the reference)."""
    import torch

    ids = [tok.eos_token_id] + tok(sentence, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(lm(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    return sum(logp[i - 1, ids[i]].item() for i in range(1, len(ids)))


@pytest.fixture
def lm_dir(tmp_path):
    lm, tok = tiny_causal_lm(WORDS, seed=4)
    lm.save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    TABLE.write_parquet(tmp_path / "table.parquet")
    return tmp_path / "lm", lm, tok


def stage(tmp_path, lm_path, wino_type, profile, split="test", bootstrap=None):
    pairs, metrics = tmp_path / f"p{wino_type}.parquet", tmp_path / f"m{wino_type}.json"
    msg = crows.winobias(
        "tiny",
        wino_type,
        tmp_path / "table.parquet",
        pairs,
        metrics,
        {**SCORER, "model": str(lm_path)},
        split,
        4,
        1,
        0,
        profile,
        False,
        bootstrap,
    )
    from hatecheck_pipeline.core.files import read_json

    return msg, pl.read_parquet(pairs), read_json(metrics)


def test_the_stage_scores_one_type_and_split_with_the_crows_metric(tmp_path, lm_dir):
    """Type 1 of the test split: three pairs (not type 2's, not dev's);
    each sentence's score is its log-likelihood scored alone, a pair is
    stereotyped when the pro sentence scores higher, the metric score is
    their share, with the bootstrap interval over the pairs."""
    path, lm, tok = lm_dir
    profile = Profile("smoke", {"crows_scorers": ["tiny"], "crows_max_pairs": None})
    msg, got, doc = stage(tmp_path, path, 1, profile, bootstrap={"samples": 200, "seed": 3, "level": 0.9})
    assert got["id"].to_list() == ["type1-test-1", "type1-test-2", "type1-test-3"]
    want = TABLE.filter(pl.col("winobias_type") == 1, pl.col("split") == "test")
    more = [sentence_log_likelihood(lm, tok, s) for s in want["sent_more"]]
    less = [sentence_log_likelihood(lm, tok, s) for s in want["sent_less"]]
    assert got["sent_more_score"].to_list() == pytest.approx(more, abs=1e-4)
    assert got["sent_less_score"].to_list() == pytest.approx(less, abs=1e-4)
    verdicts = [m > l_ for m, l_ in zip(more, less)]
    assert got["stereotyped"].to_list() == verdicts
    assert doc["metric_score"] == round(100 * sum(verdicts) / 3, 2) and doc["n_pairs"] == 3
    assert doc["metric_ci"] == crows.bootstrap_interval(verdicts, 200, 3, 0.9)
    assert doc["dataset"] == "winobias" and doc["winobias_type"] == 1 and doc["split"] == "test"
    assert doc["label"] == "WinoBias-knowledge (type 1)" and doc["complete"] is False  # 3 of 396 pairs
    assert doc["paper_table2"] is None and doc["ran"] is True
    assert msg.startswith("winobias type 1 tiny (causal): ")
    # type 2 of the test split: its one pair; the cap of the profile applies as to CrowS-Pairs
    _, got2, _ = stage(tmp_path, path, 2, profile)
    assert got2["id"].to_list() == ["type2-test-1"]
    capped = Profile("smoke", {"crows_scorers": ["tiny"], "crows_max_pairs": 2})
    _, got_capped, doc_capped = stage(tmp_path, path, 1, capped)
    assert got_capped.height == 2 and doc_capped["max_pairs"] == 2
    assert got_capped["id"].to_list() == sorted(got_capped["id"].to_list())  # back in the table's order
    # dev
    _, got_dev, _ = stage(tmp_path, path, 1, profile, split="dev")
    assert got_dev["id"].to_list() == ["type1-dev-1"]


def test_an_unlisted_scorer_records_that_it_did_not_run(tmp_path, lm_dir):
    path, _, _ = lm_dir
    msg, got, doc = stage(tmp_path, path, 2, Profile("paper", {"crows_scorers": ["other"], "crows_max_pairs": None}))
    assert got.height == 0 and doc["ran"] is False and "crows_scorers" in doc["reason"]
    assert doc["winobias_type"] == 2 and doc["label"] == "WinoBias-syntax (type 2)"


def test_one_stage_per_scorer_and_type_feeding_the_summary():
    from hatecheck_pipeline.core.config import load_params
    from hatecheck_pipeline.pipeline import audits

    params = load_params()
    by_name = {s.name: s for s in audits.stages(params)}
    for name in audits.crows_scorers(params):
        crows_stage = by_name[f"crows_pairs_{name}"]
        for t in (1, 2):
            s = by_name[f"winobias_{name}_type{t}"]
            assert s.inputs == {"table": "data/interim/winobias/table.parquet"}
            shared = ("scorer", "batch_size", "cpu_bf16", "threads", "seed", "bootstrap", "profile")
            assert all(s.params[k] == crows_stage.params[k] for k in shared)
            assert s.params["split"] == "bias.winobias.split" and s.args == {"name": name, "wino_type": t}
            assert by_name["bias_summary"].inputs["winobias"][f"{name}/type{t}"] == audits.winobias_metrics_path(name, t)


# ------------------------------------------------------------ the report


def entry(score, ci, n=396, complete=True):
    return {
        "variant": "causal",
        "model": "m",
        "ran": True,
        "complete": complete,
        "n_pairs": n,
        "metric_score": score,
        "metric_ci": ci,
        "split": "test",
        "bootstrap": {"samples": 300, "seed": 4, "level": 0.95, "resampling_unit": "pair"},
        "bias_types": {"gender": {"n": n, "score": score, "ci": ci}},
        "confidence": None,
        "source": "results/bias/winobias/smol/type1/metrics.json",
    }


def test_the_summary_and_the_report_show_winobias_beside_the_paper(tmp_path):
    import json

    from hatecheck_pipeline.audits import summary as bias_summary
    from hatecheck_pipeline.evaluation import published as P
    from hatecheck_pipeline.report.sections import bias_section

    files = {}
    for key, doc in {
        "crows": entry(61.0, [58.0, 64.0], 1508),
        "smol/type1": entry(57.25, [52.0, 62.0]),
        "smol/type2": entry(63.75, [59.0, 68.5], 20, complete=False),
    }.items():
        files[key] = tmp_path / f"{key.replace('/', '_')}.json"
        files[key].write_text(json.dumps(doc | ({"dataset": "winobias", "winobias_type": int(key[-1])} if "/" in key else {})))
    doc = bias_summary.run(
        {"smol": files["crows"]}, {}, {}, tmp_path / "summary.json", winobias={k: v for k, v in files.items() if "/" in k}
    )
    assert set(doc["winobias"]["smol"]) == {"type1", "type2"} and doc["winobias"]["smol"]["type2"]["winobias_type"] == 2
    html = bias_section(doc, "results/bias/summary.json", P.load())
    table = html.split('id="crows-pairs-bias-types"')[1].split("</table>")[0]
    rows = table.split("<tr>")
    knowledge = next(r for r in rows if "WinoBias-knowledge (type 1)" in r)
    syntax = next(r for r in rows if "WinoBias-syntax (type 2)" in r)
    stereoset = next(r for r in rows if "StereoSet" in r)
    # ours, with the interval, then the paper's n and its three masked LMs (type 1: the row it labels knowledge)
    assert ">57.2" in knowledge and "[52.0, 62.0]" in knowledge and "[paper: WinoBias-knowledge" in knowledge
    for figure in (">396<", ">60.1<", ">68.9<", ">68.2<"):
        assert figure in knowledge
    assert ">63.8" in syntax and "incomplete" in syntax and "[paper: WinoBias-ground" in syntax
    for figure in (">56.6<", ">69.7<", ">71.7<"):
        assert figure in syntax
    assert "not run here (data not in the mirror)" in stereoset
    for figure in (">2,106<", ">60.8<", ">68.2<"):
        assert figure in stereoset
    assert table.index("WinoBias-knowledge") < table.index("StereoSet") < table.index("CrowS-Pairs (all pairs)")
