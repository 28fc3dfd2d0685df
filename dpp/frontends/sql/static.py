"""Static domains: what a conjunct of literals says about one column's values, read the way
Spark compares them (so that a partition is skipped only when Spark's own filter would
reject every row of it), and which key types a dynamic filter may compare.

Only ``col op literal``, ``IN (literals)``, ``BETWEEN``, ``IS [NOT] NULL`` and ORs of these on
one column give a domain; anything else gives none and stays for Spark alone.
"""
from __future__ import annotations

import decimal
from typing import Any, Callable, Optional

from sqlglot import exp

from dpp.core.domain import DataType, Domain
from dpp.core.errors import DomainError
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules

__all__ = ["static_domain", "compatible"]


_CMP = {exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}


def static_domain(c: exp.Expression, is_probe_col: Callable[[exp.Column], bool],
                   cols: dict[str, Optional[DataType]],
                   rules: SparkRules = DEFAULT_RULES) -> Optional[tuple[str, Domain]]:
    """(column, domain) for a conjunct on one probe column against literals, else None."""
    c = c.unnest() if isinstance(c, exp.Paren) else c
    if isinstance(c, exp.Or):
        parts = [static_domain(x, is_probe_col, cols, rules) for x in c.flatten()]
        if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:  # type: ignore[index]
            return None
        col = parts[0][0]  # type: ignore[index]
        dom = parts[0][1]  # type: ignore[index]
        for p in parts[1:]:
            dom = dom.union(p[1])  # type: ignore[index]
        return col, dom
    if isinstance(c, exp.Not) and isinstance(c.this, exp.Is) and \
            isinstance(c.this.expression, exp.Null):
        t = _probe_type(c.this.this, is_probe_col, cols)
        return None if t is None else (c.this.this.name.lower(), Domain.not_null(t))
    if isinstance(c, exp.Is) and isinstance(c.expression, exp.Null):
        t = _probe_type(c.this, is_probe_col, cols)
        return None if t is None else (c.this.name.lower(), Domain.only_null(t))
    if type(c) in _CMP:
        op = _CMP[type(c)]
        a, b = c.this, c.expression
        if isinstance(b, exp.Column) and not isinstance(a, exp.Column):
            a, b, op = b, a, _FLIP[op]
        t = _probe_type(a, is_probe_col, cols)
        v = _NO if t is None else _literal(b, t, rules)
        if v is _NO:
            return None
        name = a.name.lower()
        if op == "=":
            return name, Domain.values(t, [v])
        if op == ">":
            return name, Domain.range(t, v, None, low_inclusive=False)
        if op == ">=":
            return name, Domain.range(t, v, None)
        if op == "<":
            return name, Domain.range(t, None, v, high_inclusive=False)
        return name, Domain.range(t, None, v)
    if isinstance(c, exp.In) and c.args.get("query") is None and not c.args.get("unnest"):
        t = _probe_type(c.this, is_probe_col, cols)
        if t is None:
            return None
        vals = []
        for e in c.expressions:
            if isinstance(e, exp.Null):
                continue  # x IN (NULL, ...) never matches through the NULL
            v = _literal(e, t, rules)
            if v is _NO:
                return None
            vals.append(v)
        return c.this.name.lower(), Domain.values(t, vals)
    if isinstance(c, exp.Between):
        t = _probe_type(c.this, is_probe_col, cols)
        if t is None:
            return None
        lo, hi = _literal(c.args["low"], t, rules), _literal(c.args["high"], t, rules)
        if lo is _NO or hi is _NO:
            return None
        return c.this.name.lower(), Domain.range(t, lo, hi)
    return None


def _probe_type(col: exp.Expression, is_probe_col: Callable[[exp.Column], bool],
                cols: dict[str, Optional[DataType]]) -> Optional[DataType]:
    """The type of a probe column, None for anything else (or a column of unknown type:
    no literal can be read as its values)."""
    if not (isinstance(col, exp.Column) and is_probe_col(col)):
        return None
    return cols.get(col.name.lower())


class _NoValue:
    """No literal to compare with (None would be SQL NULL, a value of its own)."""


_NO: Any = _NoValue()


def _literal(e: exp.Expression, t: DataType, rules: SparkRules = DEFAULT_RULES) -> Any:
    """The literal as a value of the column's type, the way Spark would compare it; _NO
    when it is not a plain literal or the comparison would go through a cast we don't model."""
    e = e.unnest() if isinstance(e, exp.Paren) else e
    neg = False
    if isinstance(e, exp.Neg):
        neg, e = True, e.this
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
        target = e.to.sql(dialect="spark").lower()
        try:
            ct = DataType.parse(target)
        except DomainError:
            return _NO
        if ct.name != t.name and not (ct.is_integral and t.is_integral):
            return _NO
        e = e.this
    if isinstance(e, exp.Boolean):
        return e.this if t.name == "boolean" else _NO
    if not isinstance(e, exp.Literal):
        return _NO
    text = e.this
    if neg:
        if e.is_string:
            return _NO
        text = "-" + text
    try:
        if e.is_string:
            if t.name == "string":
                return text
            if t.name in ("date", "timestamp", "timestamp_ntz") or t.is_integral:
                return rules.read_text(t, text)
            return _NO
        # numeric literal
        if t.name == "string":
            return _NO
        if t.is_integral:
            d = decimal.Decimal(text)
            if d != d.to_integral_value():
                return _NO
            return t.coerce(int(d))
        if t.name == "decimal":
            return t.coerce(decimal.Decimal(text))
        if t.is_floating:
            return t.coerce(float(text))
        return _NO
    except (DomainError, decimal.InvalidOperation, ValueError):
        return _NO


def compatible(build: DataType, probe: DataType) -> bool:
    """May a build key of type ``build`` filter a probe column of type ``probe``: the
    same type, or types whose values dpp converts exactly the way Spark's join casts them."""
    if build == probe:
        return True
    if build.is_integral and probe.is_integral:
        return True
    if build.name == probe.name == "decimal":
        return True
    if build.is_floating and probe.is_floating:
        return True
    # a date is its midnight, an NTZ reading meets an instant in the session zone:
    # dpp.core.reconcile converts between the three with the session's rules
    temporal = ("date", "timestamp", "timestamp_ntz")
    return build.name in temporal and probe.name in temporal
