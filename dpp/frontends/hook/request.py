"""The relations one executed query wraps in the optimizer hook: filters, loads, one report."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from dpp.runtime.filter_runs import FilterRuns, FilterSpec
from dpp.runtime.report import JobReport
from hive_splits import Table

__all__ = ["Request"]


@dataclass
class Request:
    """The relations one executed query wraps: its filters, loads and report.

    A query's subqueries are optimized in runs of their own, and each run calls the rule; the
    runs of one query (one Spark execution id, its ``scope``) add to one request, so copies of
    a relation share a filter, a load and a token across runs too (Spark's subquery and
    exchange reuse compare file indexes), and the query gets one report."""

    report: JobReport
    runs: FilterRuns
    capacity: int                                   # the pool's threads: builds + loads
    scope: Optional[str] = None
    cfg: Any = None                                 # the settings it was planned with
    tokens: dict[str, tuple[Table, str]] = field(default_factory=dict)  # token -> (table, name)
    loads: dict[str, Future] = field(default_factory=dict)
    builds: dict[int, FilterSpec] = field(default_factory=dict)   # build signature -> filter
    shapes: dict[tuple, str] = field(default_factory=dict)        # relation shape -> token
    pending: list[Callable[[], None]] = field(default_factory=list)
    listed: set[str] = field(default_factory=set)
    whole: set[str] = field(default_factory=set)   # tokens of relations read whole
    # token -> (filter id, partition column) of the builds left to Spark's keys for its scan
    spark_keyed: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # token -> when Spark's listing of it asked dpp, and the (start, end) of each such wait:
    # how long Spark's execution waited on dpp (the report's ``listing_wait``)
    list_started: dict[str, float] = field(default_factory=dict)
    list_waits: list[tuple[float, float]] = field(default_factory=list)
    started: bool = False
    done: bool = False
    # planned during an explain: the report's name from the action's call site, at the first
    # listing (the explain's own call site is not where the query ran)
    relabel: Optional[Callable[[str], str]] = None
    created: float = field(default_factory=time.monotonic)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def listing_wait(self) -> float:
        """Seconds in which at least one of Spark's listings waited on dpp's answer (the
        union of the waits: two scans listed at once wait together)."""
        total, end = 0.0, float("-inf")
        for a, b in sorted(self.list_waits):
            if b > end:
                total += b - max(a, end)
                end = b
        return total

    def add(self, action: Callable[[], None]) -> None:
        """Runs ``action`` (start a build, submit a load) now if the request has started,
        else on its start; in order, so a load's filters are registered before it waits."""
        with self.lock:
            if self.started:
                action()
            else:
                self.pending.append(action)

    def ensure_started(self) -> None:
        with self.lock:
            if self.started:
                return
            self.started = True
            actions, self.pending = self.pending, []
            for action in actions:
                action()

    def fits(self, more: int) -> bool:
        return len(self.builds) + len(self.tokens) + more <= self.capacity
