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

  where ``fact`` is, under Filter / Project / SubqueryAlias / WithColumns nodes that keep the
  key column as it is (and through other joins that keep the fact's rows), a ``Read`` of a
  table dpp knows: ``spark.table(name)`` of a partitioned catalog table, or
  ``spark.read.parquet(folder)`` of a folder declared as ``spark.dpp.tables.<name>``. Every
  equi-join key pair on a partition column gives a dynamic filter whose build side is the
  other side of that join — its own plan, run by Spark as an aggregation and collected with
  ``toArrow()`` (:func:`dpp.join.pruned_fact`) — and the read is replaced, in
  place and under its own ``plan_id`` (so ``fact["col"]`` still resolves), by a temporary
  view of the pruned relation, dropped when the action is done.

Why the rewrite is off by default, and what it refuses when on: the client sees names, not
Spark's resolved plan, and the view it substitutes hides the table from Spark's own checks.
So it rewrites only what it can prove, and sends anything else as built:

* a fact read that occurs more than once in the plan (a DataFrame used in two branches
  shares its ``plan_id``: each use has its own joins, one view cannot serve both);
* a key that is not a plain column of the fact: ``f["meta.day"]`` (a nested field), a
  qualified name whose qualifier is not an alias met on the fact's own side, or could be a
  column (a struct);
* a build side that is not deterministic (``rand()`` in a SQL-string filter, ``sample``,
  ``limit``): it would be drawn again for the filter;
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

import atexit
import collections
import logging
import os
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional

from dpp import rules as prune_rules
from dpp.core.errors import ConfigError
from dpp.report import JobReport
from dpp.views import norm_name

if TYPE_CHECKING:  # pragma: no cover
    from dpp.session import DppSession

__all__ = ["ConnectFrames", "ConnectLifecycle", "FactRead", "find_fact_joins", "lifecycle_of"]

log = logging.getLogger(__name__)

_VIEW_PREFIX = "__dpp_frame_"

# Join.JoinType values (spark/connect/relations.proto)
_INNER, _FULL, _LEFT, _RIGHT, _ANTI, _SEMI, _CROSS = 1, 2, 3, 4, 5, 6, 7
# which side of a join may be pruned by the other: the rules', by the protobuf's join types
_PRUNABLE_SIDES: dict[int, tuple[str, ...]] = {
    code: prune_rules.prunable_sides(jt) for code, jt in {
        _INNER: prune_rules.JoinType.INNER, _FULL: prune_rules.JoinType.FULL_OUTER,
        _LEFT: prune_rules.JoinType.LEFT_OUTER, _RIGHT: prune_rules.JoinType.RIGHT_OUTER,
        _ANTI: prune_rules.JoinType.LEFT_ANTI, _SEMI: prune_rules.JoinType.LEFT_SEMI,
        _CROSS: prune_rules.JoinType.CROSS}.items()}

# how long ending dpp's clones may take at spark.stop() and at exit: a dead server must not
# hold the process (the client's own retries wait minutes)
END_TIMEOUT = 2.0

# relations whose rows depend on the run: never in a build side
_UNREPEATABLE = frozenset({"sample", "limit", "offset", "tail", "sample_by",
                           "map_partitions", "group_map", "co_group_map",
                           "common_inline_user_defined_table_function",
                           "common_inline_user_defined_data_source", "extension", "unknown"})


# ====================================================================== lifecycle

_GUARD = threading.local()


class ConnectLifecycle:
    """What dpp keeps on the server for one Connect session, and when it goes away.

    * ``dead_views``: temporary views whose DataFrame is garbage. Finalizers only append here
      (a deque append takes no lock a finalizer could find held); :meth:`drain` drops them
      at the next action or dpp call on the session.
    * ``rewritten``: the SQL text of live rewritten ``spark.sql`` DataFrames → the user's
      text, so commands send the user's (:meth:`ConnectFrames._restore_sql`).
    * ``clones``: dpp's ``cloneSession()`` clients. They end with the user's session
      (``spark.stop()``, wrapped here) and at interpreter exit, each within
      :data:`END_TIMEOUT`; the client's own exit handler of a clone (which calls the server
      with retries lasting minutes) is unregistered in favour of that.
    """

    def __init__(self, spark: Any) -> None:
        self._spark = weakref.ref(spark)
        self.dead_views: "collections.deque[str]" = collections.deque()
        self.rewritten: dict[str, str] = {}
        self.clones: list[Any] = []
        self._lock = threading.Lock()
        self._ended = False
        original = vars(spark).get("stop")
        lifecycle = self

        def stop(*args: Any, **kwargs: Any) -> Any:
            lifecycle.end()
            fn = original if original is not None else type(spark).stop.__get__(spark)
            return fn(*args, **kwargs)

        stop.dpp_lifecycle = self  # type: ignore[attr-defined]
        spark.stop = stop
        atexit.register(self._at_exit)

    # ------------------------------------------------------------------ views
    def queue_views(self, names: Any) -> None:
        """From a finalizer: remember names to drop later. No RPC, no lock."""
        self.dead_views.extend(names)

    def drain(self) -> None:
        """Drops the queued views (a drop is itself an action: not re-entered)."""
        if getattr(_GUARD, "draining", False) or not self.dead_views:
            return
        spark = self._spark()
        if spark is None or self._ended:
            return
        _GUARD.draining = True
        try:
            while True:
                try:
                    name = self.dead_views.popleft()
                except IndexError:
                    return
                try:
                    spark.catalog.dropTempView(name)
                except Exception:  # the session may be closed
                    log.debug("dropping %s failed", name, exc_info=True)
        finally:
            _GUARD.draining = False

    # ------------------------------------------------------------------ clones
    def add_clone(self, sib: Any) -> None:
        """A clone dpp made: ended with the user's session, not by the client's exit hook."""
        try:
            atexit.unregister(sib.client._on_exit)
        except Exception:  # another client build: its hook stays
            log.debug("no exit hook to take over", exc_info=True)
        with self._lock:
            self.clones.append(sib)

    def end_clones(self, clones: Optional[list[Any]] = None,
                   timeout: float = END_TIMEOUT) -> None:
        """Releases ``clones`` (default: all) server-side and closes their channels, in
        parallel, giving up on the release after ``timeout`` seconds."""
        with self._lock:
            chosen = list(self.clones) if clones is None else [c for c in clones
                                                               if c in self.clones]
            self.clones = [c for c in self.clones if c not in chosen]
        _end_clients([c.client for c in chosen], timeout)

    def end(self) -> None:
        """The user's session ends: clones end; queued views go with the server session."""
        if self._ended:
            return
        self.end_clones()
        self.dead_views.clear()
        self.rewritten.clear()
        self._ended = True
        try:
            atexit.unregister(self._at_exit)
        except Exception:  # pragma: no cover
            pass

    def _at_exit(self) -> None:
        if self._ended:
            return
        spark = self._spark()
        if spark is not None and self.dead_views and not _closed(spark):
            t = threading.Thread(target=self.drain, name="dpp-drop-views", daemon=True)
            t.start()
            t.join(END_TIMEOUT / 2)
        self.end_clones(timeout=END_TIMEOUT / 2)
        self._ended = True


def _closed(spark: Any) -> bool:
    try:
        return bool(spark.is_stopped)
    except Exception:
        return True


def _end_clients(clients: list[Any], timeout: float) -> None:
    """Each client's server session released (best effort, on a daemon thread, bounded by
    ``timeout`` in all) and its channel closed: a dead server cannot hold the caller."""
    def release(c: Any) -> None:
        try:
            c.release_session()
        except Exception:
            log.debug("releasing a dpp clone failed", exc_info=True)

    threads = []
    for c in clients:
        if getattr(c, "is_closed", True):
            continue
        t = threading.Thread(target=release, args=(c,), name="dpp-end-clone", daemon=True)
        t.start()
        threads.append(t)
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    for c in clients:
        try:
            c._closed = True
            c._channel.close()
        except Exception:
            log.debug("closing a dpp clone failed", exc_info=True)


_LIFECYCLE_LOCK = threading.Lock()


def lifecycle_of(spark: Any) -> ConnectLifecycle:
    """The Connect session's :class:`ConnectLifecycle` (made, and ``stop`` wrapped, once)."""
    got = vars(spark).get("_dpp_lifecycle")
    if got is not None:
        return got
    with _LIFECYCLE_LOCK:
        got = vars(spark).get("_dpp_lifecycle")
        if got is None:
            got = ConnectLifecycle(spark)
            spark._dpp_lifecycle = got
        return got


# ====================================================================== the plan


@dataclass
class FactRead:
    """A ``Read`` relation of a fact, and the key pairs joins above it prune it by:
    ``(fact column, build-side relation, build column as the join names it)``."""

    read: Any                                  # the Relation message (replaced in place)
    name: str                                  # the table's name in dpp
    pairs: list[tuple[str, Any, str]] = field(default_factory=list)
    key: Any = None                            # (plan_id, serialized read)


def _relation_children(rel: Any) -> list[Any]:
    """The Relation messages directly under ``rel`` (through any message nesting)."""
    out: list[Any] = []

    def walk(msg: Any) -> None:
        for fd, value in msg.ListFields():
            if fd.message_type is None:
                continue
            # a singular message, or a repeated field / map (its values, when messages)
            values = [value] if hasattr(value, "DESCRIPTOR") else (
                list(value.values()) if hasattr(value, "values") else list(value))
            for v in values:
                if not hasattr(v, "DESCRIPTOR"):
                    continue
                if v.DESCRIPTOR.full_name == "spark.connect.Relation":
                    out.append(v)
                else:
                    walk(v)
    kind = rel.WhichOneof("rel_type")
    if kind is not None:
        walk(getattr(rel, kind))
    return out


def _all_messages(msg: Any) -> Iterator[Any]:
    """``msg`` and every message inside it (repeated fields and maps too), depth first."""
    stack = [msg]
    while stack:
        m = stack.pop()
        yield m
        for fd, value in m.ListFields():
            if fd.message_type is None:
                continue
            values = [value] if hasattr(value, "DESCRIPTOR") else (
                list(value.values()) if hasattr(value, "values") else list(value))
            stack.extend(v for v in values if hasattr(v, "DESCRIPTOR"))


def _all_relations(msg: Any) -> Iterator[Any]:
    """Every Relation message in ``msg`` (a Relation, a Command, any message), depth first."""
    return (m for m in _all_messages(msg) if m.DESCRIPTOR.full_name == "spark.connect.Relation")


def _name_parts(ident: str) -> Optional[list[str]]:
    """``a.b`` → ["a", "b"], with backquoted parts taken whole (```a.b``` is one name);
    None for text that is not a dotted name."""
    parts: list[str] = []
    cur, i, n = "", 0, len(ident)
    quoted_part = False
    while i < n:
        ch = ident[i]
        if ch == "`":
            j = i + 1
            buf = ""
            while j < n:
                if ident[j] == "`":
                    if j + 1 < n and ident[j + 1] == "`":
                        buf += "`"
                        j += 2
                        continue
                    break
                buf += ident[j]
                j += 1
            else:
                return None
            cur += buf
            quoted_part = True
            i = j + 1
        elif ch == ".":
            if not cur and not quoted_part:
                return None
            parts.append(cur)
            cur, quoted_part = "", False
            i += 1
        else:
            cur += ch
            i += 1
    if not cur and not quoted_part:
        return None
    parts.append(cur)
    return parts


def _reference(expr: Any) -> Optional[tuple[Optional[str], str, Optional[int]]]:
    """A column reference as ``(qualifier, name, plan_id)``: ``col("k")`` and ``df["k"]``
    (no qualifier), ``col("f.k")`` (qualifier ``f``, to be checked against the aliases of
    the plan: it may as well be field ``k`` of a struct column ``f``). None for anything
    else, and for a dotted name with a ``plan_id`` (``f["meta.day"]``: a nested field)."""
    if expr.WhichOneof("expr_type") != "unresolved_attribute":
        return None
    ua = expr.unresolved_attribute
    parts = _name_parts(ua.unparsed_identifier)
    pid = ua.plan_id if ua.HasField("plan_id") else None
    if parts is None or len(parts) > 2 or (len(parts) == 2 and pid is not None):
        return None
    if len(parts) == 1:
        return None, parts[0], pid
    return parts[0], parts[1], None


def _attribute(expr: Any) -> Optional[str]:
    """The column name of a plain, unqualified column reference, or None."""
    ref = _reference(expr)
    return ref[1] if ref is not None and ref[0] is None else None


def _equalities(cond: Any) -> Optional[list[tuple[Any, Any]]]:
    """The pairs of a conjunction of ``a == b`` column references, or None if it is not one."""
    if cond.WhichOneof("expr_type") != "unresolved_function":
        return None
    fn = cond.unresolved_function
    if fn.function_name == "and" and len(fn.arguments) == 2:
        left, right = _equalities(fn.arguments[0]), _equalities(fn.arguments[1])
        return None if left is None or right is None else left + right
    if fn.function_name == "==" and len(fn.arguments) == 2:
        return [(fn.arguments[0], fn.arguments[1])]
    return None


def _plan_ids(rel: Any) -> set[int]:
    """Every ``plan_id`` in the subtree of ``rel`` (a column reference names one of them)."""
    ids = {rel.common.plan_id} if rel.HasField("common") else set()
    for child in _relation_children(rel):
        ids |= _plan_ids(child)
    return ids


def _aliases(rel: Any) -> set[str]:
    """Every ``alias(...)`` name (lower case) in the subtree of ``rel``."""
    return {r.subquery_alias.alias.lower() for r in _all_relations(rel)
            if r.WhichOneof("rel_type") == "subquery_alias"}


def _output_keeps(rel: Any, column: str) -> Optional[tuple[Any, Optional[int]]]:
    """The relation under ``rel`` whose column ``column`` reaches ``rel``'s output as it is,
    descending one node, and the ``plan_id`` the projection names it by (``df["k"]`` in a
    ``select``), if any; None when ``rel`` renames, computes or drops it."""
    kind = rel.WhichOneof("rel_type")
    low = column.lower()
    if kind in ("filter", "subquery_alias", "hint"):
        return getattr(rel, kind).input, None
    if kind == "project":
        star = False
        for e in rel.project.expressions:
            et = e.WhichOneof("expr_type")
            if et == "unresolved_star":
                star = True
                continue
            name = _attribute(e)
            if name is not None and name.lower() == low:
                ua = e.unresolved_attribute
                return rel.project.input, (ua.plan_id if ua.HasField("plan_id") else None)
        return (rel.project.input, None) if star else None
    if kind == "with_columns":
        for alias in rel.with_columns.aliases:
            if any(n.lower() == low for n in alias.name):
                return None
        return rel.with_columns.input, None
    return None


def _read_key(rel: Any) -> tuple[Optional[int], bytes]:
    return (rel.common.plan_id if rel.HasField("common") else None,
            rel.read.SerializeToString())


def _read_counts(root: Any) -> "collections.Counter[Any]":
    """How many times each read (by ``plan_id`` and content) occurs under ``root``."""
    return collections.Counter(_read_key(r) for r in _all_relations(root)
                               if r.WhichOneof("rel_type") == "read")


def _ancestors(root: Any, key: Any) -> list[Any]:
    """The relations from ``root`` down to the read ``key`` (both included)."""
    path: list[Any] = []

    def walk(rel: Any) -> bool:
        path.append(rel)
        if rel.WhichOneof("rel_type") == "read" and _read_key(rel) == key:
            return True
        for child in _relation_children(rel):
            if walk(child):
                return True
        path.pop()
        return False

    walk(root)
    return path


def _sql_deterministic(text: str, query: bool) -> bool:
    """Whether SQL text (an expression, or a query when ``query``) is free of functions and
    clauses whose value is drawn per run. Text sqlglot cannot read is not."""
    import sqlglot
    from sqlglot import exp

    from dpp.pushdown import deterministic

    try:
        tree = (sqlglot.parse_one(text, read="spark") if query
                else sqlglot.parse_one(f"SELECT {text}", read="spark"))
    except Exception:
        return False
    if tree is None or not deterministic(tree, prune_rules.RERUN_FUNCTIONS):
        return False
    return not any(True for _ in tree.find_all(exp.Limit, exp.Offset, exp.TableSample))


def deterministic_relation(rel: Any) -> bool:
    """Whether the plan ``rel`` gives the same rows when run again (a build side is run
    once more, on its own, for the filter): no sampling or limit, no function drawn per run
    (by name, or inside SQL text: ``where("rand() < 0.5")``, ``spark.sql(...)``), no
    nondeterministic UDF."""
    for r in _all_relations(rel):
        kind = r.WhichOneof("rel_type")
        if kind in _UNREPEATABLE:
            return False
        if kind == "sql" and not _sql_deterministic(r.sql.query, query=True):
            return False
    for m in _all_messages(rel):
        name = m.DESCRIPTOR.full_name
        if name == "spark.connect.Expression":
            et = m.WhichOneof("expr_type")
            if et == "expression_string" and not _sql_deterministic(
                    m.expression_string.expression, query=False):
                return False
            if et == "unresolved_function" and (
                    m.unresolved_function.function_name.lower() in prune_rules.RERUN_FUNCTIONS):
                return False
            if et == "call_function" and (
                    m.call_function.function_name.lower() in prune_rules.RERUN_FUNCTIONS):
                return False
            if et == "common_inline_user_defined_function" and (
                    not m.common_inline_user_defined_function.deterministic):
                return False
    return True


def _overlaps(a: str, b: str) -> bool:
    """Whether folder ``a`` is, holds or lies in folder ``b`` (local paths, real paths)."""
    from hive_splits.table import local_path

    x = os.path.realpath(local_path(a)).rstrip("/") + "/"
    y = os.path.realpath(local_path(b)).rstrip("/") + "/"
    return x.startswith(y) or y.startswith(x)


class ConnectFrames:
    """The client-side interception of one enabled Connect session (module docstring)."""

    def __init__(self, session: "DppSession") -> None:
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
        t0 = time.perf_counter()
        report = JobReport.start(
            query_text="DataFrame plan (Spark Connect): " + "; ".join(
                f"{f.name} joined on {[(a, b) for a, _, b in f.pairs]}" for f in facts),
            kind="plan", settings=cfg.as_settings(), enabled=True)
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
            elif any(not deterministic_relation(rel) for _, rel, _ in fact.pairs):
                why = ("a build side is not deterministic (random or per-run functions, "
                       "sampling or a limit): running it again could give other keys")
            elif target is not None:
                table = self.session.catalog.table(fact.name, {})
                if table is None or not table.location or _overlaps(target, table.location):
                    why = ("the write's target path is, holds or lies in the table's folder: "
                           "Spark must see the table it overwrites")
            if why is None:
                why = self._cached(root, fact)
            if why is not None:
                report.add_table_unpruned(fact.name, None, f"DataFrame plan sent as built: {why}")
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
                    report.add_table_unpruned(name, None, "Spark rejected the rewritten "
                                              f"DataFrame plan, sent as built: {exc}")
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
        from dpp.decision import table_columns

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
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
        import pyspark.sql.connect.proto as proto

        from dpp.core.remote import functions_for
        from dpp.core.spark_rules import SparkRules
        from dpp.join import pruned_fact

        s = self.session
        report = self._report
        F = functions_for(s.spark)
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
                pairs = []
                for i, (fcol, rel, dref) in enumerate(fact.pairs):
                    key = f"__dpp_key_{i}"
                    build = ConnectDataFrame(_Relation(rel), s.spark).select(
                        F.col(dref).alias(key))
                    pairs.append((fcol, build, key))
                fact_df = pruned_fact(s, fact.name, table, pairs, cfg, rules, report,
                                      sized=True)
                got = fact_df.schema
                if [(f.name, f.dataType) for f in got.fields] != \
                        [(f.name, f.dataType) for f in want.fields]:
                    s.connect.release_global(fact_df)
                    report.tables = [t for t in report.tables if t.table != fact.name]
                    report.add_table_unpruned(
                        fact.name, None, "DataFrame plan sent as built: Spark resolves the "
                        f"read as {want.simpleString()}, the pruned relation as "
                        f"{got.simpleString()}")
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
                report.add_table_unpruned(fact.name, None, f"DataFrame plan not pruned: {exc}")
        return report


class _Relation:
    """A Connect ``LogicalPlan`` over an existing Relation message (a build side: the other
    side of a join, as the user built it)."""

    def __init__(self, rel: Any) -> None:
        from pyspark.sql.connect.plan import LogicalPlan

        self._rel = rel
        self.__class__ = type("_RelationPlan", (_Relation, LogicalPlan), {})
        LogicalPlan.__init__(self, None)  # type: ignore[arg-type]

    def plan(self, session: Any) -> Any:
        import pyspark.sql.connect.proto as proto

        out = proto.Relation()
        out.CopyFrom(self._rel)
        return out


def find_fact_joins(root: Any, fact_of: Any) -> list[FactRead]:
    """The fact reads under ``root`` with the join keys that prune them (module docstring).

    ``fact_of(read)``: ``(name, columns, partition columns)`` (lower case) of the dpp table
    a ``Read`` message reads whole, or None. Only keys on partition columns are kept. Build
    sides are copies (the tree is changed afterwards); the build column is as the join
    names it (``d.k`` for an alias-qualified key), to be selected from the build side."""
    import pyspark.sql.connect.proto as proto

    found: dict[Any, FactRead] = {}
    known: dict[bytes, Optional[tuple[str, set[str], set[str]]]] = {}

    def fact_name(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
        key = read.SerializeToString()
        if key not in known:
            known[key] = fact_of(read)
        return known[key]

    def fact_side(rel: Any, column: str, pid: Optional[int] = None,
                  must_find: bool = False, depth: int = 0,
                  qual: Optional[str] = None) -> Optional[Any]:
        """The fact's Read relation that column ``column`` of ``rel`` is, or None.

        ``pid``: the plan id the column is named by (``df["k"]``); ``qual``: the alias
        qualifying it (``col("f.k")``); ``must_find``: that node (or that alias) must still
        be met on the way down. Below a join a bare name could be the other side's column,
        so a join is crossed only by a column named by a plan id or an alias, and that node
        must lie below every join crossed (on the fact's own side)."""
        if depth > 64:
            return None
        if pid is not None and rel.HasField("common") and rel.common.plan_id == pid:
            must_find = False
        kind = rel.WhichOneof("rel_type")
        if qual is not None and kind == "subquery_alias":
            if rel.subquery_alias.alias.lower() != qual:
                return None if must_find else fact_side(rel.subquery_alias.input, column,
                                                        pid, False, depth + 1)
            return fact_side(rel.subquery_alias.input, column, pid, False, depth + 1)
        if kind == "read":
            return rel if not must_find and fact_name(rel.read) is not None else None
        if kind == "join":
            if pid is None and qual is None:
                return None
            j = rel.join
            # through a join that keeps the fact side's rows as they are (or drops some)
            sides = []
            if j.join_type in (_INNER, _CROSS, _LEFT, _SEMI, _ANTI):
                sides.append(j.left)
            if j.join_type in (_INNER, _CROSS, _RIGHT):
                sides.append(j.right)
            for side in sides:
                if pid is not None and pid not in _plan_ids(side):
                    continue
                if qual is not None:
                    other = j.right if side is j.left else j.left
                    if qual not in _aliases(side) or qual in _aliases(other):
                        continue
                got = fact_side(side, column, pid, True, depth + 1, qual)
                if got is not None:
                    return got
            return None
        below = _output_keeps(rel, column)
        if below is None:
            return None
        child, named_by = below
        if named_by is not None:   # select(df["k"]): the column is that node's
            pid, must_find = named_by, True
        return fact_side(child, column, pid, must_find, depth + 1, qual)

    def visit(rel: Any) -> None:
        if rel.WhichOneof("rel_type") == "join":
            consider(rel.join)
        for child in _relation_children(rel):
            visit(child)

    def consider(j: Any) -> None:
        # (fact-side name, qualifier, plan id, build-side name as the join names it) for
        # each side the key may come from
        pairs: list[tuple[tuple[Optional[str], str, Optional[int]],
                          tuple[Optional[str], str, Optional[int]], Any, Any]] = []
        using = bool(j.using_columns)
        if using:
            pairs = [((None, c, None), (None, c, None), None, None) for c in j.using_columns]
        elif j.HasField("join_condition"):
            eqs = _equalities(j.join_condition)
            if eqs is None:
                return
            for a, b in eqs:
                ra, rb = _reference(a), _reference(b)
                if ra is None or rb is None:
                    return
                pairs.append((ra, rb, a, b))
        if not pairs:
            return
        # which side may be pruned by the other: the one whose unmatched rows are dropped
        prunable = _PRUNABLE_SIDES.get(j.join_type, ())
        left_ids: Optional[set[int]] = None
        for side in prunable:
            probe, build = (j.left, j.right) if side == "left" else (j.right, j.left)
            for ra, rb, _ea, _eb in pairs:
                (qa, na, pa), (qb, nb, pb) = ra, rb
                if using:
                    # USING resolves the name on each side separately
                    read = fact_side(probe, na)
                    fref, dref = ra, rb
                elif qa is not None or qb is not None:
                    got = _by_alias(probe, build, ra, rb)
                    if got is None:
                        continue
                    read, fref, dref = got
                elif pa is not None or pb is not None:
                    if left_ids is None:
                        left_ids = _plan_ids(j.left)
                    a_left = pa in left_ids if pa is not None else pb not in left_ids
                    # the attribute of the probe side, the build side's
                    fref, dref = (ra, rb) if (side == "left") == a_left else (rb, ra)
                    read = fact_side(probe, fref[1], fref[2], fref[2] is not None)
                else:
                    # unqualified names: the fact's column is the one its table has (Spark
                    # resolves each name on the side that has it)
                    oriented = _orient(probe, na, nb)
                    if oriented is None:
                        continue
                    fref, dref = oriented
                    read = fact_side(probe, fref[1])
                if read is None:
                    continue
                fcol = fref[1]
                name, columns, partitions = fact_name(read.read)   # type: ignore[misc]
                if fcol.lower() not in partitions:   # partition pruning only
                    continue
                if fref[0] is not None and fref[0].lower() in columns:
                    continue   # f.k could be field k of a struct column f
                key = _read_key(read)
                entry = found.get(key)
                if entry is None:
                    entry = found[key] = FactRead(read, name, key=key)
                copy = proto.Relation()
                copy.CopyFrom(build)
                dname = dref[1] if dref[0] is None else f"`{dref[0]}`.`{dref[1]}`"
                entry.pairs.append((fcol, copy, dname))

    def _by_alias(probe: Any, build: Any, ra: Any, rb: Any) -> Optional[tuple[Any, Any, Any]]:
        """Alias-qualified keys (``col("f.k") == col("d.k")``): the probe's is the one whose
        alias is met only on the probe side, the other's only on the build side."""
        pa_, ba_ = _aliases(probe), _aliases(build)
        got = []
        for f, d in ((ra, rb), (rb, ra)):
            if f[0] is None or f[0].lower() not in pa_ or f[0].lower() in ba_:
                continue
            if d[0] is None or d[0].lower() not in ba_ or d[0].lower() in pa_:
                continue   # both keys qualified, each by an alias of its own side only
            read = fact_side(probe, f[1], None, True, 0, f[0].lower())
            if read is not None:
                got.append((read, f, d))
        return got[0] if len(got) == 1 else None

    def _orient(probe: Any, na: str, nb: str) -> Optional[tuple[Any, Any]]:
        got = []
        for f, d in ((na, nb), (nb, na)):
            read = fact_side(probe, f)
            if read is not None:
                cols = fact_name(read.read)[1]   # type: ignore[index]
                if f.lower() in cols and d.lower() not in cols:
                    got.append(((None, f, None), (None, d, None)))
        return got[0] if len(got) == 1 else None

    visit(root)
    return list(found.values())
