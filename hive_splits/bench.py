"""Benchmark: full listing vs the split loader, and Spark's DataFrame build over each.

    python -m hive_splits.bench --partitions 50000 --out /tmp/hs-bench

Builds (once; reused when present) a two-level table ``a=i/b=j`` of at least ``--partitions``
leaf partitions, one small Parquet file each (one file written, the rest hard links), then in
one run side by side:

1. full listing: every folder listed, the way Spark must before it can plan a path table;
2. the loader at ``--selectivity`` (dynamic filters on both levels, each keeping
   sqrt(selectivity) of its values), folders and files listed;
3. Spark building a DataFrame over the whole table (``spark.read.parquet(root)``) vs over the
   loader's splits (``to_dataframe``), the latter both with driver-side listing of the kept
   files and with Spark's parallel listing job, to show why the driver path is the default.

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
from typing import Any


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


def full_listing(root: Path) -> tuple[int, int]:
    folders = files = 0
    for _, _, fs in os.walk(root):
        folders += 1
        files += len(fs)
    return folders, files


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
    args = ap.parse_args(argv)

    from dpp.core.domain import INT, Domain
    from hive_splits import DynamicFilter, SplitLoader, table_from_path

    out = Path(args.out)
    level1 = args.level1
    level2 = math.ceil(args.partitions / level1)
    root = out / "table"
    _, build_s = _timed(lambda: build_table(root, level1, level2))
    print(f"table: {level1} x {level2} = {level1 * level2} leaf partitions at {root} "
          f"(built in {build_s:.1f}s)")

    (folders_full, files_full), full_s = _timed(lambda: full_listing(root))
    table, table_s = _timed(lambda: table_from_path(str(root), name="bench",
                                                    partition_types={"a": "int", "b": "int"}))
    frac = math.sqrt(args.selectivity)
    keep_a = list(range(0, level1, max(1, round(1 / frac))))
    keep_b = list(range(0, level2, max(1, round(1 / frac))))
    filters = [DynamicFilter("fa", "a", lambda t: (Domain.values(INT, keep_a), "complete", None)),
               DynamicFilter("fb", "b", lambda t: (Domain.values(INT, keep_b), "complete", None))]
    result, load_s = _timed(lambda: SplitLoader(table, None, filters, wait_timeout=10).load())

    report: dict[str, Any] = {
        "leaf_partitions": level1 * level2,
        "selectivity_target": args.selectivity,
        "selectivity_actual": result.partitions_kept / (level1 * level2),
        "full_listing": {"folders_listed": folders_full, "files_listed": files_full,
                         "seconds": full_s},
        "loader": {"folders_listed": result.folders_listed, "files_listed": result.files_listed,
                   "partitions_kept": result.partitions_kept, "seconds": load_s,
                   "table_from_path_seconds": table_s},
    }
    ratio_f = result.folders_listed / folders_full
    ratio_t = load_s / full_s
    print(f"\n{'':28}{'folders listed':>16}{'files listed':>14}{'seconds':>10}")
    print(f"{'full listing (os.walk)':28}{folders_full:>16}{files_full:>14}{full_s:>10.3f}")
    print(f"{'loader @ %.2g%%' % (100 * args.selectivity):28}{result.folders_listed:>16}"
          f"{result.files_listed:>14}{load_s:>10.3f}")
    print(f"{'loader / full':28}{ratio_f:>16.2%}{result.files_listed / files_full:>14.2%}"
          f"{ratio_t:>10.2%}")
    print(f"(table_from_path with given partition types: {table_s:.4f}s; "
          f"kept {result.partitions_kept} partitions = "
          f"{report['selectivity_actual']:.2%})")
    report["targets_met"] = {"folders<=2%": ratio_f <= 0.02, "time<=10%": ratio_t <= 0.10}

    if not args.no_spark:
        report["spark"] = spark_side(root, table, result)
    (out / "bench.json").write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out / 'bench.json'}")
    return 0


def spark_side(root: Path, table: Any, result: Any) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from hive_splits import to_dataframe

    spark = (SparkSession.builder.master("local[2]").appName("hive-splits-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.range(1).count()  # warm the JVM so neither side pays for start-up
        full_df, full_s = _timed(lambda: spark.read.parquet(str(root)))
        driver_df, driver_s = _timed(lambda: to_dataframe(spark, table, result))
        _, job_s = _timed(lambda: to_dataframe(spark, table, result, driver_listing=False))
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
        return {"read_whole_table_seconds": full_s, "to_dataframe_seconds": driver_s,
                "to_dataframe_parallel_listing_seconds": job_s,
                "ratio": driver_s / full_s, "rows_checked": n_pruned}
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
