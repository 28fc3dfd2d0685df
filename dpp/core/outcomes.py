"""What became of a dynamic filter: one vocabulary for the filter service, the split loader, the
session and the report, and the one result a wait returns.

Every outcome but ``complete`` means "no pruning by this filter": the query still runs, and
the report says why.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from dpp.core.domain import TupleDomain

__all__ = ["FilterOutcome", "SERVICE_OUTCOMES", "REPORTED_OUTCOMES", "WaitResult"]


class FilterOutcome(str, enum.Enum):
    """A filter's outcome; a ``str`` so that it compares, prints and serializes as its word."""

    # what the filter service's wait() can answer
    COMPLETE = "complete"
    TIMEOUT = "timeout"
    FAILED = "failed"
    TOO_LARGE = "too_large"
    CORRUPT = "corrupt"
    CANCELLED = "cancelled"
    UNAVAILABLE = "unavailable"          # the service could not be reached
    # what the session and the loader conclude
    TYPE_MISMATCH = "type_mismatch"      # the key cannot be compared in the column's type
    NOT_USED = "not_used"
    SKIPPED = "skipped"                  # not built: it is known not to prune (reported why)
    # the loader's own states of a filter it holds
    PENDING = "pending"
    UNKNOWN_COLUMN = "unknown_column"
    UNUSED = "unused"                    # a data column while statistics pruning is off
    NOT_WAITED = "not_waited"            # nothing was left to prune when it would be needed

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: Every outcome :meth:`coordinator.FilterService.wait` can return.
SERVICE_OUTCOMES: tuple[FilterOutcome, ...] = (
    FilterOutcome.COMPLETE, FilterOutcome.TIMEOUT, FilterOutcome.FAILED,
    FilterOutcome.TOO_LARGE, FilterOutcome.CORRUPT, FilterOutcome.CANCELLED,
    FilterOutcome.UNAVAILABLE)
#: The outcomes a job report's filter entry may carry.
REPORTED_OUTCOMES: tuple[FilterOutcome, ...] = (
    FilterOutcome.COMPLETE, FilterOutcome.TIMEOUT, FilterOutcome.FAILED,
    FilterOutcome.TOO_LARGE, FilterOutcome.CORRUPT, FilterOutcome.CANCELLED,
    FilterOutcome.NOT_USED, FilterOutcome.UNAVAILABLE, FilterOutcome.TYPE_MISMATCH,
    FilterOutcome.SKIPPED)


@dataclass(frozen=True)
class WaitResult:
    """What a waiter got: a domain only when ``outcome`` is ``complete``.

    The filter service answers with the build side's columns; the session hands the split
    loader the same result with the domain keyed by the probe column, in its type.
    """

    domain: Optional[TupleDomain]
    outcome: FilterOutcome
    reason: Optional[str] = None
    parts_expected: int = 0
    parts_reported: int = 0
    encoded_bytes: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", FilterOutcome(self.outcome))

    @property
    def ok(self) -> bool:
        return self.outcome is FilterOutcome.COMPLETE
