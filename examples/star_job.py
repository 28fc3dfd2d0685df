"""A star-schema job with dynamic partition pruning switched on by configuration.

Copy it: the only dpp line is ``dpp.enable(spark)``; the rest is an ordinary PySpark job. The
fact table is Hive-partitioned Parquet (``sales/day_sk=20240201/part-0.parquet``) declared by
``--conf spark.dpp.tables.sales=<path>``; the dimension is an ordinary view over a Parquet
folder given as ``--dates``. Run it with::

    PYSPARK_DRIVER_PYTHON=.venv/bin/python .venv/bin/spark-submit --master 'local[2]' \\
        --conf spark.dpp.enabled=true \\
        --conf spark.dpp.tables.sales=/data/sales \\
        --conf spark.dpp.report.path=/tmp/dpp-report.jsonl \\
        examples/star_job.py --dates /data/dates --year 2024 --month 2

(the driver's Python needs this package installed; executors need nothing beyond Spark.)
It prints one JSON line per result row, then dpp's summary of what it skipped. With
``--conf spark.dpp.enabled=false`` dpp does nothing at all, declaring no table either: the
name ``sales`` is then unknown to Spark. Plain Spark's rows for the same job come from a
catalog table over the folder, or from ``spark.read.parquet(<path>)`` in place of the name.
"""
from __future__ import annotations

import argparse
import json
import sys

from pyspark.sql import SparkSession

import dpp

QUERY = """
    SELECT d.d_date, count(*) AS orders, sum(s.quantity) AS quantity,
           sum(s.amount_cents) AS amount_cents
    FROM sales s JOIN dates d ON s.day_sk = d.day_sk
    WHERE d.d_year = {year} AND d.d_moy = {month}
    GROUP BY d.d_date
    ORDER BY d.d_date"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Daily sales of one month (a star join).")
    ap.add_argument("--dates", required=True, help="the date dimension: a Parquet folder")
    ap.add_argument("--year", type=int, required=True)
    ap.add_argument("--month", type=int, required=True, choices=range(1, 13))
    args = ap.parse_args(argv)

    spark = SparkSession.builder.appName("star-job").getOrCreate()
    dpp.enable(spark)   # spark.sql now prunes while spark.dpp.enabled is true

    spark.read.parquet(args.dates).createOrReplaceTempView("dates")
    rows = spark.sql(QUERY.format(year=args.year, month=args.month)).collect()

    for row in rows:
        print(json.dumps(row.asDict(), default=str, sort_keys=True))
    session = dpp.session_of(spark)
    report = session.last_report if session is not None else None
    print(f"# {len(rows)} rows; " + (report.summary_line() if report is not None
                                     else "dpp: no report (spark.dpp.enabled=false)"))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
