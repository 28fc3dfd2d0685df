"""The tables one ``DppSession`` can prune, and the columns of those it cannot.

Two kinds of table are pruned: *declared* ones (a Hive-partitioned Parquet folder registered
under a name, ``register_table`` or ``spark.dpp.tables.<name>``) and partitioned tables of
Spark's catalog, whose shape is read from the catalog's metadata and whose partitions the
loader fetches per query. Every other table or view Spark knows is described by its columns
only, so the analysis can tell which relation an unqualified column belongs to. A name the
user's own session holds (a temporary view, a table of the current database) is the user's:
never second-guessed (:mod:`dpp.runtime.views`).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
from typing import Any, Callable, Optional

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType as SparkDataType
from pyspark.sql.types import StructType

from dpp.runtime.config import DppConfig
from dpp.core.domain import DataType
from dpp.core.errors import DppError, LayoutError
from dpp.core.spark_rules import BROADCAST_KEY, SparkRules
from dpp.core.refusals import Code, Refusal
from dpp.runtime.decision import table_columns
from dpp.analysis.pruning_plan import TableInfo
from dpp.analysis.rules import is_fact
from dpp.runtime.remote_catalog import Unprunable, connect_catalog_table
from dpp.runtime.services import Runtime, first_line
from dpp.runtime.schema_cache import SchemaCache
from dpp.runtime.views import PlainViews, norm_name
from hive_splits import Table, table_from_catalog, table_from_path
from hive_splits.metastore import MetastorePartitions
from hive_splits.spark_io import folder_dataframe, folder_uri, kept_listing_dataframe
from hive_splits.table import catalog_metadata, catalog_partition_names

__all__ = ["TableCatalog", "schema_differs"]

log = logging.getLogger(__name__)


def schema_differs(schema: StructType, table: Table) -> Optional[Refusal]:
    """Why ``table`` (dpp's reading of a folder) is not the relation ``schema`` (Spark's
    reader's) describes — a column one has and the other lacks, or another type — or None.
    Names compare without case, as Spark resolves them by default."""
    def norm(t: str) -> str:   # dpp quotes nested field names, Spark's simple strings do not
        return t.replace("`", "")

    spark = {f.name.lower(): norm(f.dataType.simpleString()) for f in schema.fields}
    mine = {n.lower(): norm(t) for n, t in table.all_columns()}
    if set(spark) != set(mine):
        return Refusal.of(Code.COLUMNS_DIFFER, table.name, spark=sorted(spark),
                          folder=sorted(mine))
    for c in table.partition_columns:
        if spark[c.name.lower()] != c.type.simple_string():
            return Refusal.of(Code.TYPE_DIFFERS, c.name, spark=spark[c.name.lower()],
                              dpp=c.type.simple_string())
    for n, t in table.all_columns():
        if spark[n.lower()] != norm(t):
            return Refusal.of(Code.TYPE_DIFFERS, n, spark=spark[n.lower()], dpp=t)
    return None


class TableCatalog:
    """Declared and catalog tables by name, for the analysis and every front end.

    ``views``: the plain Spark views of declared tables (made when a query reads one whole,
    through ``whole_table``); ``tables`` and ``lock``: the declared tables by name, changed
    by :meth:`register` and :meth:`unregister`, read under the lock; ``schemas``: catalog
    tables' shapes, columns and size estimates, valid while Spark's are.
    """

    def __init__(self, spark: SparkSession, runtime: Runtime,
                 config: Callable[[], DppConfig],
                 whole_table: Callable[[Table], DataFrame]) -> None:
        self.spark = spark
        self.runtime = runtime
        self.config = config   # the session's settings now (``spark.dpp.lister``)
        self.remote = runtime.remote
        self.tables: dict[str, Table] = {}
        self.lock = threading.RLock()
        self.views = PlainViews(spark, self.registered_any, whole_table, remote=self.remote)
        self.schemas = SchemaCache(spark)
        self._manages_partitions: Optional[bool] = None   # Connect: the server's (static)
        # id(declared table) -> (table, the reader its query's lookup checked it against)
        self._readers: dict[int, tuple[Table, DataFrame]] = {}

    # ------------------------------------------------------------------ declared tables
    def kept_listing(self) -> Optional[int]:
        """``spark.dpp.declaredTables.keptListing`` now; None (Spark's reader) while some
        ``spark.dpp.*`` value cannot be read: a table read whole must not fail on a setting
        the hook reports and runs unpruned under."""
        try:
            return self.config().declared_kept_listing
        except DppError:
            return None

    def register(self, name: str, path: str, *,
                 partition_types: Optional[dict[str, str]] = None) -> Table:
        """Declares the folder ``path`` under ``name`` (see ``DppSession.register_table``)."""
        key = norm_name(name)
        rules = SparkRules.from_spark(self.spark)
        table = table_from_path(path, name=key, partition_types=partition_types,
                                timestamp_type=rules.timestamp_type,
                                type_inference=rules.type_inference,
                                lister=self.runtime.lister(path, self.config()),
                                spark_types=(None if partition_types
                                             else self._kept_listing_types(path)))
        with self.lock:
            self.tables[key] = table
            self._forget_readers(key)
        self.views.forget(key)  # a view over the previous registration must not outlive it
        self.schemas.forget(key)
        self.views.usable(key)  # a user's object of that name wins: said now, once
        return table

    def _kept_listing_types(self, path: str) -> Optional[dict[str, str]]:
        """The column types Spark's reader gives the folder, where the kept-partition index
        reads it (:func:`hive_splits.spark_io.kept_listing_dataframe`: proved from the folder
        names, one listing per partition level), or None. Without them the declaration
        infers the partition types itself, listing every partition folder."""
        kept = self.kept_listing()
        if kept is None or self.remote:
            return None
        df = kept_listing_dataframe(self.spark, folder_uri(path), kept)   # never raises
        if df is None:
            return None
        try:
            return {f.name: f.dataType.simpleString() for f in df.schema.fields}
        except Exception as exc:   # the declaration infers the types itself
            log.debug("dpp: %s: no types from the kept-partition index (%s)", path, exc)
            return None

    def unregister(self, name: str) -> None:
        """Forgets a declared table, and drops the plain view made of it (a user's own view
        of that name is left alone)."""
        key = norm_name(name)
        with self.lock:
            self.tables.pop(key, None)
            self._forget_readers(key)
        self.views.forget(key)
        self.schemas.forget(key)

    def declared(self) -> dict[str, Table]:
        """The declared tables by name, as they are now."""
        with self.lock:
            return dict(self.tables)

    def registered(self, key: str) -> Optional[Table]:
        """The declared table of that name, unless a view or table of the user's session
        holds the name (the user's object wins; :mod:`dpp.runtime.views`)."""
        t = self.registered_any(key)
        if t is None or not self.views.usable(key):
            return None
        return t

    def registered_any(self, key: str) -> Optional[Table]:
        """The declared table of that name, whoever else holds the name."""
        with self.lock:
            return self.tables.get(key)

    def mentions(self, text: str) -> list[str]:
        """Declared table names a SQL text mentions (a cheap, conservative scan)."""
        with self.lock:
            names = list(self.tables)
        low = text.lower()
        return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", low)]

    # ------------------------------------------------------------------ lookup
    def table(self, name: str, unusable: Optional[dict[str, Refusal]] = None,
              metas: Optional[dict[str, Any]] = None) -> Optional[Table]:
        """A declared table, or a partitioned table of Spark's catalog, or None (with the
        reason in ``unusable`` when a partitioned catalog table cannot be pruned).
        ``metas``: the query's memo of catalog metadata read, so a dimension's columns are
        taken from the same answer (one metastore call per table, not two)."""
        key = norm_name(name)
        t = self.registered(key)
        if t is not None:
            return self._as_read_now(key, t, unusable)
        if self.is_temp_view(key):
            return None  # the user's own view: never second-guessed
        if self.remote:
            return self._remote_table(key, unusable)
        try:
            shape = self.schemas.get_or_compute("catalog", key,
                                                lambda: self._catalog_shape(key, metas))
        except Exception as exc:
            log.warning("dpp: catalog table %s cannot be used for pruning: %s", key, exc)
            if unusable is not None:
                unusable[key] = Refusal.of(Code.CATALOG_UNUSABLE, key, error=first_line(exc))
            return None
        if shape is None:
            return None
        if not shape.partition_columns:
            # read by its files (_unpartitioned_shape), unless cached since: its cache is
            # faster than any file
            try:
                return None if self.spark.catalog.isCached(key) else shape
            except Exception:
                return None
        # partitions are fetched by the loader, per query (one added since is never missed):
        # names of all, full objects only for those the domains admit
        return dataclasses.replace(shape, partition_source=MetastorePartitions(
            self.spark, shape.catalog_name or key, shape.partition_columns))

    def _as_read_now(self, key: str, t: Table, unusable: Optional[dict[str, Refusal]]
                     ) -> Optional[Table]:
        """The declared table as Spark's reader of its folder reads it now, or None (the
        reason in ``unusable``): the folder may have changed since it was declared (files
        of another column type, a partition folder that changes the inferred type), and the
        analysis, the loader's verdicts and the handoff must all read the columns Spark
        reads. A difference reads the folder again (the declaration's own partition types
        kept) and keeps that reading when it agrees with Spark's; otherwise the table is
        read whole by Spark, and the report says which column differs."""
        try:
            reader = folder_dataframe(self.spark, t, self.kept_listing())
            schema = reader.schema
        except Exception as exc:
            # Spark's reader cannot read the folder now: the loader's own checks name what is
            # wrong with it (a folder that is no partition, a value not of its type); what
            # they pass, the handoff leaves to Spark's reader, whose error the query meets
            log.info("dpp: Spark's reader of declared table %s fails: %s", key,
                     first_line(exc))
            return t
        why = schema_differs(schema, t)
        if why is None:
            self._keep_reader(t, reader)
            return t
        rules = SparkRules.from_spark(self.spark)
        try:
            fresh: Optional[Table] = table_from_path(
                t.location, name=key, partition_types=dict(t.given_types) or None,
                timestamp_type=rules.timestamp_type, type_inference=rules.type_inference,
                lister=self.runtime.lister(t.location, self.config()))
        except Exception as exc:
            log.info("dpp: declared table %s cannot be read again: %s", key, exc)
            fresh = None
        if fresh is None or schema_differs(schema, fresh) is not None:
            if unusable is not None:
                unusable[key] = why
            return None
        with self.lock:
            if self.tables.get(key) is t:   # not re-declared meanwhile
                self.tables[key] = fresh
        self._keep_reader(fresh, reader)
        return fresh

    def _keep_reader(self, table: Table, reader: DataFrame) -> None:
        """The reader made to check ``table`` against, kept for this query's handoff
        (:meth:`reader_for`): Spark lists the folder once per query, not twice."""
        with self.lock:
            self._readers[id(table)] = (table, reader)

    def _forget_readers(self, key: str) -> None:
        """Drops the readers kept for a name's declarations (under the lock)."""
        for i in [i for i, (t, _r) in self._readers.items() if t.name == key]:
            del self._readers[i]

    def reader_for(self, table: Table) -> Optional[DataFrame]:
        """The reader :meth:`table` checked ``table`` against, once (a later query makes its
        own: what it reads is the folder at that query), or None."""
        with self.lock:
            held = self._readers.pop(id(table), None)
        return held[1] if held is not None and held[0] is table else None

    def _remote_table(self, key: str, unusable: Optional[dict[str, Refusal]]) -> Optional[Table]:
        """On Spark Connect, a partitioned catalog table to prune by a partition predicate
        (:mod:`dpp.runtime.remote_catalog`: its partitions' texts from ``SHOW PARTITIONS``, the kept
        ones handed to Spark as ``WHERE`` on the partition columns, no location needed), or
        None: not a partitioned catalog table, or one dpp cannot prune exactly here — left
        to Spark (its own partition pruning and DPP), the reason in ``unusable``."""
        try:
            columns = self.spark.catalog.listColumns(key)
        except Exception:
            return None  # not a catalog table (or not one Spark can describe): not ours to say
        if not any(c.isPartition for c in columns):
            return None
        try:
            return connect_catalog_table(self.runtime.spark_sql, key, columns,
                                         self._server_manages_partitions())
        except Exception as exc:
            why = str(exc) if isinstance(exc, Unprunable) else (
                f"cannot be described: {first_line(exc)}")
            log.warning("dpp: Spark Connect: catalog table %s left to Spark: %s", key, why)
            if unusable is not None:
                unusable[key] = Refusal.of(Code.CONNECT_CATALOG_LEFT, key, why=why)
            return None

    def _server_manages_partitions(self) -> bool:
        """The Connect server's ``spark.sql.hive.manageFilesourcePartitions`` (a static
        setting: asked once per session)."""
        if self._manages_partitions is None:
            try:
                value = self.spark.conf.get("spark.sql.hive.manageFilesourcePartitions",
                                            "true")
            except Exception:
                return False   # cannot tell now: the case that prunes nothing (asked again)
            self._manages_partitions = str(value).strip().lower() != "false"
        return self._manages_partitions

    def _catalog_shape(self, key: str, metas: Optional[dict[str, Any]] = None
                       ) -> Optional[Table]:
        """A partitioned catalog table's shape (partitions are fetched per query), or None
        for anything else. Read from the catalog's metadata: one JVM call, no analysis."""
        meta = catalog_metadata(self.spark, key)
        if metas is not None:
            metas[key] = meta
        if meta is None:
            return None
        if not catalog_partition_names(self.spark, meta):
            return self._unpartitioned_shape(key, meta)
        shape = table_from_catalog(self.spark, key, partitions=False, meta=meta)
        # resolving the table makes Spark cache its relation, whose identity then vouches
        # for the kept shape (the rewritten query reads our view, so Spark would not)
        self.spark.table(key)
        return shape

    def _unpartitioned_shape(self, key: str, meta: Any) -> Optional[Table]:
        """An unpartitioned catalog table dpp may read by its files, as a table with no
        partition column (its joins on data columns then filter files and row groups:
        :mod:`dpp.runtime.row_groups`), or None. Only plain Parquet tables (no bucketing, no storage
        options, one folder): reading their files with the catalog's schema is reading the
        table. Nothing is listed here."""
        try:
            provider = meta.provider()
            if not provider.isDefined() or str(provider.get()).lower() != "parquet":
                return None
            if meta.bucketSpec().isDefined() or str(meta.tableType().name()) == "VIEW":
                return None
            text = str(meta.storage().properties().keys().mkString("\u0001"))
            keys = {k.lower() for k in text.split("\u0001") if k}
            if keys - {"path", "serialization.format"}:
                return None
            shape = table_from_catalog(self.spark, key, partitions=False, meta=meta)
        except LayoutError:
            return None
        except Exception as exc:   # another Spark build: not ours to read
            log.debug("dpp: %s not read by its files: %s", key, exc)
            return None
        if shape.bucketing is not None or not shape.location:
            return None
        # a dimension Spark broadcasts is no fact, not worth a filter
        size = self.estimate(key)
        if size is None or not is_fact(False, size, self.spark.conf.get(BROADCAST_KEY, None)):
            return None
        # a path table in all but name: the loader lists its folder, the handoff reads its
        # files with the catalog's schema, sized by the catalog's estimate
        return dataclasses.replace(shape, catalog_partitions=None, partition_source=None,
                                   size_bytes=size)

    def is_temp_view(self, name: str) -> bool:
        """Whether ``name`` is a temporary view of the user's session."""
        if "." in name:
            return False
        if self.remote:  # one round trip, the listing narrowed to the name
            try:
                return any(t.isTemporary and t.name.lower() == name
                           for t in self.spark.catalog.listTables(pattern=name))
            except Exception:
                return False
        try:  # one JVM call: listTables() builds every table's row (0.15 s each at TPC-DS size)
            return bool(self.spark._jsparkSession.sessionState().catalog()
                        .getTempView(name).isDefined())
        except Exception:
            log.debug("getTempView unavailable, listing tables", exc_info=True)
        try:
            return any(t.isTemporary and t.name.lower() == name
                       for t in self.spark.catalog.listTables())
        except Exception:
            return False

    # ------------------------------------------------------------------ for the analysis
    def resolver(self, cache: dict[str, Optional[Table]],
                 unusable: Optional[dict[str, Refusal]] = None,
                 metas: Optional[dict[str, Any]] = None
                 ) -> Callable[[str], Optional[TableInfo]]:
        """Table name → TableInfo: declared and catalog tables that can be pruned (with
        their partition columns), and any other table or view Spark knows (columns only, so
        the analyzer can tell which relation an unqualified column belongs to). ``cache``
        keeps the tables looked up, for the decision to read."""

        def resolve(name: str) -> Optional[TableInfo]:
            key = norm_name(name)
            if key not in cache:
                cache[key] = self.table(key, unusable, metas)
            t = cache[key]
            if t is not None:
                return TableInfo(name=key, columns=dict(table_columns(t)),
                                 partition_columns=tuple(c.name for c in t.partition_columns),
                                 data_only=not t.partition_columns, size_bytes=t.size_bytes)
            return self.schemas.get_or_compute(
                "columns", key, lambda: self.columns_of(key, metas))

        return resolve

    def columns_of(self, key: str, metas: Optional[dict[str, Any]] = None
                   ) -> Optional[TableInfo]:
        """Columns of a table or view Spark knows (not pruned; the analyzer needs to know
        which relation an unqualified column belongs to)."""
        try:
            if self.remote:   # no catalog metadata through the JVM: Spark's analysis
                meta = None
            elif metas is not None and metas.get(key) is not None:
                meta = metas[key]   # read moments ago by _catalog_shape: not a view
            else:
                meta = None if self.is_temp_view(key) else catalog_metadata(self.spark, key)
            if meta is not None:   # the catalog's schema: no analysis of the table
                schema = StructType.fromJson(json.loads(meta.schema().json()))
            else:
                schema = self.spark.table(key).schema
        except Exception:
            return None
        cols: dict[str, Optional[DataType]] = {}
        for f in schema.fields:
            cols[f.name.lower()] = _spark_type_to_domain(f.dataType)
        return TableInfo(name=key, columns=cols, partition_columns=())

    def estimate(self, name: str) -> Optional[int]:
        """Spark's size estimate of a catalog table read with no partition filter (its
        statistics, or ``defaultSizeInBytes`` without them)."""
        def compute() -> Optional[int]:
            try:
                jdf = self.spark.table(name)._jdf
                return int(jdf.queryExecution().analyzed().stats().sizeInBytes())
            except Exception as exc:
                log.debug("no size estimate for %s: %s", name, exc)
                return None
        return self.schemas.get_or_compute("estimate", name, compute)


def _spark_type_to_domain(dt: SparkDataType) -> Optional[DataType]:
    try:
        return DataType.from_spark(dt)
    except DppError:
        return None
