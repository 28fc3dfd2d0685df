"""The Redis filter service: executors publish partials straight to Redis.

Layout, per application and filter (every key has a TTL):

* ``dpp:{app_id}:{filter_id}:meta``  — hash: ``expected``, ``state`` (open, failed,
  cancelled), ``reason``, ``key_types`` (JSON of type names);
* ``dpp:{app_id}:{filter_id}:parts`` — hash: part index → codec bytes. ``HSET`` of a part index
  that already reported overwrites it, so retried and speculative attempts never double count;
* ``dpp:{app_id}:{filter_id}:events`` — pub/sub channel: ``p{index}`` after each part, ``m``
  after a change of meta (expected count, fail, cancel).
* ``dpp:cache:{fingerprint}`` — cached filters, shared across applications.

A waiter subscribes to the channel *before* reading what is already there, so it cannot miss
a part; it then sleeps in the pub/sub read for the remaining timeout and fetches only the parts
it was told about. Every Redis fault during a wait becomes outcome ``unavailable`` with the
reason; nothing from Redis is unpickled — payloads go through the size-bounded codec.
"""
from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Union
from urllib.parse import urlparse, urlunparse

from coordinator.base import FilterService, WaitResult, normalize_key_types
from coordinator.merge import PartialMerger, PartialRejected
from dpp.core.codec import decode_tuple_domain, encode
from dpp.core.domain import DataType, TupleDomain
from dpp.core.errors import CodecError, CoordinatorError

__all__ = ["RedisFilterService", "RedisPartialPublisher", "redact_url"]

log = logging.getLogger(__name__)

_FETCH_CHUNK = 1000
_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def redact_url(url: str) -> str:
    """The URL with its password replaced, for messages and logs."""
    try:
        p = urlparse(url)
    except ValueError:
        return "<unparseable redis url>"
    if p.password is None:
        return url
    netloc = p.netloc.rsplit("@", 1)[1]
    user = p.username or ""
    return urlunparse(p._replace(netloc=f"{user}:***@{netloc}"))


def _client(url: str, socket_timeout: float, connect_timeout: float) -> Any:
    """One client (connection pool) per URL and process; executors reuse it across tasks."""
    key = (os.getpid(), url, socket_timeout, connect_timeout)
    with _CLIENTS_LOCK:
        c = _CLIENTS.get(key)
        if c is None:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            # one quick retry: enough to replace a pooled connection to a restarted server,
            # short enough that a dead server is reported within the caller's timeout
            c = redis.Redis.from_url(url, socket_timeout=socket_timeout,
                                     socket_connect_timeout=connect_timeout,
                                     retry=Retry(NoBackoff(), 1), health_check_interval=0)
            _CLIENTS[key] = c
        return c


def _ttl_ms(ttl: float) -> int:
    return max(1000, int(math.ceil(float(ttl) * 1000)))


class _Keys:
    def __init__(self, namespace: str, filter_id: str) -> None:
        base = f"{namespace}:{filter_id}"
        self.meta = f"{base}:meta"
        self.parts = f"{base}:parts"
        self.events = f"{base}:events"


@dataclass(frozen=True)
class RedisPartialPublisher:
    """Publishes partials from executor tasks; small and picklable (URL, names, bounds)."""

    url: str
    namespace: str
    ttl: float
    max_bytes: int
    socket_timeout: float = 5.0
    connect_timeout: float = 5.0

    def publish(self, filter_id: str, part_index: int, payload: bytes) -> None:
        if len(payload) > self.max_bytes:
            raise CoordinatorError(f"filter {filter_id} part {part_index}: partial of "
                                   f"{len(payload)} bytes is over the bound of {self.max_bytes}")
        _publish(_client(self.url, self.socket_timeout, self.connect_timeout),
                 _Keys(self.namespace, filter_id), part_index, payload, self.ttl)

    def __repr__(self) -> str:  # never show the password
        return (f"RedisPartialPublisher({redact_url(self.url)!r}, namespace="
                f"{self.namespace!r}, ttl={self.ttl}, max_bytes={self.max_bytes})")


def _publish(client: Any, keys: _Keys, part_index: int, payload: bytes, ttl: float) -> None:
    pipe = client.pipeline(transaction=True)
    pipe.hset(keys.parts, str(int(part_index)), payload)
    pipe.pexpire(keys.parts, _ttl_ms(ttl))
    pipe.publish(keys.events, f"p{int(part_index)}")
    pipe.execute()


class RedisFilterService(FilterService):
    """Redis backend (``spark.dpp.coordinator=redis://...`` or ``rediss://...``)."""

    backend = "redis"

    def __init__(self, url: str, *, app_id: str, max_distinct: int, bloom_fpp: Optional[float],
                 max_bytes: int, bloom_capacity: Optional[int] = None,
                 default_ttl: float = 3600.0, socket_timeout: float = 5.0,
                 connect_timeout: float = 2.0) -> None:
        super().__init__(app_id=app_id, max_distinct=max_distinct, bloom_fpp=bloom_fpp,
                         max_bytes=max_bytes, bloom_capacity=bloom_capacity,
                         default_ttl=default_ttl)
        self.url = url
        self.namespace = f"dpp:{app_id}"
        self.socket_timeout = float(socket_timeout)
        self.connect_timeout = float(connect_timeout)
        self._closed = False
        self._lock = threading.Lock()
        self._key_types: dict[str, dict[str, DataType]] = {}
        self._where = redact_url(url)
        import redis

        self._redis_errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._client = redis.Redis.from_url(
            url, socket_timeout=self.socket_timeout,
            socket_connect_timeout=self.connect_timeout,
            retry=_retry(), health_check_interval=0)

    def __repr__(self) -> str:
        return f"RedisFilterService({self._where!r}, app_id={self.app_id!r})"

    # ------------------------------------------------------------------ lifecycle
    def register(self, filter_id: str, expected_parts: int,
                 key_types: Mapping[str, DataType], ttl: float) -> None:
        _check_expected(filter_id, expected_parts)
        kt = normalize_key_types(key_types)
        keys = _Keys(self.namespace, filter_id)
        with self._lock:
            self._key_types[filter_id] = kt
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(keys.parts, keys.meta)
            pipe.hset(keys.meta, mapping={
                "expected": str(expected_parts), "state": "open", "reason": "",
                "key_types": json.dumps({k: t.simple_string() for k, t in kt.items()}),
                "ttl": repr(float(ttl))})
            pipe.pexpire(keys.meta, _ttl_ms(ttl))
            pipe.publish(keys.events, "m")
            pipe.execute()
        except self._redis_errors as exc:
            self._count("unavailable")
            raise CoordinatorError(f"cannot register filter {filter_id} in Redis at "
                                   f"{self._where}: {_describe(exc)}") from None
        self._count("registered")

    def expect_parts(self, filter_id: str, parts_expected: int,
                     key_types: Mapping[str, DataType]) -> None:
        _check_expected(filter_id, parts_expected)
        keys = _Keys(self.namespace, filter_id)
        try:
            if not self._client.exists(keys.meta):
                self.register(filter_id, parts_expected, key_types, self.default_ttl)
                return
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(keys.meta, "expected", str(parts_expected))
            pipe.publish(keys.events, "m")
            pipe.execute()
        except self._redis_errors as exc:
            self._count("unavailable")
            raise CoordinatorError(f"cannot update filter {filter_id} in Redis at "
                                   f"{self._where}: {_describe(exc)}") from None

    def publish(self, filter_id: str, part_index: int,
                partial: Union[TupleDomain, bytes]) -> None:
        if isinstance(partial, TupleDomain):
            try:
                payload = encode(partial, self.max_bytes)
            except CodecError as exc:
                raise CoordinatorError(f"filter {filter_id} part {part_index}: {exc}") from None
        else:
            payload = bytes(partial)
        try:
            _publish(self._client, _Keys(self.namespace, filter_id), part_index, payload,
                     self._ttl_of(filter_id))
        except self._redis_errors as exc:
            self._count("unavailable")
            raise CoordinatorError(f"cannot publish filter {filter_id} part {part_index} to "
                                   f"Redis at {self._where}: {_describe(exc)}") from None
        self._count("published")
        self._count("bytes_received", len(payload))

    def fail(self, filter_id: str, reason: str) -> None:
        self._set_state(filter_id, "failed", f"filter {filter_id}: build failed: {reason}",
                        drop_parts=False)

    def cancel(self, filter_id: str) -> None:
        self._set_state(filter_id, "cancelled", f"filter {filter_id} was cancelled",
                        drop_parts=True)

    def close(self) -> None:
        self._closed = True
        try:
            self._client.close()
            self._client.connection_pool.disconnect()
        except Exception:  # pragma: no cover - closing is best effort
            pass

    # ------------------------------------------------------------------ PartialSink
    def executor_publisher(self) -> RedisPartialPublisher:
        return RedisPartialPublisher(self.url, self.namespace, self.default_ttl, self.max_bytes,
                                     self.socket_timeout, max(self.connect_timeout, 5.0))

    # ------------------------------------------------------------------ wait
    def wait(self, filter_id: str, timeout: float) -> WaitResult:
        t0 = time.monotonic()
        deadline = t0 + max(0.0, float(timeout))
        keys = _Keys(self.namespace, filter_id)
        w = _Waiter(self, filter_id, keys, t0)
        pubsub = None
        try:
            pubsub = self._client.pubsub(ignore_subscribe_messages=False)
            pubsub.subscribe(keys.events)
            # the subscription must be active before the first read of state; its confirmation
            # is one round trip, allowed even to a zero-timeout wait (a poll of the current
            # state), else a poll would never see a filter that is complete
            confirm_by = max(deadline, time.monotonic() + self.socket_timeout)
            while True:
                msg = pubsub.get_message(timeout=max(0.0, confirm_by - time.monotonic()))
                if msg is not None and msg.get("type") == "subscribe":
                    break
                if time.monotonic() >= confirm_by:
                    return w.timeout(timeout)
            w.read_meta()
            w.fetch(None)
            while True:
                done = w.finished()
                if done is not None:
                    return done
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    w.fetch(None)  # a last full look before giving up
                    return w.finished() or w.timeout(timeout)
                msg = pubsub.get_message(timeout=remaining)
                new_parts: set[int] = set()
                meta_changed = False
                while msg is not None:
                    if msg.get("type") == "message":
                        data = msg.get("data") or b""
                        if data[:1] == b"p":
                            try:
                                new_parts.add(int(data[1:]))
                            except ValueError:
                                meta_changed = True
                        else:
                            meta_changed = True
                    msg = pubsub.get_message(timeout=0)  # drain what is already there
                if meta_changed:
                    w.read_meta()
                if new_parts:
                    w.fetch(new_parts)
        except _Stop as stop:
            return stop.result
        except self._redis_errors as exc:
            if self._closed:
                return self._result("cancelled", t0=t0, reason="the filter service was closed",
                                    expected=w.expected, reported=len(w.merger.parts))
            return self._result("unavailable", t0=t0, expected=w.expected,
                                reported=len(w.merger.parts),
                                reason=f"Redis at {self._where} is unavailable while waiting "
                                       f"for filter {filter_id}: {_describe(exc)}")
        finally:
            if pubsub is not None:
                try:
                    pubsub.close()
                except Exception:  # pragma: no cover
                    pass

    # ------------------------------------------------------------------ cache
    def cache_get(self, fingerprint: str) -> Optional[TupleDomain]:
        key = f"dpp:cache:{fingerprint}"
        try:
            size = self._client.strlen(key)
            if not size:
                self._count("cache_misses")
                return None
            if size > self.max_bytes:
                log.warning("cached filter %s is %d bytes, over the bound", fingerprint[:16],
                            size)
                self._count("cache_misses")
                return None
            payload = self._client.get(key)
        except self._redis_errors as exc:
            log.warning("filter cache unavailable at %s: %s", self._where, _describe(exc))
            self._count("cache_misses")
            return None
        return self._decode_cached(fingerprint, payload)

    def cache_put(self, fingerprint: str, domain: TupleDomain, ttl: float) -> bool:
        payload = self._encode_for_cache(domain)
        if payload is None:
            return False
        try:
            self._client.set(f"dpp:cache:{fingerprint}", payload, px=_ttl_ms(ttl))
        except self._redis_errors as exc:
            log.warning("filter cache unavailable at %s: %s", self._where, _describe(exc))
            return False
        self._count("cache_puts")
        return True

    def cache_clear(self) -> int:
        """Every ``dpp:cache:*`` key of this Redis (the cache is shared by the applications
        that use it: they meet it empty afterwards too); -1 when Redis cannot be reached."""
        try:
            keys = list(self._client.scan_iter(match="dpp:cache:*", count=1000))
            for i in range(0, len(keys), 500):
                self._client.delete(*keys[i:i + 500])
        except self._redis_errors as exc:
            log.warning("filter cache unavailable at %s: %s", self._where, _describe(exc))
            return -1
        return len(keys)

    # ------------------------------------------------------------------ internals
    def _ttl_of(self, filter_id: str) -> float:
        return self.default_ttl

    def _set_state(self, filter_id: str, state: str, reason: str, drop_parts: bool) -> None:
        keys = _Keys(self.namespace, filter_id)
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(keys.meta, mapping={"state": state, "reason": reason})
            pipe.pexpire(keys.meta, _ttl_ms(self.default_ttl))
            if drop_parts:
                pipe.delete(keys.parts)
            pipe.publish(keys.events, "m")
            pipe.execute()
        except self._redis_errors as exc:
            # best effort: a waiter that cannot hear this cannot hear Redis at all, and ends
            # as unavailable or timeout on its own
            self._count("unavailable")
            log.warning("cannot mark filter %s %s in Redis at %s: %s", filter_id, state,
                        self._where, _describe(exc))

    def _local_key_types(self, filter_id: str) -> Optional[dict[str, DataType]]:
        with self._lock:
            return self._key_types.get(filter_id)


class _Stop(Exception):
    def __init__(self, result: WaitResult) -> None:
        self.result = result


class _Waiter:
    """One wait's view of a filter: meta, the parts fetched so far, their running merge."""

    def __init__(self, svc: RedisFilterService, filter_id: str, keys: _Keys, t0: float) -> None:
        self.svc, self.filter_id, self.keys, self.t0 = svc, filter_id, keys, t0
        self.expected = 0
        self.state = "open"
        self.reason: Optional[str] = None
        kt = svc._local_key_types(filter_id)
        self.merger: PartialMerger = svc._new_merger(kt or {})
        self._have_types = kt is not None

    def _stop(self, outcome: str, reason: Optional[str], domain: Optional[TupleDomain] = None,
              size: int = 0) -> "_Stop":
        return _Stop(self.svc._result(outcome, t0=self.t0, domain=domain, reason=reason,
                                      expected=self.expected, reported=len(self.merger.parts),
                                      size=size))

    def read_meta(self) -> None:
        meta = self.svc._client.hgetall(self.keys.meta)
        if not meta:
            raise self._stop("unavailable", f"filter {self.filter_id} is not registered in "
                                            f"Redis at {self.svc._where} (never, expired or "
                                            f"lost in a restart)")
        try:
            self.expected = int(meta.get(b"expected", b"0"))
            self.state = meta.get(b"state", b"open").decode()
            self.reason = meta.get(b"reason", b"").decode() or None
            if not self._have_types:
                raw = json.loads(meta.get(b"key_types", b"{}"))
                self.merger = self.svc._new_merger(normalize_key_types(raw))
                self._have_types = True
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise self._stop("corrupt", f"filter {self.filter_id}: meta data in Redis is "
                                        f"malformed: {exc}") from None

    def fetch(self, indexes: Optional[Iterable[int]]) -> None:
        """Fetches, checks and merges parts not seen yet (all of them when ``None``)."""
        client = self.svc._client
        if indexes is None:
            fetched = list(client.hgetall(self.keys.parts).items())
        else:
            todo = sorted(i for i in set(indexes) if i not in self.merger.parts)
            fetched = []
            for start in range(0, len(todo), _FETCH_CHUNK):
                chunk = [str(i).encode() for i in todo[start:start + _FETCH_CHUNK]]
                fetched.extend(zip(chunk, client.hmget(self.keys.parts, chunk)))
        for raw, payload in fetched:
            try:
                i = int(raw)
            except ValueError:
                raise self._stop("corrupt", f"filter {self.filter_id}: part key "
                                            f"{raw[:40]!r} is not an index") from None
            if payload is None or i in self.merger.parts:
                continue  # dropped meanwhile (cancel: meta tells why), or already merged
            self.svc._count("bytes_received", len(payload))
            if len(payload) > self.svc.max_bytes:
                raise self._stop("too_large", f"filter {self.filter_id} part {i}: partial of "
                                              f"{len(payload)} bytes is over the bound of "
                                              f"{self.svc.max_bytes}")
            try:
                td = decode_tuple_domain(payload, self.svc.decode_limit)
                self.merger.check(i, td)
            except CodecError as exc:
                raise self._stop(self.svc._classify(exc), f"filter {self.filter_id} part "
                                 f"{i} in Redis is rejected: {exc}") from None
            except PartialRejected as exc:
                raise self._stop("corrupt", f"filter {self.filter_id} part {i} in Redis "
                                            f"is rejected: {exc}") from None
            self.merger.add(i, td)

    def finished(self) -> Optional[WaitResult]:
        if self.state in ("failed", "cancelled"):
            return self.svc._result(self.state, t0=self.t0, reason=self.reason,
                                    expected=self.expected, reported=len(self.merger.parts))
        if self.state != "open":
            return self.svc._result("corrupt", t0=self.t0, expected=self.expected,
                                    reported=len(self.merger.parts),
                                    reason=f"filter {self.filter_id}: unknown state "
                                           f"{self.state!r} in Redis")
        if len(self.merger.parts) < self.expected:
            return None
        outside = sorted(p for p in self.merger.parts if p >= self.expected)
        if outside:
            return self.svc._result("corrupt", t0=self.t0, expected=self.expected,
                                    reported=len(self.merger.parts),
                                    reason=f"filter {self.filter_id}: part indexes "
                                           f"{outside[:5]} are outside the {self.expected} "
                                           f"expected parts")
        outcome, domain, reason, size = self.svc._finish(self.filter_id, self.merger)
        return self.svc._result(outcome, t0=self.t0, domain=domain, reason=reason,
                                expected=self.expected, reported=len(self.merger.parts),
                                size=size)

    def timeout(self, timeout: float) -> WaitResult:
        return self.svc._result("timeout", t0=self.t0, expected=self.expected,
                                reported=len(self.merger.parts),
                                reason=f"filter {self.filter_id}: {len(self.merger.parts)} of "
                                       f"{self.expected} parts reported within {timeout} s")


def _retry() -> Any:
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), 1)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or "no detail"
    return f"{type(exc).__name__}: {text}"[:300]


def _check_expected(filter_id: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CoordinatorError(f"filter {filter_id!r}: expected_parts must be a non-negative "
                               f"integer, got {n!r}")
