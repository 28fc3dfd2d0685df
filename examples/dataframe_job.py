"""A DataFrame-API star job that ends in a table write, pruned by dpp's optimizer hook.

The only dpp line is ``dpp.enable(spark)``; the job itself is ordinary PySpark: the fact
(Hive-partitioned Parquet, ``sales/day_sk=20240201/part-0.parquet``) is declared by
``--conf spark.dpp.tables.sales=<path>`` and read with ``spark.table("sales")`` (a relation
that lists nothing until the scan, then only the partitions the filtered dates can match);
the dimension is a Parquet folder given as ``--dates``. Run it with::

    PYSPARK_DRIVER_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        --conf spark.dpp.enabled=true \\
        --conf spark.dpp.tables.sales=/data/sales \\
        --conf spark.dpp.report.path=/tmp/dpp-report.jsonl \\
        examples/dataframe_job.py --dates /data/dates --year 2024 --month 2 --table daily_sales

It writes one row per day of the month to table ``--table`` (``saveAsTable``, overwritten)
and prints dpp's summary of what the write's scan skipped. With
``--conf spark.dpp.enabled=false`` dpp does nothing at all, declaring no table either: the
name ``sales`` is then unknown to Spark. Plain Spark's rows for the same job come from a
catalog table over the folder, or from ``spark.read.parquet(<path>)`` in place of the name.
"""
from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import dpp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Daily sales of one month, saved as a table.")
    ap.add_argument("--dates", required=True, help="the date dimension: a Parquet folder")
    ap.add_argument("--year", type=int, required=True)
    ap.add_argument("--month", type=int, required=True, choices=range(1, 13))
    ap.add_argument("--table", required=True, help="the table to write (overwritten)")
    args = ap.parse_args(argv)

    spark = SparkSession.builder.appName("daily-sales-table").getOrCreate()
    dpp.enable(spark)   # DataFrame jobs and writes now prune while spark.dpp.enabled is true

    dates = (spark.read.parquet(args.dates)
             .where((F.col("d_year") == args.year) & (F.col("d_moy") == args.month)))
    daily = (spark.table("sales").join(dates, "day_sk")
             .groupBy("d_date")
             .agg(F.count("*").alias("orders"), F.sum("quantity").alias("quantity"),
                  F.sum("amount_cents").alias("amount_cents")))
    daily.write.mode("overwrite").format("parquet").saveAsTable(args.table)

    session = dpp.session_of(spark)
    report = session.last_report if session is not None else None
    print(f"# wrote {spark.table(args.table).count()} rows to {args.table}; "
          + (report.summary_line() if report is not None
             else "dpp: no report (spark.dpp.enabled=false)"))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
