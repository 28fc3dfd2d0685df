"""Property tests of the domain algebra and its wire codec (1,000 examples per law).

Domains are drawn over small value universes per type, so that sampled probe values hit
domain members, bounds and gaps alike; every law is checked against plain set semantics.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpp.core import codec
from dpp.core.domain import (BIGINT, BOOLEAN, DATE, DOUBLE, INT, STRING, TIMESTAMP, DataType, Domain,
                        Range, TupleDomain, decimal_type)
from dpp.core.errors import CodecError, DomainError
from tests.budget import LAW_EXAMPLES

LAW = settings(max_examples=LAW_EXAMPLES, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DEC = decimal_type(7, 2)

UNIVERSE = {
    INT: [-(2 ** 31), -5, -1, 0, 1, 2, 3, 7, 100, 2 ** 31 - 1],
    BIGINT: [-(2 ** 63), -3, 0, 1, 5, 9, 2 ** 40, 2 ** 63 - 1],
    STRING: ["", "a", "a:b", "a/b", "b", "x y", "ü", "ünï", "zz", "\x00"],
    DATE: [dt.date(1970, 1, 1), dt.date(1999, 12, 31), dt.date(2000, 1, 1),
           dt.date(2000, 2, 29), dt.date(2024, 6, 1)],
    DEC: [decimal.Decimal(x) for x in ("-99999.99", "-1.50", "0.00", "0.01", "1.50", "3.25",
                                       "99999.99")],
    TIMESTAMP: [dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 1),
                dt.datetime(2000, 1, 1, 12), dt.datetime(2020, 5, 5, 5, 5, 5)],
    BOOLEAN: [False, True],
    DOUBLE: [-math.inf, -1.5, -0.0, 0.0, 1e-300, 2.5, 1e300, math.inf, math.nan],
}
TYPES = list(UNIVERSE)


@st.composite
def domains(draw, t: DataType, bloom: bool = False) -> Domain:
    u = UNIVERSE[t]
    null = draw(st.booleans())
    kind = draw(st.sampled_from(["all", "none", "values", "range", "ranges"] +
                                (["bloom"] if bloom else [])))
    if kind == "all":
        return Domain.all(t) if null else Domain.not_null(t)
    if kind == "none":
        return Domain.only_null(t) if null else Domain.none(t)
    if kind in ("values", "bloom"):
        vals = draw(st.lists(st.sampled_from(u), max_size=6))
        if kind == "bloom" and vals:
            return Domain.bloom(t, vals, fpp=0.01, capacity=64, null_allowed=null)
        return Domain.values(t, vals, null_allowed=null)
    n = 1 if kind == "range" else draw(st.integers(1, 3))
    rs = []
    for _ in range(n):
        lo = draw(st.none() | st.sampled_from(u))
        hi = draw(st.none() | st.sampled_from(u))
        if t.is_floating and ((lo is not None and math.isnan(lo)) or
                              (hi is not None and math.isnan(hi))):
            lo = hi = math.nan
        rs.append(Range(None if lo is None else t.key(t.coerce(lo)), lo is not None and draw(st.booleans()),
                        None if hi is None else t.key(t.coerce(hi)), hi is not None and draw(st.booleans())))
    return Domain.ranges(t, rs, null_allowed=null)


@st.composite
def typed_pair(draw, bloom: bool = False):
    t = draw(st.sampled_from(TYPES))
    return t, draw(domains(t, bloom)), draw(domains(t, bloom))


def probes(t: DataType):
    return list(UNIVERSE[t]) + [None]


@LAW
@given(typed_pair())
def test_union_and_intersect_agree_with_set_semantics(p):
    t, a, b = p
    u, i = a.union(b), a.intersect(b)
    for v in probes(t):
        assert u.contains(v) == (a.contains(v) or b.contains(v)), (a, b, v)
        assert i.contains(v) == (a.contains(v) and b.contains(v)), (a, b, v)


@LAW
@given(typed_pair(bloom=True))
def test_union_and_intersect_are_sound_with_blooms(p):
    t, a, b = p
    u, i = a.union(b), a.intersect(b)
    for v in probes(t):
        if a.contains(v) or b.contains(v):
            assert u.contains(v), (a, b, v)
        if a.contains(v) and b.contains(v):
            assert i.contains(v), (a, b, v)


@LAW
@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(st.just(t), domains(t))))
def test_complement_is_exact(p):
    t, a = p
    c = a.complement()
    for v in probes(t):
        assert c.contains(v) == (not a.contains(v)), (a, v)


def test_complement_of_bloom_is_refused():
    with pytest.raises(DomainError):
        Domain.bloom(INT, [1, 2], fpp=0.01).complement()


@LAW
@given(st.sampled_from([INT, BIGINT, STRING, DATE, DEC]).flatmap(
    lambda t: st.tuples(st.just(t), st.lists(st.sampled_from(UNIVERSE[t]), min_size=1, max_size=8),
                        st.lists(st.sampled_from(UNIVERSE[t]), max_size=8))))
def test_bloom_never_says_no_for_a_held_value(p):
    t, held, more = p
    b = Domain.bloom(t, held, fpp=0.01, capacity=32)
    merged = b.union(Domain.values(t, more)).union(Domain.bloom(t, more or held, fpp=0.01,
                                                                capacity=32))
    narrowed = b.intersect(Domain.range(t, min(held), max(held)))
    for v in held:
        assert b.contains(v) and merged.contains(v) and narrowed.contains(v)
    for v in more:
        assert merged.contains(v)


@LAW
@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(
    st.just(t), domains(t, bloom=True), st.sampled_from(UNIVERSE[t]), st.sampled_from(UNIVERSE[t]))))
def test_overlaps_is_never_false_when_a_contained_value_lies_in_range(p):
    t, a, x, y = p
    lo, hi = (x, y) if t.key(t.coerce(x)) <= t.key(t.coerce(y)) else (y, x)
    inside = [v for v in UNIVERSE[t] if t.key(t.coerce(lo)) <= t.key(t.coerce(v)) <= t.key(t.coerce(hi))]
    if any(a.contains(v) for v in inside):
        assert a.overlaps(lo, hi), (a, lo, hi)
    assert not Domain.none(t).overlaps(lo, hi)


@LAW
@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(
    st.just(t), domains(t, bloom=True), st.integers(0, 4), st.booleans())))
def test_collapse_never_drops_a_value(p):
    t, a, max_distinct, bloom = p
    s = a.simplify(max_distinct, bloom_fpp=0.01 if bloom else None)
    for v in probes(t):
        if a.contains(v):
            assert s.contains(v), (a, s, v)
    n = a.value_count() if a.kind == "values" else None
    if n is not None and n > max_distinct:
        assert s.kind == ("bloom" if bloom else "range")
    if a.kind == "values" and (n or 0) <= max_distinct:
        assert s == a


@LAW
@given(st.sampled_from(TYPES).flatmap(lambda t: domains(t, bloom=True)))
def test_encode_decode_is_identity(a):
    assert codec.decode_domain(codec.encode_domain(a)) == a


@LAW
@given(st.dictionaries(st.sampled_from(["c1", "c2", "c3"]),
                       st.sampled_from(TYPES).flatmap(lambda t: domains(t, bloom=True)),
                       max_size=3))
def test_tuple_domain_round_trip(m):
    td = TupleDomain.of(m)
    assert codec.decode_tuple_domain(codec.encode_tuple_domain(td)) == td


@LAW
@given(st.binary(max_size=300))
def test_decoder_on_random_bytes_raises_only_its_error(data):
    try:
        codec.decode(data)
    except CodecError:
        pass


@LAW
@given(st.sampled_from(TYPES).flatmap(lambda t: domains(t, bloom=True)),
       st.integers(0, 2 ** 32 - 1))
def test_decoder_on_mutated_bytes_raises_only_its_error(a, seed):
    rnd = random.Random(seed)
    data = bytearray(codec.encode_domain(a))
    op = rnd.randrange(4)
    if op == 0:
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(data))
            data[i] ^= 1 << rnd.randrange(8)
    elif op == 1:
        del data[rnd.randrange(len(data)):]
    elif op == 2:
        data += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16)))
    else:
        data[8:12] = rnd.randrange(2 ** 32).to_bytes(4, "big")
    try:
        out = codec.decode(bytes(data))
    except CodecError:
        return
    assert isinstance(out, (Domain, TupleDomain))


def test_decoder_bounds_and_bombs():
    big = Domain.values(BIGINT, range(5000))
    data = codec.encode_domain(big)
    with pytest.raises(CodecError, match="bound"):
        codec.decode(data, max_bytes=len(data) - 1)
    with pytest.raises(CodecError):
        codec.encode_domain(big, max_bytes=100)
    # a compressed payload that inflates beyond the bound is refused without inflating it all
    import json
    import struct
    import zlib

    payload = zlib.compress(b'{"d":' + b" " * 50_000_000 + b"}", 9)
    frame = struct.pack(">4sBBI", b"DPPD", 1, 1, len(payload)) + payload + \
        struct.pack(">I", zlib.crc32(payload))
    with pytest.raises(CodecError, match="bound"):
        codec.decode(frame, max_bytes=1_000_000)
    deep = json.dumps({"d": {}}).replace("{}", "[" * 100_000 + "]" * 100_000).encode()
    frame = struct.pack(">4sBBI", b"DPPD", 1, 0, len(deep)) + deep + \
        struct.pack(">I", zlib.crc32(deep))
    with pytest.raises(CodecError):
        codec.decode(frame)


# ------------------------------------------------------------------------ examples

def test_tuple_domain_normalization_and_semantics():
    a = TupleDomain.of({"x": Domain.values(INT, [1, 2]), "y": Domain.all(STRING)})
    assert a.columns == ("x",)
    assert TupleDomain.of({"x": Domain.none(INT), "y": Domain.values(STRING, ["a"])}).is_none()
    b = TupleDomain.of({"x": Domain.values(INT, [2, 3]), "z": Domain.values(INT, [9])})
    assert a.intersect(b) == TupleDomain.of({"x": Domain.values(INT, [2]),
                                             "z": Domain.values(INT, [9])})
    assert a.union(b) == TupleDomain.of({"x": Domain.values(INT, [1, 2, 3])})
    assert a.union(TupleDomain.none()) == a and a.intersect(TupleDomain.none()).is_none()
    assert a.contains({"x": 1, "y": "q"}) and not a.contains({"x": 5})


def test_type_names_and_errors_name_the_culprit():
    assert DataType.parse("decimal(7,2)") == DEC and DataType.parse("LONG") == BIGINT
    with pytest.raises(DomainError, match="map<int,int>"):
        DataType.parse("map<int,int>")
    with pytest.raises(DomainError, match=r"'12x'.*int"):
        INT.parse_text("12x")
    with pytest.raises(DomainError, match="out of range"):
        INT.coerce(2 ** 31)
    with pytest.raises(DomainError):
        INT.coerce(True)
    with pytest.raises(DomainError, match="decimal places"):
        DEC.coerce(decimal.Decimal("1.234"))


def test_value_equality_and_hashing():
    assert Domain.values(INT, [3, 1]) == Domain.values(INT, [1, 3])
    assert hash(Domain.values(INT, [3, 1])) == hash(Domain.values(INT, [1, 3]))
    assert Domain.values(DOUBLE, [math.nan]) == Domain.values(DOUBLE, [float("nan")])
    assert Domain.values(DOUBLE, [-0.0]) == Domain.values(DOUBLE, [0.0])


def test_nan_rule():
    nan = float("nan")
    assert Domain.values(DOUBLE, [nan, nan, 1.0]).value_count() == 2
    assert Domain.range(DOUBLE, 1.0, None).contains(nan)
    assert not Domain.range(DOUBLE, 1.0, math.inf).contains(nan)
    assert Domain.values(DOUBLE, [nan]).overlaps(0.0, 1.0)  # statistics leave NaN out
