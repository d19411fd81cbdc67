"""The OpenAI-compatible client in both API styles (chat: /chat/completions,
completions: /completions for davinci-style models) against a loopback fake,
through the same content-addressed cache and key handling, and its retries
as real endpoints need them: 429 + Retry-After honoured, 5xx retried with a
capped exponential backoff, other 4xx not retried, a one-line error at the end."""

import json

import polars as pl
import pytest
from fake_openai import fake_chat_server
from test_llm_backends import synthetic_items

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation import llm
from hatecheck_pipeline.expansion.llm import ChatClient, EndpointError

SECRET = "sk-test-client-key-7"


def completion_answer(body: dict) -> str:
    assert "messages" not in body  # the completions style sends the prompt itself
    return " Yes" if "Answer yes or no" in body["prompt"] else " racist"


def cfg(url, api, **kw):
    return {
        "kind": "openai",
        "enabled": True,
        "model": "davinci-002",
        "stand_in": None,
        "base_url": url,
        "api": api,
        "api_key_env": "LLM_CLIENT_TEST_KEY",
        "timeout_s": 5,
        "temperature": 0.3,
        "iterations": 1,
        "max_new_tokens": 4,
        **kw,
    }


def test_completions_style_posts_prompt_max_tokens_temperature_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_CLIENT_TEST_KEY", SECRET)
    calls: list = []
    items_path, items = synthetic_items(tmp_path)
    with fake_chat_server(completion_answer, calls) as url:
        kw = dict(
            name="davinci",
            items=items_path,
            answers=tmp_path / "a.csv",
            metrics=tmp_path / "m.json",
            backend=cfg(url, "completions"),
            settings=["zero_shot", "mixed"],
            seed=0,
            threads=1,
            batch_size=2,
            profile=Profile("p", {"base_models": {}, "llm_example_sets": 1}),
            cache_dir=str(tmp_path / "cache"),
        )
        llm.run_ethos(**kw)
        assert calls and {c["path"] for c in calls} == {"/v1/completions"}
        assert {c["auth"] for c in calls} == {f"Bearer {SECRET}"}
        body = calls[0]["body"]
        assert set(body) == {"model", "prompt", "max_tokens", "temperature", "seed", "stop"}
        assert body["prompt"].startswith("Is the following text") and body["stop"] == ["\n"]  # the paper's code: stop at the newline
        assert {c["body"]["stop"][0] for c in calls if c["body"]["prompt"].endswith("':")} == {"."}
        n = len(calls)
        calls.clear()
        llm.run_ethos(**kw)  # every answer from the cache
        assert calls == []
    answers = pl.read_csv(tmp_path / "a.csv")
    assert set(answers.filter(pl.col("setting") == "zero_shot")["answer"].str.strip_chars()) == {"Yes"}
    doc = json.loads((tmp_path / "m.json").read_text())
    assert (
        doc["cached"] == n and doc["by_setting"]["mixed"]["free"]["by_category"]["mixed"]["by_class"]["racist"]["pooled"]["recall"] == 100
    )
    files = [f for f in (tmp_path / "cache").rglob("*.json")]
    assert len(files) == n and all(json.loads(f.read_text())["api"] == "completions" for f in files)
    assert all(SECRET not in f.read_text() for f in files)


def test_chat_and_completions_styles_do_not_share_cache_entries(tmp_path):
    calls: list = []
    body = {"model": "m", "prompt": "p", "temperature": 0, "max_tokens": 1}
    with fake_chat_server(lambda b: "ok", calls) as url:
        for api in ("chat", "completions", "chat"):
            ChatClient(url, None, tmp_path, 5, api=api).complete(body)
    assert [c["path"] for c in calls] == ["/v1/chat/completions", "/v1/completions"]


def client(url, tmp_path, waits, **kw):
    return ChatClient(url, "LLM_CLIENT_TEST_KEY", tmp_path / "c", 5, api="completions", sleep=waits.append, **kw)


BODY = {"model": "davinci-002", "prompt": "Is it? Answer:", "max_tokens": 2, "temperature": 0}


def test_429_waits_the_servers_retry_after_then_succeeds(tmp_path):
    calls, waits = [], []
    script = [(429, {"Retry-After": "7"}, {"error": {"message": "Rate limit reached"}})]
    with fake_chat_server(lambda b: " Yes", calls, script) as url:
        out = client(url, tmp_path, waits, backoff_s=0.5).complete(BODY)
    assert out["choices"][0]["text"] == " Yes" and len(calls) == 2
    assert waits == [7.0]  # the server's Retry-After, not the 0.5 s backoff


def test_5xx_is_retried_with_a_capped_exponential_backoff(tmp_path):
    calls, waits = [], []
    script = [(500, {}, {"error": {"message": "boom"}})] * 3 + [(503, {}, "overloaded")]
    with fake_chat_server(lambda b: " No", calls, script) as url:
        out = client(url, tmp_path, waits, retries=6, backoff_s=1.0, max_backoff_s=3.0).complete(BODY)
    assert out["choices"][0]["text"] == " No" and len(calls) == 5
    assert waits == [1.0, 2.0, 3.0, 3.0]


def test_4xx_other_than_429_is_not_retried_and_fails_in_one_line_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_CLIENT_TEST_KEY", SECRET)
    calls, waits = [], []
    script = [(400, {}, {"error": {"message": f"This model does not support chat; key {SECRET} echoed"}})]
    with fake_chat_server(lambda b: "x", calls, script) as url:
        with pytest.raises(EndpointError) as err:
            client(url, tmp_path, waits).complete(BODY)
    msg = str(err.value)
    assert len(calls) == 1 and waits == []
    assert "\n" not in msg and "/v1/completions: HTTP 400 (This model does not support chat" in msg and "not retried" in msg
    assert SECRET not in msg and "***" in msg
    assert not list((tmp_path / "c").rglob("*.json"))  # nothing cached


def test_persistent_failure_gives_up_after_the_configured_tries_with_one_line(tmp_path):
    calls, waits = [], []
    with fake_chat_server(lambda b: "x", calls, [(502, {}, "bad gateway")] * 3) as url:
        with pytest.raises(
            EndpointError, match=r"^http://127\.0\.0\.1:\d+/v1/completions: HTTP 502 \(bad gateway\); gave up after 3 tries$"
        ):
            client(url, tmp_path, waits, retries=3, backoff_s=0.25).complete(BODY)
    assert len(calls) == 3 and waits == [0.25, 0.5]


def test_a_retry_after_beyond_the_ceiling_fails_at_once(tmp_path):
    calls, waits = [], []
    with fake_chat_server(lambda b: "x", calls, [(429, {"Retry-After": "86400"}, "quota")]) as url:
        with pytest.raises(EndpointError, match="asks to retry after 86400 s"):
            client(url, tmp_path, waits, max_retry_after_s=600).complete(BODY)
    assert len(calls) == 1 and waits == []


def test_connection_errors_are_retried_then_named(tmp_path):
    waits: list = []
    with fake_chat_server(lambda b: "x", []) as url:
        pass  # the server is gone: connection refused
    with pytest.raises(EndpointError, match=r"ConnectionError; gave up after 2 tries"):
        client(url, tmp_path, waits, retries=2, backoff_s=0.1).complete(BODY)
    assert waits == [0.1]


def test_docstring_examples_run():
    import doctest

    from hatecheck_pipeline.core import http
    from hatecheck_pipeline.evaluation import llm_local
    from hatecheck_pipeline.expansion import llm as client_module

    for module in (http, client_module, llm, llm_local):
        result = doctest.testmod(module)
        assert result.attempted >= 1 and result.failed == 0, module.__name__
