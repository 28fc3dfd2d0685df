"""What the optimizer hook answers the JVM with, and how its report names a plan.

The wrapping file index asks for a relation's files once Spark scans it: an index that holds
Spark's own listing (``spark.read.parquet``, a declared table) takes what the load ruled out
(:func:`ruled_out`; :func:`encode` gives the kept partitions, its fallback), and a catalog
table's index takes the kept partitions' catalog values, which it hands Spark's own catalog
index as a partition predicate, and the files skipped (:func:`catalog_answer`): everything
Spark lists and dpp did not rule out is still read.
"""
from __future__ import annotations

import os
import re
import sys
import sysconfig
import threading
from typing import Any, Optional

from dpp.core.domain import DataType
from dpp.runtime.decision import real_column, table_columns
from dpp.frontends.hook.tables import uri
from dpp.analysis.plan_pairs import Prune, relation_nodes
from hive_splits import LoadResult, Table
from hive_splits.listing import PrelistedLister
from hive_splits.naming import parse_folder_name

__all__ = ["probe_type", "probe_type_of", "encode", "ruled_out", "catalog_answer", "plan_text",
           "pruning_text"]


def pruning_text(table: Table, prunes: list[tuple[Prune, str]]) -> str:
    """What a pruned relation's scan description says dpp prunes it by, read where only
    Spark's own plan text reaches (a Connect client's ``explain()``, the SQL tab):
    ``ss_sold_date_sk IN date_dim.d_date_sk``, one term per build side (``prunes``: each
    prune with its build side's report name), in the words of Spark's own
    ``dynamicpruningexpression(… IN dynamicpruning#…)``. A relation dpp lists with nothing to
    prune by: ``listed whole``."""
    if not prunes:
        return "listed whole"
    terms = []
    for p, build in prunes:
        fact = (p.fact_sql if p.fact_expr is not None
                else real_column(table, p.column) or p.column)
        term = f"{fact} IN {build}" if p.compare == "=" else \
            f"{fact} {p.compare} {'max' if p.compare in ('<', '<=') else 'min'}({build})"
        if term not in terms:
            terms.append(term)
    return " AND ".join(terms)


def probe_type(table: Table, p: Prune) -> Optional[DataType]:
    """The type of what the filter prunes: the partition column, or an expression key's type
    (None when dpp's domains cannot hold it: a struct, an array, an interval)."""
    if p.fact_expr is None:
        return dict(table_columns(table)).get(p.column.lower())
    return probe_type_of(p.fact_type)


def probe_type_of(spark_type: str) -> Optional[DataType]:
    try:
        return DataType.from_catalog(spark_type)
    except Exception:
        return None


def encode(table: Table, result: LoadResult) -> list[dict[str, Any]]:
    """The kept partitions as the JVM index takes them: values as text (None: NULL), by
    lower-case column name; files as [uri, bytes, mtime ms]."""
    by_folder: dict[str, list[Any]] = {}
    for s in result.splits:
        by_folder.setdefault(os.path.dirname(s.path), []).append(s)
    out = []
    for kp in result.partitions:
        splits = by_folder.get(kp.path)
        if not splits:
            continue
        if kp.texts is not None:
            values = {k.lower(): v for k, v in kp.texts.items()}
        else:
            values = {}
            for seg in (kp.relative or "").split("/"):
                parsed = parse_folder_name(seg) if seg else None
                if parsed is not None:
                    values[parsed[0].lower()] = parsed[1]
        mtimes = {f.path: f.mtime_ns // 1_000_000 for f in result.listings.get(kp.path, [])}
        out.append({"values": values,
                    "files": [[uri(s.path), s.size, mtimes.get(s.path, 0)] for s in splits]})
    return out


def ruled_out(table: Table, result: LoadResult) -> dict[str, Any]:
    """What the load ruled out, for an index that already holds Spark's own listing (a path
    relation): folders relative to the table root, and per kept folder the names of files
    skipped (statistics, buckets). Everything else Spark listed is kept, so a folder the
    loader spells otherwise or never saw is read, never lost."""
    kept: dict[str, set[str]] = {}
    for s in result.splits:
        kept.setdefault(os.path.dirname(s.path), set()).add(os.path.basename(s.path))
    dropped: dict[str, list[str]] = {}
    for kp in result.partitions:
        if kp.relative is None:
            continue
        names = kept.get(kp.path, set())
        gone = [os.path.basename(f.path) for f in result.listings.get(kp.path, [])
                if os.path.basename(f.path) not in names]
        if gone:
            dropped[kp.relative] = gone
    if isinstance(table.lister, PrelistedLister) and all(
            kp.relative is not None for kp in result.partitions):
        # the load judged exactly the folders the relation's index knows: the kept ones say
        # it all (30 names, not the 99,970 others of a 100,000-partition table)
        return {"prunedFolders": [], "droppedFiles": dropped,
                "keptFolders": [kp.relative for kp in result.partitions
                                if kp.relative is not None]}
    return {"prunedFolders": list(result.pruned_folders), "droppedFiles": dropped}


def catalog_answer(table: Table, result: LoadResult) -> dict[str, Any]:
    """What a catalog table's index restricts Spark's own listing to: ``kept``, the kept
    partitions' values as the catalog spells them (raw text by column, None for the default
    partition; None when no partition was ruled out), and ``dropped``, the files skipped by
    statistics or buckets as [uri, bytes, mtime ms] (Spark's listing loses a file only where
    it lists the same path with the same size and time)."""
    ruled = result.pruned_static + result.pruned_dynamic
    kept = None
    if ruled:
        kept = [dict(kp.texts) for kp in result.partitions if kp.texts is not None]
        if len(kept) != len(result.partitions):
            kept = None   # a partition without its catalog values: nothing said of any
    names = {s.path for s in result.splits}
    dropped = [[uri(f.path), f.size, f.mtime_ns // 1_000_000]
               for kp in result.partitions for f in result.listings.get(kp.path, [])
               if f.path not in names]
    return {"kept": kept, "dropped": dropped}


def build_label(msg: dict[str, Any], p: Prune) -> str:
    """A build side as the report names it: the table (or folder) its key column comes from,
    traced down the build side through projections and aggregates, with the key as Spark
    writes it when an alias tells it apart (``dates d.day_sk``, ``date_dim d2.d_date``; else
    ``dates.day_sk``); Spark's text of the key alone when the trace ends elsewhere (an
    expression, local rows, a relation of several folders)."""
    try:
        nodes = {n["id"]: n for n in msg.get("nodes", [])}
        attr = None
        for n in nodes.values():
            keys = [k for pair in n.get("keys", []) for k in pair]
            keys += [s["queryKey"] for s in n.get("inSubqueries", [])]
            for k in keys:
                if k.get("expr") == p.build_expr:
                    attr = k.get("attr")
        if attr is None:
            return p.build_sql
        todo, seen = [(p.build_node, attr)], set()
        while todo:
            nid, a = todo.pop()
            n = nodes.get(nid)
            if n is None or (nid, a) in seen:
                continue
            seen.add((nid, a))
            names = {o[0]: o[1] for o in n["output"]}
            if a not in names:
                continue
            if not n["children"]:
                source = n.get("source")
                if not source:
                    return p.build_sql
                # the alias Spark's key text carries tells a table joined twice apart
                qualifier = p.build_sql.rpartition(".")[0]
                if qualifier and qualifier.lower() != source.lower():
                    return f"{source} {p.build_sql}"
                return f"{source}.{names[a]}"
            a = dict((out, src) for out, src in n.get("map", [])).get(a, a)
            todo.extend((c, a) for c in n["children"])
    except (KeyError, TypeError, ValueError):
        pass
    return p.build_sql


# Spark's own call site when PySpark set none: the first JVM frame outside Spark, which is
# dpp's describer asking for it ("getCallSite at PlanDescriber.java:161"), never the user's
_OWN_SITE = re.compile(r"\bat (PlanDescriber|DppRule|DppHook)\.java:\d+$")
# Python code that is not the user's: the frames between the user's line and the JVM
_LIBRARY = ("py4j", "pyspark", "dpp", "hive_splits", "collectors", "coordinator")
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep


def python_call_site() -> Optional[str]:
    """Where the user's Python ran the query, when PySpark gave Spark no call site (a write,
    ``saveAsTable``, ``count``): the one thread of this process waiting in a py4j call made
    through pyspark, as ``<pyspark method> at <file>:<line>`` of its innermost frame outside
    pyspark, py4j and dpp. None unless exactly one thread waits so (several threads running
    queries at once, a Connect server's driver: no guess)."""
    me = threading.get_ident()
    found: list[str] = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        f: Any = frame
        action: Optional[str] = None
        waiting = False
        while f is not None:
            module = str(f.f_globals.get("__name__", ""))
            top = module.partition(".")[0]
            if f.f_code.co_filename.startswith(_STDLIB):   # threading, concurrent.futures
                f = f.f_back
                continue
            if top == "py4j":
                waiting = True
            elif top == "pyspark" and waiting:
                action = f.f_code.co_name
            elif top not in _LIBRARY and action is not None:
                if not action.startswith("_"):
                    found.append(f"{action} at {os.path.basename(f.f_code.co_filename)}"
                                 f":{f.f_lineno}")
                break
            elif top not in _LIBRARY:
                break
            f = f.f_back
    return found[0] if len(found) == 1 else None


def users_site(site: Optional[str]) -> bool:
    """Whether Spark's call site names the user's code (not a frame of dpp's or PySpark's)."""
    return bool(site) and not _OWN_SITE.search(site or "")


def plan_text(msg: dict[str, Any], prunes: list[Prune]) -> str:
    """What the report shows as the query: where the user's code ran it (Spark's call site,
    ``collect at job.py:31: ``) and the optimizer's view, since there may be no text."""
    site = msg.get("callSite")
    if not users_site(site):
        site = python_call_site()
    text = _plan_text(msg, prunes)
    if not site:
        return text
    # "collect at /long/path/job.py:31" -> "collect at job.py:31": the file a user knows
    short = re.sub(r" at \S*/([^/\s]+:\d+)$", r" at \1", site)
    return f"{short}: {text}"


def _plan_text(msg: dict[str, Any], prunes: list[Prune]) -> str:
    sql = {k["expr"]: k.get("sql", "?") for n in msg.get("nodes", [])
           for pair in n.get("keys", []) for k in pair}

    def build(p: Prune) -> str:
        if p.build_semi is None:   # else: the build side's rows a filtered side matches
            return p.build_sql
        on = " AND ".join(f"{sql.get(b, '?')} = {sql.get(a, '?')}" for b, a in p.build_semi[1])
        return f"{p.build_sql} ⋉ ({on})"

    parts = sorted({f"{p.column} by {build(p)} ({p.join})" if p.compare == "=" else
                    f"{p.column} {p.compare} {build(p)} ({p.join})" for p in prunes})
    if not parts and not any(r.get("kind") in ("lazy", "catalog")
                             for r in relation_nodes(msg).values()):
        return "optimizer plan: nothing pruned (see the notes)"
    if not parts:
        names = sorted({r.get("table") or r.get("root") or "?"
                        for r in relation_nodes(msg).values()})
        return "optimizer plan: read whole " + ", ".join(names)
    return "optimizer plan: prune " + "; ".join(parts)
