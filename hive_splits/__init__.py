"""Tables and their partitions, Hive path naming, the split loader, Parquet statistics pruning.

Public API::

    table = table_from_path(path, name=None, partition_types=None, schema=None)
    table = table_from_catalog(spark, "db.table")
    result = SplitLoader(table, static, dynamic, wait_timeout, stats_pruning,
                         footer_cache=FooterCache(), max_workers=8).load()
    df = to_dataframe(spark, table, result)

Importing this package does not import PySpark (only :func:`to_dataframe`,
:func:`spark_struct_type` and :func:`table_from_catalog` need a session).
"""
from __future__ import annotations

from hive_splits.footers import FooterCache, cannot_match, might_match
from hive_splits.loader import (DynamicFilter, FilterStatus, KeyExpression, KeptPartition, LevelStats,
                                LoadResult, Split, SplitLoader)
from hive_splits.naming import (DEFAULT_PARTITION_NAME, escape_path_name, is_hidden,
                                parse_folder_name, partition_folder_name, unescape_path_name)
from hive_splits.spark_io import to_dataframe
from hive_splits.table import (CatalogPartition, PartitionColumn, Table, infer_partition_type,
                               spark_ddl, spark_struct_type, table_from_catalog,
                               table_from_path, with_catalog_partitions)

__all__ = [
    "Table", "PartitionColumn", "CatalogPartition", "table_from_path", "table_from_catalog",
    "with_catalog_partitions", "spark_ddl", "spark_struct_type", "infer_partition_type",
    "DEFAULT_PARTITION_NAME", "escape_path_name", "unescape_path_name", "is_hidden",
    "parse_folder_name", "partition_folder_name",
    "DynamicFilter", "KeyExpression", "Split", "KeptPartition", "FilterStatus", "LevelStats", "LoadResult",
    "SplitLoader", "FooterCache", "might_match", "cannot_match", "to_dataframe",
]
