"""The http classifier kind against a loopback fake of Perspective's
comments:analyze: the attribute's summary score read as p(hateful), the key
sent and never written, 429 / 5xx retried as the LLM client retries them,
a 4xx final and one line, answers cached so a re-run asks nothing, real
requests spaced to the rate limit. No traffic leaves 127.0.0.1."""

from __future__ import annotations

import json
from contextlib import contextmanager

import polars as pl
import pytest
from fake_openai import PERSPECTIVE_KEY as KEY, serve_json
from fake_openai import perspective_spec as spec

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.models import classifiers, external
from hatecheck_pipeline.models.classifiers import ClassifierError
from hatecheck_pipeline.models.kinds.http import HttpClassifier
from hatecheck_pipeline.suites.registry import Suite


@contextmanager
def fake_perspective(calls: list, script=()):
    """Perspective-shaped answers: the attribute asked scores 0.9 for a text
    with 'hate', else 0.1; ``calls`` records each request (its query's key too)."""

    def respond(path, query, body):
        attr = next(iter(body["requestedAttributes"]))
        value = 0.9 if "hate" in body["comment"]["text"].lower() else 0.1
        return 200, {}, {"attributeScores": {attr: {"summaryScore": {"value": value, "type": "PROBABILITY"}}}}

    with serve_json(respond, calls, script) as root:
        yield f"{root}/v1alpha1/comments:analyze"


def test_scores_are_read_the_key_sent_and_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    calls: list = []
    with fake_perspective(calls) as url:
        clf = classifiers.load("P", spec(url, tmp_path))
        assert clf.p_hateful(["I hate them", "nice day"]).tolist() == [0.9, 0.1]
        assert [c["query"].get("key") for c in calls] == [KEY, KEY]
        asked = next(c["body"] for c in calls if c["body"]["comment"]["text"] == "I hate them")  # answered concurrently: any order
        assert asked == {"comment": {"text": "I hate them"}, "requestedAttributes": {"IDENTITY_ATTACK": {}}, "doNotStore": True}
        again = classifiers.load("P", spec(url, tmp_path))
        assert again.p_hateful(["nice day", "I hate them"]).tolist() == [0.1, 0.9]
        assert len(calls) == 2 and again.cached == 2  # the re-run asked nothing
    written = [p.read_text() for p in (tmp_path / "cache").rglob("*.json")]
    assert len(written) == 2 and not any(KEY in w for w in written)
    assert KEY not in json.dumps(clf.identity())


def test_429_and_5xx_are_retried_with_retry_after_and_a_4xx_is_final_and_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    calls: list = []
    waits: list = []
    script = [(429, {"Retry-After": "2"}, {"error": {"message": "quota"}}), (503, {}, {"error": {"message": "busy"}})]
    with fake_perspective(calls, script) as url:
        clf = HttpClassifier("P", spec(url, tmp_path), sleep=waits.append)
        assert clf.p_hateful(["hate"]).tolist() == [0.9]
        retry_waits = [w for w in waits if w >= 1]  # the rate limiter's sub-millisecond waits left out
        assert len(calls) == 3 and retry_waits[:2] == [2.0, 2.0]  # Retry-After, then the backoff's second step (1 s doubled)
    calls.clear()
    bad = [(403, {}, {"error": {"message": f"API key {KEY} not valid"}})]
    with fake_perspective(calls, bad) as url:
        clf = HttpClassifier("P", spec(url, tmp_path, cache_dir=str(tmp_path / "c2")), sleep=waits.append)
        with pytest.raises(ClassifierError, match="HTTP 403: the API refuses the key in FAKE_PERSPECTIVE_KEY") as info:
            clf.p_hateful(["x"])
    assert len(calls) == 1 and KEY not in str(info.value) and "***" in str(info.value) and "\n" not in str(info.value)


def test_requests_are_spaced_to_the_rate_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    now = [0.0]
    slept: list = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    with fake_perspective([]) as url:
        clf = HttpClassifier("P", spec(url, tmp_path, rate_per_s=2, concurrency=1), sleep=sleep, clock=lambda: now[0])
        clf.p_hateful(["a", "b", "c"])
    # 0.5 s apart, and any two consecutive starts (rate 2) span one second plus the 50 ms guard
    assert slept == pytest.approx([0.5, 0.55])


def test_a_missing_key_or_an_answer_without_a_score_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("FAKE_PERSPECTIVE_KEY", raising=False)
    with pytest.raises(ClassifierError, match="FAKE_PERSPECTIVE_KEY, which is not set"):
        classifiers.load("P", spec("http://127.0.0.1:9/x", tmp_path))
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    with fake_perspective([], [(200, {}, {"attributeScores": {}})]) as url:
        with pytest.raises(ClassifierError, match="has no number at 'attributeScores.IDENTITY_ATTACK.summaryScore.value'"):
            classifiers.load("P", spec(url, tmp_path)).p_hateful(["x"])


def test_the_predict_stage_asks_each_case_once_and_a_resumed_run_asks_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    table = tmp_path / "t.parquet"
    pl.DataFrame({"case_id": [1, 2, 3], "text": ["hate a", "b", "c"], "label": ["hateful", "non-hateful", "non-hateful"]}).write_parquet(
        table
    )
    calls: list = []
    with fake_perspective(calls) as url:
        s = spec(url, tmp_path)
        card = tmp_path / "card.json"
        external.register("P", s, card, Profile("smoke", {}))
        probes = len(calls)
        out = tmp_path / "p.parquet"
        args = dict(threshold=0.5, threads=1, profile=Profile("smoke", {"max_cases_per_suite": None}), seed=0)
        external.predict("P", s, [Suite("hatecheck", "hatecheck", "case_id")], {"hatecheck": table}, [out], card, **args)
        assert len(calls) - probes == 3
        assert pl.read_parquet(out)["pred"].to_list() == ["hateful", "non-hateful", "non-hateful"]
        external.predict("P", s, [Suite("hatecheck", "hatecheck", "case_id")], {"hatecheck": table}, [out], card, **args)
        assert len(calls) - probes == 3
    assert KEY not in card.read_text()
