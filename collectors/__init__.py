"""Build-side collectors: Arrow batches → partial domains, and the build-side Spark job.

Importing this package does not import PySpark (the job imports it when it runs).
"""
from __future__ import annotations

from collectors.bloom import DEFAULT_BLOOM_CAPACITY, effective_bloom_capacity
from collectors.build import (STATUS_SCHEMA, BuildError, BuildResult, build_filter,
                              build_key_types, job_group_id, map_in_arrow,
                              spark_to_datatype)
from collectors.files import dataframe_files
from collectors.partial import ColumnCollector, PartialCollector, arrow_to_datatype
from collectors.sink import ExecutorPublisher, PartialSink

__all__ = [
    "build_filter", "BuildResult", "BuildError", "build_key_types", "job_group_id",
    "spark_to_datatype", "arrow_to_datatype", "map_in_arrow", "PartialCollector", "ColumnCollector",
    "PartialSink", "ExecutorPublisher", "dataframe_files", "DEFAULT_BLOOM_CAPACITY",
    "effective_bloom_capacity", "STATUS_SCHEMA",
]
