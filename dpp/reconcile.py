"""Bringing a build-side domain into the probe column's type, the way Spark's join compares.

A join ``fact.int_col = dim.bigint_col`` compares after widening both sides; a dimension value
that the probe type cannot hold can never be equal to a probe value, so dropping it is exact.
Where the comparison would go through a cast we do not model (string vs number, date vs
timestamp, integral vs decimal) the filter is not used: no pruning is always sound.
"""
from __future__ import annotations

import decimal
from typing import Optional

from dpp.domain import DataType, Domain, Range
from dpp.errors import DomainError


def reconcile(domain: Domain, probe_type: DataType) -> tuple[Optional[Domain], Optional[str]]:
    """(domain in ``probe_type``, None) or (None, reason the filter cannot be used)."""
    src = domain.type
    if src == probe_type:
        return domain, None
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
        from dpp.domain import _Bloom  # noqa: PLC0415 - internal, same algebra

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
