"""The filter service: protocol behaviour on both backends, and Redis faults."""
from __future__ import annotations

import random
import threading
import time

import pytest

from coordinator import (EmbeddedFilterService, RedisFilterService, fingerprint, make_service,
                         parse_coordinator_spec)
from coordinator.embedded import PROCESS_CACHE
from dpp.core.codec import encode
from dpp.core.domain import BIGINT, STRING, Domain, TupleDomain
from dpp.core.errors import ConfigError, CoordinatorError

KT = {"k": BIGINT}


def part(*values, null=False):
    return TupleDomain.of({"k": Domain.values(BIGINT, values, null_allowed=null)})


def in_thread(fn, *args):
    out: dict = {}

    def run():
        out["r"] = fn(*args)

    t = threading.Thread(target=run)
    t.start()
    return t, out


@pytest.fixture(params=["embedded", "redis"])
def service(request):
    spec = "embedded" if request.param == "embedded" else \
        request.getfixturevalue("redis_server").url
    svc = make_service(spec, app_id=f"t-{request.node.name}", max_distinct=10, bloom_fpp=None,
                       max_bytes=4096)
    yield svc
    svc.close()


# --------------------------------------------------------------------------- both backends

def test_complete_when_every_expected_part_reported(service):
    service.register("f", 3, KT, 60)
    service.publish("f", 0, part(1, 2))
    service.publish("f", 2, encode(part(5)))
    assert service.wait("f", 0.2).outcome == "timeout"
    service.publish("f", 1, TupleDomain.none())          # an empty task
    w = service.wait("f", 5)
    assert w.outcome == "complete" and w.reason is None
    assert w.domain == part(1, 2, 5)
    assert (w.parts_expected, w.parts_reported) == (3, 3) and w.encoded_bytes > 0


def test_repeated_part_index_never_double_counts(service):
    service.register("f", 2, KT, 60)
    service.publish("f", 0, part(1))
    service.publish("f", 0, part(1))                     # retried / speculative attempt
    w = service.wait("f", 0.2)
    assert w.outcome == "timeout" and w.parts_reported == 1
    service.publish("f", 1, part(2))
    w = service.wait("f", 5)
    assert w.outcome == "complete" and w.parts_reported == 2 and w.domain == part(1, 2)


def test_timeout_reports_progress(service):
    service.register("f", 4, KT, 60)
    service.publish("f", 0, part(1))
    w = service.wait("f", 0.1)
    assert w.outcome == "timeout" and w.domain is None
    assert (w.parts_expected, w.parts_reported) == (4, 1) and "1 of 4" in w.reason


def test_fail_wakes_waiter_with_reason(service):
    service.register("f", 2, KT, 60)
    t, out = in_thread(service.wait, "f", 30)
    time.sleep(0.2)
    service.fail("f", "executor lost")
    t.join(10)
    assert out["r"].outcome == "failed" and "executor lost" in out["r"].reason


def test_cancel_wakes_waiter(service):
    service.register("f", 2, KT, 60)
    t, out = in_thread(service.wait, "f", 30)
    time.sleep(0.2)
    service.cancel("f")
    t.join(10)
    assert out["r"].outcome == "cancelled"
    assert service.wait("f", 0.1).outcome == "cancelled"


def test_merged_result_is_collapsed_by_policy(service):
    service.register("f", 3, KT, 60)
    service.publish("f", 0, part(*range(0, 6)))
    service.publish("f", 1, part(*range(6, 12), null=True))   # 12 > max_distinct 10
    service.publish("f", 2, part(100))
    d = service.wait("f", 5).domain.get("k")
    assert d.kind == "range" and d.bounds() == (0, 100) and d.null_allowed


def test_merged_result_over_max_bytes_is_too_large(redis_server):
    for spec in ("embedded", redis_server.url):
        svc = make_service(spec, app_id="t-too-large", max_distinct=100_000, bloom_fpp=None,
                           max_bytes=3000)
        try:
            svc.register("f", 2, KT, 60)
            rnd = random.Random(7)
            vals = rnd.sample(range(10**15), 400)      # incompressible, each part fits
            svc.publish("f", 0, part(*vals[:200]))
            svc.publish("f", 1, part(*vals[200:]))
            w = svc.wait("f", 5)
            assert w.outcome == "too_large", w
            assert "3000" in w.reason and w.domain is None
        finally:
            svc.close()


def test_wrong_column_type_is_corrupt(service):
    service.register("f", 1, KT, 60)
    service.publish("f", 0, TupleDomain.of({"k": Domain.values(STRING, ["x"])}))
    w = service.wait("f", 5)
    assert w.outcome == "corrupt" and "'k'" in w.reason


def test_zero_expected_parts_is_complete_and_none(service):
    service.register("f", 0, KT, 60)
    w = service.wait("f", 1)
    assert w.outcome == "complete" and w.domain.is_none()


def test_expect_parts_overrides_registered_count(service):
    service.register("f", 1, KT, 60)
    service.expect_parts("f", 2, KT)
    service.publish("f", 0, part(1))
    assert service.wait("f", 0.1).outcome == "timeout"
    service.publish("f", 1, part(2))
    assert service.wait("f", 5).domain == part(1, 2)


def test_cache_hit_and_miss_on_file_change(service):
    files = [("file:/d/part-0.parquet", 100, 1.5)]
    fp = fingerprint("select k from d where x = 1", ["k"], files)
    assert service.cache_get(fp) is None
    assert service.cache_put(fp, part(1, 2), 60)
    assert service.cache_get(fp) == part(1, 2)
    changed = fingerprint("select k from d where x = 1", ["k"],
                          [("file:/d/part-0.parquet", 100, 2.5)])
    assert changed != fp and service.cache_get(changed) is None
    c = service.counters()
    assert c["cache_hits"] == 1 and c["cache_misses"] == 2


# --------------------------------------------------------------------------- embedded only

def test_cache_clear_forgets_every_cached_filter(service):
    """What the TPC-DS bench's cold runs start from: a cached filter is gone afterwards, and
    a filter put again after the clearing is cached again."""
    fps = [fingerprint(f"q{i}", ["k"], [("file:/x", i, 1.0)]) for i in range(3)]
    for i, fp in enumerate(fps):
        assert service.cache_put(fp, part(i), 60)
    assert service.cache_get(fps[1]) == part(1)
    assert service.cache_clear() >= 3
    assert all(service.cache_get(fp) is None for fp in fps)
    assert service.cache_clear() == 0
    assert service.cache_put(fps[0], part(7), 60)
    assert service.cache_get(fps[0]) == part(7)


def test_redis_cache_clear_leaves_filters_in_flight(redis_server):
    """Only the cache's keys go: a filter being built (its parts, its state) is untouched."""
    svc = _redis(redis_server.url, app="t-clear")
    svc.register("f-live", 1, KT, 60)
    fp = fingerprint("q", ["k"], [("file:/y", 1, 1.0)])
    assert svc.cache_put(fp, part(5), 60)
    assert svc.cache_clear() >= 1
    svc.publish("f-live", 0, encode(part(3)))
    res = svc.wait("f-live", 5)
    assert res.outcome == "complete" and res.domain == part(3)
    assert svc.cache_get(fp) is None
    svc.close()


def test_redis_cache_clear_unreachable_is_minus_one(fresh_redis):
    svc = _redis(fresh_redis.url, app="t-clear-down")
    fresh_redis.stop()
    assert svc.cache_clear() == -1
    svc.close()


def test_embedded_waiter_sleeps_until_woken_without_polling(monkeypatch):
    svc = EmbeddedFilterService(app_id="t-poll", max_distinct=10, bloom_fpp=None,
                                max_bytes=4096)
    svc.register("f", 1, KT, 60)
    waits: list = []
    cond = svc._get("f").cond
    real_wait = cond.wait

    def spy(timeout=None):
        waits.append(timeout)
        return real_wait(timeout)

    monkeypatch.setattr(cond, "wait", spy)
    t, out = in_thread(svc.wait, "f", 60)
    while not waits:
        time.sleep(0.01)
    time.sleep(0.3)                 # a polling waiter would have looped by now
    assert len(waits) == 1 and waits[0] > 50
    svc.publish("f", 0, part(7))
    t.join(5)
    assert out["r"].outcome == "complete" and len(waits) == 1


def test_embedded_corrupt_bytes_are_rejected_with_reason():
    svc = EmbeddedFilterService(app_id="t-c", max_distinct=10, bloom_fpp=None, max_bytes=4096)
    svc.register("f", 1, KT, 60)
    svc.publish("f", 0, b"DPPD garbage")
    w = svc.wait("f", 1)
    assert w.outcome == "corrupt" and "part 0" in w.reason


def test_embedded_close_releases_waiters():
    svc = EmbeddedFilterService(app_id="t-close", max_distinct=10, bloom_fpp=None,
                                max_bytes=4096)
    svc.register("f", 1, KT, 60)
    t, out = in_thread(svc.wait, "f", 30)
    time.sleep(0.1)
    svc.close()
    t.join(5)
    assert out["r"].outcome == "cancelled"


def test_unknown_filter_publish_is_an_error_and_wait_unavailable():
    svc = EmbeddedFilterService(app_id="t-u", max_distinct=10, bloom_fpp=None, max_bytes=4096)
    with pytest.raises(CoordinatorError, match="nope"):
        svc.publish("nope", 0, part(1))
    assert svc.wait("nope", 0.1).outcome == "unavailable"


# --------------------------------------------------------------------------- configuration

@pytest.mark.parametrize("spec", ["", "redis", "http://host:1", "redis://", "memcached://x:1",
                                  "redis://host:notaport", "redis://host:1/abc"])
def test_invalid_coordinator_spec_names_the_value(spec):
    with pytest.raises(ConfigError, match="spark.dpp.coordinator"):
        make_service(spec, app_id="a", max_distinct=1, bloom_fpp=None, max_bytes=1000)


def test_valid_specs():
    assert parse_coordinator_spec(" Embedded ") == ("embedded", None)
    assert parse_coordinator_spec("rediss://u:p@h:6380/1")[0] == "redis"
    svc = make_service("redis://:secret@127.0.0.1:1/0", app_id="a", max_distinct=1,
                       bloom_fpp=None, max_bytes=1000)
    assert isinstance(svc, RedisFilterService) and "secret" not in repr(svc)
    assert "secret" not in repr(svc.executor_publisher())


# --------------------------------------------------------------------------- Redis only

def _redis(url, app="t-r", **kw):
    opts = dict(max_distinct=100, bloom_fpp=None, max_bytes=4096)
    opts.update(kw)
    return make_service(url, app_id=app, **opts)


def test_redis_stopped_before_wait_is_unavailable(fresh_redis):
    svc = _redis(fresh_redis.url)
    svc.register("f", 1, KT, 60)
    fresh_redis.stop()
    t0 = time.monotonic()
    w = svc.wait("f", 5)
    assert w.outcome == "unavailable" and "Redis" in w.reason
    assert time.monotonic() - t0 < 5
    with pytest.raises(CoordinatorError):
        svc.register("g", 1, KT, 60)
    svc.fail("f", "x")  # best effort, never raises
    svc.close()


def test_redis_killed_during_wait_is_unavailable(fresh_redis):
    svc = _redis(fresh_redis.url)
    svc.register("f", 2, KT, 60)
    svc.publish("f", 0, part(1))
    t, out = in_thread(svc.wait, "f", 20)
    time.sleep(0.5)
    fresh_redis.stop()
    t.join(20)
    w = out["r"]
    assert w.outcome == "unavailable" and w.reason and w.seconds < 20
    svc.close()


def test_redis_restarted_between_queries_works(fresh_redis):
    svc = _redis(fresh_redis.url)
    svc.register("q1", 1, KT, 60)
    svc.publish("q1", 0, part(1))
    assert svc.wait("q1", 5).outcome == "complete"
    fresh_redis.stop()
    fresh_redis.start()
    svc.register("q2", 1, KT, 60)
    svc.executor_publisher().publish("q2", 0, encode(part(2)))
    w = svc.wait("q2", 5)
    assert w.outcome == "complete" and w.domain == part(2)
    svc.close()


def test_redis_corrupt_payload_is_rejected_with_reason(redis_server):
    svc = _redis(redis_server.url, app="t-corrupt")
    svc.register("f", 2, KT, 60)
    svc.publish("f", 0, part(1))
    good = bytearray(encode(part(2)))
    good[-1] ^= 0xFF
    redis_server.client().hset("dpp:t-corrupt:f:parts", "1", bytes(good))
    w = svc.wait("f", 5)
    assert w.outcome == "corrupt" and "part 1" in w.reason and "checksum" in w.reason
    svc.close()


def test_redis_oversized_payload_is_too_large(redis_server):
    svc = _redis(redis_server.url, app="t-big")
    svc.register("f", 1, KT, 60)
    redis_server.client().hset("dpp:t-big:f:parts", "0", b"x" * 10_000)
    w = svc.wait("f", 5)
    assert w.outcome == "too_large" and "10000" in w.reason
    svc.close()


def test_redis_keys_are_namespaced_and_expire(redis_server):
    svc = _redis(redis_server.url, app="t-ttl")
    svc.register("f", 2, KT, 30)
    svc.executor_publisher().publish("f", 0, encode(part(1)))
    r = redis_server.client()
    keys = sorted(k.decode() for k in r.keys("dpp:t-ttl:*"))
    assert keys == ["dpp:t-ttl:f:meta", "dpp:t-ttl:f:parts"]
    assert all(0 < r.pttl(k) for k in keys)
    svc.close()


def test_redis_waiter_wakes_on_notification_not_polling(redis_server, monkeypatch):
    import redis.client

    svc = _redis(redis_server.url, app="t-notify")
    svc.register("f", 1, KT, 60)
    timeouts: list = []
    real = redis.client.PubSub.get_message

    def spy(self, ignore_subscribe_messages=False, timeout=0.0):
        timeouts.append(timeout)
        return real(self, ignore_subscribe_messages, timeout)

    monkeypatch.setattr(redis.client.PubSub, "get_message", spy)
    t, out = in_thread(svc.wait, "f", 60)
    time.sleep(0.5)
    svc.executor_publisher().publish("f", 0, encode(part(3)))
    t.join(10)
    assert out["r"].outcome == "complete"
    blocking = [x for x in timeouts if x and x > 1]
    assert 1 <= len(blocking) <= 3     # subscribe confirmation + one sleep until the part
    svc.close()


def test_redis_password_and_acl_user_urls(redis_factory):
    pw = redis_factory(password="s3cret")
    svc = _redis(pw.url, app="t-pw")
    svc.register("f", 1, KT, 60)
    svc.executor_publisher().publish("f", 0, encode(part(4)))
    assert svc.wait("f", 5).domain == part(4)
    svc.close()
    acl = redis_factory(password="admin")
    # (the fixture's acl_users passes each rule string as one argument, which Redis reads as
    # a user name with spaces; create the ACL user at runtime instead)
    acl.client().execute_command("ACL", "SETUSER", "alice", "on", ">wonder", "~dpp:*",
                                 "&dpp:*", "+@all")
    url = f"redis://alice:wonder@127.0.0.1:{acl.port}/0"
    svc = _redis(url, app="t-acl")
    svc.register("f", 1, KT, 60)
    svc.publish("f", 0, part(5))
    assert svc.wait("f", 5).domain == part(5)
    svc.close()
    bad = _redis(f"redis://alice:wrong@127.0.0.1:{acl.port}/0", app="t-acl")
    w = bad.wait("f", 5)
    assert w.outcome == "unavailable" and "wrong" not in w.reason
    bad.close()


def test_redis_cache_is_shared_across_applications(redis_server):
    a = _redis(redis_server.url, app="app-a")
    b = _redis(redis_server.url, app="app-b")
    fp = fingerprint("q", ["k"], [("file:/x", 1, 1.0)])
    assert a.cache_put(fp, part(9), 60)
    assert b.cache_get(fp) == part(9)
    assert redis_server.client().pttl(f"dpp:cache:{fp}") > 0
    a.close()
    b.close()


def test_redis_cache_unavailable_is_a_miss(fresh_redis):
    svc = _redis(fresh_redis.url, app="t-cache-down")
    fresh_redis.stop()
    assert svc.cache_get("ab" * 32) is None
    assert svc.cache_put("ab" * 32, part(1), 60) is False
    svc.close()


def teardown_module(module):
    PROCESS_CACHE.clear()
