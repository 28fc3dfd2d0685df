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
figure — the figure the handoff gives it (:meth:`dpp.runtime.handoff.Handoff.unpruned_estimate`). A
table the user cached stays Spark's: its cached relation is faster than any listing.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Protocol

from sqlglot import exp

from dpp.core.errors import LayoutError
from dpp.runtime.decision import lists_whole_catalog_table
from dpp.frontends.sql.planner import PruningPlan, TableRefPlan
from dpp.runtime.services import first_line, temp_view
from dpp.runtime.views import norm_name
from hive_splits import SplitLoader, Table
from hive_splits.spark_io import whole_folders_dataframe
from hive_splits.table import local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from dpp.runtime.catalog import TableCatalog
    from dpp.runtime.config import DppConfig
    from dpp.core.spark_rules import SparkRules
    from dpp.runtime.handoff import Handoff
    from dpp.runtime.report import JobReport
    from dpp.runtime.services import Runtime

__all__ = ["WholeReadSession", "whole_catalog_refs", "names_partition_column", "read_whole"]

log = logging.getLogger(__name__)


class WholeReadSession(Protocol):
    """What reading a table whole uses of the session: :class:`dpp.session.DppSession`
    implements it. Declared here, not imported from there, so the import arrow points one
    way: the session calls this module."""

    spark: "SparkSession"
    runtime: "Runtime"
    catalog: "TableCatalog"
    handoff: "Handoff"


def whole_catalog_refs(plan: PruningPlan, unpruned: Iterable[tuple[TableRefPlan, Any]],
                       tables: Mapping[str, Optional[Table]], enabled: bool
                       ) -> dict[str, tuple[Table, list[TableRefPlan]]]:
    """The unpruned references to partitioned catalog tables that the split loader lists in
    Spark's place (:func:`dpp.runtime.decision.lists_whole_catalog_table`; for SQL text, a partition
    column named anywhere in the query counts as a filter on it), by table name with the
    table the analysis resolved. ``enabled``: ``spark.dpp.listWholeCatalogTables``."""
    tree = plan._tree
    if tree is None or not enabled:
        return {}
    out: dict[str, tuple[Table, list[TableRefPlan]]] = {}
    for ref, _why in unpruned:
        key = norm_name(ref.table)
        table = tables.get(key)
        if table is None or not table.is_catalog or not table.partition_columns:
            continue
        if not lists_whole_catalog_table(enabled, names_partition_column(tree, table),
                                         table.bucketing is not None):
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


def read_whole(session: WholeReadSession, whole: dict[str, tuple[Table, list[TableRefPlan]]],
               cfg: "DppConfig", rules: "SparkRules", report: "JobReport",
               temp_views: list[str]) -> dict[str, str]:
    """Catalog tables read whole (:func:`whole_catalog_refs`): one listing and one view per
    table, shared by all its references so Spark can still merge their scans (q9).
    Returns reference id → view name; a table that fails here stays Spark's own."""
    out: dict[str, str] = {}
    t0 = time.perf_counter()
    for key, (table, refs) in whole.items():
        try:
            if session.spark.catalog.isCached(table.catalog_name or key):
                report.analysis_notes.append(
                    f"{key}: read whole from Spark's cache (CACHE TABLE), not listed by dpp")
                continue
            df, how = _whole(session, table, cfg, rules)
        except LayoutError:
            raise
        except Exception as exc:
            log.warning("dpp: listing %s whole failed, Spark lists it: %s", key, exc)
            report.analysis_notes.append(f"{key}: listing it whole failed, Spark's own "
                                         f"catalog listing used: {first_line(exc)}")
            continue
        view = temp_view(df, key, temp_views)
        for ref in refs:
            out[ref.ref_id] = view
        report.analysis_notes.append(
            f"{key}: no partition filter, read whole through dpp's listing ({how}) "
            f"instead of Spark's catalog listing (spark.dpp.listWholeCatalogTables=false "
            f"turns this off)")
    report.phases["whole_listing"] = time.perf_counter() - t0
    return out


def _whole(session: WholeReadSession, table: Table, cfg: "DppConfig", rules: "SparkRules"
           ) -> tuple["DataFrame", str]:
    """A catalog table read whole, and how it was listed (for the report's note).

    Every partition object comes in one metastore call. When every partition sits where
    Spark would put it (``root/k=v``), the folders go to Spark, which lists them once
    (:func:`hive_splits.spark_io.whole_folders_dataframe`): nothing is pruned, so the
    loader's own listing would only be listed again. Partitions at locations of their own
    go through the split loader as before (per-partition reads)."""
    t0 = time.perf_counter()
    source = table.partition_source
    if source is None:
        raise LayoutError(f"table {table.name}: no partition source to list it whole")
    parts, _info = source.fetch_every()
    if not all(cp.at_default_path(table.location) for cp in parts):
        # a partition at a location of its own: the loader's way
        shaped = dataclasses.replace(table, partition_source=None,
                                     catalog_partitions=tuple(parts))
        result = SplitLoader(shaped, rules=rules,
                             lister=session.runtime.lister(table.location, cfg)).load()
        df = session.handoff.listed_whole(table, result)
        return df, (f"{result.files_kept} files in {result.partitions_kept} partitions, "
                    f"listed in {result.elapsed_seconds:.2f} s, handed to Spark in "
                    f"{result.handoff_seconds:.2f} s")
    folders = [local_path(cp.location) for cp in parts]
    t1 = time.perf_counter()
    estimate = session.catalog.estimate(table.catalog_name or table.name)
    df, files, _bytes = whole_folders_dataframe(session.spark, table, folders, estimate)
    counted = f"{files} files in " if files >= 0 else ""
    return df, (f"{counted}{len(folders)} partition folders, objects fetched in "
                f"{t1 - t0:.2f} s, listed by Spark's reader in "
                f"{time.perf_counter() - t1:.2f} s")
