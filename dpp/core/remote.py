"""Whether a SparkSession is a Spark Connect client (no JVM in this Python process).

Decided from the object's class, not from ``pyspark.sql.utils.is_remote()`` (which reads the
process environment): one process may hold a classic session and a Connect client at once
(the test suite does), and each must take its own path. Imports nothing, so every package may
ask it without loading Spark. With it, the notes a Connect session's reports carry for what
it does without (no JVM in this process).
"""
from __future__ import annotations

from typing import Any

__all__ = ["is_remote", "functions_for", "JVM_NOTE_PREFIX", "CONNECT_NOTES",
           "CONNECT_CATALOG_LEFT"]

JVM_NOTE_PREFIX = "Spark Connect: "

# What a Spark Connect session (no JVM in this process) does without, each said once per
# session in the first report that meets it (``environment``); the rows are Spark's either way
CONNECT_NOTES = {k: JVM_NOTE_PREFIX + v for k, v in {
    "handoff_calls": "the handoff's storage requests are not counted (the counting "
                     "filesystem is in the server's JVM); handoff_list_calls/head_calls "
                     "stay null",
    "scan_metrics": "spark_scan (files and bytes Spark read) is not reported: the "
                    "executed plan's metrics and Spark's status store are in the server's JVM",
    "lister": "spark.dpp.lister=hadoop needs Hadoop's FileSystem in the driver's JVM: the "
              "client lists instead (local paths directly, object stores and HDFS through "
              "pyarrow.fs from spark.hadoop.*), and Spark lists the kept folders again",
    "catalog": "a partitioned catalog table dpp cannot prune exactly here (the table's "
               "entry says why: partitions not tracked by the catalog, another catalog, "
               "CHAR columns, ...) is left to Spark (its own partition pruning and DPP)",
    "catalog_predicate": "catalog tables are pruned by a predicate on their partition "
                         "columns (the kept partitions' values, as ranges), which Spark's own "
                         "partition pruning applies while planning: Spark fetches and lists "
                         "the kept partitions itself, so their files, bytes, folders and "
                         "storage requests are not counted (files_kept/bytes_kept 0), and "
                         "Spark sizes the relation by the kept partitions, not the table; "
                         "a plain Parquet table pruned by a join whose files all sit in its "
                         "partitions' default folders is read as those folders instead, "
                         "sized as the table and counted (its metastore note says so)",
    "collector": "spark.dpp.collector=arrow runs Python tasks through the RDD API, which "
                 "Spark Connect does not offer: build sides use Spark's own aggregation "
                 "(native)",
}.items()}

# the reason of a catalog table left to Spark on Spark Connect starts with this
CONNECT_CATALOG_LEFT = JVM_NOTE_PREFIX + "catalog table left to Spark: "


def is_remote(spark: Any) -> bool:
    """True for a Spark Connect ``SparkSession`` (or a DataFrame of one): every call goes over
    gRPC to a server, and ``sparkContext``, ``_jvm``, ``_jsparkSession`` and ``_jdf`` do not
    exist."""
    module = type(spark).__module__ or ""
    return module.startswith("pyspark.sql.connect.")


def functions_for(spark: Any) -> Any:
    """``pyspark.sql.functions`` for ``spark`` (a session or a DataFrame): the Connect module
    for a Connect client. PySpark's shared module picks its side from the process environment
    (``SPARK_CONNECT_MODE_ENABLED``, set by ``SparkSession.builder.remote``): a Connect client
    made without it (``pyspark.sql.connect.session.SparkSession.builder``) would get columns
    that need a JVM. Spark is imported only when this is called."""
    if is_remote(spark):
        from pyspark.sql.connect import functions as remote_functions

        return remote_functions
    from pyspark.sql import functions

    return functions
