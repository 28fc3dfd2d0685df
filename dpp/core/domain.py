"""The domain algebra: the one language filters speak between build side and probe side.

Modelled on Trino's ``TupleDomain``: a :class:`Domain` is a set of values of one column type
plus whether NULL is allowed; a :class:`TupleDomain` maps column names to domains, or is NONE
(no row can match). Every operation is *sound*: it may keep more values than the exact answer,
never fewer, so pruning by a domain can never drop a row that matches. Only the bloom kind is
approximate, and only in the direction of "maybe".

Values are held internally as *keys* (see :meth:`DataType.key`) so that ordering and equality
follow Spark's semantics, including the NaN rule for doubles: NaN equals NaN and sorts above
every other value, +Infinity included; -0.0 equals 0.0.

This module imports nothing of the project but :mod:`dpp.core.errors`, so every package can use
it without pulling in the session.
"""
from __future__ import annotations

import base64
import bisect
import datetime as dt
import decimal
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from dpp.core.errors import DomainError

__all__ = [
    "DataType", "Range", "Domain", "TupleDomain",
    "INT", "BIGINT", "SMALLINT", "TINYINT", "STRING", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ",
    "BOOLEAN", "DOUBLE", "FLOAT", "decimal_type",
]

_INT_BOUNDS = {
    "tinyint": (-(2 ** 7), 2 ** 7 - 1),
    "smallint": (-(2 ** 15), 2 ** 15 - 1),
    "int": (-(2 ** 31), 2 ** 31 - 1),
    "bigint": (-(2 ** 63), 2 ** 63 - 1),
}
_KINDS = frozenset(_INT_BOUNDS) | {"string", "date", "timestamp", "timestamp_ntz", "boolean",
                                   "double", "float", "decimal"}
_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint",
            "bool": "boolean", "varchar": "string", "real": "float",
            "timestamp_ltz": "timestamp", "str": "string"}
# CHAR(n) is not STRING: Spark pads its values to n characters on read, so folder text and
# keys would compare differently; it has no domain type (never pruned by).
_DECIMAL_RE = re.compile(r"^decimal\s*\(\s*([0-9]{1,4})\s*,\s*([0-9]{1,4})\s*\)\Z")
# ASCII digits only, and no trailing newline: Spark reads "١٢" or "1_0" as NULL, not as a
# number, so accepting them here would place a folder at the wrong value.
_INT_TEXT_RE = re.compile(r"^[+-]?[0-9]+\Z")
_DATE_TEXT_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_TS_TEXT_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([ T]|\Z)")
_NAN_KEY = (1, 0.0)


@dataclass(frozen=True)
class DataType:
    """A column type as Spark names it (``int``, ``decimal(7,2)``, ...).

    Owns every per-type rule: validating Python values, reading folder text, the ordering key,
    the stable text a bloom filter hashes, and the JSON form used by the wire codec.
    """

    name: str
    precision: Optional[int] = None
    scale: Optional[int] = None

    def __post_init__(self) -> None:
        if self.name not in _KINDS:
            raise DomainError(f"unsupported column type {self.name!r}; expected one of "
                              f"{sorted(_KINDS)}")
        if self.name == "decimal":
            p, s = self.precision, self.scale
            if p is None or s is None or not (1 <= p <= 38) or not (0 <= s <= p):
                raise DomainError(f"decimal type needs 1 <= precision <= 38 and "
                                  f"0 <= scale <= precision, got decimal({p},{s})")
        elif self.precision is not None or self.scale is not None:
            raise DomainError(f"type {self.name!r} takes no precision or scale")

    # ------------------------------------------------------------------ names
    @staticmethod
    def parse(text: str) -> "DataType":
        """Reads Spark's ``simpleString`` form: ``int``, ``bigint``, ``decimal(7,2)``, ..."""
        if isinstance(text, DataType):
            return text
        if not isinstance(text, str):
            raise DomainError(f"a type name must be a string, got {text!r}")
        t = text.strip().lower()
        m = _DECIMAL_RE.match(t)
        if m:
            try:
                return DataType("decimal", int(m.group(1)), int(m.group(2)))
            except DomainError as exc:
                raise DomainError(f"unsupported column type {text!r}: {exc}") from None
        if t == "decimal":
            return DataType("decimal", 10, 0)
        t = _ALIASES.get(t, t)
        if t not in _KINDS or t == "decimal":
            raise DomainError(f"unsupported column type {text!r}; expected one of "
                              f"{sorted(_KINDS - {'decimal'}) + ['decimal(p,s)']}")
        return DataType(t)

    @staticmethod
    def from_catalog(text: str) -> "DataType":
        """The domain type of a Spark type as its ``simpleString`` or a catalog names it.

        ``varchar(n)`` values read back as written, so they are strings; ``char(n)`` values
        are padded by Spark on read and compared padded, so no domain type stands for them
        (a :class:`DomainError`, like every type without one: arrays, maps, binary, ...).
        """
        if not isinstance(text, str):
            raise DomainError(f"a type name must be a string, got {text!r}")
        t = text.strip().lower()
        if re.match(r"^varchar\s*\(\s*[0-9]+\s*\)\Z", t):
            return STRING
        if re.match(r"^char\s*\(\s*[0-9]+\s*\)\Z", t):
            raise DomainError(f"type {text!r}: CHAR(n) values are padded by Spark on read and "
                              f"compared padded; no domain type stands for them")
        return DataType.parse(t)

    @staticmethod
    def from_spark(spark_type: Any) -> "DataType":
        """The domain type of a PySpark ``DataType`` (``IntegerType()``, ...)."""
        return DataType.from_catalog(spark_type.simpleString())

    @staticmethod
    def from_arrow(arrow_type: Any) -> "DataType":
        """The domain type of an Arrow type as Spark hands batches to Python: TIMESTAMP comes
        with the session zone attached, TIMESTAMP_NTZ with none."""
        import pyarrow as pa  # the algebra itself needs no pyarrow

        t = arrow_type
        if pa.types.is_dictionary(t):
            return DataType.from_arrow(t.value_type)
        simple = {pa.int8(): TINYINT, pa.int16(): SMALLINT, pa.int32(): INT,
                  pa.int64(): BIGINT, pa.date32(): DATE, pa.bool_(): BOOLEAN,
                  pa.float64(): DOUBLE, pa.float32(): FLOAT}
        if t in simple:
            return simple[t]
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return STRING
        if pa.types.is_decimal(t):
            return decimal_type(t.precision, t.scale)
        if pa.types.is_timestamp(t):
            return TIMESTAMP if t.tz is not None else TIMESTAMP_NTZ
        raise DomainError(f"Arrow type {t} has no domain type; supported: int8/16/32/64, "
                          f"string, date32, decimal128, timestamp, bool, float, double")

    def simple_string(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        return self.name

    def __str__(self) -> str:
        return self.simple_string()

    @property
    def is_integral(self) -> bool:
        return self.name in _INT_BOUNDS

    @property
    def is_floating(self) -> bool:
        return self.name in ("double", "float")

    # ------------------------------------------------------------------ values
    def coerce(self, value: Any) -> Any:
        """Validates a Python value for this type and returns it in canonical form.

        Strict on purpose: a value that would need a lossy cast is an error, because a wrong
        cast here would prune a partition that holds matching rows.
        """
        n = self.name
        if value is None:
            raise DomainError(f"NULL is not a value of {self}; use null_allowed")
        if n in _INT_BOUNDS:
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, decimal.Decimal) and value.is_finite() \
                        and value == value.to_integral_value():
                    value = int(value)
                else:
                    raise DomainError(f"value {value!r} is not an integer for type {self}")
            lo, hi = _INT_BOUNDS[n]
            if not lo <= value <= hi:
                raise DomainError(f"value {value} is out of range for type {self} [{lo}, {hi}]")
            return int(value)
        if n == "string":
            if not isinstance(value, str):
                raise DomainError(f"value {value!r} is not a string for type string")
            return value
        if n == "boolean":
            if not isinstance(value, bool):
                raise DomainError(f"value {value!r} is not a boolean")
            return value
        if n in ("double", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                raise DomainError(f"value {value!r} is not a number for type {self}")
            try:
                f = float(value)
            except (OverflowError, ValueError):  # huge int, signalling NaN
                raise DomainError(f"value {value!r} is not representable in type {self}") \
                    from None
            if math.isnan(f):
                return math.nan
            return f + 0.0  # -0.0 → 0.0, as Spark normalizes it
        if n == "decimal":
            if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal, str)):
                raise DomainError(f"value {value!r} is not a decimal for type {self}")
            try:
                d = decimal.Decimal(value)
            except decimal.InvalidOperation:
                raise DomainError(f"value {value!r} is not a decimal for type {self}") from None
            if not d.is_finite():
                raise DomainError(f"value {value!r} is not a finite decimal for type {self}")
            q = decimal.Decimal(1).scaleb(-self.scale)  # type: ignore[arg-type]
            with decimal.localcontext() as ctx:
                ctx.prec = 80
                try:
                    qd = d.quantize(q)
                except decimal.InvalidOperation:  # needs more than 80 digits at this scale
                    raise DomainError(f"value {value} does not fit type {self}") from None
            if qd != d:
                raise DomainError(f"value {value} has more than {self.scale} decimal places "
                                  f"for type {self}")
            if len(qd.as_tuple().digits) > self.precision and qd != 0:  # type: ignore[operator]
                raise DomainError(f"value {value} does not fit type {self}")
            if qd.is_zero():
                # -0.00 == 0.00 but formats as "-0.00": one canonical zero keeps bloom texts
                # (and so bloom membership) identical for equal values
                qd = qd.copy_abs()
            return qd
        if n == "date":
            if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
                raise DomainError(f"value {value!r} is not a date")
            return value
        if n == "timestamp":
            # an instant, held as naive UTC; a naive input is taken to be UTC already
            if not isinstance(value, dt.datetime):
                raise DomainError(f"value {value!r} is not a timestamp")
            if value.tzinfo is not None:
                value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            return value
        if n == "timestamp_ntz":
            # a wall-clock reading with no zone: an instant would have to be given one first,
            # and which zone is the session's business, not this type's
            if not isinstance(value, dt.datetime):
                raise DomainError(f"value {value!r} is not a timestamp_ntz")
            if value.tzinfo is not None:
                raise DomainError(f"value {value!r} has a time zone; timestamp_ntz values have "
                                  f"none")
            return value
        raise DomainError(f"unsupported type {self}")  # pragma: no cover

    def parse_text(self, text: str, zone: Optional[dt.tzinfo] = None) -> Any:
        """Reads a value from text (a partition folder's unescaped value, a literal).

        ``zone`` is where a TIMESTAMP text without an offset is read (Spark reads it in the
        session time zone); UTC when not given. Callers comparing with Spark's values go
        through :class:`dpp.core.spark_rules.SparkRules`, which passes the session's zone.
        """
        n = self.name
        if not isinstance(text, str):
            raise DomainError(f"{text!r} cannot be read as {self}: not a string")
        s = text.strip() if n != "string" else text
        if n != "string" and (not s.isascii() or "_" in s):
            # Python's int/float/Decimal/date parsers accept non-ASCII digits and "1_000";
            # Spark does not (it yields NULL), so neither do we
            raise DomainError(f"{text!r} cannot be read as {self}")
        try:
            if n in _INT_BOUNDS:
                if not _INT_TEXT_RE.match(s):
                    raise ValueError
                return self.coerce(int(s))
            if n == "string":
                return text
            if n == "boolean":
                low = s.lower()
                if low not in ("true", "false"):
                    raise ValueError
                return low == "true"
            if n in ("double", "float"):
                low = s.lower()
                if low in ("nan", "+nan", "-nan"):
                    return math.nan
                return self.coerce(float(s))
            if n == "decimal":
                return self.coerce(decimal.Decimal(s))
            if n == "date":
                if not _DATE_TEXT_RE.match(s):  # not 3.11's basic or week-date ISO forms
                    raise ValueError
                return dt.date.fromisoformat(s)
            if n == "timestamp":
                if not _TS_TEXT_RE.match(s):
                    raise ValueError
                v = dt.datetime.fromisoformat(s)
                if v.tzinfo is None:
                    # fold=0: an hour that occurs twice reads as its first occurrence, one
                    # skipped by a DST gap as if the old offset still held — the instants
                    # java.time (and so Spark) gives both
                    v = v.replace(tzinfo=zone or dt.timezone.utc)
                return self.coerce(v)
            if n == "timestamp_ntz":
                if not _TS_TEXT_RE.match(s):
                    raise ValueError
                v = dt.datetime.fromisoformat(s)
                if v.tzinfo is not None:
                    raise DomainError("a time zone in a timestamp_ntz text is not read here")
                return self.coerce(v)
        except (ValueError, OverflowError, decimal.InvalidOperation, DomainError) as exc:
            detail = f": {exc}" if isinstance(exc, DomainError) else ""
            raise DomainError(f"{text!r} cannot be read as {self}{detail}") from None
        raise DomainError(f"unsupported type {self}")  # pragma: no cover

    def key(self, value: Any) -> Any:
        """The ordering/equality key of an already coerced value (Spark's NaN rule)."""
        if self.is_floating:
            return _NAN_KEY if math.isnan(value) else (0, value)
        if self.name == "decimal":
            return value  # Decimal orders numerically; quantized so equal values are equal
        return value

    def from_key(self, key: Any) -> Any:
        if self.is_floating:
            return math.nan if key[0] == 1 else key[1]
        return key

    def bloom_text(self, key: Any) -> str:
        """The stable text hashed into bloom filters: identical for equal values everywhere."""
        n = self.name
        if self.is_floating:
            return "NaN" if key[0] == 1 else float(key[1]).hex()
        if n == "boolean":
            return "true" if key else "false"
        if n in ("date", "timestamp", "timestamp_ntz"):
            return key.isoformat()
        if n == "decimal":
            return format(key, "f")
        if n == "string" and not _utf8_encodable(key):
            # lone surrogates: pybloom encodes keys as UTF-8 and would raise; any stable text
            # will do (a collision can only add a "maybe", never lose a value)
            return key.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
        return str(key)

    # ------------------------------------------------------------------ JSON form
    def key_to_json(self, key: Any) -> Any:
        n = self.name
        if self.is_floating:
            return "NaN" if key[0] == 1 else float(key[1]).hex()
        if n in ("date", "timestamp", "timestamp_ntz"):
            return key.isoformat()
        if n == "decimal":
            return format(key, "f")
        return key

    def key_from_json(self, obj: Any) -> Any:
        """Strict inverse of :meth:`key_to_json`: anything else is a :class:`DomainError`."""
        n = self.name
        try:
            if self.is_floating:
                if not isinstance(obj, str):
                    raise ValueError
                return self.key(math.nan if obj == "NaN" else self.coerce(float.fromhex(obj)))
            if n in _INT_BOUNDS:
                if isinstance(obj, bool) or not isinstance(obj, int):
                    raise ValueError
                return self.coerce(obj)
            if n == "string":
                if not isinstance(obj, str):
                    raise ValueError
                return obj
            if n == "boolean":
                if not isinstance(obj, bool):
                    raise ValueError
                return obj
            if not isinstance(obj, str) or len(obj) > 64:
                raise ValueError
            if n == "decimal":
                return self.coerce(decimal.Decimal(obj))
            if n == "date":
                return dt.date.fromisoformat(obj)
            if n in ("timestamp", "timestamp_ntz"):
                v = dt.datetime.fromisoformat(obj)
                if v.tzinfo is not None:
                    raise ValueError
                return self.coerce(v)
        except (ValueError, TypeError, OverflowError, decimal.InvalidOperation,
                DomainError):
            raise DomainError(f"{obj!r} is not an encoded {self} value") from None
        raise DomainError(f"unsupported type {self}")  # pragma: no cover


def _utf8_encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decimal_type(precision: int, scale: int) -> DataType:
    return DataType("decimal", precision, scale)


TINYINT = DataType("tinyint")
SMALLINT = DataType("smallint")
INT = DataType("int")
BIGINT = DataType("bigint")
STRING = DataType("string")
DATE = DataType("date")
TIMESTAMP = DataType("timestamp")
TIMESTAMP_NTZ = DataType("timestamp_ntz")
BOOLEAN = DataType("boolean")
DOUBLE = DataType("double")
FLOAT = DataType("float")


# ====================================================================== ranges (in key space)

@dataclass(frozen=True)
class Range:
    """An interval of keys; ``None`` bounds are unbounded. Never empty once normalized."""

    low: Any = None
    low_inclusive: bool = False
    high: Any = None
    high_inclusive: bool = False

    @property
    def is_point(self) -> bool:
        return (self.low is not None and self.high is not None and self.low == self.high
                and self.low_inclusive and self.high_inclusive)

    def contains_key(self, k: Any) -> bool:
        if self.low is not None and (k < self.low or (k == self.low and not self.low_inclusive)):
            return False
        if self.high is not None and (k > self.high or (k == self.high and not self.high_inclusive)):
            return False
        return True

    def is_empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        if self.low > self.high:
            return True
        return self.low == self.high and not (self.low_inclusive and self.high_inclusive)


def _max_low(a: Range, b: Range) -> tuple[Any, bool]:
    if a.low is None:
        return b.low, b.low_inclusive
    if b.low is None:
        return a.low, a.low_inclusive
    if a.low != b.low:
        return (a.low, a.low_inclusive) if a.low > b.low else (b.low, b.low_inclusive)
    return a.low, a.low_inclusive and b.low_inclusive


def _min_high(a: Range, b: Range) -> tuple[Any, bool]:
    if a.high is None:
        return b.high, b.high_inclusive
    if b.high is None:
        return a.high, a.high_inclusive
    if a.high != b.high:
        return (a.high, a.high_inclusive) if a.high < b.high else (b.high, b.high_inclusive)
    return a.high, a.high_inclusive and b.high_inclusive


def _low_sort(r: Range) -> tuple:
    # unbounded first; at equal keys an inclusive bound starts earlier
    return (0,) if r.low is None else (1, r.low, 0 if r.low_inclusive else 1)


def _touches(cur: Range, nxt: Range) -> bool:
    """Whether ``nxt`` (starting at or after ``cur``) overlaps or abuts ``cur``."""
    if cur.high is None or nxt.low is None:
        return True
    if nxt.low < cur.high:
        return True
    if nxt.low == cur.high:
        return cur.high_inclusive or nxt.low_inclusive
    return False


def _unbounded_exclusive(r: Range) -> Range:
    """An unbounded side is never inclusive (the wire form insists; equality relies on it)."""
    if (r.low is None and r.low_inclusive) or (r.high is None and r.high_inclusive):
        return Range(r.low, r.low_inclusive and r.low is not None,
                     r.high, r.high_inclusive and r.high is not None)
    return r


def _normalize_ranges(ranges: Iterable[Range]) -> tuple[Range, ...]:
    rs = sorted((_unbounded_exclusive(r) for r in ranges if not r.is_empty()), key=_low_sort)
    out: list[Range] = []
    for r in rs:
        if out and _touches(out[-1], r):
            cur = out[-1]
            if cur.high is None or r.high is None:
                hi, hi_inc = None, False
            elif r.high > cur.high:
                hi, hi_inc = r.high, r.high_inclusive
            elif r.high < cur.high:
                hi, hi_inc = cur.high, cur.high_inclusive
            else:
                hi, hi_inc = cur.high, cur.high_inclusive or r.high_inclusive
            out[-1] = Range(cur.low, cur.low_inclusive, hi, hi_inc)
        else:
            out.append(r)
    return tuple(out)


def _intersect_ranges(a: Sequence[Range], b: Sequence[Range]) -> tuple[Range, ...]:
    out = []
    for x in a:
        for y in b:
            lo, lo_inc = _max_low(x, y)
            hi, hi_inc = _min_high(x, y)
            r = Range(lo, lo_inc, hi, hi_inc)
            if not r.is_empty():
                out.append(r)
    return _normalize_ranges(out)


def _complement_ranges(rs: Sequence[Range]) -> tuple[Range, ...]:
    out = []
    lo, lo_inc = None, False
    for r in rs:
        if r.low is not None:
            out.append(Range(lo, lo_inc, r.low, not r.low_inclusive))
        if r.high is None:
            return _normalize_ranges(out)
        lo, lo_inc = r.high, not r.high_inclusive
    out.append(Range(lo, lo_inc, None, False))
    return _normalize_ranges(out)


def _hull(rs: Sequence[Range]) -> Range:
    return Range(rs[0].low, rs[0].low_inclusive, rs[-1].high, rs[-1].high_inclusive)


# ====================================================================== value sets

class _AllValues:
    kind = "all"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AllValues)

    def __hash__(self) -> int:
        return hash("all")

    def __repr__(self) -> str:
        return "ALL"


class _NoValues:
    kind = "none"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NoValues)

    def __hash__(self) -> int:
        return hash("none")

    def __repr__(self) -> str:
        return "NONE"


@dataclass(frozen=True)
class _Discrete:
    """An exact, finite set of keys, sorted."""

    keys: tuple
    kind: str = field(default="values", init=False)
    _set: frozenset = field(default=frozenset(), init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_set", frozenset(self.keys))


@dataclass(frozen=True)
class _Ranges:
    """An exact union of disjoint, sorted ranges."""

    ranges: tuple[Range, ...]
    kind: str = field(default="range", init=False)


class _Bloom:
    """Approximate membership: a bloom filter of keys, bounded by an exact envelope.

    Answers "maybe" for some absent keys, never "no" for a present one.
    """

    kind = "bloom"
    __slots__ = ("filter", "envelope", "_bits")

    def __init__(self, bloom: Any, envelope: tuple[Range, ...]) -> None:
        self.filter = bloom
        self.envelope = envelope
        self._bits = bloom.bitarray.tobytes()

    @property
    def params(self) -> tuple[int, float]:
        return int(self.filter.capacity), float(self.filter.error_rate)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _Bloom) and self.params == other.params
                and self.envelope == other.envelope and self._bits == other._bits)

    def __hash__(self) -> int:
        return hash((self.params, self.envelope, self._bits))

    def __repr__(self) -> str:
        return f"Bloom(capacity={self.params[0]}, fpp={self.params[1]}, envelope={self.envelope})"


ValueSet = Union[_AllValues, _NoValues, _Discrete, _Ranges, _Bloom]
_ALL = _AllValues()
_NONE = _NoValues()


def new_bloom(capacity: int, fpp: float) -> Any:
    """A fresh pybloom-live filter; imported lazily so the algebra loads without it."""
    from pybloom_live import BloomFilter

    if not (0.0 < fpp < 1.0):
        raise DomainError(f"bloom filter fpp must be in (0, 1), got {fpp}")
    if capacity < 1:
        raise DomainError(f"bloom filter capacity must be >= 1, got {capacity}")
    return BloomFilter(capacity=int(capacity), error_rate=float(fpp))


def _bloom_num_bits(capacity: int, fpp: float) -> int:
    """pybloom_live's filter size for these parameters, computed without allocating it."""
    num_slices = int(math.ceil(math.log(1.0 / fpp, 2)))
    bits_per_slice = int(math.ceil((capacity * abs(math.log(fpp))) /
                                   (num_slices * (math.log(2) ** 2))))
    return num_slices * bits_per_slice


# ====================================================================== Domain

@dataclass(frozen=True, eq=False)
class Domain:
    """The values one column may take, plus whether NULL may occur. Immutable.

    Build with the named constructors (:meth:`all`, :meth:`none`, :meth:`values`,
    :meth:`range`, :meth:`only_null`); combine with :meth:`union` and :meth:`intersect`.
    """

    type: DataType
    value_set: ValueSet
    null_allowed: bool

    # ------------------------------------------------------------------ constructors
    @classmethod
    def all(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), _ALL, True)

    @classmethod
    def none(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), _NONE, False)

    @classmethod
    def only_null(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), _NONE, True)

    @classmethod
    def not_null(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), _ALL, False)

    @classmethod
    def values(cls, type_: DataType | str, values: Iterable[Any],
               null_allowed: bool = False) -> "Domain":
        t = DataType.parse(type_)
        keys = sorted({t.key(t.coerce(v)) for v in values})
        return cls(t, _Discrete(tuple(keys)) if keys else _NONE, null_allowed)

    @classmethod
    def single(cls, type_: DataType | str, value: Any) -> "Domain":
        return cls.values(type_, [value])

    @classmethod
    def range(cls, type_: DataType | str, low: Any = None, high: Any = None,
              low_inclusive: bool = True, high_inclusive: bool = True,
              null_allowed: bool = False) -> "Domain":
        """Values between ``low`` and ``high``; ``None`` leaves that side unbounded."""
        t = DataType.parse(type_)
        lo = None if low is None else t.key(t.coerce(low))
        hi = None if high is None else t.key(t.coerce(high))
        return cls.ranges(t, [Range(lo, low_inclusive and lo is not None,
                                    hi, high_inclusive and hi is not None)], null_allowed)

    @classmethod
    def ranges(cls, type_: DataType | str, ranges: Iterable[Range],
               null_allowed: bool = False) -> "Domain":
        """From ranges already in key space (see :meth:`DataType.key`)."""
        t = DataType.parse(type_)
        return cls(t, _ranges_set(_normalize_ranges(ranges)), null_allowed)

    @classmethod
    def bloom(cls, type_: DataType | str, values: Iterable[Any], fpp: float,
              capacity: Optional[int] = None, null_allowed: bool = False) -> "Domain":
        """A bloom membership domain over ``values``, bounded by their min/max."""
        t = DataType.parse(type_)
        keys = sorted({t.key(t.coerce(v)) for v in values})
        if not keys:
            return cls(t, _NONE, null_allowed)
        bf = new_bloom(max(capacity or len(keys), len(keys)), fpp)
        for k in keys:
            bf.add(t.bloom_text(k), skip_check=True)
        env = (Range(keys[0], True, keys[-1], True),)
        return cls(t, _Bloom(bf, env), null_allowed)

    # ------------------------------------------------------------------ inspection
    @property
    def kind(self) -> str:
        """``all``, ``none``, ``values``, ``range`` or ``bloom`` (of the non-null values)."""
        return self.value_set.kind

    def is_all(self) -> bool:
        return isinstance(self.value_set, _AllValues) and self.null_allowed

    def is_none(self) -> bool:
        return isinstance(self.value_set, _NoValues) and not self.null_allowed

    def is_exact(self) -> bool:
        return not isinstance(self.value_set, _Bloom)

    def is_only_null(self) -> bool:
        return isinstance(self.value_set, _NoValues) and self.null_allowed

    def discrete_values(self) -> Optional[list[Any]]:
        """The values, when the domain is a finite exact set; else ``None``."""
        vs = self.value_set
        if isinstance(vs, _Discrete):
            return [self.type.from_key(k) for k in vs.keys]
        if isinstance(vs, _NoValues):
            return []
        return None

    def value_count(self) -> Optional[int]:
        vs = self.value_set
        if isinstance(vs, _Discrete):
            return len(vs.keys)
        if isinstance(vs, _NoValues):
            return 0
        if isinstance(vs, _Bloom):
            return int(vs.filter.count) or None
        return None

    def bounds(self) -> Optional[tuple[Any, Any]]:
        """(min, max) of the non-null values, ``None`` sides unbounded; ``None`` if empty."""
        vs = self.value_set
        if isinstance(vs, _NoValues):
            return None
        if isinstance(vs, _AllValues):
            return (None, None)
        rs = _as_ranges(vs)
        h = _hull(rs)
        f = self.type.from_key
        return (None if h.low is None else f(h.low), None if h.high is None else f(h.high))

    def ranges_view(self) -> Optional[tuple[Range, ...]]:
        vs = self.value_set
        if isinstance(vs, _AllValues):
            return (Range(),)
        if isinstance(vs, _NoValues):
            return ()
        return _as_ranges(vs)

    # ------------------------------------------------------------------ tests
    def contains(self, value: Any) -> bool:
        """Might a row with this value match? Exact except for bloom domains ("maybe")."""
        if value is None:
            return self.null_allowed
        try:
            k = self.type.key(self.type.coerce(value))
        except DomainError:
            raise
        return self.contains_key(k)

    def contains_key(self, k: Any) -> bool:
        vs = self.value_set
        if isinstance(vs, _AllValues):
            return True
        if isinstance(vs, _NoValues):
            return False
        if isinstance(vs, _Discrete):
            return k in vs._set
        if isinstance(vs, _Ranges):
            return _ranges_contain(vs.ranges, k)
        assert isinstance(vs, _Bloom)
        return _ranges_contain(vs.envelope, k) and self.type.bloom_text(k) in vs.filter

    def might_match(self, value: Any) -> bool:
        return self.contains(value)

    def overlaps(self, low: Any, high: Any) -> bool:
        """Might any value in [low, high] be in the domain? For min/max statistics.

        ``None`` bounds are unbounded. For floating types the answer is also True whenever the
        domain may hold NaN, because Parquet statistics leave NaN out of min/max.
        """
        t = self.type
        vs = self.value_set
        if isinstance(vs, _NoValues):
            return False
        if isinstance(vs, _AllValues):
            return True
        if t.is_floating and self.contains_key(_NAN_KEY):
            return True
        lo = None if low is None else t.key(t.coerce(low))
        hi = None if high is None else t.key(t.coerce(high))
        probe = Range(lo, lo is not None, hi, hi is not None)
        if probe.is_empty():
            return False
        if isinstance(vs, _Discrete):
            keys = vs.keys
            i = 0 if lo is None else bisect.bisect_left(keys, lo)
            return i < len(keys) and (hi is None or keys[i] <= hi)
        rs = vs.ranges if isinstance(vs, _Ranges) else vs.envelope
        return bool(_intersect_ranges(rs, (probe,)))

    # ------------------------------------------------------------------ algebra
    def _check(self, other: "Domain") -> None:
        if not isinstance(other, Domain):
            raise DomainError(f"expected a Domain, got {other!r}")
        if other.type != self.type:
            raise DomainError(f"cannot combine domains of types {self.type} and {other.type}")

    def union(self, other: "Domain") -> "Domain":
        """OR: every value either side holds (merging build-side partials)."""
        self._check(other)
        return Domain(self.type, _union_sets(self.type, self.value_set, other.value_set),
                      self.null_allowed or other.null_allowed)

    def intersect(self, other: "Domain") -> "Domain":
        """AND: values both sides may hold (static with dynamic filters)."""
        self._check(other)
        return Domain(self.type, _intersect_sets(self.type, self.value_set, other.value_set),
                      self.null_allowed and other.null_allowed)

    __or__ = union
    __and__ = intersect

    def complement(self) -> "Domain":
        """NOT, only where exact: a bloom domain has no exact complement."""
        vs = self.value_set
        if isinstance(vs, _Bloom):
            raise DomainError("the complement of a bloom domain is not exact")
        if isinstance(vs, _AllValues):
            new: ValueSet = _NONE
        elif isinstance(vs, _NoValues):
            new = _ALL
        else:
            new = _ranges_set(_complement_ranges(_as_ranges(vs)))
        return Domain(self.type, new, not self.null_allowed)

    def simplify(self, max_distinct: int, bloom_fpp: Optional[float] = None,
                 bloom_capacity: Optional[int] = None) -> "Domain":
        """The collapse policy, in one place for collectors and merges alike.

        More than ``max_distinct`` discrete values (or ranges) become their min/max range;
        with ``bloom_fpp`` given, discrete values become a bloom filter within that range.
        Never drops a value.
        """
        if max_distinct < 0:
            raise DomainError(f"max_distinct must be >= 0, got {max_distinct}")
        vs = self.value_set
        t = self.type
        if isinstance(vs, _Discrete) and len(vs.keys) > max_distinct:
            env = (Range(vs.keys[0], True, vs.keys[-1], True),)
            if bloom_fpp is not None:
                cap = max(bloom_capacity or len(vs.keys), len(vs.keys))
                bf = new_bloom(cap, bloom_fpp)
                for k in vs.keys:
                    bf.add(t.bloom_text(k), skip_check=True)
                return Domain(t, _Bloom(bf, env), self.null_allowed)
            return Domain(t, _Ranges(env), self.null_allowed)
        if isinstance(vs, _Ranges) and len(vs.ranges) > max(max_distinct, 1):
            return Domain(t, _Ranges((_hull(vs.ranges),)), self.null_allowed)
        if isinstance(vs, _Bloom) and len(vs.envelope) > max(max_distinct, 1):
            return Domain(t, _Bloom(vs.filter, (_hull(vs.envelope),)), self.null_allowed)
        return self

    # ------------------------------------------------------------------ identity
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Domain) and self.type == other.type
                and self.null_allowed == other.null_allowed and self.value_set == other.value_set)

    def __hash__(self) -> int:
        return hash((self.type, self.null_allowed, self.value_set))

    def describe(self, limit: int = 5) -> str:
        """Short human text, e.g. ``values(366)`` or ``range[1, 9]`` — for explain and logs."""
        vs = self.value_set
        null = " or NULL" if self.null_allowed else ""
        if isinstance(vs, _AllValues):
            return "ALL" if self.null_allowed else "NOT NULL"
        if isinstance(vs, _NoValues):
            return "NULL only" if self.null_allowed else "NONE"
        f = self.type.from_key
        if isinstance(vs, _Discrete):
            shown = ", ".join(repr(f(k)) for k in vs.keys[:limit])
            more = ", ..." if len(vs.keys) > limit else ""
            return f"values({len(vs.keys)}: {shown}{more}){null}"
        rs = _as_ranges(vs)
        h = _hull(rs)
        lo = "-inf" if h.low is None else repr(f(h.low))
        hi = "+inf" if h.high is None else repr(f(h.high))
        if isinstance(vs, _Bloom):
            return f"bloom(~{vs.filter.count}, fpp={vs.params[1]}) in [{lo}, {hi}]{null}"
        return f"range({len(rs)})[{lo}, {hi}]{null}"

    def __repr__(self) -> str:
        return f"Domain({self.type}, {self.describe()})"

    # ------------------------------------------------------------------ data form
    def to_data(self) -> dict[str, Any]:
        """A JSON-ready dict; the wire codec frames it. Keys are plain data only."""
        t = self.type
        vs = self.value_set
        d: dict[str, Any] = {"type": t.simple_string(), "null": self.null_allowed,
                             "kind": vs.kind}
        if isinstance(vs, _Discrete):
            d["values"] = [t.key_to_json(k) for k in vs.keys]
        elif isinstance(vs, _Ranges):
            d["ranges"] = [_range_to_json(t, r) for r in vs.ranges]
        elif isinstance(vs, _Bloom):
            d["ranges"] = [_range_to_json(t, r) for r in vs.envelope]
            d["bloom"] = {"capacity": vs.params[0], "fpp": vs.params[1],
                          "count": int(vs.filter.count),
                          "bits": base64.b64encode(vs._bits).decode("ascii")}
        return d

    @classmethod
    def from_data(cls, d: Any, max_values: int = 10_000_000) -> "Domain":
        """Strict inverse of :meth:`to_data`; raises :class:`DomainError` on anything else."""
        if not isinstance(d, dict):
            raise DomainError("a domain must be an object")
        t = DataType.parse(_need(d, "type", str))
        null = _need(d, "null", bool)
        kind = _need(d, "kind", str)
        if kind == "all":
            return cls(t, _ALL, null)
        if kind == "none":
            return cls(t, _NONE, null)
        if kind == "values":
            vals = _need(d, "values", list)
            if not vals or len(vals) > max_values:
                raise DomainError(f"a values domain needs 1..{max_values} values")
            keys = [t.key_from_json(v) for v in vals]
            if any(not (a < b) for a, b in zip(keys, keys[1:])):
                raise DomainError("domain values are not strictly increasing")
            return cls(t, _Discrete(tuple(keys)), null)
        if kind in ("range", "bloom"):
            raw = _need(d, "ranges", list)
            if not raw or len(raw) > max_values:
                raise DomainError(f"a {kind} domain needs 1..{max_values} ranges")
            rs = tuple(_range_from_json(t, r) for r in raw)
            if _normalize_ranges(rs) != rs:
                raise DomainError("domain ranges are not normalized")
            if kind == "range":
                return cls(t, _Ranges(rs), null)
            b = _need(d, "bloom", dict)
            cap = _need(b, "capacity", int)
            fpp = _need(b, "fpp", float)
            count = _need(b, "count", int)
            try:
                bits = base64.b64decode(_need(b, "bits", str), validate=True)
            except (ValueError, TypeError):
                raise DomainError("bloom bits are not valid base64") from None
            if not (1 <= cap <= 2 ** 31) or not (1e-9 <= fpp < 1.0) or not (0 <= count):
                raise DomainError("bloom parameters out of range")
            # check the size before allocating: a tiny frame claiming capacity 2**31 would
            # otherwise make us allocate gigabytes of filter
            expected = (_bloom_num_bits(cap, fpp) + 7) // 8
            if len(bits) != expected:
                raise DomainError(f"bloom bits are {len(bits)} bytes, expected {expected}")
            bf = new_bloom(cap, fpp)
            if (bf.num_bits + 7) // 8 != expected:  # pragma: no cover - pybloom changed
                raise DomainError("bloom filter size rule does not match pybloom_live")
            import bitarray as _ba

            arr = _ba.bitarray(endian="little")
            arr.frombytes(bits)
            del arr[bf.num_bits:]
            bf.bitarray = arr
            bf.count = count
            return cls(t, _Bloom(bf, rs), null)
        raise DomainError(f"unknown domain kind {kind!r}")


def _need(d: Mapping[str, Any], name: str, typ: type) -> Any:
    if name not in d:
        raise DomainError(f"field {name!r} is missing")
    v = d[name]
    if typ is int and isinstance(v, bool):
        raise DomainError(f"field {name!r} must be an integer")
    if typ is float and isinstance(v, int) and not isinstance(v, bool):
        try:
            v = float(v)
        except OverflowError:
            raise DomainError(f"field {name!r} is out of range") from None
    if not isinstance(v, typ):
        raise DomainError(f"field {name!r} must be of type {typ.__name__}")
    return v


def _range_to_json(t: DataType, r: Range) -> list[Any]:
    return [None if r.low is None else t.key_to_json(r.low), r.low_inclusive,
            None if r.high is None else t.key_to_json(r.high), r.high_inclusive]


def _range_from_json(t: DataType, obj: Any) -> Range:
    if not isinstance(obj, list) or len(obj) != 4 or not isinstance(obj[1], bool) \
            or not isinstance(obj[3], bool):
        raise DomainError("a range must be [low, low_inclusive, high, high_inclusive]")
    lo = None if obj[0] is None else t.key_from_json(obj[0])
    hi = None if obj[2] is None else t.key_from_json(obj[2])
    if (lo is None and obj[1]) or (hi is None and obj[3]):
        raise DomainError("an unbounded side cannot be inclusive")
    r = Range(lo, obj[1], hi, obj[3])
    if r.is_empty():
        raise DomainError("empty range")
    return r


def _ranges_contain(rs: Sequence[Range], k: Any) -> bool:
    # ranges are sorted and disjoint: binary search on the low bounds
    lo, hi = 0, len(rs)
    while lo < hi:
        mid = (lo + hi) // 2
        r = rs[mid]
        if r.high is not None and (r.high < k or (r.high == k and not r.high_inclusive)):
            lo = mid + 1
        else:
            hi = mid
    return lo < len(rs) and rs[lo].contains_key(k)


def _ranges_set(rs: tuple[Range, ...]) -> ValueSet:
    if not rs:
        return _NONE
    if len(rs) == 1 and rs[0].low is None and rs[0].high is None:
        return _ALL
    if all(r.is_point for r in rs):
        return _Discrete(tuple(r.low for r in rs))
    return _Ranges(rs)


def _as_ranges(vs: ValueSet) -> tuple[Range, ...]:
    if isinstance(vs, _Discrete):
        return tuple(Range(k, True, k, True) for k in vs.keys)
    if isinstance(vs, _Ranges):
        return vs.ranges
    if isinstance(vs, _Bloom):
        return vs.envelope
    if isinstance(vs, _AllValues):
        return (Range(),)
    return ()


def _bloom_add_keys(t: DataType, b: _Bloom, keys: Sequence[Any]) -> Optional[_Bloom]:
    """A copy of ``b`` holding ``keys`` too, or None if that would exceed its capacity."""
    if b.filter.count + len(keys) > b.filter.capacity:
        return None
    bf = b.filter.copy()
    bf.count = b.filter.count
    for k in keys:
        bf.add(t.bloom_text(k), skip_check=True)
    env = _normalize_ranges(b.envelope + tuple(Range(k, True, k, True) for k in keys))
    return _Bloom(bf, env)


def _union_sets(t: DataType, a: ValueSet, b: ValueSet) -> ValueSet:
    if isinstance(a, _AllValues) or isinstance(b, _AllValues):
        return _ALL
    if isinstance(a, _NoValues):
        return b
    if isinstance(b, _NoValues):
        return a
    if isinstance(a, _Discrete) and isinstance(b, _Discrete):
        return _Discrete(tuple(sorted(a._set | b._set)))
    if isinstance(a, _Bloom) or isinstance(b, _Bloom):
        if isinstance(a, _Bloom) and isinstance(b, _Bloom):
            if a.params == b.params:
                bf = a.filter.union(b.filter)
                bf.count = min(a.filter.count + b.filter.count, a.params[0])
                return _Bloom(bf, _normalize_ranges(a.envelope + b.envelope))
            return _ranges_set(_normalize_ranges(a.envelope + b.envelope))
        bl, other = (a, b) if isinstance(a, _Bloom) else (b, a)
        assert isinstance(bl, _Bloom)
        if isinstance(other, _Discrete):
            merged = _bloom_add_keys(t, bl, other.keys)
            if merged is not None:
                return merged
        # a range cannot enter a bloom filter: keep both as exact ranges (sound, coarser)
        return _ranges_set(_normalize_ranges(bl.envelope + _as_ranges(other)))
    return _ranges_set(_normalize_ranges(_as_ranges(a) + _as_ranges(b)))


def _intersect_sets(t: DataType, a: ValueSet, b: ValueSet) -> ValueSet:
    if isinstance(a, _NoValues) or isinstance(b, _NoValues):
        return _NONE
    if isinstance(a, _AllValues):
        return b
    if isinstance(b, _AllValues):
        return a
    if isinstance(a, _Discrete) or isinstance(b, _Discrete):
        d, other = (a, b) if isinstance(a, _Discrete) else (b, a)
        assert isinstance(d, _Discrete)
        probe = Domain(t, other, False)
        keys = tuple(k for k in d.keys if probe.contains_key(k))
        return _Discrete(keys) if keys else _NONE
    if isinstance(a, _Bloom) or isinstance(b, _Bloom):
        bl, other = (a, b) if isinstance(a, _Bloom) else (b, a)
        assert isinstance(bl, _Bloom)
        env = _intersect_ranges(bl.envelope, _as_ranges(other))
        if not env:
            return _NONE
        bf = bl.filter
        if isinstance(other, _Bloom) and other.params == bl.params:
            bf = bl.filter.intersection(other.filter)
            bf.count = min(bl.filter.count, other.filter.count)
        return _Bloom(bf, env)
    return _ranges_set(_intersect_ranges(_as_ranges(a), _as_ranges(b)))


# ====================================================================== TupleDomain

@dataclass(frozen=True)
class TupleDomain:
    """Column name → :class:`Domain`, or NONE (no row can match).

    Columns absent from the map are unconstrained. Constructed normalized: a column whose
    domain is NONE makes the whole tuple NONE, and ALL domains are dropped.
    """

    _items: Optional[tuple[tuple[str, Domain], ...]]

    @classmethod
    def all(cls) -> "TupleDomain":
        return cls(())

    @classmethod
    def none(cls) -> "TupleDomain":
        return cls(None)

    @classmethod
    def of(cls, domains: Mapping[str, Domain]) -> "TupleDomain":
        items = []
        for name, d in domains.items():
            if not isinstance(d, Domain):
                raise DomainError(f"column {name!r}: expected a Domain, got {d!r}")
            if d.is_none():
                return cls(None)
            if not d.is_all():
                items.append((name, d))
        return cls(tuple(sorted(items, key=lambda it: it[0])))

    def is_none(self) -> bool:
        return self._items is None

    def is_all(self) -> bool:
        return self._items == ()

    @property
    def domains(self) -> Optional[dict[str, Domain]]:
        return None if self._items is None else dict(self._items)

    @property
    def columns(self) -> tuple[str, ...]:
        return () if self._items is None else tuple(n for n, _ in self._items)

    def get(self, column: str) -> Optional[Domain]:
        """The column's domain; ``None`` when unconstrained (or when the tuple is NONE)."""
        if self._items is None:
            return None
        for n, d in self._items:
            if n == column:
                return d
        return None

    def intersect(self, other: "TupleDomain") -> "TupleDomain":
        if self._items is None or other._items is None:
            return TupleDomain.none()
        merged = dict(self._items)
        for n, d in other._items:
            merged[n] = merged[n].intersect(d) if n in merged else d
        return TupleDomain.of(merged)

    def union(self, other: "TupleDomain") -> "TupleDomain":
        """OR, soundly: a column constrained on one side only becomes unconstrained."""
        if self._items is None:
            return other
        if other._items is None:
            return self
        mine, theirs = dict(self._items), dict(other._items)
        return TupleDomain.of({n: mine[n].union(theirs[n]) for n in mine if n in theirs})

    def contains(self, row: Mapping[str, Any]) -> bool:
        """Might a row with these column values match? Missing columns are unknown (True)."""
        if self._items is None:
            return False
        return all(d.contains(row[n]) for n, d in self._items if n in row)

    def simplify(self, max_distinct: int, bloom_fpp: Optional[float] = None,
                 bloom_capacity: Optional[int] = None) -> "TupleDomain":
        """:meth:`Domain.simplify` on every column (same collapse policy, same arguments)."""
        if self._items is None:
            return self
        return TupleDomain.of({n: d.simplify(max_distinct, bloom_fpp, bloom_capacity)
                               for n, d in self._items})

    def describe(self) -> str:
        if self._items is None:
            return "NONE"
        if not self._items:
            return "ALL"
        return " AND ".join(f"{n} in {d.describe()}" for n, d in self._items)

    def __repr__(self) -> str:
        return f"TupleDomain({self.describe()})"

    def to_data(self) -> dict[str, Any]:
        if self._items is None:
            return {"none": True}
        return {"none": False, "columns": [[n, d.to_data()] for n, d in self._items]}

    @classmethod
    def from_data(cls, d: Any) -> "TupleDomain":
        if not isinstance(d, dict):
            raise DomainError("a tuple domain must be an object")
        if _need(d, "none", bool):
            return cls.none()
        cols = _need(d, "columns", list)
        out: dict[str, Domain] = {}
        for item in cols:
            if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                raise DomainError("a tuple domain column must be [name, domain]")
            if item[0] in out:
                raise DomainError(f"column {item[0]!r} appears twice")
            out[item[0]] = Domain.from_data(item[1])
        return cls.of(out)
