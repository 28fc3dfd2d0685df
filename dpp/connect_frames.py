"""Spark Connect: DataFrame-API star joins pruned by rewriting the plan the client sends.

A Connect client has no JVM, so there is no optimizer to hook. But a Connect DataFrame *is*
its plan: a protobuf tree (``spark.connect.Relation``) that the client builds and sends with
every action (``collect``, ``toArrow``, ``toPandas``, ``write…``). :class:`ConnectFrames`
wraps the one method every action goes through
(``SparkConnectClient._execute_and_fetch_as_iterator``) on the enabled session's own client
and, before the plan leaves the client, looks in it for the star shape::

    fact.join(dim.where(...), fact.key == dim.key)          # or on="key", any side order

where ``fact`` is, under Filter / Project / SubqueryAlias / WithColumns nodes that keep the
key column as it is (and through other joins that keep the fact's rows), a ``Read`` of a
table dpp knows: ``spark.table(name)`` of a partitioned catalog table, or
``spark.read.parquet(folder)`` of a folder declared as ``spark.dpp.tables.<name>``. For each
such fact read, every equi-join key pair on a partition column gives a dynamic filter whose
build side is the other side of that join — its own plan, run by Spark as an aggregation and
collected with ``toArrow()`` (:meth:`dpp.session.DppSession._pruned_fact`, as ``dpp.join``
does) — and the read is replaced, in place and under its own ``plan_id`` (so ``fact["col"]``
references still resolve), by a temporary view of the pruned relation (sized as the table,
as a ``spark.sql`` query's is), dropped when the action is done.

Soundness: a fact row whose key matches no row of the other side cannot reach the output of
an inner or semi join, nor pass a join above it on the same key; only join types that drop
such rows are used (inner, left semi with the fact on the left, right/left outer with the
fact on the dropping side). Anything the walk does not recognise is left exactly as the user
built it, and a failure anywhere sends the original plan (logged, and said in the report).

Actions another thread starts while a plan is being rewritten go out as built (one rewrite
at a time: the build sides' own actions, on dpp's worker threads, must not be rewritten).

What it does not do (yet): DataFrames over declared path tables by name (a declared table has
no Spark view until a ``spark.sql`` query makes one), a fact read with options or a schema of
its own, joins whose condition is not a conjunction of column equalities, temporary views
made from DataFrames (``createOrReplaceTempView``: a view is stored unpruned and pruned when a
query reads it through ``spark.sql``).
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional

from dpp.core.errors import ConfigError
from dpp.report import JobReport
from dpp.views import norm_name

if TYPE_CHECKING:  # pragma: no cover
    from dpp.session import DppSession

__all__ = ["ConnectFrames", "FactRead", "find_fact_joins"]

log = logging.getLogger(__name__)

_VIEW_PREFIX = "__dpp_frame_"

# Join.JoinType values (spark/connect/relations.proto)
_INNER, _FULL, _LEFT, _RIGHT, _ANTI, _SEMI, _CROSS = 1, 2, 3, 4, 5, 6, 7


@dataclass
class FactRead:
    """A ``Read`` relation of a fact, and the key pairs joins above it prune it by:
    ``(fact column, build-side relation, build column)``."""

    read: Any                                  # the Relation message (replaced in place)
    name: str                                  # the table's name in dpp
    pairs: list[tuple[str, Any, str]] = field(default_factory=list)


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


def _attribute(expr: Any) -> Optional[str]:
    """The column name of a plain column reference (``col("k")``, ``df["k"]``), or None."""
    if expr.WhichOneof("expr_type") != "unresolved_attribute":
        return None
    ident = expr.unresolved_attribute.unparsed_identifier
    if "." in ident.strip("`") and not ident.startswith("`"):
        ident = ident.split(".")[-1]      # df.alias("f") then "f.k": the column k
    return ident.strip("`")


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


class ConnectFrames:
    """The plan rewrite of one enabled Connect session (see the module docstring)."""

    def __init__(self, session: "DppSession") -> None:
        self.session = session
        self.client = session.spark.client
        self._original = self.client._execute_and_fetch_as_iterator
        self._busy = threading.Lock()
        self.client._execute_and_fetch_as_iterator = self._execute   # instance attribute

    def uninstall(self) -> None:
        if vars(self.client).get("_execute_and_fetch_as_iterator") == self._execute:
            del self.client._execute_and_fetch_as_iterator

    # ------------------------------------------------------------------ interception
    def _execute(self, req: Any, observations: Any, progress: Any = None,
                 *args: Any, **kwargs: Any) -> Iterator[Any]:
        views: list[str] = []
        # dpp's own actions while a plan is rewritten (build sides run on other threads,
        # the pruned relation's views) go out as they are
        if self._busy.acquire(blocking=False):
            try:
                self._rewrite_request(req, views)
            except Exception as exc:   # the user's plan, unchanged: never a failed action
                log.warning("dpp: Spark Connect DataFrame plan not pruned: %s", exc)
            finally:
                self._busy.release()
        try:
            yield from self._original(req, observations, progress, *args, **kwargs)
        finally:
            self._drop(views)

    def _rewrite_request(self, req: Any, views: list[str]) -> None:
        plan = req.plan
        kind = plan.WhichOneof("op_type")
        if kind == "root":
            root = plan.root
        elif kind == "command" and plan.command.WhichOneof("command_type") in (
                "write_operation", "write_operation_v2"):
            root = getattr(plan.command, plan.command.WhichOneof("command_type")).input
        else:
            return
        facts = find_fact_joins(root, self._fact_of)
        if not facts:
            return
        cfg = self.session.config
        if not cfg.enabled:
            return
        saved = type(plan)()
        saved.CopyFrom(plan)
        t0 = time.perf_counter()
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
        self.session._finish(None, report, cfg, t0, execute=False)  # type: ignore[arg-type]

    def _drop(self, views: list[str]) -> None:
        for v in views:
            try:
                self.session.spark.catalog.dropTempView(v)
            except Exception:  # pragma: no cover - the session may be closed
                log.debug("dropping %s failed", v, exc_info=True)

    # ------------------------------------------------------------------ the facts
    def _fact_of(self, read: Any) -> Optional[tuple[str, set[str], set[str]]]:
        """The dpp table a ``Read`` reads whole, its columns and its partition columns
        (lower case), or None."""
        from dpp.decision import table_columns

        rt = read.WhichOneof("read_type")
        if read.is_streaming:
            return None
        name: Optional[str] = None
        if rt == "named_table" and not read.named_table.options:
            name = read.named_table.unparsed_identifier
        elif rt == "data_source":
            ds = read.data_source
            if (ds.format or "parquet").lower() == "parquet" and not ds.schema \
                    and not ds.options and not ds.predicates and len(ds.paths) == 1:
                name = self._declared_at(ds.paths[0])
        if name is None:
            return None
        table = self.session._table(name, {})
        if table is None or not table.partition_columns:
            return None
        return (norm_name(name), {c.lower() for c, _ in table_columns(table)},
                {c.name.lower() for c in table.partition_columns})

    def _declared_at(self, path: str) -> Optional[str]:
        """The declared table (``spark.dpp.tables.<name>``) whose folder is ``path``."""
        from hive_splits.table import local_path

        want = local_path(path).rstrip("/")
        with self.session._lock:
            tables = dict(self.session._tables)
        for key, table in tables.items():
            if (table.location.rstrip("/") == want and table.partition_columns
                    and not table.is_catalog):
                return key
        return None

    def _prune(self, facts: list[FactRead], cfg: Any, views: list[str]) -> JobReport:
        """Each fact read replaced by a view of its pruned relation; one report (finished
        by the caller)."""
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

        from dpp.core.spark_rules import SparkRules

        s = self.session
        rules = SparkRules.from_spark(s.spark)
        report = JobReport.start(
            query_text="DataFrame plan (Spark Connect): " + "; ".join(
                f"{f.name} joined on {[(a, b) for a, _, b in f.pairs]}" for f in facts),
            kind="plan", settings=cfg.as_settings(), enabled=True)
        s._remote_notes(cfg, report)
        for fact in facts:
            try:
                table = s._table(fact.name, {})
                if table is None:
                    raise ConfigError(f"table {fact.name!r} is no longer known to dpp")
                pairs = [(fcol, ConnectDataFrame(_Relation(rel), s.spark), dcol)
                         for fcol, rel, dcol in fact.pairs]
                fact_df = s._pruned_fact(fact.name, table, pairs, cfg, rules, report,
                                         sized=True)
                view = f"{_VIEW_PREFIX}{uuid.uuid4().hex[:12]}"
                fact_df.createOrReplaceTempView(view)
                s._release_global(fact_df)
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
    a ``Read`` message reads whole, or None. Only keys on partition columns are kept. Build sides are copies (the tree is changed afterwards)."""
    import pyspark.sql.connect.proto as proto

    found: dict[Any, FactRead] = {}
    known: dict[bytes, Optional[tuple[str, set[str], set[str]]]] = {}

    def fact_name(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
        key = read.SerializeToString()
        if key not in known:
            known[key] = fact_of(read)
        return known[key]

    def fact_side(rel: Any, column: str, pid: Optional[int] = None,
                  must_find: bool = False, depth: int = 0) -> Optional[Any]:
        """The fact's Read relation that column ``column`` of ``rel`` is, or None.

        ``pid``: the plan id the column is named by (``df["k"]``); ``must_find``: that node
        must still be met on the way down. Below a join a bare name could be the other
        side's column, so a join is crossed only by a column named by a plan id, and that
        node must lie below every join crossed (on the fact's own side)."""
        if depth > 64:
            return None
        if pid is not None and rel.HasField("common") and rel.common.plan_id == pid:
            must_find = False
        kind = rel.WhichOneof("rel_type")
        if kind == "read":
            return rel if not must_find and fact_name(rel.read) is not None else None
        if kind == "join":
            if pid is None:
                return None
            j = rel.join
            # through a join that keeps the fact side's rows as they are (or drops some)
            sides = []
            if j.join_type in (_INNER, _CROSS, _LEFT, _SEMI, _ANTI):
                sides.append(j.left)
            if j.join_type in (_INNER, _CROSS, _RIGHT):
                sides.append(j.right)
            for side in sides:
                if pid not in _plan_ids(side):
                    continue
                got = fact_side(side, column, pid, True, depth + 1)
                if got is not None:
                    return got
            return None
        below = _output_keeps(rel, column)
        if below is None:
            return None
        child, named_by = below
        if named_by is not None:   # select(df["k"]): the column is that node's
            pid, must_find = named_by, True
        return fact_side(child, column, pid, must_find, depth + 1)

    def visit(rel: Any) -> None:
        if rel.WhichOneof("rel_type") == "join":
            consider(rel.join)
        for child in _relation_children(rel):
            visit(child)

    def consider(j: Any) -> None:
        pairs: list[tuple[Optional[str], Optional[str], Optional[int], Optional[int]]] = []
        if j.using_columns:
            pairs = [(c, c, None, None) for c in j.using_columns]
        elif j.HasField("join_condition"):
            eqs = _equalities(j.join_condition)
            if eqs is None:
                return
            for a, b in eqs:
                na, nb = _attribute(a), _attribute(b)
                if na is None or nb is None:
                    return
                pa = a.unresolved_attribute.plan_id if a.unresolved_attribute.HasField(
                    "plan_id") else None
                pb = b.unresolved_attribute.plan_id if b.unresolved_attribute.HasField(
                    "plan_id") else None
                pairs.append((na, nb, pa, pb))
        if not pairs:
            return
        # which side may be pruned by the other: the one whose unmatched rows are dropped
        prunable = {_INNER: ("left", "right"), _SEMI: ("left",), _RIGHT: ("left",),
                    _LEFT: ("right",)}.get(j.join_type, ())
        left_ids: Optional[set[int]] = None
        for side in prunable:
            probe, build = (j.left, j.right) if side == "left" else (j.right, j.left)
            for na, nb, pa, pb in pairs:
                if pa is not None or pb is not None:
                    if left_ids is None:
                        left_ids = _plan_ids(j.left)
                    a_left = pa in left_ids if pa is not None else pb not in left_ids
                    # the attribute of the probe side, the build side's
                    if (side == "left") == a_left:
                        fcol, dcol, fpid = na, nb, pa
                    else:
                        fcol, dcol, fpid = nb, na, pb
                else:
                    # unqualified names: the fact's column is the one its table has (Spark
                    # resolves each name on the side that has it)
                    fcol, dcol = _orient(probe, na, nb)
                    fpid = None
                    if fcol is None:
                        continue
                read = fact_side(probe, fcol, fpid, fpid is not None)
                if read is None:
                    continue
                name, _columns, partitions = fact_name(read.read)   # type: ignore[misc]
                if fcol.lower() not in partitions:   # partition pruning only
                    continue
                key = (read.common.plan_id if read.HasField("common") else None,
                       read.SerializeToString())
                entry = found.get(key)
                if entry is None:
                    entry = found[key] = FactRead(read, name)
                copy = proto.Relation()
                copy.CopyFrom(build)
                entry.pairs.append((fcol, copy, dcol))

    def _orient(probe: Any, na: str, nb: str) -> tuple[Optional[str], Optional[str]]:
        got = []
        for f, d in ((na, nb), (nb, na)):
            read = fact_side(probe, f)
            if read is not None:
                cols = fact_name(read.read)[1]   # type: ignore[index]
                if f.lower() in cols and d.lower() not in cols:
                    got.append((f, d))
        return got[0] if len(got) == 1 else (None, None)

    visit(root)
    return list(found.values())
