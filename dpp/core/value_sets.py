"""The non-null values of a :class:`dpp.core.domain.Domain`: five kinds of value set, in key
space (see :meth:`dpp.core.types.DataType.key`).

``ALL`` and ``NONE`` are the two ends; ``values`` is an exact finite set of keys, ``range`` an
exact union of ranges, and ``bloom`` an approximate set (a bloom filter bounded by an exact
envelope) that may answer "maybe" for an absent key, never "no" for a present one.

Each kind owns what depends on it alone: membership, its ranges view, its count, its text,
its complement, its collapse and its wire form. What depends on a *pair* of kinds lives in one
place, :func:`union` and :func:`intersect` at the end of this module. Every operation is sound:
it may keep more values than the exact answer, never fewer.

Imports nothing of the project but the types, the ranges and the errors; pybloom_live and
bitarray only when a bloom filter is made.
"""
from __future__ import annotations

import base64
import bisect
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Sequence

from dpp.core.errors import DomainError
from dpp.core.ranges import (Range, complement_ranges, hull, intersect_ranges, normalize_ranges,
                             ranges_contain)
from dpp.core.types import NAN_KEY, DataType

__all__ = ["ValueSet", "ALL_VALUES", "NO_VALUES", "of_ranges", "union", "intersect",
           "value_set_from_data", "need_field", "new_bloom"]


class ValueSet(ABC):
    """The non-null values a domain may hold. Immutable; compared and hashed by value."""

    __slots__ = ()

    kind: ClassVar[str]
    everything: ClassVar[bool] = False
    """Holds every value (the ``all`` kind)."""
    empty: ClassVar[bool] = False
    """Holds no value (the ``none`` kind)."""
    exact: ClassVar[bool] = True
    """Answers membership exactly (all kinds but ``bloom``)."""

    @abstractmethod
    def as_ranges(self) -> tuple[Range, ...]:
        """The set as sorted, disjoint ranges; for a bloom filter, its exact envelope."""

    @abstractmethod
    def contains_key(self, t: DataType, k: Any) -> bool:
        """Might key ``k`` be in the set? Exact except for the bloom kind ("maybe")."""

    @abstractmethod
    def describe(self, t: DataType, null_allowed: bool, limit: int) -> str:
        """Short human text of the domain this set belongs to (see ``Domain.describe``)."""

    @classmethod
    @abstractmethod
    def from_data(cls, t: DataType, d: Mapping[str, Any], max_values: int) -> "ValueSet":
        """Strict inverse of :meth:`to_data`; raises :class:`DomainError` on anything else."""

    def to_data(self, t: DataType) -> dict[str, Any]:
        """The kind's own fields of the domain's JSON-ready dict (none for ALL and NONE)."""
        return {}

    def discrete_keys(self) -> Optional[tuple[Any, ...]]:
        """The keys, when the set is finite and exact; else ``None``."""
        return None

    def value_count(self) -> Optional[int]:
        """How many values the set holds, when known (estimated for a bloom filter)."""
        return None

    def overlaps(self, t: DataType, low: Any, high: Any) -> bool:
        """Might any value in [low, high] be in the set? ``None`` bounds are unbounded.

        For floating types also True whenever the set may hold NaN, because Parquet
        statistics leave NaN out of min/max.
        """
        if t.is_floating and self.contains_key(t, NAN_KEY):
            return True
        lo = None if low is None else t.key(t.coerce(low))
        hi = None if high is None else t.key(t.coerce(high))
        probe = Range(lo, lo is not None, hi, hi is not None)
        if probe.is_empty():
            return False
        return self._overlaps_keys(lo, hi, probe)

    def _overlaps_keys(self, lo: Any, hi: Any, probe: Range) -> bool:
        """:meth:`overlaps` once the bounds are keys and ``probe`` is not empty."""
        return bool(intersect_ranges(self.as_ranges(), (probe,)))

    def complement(self) -> "ValueSet":
        """NOT, only where exact (the bloom kind raises)."""
        return of_ranges(complement_ranges(self.as_ranges()))

    def simplify(self, t: DataType, max_distinct: int, bloom_fpp: Optional[float],
                 bloom_capacity: Optional[int]) -> "ValueSet":
        """The collapse policy for this kind (see ``Domain.simplify``); ``self`` if kept."""
        return self


def _or_null(null_allowed: bool) -> str:
    return " or NULL" if null_allowed else ""


def _hull_text(t: DataType, rs: Sequence[Range]) -> str:
    h = hull(rs)
    lo = "-inf" if h.low is None else repr(t.from_key(h.low))
    hi = "+inf" if h.high is None else repr(t.from_key(h.high))
    return f"[{lo}, {hi}]"


# ====================================================================== the five kinds

class _Singleton(ValueSet):
    """ALL or NONE: every instance of the kind is equal, named by the kind."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(self.kind)

    def __repr__(self) -> str:
        return self.kind.upper()


class _AllValues(_Singleton):
    kind = "all"
    everything = True

    def as_ranges(self) -> tuple[Range, ...]:
        return (Range(),)

    def contains_key(self, t: DataType, k: Any) -> bool:
        return True

    def overlaps(self, t: DataType, low: Any, high: Any) -> bool:
        return True

    def complement(self) -> ValueSet:
        return NO_VALUES

    def describe(self, t: DataType, null_allowed: bool, limit: int) -> str:
        return "ALL" if null_allowed else "NOT NULL"

    @classmethod
    def from_data(cls, t: DataType, d: Mapping[str, Any], max_values: int) -> ValueSet:
        return ALL_VALUES


class _NoValues(_Singleton):
    kind = "none"
    empty = True

    def as_ranges(self) -> tuple[Range, ...]:
        return ()

    def contains_key(self, t: DataType, k: Any) -> bool:
        return False

    def discrete_keys(self) -> Optional[tuple[Any, ...]]:
        return ()

    def value_count(self) -> Optional[int]:
        return 0

    def overlaps(self, t: DataType, low: Any, high: Any) -> bool:
        return False

    def complement(self) -> ValueSet:
        return ALL_VALUES

    def describe(self, t: DataType, null_allowed: bool, limit: int) -> str:
        return "NULL only" if null_allowed else "NONE"

    @classmethod
    def from_data(cls, t: DataType, d: Mapping[str, Any], max_values: int) -> ValueSet:
        return NO_VALUES


@dataclass(frozen=True)
class _Discrete(ValueSet):
    """An exact, finite set of keys, sorted."""

    kind: ClassVar[str] = "values"

    keys: tuple
    _set: frozenset = field(default=frozenset(), init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_set", frozenset(self.keys))

    def as_ranges(self) -> tuple[Range, ...]:
        return tuple(Range(k, True, k, True) for k in self.keys)

    def contains_key(self, t: DataType, k: Any) -> bool:
        return k in self._set

    def discrete_keys(self) -> Optional[tuple[Any, ...]]:
        return self.keys

    def value_count(self) -> Optional[int]:
        return len(self.keys)

    def _overlaps_keys(self, lo: Any, hi: Any, probe: Range) -> bool:
        keys = self.keys
        i = 0 if lo is None else bisect.bisect_left(keys, lo)
        return i < len(keys) and (hi is None or keys[i] <= hi)

    def simplify(self, t: DataType, max_distinct: int, bloom_fpp: Optional[float],
                 bloom_capacity: Optional[int]) -> ValueSet:
        """More than ``max_distinct`` keys become their min/max range, or with ``bloom_fpp``
        a bloom filter within it."""
        if len(self.keys) <= max_distinct:
            return self
        if bloom_fpp is not None:
            return _Bloom.of_keys(t, self.keys, bloom_fpp, bloom_capacity)
        return _Ranges((Range(self.keys[0], True, self.keys[-1], True),))

    def describe(self, t: DataType, null_allowed: bool, limit: int) -> str:
        shown = ", ".join(repr(t.from_key(k)) for k in self.keys[:limit])
        more = ", ..." if len(self.keys) > limit else ""
        return f"values({len(self.keys)}: {shown}{more}){_or_null(null_allowed)}"

    def to_data(self, t: DataType) -> dict[str, Any]:
        return {"values": [t.key_to_json(k) for k in self.keys]}

    @classmethod
    def from_data(cls, t: DataType, d: Mapping[str, Any], max_values: int) -> ValueSet:
        vals = need_field(d, "values", list)
        if not vals or len(vals) > max_values:
            raise DomainError(f"a values domain needs 1..{max_values} values")
        keys = [t.key_from_json(v) for v in vals]
        if any(not (a < b) for a, b in zip(keys, keys[1:])):
            raise DomainError("domain values are not strictly increasing")
        return cls(tuple(keys))


@dataclass(frozen=True)
class _Ranges(ValueSet):
    """An exact union of disjoint, sorted ranges."""

    kind: ClassVar[str] = "range"

    ranges: tuple[Range, ...]

    def as_ranges(self) -> tuple[Range, ...]:
        return self.ranges

    def contains_key(self, t: DataType, k: Any) -> bool:
        return ranges_contain(self.ranges, k)

    def simplify(self, t: DataType, max_distinct: int, bloom_fpp: Optional[float],
                 bloom_capacity: Optional[int]) -> ValueSet:
        """More than ``max_distinct`` ranges (at least one is always kept) become their hull."""
        if len(self.ranges) > max(max_distinct, 1):
            return _Ranges((hull(self.ranges),))
        return self

    def describe(self, t: DataType, null_allowed: bool, limit: int) -> str:
        return f"range({len(self.ranges)}){_hull_text(t, self.ranges)}{_or_null(null_allowed)}"

    def to_data(self, t: DataType) -> dict[str, Any]:
        return {"ranges": [_range_to_json(t, r) for r in self.ranges]}

    @classmethod
    def from_data(cls, t: DataType, d: Mapping[str, Any], max_values: int) -> ValueSet:
        return cls(_ranges_from_data(t, d, cls.kind, max_values))


class _Bloom(ValueSet):
    """Approximate membership: a bloom filter of keys, bounded by an exact envelope.

    Answers "maybe" for some absent keys, never "no" for a present one.
    """

    kind = "bloom"
    exact = False
    __slots__ = ("filter", "envelope", "_bits")

    def __init__(self, bloom: Any, envelope: tuple[Range, ...]) -> None:
        self.filter = bloom
        self.envelope = envelope
        self._bits = bloom.bitarray.tobytes()

    @classmethod
    def of_keys(cls, t: DataType, keys: Sequence[Any], fpp: float,
                capacity: Optional[int]) -> "_Bloom":
        """A filter over sorted, distinct ``keys`` (at least one), bounded by their min/max;
        sized for ``capacity`` but never for fewer than the keys."""
        bf = new_bloom(max(capacity or len(keys), len(keys)), fpp)
        for k in keys:
            bf.add(t.bloom_text(k), skip_check=True)
        return cls(bf, (Range(keys[0], True, keys[-1], True),))

    @property
    def params(self) -> tuple[int, float]:
        return int(self.filter.capacity), float(self.filter.error_rate)

    def with_keys(self, t: DataType, keys: Sequence[Any]) -> Optional["_Bloom"]:
        """A copy holding ``keys`` too, or None if that would exceed its capacity."""
        if self.filter.count + len(keys) > self.filter.capacity:
            return None
        bf = self.filter.copy()
        bf.count = self.filter.count
        for k in keys:
            bf.add(t.bloom_text(k), skip_check=True)
        env = normalize_ranges(self.envelope + tuple(Range(k, True, k, True) for k in keys))
        return _Bloom(bf, env)

    def as_ranges(self) -> tuple[Range, ...]:
        return self.envelope

    def contains_key(self, t: DataType, k: Any) -> bool:
        return ranges_contain(self.envelope, k) and t.bloom_text(k) in self.filter

    def value_count(self) -> Optional[int]:
        return int(self.filter.count) or None

    def complement(self) -> ValueSet:
        raise DomainError("the complement of a bloom domain is not exact")

    def simplify(self, t: DataType, max_distinct: int, bloom_fpp: Optional[float],
                 bloom_capacity: Optional[int]) -> ValueSet:
        """More than ``max_distinct`` envelope ranges (at least one is always kept) become
        their hull; the filter is kept."""
        if len(self.envelope) > max(max_distinct, 1):
            return _Bloom(self.filter, (hull(self.envelope),))
        return self

    def describe(self, t: DataType, null_allowed: bool, limit: int) -> str:
        return (f"bloom(~{self.filter.count}, fpp={self.params[1]}) in "
                f"{_hull_text(t, self.envelope)}{_or_null(null_allowed)}")

    def to_data(self, t: DataType) -> dict[str, Any]:
        return {"ranges": [_range_to_json(t, r) for r in self.envelope],
                "bloom": {"capacity": self.params[0], "fpp": self.params[1],
                          "count": int(self.filter.count),
                          "bits": base64.b64encode(self._bits).decode("ascii")}}

    @classmethod
    def from_data(cls, t: DataType, d: Mapping[str, Any], max_values: int) -> ValueSet:
        rs = _ranges_from_data(t, d, cls.kind, max_values)
        b = need_field(d, "bloom", dict)
        cap = need_field(b, "capacity", int)
        fpp = need_field(b, "fpp", float)
        count = need_field(b, "count", int)
        try:
            bits = base64.b64decode(need_field(b, "bits", str), validate=True)
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
        return cls(bf, rs)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _Bloom) and self.params == other.params
                and self.envelope == other.envelope and self._bits == other._bits)

    def __hash__(self) -> int:
        return hash((self.params, self.envelope, self._bits))

    def __repr__(self) -> str:
        return f"Bloom(capacity={self.params[0]}, fpp={self.params[1]}, envelope={self.envelope})"


ALL_VALUES = _AllValues()
NO_VALUES = _NoValues()
_BY_KIND: dict[str, type[ValueSet]] = {k.kind: k for k in (_AllValues, _NoValues, _Discrete,
                                                         _Ranges, _Bloom)}


def of_ranges(rs: tuple[Range, ...]) -> ValueSet:
    """The plainest kind holding exactly these normalized ranges: NONE, ALL, values or range."""
    if not rs:
        return NO_VALUES
    if len(rs) == 1 and rs[0].low is None and rs[0].high is None:
        return ALL_VALUES
    if all(r.is_point for r in rs):
        return _Discrete(tuple(r.low for r in rs))
    return _Ranges(rs)


# ====================================================================== bloom filters

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


# ====================================================================== wire form

def value_set_from_data(t: DataType, kind: str, d: Mapping[str, Any],
                        max_values: int) -> ValueSet:
    """The value set of a domain's data form ``d``, whose ``kind`` field reads ``kind``."""
    if kind not in _BY_KIND:
        raise DomainError(f"unknown domain kind {kind!r}")
    return _BY_KIND[kind].from_data(t, d, max_values)


def need_field(d: Mapping[str, Any], name: str, typ: type) -> Any:
    """Field ``name`` of a data form, checked to be a ``typ`` (an int is not a bool; an int
    where a float is asked for is read as one)."""
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


def _ranges_from_data(t: DataType, d: Mapping[str, Any], kind: str,
                      max_values: int) -> tuple[Range, ...]:
    raw = need_field(d, "ranges", list)
    if not raw or len(raw) > max_values:
        raise DomainError(f"a {kind} domain needs 1..{max_values} ranges")
    rs = tuple(_range_from_json(t, r) for r in raw)
    if normalize_ranges(rs) != rs:
        raise DomainError("domain ranges are not normalized")
    return rs


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


# ====================================================================== across kinds
# The one place that knows pairs of kinds. Everything else asks a value set about itself.

def union(t: DataType, a: ValueSet, b: ValueSet) -> ValueSet:
    """OR of two value sets of type ``t``; a bloom filter meets a range only as ranges."""
    if isinstance(a, _AllValues) or isinstance(b, _AllValues):
        return ALL_VALUES
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
                return _Bloom(bf, normalize_ranges(a.envelope + b.envelope))
            return of_ranges(normalize_ranges(a.envelope + b.envelope))
        bl, other = (a, b) if isinstance(a, _Bloom) else (b, a)
        assert isinstance(bl, _Bloom)
        if isinstance(other, _Discrete):
            merged = bl.with_keys(t, other.keys)
            if merged is not None:
                return merged
        # a range cannot enter a bloom filter: keep both as exact ranges (sound, coarser)
        return of_ranges(normalize_ranges(bl.envelope + other.as_ranges()))
    return of_ranges(normalize_ranges(a.as_ranges() + b.as_ranges()))


def intersect(t: DataType, a: ValueSet, b: ValueSet) -> ValueSet:
    """AND of two value sets of type ``t``; with a bloom filter on a side, still a bloom."""
    if isinstance(a, _NoValues) or isinstance(b, _NoValues):
        return NO_VALUES
    if isinstance(a, _AllValues):
        return b
    if isinstance(b, _AllValues):
        return a
    if isinstance(a, _Discrete) or isinstance(b, _Discrete):
        d, other = (a, b) if isinstance(a, _Discrete) else (b, a)
        assert isinstance(d, _Discrete)
        keys = tuple(k for k in d.keys if other.contains_key(t, k))
        return _Discrete(keys) if keys else NO_VALUES
    if isinstance(a, _Bloom) or isinstance(b, _Bloom):
        bl, other = (a, b) if isinstance(a, _Bloom) else (b, a)
        assert isinstance(bl, _Bloom)
        env = intersect_ranges(bl.envelope, other.as_ranges())
        if not env:
            return NO_VALUES
        bf = bl.filter
        if isinstance(other, _Bloom) and other.params == bl.params:
            bf = bl.filter.intersection(other.filter)
            bf.count = min(bl.filter.count, other.filter.count)
        return _Bloom(bf, env)
    return of_ranges(intersect_ranges(a.as_ranges(), b.as_ranges()))
