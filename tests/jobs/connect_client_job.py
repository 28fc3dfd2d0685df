"""A Spark Connect client job that knows nothing of dpp (tests/test_connect_server.py).

    python connect_client_job.py sc://HOST:PORT FACT_FOLDER CALENDAR_FOLDER

A SQL star join, a DataFrame join and a DataFrame job ending in ``saveAsTable``; prints one
JSON line: the rows of each (as text), the client's Connect session id, and whether anything
imported dpp into this process.
"""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession


def main(url: str, fact: str, cal: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    spark.read.parquet(fact).createOrReplaceTempView("events")
    spark.read.parquet(cal).createOrReplaceTempView("calendar")
    sql = spark.sql("SELECT f.amount, f.item, f.day FROM events f JOIN calendar c "
                    "ON f.day = c.day WHERE c.month = 2").collect()
    feb = spark.table("calendar").where("month = 2")
    frame = spark.table("events").join(feb, "day").select("amount", "item", "day")
    dataframe = frame.collect()
    spark.sql("DROP TABLE IF EXISTS client_job_out")
    frame.write.mode("overwrite").saveAsTable("client_job_out")
    saved = spark.table("client_job_out").collect()
    spark.sql("DROP TABLE IF EXISTS client_job_out")
    text = lambda rows: [[str(x) for x in r] for r in rows]  # noqa: E731
    print(json.dumps({"sql": text(sql), "dataframe": text(dataframe), "saved": text(saved),
                      "session_id": spark.session_id,
                      "dpp_imported": any(m == "dpp" or m.startswith("dpp.")
                                          for m in sys.modules)}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
