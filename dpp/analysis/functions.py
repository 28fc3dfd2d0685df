"""What SQL text calls: a function sqlglot does not know as one of Spark's own, functions and
clauses drawn per run, and window functions as the determinism rule reads them.

A build query that calls such a function may call user code (``spark.udf.register``,
``CREATE TEMPORARY FUNCTION``): defined again under the same name, the text stays the same
while its rows change, so the filter cache must not key it by its text.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable, Optional

import sqlglot
from sqlglot import exp

from dpp.analysis.rules import NONDETERMINISTIC_FUNCTIONS, WindowCall

__all__ = ["calls_unknown_function", "deterministic", "window_calls"]


def deterministic(node: exp.Expression, names: Optional[frozenset] = None,
                  skip: Optional[Callable[[exp.Expression], bool]] = None) -> bool:
    """No random or per-run function anywhere below ``node`` (Spark evaluates those per row
    and per run: a filter moved past them could change which rows they see, a build side
    run twice could keep other keys). ``names``: the function names that count (a wider set
    where a plan is run again at another instant; :mod:`dpp.analysis.rules` holds both). ``skip``:
    subtrees not looked into."""
    below = list(node.walk(prune=skip)) if skip is not None else list(node.walk())
    if any(isinstance(n, (exp.Rand, exp.Randn, exp.TableSample)) for n in below):
        return False
    for f in (n for n in below if isinstance(n, exp.Func)):
        name = (f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower()
        if name in (names or NONDETERMINISTIC_FUNCTIONS):
            return False
    return True


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
    """The window functions of SQL text as :func:`dpp.analysis.rules.tie_order` takes them."""
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
