"""Bringing a build-side domain into the probe column's type, the way Spark's join compares.

A join ``fact.int_col = dim.bigint_col`` compares after widening both sides; a dimension value
that the probe type cannot hold can never be equal to a probe value, so dropping it is exact.
Date, TIMESTAMP and TIMESTAMP_NTZ compare in their common type (a date is its midnight; an
NTZ reading meets an instant in the session time zone), so those conversions need the
session's rules (:class:`dpp.core.spark_rules.SparkRules`). Where the comparison would go through a
cast we do not model (string vs number, integral vs decimal) the filter is not used: no
pruning is always sound.
"""
from __future__ import annotations

import datetime as dt
import decimal
from typing import Any, Callable, Optional

from dpp.core.domain import DataType, Domain, Range, _Bloom
from dpp.core.errors import DomainError
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules

_TEMPORAL = ("date", "timestamp", "timestamp_ntz")
# wider than any zone offset or DST shift: range bounds moved by it stay sound
_SLACK = dt.timedelta(days=1)


def reconcile(domain: Domain, probe_type: DataType,
              rules: SparkRules = DEFAULT_RULES) -> tuple[Optional[Domain], Optional[str]]:
    """(domain in ``probe_type``, None) or (None, reason the filter cannot be used)."""
    src = domain.type
    for t in (src, probe_type):
        why = rules.uncertain(t)
        if why is not None:
            return None, why
    if src == probe_type:
        return domain, None
    if src.name in _TEMPORAL and probe_type.name in _TEMPORAL:
        return _temporal(domain, probe_type, rules), None
    if src.is_integral and probe_type.is_integral:
        return _convert(domain, probe_type, keep_bloom=True), None
    if src.name == "decimal" and probe_type.name == "decimal":
        return _convert(domain, probe_type, keep_bloom=False), None
    if src.is_floating and probe_type.is_floating:
        return _convert(domain, probe_type, keep_bloom=True), None
    return None, (f"type mismatch: build side is {src}, probe column is {probe_type}; "
                  f"Spark would compare through a cast this runtime does not model")


def _convert(domain: Domain, t: DataType, keep_bloom: bool) -> Domain:
    if domain.kind in ("all", "none"):
        return Domain(t, domain.value_set, domain.null_allowed)
    values = domain.discrete_values()
    if values is not None:
        kept = []
        for v in values:
            try:
                kept.append(t.coerce(v))
            except DomainError:
                continue  # not representable in the probe type: can never be equal
        return Domain.values(t, kept, null_allowed=domain.null_allowed)
    if domain.kind == "bloom" and keep_bloom:
        # integral (and floating) types hash the same text whatever their width
        vs = domain.value_set
        assert isinstance(vs, _Bloom)
        env = _clamp_ranges(domain, t)
        if env is None:
            return Domain.none(t) if not domain.null_allowed else Domain.only_null(t)
        return Domain(t, _Bloom(vs.filter, env), domain.null_allowed)
    env = _clamp_ranges(domain, t)
    if env is None:
        return Domain.none(t) if not domain.null_allowed else Domain.only_null(t)
    return Domain.ranges(t, env, null_allowed=domain.null_allowed)


def _clamp_ranges(domain: Domain, t: DataType) -> Optional[tuple[Range, ...]]:
    """The domain's ranges with bounds rounded outward into ``t`` (sound: never narrower)."""
    rs = domain.ranges_view() or ()
    out = []
    src = domain.type
    for r in rs:
        lo = None if r.low is None else _outward(src.from_key(r.low), t, down=True)
        hi = None if r.high is None else _outward(src.from_key(r.high), t, down=False)
        out.append(Range(None if lo is None else t.key(lo), r.low_inclusive and lo is not None,
                         None if hi is None else t.key(hi), r.high_inclusive and hi is not None))
    rng = Domain.ranges(t, out)
    view = rng.ranges_view()
    return view if view else None


def _outward(v: object, t: DataType, down: bool) -> object:
    """Rounds ``v`` to the nearest representable value of ``t`` away from the range's inside;
    ``None`` (unbounded) when out of the type's range, which only widens the range."""
    try:
        return t.coerce(v)
    except DomainError:
        pass
    if t.name == "decimal":
        q = decimal.Decimal(1).scaleb(-(t.scale or 0))
        rounding = decimal.ROUND_FLOOR if down else decimal.ROUND_CEILING
        try:
            return t.coerce(decimal.Decimal(str(v)).quantize(q, rounding=rounding))
        except (DomainError, decimal.InvalidOperation):
            return None
    return None


# ---------------------------------------------------------------------- date and time

def _temporal(domain: Domain, t: DataType, rules: SparkRules) -> Domain:
    """A date/timestamp/timestamp_ntz domain brought into another of the three.

    A probe value ``p`` matches a key ``k`` when both, cast to their common type (timestamp
    over timestamp_ntz over date), are equal; the probe values each key can meet are computed
    exactly for discrete keys (a superset where the cast goes the lossy way), and ranges are
    mapped bound by bound and widened by a day (zone offsets and DST shifts never move a value
    that far). A bloom filter hashes the key type's text, so it is dropped for its envelope.
    """
    src = domain.type
    if domain.kind in ("all", "none"):
        return Domain(t, domain.value_set, domain.null_allowed)
    meet = _meets(src.name, t.name, rules)
    values = domain.discrete_values()
    if values is not None:
        kept: list[Any] = []
        for v in values:
            try:
                kept.extend(meet(v))
            except (OverflowError, ValueError, DomainError):
                # cannot be placed: keep everything rather than risk a lost row
                return Domain.all(t) if domain.null_allowed else Domain.not_null(t)
        return Domain.values(t, kept, null_allowed=domain.null_allowed)
    out = []
    for r in domain.ranges_view() or ():
        lo = _moved(r.low, src, t, rules, down=True)
        hi = _moved(r.high, src, t, rules, down=False)
        out.append(Range(None if lo is None else t.key(lo), lo is not None,
                         None if hi is None else t.key(hi), hi is not None))
    return Domain.ranges(t, out, null_allowed=domain.null_allowed)


def _meets(src: str, dst: str, rules: SparkRules) -> Callable[[Any], list[Any]]:
    """key value of type ``src`` → the probe values of type ``dst`` it can be equal to."""
    if src == "timestamp" and dst == "timestamp_ntz":   # localize(p) == k
        return rules.walls_of
    if src == "timestamp_ntz" and dst == "timestamp":   # p == localize(k)
        return lambda k: [rules.localize(k)]
    if src == "timestamp" and dst == "date":            # localize(midnight(p)) == k
        return lambda k: [rules.to_wall(k).date()]
    if src == "timestamp_ntz" and dst == "date":        # midnight(p) == k
        return lambda k: [k.date()]
    if src == "date" and dst == "timestamp":            # p == localize(midnight(k))
        return lambda k: [rules.localize(dt.datetime.combine(k, dt.time()))]
    if src == "date" and dst == "timestamp_ntz":        # p == midnight(k)
        return lambda k: [dt.datetime.combine(k, dt.time())]
    raise DomainError(f"no conversion from {src} to {dst}")  # pragma: no cover


def _moved(key: Any, src: DataType, t: DataType, rules: SparkRules, down: bool) -> Any:
    """A range bound of ``src`` as a bound of ``t``, a day further out; None (unbounded) when
    it falls outside what Python can hold."""
    if key is None:
        return None
    v = src.from_key(key)
    try:
        if isinstance(v, dt.datetime):
            v = v - _SLACK if down else v + _SLACK
            if t.name == "date":
                return v.date()
            return v
        # a date bound
        v = dt.datetime.combine(v, dt.time()) + (-_SLACK if down else _SLACK)
        return v.date() if t.name == "date" else v
    except (OverflowError, ValueError):
        return None
