"""The http classifier kind under load, against loopback fakes that count
what they see: requests in flight at most ``concurrency`` and per second at
most ``rate_per_s``, answers identical to one-at-a-time and in the input
order, a Retry-After delaying only its own request, each suite's language
sent (and suites outside ``languages`` not run), a text the API refuses
recorded unanswered (cached, counted in the metrics) until the share
limit stops the stage in one line, and each bad input one line naming the
model and the URL, never the key. No traffic leaves 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
from fake_openai import PERSPECTIVE_KEY as KEY, serve_json
from fake_openai import perspective_spec as spec

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation import scoring
from hatecheck_pipeline.models import classifiers, external
from hatecheck_pipeline.models.classifiers import ClassifierError
from hatecheck_pipeline.models.kinds.http import HttpClassifier
from hatecheck_pipeline.suites import languages
from hatecheck_pipeline.suites.registry import Suite


class Counter:
    """What the fake server saw: arrival times, the most requests in flight."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.arrivals: list[float] = []

    def enter(self):
        with self.lock:
            self.arrivals.append(time.monotonic())
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self):
        with self.lock:
            self.in_flight -= 1

    def max_per_second(self) -> int:
        """The most arrivals in any one-second window starting at an arrival."""
        t = sorted(self.arrivals)
        return max((sum(1 for u in t[i:] if u - s < 1.0) for i, s in enumerate(t)), default=0)


def score_of(text: str) -> float:
    return round((sum(map(ord, text)) % 97) / 96, 6)  # a different answer per text, so the order shows


@contextmanager
def slow_perspective(calls: list, counter: Counter, delay_s: float, refuse=lambda text: None, script=()):
    def respond(path, query, body):
        counter.enter()
        try:
            time.sleep(delay_s)
            text = body["comment"]["text"]
            refused = refuse(text)
            if refused is not None:
                return refused
            return 200, {}, {"attributeScores": {"IDENTITY_ATTACK": {"summaryScore": {"value": score_of(text)}}}}
        finally:
            counter.leave()

    with serve_json(respond, calls, script) as root:
        yield f"{root}/v1alpha1/comments:analyze"


def test_requests_overlap_up_to_concurrency_within_the_rate_and_answers_keep_the_input_order(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    texts = [f"text number {i}" for i in range(30)]
    counter = Counter()
    with slow_perspective([], counter, delay_s=0.2) as url:
        clf = classifiers.load("P", spec(url, tmp_path, concurrency=4, rate_per_s=15))
        started = time.monotonic()
        p = clf.p_hateful(texts)
        took = time.monotonic() - started
    assert p.tolist() == [score_of(t) for t in texts]  # in the input order
    assert 2 <= counter.max_in_flight <= 4  # overlapping, never more than concurrency
    assert counter.max_per_second() <= 15  # the rate shared by the workers
    assert took < 30 * 0.2 * 0.75  # faster than one at a time (6 s)
    serial = Counter()
    with slow_perspective([], serial, delay_s=0.01) as url:
        one = classifiers.load("P", spec(url, tmp_path, concurrency=1, cache_dir=str(tmp_path / "c1")))
        assert one.p_hateful(texts).tolist() == p.tolist()  # identical to one at a time
    assert serial.max_in_flight == 1


def test_a_retry_after_delays_only_its_own_request(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    calls: list = []
    told = []

    def refuse(text):
        if text == "slow one" and not told:
            told.append(time.monotonic())
            return 429, {"Retry-After": "1"}, {"error": {"message": "rate limited"}}
        return None

    texts = ["slow one"] + [f"t{i}" for i in range(12)]
    with slow_perspective(calls, Counter(), delay_s=0.02, refuse=refuse) as url:
        clf = classifiers.load("P", spec(url, tmp_path, concurrency=3, rate_per_s=1000))
        started = time.monotonic()
        p = clf.p_hateful(texts)
        took = time.monotonic() - started
    assert p.tolist() == [score_of(t) for t in texts]
    asked = [c["body"]["comment"]["text"] for c in calls]
    assert asked.count("slow one") == 2
    # every other text was asked while the refused one waited its second
    assert asked[-1] == "slow one" and set(asked[:-1]) == set(texts)
    assert 1.0 <= took < 2.5


def test_progress_of_a_long_run_shows_on_stderr(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    with slow_perspective([], Counter(), delay_s=0.05) as url:
        clf = HttpClassifier("P", spec(url, tmp_path, concurrency=2), progress_s=0.1)
        clf.p_hateful([f"t{i}" for i in range(16)])
    err = capfd.readouterr().err
    assert "/16 answered" in err and KEY not in err


def test_each_suite_language_is_sent_and_suites_outside_languages_are_not_run(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    calls: list = []
    with slow_perspective(calls, Counter(), delay_s=0) as url:
        classifiers.load("P", spec(url, tmp_path)).p_hateful(["x"], language="de")
    assert calls[0]["body"]["languages"] == ["de"]
    calls.clear()

    def respond(path, query, body):
        return 200, {}, {"score": 0.3}

    with serve_json(respond, calls) as root:
        json_spec = spec(root, tmp_path, format="json", key_env=None, cache_dir=str(tmp_path / "j"))
        classifiers.load("J", json_spec | {"language_field": "lang"}).p_hateful(["a"], language="zh")
        classifiers.load("J", json_spec).p_hateful(["b"], language="zh")
    assert calls[0]["body"] == {"text": "a", "lang": "zh"} and calls[1]["body"] == {"text": "b"}

    params = {
        "datasets": {"mhc": {"languages": ["german", "hindi", "mandarin"]}},
        "models": {"P": {"kind": "http", "suites": ["hatecheck", "mhc"], "languages": ["en", "de"]}},
    }
    assert [s.name for s in languages.suites_run(params, "P")] == ["hatecheck", "mhc_german"]
    assert [(g, [s.name for s in ss]) for g, ss in languages.groups_run(params, "P")] == [
        ("hatecheck", ["hatecheck"]),
        ("mhc", ["mhc_german"]),
    ]
    assert languages.not_run_suites(params, "P") == {
        "mhc_hindi": "not run: language hi not in the API's languages (en, de)",
        "mhc_mandarin": "not run: language zh not in the API's languages (en, de)",
    }
    assert [languages.language_code(x) for x in ("arabic", "dutch", "french", "italian", "polish", "portuguese", "spanish", "english")] == [
        "ar",
        "nl",
        "fr",
        "it",
        "pl",
        "pt",
        "es",
        "en",
    ]


def refuse_bad(text):
    return (
        (400, {}, {"error": {"message": f"Attribute IDENTITY_ATTACK does not support request language for {text!r}"}})
        if "bad" in text
        else None
    )


def test_a_refused_text_is_unanswered_cached_and_counted_in_the_metrics(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    n = 60
    texts = [f"bad {i}" if i == 7 else f"hate {i}" if i % 2 else f"fine {i}" for i in range(n)]
    table = tmp_path / "t.parquet"
    pl.DataFrame(
        {
            "case_id": list(range(n)),
            "text": texts,
            "label": ["hateful" if i % 2 else "non-hateful" for i in range(n)],
            "functionality": ["f_a" if i < 30 else "f_b" for i in range(n)],
        }
    ).write_parquet(table)
    calls: list = []
    suite = Suite("heldout_x", "x", "case_id", "heldout")
    out = tmp_path / "p.parquet"
    card = tmp_path / "card.json"
    args = dict(threshold=0.5, threads=1, profile=Profile("smoke", {"max_cases_per_suite": None}), seed=0)
    with slow_perspective(calls, Counter(), delay_s=0, refuse=refuse_bad) as url:
        s = spec(url, tmp_path)
        external.register("P", s, card, Profile("smoke", {}))
        probes = len(calls)
        log = external.predict("P", s, [suite], {"heldout_x": table}, [out], card, **args)
        assert len(calls) - probes == n
        assert "1 of 60 texts unanswered" in log and "does not support request language" in log
        external.predict("P", s, [suite], {"heldout_x": table}, [out], card, **args)
        assert len(calls) - probes == n  # the refusal is cached like an answer
    preds = pl.read_parquet(out)
    row = preds.filter(pl.col("id") == "7").row(0, named=True)
    assert row["pred"] is None and row["p_hateful"] is None and "does not support" in row["unanswered"]
    assert preds["unanswered"].null_count() == n - 1
    doc = scoring.run(suite, out, tmp_path / "m.json", gold=scoring.gold_cases(suite, table))
    assert doc["overall"]["n"] == n - 1 and doc["overall"]["n_unanswered"] == 1
    assert doc["by_functionality"]["f_a"]["n_unanswered"] == 1 and doc["by_functionality"]["f_b"]["n_unanswered"] == 0


def test_beyond_the_share_limit_the_stage_fails_in_one_line_naming_the_count(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    texts = ["bad a", "bad b", "good"] + [f"x{i}" for i in range(7)]
    with slow_perspective([], Counter(), delay_s=0, refuse=refuse_bad) as url:
        with pytest.raises(ClassifierError) as info:
            classifiers.load("P", spec(url, tmp_path, max_unanswered_share=0.1)).p_hateful(texts)
        message = str(info.value)
        assert "2 of 10 texts unanswered" in message and "max_unanswered_share 0.1" in message and "HTTP 400" in message
        assert "\n" not in message and url in message and "model P" in message and KEY not in message
        again = classifiers.load("P", spec(url, tmp_path, max_unanswered_share=0.2)).p_hateful(texts)
    assert sum(v != v for v in again.tolist()) == 2  # NaN where unanswered, from the cache


def one_line(info, url, *words):
    message = str(info.value)
    assert "\n" not in message and "model P" in message and url in message and KEY not in message, message
    for word in words:
        assert word in message, message


def test_bad_inputs_are_one_line_naming_model_and_url_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    no_wait = dict(sleep=lambda s: None)
    # a wrong key
    with slow_perspective([], Counter(), 0, script=[(401, {}, {"error": {"message": f"bad key {KEY}"}})]) as url:
        with pytest.raises(ClassifierError) as info:
            HttpClassifier("P", spec(url, tmp_path), **no_wait).p_hateful(["x"])
    one_line(info, url, "HTTP 401", "refuses the key in FAKE_PERSPECTIVE_KEY")
    # a host that cannot be reached (a closed loopback port)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/analyze"
    sock.close()
    with pytest.raises(ClassifierError) as info:
        HttpClassifier("P", spec(url, tmp_path, retries=2), **no_wait).p_hateful(["x"])
    one_line(info, url, "cannot be reached")
    # a server that accepts and never answers
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/analyze"
    try:
        with pytest.raises(ClassifierError) as info:
            HttpClassifier("P", spec(url, tmp_path, retries=1, timeout_s=0.3), **no_wait).p_hateful(["x"])
    finally:
        silent.close()
    one_line(info, url, "no answer within timeout_s 0.3 s")
    # a server that answers HTML
    html = (200, {"Content-Type": "text/html"}, "<html><body>Sign in</body></html>")
    with slow_perspective([], Counter(), 0, script=[html]) as url:
        with pytest.raises(ClassifierError) as info:
            HttpClassifier("P", spec(url, tmp_path), **no_wait).p_hateful(["x"])
    one_line(info, url, "HTML page, not JSON")
    # the key variable not set
    monkeypatch.delenv("FAKE_PERSPECTIVE_KEY")
    with pytest.raises(ClassifierError) as info:
        classifiers.load("P", spec(url, tmp_path))
    one_line(info, url, "FAKE_PERSPECTIVE_KEY, which is not set")


def test_an_interrupted_run_resumes_without_asking_any_answered_text_again(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    texts = [f"t{i}" for i in range(40)]
    calls: list = []
    revoked = [True]

    def stop_at_20(text):
        return (401, {}, {"error": {"message": "key revoked"}}) if text == "t20" and revoked[0] else None

    with slow_perspective(calls, Counter(), delay_s=0.01, refuse=stop_at_20) as url:
        with pytest.raises(ClassifierError, match="HTTP 401"):
            classifiers.load("P", spec(url, tmp_path, concurrency=4)).p_hateful(texts)
        answered = {c["body"]["comment"]["text"] for c in calls} - {"t20"}
        assert 0 < len(answered) < len(texts)  # stopped part-way
        first = len(calls)
        revoked[0] = False
        clf = classifiers.load("P", spec(url, tmp_path, concurrency=4))
        assert clf.p_hateful(texts).tolist() == [score_of(t) for t in texts]
    asked_again = [c["body"]["comment"]["text"] for c in calls[first:]]
    assert not set(asked_again) & answered and len(asked_again) == len(texts) - len(answered)
    assert clf.cached == len(answered)


def test_the_pipeline_declares_no_stage_for_a_suite_outside_the_apis_languages(monkeypatch):
    from hatecheck_pipeline.core import config
    from hatecheck_pipeline.core.stage import signature_mismatch
    from hatecheck_pipeline.pipeline import registry as dag

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    api = {
        "kind": "http",
        "model": "http://127.0.0.1:9/analyze",
        "key_env": "FAKE_PERSPECTIVE_KEY",
        "concurrency": 2,
        "languages": ["en", "de"],
        "suites": ["hatecheck", "mhc"],
        "seed": 0,
    }
    p = config.load_params(overrides={"models.API": api})
    stages = {s.name: s for s in dag.build_stages(p)}
    predict = stages["predict_API_mhc"]
    assert [Path(o.path).parent.name for o in predict.outputs["predictions"]] == ["mhc_german"]
    assert not [n for n in stages if n.startswith("score_API_") and "hindi" in n]
    page = stages["model_page_API"]
    assert page.args["not_run"]["mhc_hindi"] == "not run: language hi not in the API's languages (en, de)"
    assert signature_mismatch(page) is None
