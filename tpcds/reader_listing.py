"""What ``spark.read.parquet(folder)`` of a partitioned fact costs a DataFrame job, with and
without dpp, against the same job over the folder declared as a table.

One process, one Spark session, the same star join written with DataFrames (TPC-DS q3's
shape: ``store_sales`` joined to ``date_dim`` filtered to one month)::

    python -m tpcds.reader_listing --data data/tpcds-sf1 [--repeat 2]

Prints per form: seconds to make the fact's DataFrame (the reader lists here), seconds to
run the join, and what dpp's report says was listed. Forms:

* ``reader, spark``: ``spark.read.parquet(store_sales)``, Spark's own pruning, no dpp;
* ``reader, dpp``: the same DataFrame with dpp's optimizer hook installed;
* ``declared, dpp``: the folder declared (``spark.dpp.tables.store_sales``), read with
  ``spark.table``: Spark's reader of the folder, made when ``spark.table`` names it (the
  reader's listing, the same rows; a declared table is no cheaper to list than the reader).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F


def _job(spark: Any, fact: Any, data: str) -> list[Any]:
    dates = spark.read.parquet(os.path.join(data, "date_dim")).where(
        (F.col("d_year") == 2000) & (F.col("d_moy") == 11))
    return (fact.join(dates, fact["ss_sold_date_sk"] == dates["d_date_sk"])
            .groupBy("d_date").agg(F.sum("ss_ext_sales_price").alias("sales"))
            .orderBy("d_date").collect())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="generated TPC-DS folder (path tables)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    import dpp
    from tpcds.cli import make_spark

    fact_path = str(Path(args.data) / "store_sales")
    spark = make_spark(False, Path(args.data) / "_reader_listing_state")
    rows: dict[str, Any] = {}
    print(f"{'form':16} {'make df':>8} {'run':>8}  listed by dpp")
    for rep in range(args.repeat):
        for form in ("reader, spark", "declared, dpp", "reader, dpp"):
            spark.conf.set("spark.dpp.enabled", "false" if form == "reader, spark" else "true")
            session = None
            if form == "declared, dpp":
                spark.conf.set("spark.dpp.tables.store_sales", fact_path)
            try:
                if form != "reader, spark":
                    session = dpp.enable(spark)
                    session.last_report = None
                t0 = time.perf_counter()
                fact = (spark.table("store_sales") if form == "declared, dpp"
                        else spark.read.parquet(fact_path))
                t1 = time.perf_counter()
                got = _job(spark, fact, args.data)
                t2 = time.perf_counter()
                listed = "-"
                report = session.last_report if session is not None else None
                if report is not None:
                    t = [x for x in report.tables if x.pruning == "applied"]
                    listed = (f"{t[0].folders_listed} folders, kept {t[0].partitions_kept}/"
                              f"{t[0].partitions_total}" if t else "not pruned")
                print(f"{form:16} {t1 - t0:8.2f} {t2 - t1:8.2f}  {listed}  (run {rep + 1})")
                if rows.setdefault("rows", got) != got:
                    print(f"{form}: rows differ from the first form's", file=sys.stderr)
                    return 1
            finally:
                if session is not None:
                    dpp.disable(spark)
                spark.conf.unset("spark.dpp.tables.store_sales")
    print(f"rows: {len(rows['rows'])}, equal in every form")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
