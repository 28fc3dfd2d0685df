"""Whether a SQL text calls a function sqlglot does not know as one of Spark's own.

A build query that calls such a function may call user code (``spark.udf.register``,
``CREATE TEMPORARY FUNCTION``): defined again under the same name, the text stays the same
while its rows change, so the filter cache must not key it by its text.
"""
from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp

__all__ = ["calls_unknown_function"]


@functools.lru_cache(maxsize=512)
def calls_unknown_function(sql: str) -> bool:
    """True when ``sql`` calls a function sqlglot parses as unknown (``exp.Anonymous``), or
    cannot be parsed at all: either may run code its text does not show. A built-in that
    sqlglot does not know is refused too; that only costs the cache a hit."""
    try:
        trees = sqlglot.parse(sql, read="spark")
    except sqlglot.errors.SqlglotError:
        return True
    return any(t is not None and t.find(exp.Anonymous) is not None for t in trees)
