"""Kept files handed to Spark as a DataFrame that Spark's planner sizes like the table it
stands for: a pruned file list must never make Spark pick a worse plan (TPC-DS q72).

The size Spark would give the table before any runtime pruning is estimated here
(:meth:`Handoff.unpruned_estimate`); the relation is made by :mod:`hive_splits.spark_io` on a
classic session, by :class:`~dpp.runtime.connect_handoff.ConnectHandoff` on Spark Connect.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Iterable, Optional, Union
from urllib.parse import unquote, urlsplit

from pyspark.sql import DataFrame, SparkSession

from dpp.core.refusals import Code, Refusal
from dpp.core.remote import functions_for
from dpp.runtime.remote_catalog import (And, Or, Pred, Term, is_connect_catalog,
                                        predicate_column, quote_table)
from dpp.runtime.row_groups import domain_predicate
from hive_splits import LoadResult, Table, to_dataframe
from hive_splits.loader import KeptPartition
from hive_splits.naming import parse_folder_name
from hive_splits.spark_io import folder_dataframe, sized_as
from hive_splits.storage_calls import storage_calls, worth_counting

if TYPE_CHECKING:
    from dpp.runtime.catalog import TableCatalog
    from dpp.runtime.connect_handoff import ConnectHandoff
    from dpp.runtime.services import Runtime

__all__ = ["Handoff", "HandoffRefused", "full_dataframe", "pruned_predicate", "dropped_files"]

log = logging.getLogger(__name__)

# Spark's storage requests are counted JVM-wide: one table's handoff at a time while counting
_HANDOFF_COUNT_LOCK = threading.Lock()
# past this many kept partitions of a one-column catalog table, one IN list, not ORs
_MAX_OR_TERMS = 200


class HandoffRefused(Exception):
    """The loader's verdicts cannot be handed to Spark as a narrowing of its relation (why:
    ``refusal``); ``whole`` is Spark's relation read whole, which the caller reads instead."""

    def __init__(self, refusal: Refusal, whole: DataFrame) -> None:
        super().__init__(refusal.words())
        self.refusal = refusal
        self.whole = whole


def pruned_predicate(table: Table, pruned_folders: Iterable[str],
                     spark_names: Optional[dict[str, str]] = None) -> Optional[Pred]:
    """The rows of the loader's pruned folders (``k1=v1/k2=v2`` paths relative to the table
    root, any level) as a predicate on the partition columns: per folder, each level's value
    text (unescaped, ``__HIVE_DEFAULT_PARTITION__`` as NULL) cast to the column's type, as
    Spark's reader casts a folder's text; folders under one parent share a term. A folder
    whose name does not read as the column of its level is left out (its rows stay).
    ``spark_names``: the column names as Spark's relation spells them (by lower-case name).
    None when nothing is to be removed."""
    cols = list(table.partition_columns)
    names = [(spark_names or {}).get(c.name.lower(), c.name) for c in cols]
    groups: dict[tuple[Optional[str], ...], set[Optional[str]]] = {}
    for rel in pruned_folders:
        texts: list[Optional[str]] = []
        for depth, part in enumerate(rel.split("/")):
            parsed = parse_folder_name(part)
            if depth >= len(cols) or parsed is None \
                    or parsed[0].lower() != cols[depth].name.lower():
                texts = []
                break
            texts.append(parsed[1])
        if texts:
            groups.setdefault(tuple(texts[:-1]), set()).add(texts[-1])

    def term(depth: int, texts: set[Optional[str]]) -> Term:
        return Term(names[depth], cols[depth].type,
                    exact=tuple(sorted(t for t in texts if t is not None)),
                    null=None in texts)

    parts: list[Union[And, Term]] = []
    for prefix, last in sorted(groups.items(), key=lambda kv: [(t is None, t or "")
                                                               for t in kv[0]]):
        terms = [term(d, {t}) for d, t in enumerate(prefix)] + [term(len(prefix), last)]
        parts.append(terms[0] if len(terms) == 1 else And(tuple(terms)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Or(tuple(parts))


def dropped_files(result: LoadResult) -> set[str]:
    """The files of kept partitions the loader skipped (statistics, buckets), by the
    lister's names."""
    if not result.files_skipped:
        return set()
    kept = {s.path for s in result.splits}
    return {f.path for kp in result.partitions for f in result.listings.get(kp.path, [])
            if f.path not in kept}


def _decoded(uri: str) -> str:
    """A file's name as Spark lists it (``Path.toUri``: ``file:/a%20b/x``) as the listers
    name it (a local path; another scheme's URI with its path decoded)."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return unquote(parts.path)
    return f"{parts.scheme}://{parts.netloc}{unquote(parts.path)}"


def _count_as_kept(result: LoadResult, path: str) -> None:
    """A file the loader skipped that the handoff could not remove: counted as read."""
    size = next((f.size for files in result.listings.values() for f in files
                 if f.path == path), 0)
    if result.files_pruned_stats > 0:
        result.files_pruned_stats -= 1
    elif result.files_pruned_buckets > 0:
        result.files_pruned_buckets -= 1
    result.files_skipped -= 1
    result.files_kept += 1
    result.bytes_skipped -= size
    result.bytes_kept += size


class Handoff:
    """The handoff of one ``DppSession``'s loads: the kept files as a DataFrame, sized."""

    def __init__(self, spark: SparkSession, runtime: "Runtime", catalog: "TableCatalog",
                 connect: "ConnectHandoff") -> None:
        self.spark = spark
        self.runtime = runtime
        self.catalog = catalog
        self.connect = connect

    def dataframe(self, table: Table, result: LoadResult,
                  partition_filtered: bool = False) -> DataFrame:
        """The table as Spark defines it, less the partitions the loader ruled out: a catalog
        table is :meth:`catalog_kept`, a declared or path table :meth:`declared_kept`. Spark
        lists, types and sizes the relation; dpp only narrows it. Raises
        :class:`HandoffRefused` (carrying the relation read whole) where the loader's reading
        of the table is not Spark's reading of it now."""
        if table.is_catalog:
            return self.catalog_kept(table, result, partition_filtered)
        return self.declared_kept(table, result)

    def listed_whole(self, table: Table, result: LoadResult) -> DataFrame:
        """A catalog table read whole through the loader's listing (every partition kept),
        each partition's values its catalog text cast by Spark
        (:func:`hive_splits.spark_io.to_dataframe`), sized as the table: the read-whole path
        for a table with partitions at locations of their own, where Spark's catalog
        listing is what it replaces."""
        th = time.perf_counter()
        if self.runtime.remote:
            df = to_dataframe(self.spark, table, result)
        else:
            df = to_dataframe(self.spark, table, result,
                              estimate_bytes=self.unpruned_estimate(table, result))
        result.handoff_seconds = time.perf_counter() - th
        return df

    def declared_kept(self, table: Table, result: LoadResult) -> DataFrame:
        """Spark's reader of the table's folder made now (:func:`hive_splits.spark_io.
        folder_dataframe`: its files, schema, partition types and values), less the rows of
        the partitions the loader ruled out, removed by a predicate on Spark's own partition
        values (each pruned folder's texts cast to the column's type, as Spark's reader casts
        them). Only what the loader ruled out is removed: a folder it never saw (added since
        it listed) is read, as Spark would read it; a predicate that matches nothing removes
        nothing. The loader judged each folder by the table's partition types: where Spark's
        reader types a partition column otherwise now (a folder added since the table was
        declared changed the inferred type), nothing is removed and the report says why.
        Sized as Spark sizes the folder's relation (the whole table): a partition filter does
        not change Spark's estimate of a file relation."""
        th = time.perf_counter()
        # the reader the query's lookup checked the table against (its listing not counted)
        df = self.catalog.reader_for(table)
        kept = self.catalog.kept_listing()
        if df is None and (self.runtime.remote
                           or not worth_counting(self.spark, table.location)):
            # (on Spark Connect the server lists: its requests are not counted here)
            df = folder_dataframe(self.spark, table, kept)
        elif df is None:
            # Spark's requests for the handoff (the folder listed by its reader), counted
            with _HANDOFF_COUNT_LOCK:
                before = storage_calls(self.spark)
                df = folder_dataframe(self.spark, table, kept)
                after = storage_calls(self.spark)
            if before is not None and after is not None:
                result.handoff_list_calls = after[0] - before[0]
                result.handoff_head_calls = after[1] - before[1]
        spark_cols = {f.name.lower(): f for f in df.schema.fields}
        for c in table.partition_columns:
            f = spark_cols.get(c.name.lower())
            if f is None:
                raise HandoffRefused(Refusal.of(
                    Code.COLUMNS_DIFFER, spark=sorted(spark_cols),
                    folder=[p.name.lower() for p in table.partition_columns]), df)
            if f.dataType.simpleString() != c.type.simple_string():
                raise HandoffRefused(Refusal.of(
                    Code.TYPE_DIFFERS, c.name, spark=f.dataType.simpleString(),
                    dpp=c.type.simple_string()), df)
        F = functions_for(self.spark)
        out = df
        removed = pruned_predicate(table, result.pruned_folders,
                                   {n: f.name for n, f in spark_cols.items()})
        if removed is not None:
            out = out.where(~F.coalesce(predicate_column(removed, F), F.lit(False)))
        dropped = dropped_files(result)
        if dropped:
            out = self._without_files(out, df, dropped, result, "_metadata" in spark_cols)
        result.handoff_seconds = time.perf_counter() - th
        return out

    def _without_files(self, out: DataFrame, df: DataFrame, dropped: set[str],
                       result: LoadResult, shadowed: bool) -> DataFrame:
        """``out`` less the rows of the files the loader skipped by their statistics or
        bucket (``dropped``: local paths or URIs as the lister names them), by Spark's own
        name for each file (``_metadata.file_path``, which Spark also prunes files by
        before reading). Spark's names come from its listing (``inputFiles``), matched
        decoded: a file dpp skipped that Spark does not list is not there to remove, and
        one Spark lists that dpp did not skip is read. A table with a column of its own
        named ``_metadata`` hides Spark's: nothing is removed, and the loader's counts say
        so (the files count as kept)."""
        F = functions_for(self.spark)
        names: list[str] = []
        if not shadowed:
            try:
                for uri in df.inputFiles():
                    if _decoded(uri) in dropped:
                        names.append(uri)
            except Exception as exc:   # the files stay: the query is Spark's, unpruned
                log.warning("dpp: files skipped by statistics kept (%s)", exc)
        if len(names) < len(dropped):
            # what is not removed is read: the report counts it as kept
            removed_paths = {_decoded(u) for u in names}
            for path in dropped - removed_paths:
                _count_as_kept(result, path)
        if not names:
            return out
        return out.where(~F.coalesce(F.col("_metadata.file_path").isin(*sorted(names)),
                                     F.lit(False)))

    def catalog_kept(self, table: Table, result: LoadResult,
                     partition_filtered: bool = False) -> DataFrame:
        """A catalog table as Spark defines it — ``spark.table``, its catalog index, the
        metastore's partitions, locations and values cast by Spark — narrowed to the
        partitions dpp kept by a predicate on their catalog values (``col <=> CAST(text AS
        type)``, Spark's own reading of a partition's text). Spark prunes by it as by any
        partition filter; dpp never re-reads the table's folders or values itself (a folder
        name read back as a DECIMAL(10,2) by a reader gave 0.15 for the metastore's 1.5).
        Sized as Spark sizes the table it stands for (:meth:`unpruned_estimate`): the
        relation is made in a sibling session whose compression factor scales the kept
        files' bytes to that size, as :func:`hive_splits.spark_io.to_dataframe` does."""
        df = self._catalog_kept(self.spark, table, result)
        estimate = self.unpruned_estimate(table, result, partition_filtered)
        # Spark sizes a pruned catalog relation by its kept files (its catalog stats): the
        # index Spark's own partition pruning made stands for it, sized as the table
        moved = None if estimate is None else sized_as(self.spark, df, estimate,
                                                        result.bytes_kept)
        out = df if moved is None else moved
        dropped = dropped_files(result)
        if dropped:   # files skipped by statistics or bucket, by Spark's names for them
            shadowed = "_metadata" in {c.lower() for c in df.columns}
            out = self._without_files(out, df, dropped, result, shadowed)
        if moved is None:
            return out
        return out.select(*["`" + n.replace("`", "``") + "`" for n, _ in table.all_columns()])

    def _catalog_kept(self, spark: SparkSession, table: Table, result: LoadResult
                      ) -> DataFrame:
        F = functions_for(spark)
        df = spark.table(quote_table(table.catalog_name or table.name))
        if not result.partitions:
            return df.where(F.lit(False))
        cols = table.partition_columns

        def col(name: str):   # noqa: ANN202 - a Column of whichever session kind
            return F.col("`" + name.replace("`", "``") + "`")

        def value(kp: KeptPartition, name: str) -> Optional[str]:
            if kp.texts is not None:   # the catalog's own text of the value
                return kp.texts.get(name)
            v = kp.values.get(name)
            return None if v is None else str(v)

        if len(cols) == 1 and len(result.partitions) > _MAX_OR_TERMS:
            # one test of membership in the kept values, in a form Spark does not send to
            # the metastore: an IN list is, as one long OR a Hive metastore may refuse to
            # evaluate ("Failed to get partition metadata by filter": the query failed)
            c = cols[0]
            texts = {value(kp, c.name) for kp in result.partitions}
            typed = [F.lit(t).cast(c.type.simple_string()) for t in sorted(
                x for x in texts if x is not None)]
            pred = F.array_contains(F.array(*typed), col(c.name)) if typed else F.lit(False)
            if None in texts:
                pred = pred | col(c.name).isNull()
            return df.where(F.coalesce(pred, F.lit(False)))
        pred = None
        for kp in result.partitions:
            term = None
            for c in cols:
                t = col(c.name).eqNullSafe(F.lit(value(kp, c.name)).cast(c.type.simple_string()))
                term = t if term is None else term & t
            pred = term if pred is None else pred | term
        return df.where(pred)

    def partition_filtered(self, table: Table, static: Iterable[str],
                           joined: Iterable[str]) -> bool:
        """Whether Spark, planning the original query, holds a filter on a partition column
        of this reference: a static predicate, or the ``IS NOT NULL`` it infers from an
        equi-join on one (every dynamic filter on a partition column comes from such a
        join). Spark then prunes a catalog table's partitions while optimizing and sizes
        the relation by the files of the partitions it admits. Only catalog tables are
        sized by it: a path table answers False without asking Spark's conf."""
        if not table.is_catalog:
            return False
        pcols = {c.name.lower() for c in table.partition_columns}
        if {c.lower() for c in static} & pcols:
            return True
        if not {c.lower() for c in joined} & pcols:
            return False
        try:   # no constraint propagation: Spark infers no IS NOT NULL from the join
            return str(self.spark.conf.get("spark.sql.constraintPropagation.enabled",
                                           "true")).strip().lower() != "false"
        except Exception:
            return True

    def unpruned_estimate(self, table: Table, result: LoadResult,
                          partition_filtered: bool = False) -> Optional[int]:
        """What Spark would estimate the table at before any runtime pruning.

        A catalog table that the query filters on a partition column — statically, or by the
        ``IS NOT NULL`` Spark infers from an equi-join on it — is pruned by Spark while
        optimizing (``PruneFileSourcePartitions``) and sized by the files of the partitions
        it admits: the listed bytes scaled to those partitions (undoing only the dynamic
        pruning, which Spark's own DPP does at run time). Sizing it by the catalog's figure
        instead (``defaultSizeInBytes`` for a table without statistics) made Spark inject
        runtime bloom filters it does not inject over the original (q72: 20 of them, 18-21 s
        against 16-18 s). A catalog table filtered on data columns only keeps the catalog's
        figure. A path table (pruned by Spark only at run time): the listed partitions'
        bytes scaled to every partition."""
        if (table.is_catalog and (partition_filtered or result.pruned_static > 0)
                and result.partitions_kept > 0):
            listed = result.bytes_kept + result.bytes_skipped
            admitted = max(result.partitions_total - result.pruned_static, result.partitions_kept)
            return int(listed * admitted / result.partitions_kept)
        if table.catalog_name and (table.is_catalog or not table.partition_columns):
            # an unpartitioned catalog table read by its files too: the catalog's figure
            return self.catalog.estimate(table.catalog_name)
        if result.partitions_kept <= 0:
            return None
        listed = result.bytes_kept + result.bytes_skipped
        return int(listed * max(result.partitions_total, result.partitions_kept)
                   / result.partitions_kept)

    def row_group_filter(self, df: DataFrame, result: LoadResult) -> DataFrame:
        """The kept files' relation filtered by the data-column filters' values
        (:mod:`dpp.runtime.row_groups`): Spark pushes the predicate into Parquet, which skips the row
        groups it rules out. The predicate's text goes into the report."""
        if not result.data_domains or not result.splits:
            return df
        F = functions_for(self.spark)
        texts = []
        out = df
        for column, domain in sorted(result.data_domains.items()):
            made = domain_predicate(F, column, domain)
            if made is None:
                continue
            out = out.where(made[0])
            texts.append(made[1])
        if texts:
            result.row_group_filter = " AND ".join(texts)
            self.connect.pass_global(df, out)
        return out


def full_dataframe(spark: SparkSession, table: Table,
                   kept_listing: Optional[int] = None) -> DataFrame:
    """A table read whole, as Spark defines it: a catalog table is ``spark.table``, a
    declared one Spark's reader of its folder made now (:func:`hive_splits.spark_io.
    folder_dataframe`: its files, schema and partition values are the reader's, never a
    listing or a schema dpp kept from earlier — a folder emptied since reads as Spark reads
    it). ``kept_listing``: ``spark.dpp.declaredTables.keptListing``."""
    if table.is_catalog or is_connect_catalog(table):
        return spark.table(quote_table(table.catalog_name or table.name))
    return folder_dataframe(spark, table, kept_listing)