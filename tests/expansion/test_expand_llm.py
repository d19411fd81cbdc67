"""LLM branch against a fake OpenAI-compatible server on loopback, NLI
validation with a tiny randomly initialised BART (NOT a trained model), and
quality with a tiny random GPT-2."""

from pathlib import Path

import polars as pl
import pytest
import torch
from fake_openai import fake_chat_server
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import (
    BartConfig,
    BartForSequenceClassification,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
)

from hatecheck_pipeline.expansion import generate, nli, prompts, quality

SECRET = "sk-test-secret-123"


CALLS: list = []
GENERATED = "1. I can't stand them at all.\n2. \"They are all vermin, honestly.\"\n3. Nothing more to say."


@pytest.fixture
def server():
    CALLS.clear()
    with fake_chat_server(lambda body: GENERATED, CALLS) as url:
        yield url


def tiny_tokenizer(path: Path) -> PreTrainedTokenizerFast:
    words = "<pad> <s> </s> <unk> that text contains hate speech is about a the i they are all them".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(  # BART-style: <s> A </s></s> B </s>
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    fast.save_pretrained(path)
    return fast


def tiny_nli(path: Path) -> Path:
    """A randomly initialised 3-label BART (untrained; NLI-shaped only)."""
    torch.manual_seed(0)
    tok = tiny_tokenizer(path)
    cfg = BartConfig(vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                     decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=300,
                     pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2, num_labels=3,
                     id2label={0: "contradiction", 1: "neutral", 2: "entailment"},
                     label2id={"contradiction": 0, "neutral": 1, "entailment": 2})
    BartForSequenceClassification(cfg).save_pretrained(path)
    return path


def llm_cfg(base_url, cache):
    return {"base_url": base_url, "model": "fake-model", "api_key_env": "FAKE_LLM_KEY", "temperature": 0.5,
            "n_per_cell": 3, "max_tokens": 64, "timeout_s": 5, "seed": 7, "languages": ["english"],
            "demonstrations_from": "hatecheck", "targets": ["women", "immigrants"], "slurs": {},
            "functionalities": ["derog_neg_emote_h", "target_obj_nh"], "prompts": None, "cache_dir": str(cache)}


def test_prompt_factory():
    spec = prompts.load_spec()
    suite = pl.DataFrame({"functionality": ["derog_neg_emote_h"], "case_templ": ["I hate [IDENTITY_P]."],
                          "text": ["I hate women."]})
    cells = prompts.cells(spec, suite, ["derog_neg_emote_h", "profanity_nh", "slur_h"], ["women", "Muslims"],
                          {"women": ["s1", "s2"]}, "german", 5, 1)
    assert len(cells) == 2 + 1 + 2  # profanity_nh has no [identity]
    first = cells[0]
    assert "against women" in first.prompt and "German" in first.prompt
    assert first.demonstration == "I hate [identity]." and "Example: I hate women." in first.prompt
    assert "[identity]" not in first.prompt
    assert "s1, s2" in [c for c in cells if c.functionality == "slur_h"][0].prompt


def test_generate_cached_and_key_never_written(server, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", SECRET)
    suite = tmp_path / "suite.parquet"
    pl.DataFrame({"functionality": ["derog_neg_emote_h"], "case_templ": ["I hate [IDENTITY_P]."], "text": ["x"],
                  "language": ["english"]}).write_parquet(suite)
    cfg = llm_cfg(server, tmp_path / "cache")
    out = tmp_path / "cand.parquet"
    res = generate.run_generate(suite, "english", cfg, out)
    assert res["cells"] == 3 and res["queried"] == 3 and len(CALLS) == 3
    assert CALLS[0]["auth"] == f"Bearer {SECRET}" and CALLS[0]["path"] == "/v1/chat/completions"
    cand = pl.read_parquet(out)
    assert cand.height == 9 and "They are all vermin, honestly." in cand["text"].to_list()
    res2 = generate.run_generate(suite, "english", cfg, out)  # re-run: all from cache
    assert res2["queried"] == 0 and res2["cached"] == 3 and len(CALLS) == 3
    cfg["temperature"] = 0.0  # a setting change queries again
    assert generate.run_generate(suite, "english", cfg, out)["queried"] == 3
    for f in [*(tmp_path / "cache").rglob("*"), out]:
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes()


def test_nli_helpers():
    assert nli.at_least_two_sentences("They came. I hate them.")
    assert not nli.at_least_two_sentences("I hate them.")
    assert nli.at_least_two_clauses("I met many of them, and I hate them all.")
    assert nli.extract_quote("Saying 'women are scum' is vile.") == "women are scum"
    assert nli.remove_negation("Women are not stupid and never lazy.", ["not", "never"]) == "Women are stupid and lazy."


def test_nli_validation_with_tiny_model(tmp_path):
    torch.set_num_threads(1)
    model = tiny_nli(tmp_path / "nli")
    cand = tmp_path / "cand.parquet"
    pl.DataFrame({"id": ["a", "b", "c"], "text": ["they are all vermin", "I hate them. They are all trash.", "one"],
                  "functionality": ["derog_dehum_h", "ref_subs_sent_h", "ref_subs_sent_h"],
                  "target_ident": ["women", "women", "women"], "label": ["hateful"] * 3,
                  "language": ["english"] * 3}).write_parquet(cand)
    cfg = {"model": str(model), "threshold": 0.5, "batch_size": 4, "threads": 1, "hypotheses": None}
    rep = generate.run_validate(cand, cfg, ["women"], tmp_path / "acc.parquet", tmp_path / "rej.parquet",
                                tmp_path / "r.json")
    assert rep["candidates"] == 3
    rej = pl.read_parquet(tmp_path / "rej.parquet")
    assert rej.filter(pl.col("id") == "c")["failed_test"].item() == "at_least_two_sentences"
    acc = pl.read_parquet(tmp_path / "acc.parquet")
    assert acc.height + rej.height == 3 and set(acc["dataset"]) <= {"gpt_hatecheck"}
    rates = {r["functionality"]: r for r in rep["per_functionality"]}
    assert rates["ref_subs_sent_h"]["candidates"] == 2
    # scorer probabilities are a softmax over 2 logits
    scorer = nli.NLIScorer(str(model))
    p = scorer.entailment([("they are all vermin", "that text contains hate speech")])
    assert 0.0 < p[0] < 1.0


def test_quality_self_bleu_and_perplexity(tmp_path):
    identical = quality.self_bleu(["i hate them all"] * 4)
    assert identical["self_bleu_2"] == pytest.approx(1.0, abs=1e-6)
    mixed = quality.self_bleu(["i hate them all", "the cat sat on a mat", "rain falls in spain", "we love them"])
    assert mixed["self_bleu_4"] < 0.5 and mixed["self_bleu_2"] >= mixed["self_bleu_4"]
    torch.manual_seed(0)
    tok = tiny_tokenizer(tmp_path / "lm")
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=16, n_layer=1, n_head=2, n_positions=64,
                               bos_token_id=1, eos_token_id=2)).save_pretrained(tmp_path / "lm")
    ppl = quality.perplexity(["they are all them", "i hate the text"], str(tmp_path / "lm"))
    # a random model is close to uniform over the tiny vocabulary
    assert ppl["tokens"] > 9 and 5 < ppl["perplexity"] < 60


def test_generate_stage_runs_with_its_declared_arguments(server, params, workdir, monkeypatch):
    """`hatecheck-pipeline run expand_llm_generate_<language>`: the stage
    function gets every declared expansion.llm key and the declared prompts file."""
    import shutil

    from conftest import REPO

    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.core.stage import call
    from hatecheck_pipeline.pipeline import expand

    monkeypatch.setenv("FAKE_LLM_KEY", SECRET)
    llm = {**llm_cfg(server, workdir / "cache"), "enabled": True, "languages": ["english"]}
    on = {**params, "expansion": {**params["expansion"], "llm": llm}}
    stage = next(s for s in expand.stages(on) if s.name == "expand_llm_generate_english")
    for dep in stage.data_deps:
        if dep.startswith("src/"):  # the shipped prompts file, at its declared path
            (workdir / dep).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO / dep, workdir / dep)
    table = workdir / paths.interim_table("hatecheck")
    table.parent.mkdir(parents=True)
    pl.DataFrame({"functionality": ["derog_neg_emote_h"], "case_templ": ["I hate [IDENTITY_P]."], "text": ["x"],
                  "language": ["english"]}).write_parquet(table)
    line = call(stage, on)
    assert line == "english: 9 candidates from 3 prompts (3 queried, 0 cached)"
    assert pl.read_parquet(workdir / stage.all_outs[0]).height == 9
