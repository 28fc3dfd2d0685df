"""The embedded filter service: in-process, partials arrive through the driver.

Each filter has its own :class:`threading.Condition`; a waiter sleeps on it for the whole
remaining timeout and is woken by the publish that completes the filter (or by fail, cancel,
close) — no polling. The merge runs as parts arrive, so the last publish only finishes it.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

from coordinator.base import FilterService, WaitResult, normalize_key_types
from coordinator.merge import PartialMerger, PartialRejected
from dpp.core.codec import decode_tuple_domain
from dpp.core.domain import DataType, TupleDomain
from dpp.core.errors import CodecError, CoordinatorError

__all__ = ["EmbeddedFilterService"]

log = logging.getLogger(__name__)

_CACHE_ENTRIES = 256


@dataclass(eq=False)
class _Filter:
    filter_id: str
    expected: int
    key_types: dict[str, DataType]
    merger: PartialMerger
    expires_at: float
    cond: threading.Condition = field(default_factory=threading.Condition)
    state: str = "open"         # open, or the final outcome
    reason: Optional[str] = None
    domain: Optional[TupleDomain] = None
    size: int = 0


class _ProcessCache:
    """Encoded filters by fingerprint, shared by every embedded service of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: "OrderedDict[str, tuple[bytes, float]]" = OrderedDict()

    def get(self, fp: str) -> Optional[bytes]:
        with self._lock:
            item = self._items.get(fp)
            if item is None:
                return None
            if item[1] <= time.monotonic():
                del self._items[fp]
                return None
            self._items.move_to_end(fp)
            return item[0]

    def put(self, fp: str, payload: bytes, ttl: float) -> None:
        with self._lock:
            self._items[fp] = (payload, time.monotonic() + ttl)
            self._items.move_to_end(fp)
            while len(self._items) > _CACHE_ENTRIES:
                self._items.popitem(last=False)

    def clear(self) -> int:
        with self._lock:
            n = len(self._items)
            self._items.clear()
            return n


PROCESS_CACHE = _ProcessCache()


class EmbeddedFilterService(FilterService):
    """In-process backend (``spark.dpp.coordinator=embedded``)."""

    backend = "embedded"

    def __init__(self, *, app_id: str, max_distinct: int, bloom_fpp: Optional[float],
                 max_bytes: int, bloom_capacity: Optional[int] = None,
                 default_ttl: float = 3600.0) -> None:
        super().__init__(app_id=app_id, max_distinct=max_distinct, bloom_fpp=bloom_fpp,
                         max_bytes=max_bytes, bloom_capacity=bloom_capacity,
                         default_ttl=default_ttl)
        self._lock = threading.Lock()
        self._filters: dict[str, _Filter] = {}
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def register(self, filter_id: str, expected_parts: int,
                 key_types: Mapping[str, DataType], ttl: float) -> None:
        _check_expected(filter_id, expected_parts)
        kt = normalize_key_types(key_types)
        now = time.monotonic()
        with self._lock:
            if self._closed:
                raise CoordinatorError("the filter service is closed")
            self._sweep(now)
            f = self._filters.get(filter_id)
            if f is None:
                f = _Filter(filter_id, expected_parts, kt, self._new_merger(kt), now + ttl)
                self._filters[filter_id] = f
        with f.cond:
            # re-registering starts over; waiters already blocked keep waiting on it
            f.expected, f.key_types, f.merger = expected_parts, kt, self._new_merger(kt)
            f.expires_at = now + ttl
            f.state, f.reason, f.domain, f.size = "open", None, None, 0
            self._maybe_complete(f)
            f.cond.notify_all()
        self._count("registered")

    def expect_parts(self, filter_id: str, parts_expected: int,
                     key_types: Mapping[str, DataType]) -> None:
        _check_expected(filter_id, parts_expected)
        f = self._get(filter_id)
        if f is None:
            self.register(filter_id, parts_expected, key_types, self.default_ttl)
            return
        with f.cond:
            if f.expected != parts_expected:
                log.info("filter %s: build runs %d parts (registered with %d)", filter_id,
                         parts_expected, f.expected)
                f.expected = parts_expected
                if f.state == "open":
                    self._maybe_complete(f)
                    f.cond.notify_all()

    def publish(self, filter_id: str, part_index: int,
                partial: Union[TupleDomain, bytes]) -> None:
        f = self._get(filter_id)
        if f is None:
            raise CoordinatorError(f"filter {filter_id!r} is not registered")
        problem: Optional[tuple[str, str]] = None
        td: Optional[TupleDomain] = None
        if isinstance(partial, (bytes, bytearray, memoryview)):
            self._count("bytes_received", len(partial))
            if len(partial) > self.max_bytes:
                problem = ("too_large", f"filter {filter_id} part {part_index}: partial of "
                           f"{len(partial)} bytes is over the bound of {self.max_bytes}")
            else:
                try:
                    td = decode_tuple_domain(bytes(partial), self.decode_limit)
                except CodecError as exc:
                    problem = (self._classify(exc), f"filter {filter_id} part {part_index}: {exc}")
        else:
            td = partial
        with f.cond:
            if f.state != "open":
                self._count("ignored_parts")
                return
            if problem is None:
                assert td is not None
                try:
                    f.merger.check(part_index, td)
                    if part_index >= f.expected:
                        raise PartialRejected(f"part index {part_index} is outside the "
                                              f"{f.expected} expected parts")
                except PartialRejected as exc:
                    problem = ("corrupt", f"filter {filter_id}: {exc}")
            if problem is not None:
                f.state, f.reason = problem
                f.cond.notify_all()
                return
            assert td is not None
            if not f.merger.add(part_index, td):
                self._count("duplicate_parts")
                return
            self._count("published")
            if self._maybe_complete(f):
                f.cond.notify_all()

    def wait(self, filter_id: str, timeout: float) -> WaitResult:
        t0 = time.monotonic()
        deadline = t0 + max(0.0, float(timeout))
        f = self._get(filter_id)
        if f is None:
            return self._result("unavailable", t0=t0,
                                reason=f"filter {filter_id!r} is not registered")
        with f.cond:
            while f.state == "open":
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return self._result(
                        "timeout", t0=t0, expected=f.expected, reported=len(f.merger.parts),
                        reason=f"filter {filter_id}: {len(f.merger.parts)} of {f.expected} "
                               f"parts reported within {timeout} s")
                f.cond.wait(remaining)
            return self._result(f.state, t0=t0, domain=f.domain, reason=f.reason,
                                expected=f.expected, reported=len(f.merger.parts), size=f.size)

    def fail(self, filter_id: str, reason: str) -> None:
        self._end(filter_id, "failed", f"filter {filter_id}: build failed: {reason}",
                  keep_complete=True)

    def cancel(self, filter_id: str) -> None:
        self._end(filter_id, "cancelled", f"filter {filter_id} was cancelled",
                  keep_complete=False)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            filters = list(self._filters.values())
            self._filters.clear()
        for f in filters:
            with f.cond:
                if f.state == "open":
                    f.state, f.reason = "cancelled", "the filter service was closed"
                f.cond.notify_all()

    # ------------------------------------------------------------------ PartialSink
    def executor_publisher(self) -> None:
        return None

    # ------------------------------------------------------------------ cache
    def cache_get(self, fingerprint: str) -> Optional[TupleDomain]:
        payload = PROCESS_CACHE.get(fingerprint)
        if payload is None:
            self._count("cache_misses")
            return None
        return self._decode_cached(fingerprint, payload)

    def cache_put(self, fingerprint: str, domain: TupleDomain, ttl: float) -> bool:
        payload = self._encode_for_cache(domain)
        if payload is None:
            return False
        PROCESS_CACHE.put(fingerprint, payload, float(ttl))
        self._count("cache_puts")
        return True

    def cache_clear(self) -> int:
        """The process's cache is shared by every embedded service of this process."""
        return PROCESS_CACHE.clear()

    # ------------------------------------------------------------------ internals
    def _get(self, filter_id: str) -> Optional[_Filter]:
        with self._lock:
            return self._filters.get(filter_id)

    def _sweep(self, now: float) -> None:
        for fid in [k for k, f in self._filters.items() if f.expires_at <= now]:
            f = self._filters.pop(fid)
            with f.cond:
                if f.state == "open":
                    f.state, f.reason = "cancelled", f"filter {fid} expired (TTL)"
                f.cond.notify_all()

    def _maybe_complete(self, f: _Filter) -> bool:
        """Under ``f.cond``: finishes the filter once every expected part has reported."""
        if f.state != "open" or len(f.merger.parts) < f.expected:
            return False
        outside = [p for p in f.merger.parts if p >= f.expected]
        if outside:
            f.state, f.reason = "corrupt", (f"filter {f.filter_id}: part indexes {outside[:5]} "
                                            f"are outside the {f.expected} expected parts")
            return True
        f.state, f.domain, f.reason, f.size = self._finish(f.filter_id, f.merger)
        return True

    def _end(self, filter_id: str, state: str, reason: str, keep_complete: bool) -> None:
        f = self._get(filter_id)
        if f is None:
            return
        with f.cond:
            if f.state == "open" or not (keep_complete and f.state == "complete"):
                f.state, f.reason, f.domain = state, reason, None
                f.merger = self._new_merger(f.key_types)  # drop the parts' memory
            f.cond.notify_all()


def _check_expected(filter_id: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CoordinatorError(f"filter {filter_id!r}: expected_parts must be a non-negative "
                               f"integer, got {n!r}")
