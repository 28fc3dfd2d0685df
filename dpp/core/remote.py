"""Whether a SparkSession is a Spark Connect client (no JVM in this Python process).

Decided from the object's class, not from ``pyspark.sql.utils.is_remote()`` (which reads the
process environment): one process may hold a classic session and a Connect client at once
(the test suite does), and each must take its own path. Imports nothing, so every package may
ask it without loading Spark.
"""
from __future__ import annotations

from typing import Any

__all__ = ["is_remote", "JVM_NOTE_PREFIX"]

JVM_NOTE_PREFIX = "Spark Connect: "


def is_remote(spark: Any) -> bool:
    """True for a Spark Connect ``SparkSession`` (or a DataFrame of one): every call goes over
    gRPC to a server, and ``sparkContext``, ``_jvm``, ``_jsparkSession`` and ``_jdf`` do not
    exist."""
    module = type(spark).__module__ or ""
    return module.startswith("pyspark.sql.connect.")
