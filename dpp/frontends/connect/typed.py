"""A Spark Connect client's plan as the typed plan the pruning rules read.

A Connect DataFrame is an unresolved protobuf tree (``spark.connect.Relation``): columns are
names, qualified at most by an alias (``col("f.k")``) or by the plan id of the DataFrame
they were taken from (``df["k"]``). :func:`translate` resolves those names as Spark would
where that is unambiguous and writes the tree as a :class:`dpp.analysis.plan_wire.PlanMessage`, so
that :func:`dpp.analysis.plan_pairs.find_prunes` decides which relation may be pruned by which build
side, exactly as it does for the optimizer hook's plan.

Resolution, conservatively: a ``Read`` that ``fact_of`` knows has its table's columns; any
other leaf (a table dpp does not know, a local relation, a ``spark.sql`` query, an operator
this module does not model) has whichever columns are asked of it ("open"). A name matching a
known column is that column (Spark refuses a name two sides of a join both have, so an open
side cannot have it too); otherwise it is the column of the one open side that may hold it.
A name that matches two columns, or could come from two open sides, or whose qualifier could
be a struct column, gets a fresh id that no node outputs, and prunes nothing.

Relations that rename, drop or reorder columns (``withColumnsRenamed``, ``drop``, ``toDF``)
are the ``Project`` Spark's analyzer makes of them; set operations and grouping sets are in
:mod:`dpp.frontends.connect.setops`, the nodes being built in :mod:`dpp.frontends.connect.nodes`. A translation
by position (``toDF``, ``union``) needs the child's columns in Spark's order
(``Node.ordered``): a ``Read`` of a dpp table is known as a set of columns, not in its
schema's order, so such a translation over it is opaque.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Optional

from dpp.frontends.connect import setops as connect_setops
from dpp.analysis import rules as prune_rules
from dpp.frontends.connect.proto import (SPARK_OPS, equalities, node_nondeterminism, reference,
                                         relation_children, selective, sql_filters,
                                         window_calls)
from dpp.frontends.connect.nodes import Col, Node
from dpp.analysis.plan_wire import WIRE_VERSION, PlanMessage, check_plan

__all__ = ["TypedPlan", "translate"]

# Join.JoinType values (spark/connect/relations.proto) as Spark's JoinType.sql
_JOIN_TYPES = {1: "INNER", 2: "FULL OUTER", 3: "LEFT OUTER", 4: "RIGHT OUTER",
               5: "LEFT ANTI", 6: "LEFT SEMI", 7: "CROSS"}
# relations that pass every column of their input through unchanged, as the rules name them
_PASS = SPARK_OPS
FactOf = Callable[[Any], Optional[tuple[str, set[str], set[str]]]]


# ====================================================================== the typed plan

@dataclass
class TypedPlan:
    """The typed plan of a Connect tree, with what links it back to the protobuf."""

    message: PlanMessage
    relations: dict[int, Any]                        # node id -> Relation message
    facts: dict[int, tuple[str, set[str], set[str]]]   # node id -> fact_of's answer
    # key expr id -> (the join side's node id, the column as the join names it, its attr)
    keys: dict[int, tuple[int, str, int]]
    outputs: dict[int, list[Col]]

    def build_column(self, build_node: int, build_expr: int) -> Optional[str]:
        """The name to select the build key by from ``build_node``: as the join names it
        there, or below it (a narrowed build side) the one column of that attribute."""
        side, written, attr = self.keys[build_expr]
        if side == build_node:
            return written
        names = [c.name for c in self.outputs[build_node] if c.id == attr]
        if not names or sum(c.name.lower() == names[0].lower()
                            for c in self.outputs[build_node]) != 1:
            return None
        return names[0]


class _Translator:
    def __init__(self, fact_of: FactOf) -> None:
        self.fact_of = fact_of
        self._ids = itertools.count(1)
        self._exprs = itertools.count(1)
        self.nodes: list[Node] = []
        self.facts: dict[int, tuple[str, set[str], set[str]]] = {}
        self.keys: dict[int, tuple[int, str, int]] = {}

    def fresh(self) -> int:
        return next(self._exprs)

    def col(self, name: str) -> Col:
        """A new attribute (a computed or NULL column, or a set operation's output)."""
        return Col(self.fresh(), name, frozenset())

    def node(self, op: str, kids: list[Node], rel: Any, **extra: Any) -> Node:
        n = Node(next(self._ids), op, kids, rel, extra=extra)
        for k in kids:
            for pid, holder in k.pids.items():
                n.pids[pid] = None if pid in n.pids else holder
        pid = rel.common.plan_id if rel is not None and rel.HasField("common") \
            and rel.common.HasField("plan_id") else None
        if pid is not None:
            n.pids[pid] = None if pid in n.pids else n
        self.nodes.append(n)
        return n

    def passing(self, op: str, child: Node, rel: Any, **extra: Any) -> Node:
        """A node whose columns are its child's."""
        n = self.node(op, [child], rel, **extra)
        n.cols, n.links, n.ordered = list(child.cols), [child], child.ordered
        return n

    # ------------------------------------------------------------------ names
    def provide(self, n: Node, name: str, qual: Optional[str],
                target: Optional[int] = None) -> Optional[Col]:
        """The column ``name`` of open node ``n`` (on the way to the node of plan id
        ``target``), made where it comes from and passed up to ``n``."""
        if target is not None and n.pids.get(target) is n:
            target = None
        if n.leaf_open and target is None:
            if qual is not None:
                return None
            col = Col(self.fresh(), name, frozenset())
            n.cols.append(col)
            return col
        if name in n.shadow:
            return None
        q = qual
        if n.alias is not None:
            if qual is not None and qual != n.alias:
                return None
            q = None
        if target is not None:
            below = [c for c in n.links if target in c.pids]
        else:
            below = [c for c in n.links if c.may_have(name, q)]
        if len(below) == 1:
            got = self.provide(below[0], name, q, target)
            if got is None:
                return None
            col = got._replace(quals=frozenset({n.alias})) if n.alias is not None else got
            if "map" in n.extra:
                n.extra["map"].append([col.id, got.id])
        elif below and target is None:   # two open sides: a column of unknown origin
            col = Col(self.fresh(), name, frozenset())
        else:
            return None
        n.cols.append(col)
        return col

    def resolve(self, scope: list[Node], ref: Optional[tuple[list[str], Optional[int]]]
                ) -> Optional[Col]:
        """The column a reference names among the outputs of ``scope``, or None."""
        if ref is None or len(ref[0]) > 2:
            return None
        parts, pid = ref
        name = parts[-1].lower()
        qual = parts[0].lower() if len(parts) == 2 else None
        if pid is not None:
            if qual is not None:     # df["s.f"]: a nested field
                return None
            held = [(s, s.pids[pid]) for s in scope if pid in s.pids]
            if len(held) != 1 or held[0][1] is None:
                return None
            side, target = held[0]
            known = [c for c in target.cols if c.name.lower() == name]
            if len(known) > 1:
                return None
            if known:
                return known[0] if any(c.id == known[0].id for c in side.cols) else None
            return self.provide(side, name, None, pid) if target.may_have(name, None) else None
        cols = [c for s in scope for c in s.cols]
        if qual is not None and any(c.name.lower() == qual for c in cols):
            return None              # f.k could be field k of a struct column f
        known = {c.id: c for c in cols
                 if c.name.lower() == name and (qual is None or qual in c.quals)}
        if len(known) == 1:
            return next(iter(known.values()))
        if known:
            return None
        sides = [s for s in scope if s.may_have(name, qual)]
        return self.provide(sides[0], name, qual) if len(sides) == 1 else None

    def column(self, scope: list[Node], expr: Any) -> Optional[Col]:
        return self.resolve(scope, reference(expr))

    # ------------------------------------------------------------------ relations
    def visit(self, rel: Any, depth: int = 0) -> Node:
        if depth > 400:
            raise RecursionError("a Connect plan too deep to translate")
        kind = rel.WhichOneof("rel_type")
        why = node_nondeterminism(rel)
        extra: dict[str, Any] = {"flagged": why} if why else {}
        calls = window_calls(rel)
        if calls:   # the core decides whether a build side's window depends on tie order
            extra["windowCalls"] = [c.wire() for c in calls]
        if kind == "read":
            return self.read(rel)
        if kind in _PASS:
            return self.pass_through(kind, rel, depth, extra)
        if kind == "project":
            return self.project(rel, depth, extra)
        if kind == "with_columns":
            return self.with_columns(rel, depth, extra)
        if kind == "join":
            return self.join(rel, depth, extra)
        if kind == "aggregate" and rel.aggregate.group_type == 1:
            return self.aggregate(rel, depth, extra)
        if kind == "aggregate" and rel.aggregate.group_type in connect_setops.GROUPING_SETS:
            return connect_setops.grouping_sets(self, rel, depth, extra)
        if kind == "set_op":
            return connect_setops.set_op(self, rel, depth, extra)
        if kind == "with_columns_renamed":
            return self.renamed(rel, depth, extra)
        if kind == "drop":
            return self.drop(rel, depth, extra)
        if kind == "to_df":
            return self.to_df(rel, depth, extra)
        if kind == "range":
            n = self.node("Range", [], rel)
            n.cols, n.ordered = [self.col("id")], True
            return n
        kids = [self.visit(c, depth + 1) for c in relation_children(rel)]
        op = "LocalRelation" if kind in ("local_relation", "cached_local_relation") \
            else kind or "unknown"
        n = self.node(op, kids, rel, **extra)
        n.leaf_open = True
        if kind == "sql" and sql_filters(rel.sql.query):   # its WHERE, as a Filter node
            top = self.passing("Filter", n, rel, selective=True)
            top.pids = dict(n.pids)   # one relation: its plan id names the query's node
            return top
        return n

    def read(self, rel: Any) -> Node:
        fact = self.fact_of(rel.read)
        if fact is None:
            n = self.node("LogicalRelation", [], rel)
            n.leaf_open = True
            return n
        name, columns, partitions = fact
        n = self.node("LogicalRelation", [], rel, relation={
            "kind": "lazy", "index": "connect", "rootPaths": [], "table": name,
            "partitionColumns": sorted(partitions), "bucketed": False,
            "partitionFiltered": False})
        n.cols = [Col(self.fresh(), c, frozenset()) for c in sorted(columns)]
        self.facts[n.id] = fact
        return n

    def pass_through(self, kind: str, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        body = getattr(rel, kind)
        child = self.visit(body.input, depth + 1)
        op = _PASS[kind]
        if op in prune_rules.POSITIONAL_OPERATORS:   # the operator decides (dpp.analysis.rules)
            extra = {}
            if kind == "limit" and body.input.WhichOneof("rel_type") == "sort":
                extra["ordered"] = True
        elif kind == "filter":
            extra["selective"] = selective(body.condition)
        elif kind == "deduplicate" and body.column_names and not body.all_columns_as_keys:
            extra.setdefault("flagged", "one row per key, any")
        n = self.passing(op, child, rel, **extra)
        if kind == "subquery_alias":
            n.alias = body.alias.lower()
            n.cols = [c._replace(quals=frozenset({n.alias})) for c in child.cols]
        return n

    def add(self, n: Node, name: str, src: Optional[Col]) -> None:
        """An output column of a Project or Aggregate: ``src`` passed as it is, renamed
        (a new attribute), or a computed column (``src`` None)."""
        if src is not None and src.name.lower() == name.lower():   # qualifiers kept
            n.cols.append(src)
            n.extra["map"].append([src.id, src.id])
        elif src is not None:
            col = Col(self.fresh(), name, frozenset())
            n.cols.append(col)
            n.extra["map"].append([col.id, src.id])
        else:
            n.cols.append(Col(self.fresh(), name, frozenset()))

    def named(self, scope: list[Node], expr: Any) -> tuple[str, Optional[Col]]:
        """(output name, source column) of a projected expression."""
        et = expr.WhichOneof("expr_type")
        if et == "alias":
            name = expr.alias.name[0] if len(expr.alias.name) == 1 else "?"
            return name, self.column(scope, expr.alias.expr)
        src = self.column(scope, expr)
        if src is not None:
            return src.name, src
        ref = reference(expr)
        return (ref[0][-1] if ref is not None else "?"), None

    def project(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        child = self.visit(rel.project.input, depth + 1)
        n = self.node("Project", [child], rel, map=[], **extra)
        n.ordered = True   # the listed expressions, a star as its child's columns
        for e in rel.project.expressions:
            if e.WhichOneof("expr_type") == "unresolved_star":
                star = e.unresolved_star
                if star.HasField("unparsed_target") or star.HasField("plan_id"):
                    return self.opaque(n)   # f.* / df["*"]: not followed
                for c in child.cols:
                    self.add(n, c.name, c)
                n.links, n.ordered = [child], n.ordered and child.ordered
                continue
            self.add(n, *self.named([child], e))
        return n

    def opaque(self, n: Node) -> Node:
        """A node whose columns this module does not follow: any name is its own."""
        n.op, n.cols, n.links, n.leaf_open = "Opaque" + n.op, [], [], True
        n.ordered = False
        n.extra.pop("map", None)
        return n

    def with_columns(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        child = self.visit(rel.with_columns.input, depth + 1)
        n = self.node("Project", [child], rel, map=[], **extra)
        made = {}
        for a in rel.with_columns.aliases:
            if len(a.name) != 1:
                return self.opaque(n)
            made[a.name[0].lower()] = (a.name[0], self.column([child], a.expr))
        for c in child.cols:
            if c.name.lower() in made:
                self.add(n, *made.pop(c.name.lower()))
            else:
                self.add(n, c.name, c)
        for name, src in made.values():
            self.add(n, name, src)
        n.links, n.ordered = [child], child.ordered   # replaced in place, new ones appended
        n.shadow = {a.name[0].lower() for a in rel.with_columns.aliases}
        return n

    def renamed(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        """``withColumnsRenamed``: Spark folds the renames in order over the child's columns,
        each renaming every column whose name is the old one (case-insensitively) and
        ignoring a name no column has. A renamed column is a new attribute mapped to its
        source, as a ``Project``'s alias is, so a key follows its column under the new name
        and no key reaches a column by its old name (two names swapped stay apart)."""
        body = rel.with_columns_renamed
        child = self.visit(body.input, depth + 1)
        n = self.node("Project", [child], rel, map=[], **extra)
        pairs = [(r.col_name, r.new_col_name) for r in body.renames]
        if not pairs and body.rename_columns_map:   # an older client's map: no order
            pairs = sorted(body.rename_columns_map.items())
            olds = {old.lower() for old, _new in pairs}
            if any(new.lower() in olds for _old, new in pairs):
                return self.opaque(n)   # the fold's order decides, and the map has none
        for old, _new in pairs:   # every column a rename applies to, known before folding
            if not any(c.name.lower() == old.lower() for c in child.cols) \
                    and child.may_have(old.lower(), None):
                self.resolve([child], ([old], None))
        named = [(c.name, c) for c in child.cols]
        for old, new in pairs:
            named = [(new if name.lower() == old.lower() else name, c) for name, c in named]
        for name, c in named:
            self.add(n, name, c)
        n.links, n.ordered = [child], child.ordered
        n.shadow = {old.lower() for old, _new in pairs}
        return n

    def drop(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        """``drop``: a ``Project`` of the child's other columns. By name Spark drops every
        column of that name (case-insensitively); by column, the attribute it resolves to.
        A name no column has is ignored. A dropped key column is no column above, so no key
        traces through it; a column reference this module cannot resolve makes it opaque."""
        body = rel.drop
        child = self.visit(body.input, depth + 1)
        n = self.node("Project", [child], rel, map=[], **extra)
        gone: set[int] = set()
        for e in body.columns:
            hit = self.column([child], e)
            if hit is None:
                return self.opaque(n)
            gone.add(hit.id)
        names = {name.lower() for name in body.column_names}
        for c in child.cols:
            if c.id not in gone and c.name.lower() not in names:
                self.add(n, c.name, c)
        n.links, n.ordered, n.shadow = [child], child.ordered, names
        return n

    def to_df(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        """``toDF(names)``: the child's columns by position, each aliased to its new name;
        only when the child's columns and their order are all known, else opaque."""
        child = self.visit(rel.to_df.input, depth + 1)
        n = self.node("Project", [child], rel, map=[], **extra)
        names = list(rel.to_df.column_names)
        if not (child.known() and child.ordered) or len(names) != len(child.cols):
            return self.opaque(n)
        for name, c in zip(names, child.cols):
            self.add(n, name, c)
        n.ordered = True
        return n

    def aggregate(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        agg = rel.aggregate
        child = self.visit(agg.input, depth + 1)
        n = self.node("Aggregate", [child], rel, map=[], **extra)
        for e in agg.grouping_expressions:
            self.add(n, *self.named([child], e))
        for e in agg.aggregate_expressions:
            name, _src = self.named([child], e)
            self.add(n, name, None)
        n.ordered = True   # grouping columns, then aggregates
        return n

    def join(self, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
        j = rel.join
        left, right = self.visit(j.left, depth + 1), self.visit(j.right, depth + 1)
        how = _JOIN_TYPES.get(j.join_type, f"JoinType {j.join_type}")
        n = self.node("Join", [left, right], rel, joinType=how, keys=[], **extra)
        pairs: list[tuple[Optional[Col], Optional[Col], str, str]] = []
        hidden: set[int] = set()
        merged: list[Col] = []
        for c in j.using_columns:   # the key comes out once: the kept side's, or coalesced
            a, b = self.resolve([left], ([c], None)), self.resolve([right], ([c], None))
            pairs.append((a, b, c, c))
            gone = [x.id for x in ((b,) if how != "RIGHT OUTER" else ())
                    + ((a,) if how in ("RIGHT OUTER", "FULL OUTER") else ()) if x is not None]
            hidden.update(gone)
            if how == "FULL OUTER":
                merged.append(Col(self.fresh(), c, frozenset()))
        if not j.using_columns and j.HasField("join_condition"):
            for ea, eb in equalities(j.join_condition):
                pairs.append((self.column([left, right], ea), self.column([left, right], eb),
                              _written(ea), _written(eb)))
        for a, b, wa, wb in pairs:
            if a is None or b is None:
                continue
            ka, kb = self.key(n, [left, right], a, wa), self.key(n, [left, right], b, wb)
            n.extra["keys"].append([ka, kb])
        sides = [left] if how in ("LEFT SEMI", "LEFT ANTI") else [left, right]
        n.cols = merged + [c for s in sides for c in s.cols if c.id not in hidden]
        n.links = sides
        # Spark puts USING keys first: only a join on a condition keeps its sides' order
        n.ordered = not j.using_columns and all(s.ordered for s in sides)
        return n

    def key(self, join: Node, sides: list[Node], col: Col, written: str) -> dict[str, Any]:
        expr = self.fresh()
        side = next((s for s in sides if any(c.id == col.id for c in s.cols)), join)
        self.keys[expr] = (side.id, written, col.id)
        return {"expr": expr, "attr": col.id, "type": "unknown", "sql": written,
                "deterministic": True, "refs": [col.id]}

    def message(self, roots: list[Node]) -> PlanMessage:
        nodes = []
        for n in self.nodes:
            d: dict[str, Any] = {"id": n.id, "op": n.op, "children": [k.id for k in n.kids],
                                 "output": [[c.id, c.name, "unknown"] for c in n.cols]}
            d.update({k: v for k, v in n.extra.items() if v is not None})
            nodes.append(d)
        msg: PlanMessage = {"op": "connect", "version": WIRE_VERSION, "request": "connect",
                            "explain": False, "timeZone": "UTC",
                            "roots": [r.id for r in roots], "nodes": nodes}  # type: ignore
        check_plan(msg)
        return msg


def _written(expr: Any) -> str:
    """A key column as the join names it: ``k``, or ```f`.`k``` when qualified."""
    ref = reference(expr)
    if ref is None:
        return "?"
    parts = ref[0]
    return parts[-1] if len(parts) == 1 else ".".join(f"`{p}`" for p in parts)


def translate(root: Any, fact_of: FactOf) -> TypedPlan:
    """The typed plan of the Connect tree ``root`` (module docstring). ``fact_of(read)``:
    ``(name, columns, partition columns)`` (lower case) of the table a ``Read`` reads, or
    None."""
    tr = _Translator(fact_of)
    top = tr.visit(root)
    return TypedPlan(tr.message([top]), {n.id: n.rel for n in tr.nodes}, tr.facts, tr.keys,
                     {n.id: n.cols for n in tr.nodes})
