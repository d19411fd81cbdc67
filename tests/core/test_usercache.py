"""The per-user cache files: where they live, written whole, none where they cannot be written."""

from __future__ import annotations

from hatecheck_pipeline.core import usercache


def test_cache_file_follows_env_then_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("SOME_CACHE_ENV", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert usercache.cache_file("x.json", "SOME_CACHE_ENV") == tmp_path / "xdg" / "hatecheck_pipeline" / "x.json"
    monkeypatch.setenv("SOME_CACHE_ENV", str(tmp_path / "mine.json"))
    assert usercache.cache_file("x.json", "SOME_CACHE_ENV") == tmp_path / "mine.json"


def test_keep_replaces_whole_and_leaves_no_temp(tmp_path):
    target = tmp_path / "deep" / "c.json"
    assert usercache.keep("one", target) and target.read_text() == "one"
    assert usercache.keep("two", target) and target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.json"]


def test_keep_where_a_file_blocks_the_folder_is_false(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    assert usercache.keep("x", blocker / "c.json") is False
