"""Column types: the one place that knows each Spark type's values, text and ordering.

A :class:`DataType` validates Python values, reads folder text, maps values to *keys* (so
that ordering and equality follow Spark's semantics, including the NaN rule for doubles: NaN
equals NaN and sorts above every other value, +Infinity included; -0.0 equals 0.0), names the
stable text a bloom filter hashes, and gives the JSON form of a key used by the wire codec.

Imports nothing of the project but :mod:`dpp.core.errors`; pyarrow only inside
:meth:`DataType.from_arrow`.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from dataclasses import dataclass
from typing import Any, Optional

from dpp.core.errors import DomainError

__all__ = [
    "DataType", "INT", "BIGINT", "SMALLINT", "TINYINT", "STRING", "DATE", "TIMESTAMP",
    "TIMESTAMP_NTZ", "BOOLEAN", "DOUBLE", "FLOAT", "decimal_type", "NAN_KEY",
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
# the key of NaN for floating types: above every other key, +Infinity included
NAN_KEY = (1, 0.0)


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
        if (pa.types.is_string(t) or pa.types.is_large_string(t)
                or getattr(pa.types, "is_string_view", lambda _: False)(t)):  # pyarrow < 16: none
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

    @property
    def integral_bounds(self) -> Optional[tuple[int, int]]:
        """(lowest, highest) value of an integral type; None for any other type."""
        return _INT_BOUNDS.get(self.name)

    def key(self, value: Any) -> Any:
        """The ordering/equality key of an already coerced value (Spark's NaN rule)."""
        if self.is_floating:
            return NAN_KEY if math.isnan(value) else (0, value)
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
