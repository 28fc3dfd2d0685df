"""The filter service interface shared by the embedded and Redis backends.

A filter is registered with the number of build parts (tasks) it expects and its key types;
parts are published (idempotently per part index); waiters block until every expected part
has reported, the build failed, the filter was cancelled, or the timeout passed. ``wait``
never raises for backend faults: every way a filter can be missing is an ``outcome`` with a
reason, which the session reports as "no pruning".
"""
from __future__ import annotations

import abc
import logging
import threading
import time
from collections import Counter
from typing import Mapping, Optional, Union

from coordinator.merge import PartialMerger
from dpp.core.codec import DEFAULT_MAX_BYTES, decode_tuple_domain, encode
from dpp.core.domain import DataType, TupleDomain
from dpp.core.errors import CodecError, CoordinatorError
from dpp.core.outcomes import SERVICE_OUTCOMES, FilterOutcome, WaitResult

__all__ = ["FilterService", "WaitResult", "OUTCOMES", "normalize_key_types"]

log = logging.getLogger(__name__)

#: Every outcome :meth:`FilterService.wait` can return (their words).
OUTCOMES = tuple(o.value for o in SERVICE_OUTCOMES)


def normalize_key_types(key_types: Mapping[str, Union[DataType, str]]) -> dict[str, DataType]:
    return {str(k): DataType.parse(v) for k, v in key_types.items()}


class FilterService(abc.ABC):
    """register / publish / wait / fail / cancel, plus the filter cache.

    Also a :class:`collectors.PartialSink`: :meth:`executor_publisher`,
    :meth:`publish_on_driver` and :meth:`expect_parts` are what the build job calls.
    """

    #: "embedded" or "redis"
    backend: str = "?"

    def __init__(self, *, app_id: str, max_distinct: int, bloom_fpp: Optional[float],
                 max_bytes: int, bloom_capacity: Optional[int] = None,
                 default_ttl: float = 3600.0) -> None:
        if max_distinct < 0:
            raise CoordinatorError(f"max_distinct must be >= 0, got {max_distinct}")
        if max_bytes < 64:
            raise CoordinatorError(f"max_bytes must be at least 64, got {max_bytes}")
        if bloom_fpp is not None and not (0.0 < bloom_fpp < 1.0):
            raise CoordinatorError(f"bloom_fpp must be in (0, 1) or None, got {bloom_fpp}")
        self.app_id = app_id
        self.max_distinct = int(max_distinct)
        self.bloom_fpp = bloom_fpp
        self.bloom_capacity = bloom_capacity
        self.max_bytes = int(max_bytes)
        # frames are bounded by max_bytes; what they decompress to by this (zip-bomb guard)
        self.decode_limit = max(self.max_bytes, min(self.max_bytes * 64, DEFAULT_MAX_BYTES))
        self.default_ttl = float(default_ttl)
        self._counters: Counter[str] = Counter()
        self._counter_lock = threading.Lock()

    # ------------------------------------------------------------------ the interface
    @abc.abstractmethod
    def register(self, filter_id: str, expected_parts: int,
                 key_types: Mapping[str, DataType], ttl: float) -> None:
        """Starts a filter (again): no parts reported, ``expected_parts`` to wait for."""

    @abc.abstractmethod
    def publish(self, filter_id: str, part_index: int,
                partial: Union[TupleDomain, bytes]) -> None:
        """One build part's partial; a part index that already reported is ignored."""

    @abc.abstractmethod
    def wait(self, filter_id: str, timeout: float) -> WaitResult:
        """Blocks until the filter is complete or cannot be; never raises for backend faults."""

    @abc.abstractmethod
    def fail(self, filter_id: str, reason: str) -> None:
        """The build failed: waiters get outcome ``failed`` with ``reason``."""

    @abc.abstractmethod
    def cancel(self, filter_id: str) -> None:
        """Nobody needs the filter any more: waiters get ``cancelled``, parts are dropped."""

    @abc.abstractmethod
    def cache_get(self, fingerprint: str) -> Optional[TupleDomain]:
        """A cached filter by build-side fingerprint, or None (never raises)."""

    @abc.abstractmethod
    def cache_put(self, fingerprint: str, domain: TupleDomain, ttl: float) -> bool:
        """Caches a complete filter; False when it could not be stored (never raises)."""

    def cache_clear(self) -> int:
        """Forgets every cached filter this service can reach, as a new application on an
        empty cache would meet it (the TPC-DS bench's cold runs); the count forgotten, -1
        where not known. The default keeps nothing, so forgets nothing."""
        return 0

    @abc.abstractmethod
    def close(self) -> None:
        """Releases connections; pending waiters return ``cancelled``."""

    # ------------------------------------------------------------------ PartialSink
    @abc.abstractmethod
    def executor_publisher(self) -> object:
        """A picklable publisher for executor tasks, or None (partials via the driver)."""

    def publish_on_driver(self, filter_id: str, part_index: int, payload: bytes) -> None:
        self.publish(filter_id, part_index, payload)

    @abc.abstractmethod
    def expect_parts(self, filter_id: str, parts_expected: int,
                     key_types: Mapping[str, DataType]) -> None:
        """The build's exact part count, known just before its job runs; registers the
        filter (with the default TTL) if nobody did."""

    # ------------------------------------------------------------------ shared helpers
    def counters(self) -> dict[str, int]:
        """Monotonic event counts (registered, published, duplicate_parts, complete, ...)."""
        with self._counter_lock:
            return dict(self._counters)

    def _count(self, name: str, n: int = 1) -> None:
        with self._counter_lock:
            self._counters[name] += n

    def _decode_cached(self, fingerprint: str, payload: bytes) -> Optional[TupleDomain]:
        """A cached payload back to a filter; an unusable one is a miss, never an error."""
        try:
            td = decode_tuple_domain(payload, self.decode_limit)
        except CodecError as exc:
            log.warning("cached filter %s is unusable: %s", fingerprint[:16], exc)
            self._count("cache_misses")
            return None
        self._count("cache_hits")
        return td

    def _encode_for_cache(self, domain: TupleDomain) -> Optional[bytes]:
        try:
            return encode(domain, self.max_bytes)
        except CodecError as exc:
            log.info("filter not cached: %s", exc)
            return None

    def _classify(self, exc: CodecError) -> str:
        """``too_large`` for a payload over a size bound, ``corrupt`` for anything else."""
        return "too_large" if "over the bound" in str(exc) else "corrupt"

    def _new_merger(self, key_types: Mapping[str, DataType]) -> PartialMerger:
        return PartialMerger(key_types, max_distinct=self.max_distinct,
                             bloom_fpp=self.bloom_fpp, bloom_capacity=self.bloom_capacity)

    def _finish(self, filter_id: str, merger: PartialMerger) -> tuple[str, Optional[TupleDomain],
                                                                       Optional[str], int]:
        """(outcome, domain, reason, encoded_bytes) of a filter whose parts are all in."""
        try:
            domain = merger.result()
        except Exception as exc:  # a partial that slipped past the checks
            return "corrupt", None, f"filter {filter_id}: partials cannot be merged: {exc}", 0
        try:
            size = len(encode(domain, self.max_bytes))
        except CodecError as exc:
            return ("too_large", None, f"filter {filter_id}: merged filter "
                    f"({domain.describe()[:200]}) is too large: {exc}", 0)
        return "complete", domain, None, size

    def _result(self, outcome: str, *, t0: float, domain: Optional[TupleDomain] = None,
                reason: Optional[str] = None, expected: int = 0, reported: int = 0,
                size: int = 0) -> WaitResult:
        self._count(outcome)
        if outcome != "complete":
            log.info("filter wait ended %s: %s", outcome, reason)
        return WaitResult(domain if outcome == "complete" else None, FilterOutcome(outcome),
                          reason, expected, reported, size, time.monotonic() - t0)

    def __enter__(self) -> "FilterService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
