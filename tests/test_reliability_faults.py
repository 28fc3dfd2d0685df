"""Faults on the pruning path never cost a row: each gives Spark's unpruned rows and a report
that names the fallback (build job failed, task retried, Redis unreachable / killed /
restarted, corrupt or oversized partials, size bound, wait timeout, stale dimension)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.runtime.config import DppConfig
from tests.conftest import free_port
from tests.reliability_helpers import (DATE_SCHEMA, JOIN_Q, date_rows, only_filter, reference,
                                            register_star, rows, table_report, wait_until,
                                            write_date_dim, write_star)

Q_FAIL = ("SELECT count(*), sum(ss_qty) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk "
          "WHERE rel_boom(d_moy) = 2")
Q_SLOW = ("SELECT count(*), sum(ss_qty) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk "
          "WHERE rel_slow(d_moy) = 3")


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return write_star(tmp_path_factory.mktemp("rel_faults"))


@pytest.fixture(scope="module")
def marker(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("rel_marker") / "fail-now"


@pytest.fixture(scope="module")
def udfs(spark, marker):
    """``rel_boom(x)`` raises while the marker file exists; ``rel_slow(x)`` sleeps 50 ms/row."""
    from pyspark.sql.types import IntegerType

    path = str(marker)

    def boom(x):
        import os as _os
        if _os.path.exists(path):
            raise RuntimeError("rel_boom: marker present, failing on purpose")
        return x

    def slow(x):
        import time as _t
        _t.sleep(0.05)
        return x

    spark.udf.register("rel_boom", boom, IntegerType())
    spark.udf.register("rel_slow", slow, IntegerType())
    return True


def _session(spark, star, **kw):
    from dpp import DppSession

    kw.setdefault("filter_cache", False)
    kw.setdefault("wait_timeout", 20.0)
    dpp = DppSession(spark, config=DppConfig(**kw))
    register_star(dpp, star)
    return dpp


def _assert_fallback(dpp, outcomes):
    f = only_filter(dpp.last_report)
    t = table_report(dpp.last_report)
    assert f["outcome"] in outcomes, f
    assert f["reason"], f
    assert t["pruning"] == "none", t
    assert t["partitions_kept"] in (None, t["partitions_total"]), t
    return f, t


# ---------------------------------------------------------------------- build side


def test_build_job_failure_falls_back_to_unpruned(spark, star, udfs, marker):
    """The build query's UDF raises: the filter is 'failed', the query still runs unpruned.
    The marker is removed after dpp.sql() returned, so the user's own query can succeed."""
    dpp = _session(spark, star)
    marker.write_text("x")
    try:
        df = dpp.sql(Q_FAIL)
    finally:
        marker.unlink()
    f, t = _assert_fallback(dpp, {"failed"})
    assert "rel_boom" in f["reason"] or "build" in f["reason"], f
    assert rows(df.collect()) == reference(spark, Q_FAIL, star)
    dpp.close()


def test_build_task_retried_still_prunes_and_is_right(spark, star, redis_server, tmp_path):
    """A build task that fails on its first attempt and succeeds on retry (local[2,3]): the
    filter completes, pruning applies, rows equal Spark's, on both coordinators."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent("""
        import json, os, sys
        sys.path.insert(0, sys.argv[1])
        from pyspark.sql import SparkSession
        from pyspark.sql.types import IntegerType
        from dpp import DppSession
        from dpp.runtime.config import DppConfig
        from tests.reliability_helpers import register_star, reference, rows
        from pathlib import Path

        star = {k: Path(v) for k, v in json.loads(sys.argv[2]).items()}
        spark = (SparkSession.builder.master("local[2,3]").appName("dpp-retry")
                 .config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("OFF")

        def flaky(x):
            from pyspark import TaskContext
            if TaskContext.get().attemptNumber() == 0:
                raise RuntimeError("flaky: first attempt fails on purpose")
            return x

        spark.udf.register("rel_flaky", flaky, IntegerType())
        q = ("SELECT count(*), sum(ss_qty) FROM sales JOIN date_dim "
             "ON ss_sold_date_sk = d_date_sk WHERE rel_flaky(d_moy) = 2")
        out = {}
        for name, coord in (("embedded", "embedded"), ("redis", sys.argv[3])):
            dpp = DppSession(spark, config=DppConfig(coordinator=coord, wait_timeout=60,
                                                     filter_cache=False))
            register_star(dpp, star)
            got = [list(r) for r in dpp.collect(q)]
            rep = dpp.last_report.to_dict()
            out[name] = {"rows": got, "filters": rep["filters"], "tables": rep["tables"]}
            dpp.close()
        out["reference"] = [list(r) for r in reference(spark, q, star)]
        print("RESULT " + json.dumps(out, default=str))
        spark.stop()
    """))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, str(script), str(Path(__file__).resolve().parents[1]),
         json.dumps({k: str(v) for k, v in star.items()}), redis_server.url],
        capture_output=True, text=True, timeout=240, env=env)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    out = json.loads(line[0][len("RESULT "):])
    expected = sorted(map(tuple, out["reference"]))
    assert expected and expected[0][0] > 0
    for name in ("embedded", "redis"):
        r = out[name]
        assert sorted(map(tuple, r["rows"])) == expected, (name, r)
        (f,) = r["filters"]
        assert f["outcome"] == "complete", (name, f)
        (t,) = r["tables"]
        assert t["pruning"] == "applied" and t["partitions_kept"] == 5, (name, t)


# ---------------------------------------------------------------------- Redis faults


def test_redis_unreachable_at_start(spark, star):
    port = free_port()  # bound then released: nothing listens there
    dpp = _session(spark, star, coordinator=f"redis://127.0.0.1:{port}/0", wait_timeout=3.0)
    q = JOIN_Q.format(moy=2)
    assert rows(dpp.collect(q)) == reference(spark, q, star)
    f, _ = _assert_fallback(dpp, {"unavailable", "failed"})
    assert str(port) in f["reason"] or "Redis" in f["reason"], f
    dpp.close()


def _first_meta_key(client):
    keys = list(client.scan_iter(match="dpp:*:meta", count=1000))
    return keys[0] if keys else None


def test_redis_killed_mid_wait(spark, star, udfs, fresh_redis):
    """Redis dies while the split loader waits for a slow build side: no pruning, reported,
    and the query returns Spark's rows."""
    dpp = _session(spark, star, coordinator=fresh_redis.url, wait_timeout=20.0)
    client = fresh_redis.client()

    def killer():
        if wait_until(lambda: _first_meta_key(client) is not None, 15, 0.02):
            time.sleep(0.3)
        fresh_redis.stop()

    th = threading.Thread(target=killer, daemon=True)
    th.start()
    got = dpp.collect(Q_SLOW)
    th.join(20)
    assert rows(got) == reference(spark, Q_SLOW, star)
    _assert_fallback(dpp, {"unavailable", "failed"})
    dpp.close()


def test_redis_restarted_between_queries(spark, star, fresh_redis):
    dpp = _session(spark, star, coordinator=fresh_redis.url, wait_timeout=20.0)
    q = JOIN_Q.format(moy=4)
    expected = reference(spark, q, star)
    assert rows(dpp.collect(q)) == expected
    assert only_filter(dpp.last_report)["outcome"] == "complete"
    fresh_redis.stop()
    fresh_redis.start()  # same port, empty
    assert rows(dpp.collect(q)) == expected
    f = only_filter(dpp.last_report)
    # pooled connections to the old server are replaced: the filter works again
    assert f["outcome"] == "complete", f
    assert table_report(dpp.last_report)["pruning"] == "applied"
    dpp.close()


def _inject_when_registered(client, payload: bytes, stop: threading.Event) -> threading.Thread:
    """Writes ``payload`` as part 0 of the first filter that appears, and announces it — the
    race a buggy or hostile publisher would win."""

    def run():
        while not stop.is_set():
            key = _first_meta_key(client)
            if key is not None:
                base = key.decode()[: -len(":meta")]
                client.hset(f"{base}:parts", "0", payload)
                client.pexpire(f"{base}:parts", 60_000)
                client.publish(f"{base}:events", "p0")
                return
            time.sleep(0.01)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


@pytest.mark.parametrize("what", ["garbage", "oversized"])
def test_corrupt_or_oversized_partial_in_redis_through_session(spark, star, udfs, fresh_redis,
                                                              what):
    client = fresh_redis.client()
    if what == "garbage":
        payload, outcomes, kw = b"\x80\x04garbage-not-a-domain" * 3, {"corrupt"}, {}
    else:
        payload, outcomes, kw = b"DPPD" + os.urandom(4000), {"too_large"}, \
            {"max_filter_bytes": 1024}
    dpp = _session(spark, star, coordinator=fresh_redis.url, wait_timeout=20.0, **kw)
    stop = threading.Event()
    th = _inject_when_registered(client, payload, stop)
    got = dpp.collect(Q_SLOW)
    stop.set()
    th.join(5)
    assert rows(got) == reference(spark, Q_SLOW, star)
    f, _ = _assert_fallback(dpp, outcomes)
    assert "part 0" in f["reason"], f
    dpp.close()


def test_corrupt_partials_at_the_service_level(redis_server):
    """Every way a part in Redis can be bad ends the wait with an outcome, never an exception."""
    from coordinator import RedisFilterService
    from dpp.core.codec import encode
    from dpp.core.domain import BIGINT, STRING, Domain, TupleDomain

    svc = RedisFilterService(redis_server.url, app_id="rel-corrupt", max_distinct=100,
                             bloom_fpp=None, max_bytes=2048, default_ttl=30)
    client = redis_server.client()
    good = TupleDomain.of({"k": Domain.values(BIGINT, [1, 2])})
    valid = encode(good)
    cases = {
        "garbage": (b"not a frame at all", "corrupt"),
        "bad_crc": (valid[:-1] + bytes([valid[-1] ^ 1]), "corrupt"),
        "truncated": (valid[:-3], "corrupt"),
        "oversized": (b"x" * 5000, "too_large"),
        "wrong_type": (encode(TupleDomain.of({"k": Domain.values(STRING, ["a"])})), "corrupt"),
        "wrong_column": (encode(TupleDomain.of({"z": Domain.values(BIGINT, [1])})), "corrupt"),
        "pickle": (b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94.", "corrupt"),
    }
    for name, (payload, outcome) in cases.items():
        fid = f"svc-{name}"
        svc.register(fid, 2, {"k": BIGINT}, 30)
        svc.publish(fid, 0, good)
        client.hset(f"dpp:rel-corrupt:{fid}:parts", "1", payload)
        res = svc.wait(fid, 2.0)
        assert res.outcome == outcome, (name, res)
        assert res.domain is None and res.reason
    # a part index outside the expected count
    svc.register("svc-outside", 1, {"k": BIGINT}, 30)
    client.hset("dpp:rel-corrupt:svc-outside:parts", "7", valid)
    svc.publish("svc-outside", 0, good)
    assert svc.wait("svc-outside", 2.0).outcome == "corrupt"
    # meta overwritten with nonsense
    svc.register("svc-meta", 1, {"k": BIGINT}, 30)
    client.hset("dpp:rel-corrupt:svc-meta:meta", "expected", "many")
    assert svc.wait("svc-meta", 1.0).outcome == "corrupt"
    # a garbage cached filter is a miss, not an error
    client.set("dpp:cache:" + "ab" * 32, b"garbage", px=30_000)
    assert svc.cache_get("ab" * 32) is None
    svc.close()


# ---------------------------------------------------------------------- bounds and time


def test_filter_past_its_size_bound_is_not_a_wrong_answer(spark, star, tmp_path):
    """maxFilterBytes=1k, blooms off, thousands of distinct build keys: the filter either is
    reported too_large (no pruning) or degrades to a min/max range — never drops a row."""
    big = tmp_path / "big_dim"
    big.mkdir()
    keys = [100 + (i * 7919) % 50_000 for i in range(4000)]
    pq.write_table(pa.table({"b_key": pa.array(keys, pa.int32()),
                             "b_flag": pa.array([i % 2 for i in range(4000)], pa.int32())}),
                   big / "part-0.parquet")
    paths = dict(star, big_dim=big)
    dpp = _session(spark, paths, max_filter_bytes=1024, bloom_enabled=False,
                   max_distinct_values=100_000)
    q = ("SELECT count(*), sum(ss_qty) FROM sales JOIN big_dim ON ss_sold_date_sk = b_key "
         "WHERE b_flag = 1")
    assert rows(dpp.collect(q)) == reference(spark, q, paths)
    f = only_filter(dpp.last_report)
    assert (f["outcome"] == "too_large" and f["reason"]) or \
        (f["outcome"] == "complete" and f["kind"] == "range"), f
    if f["outcome"] == "complete":
        assert (f["encoded_bytes"] or 0) <= 1024
    dpp.close()


def test_wait_timeout(spark, star, udfs):
    dpp = _session(spark, star, wait_timeout=1.0)
    t0 = time.monotonic()
    df = dpp.sql(Q_SLOW)
    assert time.monotonic() - t0 < 10
    f, t = _assert_fallback(dpp, {"timeout"})
    assert t["wait_seconds"] <= 1.5, t
    assert rows(df.collect()) == reference(spark, Q_SLOW, star)
    dpp.close()


def test_changed_dimension_never_reuses_a_stale_cached_filter(spark, star, tmp_path):
    dim = write_date_dim(tmp_path / "date_dim")
    paths = dict(star, date_dim=dim)
    dpp = _session(spark, paths, filter_cache=True)
    q = JOIN_Q.format(moy=2)
    first = reference(spark, q, paths)
    assert rows(dpp.collect(q)) == first
    assert only_filter(dpp.last_report)["cache_hit"] is False
    assert rows(dpp.collect(q)) == first
    assert only_filter(dpp.last_report)["cache_hit"] is True  # the cache does work
    # rewrite the dimension: same row count (same file size is likely), other months
    time.sleep(0.01)
    write_date_dim(dim, date_rows(lambda i: 2 if i >= 20 else 5))
    second = reference(spark, q, paths)
    assert second != first
    assert rows(dpp.collect(q)) == second
    f = only_filter(dpp.last_report)
    assert f["cache_hit"] is False and f["outcome"] == "complete", f
    assert table_report(dpp.last_report)["partitions_kept"] == 10
    # a file added beside it: the dimension is read afresh, the old fingerprint is not reused
    pq.write_table(pa.Table.from_pylist([{"d_date_sk": 100, "d_year": 2000, "d_moy": 2}],
                                        schema=DATE_SCHEMA), dim / "part-1.parquet")
    third = reference(spark, q, paths)
    assert third != second
    assert rows(dpp.collect(q)) == third
    f = only_filter(dpp.last_report)
    assert f["cache_hit"] is False and f["outcome"] == "complete", f
    assert table_report(dpp.last_report)["partitions_kept"] == 11
    dpp.close()
