"""The domain algebra: the one language filters speak between build side and probe side.

Modelled on Trino's ``TupleDomain``: a :class:`Domain` is a set of values of one column type
plus whether NULL is allowed; a :class:`TupleDomain` maps column names to domains, or is NONE
(no row can match). Every operation is *sound*: it may keep more values than the exact answer,
never fewer, so pruning by a domain can never drop a row that matches. Only the bloom kind is
approximate, and only in the direction of "maybe".

Values are held internally as *keys* (see :meth:`DataType.key`) so that ordering and equality
follow Spark's semantics, including the NaN rule for doubles: NaN equals NaN and sorts above
every other value, +Infinity included; -0.0 equals 0.0.

The parts live beside this module: column types in :mod:`dpp.core.types`, key ranges in
:mod:`dpp.core.ranges`, the five kinds of value set and their union and intersection in
:mod:`dpp.core.value_sets`. :class:`Domain` adds NULL and the column type to a value set and
asks the value set about everything else. This module re-exports the names it has always
offered, so ``from dpp.core.domain import ...`` keeps working.

These modules import nothing of the project but :mod:`dpp.core.errors`, so every package can
use them without pulling in the session.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from dpp.core import value_sets
from dpp.core.errors import DomainError
from dpp.core.ranges import Range, hull, normalize_ranges
# the type constants, new_bloom and the value-set kinds are re-exported: callers (and tests)
# import them from here
from dpp.core.types import (BIGINT, BOOLEAN, DATE, DOUBLE, FLOAT, INT,  # noqa: F401
                            SMALLINT, STRING, TIMESTAMP, TIMESTAMP_NTZ, TINYINT, DataType,
                            decimal_type)
from dpp.core.value_sets import (ALL_VALUES, NO_VALUES, ValueSet, _AllValues,  # noqa: F401
                                 _Bloom, _Discrete, _NoValues, _Ranges, need_field,
                                 new_bloom, of_ranges, value_set_from_data)

__all__ = [
    "DataType", "Range", "Domain", "TupleDomain",
    "INT", "BIGINT", "SMALLINT", "TINYINT", "STRING", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ",
    "BOOLEAN", "DOUBLE", "FLOAT", "decimal_type",
]


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
        return cls(DataType.parse(type_), ALL_VALUES, True)

    @classmethod
    def none(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), NO_VALUES, False)

    @classmethod
    def only_null(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), NO_VALUES, True)

    @classmethod
    def not_null(cls, type_: DataType | str) -> "Domain":
        return cls(DataType.parse(type_), ALL_VALUES, False)

    @classmethod
    def values(cls, type_: DataType | str, values: Iterable[Any],
               null_allowed: bool = False) -> "Domain":
        t = DataType.parse(type_)
        keys = sorted({t.key(t.coerce(v)) for v in values})
        return cls(t, _Discrete(tuple(keys)) if keys else NO_VALUES, null_allowed)

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
        return cls(t, of_ranges(normalize_ranges(ranges)), null_allowed)

    @classmethod
    def bloom(cls, type_: DataType | str, values: Iterable[Any], fpp: float,
              capacity: Optional[int] = None, null_allowed: bool = False) -> "Domain":
        """A bloom membership domain over ``values``, bounded by their min/max."""
        t = DataType.parse(type_)
        keys = sorted({t.key(t.coerce(v)) for v in values})
        if not keys:
            return cls(t, NO_VALUES, null_allowed)
        return cls(t, _Bloom.of_keys(t, keys, fpp, capacity), null_allowed)

    # ------------------------------------------------------------------ inspection
    @property
    def kind(self) -> str:
        """``all``, ``none``, ``values``, ``range`` or ``bloom`` (of the non-null values)."""
        return self.value_set.kind

    def is_all(self) -> bool:
        return self.value_set.everything and self.null_allowed

    def is_none(self) -> bool:
        return self.value_set.empty and not self.null_allowed

    def is_exact(self) -> bool:
        return self.value_set.exact

    def is_only_null(self) -> bool:
        return self.value_set.empty and self.null_allowed

    def discrete_values(self) -> Optional[list[Any]]:
        """The values, when the domain is a finite exact set; else ``None``."""
        keys = self.value_set.discrete_keys()
        return None if keys is None else [self.type.from_key(k) for k in keys]

    def value_count(self) -> Optional[int]:
        return self.value_set.value_count()

    def bounds(self) -> Optional[tuple[Any, Any]]:
        """(min, max) of the non-null values, ``None`` sides unbounded; ``None`` if empty."""
        if self.value_set.empty:
            return None
        h = hull(self.value_set.as_ranges())
        f = self.type.from_key
        return (None if h.low is None else f(h.low), None if h.high is None else f(h.high))

    def ranges_view(self) -> Optional[tuple[Range, ...]]:
        return self.value_set.as_ranges()

    # ------------------------------------------------------------------ tests
    def contains(self, value: Any) -> bool:
        """Might a row with this value match? Exact except for bloom domains ("maybe")."""
        if value is None:
            return self.null_allowed
        return self.contains_key(self.type.key(self.type.coerce(value)))

    def contains_key(self, k: Any) -> bool:
        return self.value_set.contains_key(self.type, k)

    def might_match(self, value: Any) -> bool:
        return self.contains(value)

    def overlaps(self, low: Any, high: Any) -> bool:
        """Might any value in [low, high] be in the domain? For min/max statistics.

        ``None`` bounds are unbounded. For floating types the answer is also True whenever the
        domain may hold NaN, because Parquet statistics leave NaN out of min/max.
        """
        return self.value_set.overlaps(self.type, low, high)

    # ------------------------------------------------------------------ algebra
    def _check(self, other: "Domain") -> None:
        if not isinstance(other, Domain):
            raise DomainError(f"expected a Domain, got {other!r}")
        if other.type != self.type:
            raise DomainError(f"cannot combine domains of types {self.type} and {other.type}")

    def union(self, other: "Domain") -> "Domain":
        """OR: every value either side holds (merging build-side partials)."""
        self._check(other)
        return Domain(self.type, value_sets.union(self.type, self.value_set, other.value_set),
                      self.null_allowed or other.null_allowed)

    def intersect(self, other: "Domain") -> "Domain":
        """AND: values both sides may hold (static with dynamic filters)."""
        self._check(other)
        return Domain(self.type,
                      value_sets.intersect(self.type, self.value_set, other.value_set),
                      self.null_allowed and other.null_allowed)

    __or__ = union
    __and__ = intersect

    def compared(self, op: str) -> "Domain":
        """The values ``v`` for which ``v <op> b`` holds for some non-null ``b`` of this
        domain (``op``: ``<``, ``<=``, ``>``, ``>=``): below its maximum, or above its
        minimum. A join on ``f.day <= d.last`` keeps only rows of ``f`` in this domain of
        ``d.last``'s values; NULL never compares true, and no ``b`` at all admits nothing.
        Only the domain's bounds are read, so a range or bloom domain serves as well as its
        values (never narrower than the truth: sound for any ordered type whose keys order
        as Spark compares, which the caller checks)."""
        if op not in ("<", "<=", ">", ">="):
            raise DomainError(f"not an order comparison: {op!r}")
        bounds = self.bounds()
        if bounds is None:
            return Domain.none(self.type)
        low, high = bounds
        t = self.type
        if op in ("<", "<=") and high is None or op in (">", ">=") and low is None:
            return Domain.not_null(t)
        # a strict bound of a type with a successor is the next value's inclusive bound (a
        # row filter states inclusive ranges: ``x < 3`` is ``x <= 2``, not ``x <= 3``);
        # past the type's least or greatest value nothing is left
        step = (1 if t.is_integral else
                _dt.timedelta(days=1) if t.name == "date" else None)
        try:
            if op == "<" and step is not None:
                return Domain.range(t, None, high - step)
            if op == ">" and step is not None:
                return Domain.range(t, low + step, None)
        except (DomainError, OverflowError):
            return Domain.none(t)
        if op in ("<", "<="):
            return Domain.range(t, None, high, high_inclusive=op == "<=")
        return Domain.range(t, low, None, low_inclusive=op == ">=")

    def complement(self) -> "Domain":
        """NOT, only where exact: a bloom domain has no exact complement."""
        return Domain(self.type, self.value_set.complement(), not self.null_allowed)

    def simplify(self, max_distinct: int, bloom_fpp: Optional[float] = None,
                 bloom_capacity: Optional[int] = None) -> "Domain":
        """The collapse policy, in one place for collectors and merges alike.

        More than ``max_distinct`` discrete values (or ranges) become their min/max range;
        with ``bloom_fpp`` given, discrete values become a bloom filter within that range.
        Never drops a value.
        """
        if max_distinct < 0:
            raise DomainError(f"max_distinct must be >= 0, got {max_distinct}")
        vs = self.value_set.simplify(self.type, max_distinct, bloom_fpp, bloom_capacity)
        return self if vs is self.value_set else Domain(self.type, vs, self.null_allowed)

    # ------------------------------------------------------------------ identity
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Domain) and self.type == other.type
                and self.null_allowed == other.null_allowed and self.value_set == other.value_set)

    def __hash__(self) -> int:
        return hash((self.type, self.null_allowed, self.value_set))

    def describe(self, limit: int = 5) -> str:
        """Short human text, e.g. ``values(366)`` or ``range[1, 9]`` — for explain and logs."""
        return self.value_set.describe(self.type, self.null_allowed, limit)

    def __repr__(self) -> str:
        return f"Domain({self.type}, {self.describe()})"

    # ------------------------------------------------------------------ data form
    def to_data(self) -> dict[str, Any]:
        """A JSON-ready dict; the wire codec frames it. Keys are plain data only."""
        t = self.type
        d: dict[str, Any] = {"type": t.simple_string(), "null": self.null_allowed,
                             "kind": self.value_set.kind}
        d.update(self.value_set.to_data(t))
        return d

    @classmethod
    def from_data(cls, d: Any, max_values: int = 10_000_000) -> "Domain":
        """Strict inverse of :meth:`to_data`; raises :class:`DomainError` on anything else."""
        if not isinstance(d, dict):
            raise DomainError("a domain must be an object")
        t = DataType.parse(need_field(d, "type", str))
        null = need_field(d, "null", bool)
        kind = need_field(d, "kind", str)
        return cls(t, value_set_from_data(t, kind, d, max_values), null)


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
        if need_field(d, "none", bool):
            return cls.none()
        cols = need_field(d, "columns", list)
        out: dict[str, Domain] = {}
        for item in cols:
            if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                raise DomainError("a tuple domain column must be [name, domain]")
            if item[0] in out:
                raise DomainError(f"column {item[0]!r} appears twice")
            out[item[0]] = Domain.from_data(item[1])
        return cls.of(out)
