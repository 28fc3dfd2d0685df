"""Property tests of the domain algebra against plain set semantics (1,000 examples per law).

Exact kinds must agree with set semantics on every sampled value, NULL included; bloom kinds
must be sound: never "no" for a value they hold, and never narrower than their operands.
"""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpp.core.domain import Domain
from dpp.core.errors import DomainError
from tests.budget import LAW_EXAMPLES
from tests.domain_strategies import (FPPS, UNIVERSE, any_domains, bloom_domains,
                                          exact_domains, key_of, typed, values)

LAW = settings(max_examples=LAW_EXAMPLES, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _probes(t: Any) -> list[Any]:
    return [None] + UNIVERSE[t]


@LAW
@given(typed(exact_domains, exact_domains))
def test_union_and_intersect_of_exact_domains_agree_with_set_semantics(p):
    t, a, b = p
    u, i = a.union(b), a.intersect(b)
    assert u.is_exact() and i.is_exact()
    for v in _probes(t):
        assert u.contains(v) == (a.contains(v) or b.contains(v)), (v, a, b, u)
        assert i.contains(v) == (a.contains(v) and b.contains(v)), (v, a, b, i)
    assert (a | b) == u and (a & b) == i


@LAW
@given(typed(any_domains, any_domains))
def test_union_and_intersect_with_blooms_are_sound(p):
    t, a, b = p
    u, i = a.union(b), a.intersect(b)
    for v in _probes(t):
        if a.contains(v) or b.contains(v):
            assert u.contains(v), (v, a, b, u)
        if a.contains(v) and b.contains(v):
            assert i.contains(v), (v, a, b, i)


@LAW
@given(typed(exact_domains))
def test_complement_is_exact(p):
    t, a = p
    c = a.complement()
    for v in _probes(t):
        assert c.contains(v) == (not a.contains(v)), (v, a, c)
    for v in _probes(t):
        assert c.complement().contains(v) == a.contains(v)


@LAW
@given(typed(bloom_domains))
def test_complement_of_a_bloom_domain_is_refused(p):
    _, a = p
    with pytest.raises(DomainError):
        a.complement()


@st.composite
def _held_blooms(draw: st.DrawFn, t: Any) -> tuple[Domain, list[Any]]:
    """A bloom domain after a few operations, with the values it must still hold."""
    fpp = draw(st.sampled_from(FPPS))
    cap = draw(st.sampled_from([None, 4, 16]))
    held = draw(st.lists(values(t), min_size=1, max_size=5))
    d = Domain.bloom(t, held, fpp, capacity=cap)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["bloom", "values", "range", "simplify"]))
        if op == "bloom":  # another partial of the same parameters (same capacity after max)
            more = draw(st.lists(values(t), min_size=1, max_size=5))
            c = d.value_set.params[0] if d.kind == "bloom" else 16
            d = d.union(Domain.bloom(t, more, fpp, capacity=c) if len(set(more)) <= c
                        else Domain.values(t, more))
            held += more
        elif op == "values":
            more = draw(st.lists(values(t), max_size=5))
            d = d.union(Domain.values(t, more))
            held += more
        elif op == "range":
            lo = draw(st.none() | values(t))
            hi = draw(st.none() | values(t))
            r = Domain.range(t, lo, hi, draw(st.booleans()), draw(st.booleans()))
            d = d.intersect(r)
            held = [v for v in held if r.contains(v)]
        else:
            d = d.simplify(draw(st.integers(0, 3)), bloom_fpp=fpp)
        if d.is_none():
            break
    return d, held


@LAW
@given(typed(_held_blooms))
def test_a_bloom_domain_never_says_no_for_a_value_it_holds(p):
    t, (d, held) = p
    for v in held:
        assert d.contains(v), (v, d)
        assert d.overlaps(v, v), (v, d)


@LAW
@given(typed(any_domains, lambda t: st.none() | values(t), lambda t: st.none() | values(t)))
def test_overlaps_is_never_false_when_a_contained_value_lies_in_range(p):
    t, d, lo, hi = p
    lk = None if lo is None else key_of(t, lo)
    hk = None if hi is None else key_of(t, hi)
    inside = [v for v in UNIVERSE[t] if (lk is None or lk <= key_of(t, v))
              and (hk is None or key_of(t, v) <= hk)]
    if any(d.contains(v) for v in inside):
        assert d.overlaps(lo, hi), (d, lo, hi)
    if d.kind == "none":
        assert not d.overlaps(lo, hi)


@LAW
@given(typed(any_domains), st.integers(0, 4), st.sampled_from([None, 0.05]))
def test_collapse_never_drops_a_value_and_stays_exact_under_the_threshold(p, n, fpp):
    t, d = p
    s = d.simplify(n, bloom_fpp=fpp)
    assert s.type == d.type and s.null_allowed == d.null_allowed
    for v in _probes(t):
        if d.contains(v):
            assert s.contains(v), (v, d, s)
    if d.kind == "values":
        if d.value_count() > n:
            assert s.kind == ("range" if fpp is None else "bloom")
        else:
            assert s == d
    elif d.kind == "range":
        rs = d.ranges_view()
        assert s == d if len(rs) <= max(n, 1) else (s.kind == "range"
                                                    and len(s.ranges_view()) == 1)
    elif d.kind in ("all", "none"):
        assert s == d
    if d.is_exact() and s == d:
        for v in _probes(t):
            assert s.contains(v) == d.contains(v)


ORDERED = [t for t in UNIVERSE if t.is_integral or t.name in ("date", "timestamp", "decimal")]


@LAW
@given(st.sampled_from(ORDERED).flatmap(
    lambda t: st.tuples(st.just(t), any_domains(t), st.sampled_from(["<", "<=", ">", ">="]))))
def test_compared_holds_every_value_some_member_compares_so_with(p):
    """``compared(op)`` holds ``v`` when ``v op b`` for some non-null ``b`` the domain holds,
    never NULL; for an exact domain exactly those values (a bloom domain's bounds may hold
    more: sound, never narrower)."""
    import operator
    t, a, op = p
    test = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
    c = a.compared(op)
    assert not c.contains(None)
    members = [b for b in UNIVERSE[t] if a.contains(b)]
    for v in UNIVERSE[t]:
        if any(test(key_of(t, v), key_of(t, b)) for b in members):
            assert c.contains(v), (v, op, a, c)
        elif a.is_exact() and a.ranges_view() is not None and a.kind == "values":
            assert not c.contains(v), (v, op, a, c)
