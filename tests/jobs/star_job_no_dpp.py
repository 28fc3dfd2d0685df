"""``examples/star_job.py`` with its dpp lines taken out (no ``import dpp``, no
``dpp.enable``): a plain PySpark job, as ``dpp-submit`` and ``dpp run`` receive it
(tests/test_dpp_submit.py). Prints one JSON line per result row."""
from __future__ import annotations

import argparse
import json
import sys

from pyspark.sql import SparkSession

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

    spark.read.parquet(args.dates).createOrReplaceTempView("dates")
    rows = spark.sql(QUERY.format(year=args.year, month=args.month)).collect()

    for row in rows:
        print(json.dumps(row.asDict(), default=str, sort_keys=True))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
