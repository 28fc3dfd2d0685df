"""Example tests of the domain algebra: the behaviour callers see, one promise per test."""
from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest

from dpp.core.domain import (BIGINT, BOOLEAN, DATE, DOUBLE, INT, STRING, TIMESTAMP, TIMESTAMP_NTZ,
                        DataType, Domain, Range, TupleDomain, decimal_type)
from dpp.core.errors import DomainError

D = decimal.Decimal


# ---------------------------------------------------------------- TupleDomain

def test_tuple_domain_with_a_none_column_is_none():
    td = TupleDomain.of({"a": Domain.values(INT, [1]), "b": Domain.none(STRING)})
    assert td.is_none() and td == TupleDomain.none()
    assert not td.contains({"a": 1, "b": "x"})
    assert td.columns == () and td.get("a") is None


def test_tuple_domain_drops_all_columns_but_keeps_not_null_and_only_null():
    td = TupleDomain.of({"a": Domain.all(INT), "b": Domain.not_null(INT),
                         "c": Domain.only_null(INT)})
    assert td.columns == ("b", "c")
    assert td.get("a") is None
    assert TupleDomain.of({"a": Domain.all(INT)}) == TupleDomain.all()
    assert TupleDomain.all().is_all() and not TupleDomain.all().is_none()


def test_tuple_domain_intersect_is_and_per_column():
    a = TupleDomain.of({"x": Domain.range(INT, 1, 10), "y": Domain.values(STRING, ["p"])})
    b = TupleDomain.of({"x": Domain.range(INT, 5, 20), "z": Domain.values(INT, [7])})
    i = a.intersect(b)
    assert i.columns == ("x", "y", "z")
    assert i.get("x") == Domain.range(INT, 5, 10)
    assert i.contains({"x": 5, "y": "p", "z": 7})
    assert not i.contains({"x": 4, "y": "p", "z": 7})
    assert not i.contains({"x": 5, "y": "p", "z": 8})
    assert i.contains({"x": 5})  # absent columns are unknown: might match
    disjoint = TupleDomain.of({"x": Domain.values(INT, [100])})
    assert a.intersect(disjoint).is_none()
    assert a.intersect(TupleDomain.none()).is_none()
    assert a.intersect(TupleDomain.all()) == a


def test_tuple_domain_union_is_sound_or():
    a = TupleDomain.of({"x": Domain.values(INT, [1]), "y": Domain.values(STRING, ["p"])})
    b = TupleDomain.of({"x": Domain.values(INT, [2]), "z": Domain.values(INT, [7])})
    u = a.union(b)
    assert u.columns == ("x",)  # y and z constrained on one side only: unconstrained
    assert u.get("x") == Domain.values(INT, [1, 2])
    for row in ({"x": 1, "y": "p", "z": 0}, {"x": 2, "y": "q", "z": 7}):
        assert (a.contains(row) or b.contains(row)) and u.contains(row)
    assert a.union(TupleDomain.none()) == a and TupleDomain.none().union(a) == a
    assert a.union(TupleDomain.all()).is_all()


def test_tuple_domain_rejects_non_domains_and_describes_itself():
    with pytest.raises(DomainError, match="'a'"):
        TupleDomain.of({"a": 5})  # type: ignore[dict-item]
    assert TupleDomain.none().describe() == "NONE"
    assert TupleDomain.all().describe() == "ALL"
    assert "x in" in TupleDomain.of({"x": Domain.values(INT, [1])}).describe()


def test_tuple_domain_simplify_collapses_each_column():
    td = TupleDomain.of({"x": Domain.values(INT, range(10))})
    assert td.simplify(3).get("x") == Domain.range(INT, 0, 9)
    assert td.simplify(3, bloom_fpp=0.01).get("x").kind == "bloom"
    assert td.simplify(3, bloom_fpp=0.01, bloom_capacity=100).get("x").value_set.params[0] \
        == 100
    assert TupleDomain.none().simplify(1).is_none()


# ---------------------------------------------------------------- type names

@pytest.mark.parametrize("text,expected", [
    ("int", INT), ("integer", INT), ("INT", INT), (" bigint ", BIGINT), ("long", BIGINT),
    ("string", STRING), ("varchar", STRING), ("date", DATE), ("timestamp", TIMESTAMP),
    # a wall-clock reading and an instant are two types (one type for both lost rows, #18)
    ("timestamp_ntz", TIMESTAMP_NTZ), ("timestamp_ltz", TIMESTAMP),
    ("boolean", BOOLEAN), ("double", DOUBLE),
    ("decimal(7,2)", decimal_type(7, 2)), ("decimal( 38 , 0 )", decimal_type(38, 0)),
    ("DECIMAL(10,10)", decimal_type(10, 10)), ("decimal", decimal_type(10, 0)),
])
def test_type_parse_reads_spark_names(text, expected):
    t = DataType.parse(text)
    assert t == expected
    assert DataType.parse(t.simple_string()) == t
    assert DataType.parse(t) is t


@pytest.mark.parametrize("text", ["binary", "decimal(39,2)", "decimal(5,6)", "decimal(0,0)",
                                  "decimal(7,2", "array<int>", "", "int\n1",
                                  "decimal(" + "9" * 5000 + ",1)", "decimal(٧,٢)"])
def test_type_parse_errors_name_the_bad_type(text):
    with pytest.raises(DomainError) as exc:
        DataType.parse(text)
    assert repr(text)[:40] in str(exc.value)


def test_type_parse_refuses_non_strings():
    with pytest.raises(DomainError, match="42"):
        DataType.parse(42)  # type: ignore[arg-type]
    with pytest.raises(DomainError, match="decimal"):
        DataType("decimal", 3, 5)
    with pytest.raises(DomainError, match="precision or scale"):
        DataType("int", 3, None)


# ---------------------------------------------------------------- parse_text

@pytest.mark.parametrize("t,text,expected", [
    (INT, "42", 42), (INT, " -7 ", -7), (INT, "+3", 3), (BIGINT, str(2 ** 63 - 1), 2 ** 63 - 1),
    (STRING, " a b ", " a b "), (BOOLEAN, "TRUE", True), (BOOLEAN, "false", False),
    (DOUBLE, "1.5", 1.5), (DOUBLE, "-0.0", 0.0), (DOUBLE, "inf", math.inf),
    (decimal_type(7, 2), "3.1", D("3.10")), (decimal_type(7, 2), "-0", D("0.00")),
    (DATE, "2024-02-29", dt.date(2024, 2, 29)),
    (TIMESTAMP, "2024-01-01 10:00:00", dt.datetime(2024, 1, 1, 10)),
    (TIMESTAMP, "2024-01-01T10:00:00.000001", dt.datetime(2024, 1, 1, 10, 0, 0, 1)),
])
def test_parse_text_reads_folder_values(t, text, expected):
    assert t.parse_text(text) == expected


def test_parse_text_reads_nan():
    assert math.isnan(DOUBLE.parse_text("NaN"))


@pytest.mark.parametrize("t,text", [
    (INT, "2147483648"), (INT, "1.0"), (INT, "x"), (INT, "١٢"), (INT, "1_000"), (INT, ""),
    (INT, "12\n3"), (BOOLEAN, "1"), (BOOLEAN, "yes"), (DOUBLE, "one"), (DOUBLE, "1_0"),
    (DOUBLE, "١"), (decimal_type(7, 2), "1.234"), (decimal_type(3, 0), "1000"),
    (decimal_type(7, 2), "1e999999"), (decimal_type(7, 2), "NaN"), (DATE, "2023-02-29"),
    (DATE, "20240101"), (DATE, "2024-W01-1"), (DATE, "tomorrow"),
    (TIMESTAMP, "2024-13-01 00:00:00"), (TIMESTAMP, "20240101T000000"),
])
def test_parse_text_errors_name_the_text_and_the_type(t, text):
    with pytest.raises(DomainError) as exc:
        t.parse_text(text)
    assert repr(text) in str(exc.value) and str(t) in str(exc.value)


def test_parse_text_refuses_non_strings():
    with pytest.raises(DomainError, match="int"):
        INT.parse_text(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- coerce

@pytest.mark.parametrize("t,value", [
    (INT, 2 ** 31), (INT, -(2 ** 31) - 1), (BIGINT, 2 ** 63), (INT, True), (BIGINT, False),
    (INT, 1.0), (INT, "1"), (INT, D("1.5")), (INT, D("Infinity")), (INT, D("NaN")),
    (INT, D("sNaN")), (BOOLEAN, 1), (BOOLEAN, "true"), (STRING, 1), (DOUBLE, True),
    (DOUBLE, "1.0"), (DOUBLE, 10 ** 400), (DOUBLE, D("sNaN")),
    (decimal_type(7, 2), D("1.234")), (decimal_type(7, 2), "0.001"), (decimal_type(7, 2), 1.5),
    (decimal_type(7, 2), True), (decimal_type(7, 2), D("123456.00")),
    (decimal_type(7, 2), D("Infinity")), (decimal_type(38, 2), 10 ** 100),
    (decimal_type(38, 2), D("1e100")), (decimal_type(7, 2), "abc"),
    (DATE, dt.datetime(2024, 1, 1)), (DATE, "2024-01-01"), (TIMESTAMP, dt.date(2024, 1, 1)),
    (INT, None),
])
def test_coerce_is_strict(t, value):
    with pytest.raises(DomainError):
        t.coerce(value)


def test_coerce_canonical_forms():
    assert INT.coerce(D("5")) == 5 and type(INT.coerce(D("5"))) is int
    assert math.copysign(1, DOUBLE.coerce(-0.0)) == 1.0
    assert math.isnan(DOUBLE.coerce(math.nan))
    dec = decimal_type(7, 2)
    assert str(dec.coerce(D("1.5"))) == "1.50"
    assert str(dec.coerce(D("-0"))) == "0.00"  # one zero: its bloom text must be one text
    assert dec.coerce(5) == D("5.00")
    utc = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert TIMESTAMP.coerce(utc) == dt.datetime(2024, 1, 1, 10)


def test_contains_refuses_a_value_of_the_wrong_type():
    with pytest.raises(DomainError):
        Domain.values(INT, [1]).contains("1")


# ---------------------------------------------------------------- identity

def test_domains_have_value_equality_and_hashing():
    a = Domain.values(INT, [3, 1, 2, 2])
    b = Domain.values("int", [1, 2, 3])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Domain.values(INT, [1, 2, 3], null_allowed=True)
    assert a != Domain.values(BIGINT, [1, 2, 3])
    assert Domain.range(INT, 1, 5) == Domain.range(INT, 1, 5)
    assert hash(Domain.range(INT, 1, 5)) == hash(Domain.range(INT, 1, 5))
    assert Domain.range(INT, 1, 5) != Domain.range(INT, 1, 5, high_inclusive=False)
    assert Domain.values(DOUBLE, [math.nan, -0.0]) == Domain.values(DOUBLE, [0.0, math.nan])
    assert Domain.values(decimal_type(5, 2), [D("1.5")]) == \
        Domain.values(decimal_type(5, 2), [D("1.50")])
    b1 = Domain.bloom(STRING, ["a", "b"], 0.01)
    b2 = Domain.bloom(STRING, ["b", "a"], 0.01)
    assert b1 == b2 and hash(b1) == hash(b2)
    assert b1 != Domain.bloom(STRING, ["a", "c"], 0.01)
    assert Domain.all(INT) == Domain.all("int") and Domain.none(INT) != Domain.only_null(INT)
    td1 = TupleDomain.of({"x": a, "y": b1})
    td2 = TupleDomain.of({"y": b2, "x": b})
    assert td1 == td2 and hash(td1) == hash(td2)
    assert a != "not a domain"


def test_combining_domains_of_different_types_is_an_error():
    with pytest.raises(DomainError, match="int.*bigint"):
        Domain.values(INT, [1]).union(Domain.values(BIGINT, [1]))
    with pytest.raises(DomainError):
        Domain.values(INT, [1]).intersect(5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the NaN rule

def test_nan_is_contained_once_and_sorts_above_infinity():
    d = Domain.values(DOUBLE, [math.nan, float("nan"), 1.0])
    assert d.value_count() == 2
    assert d.contains(math.nan) and d.contains(float("-nan"))
    assert Domain.range(DOUBLE, 1.0, None).contains(math.nan)
    assert not Domain.range(DOUBLE, 1.0, math.inf).contains(math.nan)
    assert Domain.range(DOUBLE, 1.0, math.inf).contains(math.inf)
    assert Domain.range(DOUBLE, math.inf, None, low_inclusive=False).contains(math.nan)
    assert Domain.range(DOUBLE, math.inf, None, low_inclusive=False).discrete_values() is None
    assert Domain.range(DOUBLE, math.nan, math.nan).discrete_values()[0] != 0  # NaN itself
    assert not Domain.range(DOUBLE, None, math.inf).contains(math.nan)
    assert Domain.values(DOUBLE, [math.nan]).complement().contains(math.inf)
    assert not Domain.values(DOUBLE, [math.nan]).complement().contains(math.nan)
    assert Domain.range(DOUBLE, 0.0, 0.0).contains(-0.0)
    assert Domain.values(DOUBLE, [-0.0]).contains(0.0)
    # Parquet min/max statistics leave NaN out: a domain that may hold NaN overlaps anything
    assert Domain.values(DOUBLE, [math.nan]).overlaps(1.0, 2.0)
    assert not Domain.values(DOUBLE, [5.0]).overlaps(1.0, 2.0)
    assert Domain.bloom(DOUBLE, [math.nan, 3.0], 0.01).contains(math.nan)


# ---------------------------------------------------------------- other promises

def test_ranges_with_inclusive_unbounded_sides_are_normalized():
    d = Domain.ranges(INT, [Range(None, True, 5, True)])
    assert d == Domain.range(INT, None, 5)
    assert Domain.ranges(INT, [Range(None, True, None, True)]) == Domain.not_null(INT)


def test_bloom_over_strings_with_lone_surrogates_still_holds_them():
    d = Domain.bloom(STRING, ["\ud800", "a"], 0.01)
    assert d.contains("\ud800") and d.contains("a")
    assert Domain.values(STRING, ["\udfff"]).simplify(0, bloom_fpp=0.01).contains("\udfff")


def test_bloom_decimal_zero_is_one_value():
    dec = decimal_type(7, 2)
    d = Domain.bloom(dec, [D("-0.00"), D("1")], 0.01)
    assert d.contains(D("0")) and d.contains(D("0.00")) and d.contains(D("-0"))


def test_bloom_union_beyond_capacity_falls_back_to_exact_ranges():
    b = Domain.bloom(INT, [1, 2], 0.01, capacity=2)
    u = b.union(Domain.values(INT, [10, 11]))
    assert u.is_exact() and all(u.contains(v) for v in (1, 2, 10, 11))


def test_simplify_rejects_a_negative_threshold():
    with pytest.raises(DomainError):
        Domain.values(INT, [1]).simplify(-1)


def test_inspection_helpers():
    d = Domain.values(INT, [3, 1], null_allowed=True)
    assert d.discrete_values() == [1, 3] and d.value_count() == 2 and d.bounds() == (1, 3)
    assert Domain.range(INT, None, 4).bounds() == (None, 4)
    assert Domain.none(INT).bounds() is None and Domain.all(INT).bounds() == (None, None)
    assert Domain.none(INT).discrete_values() == [] and Domain.all(INT).value_count() is None
    assert "values(2" in d.describe() and "NULL" in d.describe()
    assert Domain.bloom(INT, [1], 0.01).describe().startswith("bloom(")
    assert Domain.all(INT).describe() == "ALL" and Domain.none(INT).describe() == "NONE"
