"""Spark Connect: what dpp does to the plans a Connect client sends, and the lifetime of
what it makes on the server.

A Connect client has no JVM, so there is no optimizer to hook. But a Connect DataFrame *is*
its plan: a protobuf tree (``spark.connect.Relation``) that the client builds and sends with
every action (``collect``, ``toArrow``, ``toPandas``, ``write…``). :class:`ConnectFrames`
wraps the one method every action goes through
(``SparkConnectClient._execute_and_fetch_as_iterator``) on the enabled session's own client.
It always does two things, and a third only when asked:

* **Dropping what finalizers queued.** Views dpp made for a returned DataFrame are dropped
  once the DataFrame is garbage; the finalizer that notices only queues their names
  (:class:`ConnectLifecycle`), because a remote call from a garbage-collection callback can
  run inside the client's own ``ThreadPoolExecutor.submit`` and wait forever on a lock its
  thread holds. The queue is emptied here, at the next action, at ``spark.stop()`` and at
  interpreter exit.
* **Keeping Spark's checks on writes.** A ``spark.sql`` DataFrame dpp rewrote reads pruned
  views, not the table; written back to that table (``insertInto``, ``saveAsTable``, an
  ``INSERT … SELECT * FROM`` a view of it) Spark would no longer see that the target is also
  read, and an overwrite would delete what it reads. In every command (writes, views) such a
  DataFrame's SQL goes out as the user wrote it.
* **The DataFrame rewrite** (``spark.dpp.connect.dataFrames=true``, off by default). Before
  the plan leaves the client, it looks for the star shape::

    fact.join(dim.where(...), fact.key == dim.key)          # or on="key", any side order

  where ``fact`` is a ``Read`` of a table dpp knows: ``spark.table(name)`` of a
  partitioned catalog table, or ``spark.read.parquet(folder)`` of a folder declared as
  ``spark.dpp.tables.<name>``. Which join key reaches which partition column, through which
  operators, and which side of which join may be pruned by which build side is not decided
  here: the plan is translated to the typed plan the optimizer hook's rule describes
  (:mod:`dpp.frontends.connect.typed`) and :func:`dpp.analysis.plan_pairs.find_prunes` decides, by the rules
  of :mod:`dpp.analysis.rules`. Every pair gives a dynamic filter whose build side is the plan it
  names (LEFT SEMI joined to the probe-side relation that narrows it, q72's shape; a data
  column's pair only where statistics or buckets can use it; :mod:`dpp.frontends.connect.builds`) —
  run by Spark as an aggregation and collected with ``toArrow()``
  (:func:`dpp.runtime.fact_loads.pruned_fact`) — and the read is replaced, in
  place and under its own ``plan_id`` (so ``fact["col"]`` still resolves), by a temporary
  view of the pruned relation, dropped when the action is done.

Why the rewrite is off by default, and what it refuses when on: the client sees names, not
Spark's resolved plan, and the view it substitutes hides the table from Spark's own checks.
So it rewrites only what it can prove, and sends anything else as built:

* a fact read that occurs more than once in the plan (a DataFrame used in two branches
  shares its ``plan_id``: each use has its own joins, one view cannot serve both);
* a key whose name Spark could resolve otherwise: ``f["meta.day"]`` (a nested field), a
  qualified name whose qualifier is not an alias in scope, or could be a column (a struct),
  a name two relations of the plan have;
* a build side that is not deterministic (``rand()`` in a SQL-string filter, ``sample``,
  ``limit``): it would be drawn again for the filter (reported);
* a plan any part of which over the fact is cached (``df.cache()``): the rewrite would read
  the files, not the cache;
* a read named like a declared table, a temporary view of the user's, or whose relation as
  Spark resolves it (column names, order and types, with the session's partition type
  inference) differs from the pruned one;
* a write to a table (``insertInto``, ``saveAsTable``, ``writeTo``), or to a path that is,
  holds or lies in a replaced table's folder.

Soundness of what is kept: a fact row whose key matches no row of the other side cannot reach
the output of an inner or semi join, nor pass a join above it on the same key; only join types
that drop such rows are used. A failure anywhere sends the original plan (logged, and said in
the report). Actions another thread starts while a plan is being rewritten go out as built.
"""
from __future__ import annotations

import collections
import logging
import os
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Iterator, Optional

from dpp.frontends.connect.builds import (FactRead, build_frame, find_fact_joins, read_key,
                                worth_by_policy, worth_without_footers)
from dpp.frontends.connect.proto import all_relations as _all_relations
from dpp.runtime.connect_lifecycle import ConnectLifecycle, lifecycle_of
from dpp.runtime.connect_lifecycle import GUARD as _GUARD
from dpp.frontends.connect.proto import (dataframe_nondeterminism, deterministic_relation,
                               relation_children)
from dpp.core.errors import ConfigError
from dpp.core.refusals import Code, Refusal
from dpp.runtime.report import JobReport
from dpp.runtime.views import norm_name

if TYPE_CHECKING:  # pragma: no cover
    from dpp.runtime.session_parts import SessionParts

__all__ = ["ConnectFrames", "ConnectLifecycle", "FactRead", "find_fact_joins", "lifecycle_of",
           "deterministic_relation"]

log = logging.getLogger(__name__)

_VIEW_PREFIX = "__dpp_frame_"

# ====================================================================== the plan


def _read_counts(root: Any) -> "collections.Counter[Any]":
    """How many times each read (by ``plan_id`` and content) occurs under ``root``."""
    return collections.Counter(read_key(r) for r in _all_relations(root)
                               if r.WhichOneof("rel_type") == "read")


def _ancestors(root: Any, key: Any) -> list[Any]:
    """The relations from ``root`` down to the read ``key`` (both included)."""
    path: list[Any] = []

    def walk(rel: Any) -> bool:
        path.append(rel)
        if rel.WhichOneof("rel_type") == "read" and read_key(rel) == key:
            return True
        for child in relation_children(rel):
            if walk(child):
                return True
        path.pop()
        return False

    walk(root)
    return path


def _overlaps(a: str, b: str) -> bool:
    """Whether folder ``a`` is, holds or lies in folder ``b`` (local paths, real paths)."""
    from hive_splits.table import local_path

    x = os.path.realpath(local_path(a)).rstrip("/") + "/"
    y = os.path.realpath(local_path(b)).rstrip("/") + "/"
    return x.startswith(y) or y.startswith(x)


class ConnectFrames:
    """The client-side interception of one enabled Connect session (module docstring)."""

    def __init__(self, session: "SessionParts") -> None:
        self.session = session
        self.client = session.spark.client
        self.lifecycle = lifecycle_of(session.spark)
        self._original = self.client._execute_and_fetch_as_iterator
        self._busy = threading.Lock()
        self._report: Any = None   # the action being rewritten (under _busy)
        self.client._execute_and_fetch_as_iterator = self._execute   # instance attribute

    def uninstall(self) -> None:
        if vars(self.client).get("_execute_and_fetch_as_iterator") == self._execute:
            del self.client._execute_and_fetch_as_iterator

    # ------------------------------------------------------------------ interception
    def _execute(self, req: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        # the client's own arguments passed on as they come: (req, observations, progress)
        # on PySpark 4, (req) alone on 3.5
        self.lifecycle.drain()
        views: list[str] = []
        try:
            self._restore_sql(req)
        except Exception as exc:  # pragma: no cover - a plan walk; never a failed action
            log.warning("dpp: Spark Connect: command not checked: %s", exc)
        # dpp's own actions while a plan is rewritten (build sides run on other threads,
        # the pruned relation's views) go out as they are
        if not getattr(_GUARD, "draining", False) and self._busy.acquire(blocking=False):
            try:
                self._rewrite_request(req, views)
            except Exception as exc:   # the user's plan, unchanged: never a failed action
                log.warning("dpp: Spark Connect DataFrame plan not pruned: %s", exc)
            finally:
                self._busy.release()
        finished = False
        try:
            yield from self._original(req, *args, **kwargs)
            finished = True
        finally:
            if finished:
                self._drop(views)
            else:   # abandoned, perhaps closed by the garbage collector: no RPC here
                self.lifecycle.queue_views(views)

    def _restore_sql(self, req: Any) -> None:
        """In a command (a write, a view, ...), every ``spark.sql`` DataFrame dpp rewrote goes
        out as the user's SQL: Spark must see the tables a write reads (it refuses to
        overwrite a table or path the plan reads), and a view must not hide them either."""
        plan = req.plan
        if plan.WhichOneof("op_type") != "command" or not self.lifecycle.rewritten:
            return
        known = dict(self.lifecycle.rewritten)
        for rel in _all_relations(plan.command):
            if rel.WhichOneof("rel_type") == "sql":
                original = known.get(rel.sql.query)
                if original is not None:
                    self.session.catalog.views.ensure(self.session.catalog.mentions(original))
                    rel.sql.query = original

    def _rewrite_request(self, req: Any, views: list[str]) -> None:
        plan = req.plan
        kind = plan.WhichOneof("op_type")
        target: Optional[str] = None
        if kind == "root":
            root = plan.root
        elif kind == "command" and plan.command.WhichOneof("command_type") == "write_operation":
            w = plan.command.write_operation
            # a write to a table is never rewritten: the table could be one the plan reads,
            # and Spark refuses such an overwrite only when it sees the table read
            target = (w.path if w.WhichOneof("save_type") == "path"
                      else None if w.WhichOneof("save_type") == "table"
                      else w.options.get("path"))
            if not target:
                return
            root = w.input
        else:
            return
        state: dict[str, Any] = {}

        def fact_of(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
            if "cfg" not in state:   # one conf round trip, only for plans with a join
                state["cfg"] = self.session.config
            cfg = state["cfg"]
            if not (cfg.enabled and cfg.connect_dataframes):
                return None
            return self._fact_of(read)

        facts = find_fact_joins(root, fact_of)
        if not facts:
            return
        cfg = state["cfg"]
        facts, notes = worth_without_footers(self.session, facts, cfg)
        if not facts:
            return
        t0 = time.perf_counter()
        report = JobReport.start(
            query_text="DataFrame plan (Spark Connect): " + "; ".join(
                f"{f.name} joined on {[(a, b.describe()) for a, b, _ in f.pairs]}"
                for f in facts),
            kind="plan", settings=cfg.as_settings(), enabled=True)
        report.analysis_notes.extend(notes)
        facts = self._provable(root, facts, target, report)
        if facts:
            self._report = report
            report = self._rewrite(root, plan, facts, cfg, views)
        self.session.finish(None, report, cfg, t0, execute=False)  # type: ignore[arg-type]

    def _provable(self, root: Any, facts: list["FactRead"], target: Optional[str],
                  report: JobReport) -> list["FactRead"]:
        """The facts whose rewrite is proven to give Spark's rows; the others are reported
        and left as built (module docstring)."""
        counts = _read_counts(root)
        kept = []
        for fact in facts:
            why = None
            if counts[fact.key] != 1:
                why = ("the same DataFrame read occurs more than once in the plan (one view "
                       "cannot stand for each use)")
            elif not fact.pairs:   # refused by the rules: a build side drawn per run
                why = fact.refused
            elif target is not None:
                table = self.session.catalog.table(fact.name, {})
                if table is None or not table.location or _overlaps(target, table.location):
                    why = ("the write's target path is, holds or lies in the table's folder: "
                           "Spark must see the table it overwrites")
            if why is None:
                why = self._cached(root, fact)
            if why is not None:
                report.add_table_unpruned(fact.name, None,
                                          Refusal.of(Code.FRAME_SENT_AS_BUILT, why=why))
            else:
                kept.append(fact)
        return kept

    def _cached(self, root: Any, fact: "FactRead") -> Optional[str]:
        """Why not, when the read or a plan above it is cached (``df.cache()``, ``CACHE
        TABLE``): the cache holds rows the files may no longer have, and Spark uses it only
        for the plan it cached."""
        for rel in _ancestors(root, fact.key):
            copy = type(rel)()
            copy.CopyFrom(rel)
            level = self.client._analyze(method="get_storage_level",
                                         relation=copy).storage_level
            if level is not None and (level.useMemory or level.useDisk or level.useOffHeap):
                return "a plan over the fact is cached; the cache is what Spark reads"
        return None

    def _rewrite(self, root: Any, plan: Any, facts: list["FactRead"], cfg: Any,
                 views: list[str]) -> JobReport:
        saved = type(plan)()
        saved.CopyFrom(plan)
        report = self._prune(facts, cfg, views)
        if views:
            # Spark must accept the rewritten plan before it is sent: a rejection (a column
            # reference the rewrite broke) sends the user's plan as built, never a failure
            import pyspark.sql.connect.proto as proto

            try:
                self.client.schema(proto.Plan(root=root))
            except Exception as exc:
                plan.CopyFrom(saved)
                self._drop(views)
                views.clear()
                names = {f.name for f in facts}
                report.tables = [t for t in report.tables if t.table not in names]
                for name in sorted(names):
                    report.add_table_unpruned(name, None,
                                              Refusal.of(Code.FRAME_REJECTED, error=exc))
        return report

    def _drop(self, views: list[str]) -> None:
        for v in views:
            try:
                self.session.spark.catalog.dropTempView(v)
            except Exception:  # pragma: no cover - the session may be closed
                log.debug("dropping %s failed", v, exc_info=True)

    # ------------------------------------------------------------------ the facts
    def _fact_of(self, read: Any) -> Optional[tuple[str, set[str], set[str]]]:
        """The dpp table a ``Read`` reads whole, its columns and its partition columns
        (lower case), or None. By name only a catalog table: a declared table by name is a
        view (dpp's, or the user's own of that name, which wins)."""
        from dpp.runtime.decision import table_columns

        rt = read.WhichOneof("read_type")
        if read.is_streaming:
            return None
        name: Optional[str] = None
        if rt == "named_table" and not read.named_table.options:
            name = read.named_table.unparsed_identifier
            if self.session.catalog.registered_any(norm_name(name)) is not None:
                return None
        elif rt == "data_source":
            ds = read.data_source
            if (ds.format or "parquet").lower() == "parquet" and not ds.schema \
                    and not ds.options and not ds.predicates and len(ds.paths) == 1:
                name = self._declared_at(ds.paths[0])
        if name is None:
            return None
        table = self.session.catalog.table(name, {})
        if table is None or not table.partition_columns:
            return None
        if rt == "named_table" and not table.is_catalog:
            return None
        return (norm_name(name), {c.lower() for c, _ in table_columns(table)},
                {c.name.lower() for c in table.partition_columns})

    def _declared_at(self, path: str) -> Optional[str]:
        """The declared table (``spark.dpp.tables.<name>``) whose folder is ``path``."""
        from hive_splits.table import local_path

        want = local_path(path).rstrip("/")
        for key, table in self.session.catalog.declared().items():
            if (table.location.rstrip("/") == want and table.partition_columns
                    and not table.is_catalog):
                return key
        return None

    def _prune(self, facts: list[FactRead], cfg: Any, views: list[str]) -> JobReport:
        """Each fact read replaced by a view of its pruned relation, when Spark resolves
        the view to the same columns (names, order, types) as the read it replaces. The
        action's report (made by the caller) is returned, to be finished by it."""
        import pyspark.sql.connect.proto as proto

        from dpp.core.spark_rules import SparkRules
        from dpp.runtime.fact_loads import pruned_fact

        s = self.session
        report = self._report
        rules = SparkRules.from_spark(s.spark)
        s.runtime.remote_notes(cfg, report)
        for fact in facts:
            try:
                table = s.catalog.table(fact.name, {})
                if table is None:
                    raise ConfigError(f"table {fact.name!r} is no longer known to dpp")
                original = proto.Relation()
                original.CopyFrom(fact.read)
                want = self.client.schema(proto.Plan(root=original))
                if fact.refused and fact.pairs:   # pruned by other keys: say why not this
                    r = fact.refused   # about this fact's key: named by the fact too
                    report.refuse([Refusal(r.code, f"{fact.name}: {r.subject}", r.values)])
                chosen = worth_by_policy(s, fact, table, cfg, report)
                if not chosen:
                    continue
                pairs = [(fcol, build_frame(build, s.spark, f"__dpp_key_{i}"), f"__dpp_key_{i}")
                         for i, (fcol, build, _name) in enumerate(chosen)]
                fact_df = pruned_fact(s, fact.name, table, pairs, cfg, rules, report,
                                      unstable=dataframe_nondeterminism, sized=True)
                # the auto policy notes its verdict each time it is asked
                report.analysis_notes[:] = list(dict.fromkeys(report.analysis_notes))
                got = fact_df.schema
                if [(f.name, f.dataType) for f in got.fields] != \
                        [(f.name, f.dataType) for f in want.fields]:
                    s.connect.release_global(fact_df)
                    report.tables = [t for t in report.tables if t.table != fact.name]
                    report.add_table_unpruned(fact.name, None, Refusal.of(
                        Code.FRAME_SENT_AS_BUILT, why=f"Spark resolves the read as "
                        f"{want.simpleString()}, the pruned relation as {got.simpleString()}"))
                    continue
                view = f"{_VIEW_PREFIX}{uuid.uuid4().hex[:12]}"
                fact_df.createOrReplaceTempView(view)
                s.connect.release_global(fact_df)
                views.append(view)
                plan_id = fact.read.common.plan_id if fact.read.HasField("common") else None
                fact.read.Clear()
                fact.read.read.named_table.unparsed_identifier = view
                if plan_id is not None:
                    fact.read.common.plan_id = plan_id
            except Exception as exc:
                log.warning("dpp: Spark Connect: %s not pruned in a DataFrame plan: %s",
                            fact.name, exc)
                report.add_table_unpruned(fact.name, None,
                                          Refusal.of(Code.FRAME_NOT_PRUNED, error=exc))
        return report
