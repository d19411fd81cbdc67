"""The ``llm`` model kind: a prompted LLM predicting the functional suites.

Local backend: a tiny RANDOMLY INITIALISED GPT-2 (its p(hateful) means
nothing; the tests check that it is the renormalised yes of the constrained
answer, per suite file, on the seeded draw the score stage scores).
Endpoint backend: a fake OpenAI-compatible server on 127.0.0.1."""

import math
from pathlib import Path

import polars as pl
import pytest
from fake_openai import fake_chat_server
from tiny_causal_lm import tiny_causal_lm

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core.config import SCHEMA_FILE, ConfigError, cross_check, load_params, validate
from hatecheck_pipeline.core.files import recorded_precision
from hatecheck_pipeline.evaluation import llm_classifier as lc
from hatecheck_pipeline.models import llm as prompting
from hatecheck_pipeline.models.predict import COLUMNS
from hatecheck_pipeline.pipeline.registry import build_stages
from hatecheck_pipeline.suites.registry import hatecheck, mhc
from hatecheck_pipeline.suites.sample import predicted_subsample

WORDS = (
    "<pad> <unk> is the following text hateful ? answer yes or no ja nein ist der folgende hasserfüllt "
    "antworte mit oder antwort : ' . i hate them love you"
).split()
PROFILES = {"p": {"base_models": {}, "llm_max_cases_per_suite": 5}, "all": {"base_models": {}}}


@pytest.fixture(scope="module")
def tiny_lm():
    net, tok = tiny_causal_lm(WORDS)
    return prompting.LocalLM(net, tok, 4)


def suite_tables(tmp_path):
    hc = pl.DataFrame({"case_id": [f"{i}" for i in range(8)], "text": [("i hate them", "i love you")[i % 2] for i in range(8)]})
    m = pl.DataFrame(
        {
            "mhc_case_id": [f"de-{i}" for i in range(7)],
            "language": ["german"] * 7,
            "text": [("ich hasse sie", "hallo")[i % 2] for i in range(7)],
        }
    )
    hc.write_parquet(tmp_path / "hatecheck.parquet")
    m.write_parquet(tmp_path / "mhc.parquet")
    return {"hatecheck": tmp_path / "hatecheck.parquet", "mhc_german": tmp_path / "mhc.parquet"}


def run_local(tmp_path, monkeypatch, lm, prompt_language, profile="p"):
    monkeypatch.setattr(prompting.LocalLM, "load", classmethod(lambda cls, model, batch_size=8: lm))
    suites = [hatecheck(), mhc("german")]
    outs = [tmp_path / prompt_language / s.name / "predictions.parquet" for s in suites]
    msg = lc.predict_suites(
        "LLM",
        "tiny",
        suites,
        suite_tables(tmp_path),
        outs,
        tmp_path / prompt_language / "answers.csv",
        {"kind": "local", "model": "unused"},
        "suite_zero_shot",
        prompt_language,
        42,
        0.5,
        1,
        4,
        str(tmp_path / "cache"),
        Profile(profile, PROFILES[profile]),
    )
    return suites, outs, msg


@pytest.mark.parametrize("prompt_language", ["english", "suite"])
def test_local_backend_writes_one_file_per_suite_with_the_renormalised_yes(tmp_path, monkeypatch, tiny_lm, prompt_language):
    suites, outs, msg = run_local(tmp_path, monkeypatch, tiny_lm, prompt_language)
    assert "hatecheck: 5 cases" in msg and "mhc_german: 5 cases" in msg
    templates = prompting.load_templates()
    answers = pl.read_csv(tmp_path / prompt_language / "answers.csv")
    for suite, out, table in zip(suites, outs, suite_tables(tmp_path).values()):
        frame = pl.read_parquet(out)
        assert frame.columns == COLUMNS and set(frame["suite"]) == {suite.name} and set(frame["model"]) == {"LLM"}
        assert recorded_precision(out) == "fp32"  # the weights' dtype, as the weights manifest names it
        # the draw the score stage scores (llm_max_cases_per_suite 5, the model's seed)
        expected = predicted_subsample(pl.read_parquet(table), suite.id_column, 5, 42)
        assert sorted(frame["id"]) == sorted(expected[suite.id_column].cast(pl.Utf8))
        lang = "german" if (prompt_language == "suite" and suite.language) else "english"
        template = templates[f"suite_zero_shot_{lang}"]
        texts = dict(zip(pl.read_parquet(table)[suite.id_column].cast(pl.Utf8), pl.read_parquet(table)["text"]))
        for row in frame.iter_rows(named=True):
            [(_, s)] = tiny_lm.choose([prompting.render(template, texts[row["id"]])], [prompting.choices(template)])
            assert row["p_hateful"] == pytest.approx(1 / (1 + math.exp(s["no"] - s["yes"])), abs=1e-6)
            assert row["pred"] == ("hateful" if row["p_hateful"] >= 0.5 else "non-hateful")
        part = answers.filter(pl.col("suite") == suite.name)
        assert set(part["template"]) == {f"suite_zero_shot_{lang}"} and part["parsed"].all() and part.height == 5


def test_without_a_cap_every_case_is_predicted(tmp_path, monkeypatch, tiny_lm):
    _, outs, _ = run_local(tmp_path, monkeypatch, tiny_lm, "english", profile="all")
    assert [pl.read_parquet(o).height for o in outs] == [8, 7]


def test_a_language_without_a_template_is_a_clear_error():
    with pytest.raises(lc.TemplateError, match="suite_zero_shot_klingon.*suite_zero_shot_english"):
        lc.suite_template(prompting.load_templates(), "suite_zero_shot", "klingon")
    with pytest.raises(lc.TemplateError, match="must allow the answers yes and no"):
        lc.suite_template({"mixed_x": prompting.load_templates()["mixed"]}, "mixed", "x")


def test_endpoint_backend_parses_the_language_s_yes_and_no_and_caches(tmp_path):
    calls = []
    replies = {"i hate them": "Yes.", "i love you": "no", "ich hasse sie": "Ja", "hallo": "vielleicht"}

    def reply(body):
        prompt = body["messages"][0]["content"]
        return next(a for t, a in replies.items() if f"'{t}'" in prompt)

    suites = [hatecheck(), mhc("german")]
    with fake_chat_server(reply, calls) as url:
        cfg = {"kind": "openai", "model": "m", "base_url": url, "api_key_env": None, "temperature": 0.0, "max_new_tokens": 2}
        for _ in range(2):
            outs = [tmp_path / s.name / "p.parquet" for s in suites]
            msg = lc.predict_suites(
                "LLM",
                "ep",
                suites,
                suite_tables(tmp_path),
                outs,
                tmp_path / "a.csv",
                cfg,
                "suite_zero_shot",
                "suite",
                42,
                0.5,
                1,
                4,
                str(tmp_path / "cache"),
                Profile("all", PROFILES["all"]),
            )
    # 8 + 7 prompts, but only 4 distinct ones; the second run is all cached
    assert len(calls) == 4
    answers = pl.read_csv(tmp_path / "a.csv")
    hc = pl.read_parquet(outs[0])
    assert set(zip(hc["p_hateful"], hc["pred"])) == {(1.0, "hateful"), (0.0, "non-hateful")}
    de = pl.read_parquet(outs[1])  # sorted by id: de-0 (ich hasse sie), de-1 (hallo), ...
    assert de["p_hateful"].to_list() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert answers.filter(pl.col("suite") == "mhc_german")["parsed"].to_list() == [True, False] * 3 + [True]
    assert "mhc_german: 7 cases, 57.1% hateful, 3 unparsed (counted non-hateful)" in msg
    # the German prompt for the German suite, the English one for HateCheck
    prompts = {c["body"]["messages"][0]["content"].split("\n")[0] for c in calls}
    assert prompts == {"Is the following text hateful? Answer yes or no.", "Ist der folgende Text hasserfüllt? Antworte mit ja oder nein."}


LLM_MODEL = {"kind": "llm", "backend": "local", "template": "suite_zero_shot", "prompt_language": "suite", "suites": ["mhc"], "seed": 1}


def test_the_dag_gives_an_llm_model_one_predict_stage_and_a_score_stage_per_suite():
    params = load_params()
    params["models"] = {**params["models"], "P": dict(LLM_MODEL)}  # every model: the supervised HateXplain stages need theirs
    stages = {s.name: s for s in build_stages(params)}
    assert "train_P" not in stages and "train_B-D" in stages
    predict = stages["predict_P"]
    langs = params["datasets"]["mhc"]["languages"]
    assert predict.all_outs == [f"results/P/mhc_{lang}/predictions.parquet" for lang in langs] + ["results/P/llm_answers.csv"]
    # the local backend runs the profile's fetched weights: their manifest is an input
    assert set(predict.data_deps) == {"data/interim/mhc/table.parquet", "data/validation/mhc.json", "data/llm/weights/weights.json"}
    assert "models.P.prompt_language" in predict.param_keys and "llm.backends.local" in predict.param_keys
    assert "fetch_llm_weights" in stages
    score = stages[f"score_P_mhc_{langs[0]}"]
    assert score.args["cap_key"] == "llm_max_cases_per_suite" and stages["score_B-D_hatecheck"].args["cap_key"] == "max_cases_per_suite"
    assert "results/P/mhc_german/metrics.json" in stages["tables_mhc"].data_deps
    # the bias audit reads the same capped draw as the score stages
    assert stages["target_bias_P"].args["cap_key"] == "llm_max_cases_per_suite"
    assert stages["target_bias_B-D"].args["cap_key"] == "max_cases_per_suite"
    # no text scheme: no preprocess stage for it, and no base-model conversion
    assert not any(n.startswith("convert_") and "P" in n for n in stages)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"backend": "nope"}, "models.P.backend: 'nope' is not a backend"),
        ({"suites": ["perturbed_hatecheck"]}, "models.P.suites: 'perturbed_hatecheck' is not a functional suite"),
    ],
)
def test_cross_check_names_the_bad_llm_model_key(change, message):
    params = load_params()
    params["models"]["P"] = {**LLM_MODEL, **change}
    with pytest.raises(ConfigError, match=message):
        cross_check(params, "params.yaml")


def test_schema_keeps_llm_and_fine_tuned_keys_apart():
    params = load_params()
    params["models"]["P"] = {**LLM_MODEL, "recipe": "mhc"}
    with pytest.raises(ConfigError, match=r"models\.P\.recipe: unknown key"):
        validate(params, Path(SCHEMA_FILE), "params.yaml")
    params["models"]["P"] = {**LLM_MODEL, "prompt_language": "klingon"}
    with pytest.raises(ConfigError, match="models.P.prompt_language"):
        validate(params, Path(SCHEMA_FILE), "params.yaml")
