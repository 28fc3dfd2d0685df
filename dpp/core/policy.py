"""When a value set is too large to travel as values: the collapse policy, as one value.

Build tasks, the coordinator's merge and the cache must collapse alike — a bloom filter can be
OR-ed with another only when both were made with the same capacity and fpp — so the three
numbers that decide it travel together, and the capacity is derived in one place.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from dpp.core.domain import Domain, TupleDomain

__all__ = ["DEFAULT_BLOOM_CAPACITY", "CollapsePolicy", "effective_bloom_capacity"]

#: Capacity used when the caller gives none. At fpp 0.01 a filter of this size is about
#: 120 KB of bits, small next to the codec's bound, and holds ten times the default
#: ``spark.dpp.maxDistinctValues`` the session is expected to use.
DEFAULT_BLOOM_CAPACITY = 100_000


def effective_bloom_capacity(max_distinct: int, bloom_capacity: Optional[int]) -> int:
    """The capacity every task and the merge use: the given one, else a default above
    ``max_distinct`` (a bloom is only made once there are more than ``max_distinct`` values)."""
    if bloom_capacity is not None:
        if bloom_capacity < 1:
            raise ValueError(f"bloom capacity must be >= 1, got {bloom_capacity}")
        return int(bloom_capacity)
    return max(DEFAULT_BLOOM_CAPACITY, 4 * (int(max_distinct) + 1))


@dataclass(frozen=True)
class CollapsePolicy:
    """More than ``max_distinct`` values collapse to min/max ranges, plus a bloom filter of
    ``bloom_capacity`` at ``bloom_fpp`` when blooms are on (``bloom_fpp`` not None)."""

    max_distinct: int
    bloom_fpp: Optional[float]
    bloom_capacity: int

    @classmethod
    def of(cls, max_distinct: int, bloom_fpp: Optional[float] = None,
           bloom_capacity: Optional[int] = None) -> "CollapsePolicy":
        return cls(int(max_distinct), bloom_fpp,
                   effective_bloom_capacity(max_distinct, bloom_capacity))

    @property
    def exact_limit(self) -> int:
        """How many distinct values may be held exactly before only min/max is kept."""
        return self.bloom_capacity if self.bloom_fpp is not None else self.max_distinct

    def simplify(self, d: Domain) -> Domain:
        return d.simplify(self.max_distinct, self.bloom_fpp, self.bloom_capacity)

    def simplify_all(self, td: TupleDomain) -> TupleDomain:
        return td.simplify(self.max_distinct, self.bloom_fpp, self.bloom_capacity)
