import hashlib

import pytest

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.data import sources as raw


def ingest(source, mirror, monkeypatch):
    """Run the ingest stage function of one source against a mirror folder."""
    monkeypatch.delenv(raw.MIRROR_ENV, raising=False)
    registry = raw.load_registry()
    files = [f.path for f in raw.raw_files(source, registry)]
    raw.ingest(source, registry[source], str(mirror), files)
    return files


def mirror_sums(mirror):
    """path -> sha256 from the root SHA256SUMS and every <source>/SHA256SUMS
    of the mirror (lines ``<digest>  ./<source>/<file>``); the lists
    themselves are not raw files. A file listed twice must agree."""
    sums: dict[str, str] = {}
    for listing in [mirror / "SHA256SUMS", *sorted(mirror.glob("*/SHA256SUMS"))]:
        for line in listing.read_text().splitlines():
            digest, path = line.split(None, 1)
            path = path.strip()
            if path.endswith("/SHA256SUMS") or path == "./SHA256SUMS":
                continue
            key = path[2:] if path.startswith("./") else path
            assert sums.setdefault(key, digest) == digest, f"{listing}: {key} listed with two digests"
    return sums


def test_registry_lists_every_mirror_file_with_pinned_urls(mirror):
    registry = raw.load_registry()
    listed = {f"{s}/{name}": meta["sha256"] for s, d in registry.items() for name, meta in d["files"].items()}
    sums = mirror_sums(mirror)
    # The root list and every per-source list (e.g. ethos/SHA256SUMS, whose
    # paths are relative to the mirror root as well) are all covered.
    assert (mirror / "ethos" / "SHA256SUMS").exists() and "ethos/Ethos_Dataset_Binary.csv" in sums
    assert listed == sums
    for source in registry.values():
        assert source["license"] and source["citation"]
        for meta in source["files"].values():
            assert meta["url"].startswith("https://raw.githubusercontent.com/")
            # pinned to a 40-hex commit
            assert any(len(part) == 40 and all(c in "0123456789abcdef" for c in part) for part in meta["url"].split("/"))


def test_mirror_fetch_verifies_and_copies(mirror, workdir, monkeypatch):
    files = ingest("crows_pairs", mirror, monkeypatch)
    assert files[0].read_bytes() == (mirror / "crows_pairs" / "crows_pairs_anonymized.csv").read_bytes()


def test_hash_mismatch_names_file_expected_and_actual(tmp_path, workdir, monkeypatch):
    fake_mirror = tmp_path / "mirror"
    (fake_mirror / "crows_pairs").mkdir(parents=True)
    bad = fake_mirror / "crows_pairs" / "crows_pairs_anonymized.csv"
    bad.write_text("tampered\n")
    actual = hashlib.sha256(b"tampered\n").hexdigest()
    expected = raw.raw_files("crows_pairs")[0].sha256
    with pytest.raises(raw.HashMismatchError) as err:
        ingest("crows_pairs", fake_mirror, monkeypatch)
    msg = str(err.value)
    assert "crows_pairs_anonymized.csv" in msg and expected in msg and actual in msg
    assert not (workdir / "data" / "raw" / "crows_pairs" / "crows_pairs_anonymized.csv").exists()


def test_missing_mirror_file_is_a_clear_error(tmp_path, workdir, monkeypatch):
    with pytest.raises(FileNotFoundError, match="not found in mirror"):
        ingest("davidson2017", tmp_path, monkeypatch)


def test_mirror_env_takes_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv(raw.MIRROR_ENV, str(tmp_path))
    assert raw.mirror_dir("/elsewhere") == tmp_path.resolve()
    monkeypatch.delenv(raw.MIRROR_ENV)
    assert raw.mirror_dir(None) is None


def test_download_path_uses_pooch_with_the_registered_hash(monkeypatch, workdir, tmp_path):
    calls = {}
    payload = tmp_path / "dl.csv"
    payload.write_text("x")

    def fake_retrieve(url, known_hash, progressbar):
        calls["url"], calls["hash"] = url, known_hash
        return str(payload)

    import pooch

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    item = raw.raw_files("davidson2017")[0]
    raw.fetch(item, workdir / paths.raw(item.source, item.name), None)
    assert calls == {"url": item.url, "hash": f"sha256:{item.sha256}"}
