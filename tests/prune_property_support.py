"""Support for ``tests/test_prune_property.py``: the "pruning never drops a row" property.

An *example* is one fact table partitioned by ONE column ``p`` of one type, written by Spark's
own writer, a dimension key of the same (or a comparable) type with a filter, and one equi-join
``f.p = d.k`` in one of several SQL shapes. The property: ``dpp.sql(q)`` returns exactly the rows
of ``spark.sql(q)`` run with every pruning off over ``spark.read.parquet(path)`` views.

Spark costs about a second per query, so examples are *batched*: every example of a batch that
shares a session time zone is written by ONE Spark write per fact type (an outer partition
column ``e`` = the example's index: ``<root>/e=<i>`` is the example's own table, partitioned by
``p`` alone) and joined by ONE query, a ``UNION ALL`` of per-example joins tagged ``ex = i``, so
a difference names the example. A failing example is re-run alone and shrunk greedily (bounded
time), and reported with everything needed to re-run it:

    python -m tests.prune_property_support '<the JSON printed in the failure>'

Nothing here imports the project at module level except through ``run_*`` (the session).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import json
import math
import os
import shutil
import struct
import sys
import time
import uuid
import zoneinfo
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

from tests.conftest import spark_conf

D = decimal.Decimal

TIME_ZONES = ("UTC", "America/Los_Angeles", "Asia/Kolkata")
KINDS = ("int", "bigint", "smallint", "decimal", "double", "string", "date", "timestamp",
         "boolean")

PRUNING_OFF = {
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false",
}
TZ_KEY = "spark.sql.session.timeZone"
# generous: a build side here takes well under a second, but a batch starts ~20 at once on
# two cores; a timeout would only mean "no pruning" and hide what this test looks for
WAIT_TIMEOUT = "120s"
# every query also runs through dpp's optimizer hook (plain spark.sql, the tables as lazy views)
HOOK_RUNS = True

INT_BOUNDS = {"tinyint": (-(2 ** 7), 2 ** 7 - 1), "smallint": (-(2 ** 15), 2 ** 15 - 1),
              "int": (-(2 ** 31), 2 ** 31 - 1), "bigint": (-(2 ** 63), 2 ** 63 - 1)}
INT_AS_DECIMAL = {"tinyint": (3, 0), "smallint": (5, 0), "int": (10, 0), "bigint": (20, 0)}
# decimal partition types drawn for the "decimal" kind
DECIMAL_TYPES = ((1, 0), (5, 2), (9, 0), (10, 2), (18, 6), (19, 0), (20, 19), (38, 0),
                 (38, 10), (38, 38))

EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
MIN_US = -62135596800000000          # 0001-01-01T00:00:00Z, Spark's documented minimum
MAX_US = 253402300799999999          # 9999-12-31T23:59:59.999999Z

SHAPES = ("join_where", "join_on", "comma", "dim_first", "in", "exists", "semi", "right",
          "left_dim")


# ====================================================================== types

def tinfo(t: str) -> tuple[str, Optional[int], Optional[int]]:
    """``"decimal(10,2)"`` → ``("decimal", 10, 2)``; ``"int"`` → ``("int", None, None)``."""
    if t.startswith("decimal("):
        p, s = t[len("decimal("):-1].split(",")
        return "decimal", int(p), int(s)
    return t, None, None


def dec(p: int, s: int) -> str:
    return f"decimal({p},{s})"


def slug(t: str) -> str:
    return t.replace("(", "_").replace(",", "_").replace(")", "")


def _as_decimal(t: str) -> Optional[tuple[int, int]]:
    n, p, s = tinfo(t)
    if n == "decimal":
        return p, s  # type: ignore[return-value]
    return INT_AS_DECIMAL.get(n)


def comparable_without_overflow(a: str, b: str) -> bool:
    """Spark compares decimals (and integers with decimals) in the wider decimal type; past
    38 digits that cast overflows (an error under ANSI). Such pairs are not generated."""
    da, db = _as_decimal(a), _as_decimal(b)
    if da is None or db is None or (tinfo(a)[0] != "decimal" and tinfo(b)[0] != "decimal"):
        return True
    (p1, s1), (p2, s2) = da, db
    return max(s1, s2) + max(p1 - s1, p2 - s2) <= 38


def dim_type_choices(ft: str) -> tuple[list[str], list[str]]:
    """(types the runtime models against ``ft``, comparable types it must refuse to use)."""
    n = tinfo(ft)[0]
    if n in INT_BOUNDS:
        modelled = [x for x in ("int", "bigint", "smallint", "tinyint") if x != n]
        other = ["double", "decimal(20,0)" if n == "bigint" else "decimal(10,0)"]
    elif n == "decimal":
        modelled = [dec(p, s) for p, s in DECIMAL_TYPES if dec(p, s) != ft]
        other = ["int", "bigint", "double"]
    elif n == "double":
        modelled = ["float"]
        other = ["int", "bigint", "decimal(10,2)"]
    elif n == "date":
        modelled, other = [], ["timestamp", "timestamp_ntz"]
    elif n == "timestamp":
        modelled, other = ["timestamp_ntz"], ["date"]
    else:  # string, boolean: Spark would cast anything else through strings
        modelled, other = [], []
    keep = lambda xs: [x for x in xs if comparable_without_overflow(ft, x)]  # noqa: E731
    return keep(modelled), keep(other)


# ====================================================================== values

def canon(v: Any, t: str) -> Any:
    """The one Python form of a value of type ``t`` (None = NULL)."""
    if v is None:
        return None
    n, p, s = tinfo(t)
    if n in ("double", "float"):
        v = float(v)
        if math.isnan(v):
            return math.nan
        if n == "float":
            v = f32(v)
        return v
    if n == "decimal":
        with decimal.localcontext() as ctx:
            ctx.prec = 90
            q = D(v).quantize(D(1).scaleb(-s))  # type: ignore[arg-type]
        return q.copy_abs() if q.is_zero() else q
    return v


def f32(x: float) -> float:
    """The float (32-bit) nearest to ``x`` (beyond its range: infinity, as Spark casts)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def fits(v: Any, t: str) -> bool:
    n, p, s = tinfo(t)
    if n in INT_BOUNDS:
        lo, hi = INT_BOUNDS[n]
        return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
    if n == "decimal":
        if not isinstance(v, D) or not v.is_finite():
            return False
        with decimal.localcontext() as ctx:
            ctx.prec = 90
            q = v.quantize(D(1).scaleb(-s))  # type: ignore[arg-type]
        return q == v and abs(q) < D(10) ** (p - s)  # type: ignore[operator]
    return True


def wall_micros(us: int, tz: str) -> Optional[int]:
    """The wall-clock reading (micros since 1970-01-01 00:00) of an instant in ``tz``."""
    try:
        local = (EPOCH_UTC + dt.timedelta(microseconds=us)).astimezone(zoneinfo.ZoneInfo(tz))
    except (OverflowError, ValueError):
        return None
    return _naive_micros(local.replace(tzinfo=None))


def instant_of_wall(wall_us: int, tz: str) -> Optional[int]:
    """The instant Spark gives a wall-clock reading in ``tz``: java.time takes the earlier
    offset on an overlap and moves a time in a gap forward by the gap, which is what
    ``fold=0`` gives (the offset in force before the transition)."""
    try:
        naive = EPOCH_NAIVE + dt.timedelta(microseconds=wall_us)
        utc = naive.replace(tzinfo=zoneinfo.ZoneInfo(tz), fold=0).astimezone(dt.timezone.utc)
    except (OverflowError, ValueError):
        return None
    us = _utc_micros(utc)
    return us if MIN_US <= us <= MAX_US else None


def _naive_micros(x: dt.datetime) -> int:
    d = x - EPOCH_NAIVE
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _utc_micros(x: dt.datetime) -> int:
    d = x - EPOCH_UTC
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def convert(v: Any, ft: str, kt: str, tz: str) -> Any:
    """A dimension key of type ``kt`` that Spark's ``f.p = d.k`` finds equal to the fact value
    ``v`` of type ``ft`` (best effort; ``None`` when there is none)."""
    if v is None:
        return None
    fn, kn = tinfo(ft)[0], tinfo(kt)[0]
    try:
        if ft == kt:
            return v
        if kn in INT_BOUNDS:
            if fn in ("double", "decimal"):
                if isinstance(v, float) and not math.isfinite(v):
                    return None
                if v != int(v):
                    return None
                v = int(v)
            return v if fits(v, kt) else None
        if kn == "decimal":
            if isinstance(v, float):
                if not math.isfinite(v):
                    return None
                v = D(v)
            c = canon(D(v), kt)
            return c if c == D(v) and fits(c, kt) else None
        if kn == "double":
            return float(v)
        if kn == "float":
            if isinstance(v, float) and math.isnan(v):
                return math.nan
            if isinstance(v, float) and math.isfinite(v) and abs(v) > 3.4028234663852886e38:
                return None
            return f32(float(v))  # the nearest float: equal only if exactly representable
        if fn == "date" and kn == "timestamp":
            return instant_of_wall(_naive_micros(dt.datetime.combine(v, dt.time())), tz)
        if fn == "date" and kn == "timestamp_ntz":
            return _naive_micros(dt.datetime.combine(v, dt.time()))
        if fn == "timestamp" and kn == "timestamp_ntz":
            return wall_micros(v, tz)
        if fn == "timestamp" and kn == "date":
            w = wall_micros(v, tz)
            return None if w is None else (EPOCH_NAIVE + dt.timedelta(microseconds=w)).date()
    except (OverflowError, ValueError, decimal.InvalidOperation):
        return None
    return None


def folder_key(v: Any, t: str, tz: str) -> Any:
    """Values with equal keys land in ONE folder when Spark writes them (so a table must not
    hold two of them: Spark's writer fails on the second)."""
    n = tinfo(t)[0]
    if v is None or (n == "string" and v in ("", "__HIVE_DEFAULT_PARTITION__")):
        return None
    if n == "timestamp":
        w = wall_micros(v, tz)
        return ("wall", w) if w is not None else ("instant", v)
    if n in ("double", "float"):
        return "NaN" if math.isnan(v) else repr(v)
    return v


def to_spark(v: Any, t: str) -> Any:
    """The Python object PySpark's createDataFrame turns into exactly this value."""
    if v is None:
        return None
    n = tinfo(t)[0]
    if n == "timestamp":
        return EPOCH_UTC + dt.timedelta(microseconds=v)   # aware: no local-time guess
    if n == "timestamp_ntz":
        return EPOCH_NAIVE + dt.timedelta(microseconds=v)
    return v


def show(v: Any, t: str) -> str:
    """A value for humans (timestamps as UTC instants, ntz as wall clocks)."""
    if v is None:
        return "NULL"
    n = tinfo(t)[0]
    if n == "timestamp":
        return (EPOCH_UTC + dt.timedelta(microseconds=v)).isoformat().replace("+00:00", "Z")
    if n == "timestamp_ntz":
        return (EPOCH_NAIVE + dt.timedelta(microseconds=v)).isoformat() + " (wall)"
    if n == "decimal":
        return format(v, "f")
    return repr(v)


# ---------------------------------------------------------------------- JSON form

def enc(v: Any, t: str) -> Any:
    if v is None:
        return None
    n = tinfo(t)[0]
    if n in ("double", "float"):
        return "NaN" if math.isnan(v) else ("Infinity" if v == math.inf else
                                            "-Infinity" if v == -math.inf else v.hex())
    if n == "decimal":
        return format(v, "f")
    if n == "date":
        return v.isoformat()
    return v


def dec_(v: Any, t: str) -> Any:
    if v is None:
        return None
    n = tinfo(t)[0]
    if n in ("double", "float"):
        return canon({"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v)
                     if v in ("NaN", "Infinity", "-Infinity") else float.fromhex(v), t)
    if n == "decimal":
        return canon(D(v), t)
    if n == "date":
        return dt.date.fromisoformat(v)
    return v


# ---------------------------------------------------------------------- SQL literals

def sql_string(s: str) -> str:
    """A Spark SQL string literal (backslash escapes are on by default)."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def java_double(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def sql_literal(v: Any, t: str, tz: str, style: int) -> str:
    """A SQL expression with the value ``v`` of type ``t`` (styles vary the literal form)."""
    n, p, s = tinfo(t)
    if v is None:
        return f"CAST(NULL AS {t.upper()})"
    if n in INT_BOUNDS:
        return str(v) if style % 2 == 0 else f"CAST('{v}' AS {n.upper()})"
    if n == "decimal":
        return f"CAST('{format(v, 'f')}' AS DECIMAL({p},{s}))"
    if n == "double":
        return f"CAST('{java_double(v)}' AS DOUBLE)"
    if n == "float":
        return f"CAST('{java_double(v)}' AS FLOAT)"
    if n == "string":
        return sql_string(v)
    if n == "boolean":
        return "true" if v else "false"
    if n == "date":
        return f"DATE '{v.isoformat()}'"
    if n == "timestamp":
        w = wall_micros(v, tz)
        if style % 2 == 0 and w is not None:
            text = (EPOCH_NAIVE + dt.timedelta(microseconds=w)).isoformat(sep=" ")
            return f"TIMESTAMP '{text}'"
        return f"timestamp_micros({v})"
    if n == "timestamp_ntz":
        text = (EPOCH_NAIVE + dt.timedelta(microseconds=v)).isoformat(sep=" ")
        return f"TIMESTAMP_NTZ '{text}'"
    raise AssertionError(t)


# ====================================================================== examples

@dataclass(frozen=True)
class Settings:
    max_distinct: int = 10000
    bloom: bool = True
    fpp: float = 0.01

    def conf(self) -> dict[str, str]:
        return {"spark.dpp.maxDistinctValues": str(self.max_distinct),
                "spark.dpp.bloomFilter.enabled": "true" if self.bloom else "false",
                "spark.dpp.bloomFilter.fpp": repr(self.fpp),
                "spark.dpp.waitTimeout": WAIT_TIMEOUT}


@dataclass(frozen=True)
class Example:
    """One fact table (partitions ``fact_values``, ``rows_per[i]`` rows each), one dimension
    key type with rows ``(key, a, g)``, a dimension filter (``{k}`` = the key column), and
    the SQL shape of the join."""

    kind: str
    tz: str
    fact_type: str
    dim_type: str
    fact_values: tuple
    rows_per: tuple
    dim_rows: tuple            # ((key, a, g), ...)
    filters: tuple             # conjunct templates over d.a, d.g and {k}
    shape: str
    fact_filters: tuple = ()   # conjuncts on f.p with literals (static pruning), or none

    # ------------------------------------------------------------------ JSON
    def to_json(self, settings: Optional[Settings] = None) -> str:
        d = {"kind": self.kind, "tz": self.tz, "fact_type": self.fact_type,
             "dim_type": self.dim_type,
             "fact_values": [enc(v, self.fact_type) for v in self.fact_values],
             "rows_per": list(self.rows_per),
             "dim_rows": [[enc(k, self.dim_type), a, g] for k, a, g in self.dim_rows],
             "filters": list(self.filters), "shape": self.shape}
        if self.fact_filters:
            d["fact_filters"] = list(self.fact_filters)
        if settings is not None:
            d["settings"] = dataclasses.asdict(settings)
        return json.dumps(d, ensure_ascii=True, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> tuple["Example", Optional[Settings]]:
        d = json.loads(text)
        ex = Example(kind=d["kind"], tz=d["tz"], fact_type=d["fact_type"],
                     dim_type=d["dim_type"],
                     fact_values=tuple(dec_(v, d["fact_type"]) for v in d["fact_values"]),
                     rows_per=tuple(d["rows_per"]),
                     dim_rows=tuple((dec_(k, d["dim_type"]), a, g) for k, a, g in d["dim_rows"]),
                     filters=tuple(d["filters"]), shape=d["shape"],
                     fact_filters=tuple(d.get("fact_filters", ())))
        st = Settings(**d["settings"]) if "settings" in d else None
        return ex, st

    def key(self) -> str:
        return self.to_json()

    def describe(self) -> str:
        lines = [f"  session time zone: {self.tz}",
                 f"  fact: partitioned by p {self.fact_type} (partition_types={{'p': "
                 f"'{self.fact_type}'}}), partitions:"]
        for v, r in zip(self.fact_values, self.rows_per):
            lines.append(f"      p = {show(v, self.fact_type)}  ({r} row{'s' * (r != 1)})")
        lines.append(f"  dimension key k: {self.dim_type}; rows (k, a, g):")
        for k, a, g in self.dim_rows:
            lines.append(f"      ({show(k, self.dim_type)}, {a}, {g!r})")
        if not self.dim_rows:
            lines.append("      (none)")
        lines.append(f"  join shape: {self.shape}; dimension filter: "
                     f"{' AND '.join(self.filters) or '(only d.e = <example>)'}"
                     + (f"; fact filter: {' AND '.join(self.fact_filters)}"
                        if self.fact_filters else ""))
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis's printer
        p.text(repr(self))

    def __repr__(self) -> str:  # hypothesis prints this; keep it short and re-runnable
        return f"Example.from_json({self.to_json()!r})[0]"


@dataclass(frozen=True)
class Batch:
    kind: str
    examples: tuple
    settings: tuple            # ((tz, Settings), ...)

    def settings_for(self, tz: str) -> Settings:
        return dict(self.settings)[tz]

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis's printer
        p.text(repr(self))

    def __repr__(self) -> str:
        tzs = Counter(e.tz for e in self.examples)
        return (f"Batch({self.kind}, {len(self.examples)} examples, "
                f"time zones {dict(tzs)}, settings {dict(self.settings)})")


# ====================================================================== hypothesis strategies

def strategies() -> Any:
    """The strategies, built lazily (hypothesis is a test-only dependency)."""
    from hypothesis import strategies as st

    def integral(n: str) -> Any:
        lo, hi = INT_BOUNDS[n]
        return st.one_of(st.sampled_from([lo, hi, 0, -1, 1, lo + 1, hi - 1]),
                         st.integers(lo, hi), st.integers(-20, 20))

    def decimal_values(p: int, s: int) -> Any:
        top = 10 ** p - 1
        units = st.one_of(st.sampled_from([top, -top, 0, 1, -1, 10 ** s, -(10 ** s)]),
                          st.integers(-top, top), st.integers(-1000, 1000))
        exact = decimal.Context(prec=100)   # the default 28 digits would round 38-digit values
        return units.filter(lambda u: abs(u) <= top).map(
            lambda u: canon(D(u).scaleb(-s, context=exact), dec(p, s)))

    double_specials = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.7976931348623157e308,
                       -1.7976931348623157e308, 5e-324, -5e-324, 2.2250738585072014e-308,
                       1.0, -1.0, 0.1, 0.5, 1e16, 9007199254740993.0, 123456789.0, 1e-7,
                       3.4028234663852886e38, 1.401298464324817e-45]

    def double_values(width: int) -> Any:
        t = "double" if width == 64 else "float"
        return st.one_of(st.sampled_from(double_specials),
                         st.floats(width=width),
                         st.integers(-1000, 1000).map(float)).map(lambda x: canon(x, t))

    string_specials = ["", "a/b", "x:y", "50%", "%25", "a=b", "#1", "__HIVE_DEFAULT_PARTITION__",
                       " ", " lead", "trail ", "ünï", "日本語", "🎉", "\\", "'", '"', "a%2Fb",
                       ".", "..", "null", "NULL", "1", "-0", "\t", "\n", "{[]}^*?", "\x7f",
                       "\x01", "é", "e\u0301", "Ω", "p=1", "/", ":", "%", "=", "#"]
    text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                   max_size=10)
    special_text = st.text(st.sampled_from("ab/:%=#\\'\" .ü{}[]*?^\x01\x7f_-"), max_size=8)

    def string_values() -> Any:
        return st.one_of(st.sampled_from(string_specials), text, special_text)

    dates = st.one_of(
        st.sampled_from([dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1),
                         dt.date(1969, 12, 31), dt.date(1582, 10, 4), dt.date(1582, 10, 15),
                         dt.date(1900, 3, 1), dt.date(2024, 2, 29), dt.date(2024, 3, 10),
                         dt.date(2024, 11, 3)]),
        st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)),
        st.dates(dt.date(2023, 1, 1), dt.date(2025, 12, 31)))

    def us(*a: int) -> int:
        return _utc_micros(dt.datetime(*a, tzinfo=dt.timezone.utc))

    ts_specials = [
        MIN_US, MAX_US, 0, -1, 1,
        us(2024, 3, 10, 10, 30),            # "2024-03-10 02:30" in Los Angeles: in the gap
        us(2024, 3, 10, 9, 59, 59, 999999), us(2024, 3, 10, 10, 0), us(2024, 3, 10, 11, 0),
        us(2024, 11, 3, 8, 30),             # 2024-11-03 01:30 PDT
        us(2024, 11, 3, 9, 30),             # 2024-11-03 01:30 PST (same wall clock)
        us(2024, 11, 3, 8, 0), us(2024, 11, 3, 9, 0), us(2024, 11, 3, 7, 59, 59),
        us(2024, 1, 1, 18, 30),             # Kolkata midnight
        us(2024, 1, 1, 8), us(2024, 1, 1), us(1582, 10, 15), us(1582, 10, 4),
        us(1900, 1, 1), us(1941, 10, 1), us(1945, 10, 15),   # Kolkata's historic offsets
        us(2000, 2, 29, 12, 0, 0, 123456),
    ]

    def timestamp_values() -> Any:
        return st.one_of(
            st.sampled_from(ts_specials),
            st.integers(MIN_US, MAX_US),
            st.integers(us(2024, 3, 9), us(2024, 3, 12)).map(lambda x: x - x % 1_800_000_000),
            st.integers(us(2024, 11, 2), us(2024, 11, 5)).map(lambda x: x - x % 1_800_000_000),
            st.integers(us(1970, 1, 1), us(2030, 1, 1)).map(lambda x: x - x % 1_000_000))

    def values(t: str) -> Any:
        n, p, s = tinfo(t)
        if n in INT_BOUNDS:
            return integral(n)
        if n == "decimal":
            return decimal_values(p, s)  # type: ignore[arg-type]
        if n == "double":
            return double_values(64)
        if n == "float":
            return double_values(32)
        if n == "string":
            return string_values()
        if n == "date":
            return dates
        if n in ("timestamp", "timestamp_ntz"):
            return timestamp_values()
        if n == "boolean":
            return st.booleans()
        raise AssertionError(t)

    def nullable(t: str) -> Any:
        v = values(t)
        return st.one_of(v, st.none(), v, v)

    settings_st = st.builds(Settings, max_distinct=st.sampled_from([10000, 1, 2, 3]),
                            bloom=st.booleans(), fpp=st.sampled_from([0.01, 0.3]))

    @st.composite
    def literal_for(draw: Any, kt: str, keys: list, tz: str) -> str:
        pool = [k for k in keys if k is not None]
        v = draw(st.sampled_from(pool)) if pool and draw(st.booleans()) else draw(values(kt))
        return sql_literal(v, kt, tz, draw(st.integers(0, 3)))

    @st.composite
    def atom(draw: Any, kt: str, keys: list, tz: str) -> str:
        n = tinfo(kt)[0]
        choice = draw(st.integers(0, 13))
        a = draw(st.integers(0, 4))
        if choice == 0:
            return f"d.a < {a}"
        if choice == 1:
            return f"d.a >= {a}"
        if choice == 2:
            return f"d.a IN ({a}, {draw(st.integers(0, 4))})"
        if choice == 3:
            return f"d.g = '{draw(st.sampled_from('xyz'))}'"
        if choice == 4:
            return f"(d.a = {a} OR d.g = '{draw(st.sampled_from('xyz'))}')"
        if choice == 5:
            return f"d.a BETWEEN {a} AND {a + draw(st.integers(0, 2))}"
        if choice == 6:
            return f"NOT (d.g = '{draw(st.sampled_from('xyz'))}')"
        if choice == 7:
            return "{k} IS NOT NULL"
        if choice == 8:
            return "{k} IS NULL" if draw(st.booleans()) else "({k} IS NULL OR d.a < 3)"
        lit = draw(literal_for(kt, keys, tz))
        if choice == 9:
            return "{k} = " + lit
        if choice == 10:
            return "{k} <> " + lit
        if choice == 11:
            return "{k} IN (" + lit + ", " + draw(literal_for(kt, keys, tz)) + ")"
        if choice == 12 and n != "boolean":
            return "{k} " + draw(st.sampled_from(["<", "<=", ">", ">="])) + " " + lit
        return "({k} = " + lit + f" OR d.a = {a})"

    @st.composite
    def fact_literal(draw: Any, ft: str, values_: list, tz: str) -> str:
        """A literal the planner turns into a static domain: typed, or a string literal
        Spark casts to the column's type (in the session time zone for timestamps)."""
        pool = [v for v in values_ if v is not None]
        v = draw(st.sampled_from(pool)) if pool and draw(st.booleans()) else draw(values(ft))
        n = tinfo(ft)[0]
        if draw(st.booleans()):
            if n == "timestamp":
                w = wall_micros(v, tz)
                if w is not None:
                    return sql_string((EPOCH_NAIVE + dt.timedelta(microseconds=w))
                                      .isoformat(sep=" "))
            if n == "date":
                return sql_string(v.isoformat())
            if n in INT_BOUNDS:
                return sql_string(str(v))
        return sql_literal(v, ft, tz, draw(st.integers(0, 3)))

    @st.composite
    def fact_atom(draw: Any, ft: str, values_: list, tz: str) -> str:
        n = tinfo(ft)[0]
        choice = draw(st.integers(0, 7))
        if choice == 0:
            return "f.p IS NOT NULL"
        lit = draw(fact_literal(ft, values_, tz))
        if choice == 1:
            return f"f.p = {lit}"
        if choice == 2:
            return f"f.p <> {lit}"
        if choice == 3:
            return f"f.p IN ({lit}, {draw(fact_literal(ft, values_, tz))})"
        if choice == 4:
            return f"(f.p = {lit} OR f.p = {draw(fact_literal(ft, values_, tz))})"
        if n == "boolean":
            return f"f.p = {lit}"
        if choice == 5:
            return f"f.p {draw(st.sampled_from(['<', '<=', '>', '>=']))} {lit}"
        if choice == 6:
            return f"f.p BETWEEN {lit} AND {draw(fact_literal(ft, values_, tz))}"
        return f"f.p >= {lit}"

    @st.composite
    def example(draw: Any, kind: str, fact_types: Sequence[str]) -> Example:
        tz = draw(st.sampled_from(TIME_ZONES))
        ft = draw(st.sampled_from(fact_types))
        modelled, other = dim_type_choices(ft)
        kt = draw(st.one_of(st.just(ft), st.just(ft),
                            *([st.sampled_from(modelled)] if modelled else []),
                            *([st.sampled_from(other)] if other else [])))
        raw = draw(st.lists(nullable(ft), min_size=1, max_size=5))
        seen, fact_values = set(), []
        for v in raw:
            fk = folder_key(v, ft, tz)
            if fk not in seen:
                seen.add(fk)
                fact_values.append(v)
        rows_per = tuple(draw(st.lists(st.integers(1, 2), min_size=len(fact_values),
                                       max_size=len(fact_values))))
        n_dim = draw(st.one_of(st.integers(1, 7), st.integers(1, 7), st.just(0)))
        dim_rows = []
        for _ in range(n_dim):
            how = draw(st.integers(0, 7))
            if how <= 4:
                k = convert(draw(st.sampled_from(fact_values)), ft, kt, tz)
            elif how <= 6:
                k = draw(values(kt))
            else:
                k = None
            a = draw(st.one_of(st.integers(0, 4), st.integers(0, 4), st.none()))
            dim_rows.append((canon(k, kt), a, draw(st.sampled_from("xyz"))))
        keys = [k for k, _, _ in dim_rows]
        # most build sides should keep some keys: an empty one (domain NONE) is one case only
        filters = tuple(draw(st.one_of(st.just([]), st.lists(atom(kt, keys, tz), max_size=1),
                                       st.lists(atom(kt, keys, tz), max_size=2))))
        shape = draw(st.sampled_from(SHAPES))
        fact_filters = ()
        if draw(st.integers(0, 2)) == 0:   # a third of the examples: static pruning as well
            fact_filters = (draw(fact_atom(ft, fact_values, tz)),)
        return Example(kind=kind, tz=tz, fact_type=ft, dim_type=kt,
                       fact_values=tuple(fact_values), rows_per=rows_per,
                       dim_rows=tuple(dim_rows), filters=filters, shape=shape,
                       fact_filters=fact_filters)

    @st.composite
    def batch(draw: Any, kind: str, size: int) -> Batch:
        if kind == "decimal":
            # a few decimal types per batch: each costs a Spark write of its own
            fact_types = [dec(p, s) for p, s in draw(st.lists(
                st.sampled_from(DECIMAL_TYPES), min_size=1, max_size=3, unique=True))]
        else:
            fact_types = [kind]
        exs = draw(st.lists(example(kind, fact_types), min_size=size, max_size=size))
        sts = draw(st.tuples(*[st.tuples(st.just(tz), settings_st) for tz in TIME_ZONES]))
        return Batch(kind, tuple(exs), tuple(sts))

    return batch


# ====================================================================== running



@dataclass
class ExampleOutcome:
    index: int
    example: Example
    missing: list = field(default_factory=list)     # rows Spark returns and dpp does not
    extra: list = field(default_factory=list)       # rows dpp returns and Spark does not
    error: Optional[str] = None                     # dpp raised, Spark did not
    table_report: Optional[dict] = None
    filters: list = field(default_factory=list)
    # the same query as plain spark.sql through dpp's optimizer hook (HOOK_RUNS)
    hook_missing: list = field(default_factory=list)
    hook_extra: list = field(default_factory=list)
    hook_error: Optional[str] = None

    @property
    def failed(self) -> bool:
        return bool(self.missing or self.extra or self.error or self.hook_missing
                    or self.hook_extra or self.hook_error)

    @property
    def pruned(self) -> bool:
        t = self.table_report or {}
        return bool(t.get("pruned_dynamic")) or bool(t.get("pruned_static"))

    def signature(self) -> str:
        if self.error:
            return "error: " + self.error.splitlines()[0][:120]
        if self.missing or self.extra:
            return ("dropped rows" if self.missing else "") + \
                   (" and " if self.missing and self.extra else "") + \
                   ("extra rows" if self.extra else "")
        if self.hook_error:
            return "optimizer hook error: " + self.hook_error.splitlines()[0][:120]
        return "optimizer hook: " + ("dropped rows" if self.hook_missing else "") + \
               (" and " if self.hook_missing and self.hook_extra else "") + \
               ("extra rows" if self.hook_extra else "")


@dataclass
class GroupResult:
    tz: str
    settings: Settings
    query: str
    outcomes: list
    seconds: float
    report: Optional[dict] = None
    phases: dict = field(default_factory=dict)


def example_sql(i: int, ex: Example, fact: str, dim: str) -> str:
    k = f"d.k_{slug(ex.dim_type)}"
    conj = [f"d.e = {i}"] + [f.replace("{k}", k) for f in ex.filters]
    flt = " AND ".join(conj)
    ff = "".join(f" AND {f}" for f in ex.fact_filters)
    fw = f" WHERE {' AND '.join(ex.fact_filters)}" if ex.fact_filters else ""
    cols = f"{i} AS ex, f.id AS fid, d.id AS did, CAST(f.p AS STRING) AS pv"
    semi_cols = f"{i} AS ex, f.id AS fid, CAST(NULL AS BIGINT) AS did, CAST(f.p AS STRING) AS pv"
    s = ex.shape
    if s == "join_where":
        return f"SELECT {cols} FROM {fact} f JOIN {dim} d ON f.p = {k} WHERE {flt}{ff}"
    if s == "join_on":
        return f"SELECT {cols} FROM {fact} f JOIN {dim} d ON f.p = {k} AND {flt}{fw}"
    if s == "comma":
        return f"SELECT {cols} FROM {fact} f, {dim} d WHERE f.p = {k} AND {flt}{ff}"
    if s == "dim_first":
        return f"SELECT {cols} FROM {dim} d JOIN {fact} f ON {k} = f.p WHERE {flt}{ff}"
    if s == "in":
        return (f"SELECT {semi_cols} FROM {fact} f WHERE f.p IN "
                f"(SELECT {k} FROM {dim} d WHERE {flt}){ff}")
    if s == "exists":
        return (f"SELECT {semi_cols} FROM {fact} f WHERE EXISTS "
                f"(SELECT 1 FROM {dim} d WHERE {k} = f.p AND {flt}){ff}")
    if s == "semi":
        return (f"SELECT {semi_cols} FROM {fact} f LEFT SEMI JOIN {dim} d ON f.p = {k} "
                f"AND {flt}{fw}")
    if s == "right":
        return f"SELECT {cols} FROM {fact} f RIGHT JOIN {dim} d ON f.p = {k} WHERE {flt}{ff}"
    if s == "left_dim":
        return f"SELECT {cols} FROM {dim} d LEFT JOIN {fact} f ON {k} = f.p WHERE {flt}{ff}"
    raise AssertionError(s)


def _rows(rows: Sequence[Any]) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for r in rows:
        out.setdefault(int(r[0]), Counter())[(r[1], r[2], r[3])] += 1
    return out


def run_examples(spark: Any, workdir: Path, items: Sequence[tuple[int, Example]],
                 settings_by_tz: Mapping[str, Settings]) -> list[GroupResult]:
    """Writes the examples' tables (one Spark write per fact type — and, for timestamps, per
    session time zone, since the folder text is the instant in that zone — plus one write of
    all dimension rows), then runs one query per time zone through dpp and through plain
    Spark, and compares the rows per example."""
    phases: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(name: str) -> Iterator[None]:
        ts = time.perf_counter()
        try:
            yield
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - ts

    t0 = time.perf_counter()
    gid = uuid.uuid4().hex[:10]
    gdir = workdir / f"g{gid}"
    dim_view = f"pp_dim_{gid}"
    names = {i: f"pp_fact_{gid}_{i}" for i, _ in items}
    paths: dict[int, str] = {}
    out: list[GroupResult] = []
    try:
        # ---- facts: one write per (type, zone the folder text depends on); e = example index
        writes: dict[tuple[str, str], list[tuple[int, Example]]] = {}
        for i, ex in items:
            wtz = ex.tz if tinfo(ex.fact_type)[0] == "timestamp" else "UTC"
            writes.setdefault((ex.fact_type, wtz), []).append((i, ex))
        next_id = 1
        for j, ((ft, wtz), group) in enumerate(sorted(writes.items())):
            rows = []
            for i, ex in group:
                for v, r in zip(ex.fact_values, ex.rows_per):
                    for _ in range(r):
                        rows.append((i, next_id, to_spark(v, ft)))
                        next_id += 1
            root = gdir / f"fact{j}"
            with phase("write"), spark_conf(spark, {TZ_KEY: wtz}):
                (spark.createDataFrame(rows, f"e int, id bigint, p {ft}").coalesce(1)
                 .write.partitionBy("e", "p").parquet(str(root)))
            for i, _ in group:
                paths[i] = str(root / f"e={i}")
        # ---- dimension: one table, one key column per key type (values are zone-free)
        ktypes = sorted({ex.dim_type for _, ex in items})
        ddl = "e int, id bigint, a int, g string" + "".join(
            f", k_{slug(kt)} {kt}" for kt in ktypes)
        dpath = gdir / "dim"
        with phase("write"):
            # the dimension is not partitioned: pyarrow writes it (a Spark write costs ~1 s)
            write_dim(dpath, items, ktypes)
        spark.read.schema(ddl).parquet(str(dpath)).createOrReplaceTempView(dim_view)
        for tz in TIME_ZONES:
            group = [(i, ex) for i, ex in items if ex.tz == tz]
            if group:
                out.append(_query_group(spark, group, tz, settings_by_tz[tz], names, paths,
                                        dim_view, phase))
    finally:
        for v in [dim_view, *names.values()]:
            with contextlib.suppress(Exception):
                spark.catalog.dropTempView(v)
        shutil.rmtree(gdir, ignore_errors=True)
    total = time.perf_counter() - t0
    for g in out:  # shared costs split by examples, so sums stay right
        g.seconds = total * len(g.outcomes) / len(items)
        g.phases = {k: v * len(g.outcomes) / len(items) for k, v in phases.items()}
    return out


def arrow_type(t: str) -> Any:
    import pyarrow as pa

    n, p, s = tinfo(t)
    if n == "decimal":
        return pa.decimal128(p, s)
    return {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
            "bigint": pa.int64(), "double": pa.float64(), "float": pa.float32(),
            "string": pa.string(), "boolean": pa.bool_(), "date": pa.date32(),
            # instants (isAdjustedToUTC) and wall clocks, both as micros: exact
            "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us")}[n]


def write_dim(path: Path, items: Sequence[tuple[int, Example]], ktypes: Sequence[str]) -> None:
    """All dimension rows of the examples in one Parquet file: ``e`` (example), ``id``,
    ``a``, ``g`` and one key column per key type (NULL in the other examples' rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list] = {"e": [], "id": [], "a": [], "g": []}
    cols.update({f"k_{slug(kt)}": [] for kt in ktypes})
    did = 1
    for i, ex in items:
        for k, a, g in ex.dim_rows:
            cols["e"].append(i)
            cols["id"].append(did)
            cols["a"].append(a)
            cols["g"].append(g)
            for kt in ktypes:
                cols[f"k_{slug(kt)}"].append(k if kt == ex.dim_type else None)
            did += 1
    schema = pa.schema([("e", pa.int32()), ("id", pa.int64()), ("a", pa.int32()),
                        ("g", pa.string())] + [(f"k_{slug(kt)}", arrow_type(kt))
                                               for kt in ktypes])
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols, schema=schema), str(path / "part-0.parquet"))


def _query_group(spark: Any, items: Sequence[tuple[int, Example]], tz: str,
                 settings: Settings, names: Mapping[int, str], paths: Mapping[int, str],
                 dim_view: str, phase: Any) -> GroupResult:
    from dpp import DppSession

    query = "\nUNION ALL\n".join(example_sql(i, ex, names[i], dim_view) for i, ex in items)
    dpp_rows: Optional[list] = None
    dpp_error: Optional[str] = None
    report: Optional[dict] = None
    with spark_conf(spark, {TZ_KEY: tz}):
        # ---- through dpp (Spark's own pruning left as the user has it)
        with spark_conf(spark, settings.conf()):
            session = DppSession(spark)
            try:
                for i, ex in items:
                    session.register_table(names[i], paths[i],
                                           partition_types={"p": ex.fact_type})
                with phase("dpp.sql"):
                    df = session.sql(query)
                with phase("dpp collect"):
                    dpp_rows = df.collect()
            except Exception as exc:  # noqa: BLE001 - reported as the failure
                dpp_error = f"{type(exc).__name__}: {exc}"
            finally:
                if session.last_report is not None:
                    report = session.last_report.to_dict()
                session.close()
        # ---- through the optimizer hook: plain spark.sql, the tables as its lazy views
        hook_rows: Optional[list] = None
        hook_error: Optional[str] = None
        if HOOK_RUNS:
            with spark_conf(spark, settings.conf()):
                hooked = DppSession(spark)
                try:
                    from dpp.frontends.hook.optimizer_hook import OptimizerHook

                    for i, ex in items:
                        hooked.register_table(names[i], paths[i],
                                              partition_types={"p": ex.fact_type})
                    hooked.optimizer_hook = OptimizerHook(hooked)
                    hooked.ensure_views([names[i] for i, _ in items])
                    with phase("optimizer hook"):
                        hook_rows = spark.sql(query).collect()
                except Exception as exc:  # noqa: BLE001 - reported as the failure
                    hook_error = f"{type(exc).__name__}: {exc}"
                finally:
                    hooked.close()
        # ---- the reference: plain Spark over spark.read.parquet(path), pruning off
        for i, ex in items:
            (spark.read.schema(f"id bigint, p {ex.fact_type}").parquet(paths[i])
             .createOrReplaceTempView(names[i]))
        with spark_conf(spark, PRUNING_OFF):
            try:
                with phase("reference"):
                    ref_rows = spark.sql(query).collect()
            except Exception as exc:
                raise HarnessError(f"the reference query failed in Spark (a test generator "
                                   f"bug): {exc}\n{query}") from exc
        for i, _ in items:
            with contextlib.suppress(Exception):
                spark.catalog.dropTempView(names[i])
    ref = _rows(ref_rows)
    got = _rows(dpp_rows) if dpp_rows is not None else {}
    hooked_rows = _rows(hook_rows) if hook_rows is not None else {}
    tables = {t["table"]: t for t in (report or {}).get("tables", [])}
    filters = {f["filter_id"]: f for f in (report or {}).get("filters", [])}
    outcomes = []
    for i, ex in items:
        o = ExampleOutcome(i, ex)
        if dpp_error is not None:
            o.error = dpp_error
        else:
            r, g = ref.get(i, Counter()), got.get(i, Counter())
            o.missing = sorted((r - g).elements(), key=repr)
            o.extra = sorted((g - r).elements(), key=repr)
        if hook_error is not None:
            o.hook_error = hook_error
        elif HOOK_RUNS:
            r, h = ref.get(i, Counter()), hooked_rows.get(i, Counter())
            o.hook_missing = sorted((r - h).elements(), key=repr)
            o.hook_extra = sorted((h - r).elements(), key=repr)
        o.table_report = tables.get(names[i])
        if o.table_report:
            o.filters = [filters.get(f["filter_id"], f) for f in o.table_report.get("filters", [])]
        outcomes.append(o)
    return GroupResult(tz, settings, query, outcomes, 0.0, report)


class HarnessError(AssertionError):
    pass


def run_batch(spark: Any, workdir: Path, batch: Batch) -> list[GroupResult]:
    return run_examples(spark, workdir, list(enumerate(batch.examples)), dict(batch.settings))


def dedupe(batch: Batch) -> Batch:
    """Drops repeated examples (hypothesis's first batch is the simplest example, repeated)."""
    seen, keep = set(), []
    for ex in batch.examples:
        if ex.key() not in seen:
            seen.add(ex.key())
            keep.append(ex)
    return dataclasses.replace(batch, examples=tuple(keep))


# ====================================================================== failures

def run_one(spark: Any, workdir: Path, ex: Example, settings: Settings) -> ExampleOutcome:
    return run_examples(spark, workdir, [(0, ex)], {ex.tz: settings})[0].outcomes[0]


def _candidates(ex: Example, st: Settings) -> Iterator[tuple[Example, Settings]]:
    """Simpler variants of a failing example, most simplifying first."""
    if ex.shape != "join_where":
        yield dataclasses.replace(ex, shape="join_where"), st
    if ex.fact_filters:
        yield dataclasses.replace(ex, fact_filters=()), st
    for i in range(len(ex.filters)):
        yield dataclasses.replace(ex, filters=ex.filters[:i] + ex.filters[i + 1:]), st
    for i in range(len(ex.fact_values)):
        if len(ex.fact_values) > 1:
            yield dataclasses.replace(
                ex, fact_values=ex.fact_values[:i] + ex.fact_values[i + 1:],
                rows_per=ex.rows_per[:i] + ex.rows_per[i + 1:]), st
    for i in range(len(ex.dim_rows)):
        yield dataclasses.replace(ex, dim_rows=ex.dim_rows[:i] + ex.dim_rows[i + 1:]), st
    if any(r != 1 for r in ex.rows_per):
        yield dataclasses.replace(ex, rows_per=tuple(1 for _ in ex.rows_per)), st
    if st != Settings():
        for simpler in (dataclasses.replace(st, max_distinct=10000),
                        dataclasses.replace(st, bloom=True), dataclasses.replace(st, fpp=0.01)):
            if simpler != st:
                yield ex, simpler
    if ex.dim_type != ex.fact_type:
        back = [convert_back(k, ex) for k, _, _ in ex.dim_rows]
        if all(b is not None or k is None for b, (k, _, _) in zip(back, ex.dim_rows)):
            rows = tuple((b, a, g) for b, (_, a, g) in zip(back, ex.dim_rows))
            yield dataclasses.replace(ex, dim_type=ex.fact_type, dim_rows=rows,
                                      filters=tuple(f for f in ex.filters if "{k}" not in f)), st
    for i, (k, a, g) in enumerate(ex.dim_rows):
        if a is not None or g != "x":
            rows = list(ex.dim_rows)
            rows[i] = (k, None if not any("d.a" in f for f in ex.filters) else a,
                       "x" if not any("d.g" in f for f in ex.filters) else g)
            if tuple(rows) != ex.dim_rows:
                yield dataclasses.replace(ex, dim_rows=tuple(rows)), st


def convert_back(k: Any, ex: Example) -> Any:
    """A dimension key re-typed as the fact type, when that is exact (for shrinking)."""
    if k is None:
        return None
    c = convert(k, ex.dim_type, ex.fact_type, ex.tz)
    return canon(c, ex.fact_type) if c is not None else None


def shrink(spark: Any, workdir: Path, ex: Example, st: Settings, budget_s: float
           ) -> tuple[Example, Settings, ExampleOutcome, int, bool]:
    """Greedy shrinking by re-running alone; (example, settings, outcome, runs, alone_fails)."""
    deadline = time.monotonic() + budget_s
    first = run_one(spark, workdir, ex, st)
    runs = 1
    if not first.failed:
        return ex, st, first, runs, False
    best, best_st, best_out = ex, st, first
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for cand, cst in _candidates(best, best_st):
            if time.monotonic() >= deadline:
                break
            try:
                out = run_one(spark, workdir, cand, cst)
            except HarnessError:
                continue
            runs += 1
            if out.failed and out.signature().split(":")[0] == best_out.signature().split(":")[0]:
                best, best_st, best_out = cand, cst, out
                improved = True
                break
    return best, best_st, best_out, runs, True


def describe_outcome(o: ExampleOutcome) -> str:
    lines = []
    if o.error:
        lines.append(f"  dpp.sql raised (Spark returned rows): {o.error[:600]}")

    def row(r: tuple) -> str:
        fid, did, pv = r
        return f"fact id {fid} (p = {pv!r}) ⋈ dim id {did}"
    if o.missing:
        lines.append(f"  DROPPED by dpp ({len(o.missing)}): " + "; ".join(map(row, o.missing[:8])))
    if o.extra:
        lines.append(f"  EXTRA from dpp ({len(o.extra)}): " + "; ".join(map(row, o.extra[:8])))
    t = o.table_report
    if t:
        lines.append(f"  dpp table report: pruning={t.get('pruning')}, kept "
                     f"{t.get('partitions_kept')}/{t.get('partitions_total')} partitions "
                     f"(static {t.get('pruned_static')}, dynamic {t.get('pruned_dynamic')})"
                     + (f", reason: {t.get('reason')}" if t.get("reason") else ""))
    for f in o.filters:
        lines.append(f"  filter {f.get('filter_id')}: kind={f.get('kind')}, "
                     f"outcome={f.get('outcome')}, distinct={f.get('distinct_values')}, "
                     f"build={f.get('build_query')!r}"
                     + (f", reason: {f.get('reason')}" if f.get("reason") else ""))
    return "\n".join(lines)


def _bisect_errors(spark: Any, workdir: Path, g: GroupResult, deadline: float
                   ) -> list[ExampleOutcome]:
    """Examples of a group whose query raised, narrowed by bisection to those that fail on
    their own (or, in chunks that do not raise, that lose or add rows)."""
    found: list[ExampleOutcome] = []

    def rec(chunk: list[tuple[int, Example]]) -> None:
        if time.monotonic() > deadline:
            return
        try:
            res = run_examples(spark, workdir, chunk, {g.tz: g.settings})[0]
        except HarnessError:
            return
        if not any(o.error for o in res.outcomes) or len(chunk) == 1:
            found.extend(o for o in res.outcomes if o.failed)
            return
        mid = len(chunk) // 2
        rec(chunk[:mid])
        rec(chunk[mid:])

    items = [(o.index, o.example) for o in g.outcomes]
    mid = len(items) // 2
    rec(items[:mid])
    rec(items[mid:])
    return found


def failure_report(spark: Any, workdir: Path, batch: Batch, results: list[GroupResult],
                   shrink_budget_s: float, max_reported: int = 3) -> str:
    """The failure message: each distinct failure (by kind of difference), re-run alone and
    shrunk, with a reproducer."""
    failed = []
    for g in results:
        if any(o.error for o in g.outcomes) and len(g.outcomes) > 1:
            # the whole query raised: find the examples that raise on their own
            found = _bisect_errors(spark, workdir, g, time.monotonic() + shrink_budget_s)
            failed.extend((g, o) for o in found)
            if found:
                continue
        failed.extend((g, o) for o in g.outcomes if o.failed)
    by_sig: dict[tuple, tuple[GroupResult, ExampleOutcome]] = {}
    for g, o in failed:
        sig = (o.example.tz, o.example.fact_type, o.example.dim_type, o.signature()[:40])
        by_sig.setdefault(sig, (g, o))
    n_total = sum(len(g.outcomes) for g in results)
    parts = [f"dpp.sql(q) != spark.sql(q) without pruning for {len(failed)} of {n_total} "
             f"{batch.kind} examples of {batch!r}; {len(by_sig)} distinct failure(s), "
             f"{min(len(by_sig), max_reported)} shown"]
    for n, (g, o) in enumerate(list(by_sig.values())[:max_reported]):
        ex, st = o.example, g.settings
        parts.append(f"\n--- failure {n + 1}: example #{o.index} ({o.signature()}) under "
                     f"{g.tz}, settings {st}")
        parts.append(ex.describe())
        parts.append(describe_outcome(o))
        parts.append("  its branch of the batch query:\n    " +
                     example_sql(o.index, ex, f"pp_fact_<g>_{o.index}", "pp_dim_<g>"))
        try:
            sex, sst, sout, runs, alone = shrink(spark, workdir, ex, st, shrink_budget_s)
        except Exception as exc:  # noqa: BLE001 - the original failure still stands
            parts.append(f"  (re-running it alone failed: {type(exc).__name__}: {exc})")
            continue
        if not alone:
            parts.append("  NOTE: this example passes when run alone: the failure needs the "
                         "batch (several filters / tables in one query). Batch query:\n" +
                         g.query[:4000])
            continue
        parts.append(f"  minimal reproducer ({runs} runs alone; settings {sst}):")
        parts.append(sex.describe())
        parts.append(describe_outcome(sout))
        parts.append("  query: " + example_sql(0, sex, "pp_fact", "pp_dim"))
        parts.append("  re-run: python -m tests.prune_property_support " +
                     _shell_quote(sex.to_json(sst)))
    return "\n".join(parts)


def _shell_quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


# ====================================================================== CLI reproducer

def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    ex, st = Example.from_json(argv[0])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("dpp-repro")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config(TZ_KEY, "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(f"/tmp/dpp-repro-{uuid.uuid4().hex[:8]}")
    try:
        g = run_examples(spark, work, [(0, ex)], {ex.tz: st or Settings()})[0]
        o = g.outcomes[0]
        print(g.query)
        print(ex.describe())
        print(describe_outcome(o))
        print(f"RESULT: {'FAILED: ' + o.signature() if o.failed else 'rows equal'}")
        return 1 if o.failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
