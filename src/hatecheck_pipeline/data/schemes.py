"""Named text preprocessing schemes (HateCheck D.3 ``bert``, MHC E.4 ``xlmt``).

A scheme is a mapping of plain values (see ``preprocessing.schemes`` in
params.yaml); :func:`apply_scheme` turns it into one polars expression.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Mapping

import polars as pl

URL_RE = r"(?i)(?:https?://|www\.)\S+|\bhttps?\b(?:\s|$)"
USER_RE = r"(?:^|\B)[@＠]\w+|<user>"
HASHTAG_RE = re.compile(r"#(\w+)")


@lru_cache(maxsize=1)
def emoji_pattern() -> str:
    """One regex alternation of every emoji the ``emoji`` package knows."""
    import emoji

    codes = sorted(emoji.EMOJI_DATA, key=len, reverse=True)
    return "(?:" + "|".join(re.escape(c) for c in codes) + ")+"


@lru_cache(maxsize=1)
def _segmenter():
    import wordsegment

    wordsegment.load()
    return wordsegment


def segment_hashtags(text: str) -> str:
    """Split hashtags into words with ``wordsegment``.

    >>> segment_hashtags("so #BuildTheWall now")
    'so build the wall now'
    """
    return HASHTAG_RE.sub(lambda m: _segment_tag(m.group(1)) or m.group(0), text)


@lru_cache(maxsize=65536)
def _segment_tag(tag: str) -> str:
    """One hashtag's words (memoised: a corpus repeats its hashtags, and
    HTML entities such as ``&#128514;`` match the hashtag pattern too)."""
    return " ".join(_segmenter().segment(tag))


def apply_scheme(text: pl.Expr, scheme: Mapping[str, Any]) -> pl.Expr:
    """The scheme as one expression over a text column.

    Order: newlines/tabs -> URLs -> user mentions -> emojis -> hashtags ->
    lowercase (placeholder tokens keep their case) -> spaces collapsed.
    """
    out = text.str.replace_all(r"[\r\n\t]+", " ")
    if scheme.get("url_token"):
        out = out.str.replace_all(URL_RE, " " + scheme["url_token"] + " ")
    if scheme.get("user_token"):
        out = out.str.replace_all(USER_RE, scheme["user_token"])
    if scheme.get("emoji_token"):
        out = out.str.replace_all(emoji_pattern(), " " + scheme["emoji_token"] + " ")
    if scheme.get("segment_hashtags"):
        out = out.map_elements(segment_hashtags, return_dtype=pl.String)
    if scheme.get("lowercase"):
        tokens = [t for t in (scheme.get("url_token"), scheme.get("user_token"), scheme.get("emoji_token")) if t]
        out = out.str.to_lowercase()
        for token in tokens:
            out = out.str.replace_all(re.escape(token.lower()), token, literal=False)
    return out.str.replace_all(r" {2,}", " ").str.strip_chars()


def preprocess_table(frame: pl.LazyFrame, scheme: Mapping[str, Any], name: str) -> pl.LazyFrame:
    """Keep the raw text as ``text_raw``; ``text`` becomes the scheme's output."""
    return frame.with_columns(
        pl.col("text").alias("text_raw"),
        apply_scheme(pl.col("text"), scheme).alias("text"),
        pl.lit(name).alias("scheme"),
    )
