"""Benchmark: full listing vs the split loader, and Spark's DataFrame build over each.

    python -m hive_splits.bench --partitions 50000 --out /tmp/hs-bench [--lister hadoop]

Builds (once; reused when present) a two-level table ``a=i/b=j`` of at least ``--partitions``
leaf partitions, one small Parquet file each (one file written, the rest hard links), then in
one run side by side:

1. full listing: every folder listed (8 threads, level by level, through the same lister),
   the way Spark must before it can plan a path table;
2. the loader at ``--selectivity`` (dynamic filters on both levels, each keeping
   sqrt(selectivity) of its values), folders and files listed;
3. Spark building a DataFrame over the whole table (``spark.read.parquet(root)``) vs over the
   loader's splits (``to_dataframe``), the latter both with driver-side listing of the kept
   files and with Spark's parallel listing job, to show why the driver path is the default.

``--lister local`` lists with ``os.scandir``; ``--lister hadoop`` with Hadoop's FileSystem in
the JVM on ``file:`` URIs (the code path of s3a/hdfs/gs/abfs tables). Every request is
counted — LIST (a folder listed) and HEAD (a path's status): the loader's by its lister,
Spark's by a counting local FileSystem (``hive_splits.storage_calls``) — and turned into a
**projection** of what the same requests would cost on an object store, at ``--list-ms``
(20) per LIST and ``--head-ms`` (5) per HEAD, made one after another. The projection is
arithmetic on counted calls, not a measurement; the measured local times are printed beside
it.

Prints counts, wall times and ratios; writes ``bench.json`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional


def build_table(root: Path, level1: int, level2: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    marker = root / f"_BUILT_{level1}x{level2}"
    if marker.exists():
        return
    if root.exists():
        import shutil

        shutil.rmtree(root)
    root.mkdir(parents=True)
    seed = root / "_seed.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), seed)
    for i in range(level1):
        for j in range(level2):
            d = root / f"a={i}" / f"b={j}"
            d.mkdir(parents=True)
            os.link(seed, d / "part-00000.parquet")
    marker.write_text("")


def full_listing(lister: Any, root: str, workers: int = 8) -> tuple[int, int]:
    """Every folder under ``root`` listed, level by level on ``workers`` threads (as the
    loader lists): (folders listed, files seen)."""
    from concurrent.futures import ThreadPoolExecutor

    folders = files = 0
    level = [root]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while level:
            listings = list(pool.map(lister.list, level))
            folders += len(level)
            level = [d.path for dirs, _ in listings for d in dirs]
            files += sum(len(fs) for _, fs in listings)
    return folders, files


def projection(list_calls: int, head_calls: int, list_ms: float, head_ms: float) -> float:
    """Seconds the calls would take at the given latencies, one after another."""
    return (list_calls * list_ms + head_calls * head_ms) / 1000.0


def _timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--level1", type=int, default=250, help="values of the outer column")
    ap.add_argument("--selectivity", type=float, default=0.01)
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark comparison")
    ap.add_argument("--lister", choices=("local", "hadoop"), default="local",
                    help="list with os.scandir or with Hadoop's FileSystem (file: URIs)")
    ap.add_argument("--list-ms", type=float, default=20.0,
                    help="projected latency of one LIST request (object store), ms")
    ap.add_argument("--head-ms", type=float, default=5.0,
                    help="projected latency of one HEAD request (object store), ms")
    args = ap.parse_args(argv)

    from dpp.core.domain import INT, Domain, TupleDomain
    from dpp.core.outcomes import WaitResult
    from hive_splits import DynamicFilter, SplitLoader, table_from_path
    from hive_splits.listing import HadoopLister, LocalLister

    out = Path(args.out)
    level1 = args.level1
    level2 = math.ceil(args.partitions / level1)
    root = out / "table"
    _, build_s = _timed(lambda: build_table(root, level1, level2))
    print(f"table: {level1} x {level2} = {level1 * level2} leaf partitions at {root} "
          f"(built in {build_s:.1f}s)")

    spark = None if args.no_spark and args.lister == "local" else _spark()
    make = (lambda: HadoopLister(spark)) if args.lister == "hadoop" else LocalLister
    full_lister = make()
    location = full_lister.location(str(root))
    (folders_full, files_full), full_s = _timed(lambda: full_listing(full_lister, location))
    full_list_calls, full_head_calls = full_lister.calls.snapshot()
    table, table_s = _timed(lambda: table_from_path(str(root), name="bench",
                                                    partition_types={"a": "int", "b": "int"},
                                                    lister=make()))
    frac = math.sqrt(args.selectivity)
    keep_a = list(range(0, level1, max(1, round(1 / frac))))
    keep_b = list(range(0, level2, max(1, round(1 / frac))))
    def ready(values: list[int]) -> Any:
        return lambda timeout: WaitResult(TupleDomain.of({"key": Domain.values(INT, values)}),
                                          "complete", None)

    filters = [DynamicFilter("fa", "a", ready(keep_a)), DynamicFilter("fb", "b", ready(keep_b))]
    result, load_s = _timed(lambda: SplitLoader(table, None, filters, wait_timeout=10).load())

    lp = lambda lc, hc: projection(lc, hc, args.list_ms, args.head_ms)  # noqa: E731
    loader_proj = lp(result.list_calls, result.head_calls)
    full_proj = lp(full_list_calls, full_head_calls)
    report: dict[str, Any] = {
        "lister": args.lister,
        "leaf_partitions": level1 * level2,
        "selectivity_target": args.selectivity,
        "selectivity_actual": result.partitions_kept / (level1 * level2),
        "latency_ms": {"list": args.list_ms, "head": args.head_ms},
        "full_listing": {"folders_listed": folders_full, "files_listed": files_full,
                         "list_calls": full_list_calls, "head_calls": full_head_calls,
                         "seconds": full_s, "projected_seconds": full_proj},
        "loader": {"folders_listed": result.folders_listed, "files_listed": result.files_listed,
                   "partitions_kept": result.partitions_kept, "seconds": load_s,
                   "list_calls": result.list_calls, "head_calls": result.head_calls,
                   "projected_seconds": loader_proj, "table_from_path_seconds": table_s},
    }
    ratio_f = result.folders_listed / folders_full
    ratio_t = load_s / full_s
    print(f"\nlister: {args.lister}")
    print(f"{'':26}{'folders':>9}{'files':>9}{'LIST':>8}{'HEAD':>6}{'measured s':>11}"
          f"{'projected s':>12}")
    print(f"{'full listing':26}{folders_full:>9}{files_full:>9}{full_list_calls:>8}"
          f"{full_head_calls:>6}{full_s:>11.3f}{full_proj:>12.1f}")
    print(f"{'loader @ %.2g%%' % (100 * args.selectivity):26}{result.folders_listed:>9}"
          f"{result.files_listed:>9}{result.list_calls:>8}{result.head_calls:>6}"
          f"{load_s:>11.3f}{loader_proj:>12.1f}")
    print(f"{'loader / full':26}{ratio_f:>9.2%}{result.files_listed / files_full:>9.2%}"
          f"{result.list_calls / max(1, full_list_calls):>8.2%}{'':>6}{ratio_t:>11.2%}"
          f"{loader_proj / max(full_proj, 1e-9):>12.2%}")
    print(f"PROJECTION, not a measurement: counted calls x {args.list_ms:g} ms per LIST + "
          f"{args.head_ms:g} ms per HEAD, made one after another (the loader and Spark both "
          f"list with several threads, which divides both sides alike)")
    print(f"(table_from_path with given partition types: {table_s:.4f}s; "
          f"kept {result.partitions_kept} partitions = "
          f"{report['selectivity_actual']:.2%})")
    report["targets_met"] = {"folders<=2%": ratio_f <= 0.02, "time<=10%": ratio_t <= 0.10}

    if not args.no_spark:
        report["spark"] = spark_side(spark, root, table, result, lp)
    (out / "bench.json").write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out / 'bench.json'}")
    if spark is not None:
        spark.stop()
    return 0


def _spark() -> Any:
    """A local session whose ``file:`` filesystem counts LIST/HEAD requests (when a JDK is
    there to build the counting one; otherwise Spark's requests are not counted)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from hive_splits.storage_calls import CountingUnavailable, counting_conf

    builder = (SparkSession.builder.master("local[2]").appName("hive-splits-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "2g"))
    try:
        for k, v in counting_conf().items():
            builder = builder.config(k, v)
    except CountingUnavailable as exc:
        print(f"(Spark's own requests are not counted: {exc})")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_side(spark: Any, root: Path, table: Any, result: Any, lp: Any) -> dict[str, Any]:
    from hive_splits import to_dataframe
    from hive_splits.storage_calls import storage_calls

    def counted(fn: Any) -> tuple[Any, float, Optional[tuple[int, int]]]:
        before = storage_calls(spark)
        out, secs = _timed(fn)
        after = storage_calls(spark)
        calls = None if before is None or after is None else (after[0] - before[0],
                                                              after[1] - before[1])
        return out, secs, calls

    spark.range(1).count()  # warm the JVM so neither side pays for start-up
    full_df, full_s, full_calls = counted(lambda: spark.read.parquet(str(root)))
    driver_df, driver_s, driver_calls = counted(lambda: to_dataframe(spark, table, result))
    _, job_s, _ = counted(lambda: to_dataframe(spark, table, result, driver_listing=False))
    a = sorted({s.partition_values["a"] for s in result.splits})
    b = sorted({s.partition_values["b"] for s in result.splits})
    where = f"a in ({','.join(map(str, a))}) and b in ({','.join(map(str, b))})"
    n_pruned = driver_df.count()
    n_spark = full_df.where(where).count()
    assert n_pruned == n_spark, (n_pruned, n_spark)
    print(f"\n{'Spark DataFrame build':44}{'seconds':>10}")
    print(f"{'spark.read.parquet(root) (whole table)':44}{full_s:>10.3f}")
    print(f"{'to_dataframe (driver lists kept files)':44}{driver_s:>10.3f}")
    print(f"{'to_dataframe (Spark parallel listing job)':44}{job_s:>10.3f}")
    print(f"{'ratio to_dataframe / whole table':44}{driver_s / full_s:>10.2%}")
    print(f"(rows over the kept splits: {n_pruned}, same as Spark's own pruned read)")
    out: dict[str, Any] = {"read_whole_table_seconds": full_s,
                           "to_dataframe_seconds": driver_s,
                           "to_dataframe_parallel_listing_seconds": job_s,
                           "ratio": driver_s / full_s, "rows_checked": n_pruned}
    if full_calls is not None and driver_calls is not None:
        print(f"\n{'Spark requests (counted)':44}{'LIST':>8}{'HEAD':>8}{'projected s':>12}")
        for label, (lc, hc) in (("spark.read.parquet(root)", full_calls),
                                ("to_dataframe over the kept splits", driver_calls)):
            print(f"{label:44}{lc:>8}{hc:>8}{lp(lc, hc):>12.1f}")
        total_spark = lp(*full_calls)
        total_dpp = lp(result.list_calls, result.head_calls) + lp(*driver_calls)
        print(f"{'projected: Spark alone vs loader + handoff':44}{'':>16}"
              f"{total_spark:>6.1f} vs {total_dpp:.1f} ({total_dpp / total_spark:.2%})")
        out.update({"spark_read_calls": full_calls, "handoff_calls": driver_calls,
                    "projected_spark_seconds": total_spark,
                    "projected_loader_plus_handoff_seconds": total_dpp})
    return out


if __name__ == "__main__":
    sys.exit(main())
