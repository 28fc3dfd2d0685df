"""SQL text as the typed plan the optimizer hook describes (:mod:`dpp.analysis.plan_wire`), so that
:func:`dpp.analysis.plan_pairs.find_prunes` decides the SQL front end's pairs too.

The input is the planner's analysis tree (CTEs inlined, USING joins spelled out). Every
SELECT becomes the operators Spark's analyzer makes of it, in Spark's order: its FROM items
(a partitioned reference a ``LogicalRelation`` with a ``relation``, another table a
``LogicalRelation`` without, a derived table its own translated query) each under a
``Filter`` of the conjuncts about it alone, joined left-deep in FROM order; then a ``Filter``
of the rest (the WHERE's equalities too, as written), ``Window``, ``Aggregate`` or
``Project``, ``Distinct``, ``Sort``, ``GlobalLimit``. A union is a ``Union`` of its branches,
an intersection or difference an operator that stops keys.

How SQL becomes Spark's operators:

* **Keys.** An equality of the WHERE or of an inner ON between two FROM items that no outer
  join fills with NULLs (and neither is a semi join's test) keys the first join of the
  left-deep tree where both are present, as Spark's optimizer puts a join condition; an
  outer or semi join's ON equality between its new item and an earlier one keys that join.
  Every pair is then find_prunes' to decide, as on the hook's plan: which side may be pruned
  (:func:`dpp.analysis.rules.may_prune`), how the key traces through derived tables,
  aggregates and unions, whether the build side is repeatable and filters anything, and how
  a build side that filters nothing is narrowed (by its join's other keys, or by a join
  above it, across derived tables). A column passed out of a derived table keeps its
  number, as Spark's attribute keeps its exprId, so a key traced out of one is the attribute
  the join above names. :class:`Item` and :class:`JoinStep` record what each FROM-tree node
  reads, for the writer of build queries (:func:`dpp.frontends.sql.build.write_side`).
* A key is a column, or (``f.p + 1 = d.k``) a deterministic expression over one column of
  one FROM item: a key without ``attr``, which find_prunes traces as the hook's expression
  keys. USING / NATURAL joins arrive as their equalities (:mod:`dpp.frontends.sql.using`).
* A node's ``subqueries`` are the plans of the scalar (and IN) subqueries its expressions
  evaluate: part of a build side's determinism, not of the rows above a fact.
* A conjunct about one FROM item alone is a ``Filter`` over that item, unless an outer join
  may fill the item with NULLs: then it stays above the joins (Spark moves it below only
  after turning the join into an inner one). An outer join's ON conjuncts about its
  NULL-supplied side are a ``Filter`` below it.
* ``col IN (subquery)`` is a ``Filter``'s ``inSubqueries`` entry; ``EXISTS`` with one
  equality correlating it is the same entry over the subquery with that equality taken out
  (Spark rewrites both to a left-semi join). Correlated ``IN``, ``NOT IN`` / ``NOT
  EXISTS`` give no entry (noted).
* ``IS NOT NULL`` alone filters nothing (``selective`` False); a call to one of
  :data:`dpp.analysis.rules.NONDETERMINISTIC_FUNCTIONS` is a node's ``flagged`` expression, and so
  does one of :data:`dpp.analysis.rules.RERUN_FUNCTIONS` in a subtree that reads no partitioned
  relation (a build side only: it is run again at another instant). A ``LIMIT`` of a
  global aggregate's one row is no node (Spark's ``EliminateLimits``).
* A column of a table the resolver does not know, or of a derived table over ``*``, is an
  output of that item as the query names it.

The side tables link the plan back: relation node -> its ``Source``; a key's expression
number -> the conjunct, column and FROM item it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from sqlglot import exp

from dpp.core.refusals import Code, Refusal
from dpp.analysis.plan_wire import WIRE_VERSION, PlanMessage
from dpp.analysis.functions import deterministic
from dpp.analysis.plan_filters import Condition
from dpp.analysis.rules import NONDETERMINISTIC_FUNCTIONS, RERUN_FUNCTIONS, JoinType
from dpp.analysis.functions import window_calls
from dpp.frontends.sql.scopes import (Scope, Source, Tables, has_subquery, join_on, join_type_of,
                                      matched_only, null_rejecting, outer_columns, scope,
                                      selective)
from dpp.frontends.sql.typed_semi import Origin, SemiJoins

__all__ = ["Origin", "Typed", "Item", "JoinStep", "translate"]

_INNER = (JoinType.INNER, JoinType.CROSS)


@dataclass
class Typed:
    message: PlanMessage
    relations: dict[int, tuple[Scope, Source]] = field(default_factory=dict)
    keys: dict[int, Origin] = field(default_factory=dict)
    scopes: dict[int, Scope] = field(default_factory=dict)   # id(select) -> its scope
    # a build key's SQL (find_prunes' notes name it) -> the FROM items it may prune, each
    # with the build side's name as the build query's label spells it
    partners: dict[str, list[tuple[Source, str]]] = field(default_factory=dict)
    # id(FROM item node) -> notes on conjuncts about it that make no key: (phase, index, text)
    notes: dict[int, list[tuple[int, int, Refusal]]] = field(default_factory=dict)
    # what the nodes of a SELECT's FROM tree read, for the writer of build queries
    # (dpp.frontends.sql.build.write_side): node -> its FROM item(s) and conjuncts
    items: dict[int, list["Item"]] = field(default_factory=dict)
    joins: dict[int, "JoinStep"] = field(default_factory=dict)
    # attribute -> the FROM items that output it, by their column name (a column passed out
    # of a derived table keeps its number: the derived table and the item inside both)
    columns: dict[int, list[tuple[Source, str]]] = field(default_factory=dict)
    # the conditions of each Filter node (dpp.analysis.plan_filters walks them down), each
    # with its conjunct; where a conjunct was written ("outer WHERE", "outer ON", "its outer
    # join's ON"); the attribute each of its columns reads (by id of the column)
    conditions: dict[int, list[tuple[exp.Expression, Condition]]] = field(default_factory=dict)
    written: dict[int, str] = field(default_factory=dict)
    attrs: dict[int, int] = field(default_factory=dict)
    # projection node -> its outputs that are constants; node -> output -> the SELECT
    # expression it is (for the words of a condition that stops or passes there)
    constants: dict[int, dict[int, exp.Expression]] = field(default_factory=dict)
    selects: dict[int, dict[int, exp.Expression]] = field(default_factory=dict)
    # the relation node of each FROM item that is a table (its leaf)
    leaves: dict[int, Source] = field(default_factory=dict)


@dataclass
class Item:
    """A FROM item's node (its relation, or a Filter of its own conjuncts over it)."""

    source: Source
    where: list[exp.Expression]     # conjuncts of the WHERE / inner ON about it alone


@dataclass
class JoinStep:
    """A join of a SELECT's left-deep FROM tree, bringing in its right item."""

    join_type: JoinType
    on: list[exp.Expression]        # the join's own ON (outer and semi joins) ...
    keys: list[exp.Expression]      # ... or the inner equalities keyed at it


def translate(atree: exp.Expression, tables: Tables, broadcast: Optional[str] = None) -> Typed:
    """The typed plan of the analysis tree: its query, then every SELECT not reached from it
    (a scalar subquery's), each a root. ``broadcast``: the session's
    ``spark.sql.autoBroadcastJoinThreshold`` text (which relations are facts)."""
    t = _Translator(tables)
    if broadcast is not None:
        t.typed.message["broadcastThreshold"] = broadcast
    roots = [t.query(atree)[0]]
    for sel in atree.find_all(exp.Select):
        if id(sel) not in t.done:
            roots.append(t.query(sel)[0])
    roots += t.extra_roots
    t.typed.message.update(roots=roots, nodes=t.nodes)
    return t.typed


class _Translator:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.nodes: list[dict[str, Any]] = []
        self.typed = Typed({"op": "plan", "version": WIRE_VERSION, "request": "sql-text",
                            "explain": False, "timeZone": "UTC", "roots": [], "nodes": []})
        self.done: dict[int, tuple[int, list[tuple[int, str]]]] = {}
        self.extra_roots: list[int] = []
        self._expr = 0
        self._partitioned: dict[int, bool] = {}
        self.ins: dict[int, Optional[dict[str, Any]]] = {}   # id(conjunct) -> its IN entry

    # ------------------------------------------------------------------ plumbing
    def new_id(self) -> int:
        self._expr += 1
        return self._expr

    def node(self, op: str, children: list[int], output: list[tuple[int, str]],
             **extra: Any) -> int:
        nid = len(self.nodes)
        self.nodes.append({"id": nid, "op": op, "children": children,
                           "output": [[e, n, "unknown"] for e, n in output],
                           **{k: v for k, v in extra.items() if v is not None}})
        return nid

    def out(self, node: int) -> list[tuple[int, str]]:
        return [(e, n) for e, n, _t in self.nodes[node]["output"]]

    def reads_fact(self, node: int) -> bool:
        if node not in self._partitioned:
            n = self.nodes[node]
            rel = n.get("relation")
            below = list(n["children"]) + [s["query"] for s in n.get("inSubqueries", [])]
            self._partitioned[node] = bool(rel and rel["partitionColumns"]) or any(
                self.reads_fact(c) for c in below)
        return self._partitioned[node]

    def unstable(self, es: list[exp.Expression], child: Optional[int]) -> Optional[str]:
        """Why evaluating ``es`` over ``child`` is not repeatable, or None."""
        names = NONDETERMINISTIC_FUNCTIONS
        if child is None or not self.reads_fact(child):
            names = RERUN_FUNCTIONS
        bad = [e for e in es if not deterministic(e, names)]
        return bad[0].sql(dialect="spark")[:120] if bad else None

    def subqueries(self, es: list[exp.Expression]) -> list[int]:
        """The plans of the subqueries ``es`` evaluate (a scalar subquery's, an IN's): their
        determinism counts where the node they are evaluated in is part of a build side."""
        found: list[int] = []
        stack = list(es)
        while stack:
            n = stack.pop()
            if isinstance(n, (exp.Subquery, exp.Query)):
                found.append(self.query(n)[0])
                continue
            stack.extend(n.iter_expressions())
        return found

    def key(self, attr: int, sql: str, origin: Origin) -> dict[str, Any]:
        eid = self.new_id()
        self.typed.keys[eid] = origin
        return {"expr": eid, "type": "unknown", "sql": sql,
                "deterministic": True, "refs": [attr], "attr": attr}

    def note(self, src: Source, phase: int, index: int, refusal: Refusal) -> None:
        self.typed.notes.setdefault(id(src.node), []).append((phase, index, refusal))

    def modifiers(self, q: exp.Expression, node: int, out: list[tuple[int, str]],
                  one_row: bool = False) -> int:
        """``node`` under a query's ORDER BY, OFFSET and LIMIT (a SELECT's or a set
        operation's). ``one_row``: the rows are a global aggregate's one row, which a LIMIT
        of at least one leaves as they are (Spark's ``EliminateLimits``)."""
        ordered = q.args.get("order") is not None
        if ordered:
            node = self.node("Sort", [node], out)
        for k, op in (("offset", "Offset"), ("limit", "GlobalLimit")):
            if q.args.get(k) is not None and not (op == "GlobalLimit" and one_row and
                                                  _at_least_one(q.args[k])):
                node = self.node(op, [node], out, ordered=True if ordered else None)
        return node

    # ------------------------------------------------------------------ queries
    def query(self, q: exp.Expression) -> tuple[int, list[tuple[int, str]]]:
        """A query's node and output columns (expression number, name)."""
        if id(q) in self.done:
            return self.done[id(q)]
        if isinstance(q, exp.Subquery):
            res = self.query(q.this)
        elif isinstance(q, exp.SetOperation):
            left, lout = self.query(q.left)
            right, _rout = self.query(q.right)
            op = "Union" if isinstance(q, exp.Union) else type(q).__name__
            res = (self.node(op, [left, right], lout), lout)
            if isinstance(q, exp.Union) and q.args.get("distinct"):
                res = (self.node("Distinct", [res[0]], lout), lout)
            res = (self.modifiers(q, res[0], lout), lout)
        elif isinstance(q, exp.Select):
            res = _Select(self, q).translate()
        else:                       # VALUES, a table function: rows of unknown shape
            res = (self.node("LogicalRelation", [], [], flagged=self.unstable([q], None)), [])
        self.done[id(q)] = res
        return res


class _Select(SemiJoins):
    """One SELECT's operators."""

    t: _Translator   # the whole translator (the mixin needs only its ``Translator`` part)

    def __init__(self, t: _Translator, sel: exp.Select) -> None:
        self.t = t
        self.sel = sel
        self.sc = scope(sel, t.tables)
        self.cols: dict[int, dict[str, int]] = {}     # id(source) -> column -> expr number
        self.lazy: dict[int, int] = {}   # id(source) of unknown columns -> its node
        if self.sc is not None:
            t.typed.scopes[id(sel)] = self.sc

    # ------------------------------------------------------------------ columns
    def attr(self, col: exp.Column) -> Optional[tuple[int, Source]]:
        sc = self.sc
        if sc is None:
            return None
        only = next(iter(sc.sources.values())) if len(sc.sources) == 1 else None
        src = sc.sources.get(sc.owner(col, probe=only) or "")
        if src is None:
            return None
        cols = self.cols[id(src)]
        name = col.name.lower()
        if name not in cols and id(src) in self.lazy:   # a column of unknown shape's rows
            cols[name] = self.t.new_id()
            self.t.nodes[self.lazy[id(src)]]["output"].append([cols[name], name, "unknown"])
        return (cols[name], src) if name in cols else None

    def owners(self, c: exp.Expression) -> set[str]:
        cols = outer_columns(c)
        return {self.sc.owner(x, probe=next(iter(self.sc.sources.values()))   # type: ignore
                              if len(self.sc.sources) == 1 else None)           # type: ignore
                or "" for x in cols} if cols else set()

    # ------------------------------------------------------------------ FROM items
    def source(self, src: Source) -> int:
        t = self.t
        node = src.node
        if src.cte is not None or isinstance(node, exp.Subquery):
            body = src.cte if src.cte is not None else node.this
            nid, out = t.query(body)
            alias = node.args.get("alias") if isinstance(node, exp.Subquery) else None
            names = [c.name.lower() for c in (alias.args.get("columns") or [])] \
                if alias is not None else []
            names = names or [n for _e, n in out]
            self.cols[id(src)] = {}
            for (e, _n), name in zip(out, names):
                self.cols[id(src)].setdefault(name, e)
            if any(isinstance(x, exp.Star) for x in body.find_all(exp.Star)):
                # a star over rows of unknown shape: the columns the query names are its own
                nid = t.node("SubqueryAlias", [nid], out)
                self.lazy[id(src)] = nid
            if node.args.get("sample") is not None:   # this use's own sample
                nid = t.node("Sample", [nid], t.out(nid))
                if id(src) in self.lazy:
                    self.lazy[id(src)] = nid
            return nid
        info = src.info
        if info is None:
            self.cols[id(src)] = {}
            nid = t.node("LogicalRelation", [], [])
            self.lazy[id(src)] = nid
            return nid
        cols = {c.lower(): t.new_id() for c in info.columns}
        self.cols[id(src)] = cols
        rel = None
        if info.partition_columns or info.data_only:
            rel = {"kind": "lazy", "index": "sql-text", "rootPaths": [],
                   "partitionColumns": list(info.partition_columns), "bucketed": False,
                   "partitionFiltered": False, "table": info.name}
            if not info.partition_columns and info.size_bytes is not None:
                rel["sizeInBytes"] = info.size_bytes
        nid = t.node("LogicalRelation", [], list((i, c) for c, i in cols.items()),
                     relation=rel)
        if rel is not None and src.prunable:
            t.typed.relations[nid] = (self.sc, src)     # type: ignore[assignment]
        t.typed.leaves[nid] = src
        if node.args.get("sample") is not None:
            nid = t.node("Sample", [nid], t.out(nid))
        return nid

    def filtered(self, child: int, cs: list[exp.Expression],
                 subs: list[tuple[exp.Expression, int, int]]) -> int:
        """``child`` under a Filter of ``cs`` (and of the IN subqueries ``subs``)."""
        if not cs:
            return child
        for c, _p, i in subs:
            if id(c) not in self.t.ins:
                self.t.ins[id(c)] = self.in_subquery(c, child, i)
        ins = [self.t.ins[id(c)] for c, _p, _i in subs]
        nid = self.t.node("Filter", [child], self.t.out(child),
                          selective=any(selective(c) for c in cs),
                          inSubqueries=[s for s in ins if s is not None] or None,
                          flagged=self.t.unstable(cs, child),
                          subqueries=self.t.subqueries(cs) or None)
        self.t.typed.conditions[nid] = [(c, self.condition(c)) for c in cs]
        return nid

    def condition(self, c: exp.Expression) -> Condition:
        """A conjunct as :func:`dpp.analysis.plan_filters.place_conditions` walks it: the
        attributes its columns read (a column of an outer query's, or of nothing known,
        makes it stay where it is)."""
        refs: set[int] = set()
        known = True
        for col in outer_columns(c):
            found = self.attr(col)
            if found is None:
                known = False
                continue
            self.t.typed.attrs[id(col)] = found[0]
            refs.add(found[0])
        movable = known and bool(refs) and not has_subquery(c) and deterministic(c)
        return Condition(frozenset(refs), movable, null_rejecting(c))

    # ------------------------------------------------------------------ the SELECT
    def translate(self) -> tuple[int, list[tuple[int, str]]]:
        sc, t = self.sc, self.t
        if sc is None:
            return self.project(None)
        order = list(sc.sources.values())
        leaves = {id(s): self.source(s) for s in order}
        for col in self.sel.find_all(exp.Column):   # unknown tables' columns, by use
            if col.find_ancestor(exp.Select) is self.sel:
                self.attr(col)
        for s in order:
            for name, e in self.cols[id(s)].items():
                t.typed.columns.setdefault(e, []).append((s, name))
        pos = {id(s): i for i, s in enumerate(order)}
        # the join that brings each FROM item after the first (by position in ``order``)
        by_node = {id(j.this): j for j in self.sel.args.get("joins") or []}
        joins = [by_node.get(id(s.node)) for s in order[1:]]
        types = [join_type_of(j) if j is not None else JoinType.INNER for j in joins]
        below: dict[int, list[tuple[exp.Expression, int, int]]] = {id(s): [] for s in order}
        self.where_index: dict[int, int] = {}    # id(conjunct) -> its place in the WHERE
        above: list[tuple[exp.Expression, int, int]] = []
        # the key equalities of each join (by the position of the item it brings in): an
        # inner equality keys the first join where both its items are present, as Spark's
        # optimizer puts it; an outer or semi join's ON equality keys that join
        keyed: dict[int, list[tuple[exp.Expression, int, int, Any]]] = {}
        inner = sc.where + sc.inner_on
        for i, c in enumerate(inner):
            found = self.inner_pair(c)
            if found is not None:
                j = max(pos[id(found[0][1])], pos[id(found[1][1])])
                keyed.setdefault(j, []).append((c, 0, i, found))
                continue
            owners = self.owners(c)
            src = sc.sources.get(next(iter(owners))) if len(owners) == 1 else None
            where = self.where_index[id(c)] = i if i < len(sc.where) else -1
            t.typed.written[id(c)] = "outer WHERE" if where >= 0 else "outer ON"
            (below[id(src)] if src is not None and not src.null_supplied
             else above).append((c, 2, where))
            self.text_notes(c, i)
        for j, (jn, jt) in enumerate(zip(joins, types), start=1):
            if jn is None or jt in _INNER or jt is None:
                continue
            phase = 1 if jt in (JoinType.LEFT_SEMI, JoinType.LEFT_ANTI) else 0
            for i, c in enumerate(join_on(jn)):
                found = self.column_pair(c)
                if found is not None and max(pos[id(found[0][1])], pos[id(found[1][1])]) == j:
                    keyed.setdefault(j, []).append((c, phase, i, found))
                    continue
                owners = self.owners(c)
                src = sc.sources.get(next(iter(owners))) if len(owners) == 1 else None
                if src is not None and (pos[id(src)] == j if jt in (
                        JoinType.LEFT_OUTER, JoinType.LEFT_SEMI, JoinType.LEFT_ANTI)
                        else jt is JoinType.RIGHT_OUTER and pos[id(src)] < j):
                    below[id(src)].append((c, 0, -1))   # about the NULL-supplied side
                    t.typed.written[id(c)] = "its outer join's ON"
                if phase == 0:
                    self.text_notes(c, i)
        node = None
        for s in order:
            own = [c for c, _p, _i in below[id(s)]]
            sub = self.filtered(leaves[id(s)], own, [x for x in below[id(s)] if _is_in(x[0])])
            t.typed.items.setdefault(sub, []).append(
                Item(s, [c for c, p, _i in below[id(s)] if p == 2]))
            if node is None:
                node = sub
                continue
            j = pos[id(s)]
            jt = types[j - 1]
            out = t.out(node) + ([] if jt in (JoinType.LEFT_SEMI, JoinType.LEFT_ANTI)
                                 else t.out(sub))
            keys = [self.keys(c, phase, i, found) for c, phase, i, found in keyed.get(j, [])]
            node = t.node("Join", [node, sub], out,
                          joinType=jt.value if jt else "UNKNOWN", keys=keys)
            jn = joins[j - 1]
            t.typed.joins[node] = JoinStep(
                jt or JoinType.INNER,
                join_on(jn) if jn is not None and jt not in _INNER else [],
                [c for c, _p, _i, _f in keyed.get(j, [])])
        assert node is not None
        node = self.filtered(node, [c for c, _p, _i in above],
                             [x for x in above if _is_in(x[0])])
        return self.project(node)

    def column_pair(self, c: exp.Expression) -> Any:
        """The two FROM items' columns an equality compares: ``a.x = b.y``, or a column of
        one and a deterministic expression over one column of another (``f.p + 1 = d.k``,
        ``cast(f.p AS string) = d.s``: find_prunes' expression key); None for anything
        else."""
        if not isinstance(c, exp.EQ) or not any(isinstance(x, exp.Column)
                                                for x in (c.this, c.expression)):
            return None
        ca, cb = _key_column(c.this), _key_column(c.expression)
        if ca is None or cb is None:
            return None
        a, b = self.attr(ca), self.attr(cb)
        return None if a is None or b is None or a[1] is b[1] else (a, b)

    def inner_pair(self, c: exp.Expression) -> Any:
        """An equality of the WHERE or an inner ON between two FROM items whose rows come
        out only matched (no outer join fills either with NULLs, neither is a semi
        join's test): an inner join key."""
        found = self.column_pair(c)
        if found is None or not matched_only(*(s for _a, s in found)):
            return None
        return found

    def keys(self, c: exp.Expression, phase: int, index: int,
             found: tuple[tuple[int, Source], tuple[int, Source]]) -> list[dict[str, Any]]:
        """A join's key pair of an equality, each key linked back to its side."""
        (a, sa), (b, sb) = found
        ca, cb = c.this, c.expression
        if sa is not self.attr(_key_column(ca))[1]:    # type: ignore[arg-type,index]
            ca, cb = cb, ca
        for src, other, osrc in ((sa, cb, sb), (sb, ca, sa)):
            name = other.name if isinstance(other, exp.Column) else other.sql(dialect="spark")
            self.t.typed.partners.setdefault(other.sql(dialect="spark"), []).append(
                (src, f"{osrc.table or osrc.alias}.{name}"))
        out = []
        for at, src, e in ((a, sa, ca), (b, sb, cb)):
            col = e if isinstance(e, exp.Column) else None   # an expression key: no column
            key = self.t.key(at, e.sql(dialect="spark"),
                             Origin(self.sc, c, phase, index, col, src))  # type: ignore[arg-type]
            if col is None:
                del key["attr"]
            out.append(key)
        return out

    def text_notes(self, c: exp.Expression, index: int) -> None:
        """Notes on a conjunct that gives no key although it compares a FROM item's column
        with another's (in a subquery too), or is an anti join."""
        sc = self.sc
        assert sc is not None
        only = next(iter(sc.sources.values())) if len(sc.sources) == 1 else None
        owners = {sc.owner(x, probe=only) for x in c.find_all(exp.Column)}   # None: outer
        if isinstance(c, exp.Not) and isinstance(c.this, (exp.In, exp.Exists)):
            for s in sc.sources.values():
                self.t.note(s, 2, index, Refusal(Code.ANTI_JOIN))
            return
        if isinstance(c, exp.NullSafeEQ):
            for s in sc.sources.values():
                self.t.note(s, 0, index, Refusal(Code.NULL_SAFE_EQUALITY))
        if len(owners) < 2:
            return
        for alias in owners:
            src = sc.sources.get(alias)
            if src is None:
                continue
            if isinstance(c, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ)):
                self.t.note(src, 0, index, Refusal.of(Code.NON_EQUI, c.sql("spark")))

    def group_keys(self, group: Optional[exp.Expression]) -> list[exp.Column]:
        """The columns a GROUP BY keeps in every row it outputs, as Spark resolves its
        items: an ordinal is that SELECT expression, a name not of the FROM items an output
        alias (``spark.sql.groupByAliases``). With grouping sets only the columns of every
        set (Spark's ``Expand`` fills the others with NULL in the rows of the other sets);
        ROLLUP and CUBE have the empty set."""
        if group is None:
            return []
        plain: list[exp.Expression] = []
        sets: Optional[dict[str, exp.Expression]] = None   # by SQL text: in every set
        hive_sets = group.args.get("grouping_sets") or []
        for g in list(group.expressions) + list(hive_sets):
            if isinstance(g, (exp.Rollup, exp.Cube)):
                sets = {}
            elif isinstance(g, exp.GroupingSets):
                for one in g.expressions:
                    cols = {c.sql(dialect="spark").lower(): c for c in
                            (one.expressions if isinstance(one, exp.Tuple) else [one.unnest()])}
                    sets = cols if sets is None else {k: v for k, v in sets.items() if k in cols}
            elif not hive_sets:      # GROUP BY a, b GROUPING SETS (...): the sets decide
                plain.append(g)
        if sets is not None and hive_sets:
            plain = [g for g in group.expressions if g.sql(dialect="spark").lower() in sets]
        elif sets:
            plain += list(sets.values())
        items = self.sel.expressions
        out: list[exp.Column] = []
        for g in plain:
            if isinstance(g, exp.Literal) and g.is_int and 0 < int(g.this) <= len(items):
                g = items[int(g.this) - 1].unalias()
            elif isinstance(g, exp.Column) and not g.table and self.attr(g) is None:
                g = next((e.unalias() for e in items if isinstance(e, exp.Alias) and
                          e.alias.lower() == g.name.lower()), g)
            if isinstance(g, exp.Column):
                out.append(g)
        return out

    def project(self, child: Optional[int]) -> tuple[int, list[tuple[int, str]]]:
        """The operators above the joins: the SELECT's node and output."""
        t, sel = self.t, self.sel
        items = sel.expressions
        node = child
        group = sel.args.get("group")
        aggregated = group is not None or any(
            any(True for _ in e.find_all(exp.AggFunc)) for e in items)
        windows = [w for e in items for w in e.find_all(exp.Window)]
        if windows and node is not None:
            specs = [{self.attr(p)[0] for p in w.args.get("partition_by") or []   # type: ignore
                      if isinstance(p, exp.Column) and self.attr(p)} for w in windows]
            common = set.intersection(*specs) if specs else set()
            node = t.node("Window", [node], t.out(node), partitionSpec=sorted(common),
                          windowCalls=[c.wire() for c in window_calls(windows)])
        out: list[tuple[int, str]] = []
        mapping: list[list[int]] = []
        grouped = {found[0] for found in (self.attr(g) for g in self.group_keys(group))
                   if found is not None}
        # a column passed through keeps its number (Spark's attribute keeps its exprId), so
        # a key traced out of a derived table is the same attribute a join above names
        for e in items:
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and
                                           isinstance(e.this, exp.Star)):
                for eid, name in (t.out(child) if child is not None else []):
                    out.append((eid, name))
                    mapping.append([eid, eid])
                continue
            inner = e.unalias()
            found = self.attr(inner) if isinstance(inner, exp.Column) else None
            if found is not None and (not aggregated or found[0] in grouped):
                out.append((found[0], e.alias_or_name.lower()))
                mapping.append([found[0], found[0]])
                continue
            out.append((t.new_id(), e.alias_or_name.lower()))
        op = "Aggregate" if aggregated else "Project"
        if node is None:
            node = t.node("OneRowRelation", [], [])
        node = t.node(op, [node], out, map=mapping,
                      flagged=t.unstable(items, node))
        exprs = [e for e in items if not (isinstance(e, exp.Star) or (
            isinstance(e, exp.Column) and isinstance(e.this, exp.Star)))]
        if len(exprs) == len(items):      # no star: one output per SELECT expression
            t.typed.selects[node] = {eid: e.unalias() for (eid, _n), e in zip(out, items)}
            t.typed.constants[node] = {eid: e for eid, e in t.typed.selects[node].items()
                                       if _constant(e)}
        having = sel.args.get("having")
        if having is not None:
            node = t.node("Filter", [node], out, selective=True,
                          flagged=t.unstable([having], node))
        if sel.args.get("distinct"):
            node = t.node("Distinct", [node], out)
        one_row = aggregated and group is None and having is None
        return t.modifiers(sel, node, out, one_row), out


def _key_column(e: exp.Expression) -> Optional[exp.Column]:
    """The column a join key reads: the key itself, or the one column a deterministic
    expression without subqueries, aggregates or windows reads; None for anything else."""
    if isinstance(e, exp.Column):
        return e
    if any(True for _ in e.find_all(exp.Query, exp.Subquery, exp.AggFunc, exp.Window)) or \
            not deterministic(e, RERUN_FUNCTIONS):
        return None
    cols = list(e.find_all(exp.Column))
    if not cols or len({(x.table.lower(), x.name.lower()) for x in cols}) != 1:
        return None
    return cols[0]


def _constant(e: exp.Expression) -> bool:
    """A SELECT expression that is the same literal on every row (a UNION branch's tag)."""
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.Neg):
        e = e.this
    if isinstance(e, exp.Cast):
        e = e.this
    return isinstance(e, (exp.Literal, exp.Null, exp.Boolean))


def _at_least_one(limit: exp.Expression) -> bool:
    n = limit.expression if isinstance(limit, exp.Limit) else None
    return isinstance(n, exp.Literal) and n.is_int and int(n.this) >= 1


def _is_in(c: exp.Expression) -> bool:
    return isinstance(c, exp.Exists) or (isinstance(c, exp.In) and
                                         c.args.get("query") is not None)
