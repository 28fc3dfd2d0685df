"""The one rule for bloom filter capacity, shared by build tasks and the merge.

Two bloom filters can be OR-ed only when they were made with the same capacity and fpp (see
``Domain.union``); otherwise the union falls back to their min/max envelope. Every build task
and the coordinator's merge therefore derive the capacity from the same inputs with this
function, so partials from different tasks stay mergeable as blooms.

Kept free of heavy imports: the coordinator imports it on the driver.
"""
from __future__ import annotations

from typing import Optional

__all__ = ["DEFAULT_BLOOM_CAPACITY", "effective_bloom_capacity"]

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
