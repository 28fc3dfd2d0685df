"""Benchmark of the build side and the filter service: ``python -m coordinator.bench``.

Side by side in one run:

1. the build-side job (:func:`collectors.build_filter` + wait) against a plain Spark
   ``SELECT DISTINCT key`` collect over the same Parquet data (int64 and string keys, 10 million
   rows by default, generated once with ``spark.range`` into ``data/bench_collectors``);
2. Redis merge of 10,000 partials: already published, and published live by 4 threads;
3. wake-up latency, from the last publish to the waiter returning, embedded and Redis.

Targets: build ≤ 1.3× plain distinct; 10,000 partials merged and complete < 2 s; wake-up
< 50 ms. A command, not a test: it prints figures and ratios.
"""
from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from dpp.core.codec import encode
from dpp.core.domain import BIGINT, Domain, TupleDomain

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- helpers

def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]


@contextlib.contextmanager
def _redis(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("redis-server is not on PATH (or pass --redis-url)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tempfile.mkdtemp(prefix="dpp-bench-redis-")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                             "--save", "", "--appendonly", "no", "--loglevel", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            if time.monotonic() > deadline:
                raise SystemExit("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(d, ignore_errors=True)


def _partials(n: int, per: int, universe: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    return [encode(TupleDomain.of({"k": Domain.values(BIGINT, rnd.sample(range(universe), per))}))
            for _ in range(n)]


# --------------------------------------------------------------------------- 1. build vs distinct

def bench_build(rows: int, data_dir: Path, reps: int) -> list[dict[str, Any]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from collectors import build_filter
    from coordinator import make_service

    spark = (SparkSession.builder.master("local[2]").appName("dpp-bench-collectors")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "3g")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    path = data_dir / f"rows_{rows}"
    if not (path / "_SUCCESS").exists():
        print(f"generating {rows:,} rows into {path} ...", flush=True)
        (spark.range(0, rows, numPartitions=8)
         .selectExpr("id % 1000 AS k_long",
                     "CONCAT('customer-', CAST(id % 1000 AS STRING)) AS k_str",
                     "id % 1000000 AS k_long_1m")
         .write.mode("overwrite").parquet(str(path)))
    cases = [("int64, 1,000 distinct", "k_long", 10_000),
             ("string, 1,000 distinct", "k_str", 10_000),
             ("int64, 1,000,000 distinct → min/max", "k_long_1m", 10_000)]
    svc = make_service("embedded", app_id="bench", max_distinct=10_000, bloom_fpp=None,
                       max_bytes=16 << 20)
    out = []
    try:
        for label, col, max_distinct in cases:
            df = spark.read.parquet(str(path))
            counter = [0]

            def plain() -> int:
                return len(df.select(col).distinct().collect())

            def build() -> int:
                counter[0] += 1
                fid = f"{col}-{counter[0]}"
                build_filter(df, [col], filter_id=fid, max_distinct=max_distinct,
                             bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None,
                             sink=svc)
                w = svc.wait(fid, 600)
                assert w.outcome == "complete", w.reason
                d = w.domain.get(col)
                n = d.value_count()
                svc.cancel(fid)
                return -1 if n is None else n

            plain(), build()   # warm both paths (file listing, Python workers)
            tp: list[float] = []
            tb: list[float] = []
            for _ in range(reps):
                for fn, acc in ((plain, tp), (build, tb)):
                    t0 = time.perf_counter()
                    fn()
                    acc.append(time.perf_counter() - t0)
            # the map-only shape (every row shipped to Python), for the record
            def build_map_only() -> None:
                counter[0] += 1
                fid = f"{col}-m{counter[0]}"
                build_filter(df, [col], filter_id=fid, max_distinct=max_distinct,
                             bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None,
                             sink=svc, pre_aggregate=False)
                svc.cancel(fid)

            tm: list[float] = []
            for _ in range(reps):
                t0 = time.perf_counter()
                build_map_only()
                tm.append(time.perf_counter() - t0)
            out.append({"case": label, "plain": _median(tp), "build": _median(tb),
                        "map_only": _median(tm),
                        "plain_all": tp, "build_all": tb})
            print(f"  {label:<38} plain DISTINCT {_median(tp):6.2f} s   build-side job "
                  f"{_median(tb):6.2f} s ({_median(tb) / _median(tp):4.2f}x)   map-only "
                  f"variant {_median(tm):6.2f} s ({_median(tm) / _median(tp):4.2f}x)",
                  flush=True)
    finally:
        svc.close()
        spark.stop()
    return out


# --------------------------------------------------------------------------- 2. Redis merge

def bench_merge(url: str, n: int = 10_000) -> dict[str, float]:
    from coordinator import make_service

    payloads = _partials(n, 10, 50_000)
    svc = make_service(url, app_id="bench-merge", max_distinct=100_000, bloom_fpp=None,
                       max_bytes=16 << 20)
    pub = svc.executor_publisher()
    res: dict[str, float] = {}
    try:
        # (a) everything already in Redis: fetch + decode + merge + complete
        svc.register("pre", n, {"k": BIGINT}, 600)
        for i, p in enumerate(payloads):
            pub.publish("pre", i, p)
        t0 = time.perf_counter()
        w = svc.wait("pre", 60)
        res["prepublished_wait"] = time.perf_counter() - t0
        assert w.outcome == "complete", w.reason
        res["merged_values"] = float(w.domain.get("k").value_count() or 0)
        res["merged_bytes"] = float(w.encoded_bytes)

        # (b) live: 4 publisher processes (as executors would be) while the driver waits
        svc.register("live", n, {"k": BIGINT}, 600)
        box: dict[str, Any] = {}

        def waiter() -> None:
            box["w"] = svc.wait("live", 120)
            box["t_done"] = time.perf_counter()

        th = threading.Thread(target=waiter)
        th.start()
        time.sleep(0.2)
        t_first = time.perf_counter()

        ctx = multiprocessing.get_context("fork")
        pubs = [ctx.Process(target=_publish_range, args=(pub, "live", payloads, s, 4))
                for s in range(4)]
        for t in pubs:
            t.start()
        for t in pubs:
            t.join()
        t_last = time.perf_counter()
        th.join()
        assert box["w"].outcome == "complete", box["w"].reason
        res["live_first_publish_to_complete"] = box["t_done"] - t_first
        res["live_publish_only"] = t_last - t_first
        res["live_last_publish_to_complete"] = box["t_done"] - t_last
    finally:
        for fid in ("pre", "live"):
            svc.cancel(fid)
        svc.close()
    return res


def _publish_range(pub: Any, fid: str, payloads: list[bytes], start: int, step: int) -> None:
    for i in range(start, len(payloads), step):
        pub.publish(fid, i, payloads[i])


# --------------------------------------------------------------------------- 3. wake-up

def bench_wakeup(spec: str, trials: int = 30) -> list[float]:
    from coordinator import make_service

    svc = make_service(spec, app_id="bench-wake", max_distinct=1000, bloom_fpp=None,
                       max_bytes=1 << 20)
    payload = encode(TupleDomain.of({"k": Domain.values(BIGINT, [1, 2, 3])}))
    pub: Callable[[str, int, bytes], None]
    ep = svc.executor_publisher()
    pub = ep.publish if ep is not None else svc.publish  # type: ignore[union-attr]
    lat: list[float] = []
    try:
        for i in range(trials):
            fid = f"w{i}"
            svc.register(fid, 2, {"k": BIGINT}, 60)
            pub(fid, 0, payload)
            box: dict[str, float] = {}

            def waiter() -> None:
                w = svc.wait(fid, 30)
                box["t"] = time.perf_counter()
                assert w.outcome == "complete", w.reason

            th = threading.Thread(target=waiter)
            th.start()
            time.sleep(0.05)  # let the waiter block
            t_pub = time.perf_counter()
            pub(fid, 1, payload)
            th.join()
            lat.append(box["t"] - t_pub)
            svc.cancel(fid)
    finally:
        svc.close()
    return lat


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m coordinator.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data" / "bench_collectors")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--redis-url", default=None, help="use this Redis instead of starting one")
    ap.add_argument("--skip-spark", action="store_true", help="only the coordinator figures")
    args = ap.parse_args(argv)

    print("== coordinator/collectors benchmark ==", flush=True)
    builds = []
    if not args.skip_spark:
        print(f"\n[1] build-side job vs plain SELECT DISTINCT collect ({args.rows:,} rows, "
              f"local[2], median of {args.reps})", flush=True)
        builds = bench_build(args.rows, args.data_dir, args.reps)
    with _redis(args.redis_url) as url:
        print("\n[2] Redis merge of 10,000 partials (10 bigint values each)", flush=True)
        m = bench_merge(url)
        print(f"  already published: wait → complete      {m['prepublished_wait']:6.3f} s  "
              f"({int(m['merged_values']):,} values, {int(m['merged_bytes']):,} bytes)")
        print(f"  live, 4 publisher processes: first publish → complete {m['live_first_publish_to_complete']:6.3f} s "
              f"(publishing alone {m['live_publish_only']:.3f} s; last publish → complete "
              f"{m['live_last_publish_to_complete'] * 1000:.1f} ms)", flush=True)
        print("\n[3] wake-up latency, last publish → waiter returns (30 trials)", flush=True)
        wake = {"embedded": bench_wakeup("embedded"), "redis": bench_wakeup(url)}
        for k, v in wake.items():
            print(f"  {k:<9} median {_median(v) * 1000:7.3f} ms   p95 {_p95(v) * 1000:7.3f} ms   "
                  f"max {max(v) * 1000:7.3f} ms")

    print("\n== against targets ==")
    ok = True
    for b in builds:
        r = b["build"] / b["plain"]
        good = r <= 1.3
        ok &= good
        print(f"  build/plain {b['case']:<38} {r:5.2f}x  (target ≤ 1.30x)  "
              f"{'PASS' if good else 'FAIL'}")
    good = m["prepublished_wait"] < 2.0 and m["live_first_publish_to_complete"] < 2.0
    ok &= good
    print(f"  10,000 partials merged+complete: prepublished {m['prepublished_wait']:.3f} s, "
          f"live {m['live_first_publish_to_complete']:.3f} s  (target < 2 s)  "
          f"{'PASS' if good else 'FAIL'}")
    for k, v in wake.items():
        good = _p95(v) < 0.050
        ok &= good
        print(f"  wake-up {k:<9} p95 {_p95(v) * 1000:.2f} ms  (target < 50 ms)  "
              f"{'PASS' if good else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
