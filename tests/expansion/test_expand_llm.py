"""GPT-HateCheck generation: the answer format and its bad outputs, the
request loop, the content-addressed cache (endpoint and local LLM), the
judges (a tiny randomly initialised BART and GPT-2: NOT trained models,
their numbers mean nothing), the quality measures, and the stages run with
their declared arguments against a fake OpenAI-compatible server."""

import json
import math
import random
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import torch
from fake_openai import fake_chat_server
from tiny_causal_lm import tiny_causal_lm
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import BartConfig, BartForSequenceClassification, PreTrainedTokenizerFast

from hatecheck_pipeline.expansion import generate, llm, nli, prompts, quality

SECRET = "sk-test-secret-123"
GOOD = json.dumps({"messages": ["I can't stand them at all.", "They are all vermin, honestly."]})


# ------------------------------------------------------------ answer format


@pytest.mark.parametrize(
    "answer, messages, problem",
    [
        (GOOD, ["I can't stand them at all.", "They are all vermin, honestly."], None),
        ("Sure!\n```json\n" + GOOD + "\n```", ["I can't stand them at all.", "They are all vermin, honestly."], None),
        ("", [], "empty"),
        ("   \n", [], "empty"),
        ("I'm sorry, but I can't help with that request.", [], "refusal"),
        ("As an AI language model, I cannot write hateful messages.", [], "refusal"),
        ("1. They are vermin.\n2. I hate them.", [], "not_json"),
        ('{"messages": ["They are vermin.", "I ha', [], "not_json"),  # cut off by the token limit
        ('["They are vermin.", "I hate them."]', [], "wrong_format"),  # a list, not {"messages": [...]}
        ('{"texts": ["They are vermin."]}', [], "wrong_format"),
        ('{"messages": "They are vermin."}', [], "wrong_format"),
        ('{"messages": ["They are vermin.", "", 3]}', ["They are vermin."], "bad_items"),
        ('{"messages": []}', [], "wrong_format"),
    ],
)
def test_answers_parse_to_messages_or_a_named_bad_output(answer, messages, problem):
    assert llm.parse_messages(answer) == (messages, problem)


class ScriptedClient:
    """Answers each cell's requests from its own list (the cell found by its
    prompt), in order; records the batches asked; counts like ChatClient."""

    base_url = "scripted"

    def __init__(self, script, cells_):
        self.script = {cell.prompt: list(answers) for cell, answers in zip(cells_, script)}
        self.bodies, self.batches, self.queried, self.cached = [], [], 0, 0

    def complete_many(self, bodies):
        self.batches.append(len(bodies))
        out = []
        for body in bodies:
            self.bodies.append(body)
            self.queried += 1
            out.append({"choices": [{"message": {"content": self.script[body["messages"][1]["content"]].pop(0)}}]})
        return out

    def close(self):
        pass


def cells(funcs=("derog_neg_emote_h", "profanity_nh"), targets=("women",), n=2):
    spec = prompts.load_spec()
    return prompts.cells(spec, list(funcs), list(targets), {}, "english", n)


def test_bad_outputs_are_counted_per_functionality_and_asked_again():
    three = json.dumps({"messages": ["a b c", "d e f", "g h i"]})
    client = ScriptedClient(
        [
            ["I'm sorry, I can't do that.", three],  # emote: a refusal, then 3 (2 kept)
            ["1. x\n2. y", "", '["z"]'],
        ],
        cells(),
    )  # profanity: three bad answers, the loop gives up
    cand, reqs = generate.generate(
        client, "m", cells(), n_per_cell=2, per_request=2, max_requests=3, temperature=0.5, max_tokens=50, seed=7
    )
    assert cand["text"].to_list() == ["a b c", "d e f"] and set(cand["functionality"]) == {"derog_neg_emote_h"}
    assert cand["id"].to_list() == ["gpt-english-0", "gpt-english-1"] and cand["label"].to_list() == ["hateful"] * 2
    assert [b["seed"] for b in client.bodies] == [7, 7, 8, 8, 9]  # request i of a cell: seed + i
    assert client.batches == [2, 2, 1]  # round i asks request i of every cell still short, together
    assert reqs["functionality"].to_list() == ["derog_neg_emote_h"] * 2 + ["profanity_nh"] * 3  # cell by cell
    assert reqs["request"].to_list() == [0, 1, 0, 1, 2]
    assert reqs["problem"].to_list() == ["refusal", None, "not_json", "empty", "wrong_format"]
    assert reqs["kept"].to_list() == [0, 2, 0, 0, 0] and reqs["messages"].to_list() == [0, 3, 0, 0, 0]
    rep = generate.generation_report(reqs, cells(), "scripted", {}, client.queried, client.cached)
    per = {r["functionality"]: r for r in rep["per_functionality"]}
    assert per["derog_neg_emote_h"] == {
        "functionality": "derog_neg_emote_h",
        "cells": 1,
        "requests": 2,
        "messages": 3,
        "candidates": 2,
        "bad_outputs": 1,
        "empty": 0,
        "refusal": 1,
        "not_json": 0,
        "wrong_format": 0,
        "bad_items": 0,
    }
    assert per["profanity_nh"]["bad_outputs"] == 3 and per["profanity_nh"]["candidates"] == 0
    assert rep["bad_outputs"] == 4 and rep["candidates"] == 2 and rep["requests"] == 5


# -------------------------------------------------------------------- cache


@pytest.fixture
def server():
    calls: list = []
    with fake_chat_server(lambda body: GOOD, calls) as url:
        yield url, calls


def test_endpoint_answers_are_cached_by_request_and_the_key_never_written(server, tmp_path, monkeypatch):
    url, calls = server
    monkeypatch.setenv("FAKE_LLM_KEY", SECRET)
    cache = tmp_path / "cache"

    def run(temperature=0.5):
        client = llm.ChatClient(url, "FAKE_LLM_KEY", cache, 5)
        cand, _ = generate.generate(client, "fake", cells(), 2, 2, 2, temperature, 64, 7)
        return client, cand

    client, cand = run()
    assert client.queried == 2 and len(calls) == 2 and cand.height == 4
    assert calls[0]["auth"] == f"Bearer {SECRET}" and calls[0]["path"] == "/v1/chat/completions"
    client2, cand2 = run()  # a re-run asks nothing
    assert client2.queried == 0 and client2.cached == 2 and len(calls) == 2 and cand2.equals(cand)
    assert run(temperature=0.0)[0].queried == 2  # a setting change asks again
    for f in cache.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes()


class CountingLM:
    """A local LM stand-in without a chat template: records generate calls."""

    class tok:  # noqa: N801
        chat_template = None

    def __init__(self):
        self.calls = []

    def generate(self, prompts_, max_new_tokens, temperature, seed, first_line=True, templated=False):
        self.calls.append((prompts_, max_new_tokens, temperature, seed, first_line))
        return [GOOD + "\nmore lines"] * len(prompts_)


def test_local_llm_answers_go_through_the_same_cache(tmp_path):
    lm = CountingLM()
    client = llm.LocalChat(lm, "pkg:some_model", tmp_path)
    cand, _ = generate.generate(client, "pkg:some_model", cells(), 2, 2, 2, 0.5, 64, 7)
    assert cand.height == 4 and client.queried == 2 and len(lm.calls) == 1  # both cells' requests in one call
    prompt, max_new, temp, seed, first_line = lm.calls[0]
    assert len(prompt) == 2 and all(p.startswith("You are a crowd-sourced worker") and p.endswith("Result:\nAnswer:") for p in prompt)
    assert (max_new, temp, seed, first_line) == (64, 0.5, [7, 7], False)  # a seed per request; the whole answer
    again = llm.LocalChat(lm, "pkg:some_model", tmp_path)
    generate.generate(again, "pkg:some_model", cells(), 2, 2, 2, 0.5, 64, 7)
    assert again.cached == 2 and again.queried == 0 and len(lm.calls) == 1
    other = llm.LocalChat(lm, "pkg:other_model", tmp_path)  # another model: its own requests
    generate.generate(other, "pkg:other_model", cells(), 2, 2, 2, 0.5, 64, 7)
    assert other.queried == 2


def test_local_generation_with_a_tiny_random_lm_runs_in_the_chat_format(tmp_path):
    net, tok = tiny_causal_lm("<pad> <unk> you are a write messages that women . result : answer".split())
    from hatecheck_pipeline.models.llm import LocalLM

    lm = LocalLM(net, tok)
    client = llm.LocalChat(lm, "tiny", tmp_path)
    cand, reqs = generate.generate(client, "tiny", cells(funcs=("derog_neg_emote_h",)), 2, 2, 1, 0.5, 6, 3)
    # a random model writes no JSON: the bad output is counted, nothing is invented
    assert cand.height == 0 and reqs["problem"].to_list()[0] in llm.BAD_OUTPUTS


def test_local_requests_asked_together_get_the_answers_each_gets_alone(tmp_path):
    """LocalChat.complete_many generates the requests in one batch, each
    from its own body's seed: the answers are those of asking one by one."""
    net, tok = tiny_causal_lm("<pad> <unk> you are a write messages that women . result : answer".split(), arch="llama")
    from hatecheck_pipeline.models.llm import LocalLM

    bodies = [
        llm.request_body("tiny", cell.system, cell.prompt, 0.2, 8, seed)
        for cell in cells(funcs=("derog_neg_emote_h", "profanity_nh"), targets=("women",))
        for seed in (1, 2)
    ]
    alone = [llm.content_of(llm.LocalChat(LocalLM(net, tok, 1), "tiny", tmp_path / "alone").complete(b)) for b in bodies]
    client = llm.LocalChat(LocalLM(net, tok, 4), "tiny", tmp_path / "together")
    together = [llm.content_of(r) for r in client.complete_many(bodies)]
    assert together == alone and len(set(alone)) > 1 and client.queried == 4
    again = llm.LocalChat(LocalLM(net, tok, 4), "tiny", tmp_path / "together")
    assert [llm.content_of(r) for r in again.complete_many(bodies)] == alone and again.cached == 4


# ------------------------------------------------------------------- judges


def tiny_nli(path: Path) -> Path:
    """A randomly initialised 3-label BART (untrained; NLI-shaped only)."""
    torch.manual_seed(0)
    words = "<pad> <s> </s> <unk> that text contains hate speech is about a the i they are all them".split()
    t = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 1), ("</s>", 2)]
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tok.save_pretrained(path)
    cfg = BartConfig(
        vocab_size=len(tok),
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=300,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
        num_labels=3,
        id2label={0: "contradiction", 1: "neutral", 2: "entailment"},
        label2id={"contradiction": 0, "neutral": 1, "entailment": 2},
    )
    BartForSequenceClassification(cfg).save_pretrained(path)
    return path


def test_nli_scorer_is_a_softmax_over_entailment_and_contradiction(tmp_path):
    torch.set_num_threads(1)
    path = tiny_nli(tmp_path / "nli")
    scorer = nli.NLIScorer(str(path), batch_size=2)
    pairs = [("they are all vermin", "that text contains hate speech"), ("i", "they are"), ("a", "the")]
    probs = scorer.entailment(pairs)
    enc = scorer.tokenizer(["they are all vermin"], ["that text contains hate speech"], return_tensors="pt")
    with torch.no_grad():
        logits = scorer.model(**enc).logits[0]
    assert probs[0] == pytest.approx(float(torch.softmax(logits[[0, 2]], -1)[1]), abs=1e-5)
    assert len(probs) == 3 and all(0 < p < 1 for p in probs) and scorer.name.startswith("NLI model")


def test_llm_judge_gives_the_renormalised_yes_of_a_fixed_question():
    from hatecheck_pipeline.models.llm import LocalLM

    net, tok = tiny_causal_lm(
        "<pad> <unk> premise : hypothesis women are scum that contains hate speech . does the entail answer yes or no ? Yes No".split()
    )
    judge = nli.LLMJudge(LocalLM(net, tok), "tiny random GPT-2")
    pairs = [("women are scum .", "that contains hate speech ."), ("that", "women")]
    probs = judge.entailment(pairs)
    prompt = judge.prompts(pairs[:1])[0]
    assert "Premise: women are scum .\nHypothesis: that contains hate speech ." in prompt
    assert "Does the premise entail the hypothesis? Answer yes or no." in prompt
    _, scores = judge.lm.choose([prompt], [nli.JUDGE_ANSWERS])[0]
    assert probs[0] == pytest.approx(1 / (1 + math.exp(scores["no"] - scores["yes"])))
    assert all(0 < p < 1 for p in probs) and "STAND-IN" in judge.name and "tiny random GPT-2" in judge.name


# ------------------------------------------------------------------ quality


def brute_self_bleu(texts, n):
    """nltk sentence_bleu semantics, written out the slow way (the notebook's loop)."""
    toks = [quality.tokens(t) for t in texts]
    total = 0.0
    for i, h in enumerate(toks):
        refs = toks[:i] + toks[i + 1 :]
        logs, zero = [], False
        for k in range(1, n + 1):
            hc = Counter(tuple(h[j : j + k]) for j in range(len(h) - k + 1))
            best = Counter()
            for r in refs:
                for g, c in Counter(tuple(r[j : j + k]) for j in range(len(r) - k + 1)).items():
                    best[g] = max(best[g], c)
            num = sum(min(c, best[g]) for g, c in hc.items())
            if k == 1 and num == 0:
                zero = True
            logs.append(math.log(num / max(1, sum(hc.values()))) if num else -745.0)
        if zero or not h:
            continue
        ref = min((len(r) for r in refs), key=lambda L: (abs(L - len(h)), L))
        bp = 1.0 if len(h) > ref else math.exp(1 - ref / len(h))
        total += bp * math.exp(sum(logs) / n)
    return total / len(toks)


def test_self_bleu_matches_the_slow_definition():
    rng = random.Random(3)
    vocab = "they are all scum i hate women muslims so much you should die never any good".split()
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 9))) for _ in range(40)]
    texts += ["I hate women.", "I hate women.", "Don't you dare!"]
    fast = quality.self_bleu(texts)
    for n in (2, 3, 4):
        assert fast[f"self_bleu_{n}"] == pytest.approx(brute_self_bleu(texts, n), abs=1e-6)
    assert quality.self_bleu(["i hate them all"] * 4)["self_bleu_4"] == pytest.approx(1.0)
    assert quality.tokens("Don't you DARE, 2 times!") == ["do", "you", "dare", "times"]


def test_hatecheck_reference_leaves_spelling_out_and_drops_duplicates():
    hc = pl.DataFrame({"text": ["a", "a", "b", "c"], "functionality": ["x_h", "x_h", "spell_leet_h", "y_nh"]})
    assert quality.reference_texts(hc) == ["a", "c"]


def test_generated_suite_is_measured_on_ten_seeded_subsamples_of_the_reference_size():
    texts = [f"message number {w} about {v}" for w in "abcdefghij" for v in "klmnopqrst"]  # 100 distinct
    out = quality.subsampled(texts, 30, 10, 0, None, 8)
    assert out["draws"] == 10 and out["subsample_size"] == 30 and out["cases"] == 100
    draws = [quality.self_bleu(random.Random(i).sample(texts, 30))["self_bleu_2"] for i in range(10)]
    assert out["self_bleu_2"] == pytest.approx(sum(draws) / 10, abs=1e-6) and out["self_bleu_2_sd"] > 0
    small = quality.subsampled(texts[:20], 30, 10, 0, None, 8)
    assert small["draws"] == 1 and small["subsample_size"] == 20 and small["smaller_than_reference"]
    # an empty generated suite (every candidate rejected) is measured as such, no NaN in the JSON
    empty = quality.subsampled([], 30, 10, 0, None, 8)
    assert empty["cases"] == 0 and empty["self_bleu_2"] is None


def test_perplexity_is_the_exp_of_the_mean_per_text_loss():
    net, tok = tiny_causal_lm("<pad> <unk> they are all scum i hate women".split())
    texts = ["they are all scum", "i hate women", "scum"]
    out = quality.perplexity(texts, net, tok, batch_size=2)
    losses = []
    for t in texts[:2]:
        ids = torch.tensor([tok(t, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            losses.append(float(net(input_ids=ids, labels=ids).loss))
    assert out["perplexity"] == pytest.approx(math.exp(sum(losses) / 2), rel=1e-4)
    assert out["scored"] == 2 and out["too_short"] == 1
    assert quality.perplexity([], net, tok)["perplexity"] is None


def test_perplexity_does_not_depend_on_the_length_batches():
    """Texts of mixed lengths, batched by length: each text is scored alone
    (right padding), so one text per batch and all of them in one batch give
    the same perplexity."""
    net, tok = tiny_causal_lm("<pad> <unk> they are all scum i hate women".split())
    texts = ["they are all scum i hate women", "i hate women", "scum", "they are scum", "women are all", "i hate they are all scum"]
    alone = quality.perplexity(texts, net, tok, batch_size=1)
    for bs in (2, 3, 64):
        out = quality.perplexity(texts, net, tok, batch_size=bs)
        assert out["perplexity"] == pytest.approx(alone["perplexity"], rel=1e-6)
        assert (out["scored"], out["too_short"]) == (5, 1)


# ------------------------------------------------------------------- stages


def test_generate_validate_and_quality_stages_run_with_their_declared_arguments(server, params, workdir, monkeypatch):
    """The three stages through the generic entry point, with a fake
    endpoint as generator, a tiny random BART as the NLI judge and a tiny
    random GPT-2 as the perplexity LM (plumbing only)."""
    import shutil

    from conftest import REPO

    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.core.stage import call
    from hatecheck_pipeline.pipeline import expand

    url, calls = server
    monkeypatch.setenv("FAKE_LLM_KEY", SECRET)
    lm_dir = workdir / "tiny_lm"
    net, tok = tiny_causal_lm("<pad> <unk> i they are all them women hate".split())
    net.save_pretrained(lm_dir)
    tok.save_pretrained(lm_dir)
    backends = {
        **params["llm"]["backends"],
        "fake": {
            "kind": "openai",
            "enabled": False,
            "model": "fake-model",
            "stand_in": None,
            "base_url": url,
            "api_key_env": "FAKE_LLM_KEY",
            "timeout_s": 5,
            "temperature": 0.5,
            "iterations": 1,
            "max_new_tokens": 64,
        },
    }
    gpt = {"generator": "fake", "judge": "nli", "max_cells": 3, "per_cell": 2, "max_tokens": 64, "max_requests": 2, "quality_cases": None}
    exp = params["expansion"]
    on = {
        **params,
        "profile": "smoke",
        "llm": {**params["llm"], "backends": backends},
        "profiles": {**params["profiles"], "smoke": {**params["profiles"]["smoke"], "gpt_hatecheck": gpt}},
        "expansion": {
            **exp,
            "llm": {**exp["llm"], "enabled": True, "cache_dir": str(workdir / "cache")},
            "nli": {**exp["nli"], "model": str(tiny_nli(workdir / "nli"))},
            "quality": {**exp["quality"], "lm": str(lm_dir), "subsamples": 3},
        },
    }
    stages = {s.name: s for s in expand.stages(on)}
    for dep in {d for s in stages.values() for d in s.data_deps}:
        if dep.startswith("src/"):
            (workdir / dep).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO / dep, workdir / dep)
    assert stages["expand_llm_generate_english"].inputs["slurs"].endswith("resources/expansion/gpt_hatecheck_slurs.yaml")
    line = call(stages["expand_llm_generate_english"], on)
    assert "6 candidates from 3 cells, 3 requests (3 asked, 0 cached), 0 bad outputs" in line
    rep = json.loads((workdir / expand.gpt_report("english", "generation.json")).read_text())
    assert rep["generator"] == "fake: fake-model, a STAND-IN for gpt-3.5-turbo-0613"
    assert rep["cells_possible"] == 144 and not rep["complete"]
    assert call(stages["expand_llm_generate_english"], on).count("3 cached") == 1 and len(calls) == 3
    hc = workdir / paths.interim_table("hatecheck")
    hc.parent.mkdir(parents=True)
    pl.DataFrame(
        {
            "text": ["I hate women.", "I hate them all.", "they are women"],
            "functionality": ["derog_neg_emote_h", "derog_neg_emote_h", "ident_neutral_nh"],
        }
    ).write_parquet(hc)
    line = call(stages["expand_llm_validate_english"], on)
    assert "judge NLI model" in line
    val = json.loads((workdir / expand.gpt_report("english", "validation.json")).read_text())
    assert val["generator"] == rep["generator"] and val["candidates"] == 6
    assert val["duplicates"] == 4  # the fake answers the same two messages to every prompt
    kept = pl.read_parquet(workdir / paths.expanded_table("gpt_hatecheck_english"))
    assert kept.height == val["kept"] and set(kept["generator"]) <= {rep["generator"]}
    call(stages["expand_quality"], on)
    q = json.loads((workdir / expand.quality_report()).read_text())
    assert q["suites"]["hatecheck"]["cases"] == 3 and q["suites"]["hatecheck"]["perplexity"] > 0
    assert q["suites"]["gpt_hatecheck_english"]["cases"] == kept["text"].n_unique()


def test_a_local_generator_and_judge_on_the_fetched_weights_declare_them(params):
    """GPT-HateCheck on the profile's local LLM (backend ``local``, model
    ``weights``): generation and validation read the fetched weights'
    manifest, ask the weights' memory, and the fetch stage is in the DAG;
    an endpoint generator and the NLI judge declare neither."""
    from hatecheck_pipeline.core import paths
    from hatecheck_pipeline.models.weights import memory_mb
    from hatecheck_pipeline.pipeline import expand, llm

    def with_plan(generator: str, judge: str) -> dict:
        plan = {
            "generator": generator,
            "judge": judge,
            "max_cells": 1,
            "per_cell": 1,
            "max_tokens": 8,
            "max_requests": 1,
            "quality_cases": None,
        }
        # every profile: the DAG is the same for all, so one profile's local plan declares the weights
        profiles = {name: {**prof, "gpt_hatecheck": plan} for name, prof in params["profiles"].items()}
        llm_off = {n: {**b, "enabled": False} for n, b in params["llm"]["backends"].items()}
        models = {n: m for n, m in params["models"].items() if m.get("kind") != "llm"}
        return {
            **params,
            "profile": "embedded",
            "profiles": profiles,
            "models": models,
            "llm": {**params["llm"], "backends": llm_off},
            "expansion": {**params["expansion"], "llm": {**params["expansion"]["llm"], "enabled": True}},
        }

    local = with_plan("local", "local")
    stages = {s.name: s for s in expand.stages(local)}
    gen, val = stages["expand_llm_generate_english"], stages["expand_llm_validate_english"]
    weights_mb = memory_mb(params["profiles"]["embedded"]["llm_weights"], 0)
    assert gen.inputs["weights"] == val.inputs["weights"] == paths.llm_weights_info()
    assert gen.mem_mb == val.mem_mb == weights_mb > 6000
    assert llm.uses_fetched_weights(local) and "fetch_llm_weights" in {s.name for s in llm.stages(local)}

    endpoint = with_plan("gpt-3.5-turbo", "nli")
    stages = {s.name: s for s in expand.stages(endpoint)}
    assert "weights" not in stages["expand_llm_generate_english"].inputs
    assert "weights" not in stages["expand_llm_validate_english"].inputs
    assert not llm.uses_fetched_weights(endpoint)


def test_a_backend_on_fetched_weights_is_loaded_from_their_folder_and_named_by_their_manifest(tmp_path):
    from hatecheck_pipeline.evaluation import gpt_hatecheck as g

    backend = {"kind": "local", "model": "weights", "stand_in": None}
    with pytest.raises(ValueError, match="fetch_llm_weights"):
        g.with_weights(backend, None)
    manifest = tmp_path / "w" / "info.json"
    resolved = g.with_weights(backend, manifest)
    assert resolved["model"] == str(tmp_path / "w") and backend["model"] == "weights"
    endpoint = {"kind": "openai", "model": "gpt-3.5-turbo-0613"}
    assert g.with_weights(endpoint, None) is endpoint
    assert g.describe_backend("e", endpoint, g.PAPER_GENERATOR) == "e: gpt-3.5-turbo-0613"


class TemplatedLM:
    """A chat LM stand-in: records the text it reads (after its own wrap)."""

    prompt_format = "chat"
    tok = None

    def __init__(self, continuation):
        self.continuation, self.read = continuation, []

    def wrap(self, prompt):
        return prompt if self.prompt_format == "plain" else f"<user>{prompt}</user><assistant>"

    def generate(self, prompts_, max_new_tokens, temperature, seed, first_line=True, templated=False):
        self.read.extend(p if templated else self.wrap(p) for p in prompts_)
        return [self.continuation] * len(prompts_)


def test_a_local_generator_answers_after_the_formats_opening_in_one_chat_template(tmp_path):
    """The local generator's answer starts with `{"messages": ["` (the format
    the authors' code reads); the prompt, already in the chat template, is
    not wrapped a second time; answers are keyed apart from unprefixed ones."""
    from hatecheck_pipeline.evaluation.gpt_hatecheck import ANSWER_PREFIX

    lm = TemplatedLM('They are vermin.", "I hate them all."]}')
    client = llm.LocalChat(lm, "m", tmp_path, answer_prefix=ANSWER_PREFIX)
    cand, reqs = generate.generate(client, "m", cells(funcs=("derog_neg_emote_h",)), 2, 2, 1, 0.5, 64, 7)
    assert cand["text"].to_list() == ["They are vermin.", "I hate them all."] and reqs["problem"].to_list() == [None]
    assert reqs["answer"][0].startswith(ANSWER_PREFIX)
    (read,) = lm.read
    assert read.endswith("Result:\nAnswer:" + ANSWER_PREFIX) and "<user>" not in read  # one template, the opening last
    assert client.base_url == "local:m, answer opened with " + ANSWER_PREFIX  # the key the embedded run's answers have
    plain = llm.LocalChat(TemplatedLM(GOOD), "m", tmp_path)  # same request unprefixed: its own cache entry
    generate.generate(plain, "m", cells(funcs=("derog_neg_emote_h",)), 2, 2, 1, 0.5, 64, 7)
    assert plain.queried == 1
