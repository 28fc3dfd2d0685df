"""Hypothesis strategies shared by the domain and codec tests (no tests of its own).

Every type draws from a small universe of values with neighbours close together (0.00, 0.01,
-0.00; adjacent microseconds; prefixes of strings; ±0.0, ±inf and NaN), so sampled probes hit
members, bounds and the gaps between them. Small on purpose: the laws run 1,000 examples each
on a shared two-core machine.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

from hypothesis import strategies as st

from dpp.core.domain import (BIGINT, BOOLEAN, DATE, DOUBLE, INT, STRING, TIMESTAMP, DataType, Domain,
                        Range, TupleDomain, decimal_type)

DEC = decimal_type(5, 2)
D = decimal.Decimal
_T0 = dt.datetime(2000, 1, 1, 23, 59, 59, 999_998)

UNIVERSE: dict[DataType, list[Any]] = {
    INT: [-(2 ** 31), -2, -1, 0, 1, 2, 3, 2 ** 31 - 1],
    BIGINT: [-(2 ** 63), -1, 0, 1, 2, 2 ** 53 + 1, 2 ** 63 - 1],
    STRING: ["", "a", "aa", "ab", "b", "ba", "é", "\x00", "z\u20ac", "\udc80"],
    DATE: [dt.date(1, 1, 1), dt.date(1999, 12, 31), dt.date(2000, 1, 1), dt.date(2000, 1, 2),
           dt.date(2000, 2, 29), dt.date(9999, 12, 31)],
    DEC: [D("-999.99"), D("-1.00"), D("-0.01"), D("-0.00"), D("0"), D("0.01"), D("0.02"),
          D("1.5"), D("1.50"), D("999.99")],
    TIMESTAMP: [_T0 + dt.timedelta(microseconds=i) for i in range(4)] +
               [dt.datetime(1970, 1, 1), dt.datetime(2038, 1, 19, 3, 14, 8)],
    BOOLEAN: [False, True],
    DOUBLE: [-math.inf, -1.5, -5e-324, -0.0, 0.0, 5e-324, 1.0, 2.5, math.inf, math.nan],
}
TYPES = list(UNIVERSE)
FPPS = [0.01, 0.2]


def key_of(t: DataType, v: Any) -> Any:
    return t.key(t.coerce(v))


def values(t: DataType) -> st.SearchStrategy[Any]:
    return st.sampled_from(UNIVERSE[t])


def probes(t: DataType) -> st.SearchStrategy[Any]:
    """Values to ask ``contains`` about: the universe, plus NULL."""
    return st.none() | values(t)


@st.composite
def ranges(draw: st.DrawFn, t: DataType) -> Domain:
    """One or more ranges with open, closed and unbounded sides."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        lo = draw(st.none() | values(t))
        hi = draw(st.none() | values(t))
        out.append(Range(None if lo is None else key_of(t, lo), draw(st.booleans()),
                         None if hi is None else key_of(t, hi), draw(st.booleans())))
    return Domain.ranges(t, out, null_allowed=draw(st.booleans()))


@st.composite
def exact_domains(draw: st.DrawFn, t: DataType, depth: int = 1) -> Domain:
    null = draw(st.booleans())
    kind = draw(st.sampled_from(["all", "none", "values", "range", "ranges", "range_api"] +
                                (["combo"] if depth else [])))
    if kind == "all":
        return Domain.all(t) if null else Domain.not_null(t)
    if kind == "none":
        return Domain.only_null(t) if null else Domain.none(t)
    if kind == "values":
        return Domain.values(t, draw(st.lists(values(t), max_size=5)), null_allowed=null)
    if kind == "range_api":
        return Domain.range(t, draw(st.none() | values(t)), draw(st.none() | values(t)),
                            draw(st.booleans()), draw(st.booleans()), null_allowed=null)
    if kind == "combo":  # results of the algebra are inputs too
        a = draw(exact_domains(t, 0))
        b = draw(exact_domains(t, 0))
        op = draw(st.sampled_from(["union", "intersect", "complement"]))
        return a.complement() if op == "complement" else getattr(a, op)(b)
    return draw(ranges(t))


@st.composite
def bloom_domains(draw: st.DrawFn, t: DataType) -> Domain:
    vals = draw(st.lists(values(t), min_size=1, max_size=5))
    null = draw(st.booleans())
    fpp = draw(st.sampled_from(FPPS))
    if draw(st.booleans()):
        return Domain.bloom(t, vals, fpp, capacity=draw(st.sampled_from([None, 8])),
                            null_allowed=null)
    return Domain.values(t, vals, null_allowed=null).simplify(0, bloom_fpp=fpp)


def any_domains(t: DataType) -> st.SearchStrategy[Domain]:
    return exact_domains(t) | bloom_domains(t)


def typed(inner: Any, *more: Any) -> st.SearchStrategy[tuple]:
    """(type, inner(type), more[0](type), ...) for a type drawn from all supported types."""
    return st.sampled_from(TYPES).flatmap(
        lambda t: st.tuples(st.just(t), inner(t), *(m(t) for m in more)))


@st.composite
def tuple_domains(draw: st.DrawFn) -> TupleDomain:
    if draw(st.integers(0, 9)) == 0:
        return TupleDomain.none()
    cols = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=3))
    return TupleDomain.of({c: draw(any_domains(draw(st.sampled_from(TYPES)))) for c in cols})
