"""Intervals of keys (see :meth:`dpp.core.types.DataType.key`) and the pure helpers on sorted,
disjoint tuples of them: normalize, intersect, complement, hull, membership.

Type-agnostic: keys only need ``<`` and ``==``. Imports nothing of the project.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

__all__ = ["Range", "normalize_ranges", "intersect_ranges", "complement_ranges", "hull",
           "ranges_contain"]


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


def normalize_ranges(ranges: Iterable[Range]) -> tuple[Range, ...]:
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


def intersect_ranges(a: Sequence[Range], b: Sequence[Range]) -> tuple[Range, ...]:
    out = []
    for x in a:
        for y in b:
            lo, lo_inc = _max_low(x, y)
            hi, hi_inc = _min_high(x, y)
            r = Range(lo, lo_inc, hi, hi_inc)
            if not r.is_empty():
                out.append(r)
    return normalize_ranges(out)


def complement_ranges(rs: Sequence[Range]) -> tuple[Range, ...]:
    out = []
    lo, lo_inc = None, False
    for r in rs:
        if r.low is not None:
            out.append(Range(lo, lo_inc, r.low, not r.low_inclusive))
        if r.high is None:
            return normalize_ranges(out)
        lo, lo_inc = r.high, not r.high_inclusive
    out.append(Range(lo, lo_inc, None, False))
    return normalize_ranges(out)


def hull(rs: Sequence[Range]) -> Range:
    """The smallest single range covering ``rs`` (sorted, non-empty)."""
    return Range(rs[0].low, rs[0].low_inclusive, rs[-1].high, rs[-1].high_inclusive)


def ranges_contain(rs: Sequence[Range], k: Any) -> bool:
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
