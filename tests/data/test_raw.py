import hashlib

import pytest

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.data import sources as raw


def ingest(source, mirror, monkeypatch):
    """Run the ingest stage function of one source against a mirror folder."""
    monkeypatch.delenv(raw.MIRROR_ENV, raising=False)
    registry = raw.load_registry()
    files = raw.outputs(source, registry)
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


def nested_sums(mirror):
    """path -> sha256 from the deeper lists (hatexplain/eraser/SHA256SUMS,
    paths relative to their own folder)."""
    sums: dict[str, str] = {}
    for listing in sorted(mirror.glob("*/*/SHA256SUMS")):
        folder = listing.parent.relative_to(mirror).as_posix()
        for line in listing.read_text().splitlines():
            digest, path = line.split(None, 1)
            sums[f"{folder}/{path.strip()}"] = digest
    return sums


# Mirror folders the pipeline reads no file of yet, each with the reason: the
# registry lists what the stages read, and nothing may be read unpinned.
NOT_READ: dict[str, str] = {}


def test_registry_lists_every_mirror_file_with_pinned_urls(mirror):
    registry = raw.load_registry()
    listed = {f"{s}/{name}": meta["sha256"] for s, d in registry.items() for name, meta in d["files"].items()}
    sums = mirror_sums(mirror)
    unread = {k for k in sums if k.split("/", 1)[0] in NOT_READ}
    assert bool(unread) == bool(NOT_READ) and not any(
        k.split("/", 1)[0] in NOT_READ for k in listed
    )  # an entry here is stale once its folder is read
    sums = {k: v for k, v in sums.items() if k not in unread}
    # file sets: every file of the deeper lists is a registered file or in a set whose manifest they hash to
    nested = nested_sums(mirror)
    assert nested and set(nested) - set(listed) and all(listed[k] == v for k, v in nested.items() if k in listed)
    in_sets = {k: v for k, v in nested.items() if k not in listed}
    covered = 0
    for source in registry:
        for item in raw.raw_sets(source, registry):
            prefix = f"{source}/{item.mirror_dir}/"
            members = {k[len(prefix) :]: v for k, v in in_sets.items() if k.startswith(prefix)}
            assert len(members) == item.count and raw.manifest_digest(members) == item.manifest_sha256
            assert item.url.startswith("https://raw.githubusercontent.com/") and item.url.endswith("{name}")
            assert set(item.names_from) <= set(registry[source]["files"])
            covered += len(members)
    assert covered == len(in_sets) == 11415
    listed = {k: v for k, v in listed.items() if k not in nested}
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


def test_file_set_from_the_mirror_is_one_verified_bundle(mirror, workdir, monkeypatch):
    files = ingest("hatexplain", mirror, monkeypatch)
    bundle = raw.read_bundle(workdir / paths.raw("hatexplain", "eraser/docs.jsonl"))
    assert len(bundle) == 11415 and files[-1].name == "docs.jsonl"
    some = sorted(bundle)[0]
    assert bundle[some] == (mirror / "hatexplain" / "eraser" / "docs" / some).read_text("utf-8")


def tiny_set(tmp_path, names, contents, url):
    """A registry entry of one set of files named by a jsonl file."""
    (tmp_path / "src").mkdir(exist_ok=True)
    for n, c in zip(names, contents):
        (tmp_path / "src" / n).write_text(c)
    digests = {n: hashlib.sha256(c.encode()).hexdigest() for n, c in zip(names, contents)}
    root = tmp_path / "data" / "raw" / "toy"
    root.mkdir(parents=True)
    (root / "ids.jsonl").write_text("".join(f'{{"annotation_id": "{n}"}}\n' for n in names))
    return raw.FileSet("toy", "docs.jsonl", url, "docs", ("ids.jsonl",), len(names), raw.manifest_digest(digests)), root


def test_file_set_download_path_fetches_each_url_and_checks_the_manifest(tmp_path, monkeypatch):
    names, contents = ["a_gab", "b_twitter"], ["101 7 102", "101 8 9 102"]
    item, root = tiny_set(tmp_path, names, contents, (tmp_path / "src").as_uri() + "/{name}")
    monkeypatch.chdir(tmp_path)
    raw.fetch_set(item, root, None, workers=2)
    assert raw.read_bundle(root / "docs.jsonl") == dict(zip(names, contents))
    (tmp_path / "src" / "b_twitter").write_text("tampered")
    with pytest.raises(raw.HashMismatchError, match=r"toy/docs.jsonl: manifest sha256 mismatch over 2 files: expected "):
        raw.fetch_set(item, root, None, workers=2)


def test_file_set_mismatch_in_a_mirror_names_the_file(tmp_path, monkeypatch):
    names, contents = ["a_gab", "b_twitter"], ["101 7 102", "101 8 9 102"]
    item, root = tiny_set(tmp_path, names, contents, "https://example.invalid/{name}")
    mirror = tmp_path / "mirror"
    (mirror / "toy" / "docs").mkdir(parents=True)
    listing = "".join(f"{hashlib.sha256(c.encode()).hexdigest()}  docs/{n}\n" for n, c in zip(names, contents))
    (mirror / "toy" / "SHA256SUMS").write_text(listing)
    (mirror / "toy" / "docs" / "a_gab").write_text(contents[0])
    (mirror / "toy" / "docs" / "b_twitter").write_text("tampered")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(raw.HashMismatchError, match=r"differing from the mirror's SHA256SUMS: b_twitter"):
        raw.fetch_set(item, root, mirror)
    (mirror / "toy" / "docs" / "b_twitter").unlink()
    with pytest.raises(raw.MissingRawFile, match="b_twitter not found in mirror"):
        raw.fetch_set(item, root, mirror)
