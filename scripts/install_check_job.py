"""The job of ``scripts/install_check.sh``: a DataFrame star join over a Hive-partitioned
folder, with dpp switched on; prints the Spark release, the hook jar it took and what it kept."""
import os, sys, tempfile
import pyarrow as pa, pyarrow.parquet as pq
from pyspark.sql import SparkSession
import dpp
root = tempfile.mkdtemp()
for d in range(10):
    os.makedirs(f"{root}/fact/day={d}")
    pq.write_table(pa.table({"v": pa.array([d, d * 10], pa.int64())}), f"{root}/fact/day={d}/p.parquet")
pq.write_table(pa.table({"d": list(range(10)), "m": [1, 1] + [2] * 8}), f"{root}/dim.parquet")
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s = dpp.enable(spark)
print("pyspark", __import__("pyspark").__version__, "hook:", s.optimizer_hook is not None,
      s.hook_note or "")
from dpp.runtime import jvm_build
print("jar:", jvm_build.hook_jar())
f = spark.read.parquet(f"{root}/fact")
dm = spark.read.parquet(f"{root}/dim.parquet").where("m = 1")
rows = sorted(f.join(dm, f.day == dm.d).select("v").collect())
t = s.last_report.tables[0]
print("rows", [r.v for r in rows], "kept", t.partitions_kept, "of", t.partitions_total, t.pruning)
