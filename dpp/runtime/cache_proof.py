"""What the filter cache must see equal before it reuses a build side's filter, besides the
build side's text or canonical plan and its files (:func:`coordinator.cache.fingerprint`).

* **The session settings that change what a read or an expression returns.** The effective
  value (set, or the default of this Spark, this JVM) of each key of :data:`VALUE_SETTINGS`,
  and every key set in the session under one of :data:`VALUE_FAMILIES` (every
  ``spark.sql.legacy.*`` among them), with the Spark version (a default differs between
  versions). Read from the session the build side runs in (on the optimizer hook's road a
  clone of the query's session, on a Connect server the client's own session).
* **Every relation's schema and reader options.** Spark's canonical plan text names neither
  (``Relation [none#0,none#1] parquet`` whether ``d`` is read as ``int`` or ``bigint``,
  with or without ``datetimeRebaseMode`` or a CSV ``nullValue``): each relation's output
  schema, data and partition schemas, format, options, bucketing, root paths and catalog
  table are added. A relation of another kind than a file relation, a catalog (Hive) table, a
  ``range`` or one row (local rows, a JDBC or a v2 table: their rows are not in files this
  runtime can stat) makes the build side uncacheable, as does a subquery left in the
  optimized plan (its files are not among the DataFrame's input files).

Whatever cannot be read gives ``None``: no proof, the build side is built afresh.
"""
from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from typing import Any, Optional

from dpp.core.remote import is_remote

__all__ = ["VALUE_SETTINGS", "VALUE_FAMILIES", "settings_signature", "relations_signature"]

log = logging.getLogger(__name__)

#: Settings whose effective value (set or default) is part of every fingerprint: each changes
#: what a read or an expression returns for the same plan over the same files (Spark's
#: SQLConf: time zone, ANSI casts and arithmetic, name resolution, datetime parsing and
#: rebasing, Parquet/ORC/Avro/CSV/JSON reading, missing and corrupt files, partition value
#: inference, store assignment, map keys, decimals, collation, char padding). A key this
#: Spark does not know counts as absent.
VALUE_SETTINGS: tuple[str, ...] = (
    "spark.sql.session.timeZone",
    "spark.sql.ansi.enabled",
    "spark.sql.caseSensitive",
    "spark.sql.timestampType",
    "spark.sql.storeAssignmentPolicy",
    "spark.sql.mapKeyDedupPolicy",
    "spark.sql.legacy.timeParserPolicy",
    "spark.sql.parquet.datetimeRebaseModeInRead",
    "spark.sql.legacy.parquet.datetimeRebaseModeInRead",
    "spark.sql.parquet.int96RebaseModeInRead",
    "spark.sql.legacy.parquet.int96RebaseModeInRead",
    "spark.sql.avro.datetimeRebaseModeInRead",
    "spark.sql.legacy.avro.datetimeRebaseModeInRead",
    "spark.sql.parquet.binaryAsString",
    "spark.sql.parquet.int96AsTimestamp",
    "spark.sql.parquet.int96TimestampConversion",
    "spark.sql.parquet.inferTimestampNTZ.enabled",
    "spark.sql.parquet.fieldId.read.enabled",
    "spark.sql.parquet.fieldId.read.ignoreMissing",
    "spark.sql.parquet.mergeSchema",
    "spark.sql.orc.mergeSchema",
    "spark.sql.files.ignoreMissingFiles",
    "spark.sql.files.ignoreCorruptFiles",
    "spark.sql.files.ignoreInvalidPartitionPaths",
    "spark.sql.sources.partitionColumnTypeInference.enabled",
    "spark.sql.sources.validatePartitionColumns",
    "spark.sql.csv.parser.columnPruning.enabled",
    "spark.sql.columnNameOfCorruptRecord",
    "spark.sql.hive.convertMetastoreParquet",
    "spark.sql.hive.convertMetastoreOrc",
    "spark.sql.hive.caseSensitiveInferenceMode",
    "spark.sql.decimalOperations.allowPrecisionLoss",
    "spark.sql.readSideCharPadding",
    "spark.sql.charAsVarchar",
    "spark.sql.session.collation",
    "spark.sql.ansi.doubleQuotedIdentifiers",
    "spark.sql.ansi.enforceReservedKeywords",
    "spark.sql.ansi.relationPrecedence",
    "spark.sql.variable.substitute",
)

#: Families whose keys, where set in the session, are part of every fingerprint (their
#: defaults are this Spark's, and the Spark version is in the fingerprint): every
#: ``spark.sql.legacy.*`` setting (parsing, casting, datetime and null behaviour), and the
#: readers' and sources' settings.
VALUE_FAMILIES: tuple[str, ...] = (
    "spark.sql.legacy.", "spark.sql.ansi.", "spark.sql.parquet.", "spark.sql.orc.",
    "spark.sql.avro.", "spark.sql.csv.", "spark.sql.json.", "spark.sql.files.",
    "spark.sql.sources.", "spark.sql.hive.", "spark.sql.session.", "spark.sql.variable.",
    "spark.sql.collation.", "hivevar:", "spark.hivevar.", "hiveconf:", "spark.hiveconf.")

_MEMO_SIZE = 64
_memo: "OrderedDict[tuple[str, str], dict[str, Optional[str]]]" = OrderedDict()
_memo_lock = threading.Lock()


def settings_signature(df: Any) -> Optional[str]:
    """The value-changing settings of the session ``df`` runs in, as text (see the module);
    None when they cannot be read."""
    try:
        if is_remote(df):
            where, version, every = _remote_settings(df)
        else:
            where, version, every = _jvm_settings(df)
    except Exception:
        log.debug("the settings of a build side's session cannot be read", exc_info=True)
        return None
    family = {k: v for k, v in every.items() if k.startswith(VALUE_FAMILIES)}
    memo_key = (where, json.dumps(sorted(every.items())))
    with _memo_lock:
        effective = _memo.get(memo_key)
        if effective is not None:
            _memo.move_to_end(memo_key)
    if effective is None:
        # effective values are a function of the set values and the defaults of this
        # Spark in this JVM (the JVM's time zone, SPARK_ANSI_SQL_MODE): memoized on both
        try:
            effective = (_remote_effective(df) if is_remote(df) else _jvm_effective(df))
        except Exception:
            log.debug("effective settings cannot be read", exc_info=True)
            return None
        with _memo_lock:
            _memo[memo_key] = effective
            while len(_memo) > _MEMO_SIZE:
                _memo.popitem(last=False)
    return json.dumps({"spark": version, "effective": effective,
                       "set": sorted(family.items())}, sort_keys=True, separators=(",", ":"))


def _jvm_session(df: Any) -> Any:
    return df._jdf.sparkSession()   # the JVM session the Dataset belongs to


_mappers: dict[int, Any] = {}


def _jvm_settings(df: Any) -> tuple[str, str, dict[str, str]]:
    jvm = df.sparkSession._jvm  # type: ignore[attr-defined]
    js = _jvm_session(df)
    mapper = _mappers.get(id(jvm))
    if mapper is None:
        mapper = _mappers[id(jvm)] = jvm.com.fasterxml.jackson.databind.ObjectMapper()
    every = json.loads(mapper.writeValueAsString(js.conf().getAllAsJava()))
    return f"jvm:{id(jvm)}", str(js.version()), {str(k): str(v) for k, v in every.items()}


def _jvm_effective(df: Any) -> dict[str, Optional[str]]:
    conf = _jvm_session(df).sessionState().conf()
    out: dict[str, Optional[str]] = {}
    for key in VALUE_SETTINGS:
        try:
            out[key] = str(conf.getConfString(key))
        except Exception:   # not a setting of this Spark (or an alternative name unset)
            out[key] = None
    return out


def _remote_settings(df: Any) -> tuple[str, str, dict[str, str]]:
    from dpp.core.spark_compat import conf_items

    spark = df.sparkSession
    where = f"connect:{spark.client._server_session_id or spark.session_id}"
    return where, str(spark.version), conf_items(spark)


def _remote_effective(df: Any) -> dict[str, Optional[str]]:
    """One Config round trip: ``GetOption`` of every key (the effective value, None for a
    key the server does not know)."""
    import pyspark.sql.connect.proto as proto

    spark = df.sparkSession
    op = proto.ConfigRequest.Operation(
        get_option=proto.ConfigRequest.GetOption(keys=list(VALUE_SETTINGS)))
    pairs = spark.client.config(op).pairs
    got = {str(k): (None if v is None else str(v)) for k, v in pairs}
    return {key: got.get(key) for key in VALUE_SETTINGS}


# ---------------------------------------------------------------------------- relations

_FILE_RELATION = "org.apache.spark.sql.execution.datasources.HadoopFsRelation"
_PLAIN_LEAVES = ("org.apache.spark.sql.catalyst.plans.logical.Range",
                 "org.apache.spark.sql.catalyst.plans.logical.OneRowRelation")
_HIVE_RELATION = "org.apache.spark.sql.catalyst.catalog.HiveTableRelation"
_LOGICAL_RELATION = "org.apache.spark.sql.execution.datasources.LogicalRelation"
_plan_expression: dict[int, Any] = {}


def relations_signature(df: Any) -> Optional[str]:
    """Every relation ``df`` reads, with its schemas, format, reader options, bucketing,
    root paths and catalog table, as text (classic sessions); on Spark Connect its output
    schema (the build query's key there holds the server's semantic hash of the resolved
    plan, which compares relations with their options and schemas). None: not cacheable."""
    try:
        if is_remote(df):
            return json.dumps({"schema": df.schema.json()})
        return _jvm_relations(df)
    except Exception:
        log.debug("the relations of a build side cannot be described", exc_info=True)
        return None


def _jvm_relations(df: Any) -> Optional[str]:
    qe = df._jdf.queryExecution()
    optimized = qe.optimizedPlan()
    if optimized.containsPattern(_subquery_pattern(df)):
        return None   # a subquery's relations are not among the DataFrame's input files
    analyzed = qe.analyzed()
    out: list[list[str]] = [["schema", str(df._jdf.schema().json())]]
    for plan in (analyzed, optimized):
        leaves = plan.collectLeaves().iterator()
        while leaves.hasNext():
            described = _leaf(leaves.next())
            if described is None:
                return None
            out.append(described)
    return json.dumps(out, separators=(",", ":"))


def _subquery_pattern(df: Any) -> Any:
    jvm = df.sparkSession._jvm  # type: ignore[attr-defined]
    p = _plan_expression.get(id(jvm))
    if p is None:
        holder = getattr(getattr(jvm, "org.apache.spark.sql.catalyst.trees.TreePattern$"),
                         "MODULE$")
        p = _plan_expression[id(jvm)] = holder.PLAN_EXPRESSION()
    return p


def _leaf(leaf: Any) -> Optional[list[str]]:
    kind = str(leaf.getClass().getName())
    entry = [kind, str(leaf.schema().json())]
    if kind == _LOGICAL_RELATION:
        rel = leaf.relation()
        if str(rel.getClass().getName()) != _FILE_RELATION:
            return None
        fmt = rel.fileFormat()
        entry += [str(fmt.getClass().getName()), str(rel.options().toString()),
                  str(rel.dataSchema().json()), str(rel.partitionSchema().json()),
                  str(rel.bucketSpec().toString()), str(rel.location().getClass().getName()),
                  str(rel.location().rootPaths().toString())]
        table = leaf.catalogTable()
        if table.isDefined():
            entry.append(_catalog_table(table.get()))
        return entry
    if kind == _HIVE_RELATION:
        entry.append(_catalog_table(leaf.tableMeta()))
        return entry
    if kind in _PLAIN_LEAVES:
        entry.append(str(leaf.toString()))
        return entry
    return None   # local rows, JDBC, v2 tables, streams: not files this runtime can stat


def _catalog_table(meta: Any) -> str:
    return "|".join([str(meta.identifier().toString()), str(meta.provider().toString()),
                     str(meta.schema().json()), str(meta.storage().toString()),
                     str(meta.partitionColumnNames().toString()),
                     str(meta.bucketSpec().toString())])
