"""Shared fixtures of the models tests: a tiny RANDOMLY INITIALISED BERT
(2 layers, hidden 32) with a real WordPiece tokenizer trained here, and a
small synthetic processed table. Numbers from these models are test
values only, never results."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl

HATE = ["hate", "vermin", "disgusting", "scum", "kill", "filth"]
NEUTRAL = ["love", "lunch", "weather", "music", "friends", "garden"]
GROUPS = ["women", "immigrants", "muslims", "gay people", "black people", "trans people"]


def sentences(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(n):
        hateful = i % 3 == 0
        word = rng.choice(HATE if hateful else NEUTRAL)
        group = rng.choice(GROUPS)
        filler = " ".join(rng.choice(NEUTRAL + ["the", "a", "very", "so", "today"]) for _ in range(rng.randint(0, 12)))
        texts.append(f"i {word} {group} {filler}".strip() if hateful else f"{group} {word} {filler}".strip())
        labels.append("hateful" if hateful else "non-hateful")
    return texts, labels


def processed_table(path: Path, dataset: str = "toy", n_train: int = 60, n_dev: int = 21, n_test: int = 21, seed: int = 0) -> Path:
    texts, labels = sentences(n_train + n_dev + n_test, seed)
    splits = ["train"] * n_train + ["dev"] * n_dev + ["test"] * n_test
    frame = pl.DataFrame(
        {
            "id": [f"{dataset}-{i}" for i in range(len(texts))],
            "text": texts,
            "label": labels,
            "split": splits,
            "dataset": [dataset] * len(texts),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return path


def tiny_bert(directory: Path) -> Path:
    """Save a tiny random BertModel + trained WordPiece tokenizer."""
    import torch
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import BertConfig, BertModel, BertTokenizerFast

    texts, _ = sentences(300, 123)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(texts, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    fast = BertTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"
    )
    config = BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


HX_WORDS = {"hatespeech": ["vermin", "filth"], "offensive": ["disgusting", "scum"], "normal": ["lunch", "music"]}


def hatexplain_table(
    path: Path, n_train: int = 60, n_dev: int = 15, n_test: int = 30, seed: int = 0, train_rationales: bool = True
) -> Path:
    """A small synthetic HateXplain-like table (prepared-table columns):
    3 classes decided by one class word, which the annotators' rationales
    mark; targets from the group word. Test values only."""
    rng = random.Random(seed)
    rows = []
    communities = {"women": "Women", "immigrants": "Refugee", "muslims": "Islam"}
    for i in range(n_train + n_dev + n_test):
        split = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
        label3 = ["hatespeech", "offensive", "normal"][i % 3]
        group = rng.choice(list(communities))
        word = rng.choice(HX_WORDS[label3])
        filler = [rng.choice(["weather", "friends", "garden", "the", "a", "very", "so", "today"]) for _ in range(rng.randint(1, 6))]
        tokens = [group, word, *filler] if i % 2 else [*filler, word, group]
        mark = [int(t == word) for t in tokens]
        has_rationale = label3 != "normal" and (split != "train" or train_rationales)
        rows.append(
            {
                "id": f"hx-{i}",
                "text": " ".join(tokens),
                "label": "hateful" if label3 == "hatespeech" else "non-hateful",
                "label3": label3,
                "split": split,
                "dataset": "hatexplain",
                "post_tokens": tokens,
                "rationales": [mark, mark] if has_rationale else [],
                "targets": [communities[group]],
            }
        )
    frame = pl.DataFrame(
        rows,
        schema={
            "id": pl.String,
            "text": pl.String,
            "label": pl.String,
            "label3": pl.String,
            "split": pl.String,
            "dataset": pl.String,
            "post_tokens": pl.List(pl.String),
            "rationales": pl.List(pl.List(pl.Int64)),
            "targets": pl.List(pl.String),
        },
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return path
