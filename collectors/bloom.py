"""The one rule for bloom filter capacity, shared by build tasks and the merge: it lives with
the collapse policy in :mod:`dpp.core.policy`; kept importable here for callers of old."""
from __future__ import annotations

from dpp.core.policy import DEFAULT_BLOOM_CAPACITY, effective_bloom_capacity

__all__ = ["DEFAULT_BLOOM_CAPACITY", "effective_bloom_capacity"]
