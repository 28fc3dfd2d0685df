"""A star-schema job as a user writes it, run by tests/test_plain_python_job.py.

Usage: python plain_star_job.py FACT_DIR DIM_DIR [spark.dpp.key=value ...]
Prints one JSON line per query: its rows and what the dpp report says.
"""
import json
import sys

from pyspark.sql import SparkSession

from dpp import DppSession

fact, dim, *settings = sys.argv[1:]
builder = SparkSession.builder.master("local[2]").appName("plain-star-job")
for kv in settings:
    k, v = kv.split("=", 1)
    builder = builder.config(k, v)
spark = builder.getOrCreate()
spark.read.parquet(dim).createOrReplaceTempView("dim")
dpp = DppSession(spark)
dpp.register_table("fact", fact)
for names in (("n1", "n4"), ("n2",)):
    q = ("SELECT k, count(*) AS n FROM fact JOIN dim ON k = d_k WHERE d_name IN ("
         + ", ".join(f"'{n}'" for n in names) + ") GROUP BY k ORDER BY k")
    rows = [list(r) for r in dpp.collect(q)]
    rep = dpp.last_report
    t = rep.tables[0]
    print(json.dumps({"rows": rows, "kept": t.partitions_kept, "total": t.partitions_total,
                      "outcomes": [f.outcome for f in rep.filters],
                      "reasons": [f.reason for f in rep.filters],
                      "environment": rep.environment}), flush=True)
spark.stop()
