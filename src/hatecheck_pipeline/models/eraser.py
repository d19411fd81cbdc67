"""HateXplain's training rationales from its ERASER files: the alignment
check of the training posts and the word masks of attention supervision.

The ERASER files (``data/raw/hatexplain/eraser/``; see
``resources/raw_sources.yaml``) hold, per hateful or offensive post, the
rationale spans ``[start_token, end_token)`` over the post's
bert-base-uncased WordPiece ids (``docs/<post id>``, with ``[CLS]`` at 0 and
``[SEP]`` last). HateXplain's code wrote those ids from each post's tokens
through its own preprocessing (``Preprocess/preProcess.py:
ek_extra_preprocess``: ekphrasis, then ``re.sub(r"[<\\*>]", " ")``, then the
BERT tokenizer; posts cut at 128 ids). :func:`normalise_word` reproduces the
rewrites of that step that touch HateXplain's already-normalised tokens
(``<user>`` -> ``user``, digits -> ``number``, standalone ``s`` and ``'``
dropped, a ``*``-censored word followed by ``censored``), so a post's words,
tokenised with the same vocabulary, give its doc's ids exactly.

Alignment check (training posts get their ids by row position,
``data/annotated.py: hatexplain``): every ERASER training record must name a
training post of the table with the same majority class, and the post's
tokens must give its doc: exactly, or (for the few ekphrasis rewrites not
reproduced: elongations, dates) with a WordPiece similarity of at least
``min_similarity``. Anything else is an error naming the post id: a post
whose text is not its doc's means the row-position ids are wrong.

Masks: a word is in the rationale when any doc token aligned with it lies in
an evidence span; one mask per post. The files carry one combined mask per
post, not the three annotators' masks: the union (HateXplain's
``Explainability_Calculation_NB.ipynb`` writes them with
``method = 'union'``), which :func:`combination_check` confirms on the test
split, where the table has every annotator's mask. :mod:`hatecheck_pipeline.models.attention`
turns it into the ground-truth attention (softmax of temperature x mask;
uniform for posts without a record, i.e. normal posts).
"""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from hatecheck_pipeline.core.errors import PipelineError
from hatecheck_pipeline.core.files import write_json, write_text

DOC_MAX_LENGTH = 128  # HateXplain's max_length: a doc holds at most 126 ids between [CLS] and [SEP]
NUMBER = re.compile(r"^\d+([.,:/]\d+)*$")
DROPPED = {"s", "'"}  # in ek_extra_preprocess's remove_words
MARKS = re.compile(r"[<\*>]")
SPACES = re.compile(r"\s+")


class AlignmentError(PipelineError, ValueError):
    """A training post does not match its ERASER record."""


@lru_cache(maxsize=1 << 18)
def normalise_word(word: str) -> str:
    """One post token as HateXplain's preprocessing rewrote it before the
    BERT tokenizer (empty: dropped).

    >>> [normalise_word(w) for w in ["<user>", "1960", "s", "chr*stian", "Hello"]]
    ['user', 'number', '', 'chr stian censored', 'Hello']
    """
    if word in DROPPED:
        return ""
    if NUMBER.match(word):
        return "number"
    censored = "*" in word and re.search(r"[^\W\d_]", word) is not None and not (word.startswith("<") and word.endswith(">"))
    text = MARKS.sub(" ", word).strip()
    text = SPACES.sub(" ", text)
    return f"{text} censored" if censored else text


def word_pieces(tokenizer, posts: Sequence[Sequence[str]], normalise: bool) -> list[tuple[list[int], list[int]]]:
    """Per post: WordPiece ids of its words (no special tokens) and each
    id's word index; one batched tokenizer call."""
    shown = [[normalise_word(w) if normalise else w for w in words] for words in posts]
    keep = [[i for i, w in enumerate(ws) if w] for ws in shown]
    batch = [[ws[i] for i in k] or [""] for ws, k in zip(shown, keep)]
    enc = tokenizer(batch, is_split_into_words=True, add_special_tokens=False)
    out = []
    for n, k in enumerate(keep):
        ids = list(enc["input_ids"][n]) if k else []
        out.append((ids, [k[w] for w in enc.word_ids(n)] if k else []))
    return out


def read_doc(text: str, name: str, cls_id: int, sep_id: int) -> list[int]:
    """A doc's ids between [CLS] and [SEP]."""
    try:
        ids = [int(x) for x in text.split()]
    except ValueError as exc:
        raise AlignmentError(f"eraser docs/{name}: not a list of token ids ({exc})") from exc
    if len(ids) < 2 or ids[0] != cls_id or ids[-1] != sep_id:
        raise AlignmentError(
            f"eraser docs/{name}: does not start with [CLS] ({cls_id}) and end with [SEP] ({sep_id}): the vocabulary is not bert-base-uncased's"
        )
    return ids[1:-1]


def align(pieces: Sequence[int], piece_words: Sequence[int], doc: Sequence[int], n_words: int) -> tuple[float, list[set[int]]]:
    """WordPiece similarity of a post with its doc, and for each doc token
    the words it is aligned with (equal runs one to one; a replaced run to
    every word of the run).

    >>> align([5, 6, 7], [0, 1, 1], [5, 9, 7], 2)
    (0.6666666666666666, [{0}, {1}, {1}])
    """
    sm = difflib.SequenceMatcher(None, list(pieces), list(doc), autojunk=False)
    owners: list[set[int]] = [set() for _ in doc]
    for op, a, b, c, d in sm.get_opcodes():
        if op == "equal":
            for k in range(b - a):
                owners[c + k].add(piece_words[a + k])
        elif op == "replace":
            run = {piece_words[k] for k in range(a, b)}
            for j in range(c, d):
                owners[j] |= run
    return sm.ratio(), owners


def evidence_tokens(record: dict[str, Any], n_doc: int) -> set[int]:
    """Doc token indices (0 = first token after [CLS]) inside the record's spans."""
    out: set[int] = set()
    for group in record.get("evidences") or []:
        for ev in group:
            start, end = int(ev["start_token"]), int(ev["end_token"])
            if not 1 <= start < end <= n_doc + 1:
                raise AlignmentError(f"eraser record {record['annotation_id']}: span [{start}, {end}) outside its doc of {n_doc} tokens")
            out.update(range(start - 1, end - 1))
    return out


def derive(
    train: pl.DataFrame, records: Sequence[dict[str, Any]], docs: dict[str, str], tokenizer, min_similarity: float, progress: bool = True
) -> tuple[dict[str, list[list[int]]], dict[str, Any]]:
    """Word masks ``{post id: [mask]}`` of the training posts with an ERASER
    record, and the alignment report. ``train``: the training rows (``id``,
    ``text``, ``label3``) of the table the model trains on."""
    from tqdm.auto import tqdm

    posts = {r["id"]: r for r in train.select("id", "text", "label3").iter_rows(named=True)}
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    masks: dict[str, list[list[int]]] = {}
    counts = {"records": len(records), "not_in_table": 0, "exact_plain": 0, "exact_normalised": 0, "near": 0, "truncated_docs": 0}
    near: list[dict[str, Any]] = []
    lowest = 1.0
    known = [rec for rec in records if str(rec["annotation_id"]) in posts]
    counts["not_in_table"] = len(records) - len(known)  # train posts quarantined by prepare (e.g. copies of test texts)
    texts = [(posts[str(rec["annotation_id"])]["text"] or "").split() for rec in known]
    plains = word_pieces(tokenizer, texts, normalise=False)
    normed = word_pieces(tokenizer, texts, normalise=True)
    for rec, words, (plain, _), (pieces, owner) in tqdm(
        zip(known, texts, plains, normed), total=len(known), desc="eraser alignment", disable=not progress, mininterval=10
    ):
        pid = str(rec["annotation_id"])
        post = posts[pid]
        if rec.get("classification") != post["label3"]:
            raise AlignmentError(
                f"training post {pid}: the ERASER record says {rec.get('classification')!r}, the table's majority label is {post['label3']!r}"
            )
        if pid not in docs:
            raise AlignmentError(f"training post {pid}: no eraser docs/{pid} in the docs bundle")
        doc = read_doc(docs[pid], pid, cls_id, sep_id)
        truncated = len(doc) == DOC_MAX_LENGTH - 2
        counts["truncated_docs"] += truncated
        if truncated:
            plain, pieces, owner = plain[: len(doc)], pieces[: len(doc)], owner[: len(doc)]
        counts["exact_plain"] += plain == doc
        if pieces == doc:
            counts["exact_normalised"] += 1
            owners = [{w} for w in owner]
        else:
            ratio, owners = align(pieces, owner, doc, len(words))
            if ratio < min_similarity:
                ours = tokenizer.convert_ids_to_tokens(pieces[:12])
                theirs = tokenizer.convert_ids_to_tokens(doc[:12])
                raise AlignmentError(
                    f"training post {pid}: its text is not its ERASER doc (WordPiece similarity {ratio:.3f} < {min_similarity}): "
                    f"table {' '.join(ours)} ... vs doc {' '.join(theirs)} ...; the training ids (row position in "
                    f"hatexplain_train_labels.csv) do not match the posts"
                )
            counts["near"] += 1
            lowest = min(lowest, ratio)
            if len(near) < 50:
                near.append({"id": pid, "similarity": round(ratio, 4)})
        evidence = evidence_tokens(rec, len(doc))
        mask = [0] * len(words)
        for j in evidence:
            for w in owners[j]:
                mask[w] = 1
        masks[pid] = [mask]
    checked = counts["records"] - counts["not_in_table"]
    labelled = train.filter(pl.col("label3").is_in(["hatespeech", "offensive"]))
    report = {
        **counts,
        "checked": checked,
        "min_similarity": min_similarity,
        "lowest_near_similarity": round(lowest, 4) if counts["near"] else None,
        "near_examples": near,
        "train_posts": train.height,
        "train_hateful_or_offensive": labelled.height,
        "hateful_or_offensive_without_record": int((~labelled["id"].is_in(list(masks))).sum()),
        "posts_with_rationale_words": sum(any(m[0]) for m in masks.values()),
        "rationale_word_share": round(sum(sum(m[0]) for m in masks.values()) / max(1, sum(len(m[0]) for m in masks.values())), 4),
        "masks": "one mask per post (the ERASER files' evidences: the union of the annotators' rationales), over the post's words (text.split())",
    }
    return masks, report


def combination_check(test: pl.DataFrame, records: Sequence[dict[str, Any]], docs: dict[str, str], tokenizer) -> dict[str, Any]:
    """How the files' spans combine the annotators' masks: on the test
    posts (``rationales``: each annotator's mask over the words), the share
    whose ERASER mask equals the union and the majority of their masks."""
    import numpy as np

    masks, _ = derive(test.with_columns(split=pl.lit("train")), records, docs, tokenizer, 0.0, progress=False)
    given = dict(zip(test["id"].to_list(), test["rationales"].to_list()))
    pairs = [(np.asarray(given[pid]), m[0]) for pid, m in masks.items() if given.get(pid)]
    union = sum(r.max(axis=0).astype(int).tolist() == m for r, m in pairs)
    majority = sum((r.mean(axis=0) >= 0.5).astype(int).tolist() == m for r, m in pairs)
    return {"test_posts_compared": len(pairs), "equal_to_union": int(union), "equal_to_majority": int(majority)}


def read_records(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            rec["annotation_id"]
        except (ValueError, KeyError) as exc:
            raise AlignmentError(f"{path}: line {n} is not an ERASER record ({exc})") from exc
        out.append(rec)
    return out


def hatexplain_rationales(
    table: Path, eraser_train: Path, eraser_test: Path, docs: Path, rationales: Path, alignment: Path, tokenizer: str, min_similarity: float
) -> str:
    """Stage ``hatexplain_rationales``: check that the training posts are
    their ERASER docs and write their word-level rationale masks
    (``{post id: [mask]}``, read by ``train_<supervised model>``) and the
    alignment report."""
    from hatecheck_pipeline.data.sources import read_bundle
    from hatecheck_pipeline.models.base import load_tokenizer, resolve

    tok = load_tokenizer(resolve(tokenizer))
    data = pl.read_parquet(table)
    bundle = read_bundle(docs)
    masks, report = derive(data.filter(pl.col("split") == "train"), read_records(eraser_train), bundle, tok, min_similarity)
    report["tokenizer"] = tokenizer
    report["combination"] = combination_check(data.filter(pl.col("split") == "test"), read_records(eraser_test), bundle, tok)
    write_text(json.dumps(masks, sort_keys=True, separators=(",", ":")) + "\n", rationales)
    write_json(report, alignment)
    return (
        f"hatexplain rationales: {report['checked']} training posts checked against their ERASER docs: {report['exact_normalised']} exact "
        f"({report['exact_plain']} without HateXplain's preprocessing), {report['near']} near; {len(masks)} masks -> {rationales}; "
        f"test spans = union of the annotators' masks on {report['combination']['equal_to_union']} of {report['combination']['test_posts_compared']}"
    )
