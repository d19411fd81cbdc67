"""Prompted-LLM backends: a tiny RANDOMLY INITIALISED GPT-2 (built here; its
answers mean nothing beyond checking the arithmetic) for the local backend,
a fake OpenAI-compatible server on 127.0.0.1 for the endpoint backend, and
the llm_ethos stage end to end on small synthetic sets."""

import copy
import json

import polars as pl
import pytest
import torch
from fake_openai import fake_chat_server
from tiny_causal_lm import tiny_causal_lm

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.data import ethos
from hatecheck_pipeline.evaluation import llm
from hatecheck_pipeline.models import llm as prompting

SECRET = "sk-test-llm-key-42"
WORDS = (
    "<pad> <unk> is the following text sexist racist neither not-sexist not-racist yes no answer or "
    "women men a joke : ' . ? classify into comment"
).split()


@pytest.fixture(scope="module")
def tiny_lm():
    return tiny_causal_lm(WORDS)


def manual(net, tok, prompt: str, cont: str) -> float:
    p = tok(prompt, add_special_tokens=False)["input_ids"]
    c = tok(cont, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([p + c])
    with torch.no_grad():
        logp = torch.log_softmax(net(input_ids=ids).logits[0].double(), -1)
    return sum(float(logp[len(p) - 1 + k, c[k]]) for k in range(len(c)))


def test_continuation_logprobs_match_an_unpadded_forward_whatever_the_batching(tiny_lm):
    net, tok = tiny_lm
    prompts = ["is the following text sexist ? answer yes or no", "women", "the comment : 'a joke' .", "men are"]
    # one-token answers, and several of two to four tokens per prompt (run on the prompt's cache)
    conts = [
        [" yes", " no"],
        [" sexist", " not-sexist"],
        [" racist", " neither", " sexist"],
        [" a joke", " no", " yes or no answer", " not-racist"],
    ]
    # and prompts of different lengths after a shared prefix (encoded once; the continuation heads then run on
    # caches whose pads must be masked out)
    shared = [
        "classify into sexist racist neither : 'women are a joke' .",
        "classify into sexist racist neither : 'men' .",
        "classify into sexist racist neither : 'the following comment is not a joke or text' .",
    ]
    mixed = [[" sexist", " racist", " neither", " not-sexist ."]] * 3
    for ps, cs_ in ((prompts, conts), (shared, mixed)):
        for batch_size in (1, 2, 3, 8):
            got = prompting.LocalLM(net, tok, batch_size).continuation_logprobs(ps, cs_)
            for i, cs in enumerate(cs_):
                for j, c in enumerate(cs):
                    assert got[i][j] == pytest.approx(manual(net, tok, ps[i], c), abs=1e-4)


def test_choose_takes_the_most_probable_answer_word_summing_spellings(tiny_lm):
    net, tok = tiny_lm
    lm = prompting.LocalLM(net, tok, 4)
    options = {"yes": [" yes", " answer"], "no": [" no"]}
    [(word, scores)] = lm.choose(["is the following text racist ?"], [options])
    raw = lm.continuation_logprobs(["is the following text racist ?"], [[" yes", " answer", " no"]])[0]
    assert scores["yes"] == pytest.approx(float(torch.logsumexp(torch.tensor(raw[:2]), 0)), abs=1e-6)
    assert scores["no"] == pytest.approx(raw[2], abs=1e-6)
    assert word == max(scores, key=scores.get)


def test_greedy_generation_is_deterministic_and_batch_independent(tiny_lm):
    net, tok = tiny_lm
    prompts = ["is the following text sexist ?", "women a joke : 'text' :", "classify"]
    a = prompting.LocalLM(net, tok, 1).generate(prompts, 3, 0.0, seed=0)
    b = prompting.LocalLM(net, tok, 3).generate(prompts, 3, 0.0, seed=1)
    assert a == b and all(isinstance(x, str) for x in a)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_prompts_sampled_together_get_the_answers_each_gets_alone(arch):
    """One seed per prompt: a batch of prompts sampled together (left-padded,
    rows ending at different steps) gives each the answer it gets asked alone
    with its seed (one generate call of its own after torch.manual_seed)."""
    net, tok = tiny_causal_lm(WORDS, arch=arch)
    net.generation_config.eos_token_id = tok.convert_tokens_to_ids("no")  # a row ends when it samples "no"
    prompts = ["is the following text sexist ?", "women a joke : 'text' :", "classify", "is the text racist ? answer"]
    seeds = [3, 11, 5, 3]
    alone = [prompting.LocalLM(net, tok, 1).generate([p], 12, 0.1, seed=s, first_line=False)[0] for p, s in zip(prompts, seeds)]
    assert len({len(a.split()) for a in alone}) > 1  # the rows stop at different steps
    for batch_size in (2, 4):
        assert prompting.LocalLM(net, tok, batch_size).generate(prompts, 12, 0.1, seeds, first_line=False) == alone
    other = prompting.LocalLM(net, tok, 4).generate(prompts, 12, 0.1, [s + 1 for s in seeds], first_line=False)
    assert other != alone  # the seeds are used
    with pytest.raises(ValueError, match="one per prompt"):
        prompting.LocalLM(net, tok, 4).generate(prompts, 12, 0.9, seeds[:2])


def test_per_row_seeds_refuse_a_warper_they_would_leave_out(tiny_lm):
    net, tok = tiny_lm
    net = copy.deepcopy(net)
    net.generation_config.min_p = 0.1
    with pytest.raises(ValueError, match="min_p"):
        prompting.LocalLM(net, tok, 2).generate(["classify"], 3, 0.9, [1])


def test_a_templated_prompt_is_read_as_is(tiny_lm):
    """generate(templated=True) does not wrap the prompt again: a chat-format
    LM whose tokenizer has no template could not wrap it at all."""
    net, tok = tiny_lm
    prompts = ["is the following text sexist ?", "women a joke : 'text' :"]
    chat = prompting.LocalLM(net, tok, 2, prompt_format="chat")
    with pytest.raises(ValueError):
        chat.generate(prompts, 3, 0.0, seed=0)
    assert chat.generate(prompts, 3, 0.0, seed=0, templated=True) == prompting.LocalLM(net, tok, 2).generate(prompts, 3, 0.0, seed=0)


def test_templates_are_the_papers_formats():
    t = prompting.load_templates()
    examples = [{"text": "A", "label": "sexist"}, {"text": "B", "label": "racist"}, {"text": "C", "label": "neither"}]
    assert prompting.render(t["one_shot"], "X", "sexist", examples[:1]) == (
        "The following text in quotes is sexist:\n'A'\nIs the following text sexist? Answer yes or no.\n'X'\nAnswer:"
    )
    assert prompting.render(t["mixed"], "X", "", examples) == "'A': sexist.\n'B': racist.\n'C': neither.\n'X':"
    assert prompting.render(t["mixed_instruction"], "X", "", examples).startswith(
        "Classify the following texts into 'racist', 'sexist' or 'neither'.\n'A': sexist."
    )
    assert prompting.choices(t["few_shot_single"], "racist") == {"racist": [" racist"], "not-racist": [" not-racist"]}


CALLS: list = []


def answer(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    return "Yes." if "Answer yes or no" in prompt else ("sexist." if "sexist" in prompt.splitlines()[-1] else "neither")


@pytest.fixture
def server():
    CALLS.clear()
    with fake_chat_server(answer, CALLS) as url:
        yield url


def synthetic_items(tmp_path, per_category=4, example_sets=2):
    """Pools of 5 racist, 5 sexist, 9 neither synthetic comments -> prompts."""
    rows = [
        {"pool": p, "rank": r, "half": "input", "comment_id": f"{p}-{r}", "text": f"{p} comment {r}"}
        for p, n in (("racist", 5), ("sexist", 5), ("neither", 9))
        for r in range(n)
    ]
    items = ethos.build_items(pl.DataFrame(rows), per_category, example_sets)
    path = tmp_path / "items.parquet"
    items.write_parquet(path)
    return path, items


def backend(url, **kw):
    return {
        "kind": "openai",
        "enabled": True,
        "model": "fake-davinci",
        "stand_in": None,
        "base_url": url,
        "api_key_env": "LLM_TEST_KEY",
        "timeout_s": 5,
        "temperature": 0.3,
        "iterations": 2,
        "max_new_tokens": 4,
        **kw,
    }


def test_openai_backend_stage_caches_and_scores(server, tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_TEST_KEY", SECRET)
    items_path, items = synthetic_items(tmp_path)
    profiles = {"p": {"base_models": {}, "llm_example_sets": 1}}
    kw = dict(
        name="fake",
        items=items_path,
        answers=tmp_path / "a.csv",
        metrics=tmp_path / "m.json",
        backend=backend(server),
        settings=list(llm.SETTINGS),
        seed=0,
        threads=1,
        batch_size=2,
        profile=Profile("p", profiles["p"]),
        cache_dir=str(tmp_path / "cache"),
    )
    llm.run_ethos(**kw)
    single = items.filter(pl.col("example_set").is_null()).height
    mixed_one_set = items.filter(pl.col("example_set") == 1).height
    # 2 iterations of the single-category prompts; each mixed prompt of the profile's 1 example set once
    assert len(CALLS) == 2 * single + mixed_one_set
    assert {c["auth"] for c in CALLS} == {f"Bearer {SECRET}"}
    assert {c["body"]["seed"] for c in CALLS} == {0, 1} and {c["path"] for c in CALLS} == {"/v1/chat/completions"}
    answers = pl.read_csv(tmp_path / "a.csv")
    assert set(llm.ANSWER_COLUMNS) <= set(answers.columns)
    doc = json.loads((tmp_path / "m.json").read_text())
    zero = doc["by_setting"]["zero_shot"]["free"]["by_category"]["sexist"]
    # the fake always answers "Yes.": recall 100, precision 50 (half the inputs are not sexist)
    assert zero["recall"]["mean"] == 100 and zero["precision"]["mean"] == 50 and zero["iterations"] == 2
    mixed = doc["by_setting"]["mixed"]["free"]["by_category"]["mixed"]
    assert mixed["n"] == mixed_one_set // 2 and mixed["unparsed"] == 0 and mixed["iterations"] == 1
    # a re-run reads every answer from the cache; the key is written nowhere
    CALLS.clear()
    llm.run_ethos(**kw)
    assert CALLS == [] and json.loads((tmp_path / "m.json").read_text())["cached"] == doc["queried"]
    for f in (tmp_path / "cache").rglob("*"):
        assert not f.is_file() or SECRET not in f.read_text()
    assert SECRET not in (tmp_path / "a.csv").read_text() + (tmp_path / "m.json").read_text()


def mixed_reply(body: dict) -> str:
    """The fake's answers to the mixed prompts: in scope for sexist comments,
    out of scope for the racist ones, a class word for the rest."""
    last = body["messages"][-1]["content"].splitlines()[-1] if "messages" in body else body["prompt"].splitlines()[-1]
    if "Answer yes or no" in body.get("prompt", "") + json.dumps(body.get("messages", "")):
        return "Yes."
    return "sexist." if "sexist" in last else ("transphobic, racist." if "racist" in last else "neither")


@pytest.mark.parametrize("mixed_iterations", [None, 3])
def test_an_endpoint_asks_each_mixed_prompt_mixed_iterations_times(tmp_path, monkeypatch, mixed_iterations):
    """Counted on the loopback fake: the single-category prompts `iterations`
    times, each mixed prompt `mixed_iterations` times (default once, as the
    paper classified each example set), at the mixed settings' temperature
    and token limit; the free answers are scored by section 4.4's rule."""
    monkeypatch.setenv("LLM_TEST_KEY", SECRET)
    calls: list = []
    items_path, items = synthetic_items(tmp_path)
    extra = {"mixed_temperature": 0.0, "mixed_max_new_tokens": 3}
    if mixed_iterations is not None:
        extra["mixed_iterations"] = mixed_iterations
    with fake_chat_server(mixed_reply, calls) as url:
        cfg = backend(url, iterations=5, api="completions", **extra)
        llm.run_ethos(
            "fake",
            items_path,
            tmp_path / "a.csv",
            tmp_path / "m.json",
            cfg,
            list(llm.SETTINGS),
            0,
            1,
            2,
            Profile("p", {"base_models": {}, "llm_example_sets": None}),
            str(tmp_path / "cache"),
        )
    single = items.filter(pl.col("example_set").is_null())
    mixed = items.filter(pl.col("example_set").is_not_null())
    per_mixed = mixed_iterations or 1
    assert len(calls) == 5 * single.height + per_mixed * mixed.height
    asked = [c["body"] for c in calls if c["body"]["prompt"].endswith("':")]  # the few-shot prompts end with the quoted comment
    mixed_bodies = [b for b in asked if "not-" not in b["prompt"]]  # single-category few-shot examples are labelled not-<category>
    assert len(mixed_bodies) == per_mixed * mixed.height
    assert {(b["temperature"], b["max_tokens"]) for b in mixed_bodies} == {(0.0, 3)}
    assert {b["seed"] for b in mixed_bodies} == set(range(per_mixed))
    doc = json.loads((tmp_path / "m.json").read_text())
    m = doc["by_setting"]["mixed"]["free"]["by_category"]["mixed"]
    assert m["n"] == per_mixed * mixed.height // 2
    # the racist comments' answer 'transphobic, racist' is out of scope, counted, and a true positive for racist
    racist = mixed.filter((pl.col("setting") == "mixed") & (pl.col("label") == "racist")).height * per_mixed
    assert m["out_of_scope"] == racist and m["answers"]["transphobic, racist"] == racist
    assert m["by_class"]["racist"]["pooled"]["tp"] == racist
    assert set(doc["instruction_contrast"]) == {"free"}
    iterations = pl.read_csv(tmp_path / "a.csv").filter(pl.col("setting") == "mixed")["iteration"].cast(pl.String)
    assert set(iterations) == ({"1", "2"} if per_mixed == 1 else {f"{s}.{r}" for s in (1, 2) for r in (1, 2, 3)})


def test_an_endpoint_refuses_constrained_mixed_answers(tmp_path):
    items_path, _ = synthetic_items(tmp_path)
    with pytest.raises(llm.BackendError, match="mixed_answers.*local backend"):
        llm.run_ethos(
            "fake",
            items_path,
            tmp_path / "a.csv",
            tmp_path / "m.json",
            backend("http://127.0.0.1:9/v1", mixed_answers="constrained"),
            ["mixed"],
            0,
            1,
            2,
            Profile("p", {"base_models": {}, "llm_example_sets": None}),
            str(tmp_path / "cache"),
        )


def run_local(tiny_lm, tmp_path, monkeypatch, cfg, settings, name="run"):
    net, tok = tiny_lm
    items_path, _ = synthetic_items(tmp_path)
    monkeypatch.setattr(prompting.LocalLM, "load", classmethod(lambda cls, model, batch_size=8: cls(net, tok, batch_size)))
    base = {"kind": "local", "enabled": True, "model": "tiny-random", "temperature": 0.0, "iterations": 1, "max_new_tokens": 2}
    llm.run_ethos(
        "tiny",
        items_path,
        tmp_path / f"{name}.csv",
        tmp_path / f"{name}.json",
        {**base, **cfg},
        settings,
        0,
        1,
        4,
        Profile("p", {"base_models": {}, "llm_example_sets": None}),
        str(tmp_path / "cache"),
    )
    return pl.read_csv(tmp_path / f"{name}.csv", infer_schema=False), json.loads((tmp_path / f"{name}.json").read_text())


def test_local_backend_answers_free_and_constrained(tiny_lm, tmp_path, monkeypatch):
    answers, doc = run_local(
        tiny_lm, tmp_path, monkeypatch, {"variants": ["free", "constrained"], "mixed_answers": "constrained"}, ["zero_shot", "mixed"]
    )
    constrained = answers.filter(pl.col("variant") == "constrained")
    assert set(constrained.filter(pl.col("setting") == "zero_shot")["answer"]) <= {"yes", "no"}
    assert set(constrained.filter(pl.col("setting") == "mixed")["answer"]) <= {"sexist", "racist", "neither"}
    assert doc["by_setting"]["mixed"]["constrained"]["by_category"]["mixed"]["unparsed"] == 0
    assert doc["by_setting"]["mixed"]["constrained"]["by_category"]["mixed"]["iterations"] == 2  # the 2 example sets
    assert set(doc["by_setting"]["mixed"]) == {"constrained"}  # mixed_answers: constrained, whatever the variants
    free = answers.filter(pl.col("variant") == "free")
    assert set(free["setting"]) == {"zero_shot"} and free.height == constrained.filter(pl.col("setting") == "zero_shot").height


def test_local_mixed_settings_generate_freely_by_default(tiny_lm, tmp_path, monkeypatch):
    """The default mixed_answers: free: the tiny LM's generated gibberish is
    kept (cut at the full stop), counted out of scope, listed with its counts
    (Table 5) and contrasted with/without the instruction; the single-category
    settings stay constrained. Sampled at a temperature, each prompt's answer
    is its own seed's: the same when asked again in other company."""
    cfg = {"variants": ["constrained"], "mixed_temperature": 1.0, "mixed_max_new_tokens": 3}
    answers, doc = run_local(tiny_lm, tmp_path, monkeypatch, cfg, ["zero_shot", "mixed", "mixed_instruction"])
    assert set(answers.filter(pl.col("setting") == "zero_shot")["variant"]) == {"constrained"}
    mixed = answers.filter(pl.col("setting").is_in(["mixed", "mixed_instruction"]))
    per_set = mixed.filter((pl.col("setting") == "mixed") & (pl.col("example_set") == "1")).height
    assert set(mixed["variant"]) == {"free"} and per_set > 0 and mixed.height == 2 * 2 * per_set  # 2 settings x 2 example sets
    texts = [a or "" for a in mixed["answer"].to_list()]
    assert all("." not in a and "\n" not in a for a in texts) and any(a.strip() for a in texts)
    m = doc["by_setting"]["mixed"]["free"]["by_category"]["mixed"]
    from hatecheck_pipeline.evaluation.llm_answers import answer_key, in_scope

    own = [a for s, a in zip(mixed["setting"], texts) if s == "mixed"]
    assert m["out_of_scope"] == sum(not in_scope(a) for a in own) > 0
    counted = {}
    for a in own:
        counted[answer_key(a)] = counted.get(answer_key(a), 0) + 1
    assert m["answers"] == counted and m["distinct"] == len(counted)  # Table 5: every distinct free answer, counted
    contrast = doc["instruction_contrast"]["free"]
    assert contrast["without"]["out_of_scope"] == m["out_of_scope"]
    assert contrast["with"]["n"] == doc["by_setting"]["mixed_instruction"]["free"]["by_category"]["mixed_instruction"]["n"]
    assert doc["mixed"] == {"answers": "free", "temperature": 1.0, "max_new_tokens": 3, "iterations": 1}
    # asked again alone (one setting, a fresh store): the same sampled answers
    (tmp_path / "again").mkdir()
    alone, _ = run_local(tiny_lm, tmp_path / "again", monkeypatch, cfg, ["mixed"], name="alone")
    assert alone["answer"].to_list() == answers.filter(pl.col("setting") == "mixed")["answer"].to_list()


def test_suite_prompt_gives_p_hateful_as_the_renormalised_yes(tiny_lm):
    net, tok = tiny_lm
    lm = prompting.LocalLM(net, tok, 4)
    template = prompting.load_templates()["suite_zero_shot_english"]
    texts = ["women are a joke", "the text"]
    p = prompting.hateful_probabilities(lm, texts, template)
    for text, value in zip(texts, p):
        [(_, s)] = lm.choose([prompting.render(template, text)], [prompting.choices(template)])
        assert value == pytest.approx(torch.softmax(torch.tensor([s["yes"], s["no"]]), 0)[0].item(), abs=1e-6)
    with pytest.raises(ValueError, match="yes/no"):
        prompting.hateful_probabilities(lm, texts, prompting.load_templates()["mixed"])


def test_answers_frame_reads_every_row_for_its_schema():
    # regression: 360 single-category answers (no example set) before the mixed ones
    base = {
        "setting": "zero_shot",
        "example_set": None,
        "item_id": "i",
        "comment_id": "c",
        "category": "sexist",
        "label": "sexist",
        "variant": "free",
        "iteration": "1",
        "answer": "yes",
    }
    rows = [base] * 150 + [{**base, "setting": "mixed", "category": "mixed", "label": "neither", "example_set": 3}]
    frame = llm.answers_frame(rows, "b", "m")
    assert frame.height == 151 and frame["example_set"].to_list()[-1] == 3 and frame.columns == llm.ANSWER_COLUMNS


def test_the_answer_store_adds_up_answering_time_over_the_pieces_of_a_run(tmp_path):
    """A run made in pieces (killed, resumed): each stored chunk keeps its
    seconds; a shard written before times were kept counts as untimed."""
    from hatecheck_pipeline.core.files import write_json
    from hatecheck_pipeline.evaluation.llm_local import AnswerStore

    first = AnswerStore(tmp_path)
    first.put({"a": {"yes": -0.1}}, 2.0)
    first.put({"b": {"yes": -0.2}, "c": {"yes": -0.3}}, 3.0)
    write_json({"d": {"yes": -0.4}}, tmp_path / "legacy.json")  # an older shard: answers only
    resumed = AnswerStore(tmp_path)
    assert resumed.loaded == 4 and "__seconds__" not in resumed.items  # the time is not an answer
    assert [resumed.get(k) for k in "abd"] == [{"yes": -0.1}, {"yes": -0.2}, {"yes": -0.4}]
    assert resumed.seconds_of() == {"prompts": 3, "seconds": 3.5, "untimed": 1}  # a + half of (b, c); d untimed
    resumed.put({"e": {"yes": -0.5}}, 1.25)
    assert AnswerStore(tmp_path).seconds_of(list("abcde")) == {"prompts": 5, "seconds": 6.25, "untimed": 1}


def test_a_resumed_ethos_run_reports_the_time_of_every_piece(tiny_lm, tmp_path, monkeypatch):
    net, tok = tiny_lm
    items_path, _ = synthetic_items(tmp_path)
    monkeypatch.setattr(prompting.LocalLM, "load", classmethod(lambda cls, model, batch_size=8: cls(net, tok, batch_size)))
    cfg = {
        "kind": "local",
        "enabled": True,
        "model": "tiny-random",
        "temperature": 0.0,
        "iterations": 1,
        "max_new_tokens": 2,
        "variants": ["constrained"],
    }
    docs = []
    for run in ("first", "again"):
        llm.run_ethos(
            "tiny",
            items_path,
            tmp_path / f"{run}.csv",
            tmp_path / f"{run}.json",
            cfg,
            ["zero_shot", "mixed"],
            0,
            1,
            4,
            Profile("p", {"base_models": {}, "llm_example_sets": None}),
            str(tmp_path / "cache"),
        )
        docs.append(json.loads((tmp_path / f"{run}.json").read_text())["answer_store"])
    first, again = docs
    assert first["added"] == first["all_pieces"]["prompts"] > 0 and first["all_pieces"]["untimed"] == 0
    assert again["added"] == 0 and again["all_pieces"] == first["all_pieces"]  # nothing asked twice, the time kept
    assert first["all_pieces"]["seconds"] > 0


def test_the_capped_sample_has_both_labels_of_every_category_and_every_class_of_each_example_set():
    """Positives rare (3 of 33 per category): an unstratified draw of 4
    would often miss them; the stratified one never does, for any seed."""
    rows = []
    for setting in ("zero_shot", "one_shot"):
        for cat in ("racist", "sexist"):
            rows += [(setting, None, cat, cat if i < 3 else f"not-{cat}", f"{setting}/{cat}/{i}") for i in range(33)]
    for es in (1, 2):
        rows += [
            ("mixed", es, "mixed", lab, f"mixed/{es}/{lab}/{i}")
            for lab, k in (("racist", 2), ("sexist", 2), ("neither", 20))
            for i in range(k)
        ]
    items = pl.DataFrame(
        rows,
        schema={"setting": pl.String, "example_set": pl.Int64, "category": pl.String, "label": pl.String, "item_id": pl.String},
        orient="row",
    )
    for seed in range(20):
        part = llm.select_items(items, ["zero_shot", "one_shot", "mixed"], example_sets=None, max_prompts=6, seed=seed)
        assert part.group_by("setting").len().sort("setting")["len"].to_list() == [6, 6, 6]
        for setting in ("zero_shot", "one_shot"):
            for cat in ("racist", "sexist"):
                labels = set(part.filter((pl.col("setting") == setting) & (pl.col("category") == cat))["label"])
                assert labels == {cat, f"not-{cat}"}, (seed, setting, cat)
        mixed = part.filter(pl.col("setting") == "mixed")
        for es in (1, 2):
            assert set(mixed.filter(pl.col("example_set") == es)["label"]) == {"racist", "sexist", "neither"}, (seed, es)
        again = llm.select_items(items, ["zero_shot", "one_shot", "mixed"], example_sets=None, max_prompts=6, seed=seed)
        assert again["item_id"].to_list() == part["item_id"].to_list()  # seeded
    positions = lambda s: [i.split("/", 1)[1] for i in part.filter(pl.col("setting") == s)["item_id"]]  # noqa: E731
    assert positions("zero_shot") == positions("one_shot")  # the same comments in every yes/no setting
