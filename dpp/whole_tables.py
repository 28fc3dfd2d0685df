"""Partitioned catalog tables a query reads whole: listed by the split loader, not by Spark.

A catalog fact read without any partition filter (TPC-DS q96: ``store_sales`` joined on data
columns only) is listed by Spark while it plans the query: every partition object from the
metastore, then every partition folder through ``InMemoryFileIndex`` — past
``spark.sql.sources.parallelPartitionDiscovery.threshold`` (32 paths) a Spark job of its own.
At SF1 that is 7-8 s of q96's 17.6 s on two cores, against 0.2 s for the split loader's
listing of the same 1,824 folders. Path tables read whole already go through the loader
(their plain view); this gives catalog tables the same listing.

Only where the handoff cannot change Spark's plan: the reference must be one no partition
column of its table is named for anywhere in the query (no predicate, join, ``USING`` or
output on one), so Spark holds no partition filter on it and sizes it by the catalog's own
figure — the figure the handoff gives it (:meth:`DppSession._unpruned_estimate`). A table the
user cached stays Spark's: its cached relation is faster than any listing.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from sqlglot import exp

from dpp.planner import PruningPlan, TableRefPlan
from dpp.views import norm_name
from hive_splits import Table

__all__ = ["whole_catalog_refs", "names_partition_column"]


def whole_catalog_refs(plan: PruningPlan, unpruned: Iterable[tuple[TableRefPlan, str]],
                       tables: Mapping[str, Optional[Table]]
                       ) -> dict[str, tuple[Table, list[TableRefPlan]]]:
    """The unpruned references to partitioned catalog tables that the split loader can list
    in Spark's place (none of the table's partition columns is named in the query), by
    table name with the table the analysis resolved."""
    tree = plan._tree
    if tree is None:
        return {}
    out: dict[str, tuple[Table, list[TableRefPlan]]] = {}
    for ref, _why in unpruned:
        key = norm_name(ref.table)
        table = tables.get(key)
        if table is None or not table.is_catalog or not table.partition_columns:
            continue
        if names_partition_column(tree, table):
            continue
        out.setdefault(key, (table, []))[1].append(ref)
    return out


def names_partition_column(tree: Any, table: Table) -> bool:
    """Whether any identifier of the query spells one of ``table``'s partition columns,
    whatever qualifies it: a conservative test (a column of the same name on another table
    also counts) that stands for "Spark may hold a filter on a partition column here"."""
    parts = {c.name.lower() for c in table.partition_columns}
    return any(isinstance(node.this, str) and node.this.lower() in parts
               for node in tree.find_all(exp.Identifier))
