"""Benchmark of the build side and the filter service: ``python -m coordinator.bench``.

Side by side in one run:

1. the native build side (:func:`collectors.native.build_filter_native`: Spark's own
   aggregation) and the Arrow build side (:func:`collectors.build_filter`: Python tasks)
   against a plain Spark ``SELECT DISTINCT key`` collect over the same Parquet data (int64 and
   string keys, 10 million rows by default, generated once with ``spark.range`` into
   ``data/bench_collectors``), warm and as the first query of a fresh process;
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

_CASES = [("int64, 1,000 distinct", "k_long"),
          ("string, 1,000 distinct", "k_str"),
          ("int64, 1,000,000 distinct", "k_long_1m")]
_MODES = ("plain", "native", "arrow")


def _bench_spark() -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("dpp-bench-collectors")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "3g")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class _Builds:
    """The three ways to get a key's distinct values, each run to a complete filter (or, for
    ``plain``, to the collected rows), with the session's default policy (10,000 exact values,
    1% bloom filters)."""

    def __init__(self, spark: Any, path: Path) -> None:
        from coordinator import make_service

        self.spark = spark
        self.path = path
        self.svc = make_service("embedded", app_id="bench", max_distinct=10_000,
                                bloom_fpp=0.01, max_bytes=16 << 20)
        self.n = 0

    def run(self, mode: str, col: str) -> str:
        from collectors import build_filter, spark_to_datatype
        from collectors.native import build_filter_native

        df = self.spark.read.parquet(str(self.path))
        if mode == "plain":
            return f"{len(df.select(col).distinct().collect())} values"
        self.n += 1
        fid = f"{col}-{mode}-{self.n}"
        self.svc.register(fid, 1 << 30, {col: spark_to_datatype(df.schema[col].dataType)}, 600)
        opts: dict[str, Any] = dict(filter_id=fid, max_distinct=10_000, bloom_enabled=True,
                                    bloom_fpp=0.01, bloom_capacity=None, sink=self.svc)
        if mode == "native":
            build_filter_native(df, col, **opts)
        else:
            build_filter(df, [col], **opts)
        w = self.svc.wait(fid, 600)
        assert w.outcome == "complete", w.reason
        d = w.domain.get(col)
        self.svc.cancel(fid)
        return f"{d.kind}({d.value_count()})"


def _first_query(mode: str, path: Path, col: str) -> float:
    """A fresh process: Spark started, then one build timed (the first query of a job)."""
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    out = subprocess.run([sys.executable, "-m", "coordinator.bench", "--first", mode,
                          "--first-path", str(path), "--first-col", col],
                         capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("FIRST "):
            return float(line.split()[1])
    raise RuntimeError(f"first-query run of {mode} failed: {out.stderr[-2000:]}")


def _first_child(mode: str, path: Path, col: str) -> int:
    spark = _bench_spark()
    builds = _Builds(spark, path)
    t0 = time.perf_counter()
    builds.run(mode, col)
    print(f"FIRST {time.perf_counter() - t0:.4f}", flush=True)
    return 0


def bench_build(rows: int, data_dir: Path, reps: int) -> list[dict[str, Any]]:
    """Plain ``SELECT DISTINCT`` collect, the native build side and the Arrow build side on
    the same key: warm (median of ``reps``, modes interleaved) and as the first query of a
    fresh process (where the Arrow side also starts Python workers and imports pyarrow)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = _bench_spark()
    path = data_dir / f"rows_{rows}"
    if not (path / "_SUCCESS").exists():
        print(f"generating {rows:,} rows into {path} ...", flush=True)
        (spark.range(0, rows, numPartitions=8)
         .selectExpr("id % 1000 AS k_long",
                     "CONCAT('customer-', CAST(id % 1000 AS STRING)) AS k_str",
                     "id % 1000000 AS k_long_1m")
         .write.mode("overwrite").parquet(str(path)))
    builds = _Builds(spark, path)
    out = []
    print(f"  {'case':<28} {'warm: plain':>12} {'native':>14} {'arrow':>14}   "
          f"{'first query: plain':>19} {'native':>14} {'arrow':>14}   domain (native)")
    for label, col in _CASES:
        kinds = {m: builds.run(m, col) for m in _MODES}   # warm every path once
        warm: dict[str, list[float]] = {m: [] for m in _MODES}
        for _ in range(reps):
            for m in _MODES:
                t0 = time.perf_counter()
                builds.run(m, col)
                warm[m].append(time.perf_counter() - t0)
        first = {m: _first_query(m, path, col) for m in _MODES}
        w = {m: _median(v) for m, v in warm.items()}
        row = {"case": label, "warm": w, "first": first, "domain": kinds["native"],
               "plain": w["plain"], "build": w["native"]}
        out.append(row)

        def cell(d: dict[str, float], m: str) -> str:
            return f"{d[m]:6.2f} s" + ("" if m == "plain" else f" {d[m] / d['plain']:4.2f}x")
        print(f"  {label:<28} {cell(w, 'plain'):>12} {cell(w, 'native'):>14} "
              f"{cell(w, 'arrow'):>14}   {cell(first, 'plain'):>19} {cell(first, 'native'):>14} "
              f"{cell(first, 'arrow'):>14}   {kinds['native']}", flush=True)
    spark.stop()
    return out


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
    ap.add_argument("--skip-coordinator", action="store_true", help="only the build sides")
    ap.add_argument("--first", choices=_MODES, help=argparse.SUPPRESS)
    ap.add_argument("--first-path", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--first-col", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.first:
        return _first_child(args.first, args.first_path, args.first_col)

    print("== coordinator/collectors benchmark ==", flush=True)
    builds = []
    if not args.skip_spark:
        print(f"\n[1] build sides (native: Spark's aggregation; arrow: Python tasks) vs a plain "
              f"SELECT DISTINCT collect ({args.rows:,} rows, local[2]; warm: median of "
              f"{args.reps}; first query: a fresh process)", flush=True)
        builds = bench_build(args.rows, args.data_dir, args.reps)
    if args.skip_coordinator:
        return 0
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
        print(f"  native build/plain (warm) {b['case']:<28} {r:5.2f}x  (target ≤ 1.30x)  "
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
