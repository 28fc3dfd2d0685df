"""Whether a SparkSession is a Spark Connect client (no JVM in this Python process).

Decided from the object's class, not from ``pyspark.sql.utils.is_remote()`` (which reads the
process environment): one process may hold a classic session and a Connect client at once
(the test suite does), and each must take its own path. Imports nothing, so every package may
ask it without loading Spark.
"""
from __future__ import annotations

from typing import Any

__all__ = ["is_remote", "functions_for", "JVM_NOTE_PREFIX"]

JVM_NOTE_PREFIX = "Spark Connect: "


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
