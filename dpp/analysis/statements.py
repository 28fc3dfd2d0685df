"""What kind of statement SQL text is, by its first word: a query pruning may apply to, an
``EXPLAIN``, a setting. Pure text, so the hook's explain and ``enable``'s ``spark.sql`` both
ask it without importing each other."""
from __future__ import annotations

import re

__all__ = ["is_query", "is_explain", "first_word", "CONF_WORDS"]

# leading blanks, comments and parentheses, then the statement's first word
_LEAD = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.S)
_QUERY_WORDS = ("select", "with", "from")
CONF_WORDS = ("set", "reset")


def is_query(text: object) -> bool:
    """Whether a statement is a query pruning may apply to (SELECT / WITH / FROM / '(')."""
    if not isinstance(text, str):
        return False
    rest = text[_LEAD.match(text).end():]  # type: ignore[union-attr]  (always matches)
    word = re.match(r"[A-Za-z]+", rest)
    return bool(word) and word.group(0).lower() in _QUERY_WORDS


def first_word(text: object) -> str:
    """A statement's first word, lower-cased (past blanks, comments and parentheses)."""
    if not isinstance(text, str):
        return ""
    rest = text[_LEAD.match(text).end():]  # type: ignore[union-attr]  (always matches)
    word = re.match(r"[A-Za-z]+", rest)
    return word.group(0).lower() if word else ""


def is_explain(text: object) -> bool:
    """Whether a statement is an ``EXPLAIN``: Spark optimizes the query it names (so the
    optimizer hook fires) but runs none of it."""
    if not isinstance(text, str):
        return False
    rest = text[_LEAD.match(text).end():]  # type: ignore[union-attr]  (always matches)
    word = re.match(r"[A-Za-z]+", rest)
    return bool(word) and word.group(0).lower() == "explain"
