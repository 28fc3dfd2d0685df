"""Which table dpp lists for a relation the optimizer hook describes, and its name in reports.

A relation reaches the hook as Spark sees it: a catalog table's name, or the root paths of a
path relation (``spark.read.parquet``, a declared table's view of it). This module finds the
:class:`hive_splits.Table` behind it — a declared table, the catalog's, or the folder read as
a Hive-partitioned table — and refuses, with the reason the report gives, every relation dpp
could not list exactly as Spark reads it (several roots, one partition folder, partition
columns or types other than Spark's).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Optional

from dpp.core.refusals import Code, Refusal
from dpp.core.spark_rules import SparkRules
from hive_splits import Table, table_from_path
from hive_splits.jvm_refs import jvm_class, jvm_text
from hive_splits.listing import LocalLister, PrelistedLister
from hive_splits.metastore import MetastorePartitions
from hive_splits.naming import parse_folder_name

if TYPE_CHECKING:
    from dpp.analysis.plan_pairs import Prune
    from dpp.runtime.session_parts import SessionParts

__all__ = ["RelationTables", "handoff_relation", "plain_path", "uri"]

log = logging.getLogger(__name__)


class RelationTables:
    """The tables behind relations, for one session (path tables read once and kept)."""

    def __init__(self, session: "SessionParts") -> None:
        self.session = session
        self._lock = threading.Lock()
        self._path_tables: dict[tuple[str, str], Optional[Table]] = {}
        # folder names of declared folders' kept-partition indexes, by token (most recent)
        self._names: dict[str, list[str]] = {}

    def table_for(self, rel: dict[str, Any], node: dict[str, Any], prunes: list["Prune"],
                  cfg: Any = None, rules: Optional[SparkRules] = None
                  ) -> tuple[Optional[Table], str, Optional[Refusal]]:
        """The table dpp lists for a relation, its name for reports, or why there is none
        (``cfg`` / ``rules``: the settings of the session the plan is from; default this
        hook's session's)."""
        s = self.session
        kind = rel.get("kind")
        table: Optional[Table] = None
        if kind == "catalog":
            name = rel.get("table") or "?"
            if rel.get("staticallyEmpty"):
                # Spark plans such a relation as empty (a broadcast of nothing, a side never
                # run); wrapped, it would be planned at the whole table's size
                return None, self.display_name(name), Refusal(Code.STATICALLY_EMPTY)
            unusable: dict[str, Refusal] = {}
            table = s.catalog.table(name, unusable)
            if table is None:
                return None, name, next(iter(unusable.values()),
                                        Refusal(Code.NOT_PARTITIONED))
            token = rel.get("namesToken")
            if token and isinstance(table.partition_source, MetastorePartitions):
                # the names the rule listed for this plan: the loader reads them, not the
                # metastore again
                table = dataclasses.replace(
                    table, partition_source=table.partition_source.for_plan(token))
        else:
            roots = rel.get("rootPaths") or []
            root = rel.get("root") or (roots[0] if len(roots) == 1 else None)
            if root is None:
                return None, ",".join(roots)[:200], Refusal(Code.SEVERAL_ROOTS)
            path = plain_path(root)
            table = self.registered_at(path)
            if table is None:
                if parse_folder_name(os.path.basename(path.rstrip("/"))) is not None:
                    return None, path, Refusal(Code.PARTITION_FOLDER)
                table = self.path_table(path, cfg, rules, spark_types(rel, node))
                if table is None or (not table.partition_columns
                                     and rel.get("partitionColumns")):
                    return None, path, Refusal(Code.NOT_HIVE_LAYOUT)
            why = self._differs(rel, node, table)
            if why is not None:
                # the folder's layout may have changed since dpp read it (a declared table's
                # at its declaration, a reader's at its first query): read it again, as
                # Spark's reader did for this plan, and check that reading
                fresh = self.path_table(path, cfg, rules, spark_types(rel, node), again=True)
                if fresh is None or self._differs(rel, node, fresh) is not None:
                    return None, table.name, why
                table = fresh
            token = rel.get("folderNames")
            if token and table.partition_columns:
                table = self._prelisted(table, token)
        if kind == "catalog":
            why = self._differs(rel, node, table)
            if why is not None:
                return None, table.name, why
            return table, self.display_name(rel.get("table") or table.name), None
        types = {n.lower(): t for _i, n, t in node["output"]}
        stamped = [c.name for c in table.partition_columns
                   if (types.get(c.name.lower()) or c.type.simple_string()) == "timestamp"]
        if stamped and rel.get("timestampsAgree") is not True:
            # Spark's reader typed the folder's values when the DataFrame was made, in the
            # session time zone of that moment: the rule checks them against the folder names
            # read in today's zone, which is how dpp reads them
            return None, table.name, Refusal.of(Code.TIMESTAMP_ZONE, stamped[0])
        return table, table.name, None

    def _prelisted(self, table: Table, token: str) -> Table:
        """``table`` listed by the partition folders its relation's kept-partition index
        knows (``folderNames``): the loader judges those folders and lists only the kept
        ones' files. The names are taken once; gone (or no jar): the table as it is."""
        rels = self._names.get(token)
        if rels is None:
            try:
                held = jvm_class(self.session.spark._jvm, "dpp.spark.DppHook").takeNames(token)
            except Exception as exc:
                log.debug("dpp: %s: the index's folder names unavailable (%s)", table.name,
                          exc)
                return table
            if held is None:
                return table
            text = jvm_text(held)
            rels = text.split("\n") if text else []
            with self._lock:   # the token stands for these names: its other scans reuse them
                self._names[token] = rels
                while len(self._names) > 8:
                    self._names.pop(next(iter(self._names)))
        lister = table.lister if table.lister is not None else LocalLister()
        return dataclasses.replace(
            table, lister=PrelistedLister(lister, lister.location(table.location), rels))

    @staticmethod
    def _differs(rel: dict[str, Any], node: dict[str, Any], table: Table
                 ) -> Optional[Refusal]:
        """Why ``table`` is not the relation Spark's plan reads (partition columns by name,
        order and type), or None."""
        spark_parts = [c.lower() for c in rel.get("partitionColumns", [])]
        if len(set(spark_parts)) != len(spark_parts):
            return Refusal.of(Code.CASE_CLASH, columns=rel.get("partitionColumns"))
        table_parts = [c.name.lower() for c in table.partition_columns]
        if spark_parts != table_parts:
            return Refusal.of(Code.COLUMNS_DIFFER, spark=spark_parts, folder=table_parts)
        types = {n.lower(): t for _i, n, t in node["output"]}
        for c in table.partition_columns:
            spark_type = types.get(c.name.lower())
            if spark_type is not None and spark_type != c.type.simple_string():
                return Refusal.of(Code.TYPE_DIFFERS, c.name, spark=spark_type,
                                  dpp=c.type.simple_string())
        return None

    def display_name(self, qualified: str) -> str:
        """A catalog table's name as a query in the current database writes it (what the
        SQL-text path's reports say): ``spark_catalog.default.sales`` → ``sales``."""
        parts = qualified.split(".")
        if len(parts) == 3 and parts[0].lower() == "spark_catalog":
            parts = parts[1:]
        if len(parts) == 2:
            try:
                current = self.session.spark.catalog.currentDatabase()
            except Exception:  # pragma: no cover - the name stays qualified
                current = None
            if current is not None and parts[0].lower() == current.lower():
                parts = parts[1:]
        return ".".join(parts)

    def registered_at(self, path: str) -> Optional[Table]:
        s = self.session
        tables = list(s.catalog.declared().values())
        want = path.rstrip("/")
        for t in tables:
            if plain_path(t.location).rstrip("/") == want:
                return t
        return None

    def path_table(self, path: str, cfg: Any = None, rules: Optional[SparkRules] = None,
                   types: Optional[dict[str, str]] = None,
                   again: bool = False) -> Optional[Table]:
        """The folder at ``path`` as a table (partitioned or not), read once per timestamp
        type, inference setting and partition types (``again``: read now, the kept reading
        replaced); None when dpp cannot list it.

        ``types``: the partition columns' types as Spark's relation has them. Spark defines
        them (its reader inferred them from every partition folder when the relation was
        made); inferring them again would list every partition folder once more — one LIST
        per partition on an object store, minutes at 100,000 partitions. Without them (or
        when they do not fit the folder), dpp infers them as Spark does."""
        s = self.session
        rules = rules or SparkRules.from_spark(s.spark)
        ts_type = rules.timestamp_type
        key = (path, ts_type, rules.type_inference, tuple(sorted((types or {}).items())))
        with self._lock:
            if key in self._path_tables and not again:
                return self._path_tables[key]
        table: Optional[Table] = None
        lister = s.runtime.lister(path, cfg or s.config)
        for given in ([types, None] if types else [None]):
            try:
                table = table_from_path(
                    path, name=os.path.basename(path.rstrip("/")) or path,
                    timestamp_type=ts_type, type_inference=rules.type_inference,
                    lister=lister, partition_types=given)
                break
            except Exception as exc:
                log.info("dpp: %s is not a table dpp can list%s: %s", path,
                         " with Spark's partition types" if given else "", exc)
                table = None
        with self._lock:
            self._path_tables[key] = table
        return table


def spark_types(rel: dict[str, Any], node: dict[str, Any]) -> Optional[dict[str, str]]:
    """The partition columns' types in Spark's plan of the relation (name as Spark spells it
    -> simple type string), or None when the plan does not give every one."""
    parts = rel.get("partitionColumns") or []
    types = {n: t for _i, n, t in node.get("output") or []}
    out = {}
    for name in parts:
        t = types.get(name)
        if t is None:
            return None
        out[name] = t
    return out or None


def handoff_relation(rel: dict[str, Any]) -> bool:
    """A relation the SQL-text path handed to Spark: its kept folders or files as roots (a
    partitioned one; an unpartitioned read of chosen files is simply not a table dpp
    lists)."""
    if rel.get("kind") != "path" or not rel.get("partitionColumns"):
        return False
    roots = rel.get("rootPaths") or []
    if len(roots) != 1:
        return True
    base = os.path.basename(plain_path(roots[0]).rstrip("/"))
    return parse_folder_name(base) is not None or base.endswith(".parquet")


def plain_path(path: str) -> str:
    """A ``file:`` URI as a plain path (other schemes as they are)."""
    if path.startswith("file://"):
        return path[len("file://"):] if path[len("file://"):].startswith("/") else path
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def uri(path: str) -> str:
    return "file:" + path if path.startswith("/") else path

