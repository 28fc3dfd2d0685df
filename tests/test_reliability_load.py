"""Load: 16 concurrent queries from threads on one DppSession with the Redis coordinator —
every answer right, every filter its own (no cross-talk), and no key left once TTLs lapse."""
from __future__ import annotations

import json
import threading
from collections import Counter

from dpp.runtime.config import DppConfig
from tests.reliability_helpers import N_DAYS, register_star, wait_until, write_star

THREADS = 16
TTL = 3.0


def _expected(lo: int, hi: int) -> Counter:
    """count(*), sum(ss_qty) of sales joined to the days [lo, hi], computed without Spark."""
    n = s = 0
    for i in range(240):
        dk = None if i % 41 == 0 else 100 + (i * 7) % N_DAYS
        if dk is not None and lo <= dk <= hi:
            n, s = n + 1, s + i % 7
    return Counter([(n, s)])


def test_16_concurrent_queries_on_redis(spark, tmp_path, fresh_redis):
    from dpp import DppSession

    star = write_star(tmp_path / "star")
    report_path = tmp_path / "reports.jsonl"
    dpp = DppSession(spark, config=DppConfig(
        coordinator=fresh_redis.url, wait_timeout=120.0, filter_cache=True, filter_ttl=TTL,
        report_path=str(report_path)))
    register_star(dpp, star)
    windows = {i: (100 + i, 100 + i + 1 + i % 5) for i in range(THREADS)}  # all different
    queries = {i: ("SELECT count(*), sum(ss_qty) FROM sales JOIN date_dim ON "
                   f"ss_sold_date_sk = d_date_sk WHERE d_date_sk BETWEEN {lo} AND {hi} "
                   f"AND d_year >= {1980 + i}") for i, (lo, hi) in windows.items()}
    results: dict[int, object] = {}
    start = threading.Barrier(THREADS)

    def run(i: int) -> None:
        try:
            start.wait(30)
            results[i] = Counter(tuple(r) for r in dpp.collect(queries[i]))
        except BaseException as exc:  # reported below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(results) == THREADS
    for i, (lo, hi) in windows.items():
        assert results[i] == _expected(lo, hi), (i, results[i])

    # per-query reports (the JSON lines): each query's filter holds exactly its own days
    reports = [json.loads(line) for line in report_path.read_text().splitlines()]
    assert len(reports) == THREADS
    by_text = {r["query_text"]: r for r in reports}
    filter_ids = set()
    for i, (lo, hi) in windows.items():
        r = by_text[queries[i]]
        (f,) = r["filters"]
        (t,) = r["tables"]
        assert f["outcome"] == "complete", f
        assert f["distinct_values"] == hi - lo + 1, (i, f)
        assert t["pruning"] == "applied" and t["partitions_kept"] == hi - lo + 1, (i, t)
        filter_ids.add(f["filter_id"])
    assert len(filter_ids) == THREADS

    client = fresh_redis.client()
    # Whatever is still there is ours and carries a TTL (on a slow machine the 3 s TTL may
    # already have lapsed for all of them: that is not asserted, it is timing).
    for k in client.scan_iter(count=1000):
        ttl = client.pttl(k)
        assert k.startswith(b"dpp:") and (ttl > 0 or ttl == -2), (k, ttl)
    # every key expires: Redis reclaims expired keys actively (and on access); a key written
    # without a TTL would stay and keep dbsize above 0
    assert wait_until(lambda: client.dbsize() == 0, TTL + 15, 0.25), \
        list(client.scan_iter(count=1000))[:10]
    # ...and the keys were written to this server and left by expiry, not deleted or never made
    stats = client.info("stats")
    assert stats["expired_keys"] >= THREADS, stats["expired_keys"]
    dpp.close()
