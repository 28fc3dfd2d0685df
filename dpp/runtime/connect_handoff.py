"""Handing pruned relations to Spark over Spark Connect, where no JVM is in this process.

The classic handoff (:mod:`hive_splits.spark_io`) sizes a pruned relation as the table by
making it in a sibling session with a raised compression factor; here a server-side clone of
the user's session does the same, and shows the relation through a global view the user's
session reads. A catalog table is handed as a predicate on its partition columns
(:mod:`dpp.runtime.remote_catalog`), Spark's own partition pruning then fetching and listing the kept
partitions. What Connect does without is said once per session (:data:`CONNECT_NOTES`).
"""
from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
import weakref
from typing import Any, Callable, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession

from dpp.runtime.config import DppConfig
from dpp.core.domain import TupleDomain
from dpp.core.errors import LayoutError
from dpp.core.remote import CONNECT_CATALOG_LEFT, CONNECT_NOTES, functions_for
from dpp.core.spark_rules import SparkRules
from dpp.runtime.filter_runs import FilterSpec
from dpp.runtime.remote_catalog import (FALSE, NoListing, Unprunable, default_folders,
                                is_connect_catalog, kept_predicate, predicate_column,
                                predicate_sql, quote_table, same_files)
from dpp.runtime.services import Runtime, first_line, view_name
from hive_splits import DynamicFilter, LoadResult, SplitLoader, Table
from hive_splits.spark_io import driver_listing, whole_folders_dataframe

__all__ = ["CONNECT_CATALOG_LEFT", "CONNECT_NOTES", "ConnectHandoff", "drop_views_with",
           "no_stats_on_connect_catalog"]

log = logging.getLogger(__name__)

_SIBLING_LOCK = threading.Lock()
_FACTOR_KEY = "spark.sql.sources.fileCompressionFactor"

class ConnectHandoff:
    """The Connect-specific handoff of one ``DppSession``: the clones it sizes relations in
    (``siblings``, by compression-factor bucket, ended with the session) and the global views
    they show, held until a temporary view of the user's session holds the resolved plan."""

    def __init__(self, spark: SparkSession, runtime: Runtime) -> None:
        self.spark = spark
        self.runtime = runtime
        self.siblings: dict[float, SparkSession] = {}
        self._globals: dict[int, tuple[SparkSession, str]] = {}   # df → its global view
        self._lock = threading.Lock()

    def catalog_load(self, table: Table, static: TupleDomain, dyn: Sequence[DynamicFilter],
                     cfg: DppConfig, rules: SparkRules, sized: bool = False
                     ) -> tuple[LoadResult, DataFrame]:
        """A catalog table (:mod:`dpp.runtime.remote_catalog`): the loader tests every partition's
        texts (``SHOW PARTITIONS``) against the domains as it tests a path table's folders,
        lists nothing, and the kept partitions reach Spark as a predicate on the partition
        columns: ``spark.table(t).where(...)``. Spark's own partition pruning then fetches and
        lists only those, wherever they are (custom locations included). A partition text
        the loader cannot read raises :class:`Unprunable` (the reference stays Spark's),
        never an error of the user's query.

        ``sized`` (a query whose views hold the relation): where the loader pruned by a join,
        the kept partitions' default folders may be read instead, sized as the table
        (:meth:`_catalog_sized`)."""
        source = table.partition_source.fresh()
        shaped = dataclasses.replace(table, partition_source=source)
        try:
            result = SplitLoader(shaped, static, dyn, wait_timeout=cfg.wait_timeout,
                                 rules=rules, lister=NoListing()).load()
        except LayoutError as exc:
            raise Unprunable(f"left to Spark: {first_line(exc)}") from None
        th = time.perf_counter()
        every = source.last_names
        pred = (kept_predicate(shaped, result, every)
                if every is not None or result.partitions_kept == 0 else None)
        df = self.spark.table(quote_table(table.catalog_name or table.name))
        if pred is not None:
            df = df.where(predicate_column(pred, functions_for(self.spark)))
        # nothing was listed or fetched by dpp: Spark does both for the kept partitions
        result.folders_listed = 0
        result.lister = NoListing.kind
        result.list_calls = result.head_calls = 0
        result.metastore.pop("connect_values", None)
        result.metastore["note"] = (f"kept partitions handed to Spark as WHERE "
                                    f"{predicate_sql(pred, 600)}: Spark fetches and lists "
                                    f"them (not counted)")
        if sized and pred is not None and pred is not FALSE and every is not None:
            folders = self._catalog_sized(shaped, result, df, every, cfg)
            if folders is not None:
                df = folders
        result.handoff_seconds = time.perf_counter() - th
        return result, df

    def _catalog_sized(self, table: Table, result: LoadResult, df: DataFrame,
                       every: Sequence[Any], cfg: DppConfig) -> Optional[DataFrame]:
        """A catalog table pruned by a join: its admitted partitions' default folders read in
        a clone sized as Spark sizes the table, or None (the predicate stays).

        Spark sizes a catalog table it prunes while planning by the admitted partitions'
        files; with the predicate of a few kept partitions that is far below what Spark's
        own plan sees (every partition the join's ``IS NOT NULL`` admits), and TPC-DS q72's
        catalog_sales became the broadcast side of a join Spark's plan sorts and merges
        (2.45x slower). The folders are read only when that reads what the predicate reads:
        a plain Parquet table (:func:`~dpp.runtime.remote_catalog.folder_format`), every file Spark
        serves for the predicate (``inputFiles()``, the server's listing) directly in the
        default folder of one of the table's partitions, and the client's listing of those
        folders the same files. The relation is then made as a path table's
        (:meth:`global_in_sibling`): the kept bytes scaled to the partitions Spark would admit."""
        source = table.partition_source
        fmt = getattr(source, "folder_format", None)
        if fmt is None or result.pruned_dynamic <= 0 or result.partitions_kept <= 0:
            return None
        t0 = time.perf_counter()
        try:
            served = df.inputFiles()
            folders = default_folders(table.location, every, served)
            if folders is None:
                result.metastore["note"] += ("; not sized as the table: a kept partition's "
                                             "files are not in its default folder")
                return None
            lister = self.runtime.lister(table.location, cfg)
            listed: set[str] = set()
            nbytes = 0
            for folder in folders:
                _dirs, files = lister.list(folder)
                listed.update(f.path for f in files)
                nbytes += sum(f.size for f in files)
            if not same_files(folders, listed) or nbytes <= 0:
                result.metastore["note"] += ("; not sized as the table: its folders hold "
                                             "other files than Spark serves for them")
                return None
            admitted = max(result.partitions_total - result.pruned_static,
                           result.partitions_kept)
            factor = admitted / result.partitions_kept
            if round(math.log2(factor) * 8) <= 0:
                return None
            sized = self.global_in_sibling(
                table, factor, len(folders),
                lambda sib: whole_folders_dataframe(sib, table, sorted(folders))[0])
        except Exception as exc:
            log.warning("dpp: Spark Connect: %s not sized as the table (%s)", table.name,
                        first_line(exc))
            result.metastore["note"] += f"; not sized as the table: {first_line(exc)}"
            return None
        result.folders_listed = len(folders)
        result.files_listed = result.files_kept = len(listed)
        result.bytes_kept = nbytes
        result.list_calls = len(folders)
        result.lister = getattr(lister, "kind", result.lister)
        result.metastore["note"] = (
            f"kept partitions read from their default folders ({len(folders)} with files; "
            f"the files Spark serves for the predicate are theirs), sized as the table "
            f"({admitted} partitions Spark admits, factor {factor:.1f}); checked and listed "
            f"in {time.perf_counter() - t0:.2f} s. " + result.metastore["note"])
        return sized

    def global_in_sibling(self, table: Table, factor: float, paths: int,
                          make: Callable[[SparkSession], DataFrame]) -> DataFrame:
        """``make(sibling)`` shown to the user's session through a global view of a clone
        whose compression factor is ``factor`` times the user's (the view is dropped by
        :meth:`release_global` once a temporary view holds the resolved plan)."""
        with _SIBLING_LOCK:
            sib = self._sibling(factor)
            name = view_name(table.name)
            with driver_listing(sib, paths):
                make(sib).createOrReplaceGlobalTempView(name)
        gdb = self.spark.conf.get("spark.sql.globalTempDatabase", "global_temp")
        df = self.spark.table(f"`{gdb}`.`{name}`")
        with self._lock:
            self._globals[id(df)] = (sib, name)
        return df

    def _sibling(self, factor: float) -> SparkSession:
        """A clone of the user's Connect session with the compression factor times
        ``factor`` (bucketed to 1/8 powers of two, as the classic siblings), its settings
        re-synced to the user's now. Called under ``_SIBLING_LOCK``."""
        bucket = round(math.log2(factor) * 8) / 8
        sib = self.siblings.get(bucket)
        from dpp.core.spark_compat import conf_items

        mine = {k: v for k, v in conf_items(self.spark).items() if k != _FACTOR_KEY}
        if sib is None:
            from dpp.runtime.connect_lifecycle import lifecycle_of

            sib = self.siblings[bucket] = self.spark.cloneSession()
            # ended with the user's session and at exit, never left to hold the process
            lifecycle_of(self.spark).add_clone(sib)
        else:
            theirs = conf_items(sib)
            for k in set(theirs) - set(mine) - {_FACTOR_KEY}:
                try:
                    sib.conf.unset(k)
                except Exception:  # a static setting: the same on both
                    pass
            for k, v in mine.items():
                if theirs.get(k) != v:
                    try:
                        sib.conf.set(k, v)
                    except Exception:
                        pass
        base = float(self.spark.conf.get(_FACTOR_KEY, "1.0"))
        sib.conf.set(_FACTOR_KEY, repr(base * 2.0 ** bucket))
        return sib

    def release_global(self, df: DataFrame) -> None:
        """Drops the global view behind ``df`` (:meth:`sized`) once a temporary view of this
        session holds its resolved plan."""
        with self._lock:
            held = self._globals.pop(id(df), None)
        if held is not None:
            sib, name = held
            try:
                sib.catalog.dropGlobalTempView(name)
            except Exception:
                log.debug("dropping global view %s failed", name, exc_info=True)

    def pass_global(self, df: DataFrame, out: DataFrame) -> None:
        """The global view behind ``df`` is now ``out``'s to release (``out`` is made of
        ``df``: a filter over it)."""
        with self._lock:
            held = self._globals.pop(id(df), None)
            if held is not None:
                self._globals[id(out)] = held

    def cache_key(self, spec: FilterSpec, cfg: DppConfig) -> FilterSpec:
        """The build side's filter-cache key made of what it computes, not its text. A build
        query names views and tables, and a temporary view redefined with another filter
        keeps its name (and its files): keyed by text, the old filter's keys would come
        back. The key is the server's semantic hash of the resolved build plan
        (``DataFrame.semanticHash()``: the analyzed plan, views expanded, made canonical);
        where it cannot be had, the build side is not cached (no text to key it by)."""
        if not cfg.filter_cache or spec.build_query is None:
            return spec
        query = spec.build_query
        try:
            resolved = self.runtime.spark_sql(query).semanticHash()
        except Exception as exc:
            log.debug("no semantic hash for %s: %s", spec.build_label, exc)
            return dataclasses.replace(spec, build_query=None)
        return dataclasses.replace(spec, build_query=f"{query}\n-- resolved plan {resolved}")

    def end_clones(self) -> None:
        """Ends this session's clones (bounded: the server may be gone)."""
        from dpp.runtime.connect_lifecycle import lifecycle_of

        with _SIBLING_LOCK:
            clones, self.siblings = list(self.siblings.values()), {}
        if clones:
            lifecycle_of(self.spark).end_clones(clones)


def no_stats_on_connect_catalog(stats: Any) -> Any:
    """``stats`` (a constant or a policy) that builds no data-column filter for a catalog
    table on Spark Connect: Spark reads its kept partitions whole (no files to skip)."""
    def policy(table: Table, column: str) -> bool:
        if is_connect_catalog(table):
            return False
        return bool(stats(table, column)) if callable(stats) else bool(stats)
    return policy


def drop_views_with(df: DataFrame, spark: SparkSession, views: list[str],
                    query: Optional[str] = None) -> None:
    """Drops ``views`` once nothing refers to ``df``'s plan any more.

    A Connect DataFrame is a plan the server resolves at every execution, so the views a
    rewritten query reads must live as long as the DataFrame — and as every DataFrame made
    from it (``df.groupBy(...)``), which hold its plan node, not ``df``: the views go when that
    node is garbage. (A classic DataFrame holds its resolved plan; its views go at once.)

    The finalizer makes no remote call: garbage collection can run it inside the client's
    own calls (``ThreadPoolExecutor.submit`` holding its lock), where a ``dropTempView``
    would wait on that lock forever. It only queues the names; they are dropped at the next
    action or dpp call on the session, and go with it at ``spark.stop()``
    (:class:`dpp.runtime.connect_lifecycle.ConnectLifecycle`). ``query``: the user's SQL, which commands
    (writes, views) send instead of the rewritten text while ``df`` lives."""
    from dpp.runtime.connect_lifecycle import lifecycle_of

    life = lifecycle_of(spark)
    names = tuple(views)
    text = _sql_text(df)
    if query is not None and isinstance(text, str) and text != query:
        life.rewritten[text] = query
    else:
        text = None

    def drop(life: Any = life, names: tuple[str, ...] = names, text: Optional[str] = text
             ) -> None:
        if text is not None:
            life.rewritten.pop(text, None)
        life.queue_views(names)

    weakref.finalize(getattr(df, "_plan", df), drop)


def _sql_text(df: DataFrame) -> Optional[str]:
    """The SQL text a Connect ``spark.sql`` DataFrame's plan sends (the server answers a
    query with a ``SQL`` relation holding it), or None."""
    plan = getattr(df, "_plan", None)
    text = getattr(plan, "_query", None)
    if isinstance(text, str):
        return text
    rel = getattr(plan, "_plan", None)   # CachedRelation: the server's relation
    try:
        if rel is not None and rel.WhichOneof("rel_type") == "sql":
            return str(rel.sql.query)
    except Exception:
        return None
    return None
