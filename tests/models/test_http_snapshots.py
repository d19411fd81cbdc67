"""Dated audits of a scoring API, against the loopback fake of Perspective's
comments:analyze the http tests use: the snapshot keys the answer cache (a
new snapshot asks every text again, the same snapshot asks nothing), the
card and each predictions file record the snapshot and the first and last
request (UTC), a run resumed in a later month reads the card's snapshot,
and ``diff`` compares two snapshots per functional test. No traffic leaves
127.0.0.1."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import polars as pl
import pytest
from fake_openai import PERSPECTIVE_KEY as KEY, serve_json
from fake_openai import perspective_spec as spec

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.evaluation import diff as D
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.models import classifiers, external
from hatecheck_pipeline.models.classifiers import ClassifierError
from hatecheck_pipeline.models.kinds import http as http_kind
from hatecheck_pipeline.models.kinds.http import HttpClassifier
from hatecheck_pipeline.report import model_page
from hatecheck_pipeline.suites.registry import hatecheck


def fake_api(calls: list, era: list):
    """Perspective-shaped answers: 0.9 for a text with 'hate', else 0.1;
    from era "2026-12" on, the API misses the hateful texts that use a slur
    (a model update between two audits)."""

    def respond(path, query, body):
        text = body["comment"]["text"]
        missed = era[0] >= "2026-12" and "slur" in text
        value = 0.9 if "hate" in text and not missed else 0.1
        return 200, {}, {"attributeScores": {"IDENTITY_ATTACK": {"summaryScore": {"value": value}}}}

    return serve_json(respond, calls)


class Clock:
    """A UTC clock that moves one minute per reading."""

    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def test_the_snapshot_keys_the_cache_a_new_one_asks_again_the_same_one_asks_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    calls: list = []
    texts = ["I hate them", "nice day", "more hate"]
    with fake_api(calls, ["2026-11"]) as root:
        url = f"{root}/v1alpha1/comments:analyze"
        nov = classifiers.load("P", spec(url, tmp_path, snapshot="2026-11"))
        assert nov.p_hateful(texts).tolist() == [0.9, 0.1, 0.9] and len(calls) == 3
        again = classifiers.load("P", spec(url, tmp_path, snapshot="2026-11"))
        again.p_hateful(texts)
        assert len(calls) == 3 and again.cached == 3 and again.asked == 0  # the same snapshot asks nothing
        dec = classifiers.load("P", spec(url, tmp_path, snapshot="2026-12"))
        dec.p_hateful(texts)
        assert len(calls) == 6 and dec.asked == 3 and dec.cached == 0  # a new snapshot is a new set of answers
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["2026-11", "2026-12"]
    assert len(list((tmp_path / "cache/2026-11").rglob("*.json"))) == 3


def test_the_default_snapshot_is_the_month_of_the_first_request_and_a_bad_name_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    clock = Clock(datetime(2026, 12, 31, 23, 58, tzinfo=timezone.utc))
    clf = HttpClassifier("P", spec("http://127.0.0.1:9/x", tmp_path), utc=clock)
    assert clf.snapshot == "2026-12" and not clf.snapshot_given and clf.answers_dir == tmp_path / "cache/2026-12"
    for bad in ("../up", "", "2026/12", "a" * 65):
        with pytest.raises(ClassifierError, match="a snapshot is a name of letters, digits") as info:
            classifiers.load("P", spec("http://127.0.0.1:9/x", tmp_path, snapshot=bad))
        assert "\n" not in str(info.value) and "model P" in str(info.value)


def test_the_card_and_predictions_record_when_the_answers_were_obtained(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    clock = Clock(datetime(2026, 11, 30, 23, 50, tzinfo=timezone.utc))
    monkeypatch.setattr(http_kind, "utc_now", clock)
    table = tmp_path / "t.parquet"
    pl.DataFrame({"case_id": [1, 2, 3], "text": ["hate a", "b", "c"], "label": ["hateful", "non-hateful", "non-hateful"]}).write_parquet(
        table
    )
    calls: list = []
    card = tmp_path / "card.json"
    out = tmp_path / "p.parquet"
    args = dict(threshold=0.5, threads=1, profile=Profile("smoke", {"max_cases_per_suite": None}), seed=0)
    with fake_api(calls, ["2026-11"]) as root:
        s = spec(f"{root}/v1alpha1/comments:analyze", tmp_path)  # no snapshot: the month of the first request
        external.register("P", s, card, Profile("smoke", {}))
        doc = json.loads(card.read_text())
        # the clock was read once for the default snapshot, then once per probe text
        assert doc["identity"]["snapshot"] == "2026-11" and doc["answers"]["snapshot"] == "2026-11"
        assert doc["answers"]["snapshot_from"].startswith("default")
        assert doc["answers"]["first_request_utc"] == "2026-11-30T23:52:00Z"
        assert doc["answers"]["last_request_utc"] == "2026-11-30T23:53:00Z" and doc["answers"]["answers"] == 2
        external.predict("P", s, [hatecheck()], {"hatecheck": table}, [out], card, **args)
        assert len(calls) == 5
        span = model_page.answers_span(out)
        assert span == {"snapshot": "2026-11", "first_request_utc": "2026-11-30T23:54:00Z", "last_request_utc": "2026-11-30T23:56:00Z"}
        # resumed in December: the card's snapshot, so nothing is asked again
        clock.now = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)
        external.predict("P", s, [hatecheck()], {"hatecheck": table}, [out], card, **args)
        assert len(calls) == 5 and model_page.answers_span(out) == span
    rows = model_page.identity_rows(doc, {"hatecheck": span})
    assert "answers obtained (UTC)" in rows and f"{span['first_request_utc']} to {span['last_request_utc']} (snapshot 2026-11)" in rows
    assert "default: the month (UTC) of the first request" in rows
    assert KEY not in card.read_text()


def test_diff_compares_two_snapshots_per_functional_test(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PERSPECTIVE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    funcs = {"derog_neg_emote_h": "hate", "slur_h": "hate slur", "ident_neutral_nh": "fine"}
    rows = []
    for fi, (f, word) in enumerate(funcs.items()):  # 12 templates of 2 cases per functional test
        for t in range(12):
            for c in range(2):
                rows.append(
                    {
                        "case_id": len(rows) + 1,
                        "text": f"{word} {f} {t} {c}",
                        "functionality": f,
                        "templ_id": fi * 100 + t,
                        "label": "hateful" if f.endswith("_h") else "non-hateful",
                    }
                )
    table = tmp_path / "hatecheck.parquet"
    pl.DataFrame(rows).write_parquet(table)
    calls: list = []
    era = ["2026-11"]
    args = dict(threshold=0.5, threads=1, profile=Profile("smoke", {"max_cases_per_suite": None}), seed=0)
    files = {}
    with fake_api(calls, era) as root:
        for snapshot in ("2026-11", "2026-12"):
            era[0] = snapshot
            name = f"P-{snapshot}"
            s = spec(f"{root}/v1alpha1/comments:analyze", tmp_path, snapshot=snapshot)  # one API, one cache folder per snapshot
            card = tmp_path / f"{name}.json"
            external.register(name, s, card, Profile("smoke", {}))
            files[snapshot] = tmp_path / f"{name}.parquet"
            external.predict(name, s, [hatecheck()], {"hatecheck": table}, [files[snapshot]], card, **args)
    assert len(calls) == 2 * (len(rows) + 2)  # the second snapshot asked every text again
    doc = D.run(
        hatecheck(),
        files["2026-11"],
        files["2026-12"],
        tmp_path / "d.json",
        ("P-2026-11", "P-2026-12"),
        boot=Bootstrap(2000),
        gold_table=table,
    )
    tests = doc["by_functionality"]
    assert tests["slur_h"]["accuracy_a"] == 100.0 and tests["slur_h"]["accuracy_b"] == 0.0
    assert doc["worse"] == ["slur_h"] and doc["flagged"] == ["slur_h"]
    assert tests["derog_neg_emote_h"]["difference"] == 0 and tests["ident_neutral_nh"]["difference"] == 0
    assert model_page.answers_span(files["2026-12"])["snapshot"] == "2026-12"
