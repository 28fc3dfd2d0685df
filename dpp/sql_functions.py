"""What SQL text calls: a function sqlglot does not know as one of Spark's own, and window
functions as the determinism rule reads them.

A build query that calls such a function may call user code (``spark.udf.register``,
``CREATE TEMPORARY FUNCTION``): defined again under the same name, the text stays the same
while its rows change, so the filter cache must not key it by its text.
"""
from __future__ import annotations

import functools
from typing import Iterable

import sqlglot
from sqlglot import exp

from dpp.rules import WindowCall

__all__ = ["calls_unknown_function", "window_calls"]


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


def window_calls(windows: Iterable[exp.Window]) -> list[WindowCall]:
    """The window functions of SQL text as :func:`dpp.rules.tie_order` takes them."""
    out = []
    for w in windows:
        fn = w.this
        while isinstance(fn, (exp.IgnoreNulls, exp.RespectNulls)):
            fn = fn.this
        name = fn.name if isinstance(fn, exp.Anonymous) else fn.sql_name()
        spec = w.args.get("spec")
        kind = str(spec.args.get("kind") or "").upper() if spec is not None else ""
        start = str(spec.args.get("start") or "").upper() if spec is not None else ""
        end = str(spec.args.get("end") or "").upper() if spec is not None else ""
        out.append(WindowCall(function=name, aggregate=isinstance(fn, exp.AggFunc),
                              rows_frame=kind == "ROWS",
                              whole_frame=start == "UNBOUNDED" and end == "UNBOUNDED",
                              ordered=bool(w.args.get("order"))))
    return out
