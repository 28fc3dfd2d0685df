"""Query analysis: SQL text → the pruning plan (which table references, by what, and why not).

One public function, :func:`analyze`, plus :func:`rewrite` to substitute pruned references.
Pure sqlglot and the domain algebra: no Spark, so it is fast and testable alone.

The rules (DESIGN, "Rules that keep results right"), per SELECT scope:

* A reference is *inner* unless an outer join makes it null-supplying (the right side of a
  LEFT JOIN, the left of a RIGHT JOIN, either side of a FULL JOIN) or it is the right side of
  a SEMI/ANTI join. Dynamic filters come from equalities ``probe.col = other.col`` in WHERE
  or inner ON clauses between two inner references; a null-supplying reference is pruned only
  by equalities in its own outer join's ON clause (with a preserved-side reference as build
  side); the preserved side of an outer join is never pruned by that join; anti joins
  (``NOT IN``, ``NOT EXISTS``, ``LEFT ANTI JOIN``) never prune; ``IN (subquery)``, ``EXISTS``
  and ``LEFT SEMI JOIN`` prune the outer side.
* The build side is the other reference with its local predicates, plus inner references
  joined to it by equalities that carry predicates of their own (snowflake); CTEs and derived
  tables are inlined as subqueries. A build side with no predicate at all gives no filter.
* Static domains come from top-level conjuncts ``col op literal``, ``IN (literals)``,
  ``BETWEEN``, ``IS [NOT] NULL`` and ORs of these on one column; everything stays in the query
  for Spark to evaluate (the domains only decide what is read).

>>> plan = analyze("SELECT * FROM f JOIN d ON f.k = d.k WHERE d.x = 1",
...                lambda n: TableInfo(n, {"k": None}, ("k",)) if n == "f" else None)
>>> [r.pruning for r in plan.refs], plan.refs[0].dynamic[0].build_query
([True], 'SELECT d.k AS dpp_key FROM d AS d WHERE d.x = 1')
"""
from __future__ import annotations

import decimal
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import build_scope

from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import DomainError
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules
from dpp.pushdown import (EMPTY, ORIGIN, POSITION, PUSHED_QUERY, deterministic, inline_ctes,
                          inside_pushed_query, outer_columns, push_into)

log = logging.getLogger(__name__)

__all__ = ["ColumnInfo", "TableInfo", "Resolver", "DynamicFilterSpec", "TableRefPlan",
           "PruningPlan", "analyze", "rewrite"]

_REF = "dpp_ref"
KEY_ALIAS = "dpp_key"


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: Optional[DataType]


@dataclass(frozen=True)
class TableInfo:
    """What the analyzer needs of a table: its columns (types where known) and, for tables
    that can be pruned, the partition columns (empty for dimensions)."""

    name: str
    columns: dict[str, Optional[DataType]]
    partition_columns: tuple[str, ...]
    # a table dpp reads itself although it has no partition column (registered, or a catalog
    # table dpp can list): probed too, its joins on data columns filter files and row groups
    data_only: bool = False


Resolver = Callable[[str], Optional[TableInfo]]


@dataclass
class DynamicFilterSpec:
    filter_id: str
    probe_column: str
    build_query: str
    build_column: str
    build_tables: tuple[str, ...]
    reason_kind: str                  # "inner" | "semi" | "outer_non_preserved"
    build_type: Optional[DataType] = None
    origin: Optional[str] = None      # the path of a predicate pushed in from an outer scope


@dataclass
class TableRefPlan:
    ref_id: str
    table: str
    alias: Optional[str]
    pruning: bool
    reason: Optional[str]
    static: TupleDomain
    dynamic: list[DynamicFilterSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # a table with no partition column (TableInfo.data_only): a reference only when a join
    # gives it a dynamic filter; its static predicates are Spark's alone
    data_only: bool = False


@dataclass
class PruningPlan:
    sql: str
    refs: list[TableRefPlan]
    parse_error: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    _tree: Any = field(default=None, repr=False)

    def tables(self) -> dict[str, list[TableRefPlan]]:
        out: dict[str, list[TableRefPlan]] = {}
        for r in self.refs:
            out.setdefault(r.table, []).append(r)
        return out

    def explain(self) -> str:
        lines = ["== dpp pruning plan =="]
        if self.parse_error:
            lines.append(f"not analysed, runs unpruned: {self.parse_error}")
            return "\n".join(lines)
        if not self.refs:
            lines.append("no partitioned table in the query: nothing to prune")
        for r in self.refs:
            name = r.table + (f" AS {r.alias}" if r.alias and r.alias != r.table else "")
            if not r.pruning:
                lines.append(f"[{r.ref_id}] {name}: NOT pruned — {r.reason}")
            else:
                lines.append(f"[{r.ref_id}] {name}: pruned")
            if not r.static.is_all():
                lines.append(f"    static: {r.static.describe()}")
            for f in r.dynamic:
                lines.append(f"    dynamic {f.filter_id} ({f.reason_kind}): {r.table}.{f.probe_column}"
                             f" IN values of {f.build_column}")
                lines.append(f"        build side: {f.build_query}")
                if f.origin:
                    lines.append(f"        {f.origin}")
            for n in r.notes:
                lines.append(f"    note: {n}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)


# ====================================================================== analysis

def parse(sql: str) -> tuple[Optional[exp.Expression], Optional[str]]:
    """``(tree, None)`` for a query sqlglot parses, ``(None, why)`` for anything else."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as exc:
        return None, f"unparsable SQL: {_first_line(exc)}"
    if tree is None or not isinstance(tree, (exp.Query, exp.Subquery)):
        kind = type(tree).__name__ if tree is not None else "empty"
        return None, f"not a query ({kind} statement)"
    return tree, None


def analyze(sql: str, resolve: Resolver, rules: SparkRules = DEFAULT_RULES,
            tree: Optional[exp.Expression] = None) -> PruningPlan:
    """The pruning plan of ``sql``; never raises for SQL it cannot handle (no pruning then).

    ``rules`` are the session's: literals are read as Spark casts them in that session (a
    ``TIMESTAMP '...'`` in its time zone). ``tree``: ``sql`` as :func:`parse` gave it, when the
    caller parsed it already (it is annotated in place)."""
    if tree is None:
        tree, why = parse(sql)
        if tree is None:
            return PruningPlan(sql=sql, refs=[], parse_error=why)
    analyzer = _Analyzer(sql, tree, resolve, rules)
    try:
        analyzer.inline()
    except SqlglotError as exc:     # keep the query as written, unpruned inside its CTEs
        analyzer.notes.append(f"CTEs not inlined: {_first_line(exc)}")
    for i, t in enumerate(tree.find_all(exp.Table)):
        t.meta[_REF] = f"r{i + 1}"
    try:
        return analyzer.run()
    except SqlglotError as exc:
        return PruningPlan(sql=sql, refs=[], parse_error=f"unsupported SQL: {_first_line(exc)}",
                           _tree=tree)


def table_names(tree: exp.Expression) -> set[str]:
    """The tables a parsed query reads (lower case, as written; CTE names left out). A cheap
    look before :func:`analyze`, which also resolves every relation's columns: when none of
    these names can be pruned, the session skips the analysis (a query over dimensions only
    pays nothing for dpp)."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return {_table_name(t).lower() for t in tree.find_all(exp.Table)
            if t.name and not (not t.db and t.name.lower() in ctes)}


def rewrite(plan: PruningPlan, replacements: dict[str, str]) -> str:
    """The query with each replaced reference reading the given view; aliases are kept (a
    reference without one is aliased with its table name, so qualified columns resolve)."""
    if plan._tree is None:
        return plan.sql
    if not replacements:
        return plan.sql
    tree = plan._tree.copy()
    for t in list(tree.find_all(exp.Table)):
        ref = t.meta.get(_REF)
        if ref in replacements:
            # keep every other part of the reference (hints, ...): only the name changes
            if not t.alias:
                t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
            t.set("this", exp.to_identifier(replacements[ref]))
            t.set("db", None)
            t.set("catalog", None)
    return tree.sql(dialect="spark")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__


class _Source:
    """One FROM/JOIN item of a SELECT scope."""

    def __init__(self, alias: str, node: exp.Expression, table: Optional[str],
                 info: Optional[TableInfo]) -> None:
        self.alias = alias
        self.node = node                # exp.Table or exp.Subquery
        self.table = table              # base table name (None for derived tables)
        self.info = info
        self.cte: Optional[exp.Expression] = None   # CTE body when the table names a CTE
        self.null_supplied = False      # outer join may fill it with NULLs
        self.preserved_outer = False    # preserved side of some outer join
        self.semi_right = False         # right side of SEMI/ANTI: not visible above
        self.outer_on: list[exp.Expression] = []     # its own outer join's ON conjuncts
        self.full = False

    @property
    def prunable(self) -> bool:
        return self.info is not None and self.cte is None and isinstance(self.node, exp.Table)


@dataclass
class _Scope:
    """One SELECT being analysed: its FROM items and the conjuncts that hold for its rows."""

    sel: exp.Select
    sources: dict[str, _Source]
    where: list[exp.Expression]          # WHERE conjuncts (pushed ones included)
    inner_on: list[exp.Expression]       # ON conjuncts of its inner joins

    def owner(self, c: exp.Column, probe: Optional[_Source] = None) -> Optional[str]:
        """Which FROM item a column belongs to; with one FROM item, ``probe`` owns every
        unqualified column."""
        single = probe.alias if probe is not None and len(self.sources) == 1 else None
        return _owner(c, self.sources, single_alias=single)


class _Analyzer:
    def __init__(self, sql: str, tree: exp.Expression, resolve: Resolver,
                 rules: SparkRules = DEFAULT_RULES) -> None:
        self.sql = sql
        self.rules = rules
        self.tree = tree                # the query Spark runs (CTEs inlined where worth it)
        self.atree: exp.Expression = tree   # the analysis copy, with predicates pushed in
        self._resolve_raw = resolve
        self._cache: dict[str, Optional[TableInfo]] = {}
        self.refs: dict[str, TableRefPlan] = {}
        self.notes: list[str] = []
        self.ctes: dict[str, exp.Expression] = {}
        self._fid = 0

    def resolve(self, name: str) -> Optional[TableInfo]:
        key = name.lower()
        if key not in self._cache:
            self._cache[key] = self._resolve_raw(key)
        return self._cache[key]

    def _partitioned(self, t: exp.Table) -> bool:
        info = self.resolve(_table_name(t))
        return info is not None and bool(info.partition_columns)

    def inline(self) -> None:
        """Each use of a deterministic CTE holding a partitioned table becomes its own copy,
        pruned by its own filters (see dpp.pushdown)."""
        with_ = self.tree.args.get("with_")
        names = {c.alias_or_name.lower() for c in with_.expressions} if with_ else set()

        def worth(body: exp.Expression) -> bool:      # CTE names are not tables to resolve
            return any(self._partitioned(t) for t in body.find_all(exp.Table)
                       if t.args.get("db") or t.name.lower() not in names)
        self.notes.extend(inline_ctes(self.tree, worth))

    def run(self) -> PruningPlan:
        self.atree = self.tree.copy()
        self.ctes = {c.alias_or_name.lower(): c.this for c in self.atree.find_all(exp.CTE)}
        self._push_down()
        for sel in list(self.atree.find_all(exp.Select)):
            if not inside_pushed_query(sel):
                self._select(sel)
        # references not reached by any SELECT scope (should not happen) stay unpruned
        for t in self.atree.find_all(exp.Table):
            ref = t.meta.get(_REF)
            name = _table_name(t)
            if ref in self.refs or name.lower() in self.ctes or inside_pushed_query(t):
                continue
            info = self.resolve(name)
            if info is not None and info.partition_columns:
                self.refs[ref] = TableRefPlan(ref, name.lower(), t.alias or None, False,
                                              "not in a SELECT scope the analyzer handles",
                                              TupleDomain.all())
        refs = sorted(self.refs.values(), key=lambda r: int(r.ref_id[1:]))
        return PruningPlan(sql=self.sql, refs=refs, notes=self.notes, _tree=self.tree)

    # ------------------------------------------------------------------ pushing inward
    def _push_down(self) -> None:
        """Outer scopes first (sqlglot's scope tree, parents before children), so a conjunct
        pushed into a derived table travels on into the derived tables below it."""
        if not any(isinstance(s, exp.Subquery) and self._holds_fact(s.this)
                   for s in self.atree.find_all(exp.Subquery)):
            return
        try:
            root = build_scope(self.atree)
        except (SqlglotError, KeyError, ValueError) as exc:
            self.notes.append(f"predicates not pushed inward: {_first_line(exc)}")
            return
        if root is None:
            return
        for scope in reversed(list(root.traverse())):
            if isinstance(scope.expression, exp.Select):
                self._push_from(scope.expression)

    def _is_fact(self, s: _Source) -> bool:
        if s.info is not None:
            return bool(s.info.partition_columns)
        body = s.cte if s.cte is not None else s.node.this
        return self._holds_fact(body)

    def _holds_fact(self, body: exp.Expression) -> bool:
        return any(self._partitioned(t) for t in body.find_all(exp.Table)
                   if t.name.lower() not in self.ctes or t.args.get("db"))

    def _push_from(self, sel: exp.Select) -> None:
        sc = self._scope(sel)
        if sc is None:
            return
        targets = {a: s for a, s in sc.sources.items()
                   if isinstance(s.node, exp.Subquery) and not s.full and not s.semi_right
                   and self._holds_fact(s.node.this)}
        if not targets:
            return
        for c in sc.where:
            s = self._pushable(c, sc, targets, "WHERE")
            if s is not None:
                self._push_one(c, s, f"pushed from outer WHERE {_short(c)}")
        for c in sc.inner_on:
            s = self._pushable(c, sc, targets, "ON")
            if s is not None:
                self._push_one(c, s, f"pushed from outer ON {_short(c)}")
        for s in targets.values():
            for c in s.outer_on if s.null_supplied else []:
                if self._pushable(c, sc, {s.alias: s}, "OWN_ON") is s:
                    self._push_one(c, s, f"pushed from its outer join's ON {_short(c)}")
        for c in sc.where + sc.inner_on:
            self._push_semi(c, sc, targets)

    def _pushable(self, c: exp.Expression, sc: _Scope, targets: dict[str, _Source],
                  where: str) -> Optional[_Source]:
        """The derived table a conjunct is about alone, when moving it there is sound: any
        deterministic conjunct from WHERE or an inner join's ON; into the null-supplying side
        of an outer join only its own ON conjuncts, or WHERE comparisons that reject NULL."""
        cols = outer_columns(c)
        if not cols:
            return None
        owners = {sc.owner(col) for col in cols}
        if len(owners) != 1:
            return None
        s = targets.get(owners.pop() or "")
        if s is None or not deterministic(c):
            return None
        if _has_subquery(c) and not any(q.meta.get(PUSHED_QUERY)
                                        for q in c.find_all(exp.Subquery)):
            return None
        if where == "OWN_ON":
            return s if s.null_supplied else None
        if s.null_supplied:
            if where != "WHERE" or _has_is_null(c) or not _null_rejecting(c):
                return None
        return s

    def _push_one(self, c: exp.Expression, s: _Source, origin: str) -> None:
        positions = _positions(s.node)
        template = c.copy()
        for col in outer_columns(template):
            pos = positions.get(col.name.lower())
            if pos is None:
                return
            col.meta[POSITION] = pos
        push_into(s.node.this, template, origin, self.notes)

    def _push_semi(self, c: exp.Expression, sc: _Scope, targets: dict[str, _Source]) -> None:
        """``dt.col = dim.key`` with a filtered dimension: ``col IN (dimension's keys)``
        inside the derived table, where it can prune the fact that produces ``col``."""
        if not isinstance(c, exp.EQ) or not all(isinstance(x, exp.Column)
                                                for x in (c.this, c.expression)):
            return
        a, b = c.this, c.expression
        if sc.owner(b) in targets and sc.owner(a) not in targets:
            a, b = b, a
        dt = targets.get(sc.owner(a) or "")
        other = sc.sources.get(sc.owner(b) or "")
        if dt is None or other is None or other is dt or dt.null_supplied or \
                other.null_supplied or other.semi_right or self._is_fact(other):
            return      # a build side over another fact would scan it whole to prune this one
        built = self._build_query(other, b, sc, sc.where + sc.inner_on, dt)
        if built is None:
            return
        query, _tables, label = built
        if not _repeatable(query):
            return
        pos = _positions(dt.node).get(a.name.lower())
        if pos is None:
            return
        sub = exp.Subquery(this=_with_ctes(query, self.ctes))
        sub.meta[PUSHED_QUERY] = True
        placeholder = exp.column(a.name)
        placeholder.meta[POSITION] = pos
        template = exp.In(this=placeholder, query=sub)
        push_into(dt.node.this, template, f"semi join pushed from outer {_short(c)} "
                  f"(values of {label})", self.notes)

    # ------------------------------------------------------------------ one SELECT
    def _scope(self, sel: exp.Select) -> Optional[_Scope]:
        sources = self._sources(sel)
        if not sources:
            return None
        where = sel.args.get("where")
        inner_on: list[exp.Expression] = []
        for j in sel.args.get("joins") or []:
            side, kind = _join_type(j)
            if side == "" and kind in ("", "INNER", "CROSS"):
                inner_on.extend(_conjuncts(j.args.get("on")))
        return _Scope(sel, sources, _conjuncts(where.this) if where is not None else [],
                      inner_on)

    def _select(self, sel: exp.Select) -> None:
        sc = self._scope(sel)
        if sc is None:
            return
        for p in sc.sources.values():
            if p.prunable and (p.info.partition_columns  # type: ignore[union-attr]
                               or p.info.data_only):  # type: ignore[union-attr]
                self._probe(p, sc)

    def _sources(self, sel: exp.Select) -> dict[str, _Source]:
        out: dict[str, _Source] = {}
        frm = sel.args.get("from_")
        if frm is None:
            return out
        order: list[_Source] = []

        def add(node: exp.Expression) -> Optional[_Source]:
            if isinstance(node, exp.Table):
                name = _table_name(node)
                alias = (node.alias or node.name).lower()
                src = _Source(alias, node, name.lower(), None)
                if name.lower() in self.ctes and not node.args.get("db"):
                    src.cte = self.ctes[name.lower()]
                else:
                    src.info = self.resolve(name)
            elif isinstance(node, exp.Subquery):
                alias = (node.alias or "").lower()
                src = _Source(alias, node, None, None)
            else:  # lateral views, table functions, VALUES: unknown shape
                return None
            out[src.alias] = src
            order.append(src)
            return src

        add(frm.this)
        for j in sel.args.get("joins") or []:
            side, kind = _join_type(j)
            src = add(j.this)
            if src is None:
                continue
            if kind in ("SEMI", "ANTI"):
                src.semi_right = True
            elif side == "LEFT":
                src.null_supplied = True
                src.outer_on = _conjuncts(j.args.get("on"))
                for s in order[:-1]:
                    s.preserved_outer = True
            elif side == "RIGHT":
                for s in order[:-1]:
                    s.null_supplied = True
                    s.outer_on = _conjuncts(j.args.get("on")) if len(order) == 2 else []
                src.preserved_outer = True
            elif side == "FULL":
                for s in order:
                    s.null_supplied = True
                    s.full = True
        return out

    # ------------------------------------------------------------------ one probe reference
    def _probe(self, p: _Source, sc: _Scope) -> None:
        ref = p.node.meta.get(_REF)
        info = p.info
        assert info is not None
        plan = TableRefPlan(ref, info.name, p.node.alias or None, False, None, TupleDomain.all(),
                            data_only=not info.partition_columns)
        self.refs[ref] = plan
        if plan.data_only:
            self._probe_data_only(p, sc, plan)
            return
        cols = {c.lower(): t for c, t in info.columns.items()}

        def owner(c: exp.Column) -> Optional[str]:
            return sc.owner(c, probe=p)

        if p.semi_right:
            plan.reason = "right side of a semi/anti join (only its existence is tested)"
            return
        alias_node = p.node.args.get("alias")
        if alias_node is not None and alias_node.args.get("columns"):
            plan.reason = "unsupported expression: column aliases on the table reference"
            return
        if any(p.node.args.get(k) for k in ("sample", "version", "when", "pivots",
                                                         "joins", "laterals")):
            plan.reason = ("unsupported expression: TABLESAMPLE, time travel or pivot on the "
                           "table reference")
            return
        empty = sc.sel.meta.get(EMPTY)
        if empty:           # WHERE is false: no row of this SELECT survives, whatever it joins
            plan.static = TupleDomain.none()
            plan.pruning = True
            plan.notes.append(f"reads nothing: {empty}")
            return
        # ---- static domains
        if p.full:
            static_src: list[exp.Expression] = []
            plan.notes.append("full outer join: static predicates not used")
        elif p.null_supplied:
            static_src = list(p.outer_on) + [c for c in sc.where if not _has_is_null(c)]
        else:
            static_src = sc.where + sc.inner_on
        static = TupleDomain.all()
        for c in static_src:
            d = self._static_conjunct(c, p, cols, owner)
            if d is not None:
                static = static.intersect(d)
                if c.meta.get(ORIGIN):
                    plan.notes.append(f"static {_short(c)}: {c.meta[ORIGIN]}")
        plan.static = static
        # ---- dynamic filters
        if p.full:
            plan.reason = "full outer join: both sides are preserved"
        elif p.null_supplied:
            for c in p.outer_on:
                self._equi(c, p, sc, owner, plan, "outer_non_preserved",
                           allow_build=lambda s: not s.null_supplied or s.preserved_outer)
        else:
            for c in sc.where + sc.inner_on:
                self._equi(c, p, sc, owner, plan, "inner",
                           allow_build=lambda s: not s.null_supplied)
            for j in sc.sel.args.get("joins") or []:
                side, kind = _join_type(j)
                if kind == "SEMI":
                    right = j.this
                    ralias = (right.alias or getattr(right, "name", "") or "").lower()
                    for c in _conjuncts(j.args.get("on")):
                        self._equi(c, p, sc, owner, plan, "semi",
                                   allow_build=lambda s, ra=ralias: s.alias == ra,
                                   extra_locals=_conjuncts(j.args.get("on")))
            for c in sc.where:
                self._subquery_semi(c, p, owner, plan)
        if p.preserved_outer and not plan.dynamic and plan.reason is None:
            plan.notes.append("preserved side of an outer join: not pruned by that join")
        has_static = not plan.static.is_all()
        if plan.dynamic or has_static:
            plan.pruning = True
            plan.reason = None
        elif plan.reason is None:
            if p.preserved_outer:
                plan.reason = "preserved side of an outer join, and no other usable predicate"
            else:
                plan.reason = plan.notes[-1] if plan.notes else "no usable predicate"

    def _probe_data_only(self, p: _Source, sc: _Scope, plan: TableRefPlan) -> None:
        """A table with no partition column: only its inner (or semi-joined) equi-joins to a
        filtered side count, as dynamic filters on its data columns. Anything less and it is
        no reference at all (the query reads it as written; nothing to report)."""
        def owner(c: exp.Column) -> Optional[str]:
            return sc.owner(c, probe=p)

        simple = not (p.semi_right or p.null_supplied or p.full or sc.sel.meta.get(EMPTY))
        alias_node = p.node.args.get("alias")
        if simple and not (alias_node is not None and alias_node.args.get("columns")) and \
                not any(p.node.args.get(k) for k in ("sample", "version", "when", "pivots",
                                                     "joins", "laterals")):
            for c in sc.where + sc.inner_on:
                self._equi(c, p, sc, owner, plan, "inner",
                           allow_build=lambda s: not s.null_supplied)
            for c in sc.where:
                self._subquery_semi(c, p, owner, plan)
        if plan.dynamic:
            plan.pruning = True
        else:
            del self.refs[plan.ref_id]

    def _static_conjunct(self, c: exp.Expression, p: _Source, cols: dict[str, Any],
                         owner: Callable[[exp.Column], Optional[str]]) -> Optional[TupleDomain]:
        res = _static_domain(c, lambda col: owner(col) == p.alias and
                             col.name.lower() in cols, cols, self.rules)
        if res is None:
            return None
        col, dom = res
        return TupleDomain.of({col: dom})

    # ------------------------------------------------------------------ joins
    def _equi(self, c: exp.Expression, p: _Source, sc: _Scope,
              owner: Callable[[exp.Column], Optional[str]], plan: TableRefPlan, kind: str,
              allow_build: Callable[[_Source], bool],
              extra_locals: Optional[list[exp.Expression]] = None) -> None:
        if isinstance(c, exp.NullSafeEQ):
            plan.notes.append("null-safe equality (<=>) matches NULLs: not used")
            return
        if not isinstance(c, exp.EQ):
            if isinstance(c, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ)) and \
                    _two_sided(c, p, owner):
                plan.notes.append(f"non-equi join predicate not used: {c.sql('spark')}")
            return
        a, b = c.this, c.expression
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
            return
        if owner(b) == p.alias and owner(a) != p.alias:
            a, b = b, a
        if owner(a) != p.alias or owner(b) in (None, p.alias):
            return
        probe_col = a.name.lower()
        if probe_col not in (k.lower() for k in p.info.columns):  # type: ignore[union-attr]
            return
        other = sc.sources.get(owner(b) or "")
        if other is None or not allow_build(other):
            return
        locals_ = sc.where + sc.inner_on + (extra_locals or [])
        if other.null_supplied and not other.preserved_outer:
            locals_ = list(other.outer_on) + (extra_locals or [])
        build = self._build_query(other, b, sc, locals_, p)
        if build is None:
            return
        tree, tables, label = build
        if not _repeatable(tree):
            plan.notes.append(f"build side {label} is not repeatable (random functions, "
                              f"LIMIT or sampling): not used")
            return
        q = tree.sql(dialect="spark")
        for existing in plan.dynamic:
            if existing.build_query == q and existing.probe_column == probe_col:
                return
        btype = None
        if other.info is not None:
            btype = {k.lower(): v for k, v in other.info.columns.items()}.get(b.name.lower())
        ptype = {k.lower(): v for k, v in p.info.columns.items()}.get(probe_col)  # type: ignore[union-attr]
        if btype is not None and ptype is not None and not _compatible(btype, ptype):
            plan.notes.append(f"type mismatch: {label} is {btype}, {p.table}.{probe_col} is "
                              f"{ptype}; filter not used")
            return
        self._fid += 1
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, label, tables,
                                              kind, btype, origin=_origins(tree)))

    def _build_query(self, other: _Source, key: exp.Column, sc: _Scope,
                     conjuncts: list[exp.Expression], probe: _Source
                     ) -> Optional[tuple[exp.Select, tuple[str, ...], str]]:
        """SELECT other.key AS dpp_key FROM other [JOIN filtered neighbours] WHERE locals,
        as a tree: rendered once, by the caller."""
        def local_to(alias: str) -> list[exp.Expression]:
            out = []
            for c in conjuncts:
                if _has_subquery(c) and not self._self_contained(c):
                    continue
                cols = outer_columns(c)
                if cols and {sc.owner(col) for col in cols} == {alias}:
                    out.append(c)
            return out

        def filtered(src: _Source) -> bool:
            return bool(local_to(src.alias)) or src.node is not None and (
                isinstance(src.node, exp.Subquery) or src.cte is not None) and \
                _query_filters(src.cte if src.cte is not None else src.node.this)

        members = [other]
        joins: list[exp.Expression] = []
        if not other.null_supplied or other.preserved_outer:
            # snowflake: inner neighbours joined by equality that carry filters of their own
            frontier = [other]
            while frontier and len(members) < 6:
                cur = frontier.pop()
                for c in conjuncts:
                    if not isinstance(c, exp.EQ) or not all(isinstance(x, exp.Column)
                                                            for x in (c.this, c.expression)):
                        continue
                    oa, ob = sc.owner(c.this), sc.owner(c.expression)
                    if cur.alias not in (oa, ob):
                        continue
                    nb_alias = ob if oa == cur.alias else oa
                    nb = sc.sources.get(nb_alias or "")
                    if nb is None or nb is probe or nb in members or nb.null_supplied or \
                            nb.semi_right:
                        continue
                    if nb.info is not None and nb.info.partition_columns and nb.prunable:
                        continue  # never drag another fact table into a build side
                    if not filtered(nb):
                        continue
                    members.append(nb)
                    joins.append(c)
                    frontier.append(nb)
        if not any(filtered(m) for m in members):
            return None
        sel = exp.select(exp.alias_(exp.column(key.name, table=other.alias), KEY_ALIAS))
        for i, m in enumerate(members):
            item = self._source_sql(m)
            if item is None:
                return None
            if i == 0:
                sel = sel.from_(item)
            else:
                sel = sel.join(item, on=joins[i - 1].copy(), join_type="inner")
        locals_all = [c.copy() for m in members for c in local_to(m.alias)]
        if locals_all:
            sel = sel.where(exp.and_(*locals_all))
        tables = tuple(sorted({t for m in members for t in self._tables_of(m)}))
        label = f"{other.table or other.alias}.{key.name}"
        return sel, tables, label

    def _self_contained(self, c: exp.Expression) -> bool:
        """Every subquery of a conjunct is uncorrelated (a build side carries it whole: a
        scalar subquery bounding a date range, an IN list pushed in), so it can be copied
        into a build query. A column inside binds inside when a table there has it."""
        for sub in c.find_all(exp.Subquery):
            if sub.meta.get(PUSHED_QUERY):
                continue
            if sub.find_ancestor(exp.Subquery) is not None and \
                    _below_subquery_of(sub, c):
                continue            # checked with the outermost one
            aliases, names = set(), set()
            for t in sub.find_all(exp.Table):
                aliases.add((t.alias or t.name).lower())
                if t.name.lower() in self.ctes and not t.args.get("db"):
                    names |= {n.lower() for n in self.ctes[t.name.lower()].named_selects}
                    continue
                info = self.resolve(_table_name(t))
                if info is None:
                    return False
                names |= {k.lower() for k in info.columns}
            aliases |= {(s.alias or "").lower() for s in sub.find_all(exp.Subquery)}
            for q in sub.find_all(exp.Select):
                names |= {n.lower() for n in q.named_selects}
            for col in sub.find_all(exp.Column):
                if col.table:
                    if col.table.lower() not in aliases:
                        return False
                elif col.name.lower() not in names:
                    return False
        return True

    def _tables_of(self, src: _Source) -> set[str]:
        if src.table is not None and src.cte is None:
            return {src.table}
        body = src.cte if src.cte is not None else src.node.this
        return {_table_name(t).lower() for t in body.find_all(exp.Table)
                if t.name.lower() not in self.ctes} or {src.table or src.alias}

    def _source_sql(self, src: _Source) -> Optional[exp.Expression]:
        alias = exp.TableAlias(this=exp.to_identifier(src.alias))
        if src.cte is not None:
            body = _with_ctes(src.cte.copy(), self.ctes)
            return exp.Subquery(this=body, alias=alias)
        if isinstance(src.node, exp.Table):
            t = src.node.copy()
            t.set("alias", alias)
            t.meta.pop(_REF, None)
            return t
        if isinstance(src.node, exp.Subquery):
            body = _with_ctes(src.node.this.copy(), self.ctes)
            return exp.Subquery(this=body, alias=alias)
        return None

    # ------------------------------------------------------------------ IN / EXISTS
    def _subquery_semi(self, c: exp.Expression, p: _Source,
                       owner: Callable[[exp.Column], Optional[str]], plan: TableRefPlan) -> None:
        if isinstance(c, exp.Not):
            inner = c.this
            if isinstance(inner, (exp.In, exp.Exists)):
                plan.notes.append("anti join (NOT IN / NOT EXISTS): never pruned")
            return
        if isinstance(c, exp.In) and c.args.get("query") is not None:
            col = c.this
            if not isinstance(col, exp.Column) or owner(col) != p.alias:
                return
            sub = c.args["query"]
            body = sub.this if isinstance(sub, exp.Subquery) else sub
            if not isinstance(body, exp.Query) or _correlated(body, p.alias):
                plan.notes.append("correlated IN subquery: not used")
                return
            if not _query_filters(body):
                plan.notes.append("IN subquery without predicates: not used")
                return
            q = _with_ctes(body.copy(), self.ctes)
            self._add_dynamic(plan, col.name.lower(), q, _label(body), "semi",
                              c.meta.get(ORIGIN))
        elif isinstance(c, exp.Exists):
            body = c.this
            if isinstance(body, exp.Subquery):
                body = body.this
            if not isinstance(body, exp.Select):
                return
            if _aggregates_without_group(body):
                plan.notes.append("EXISTS over an aggregate without GROUP BY is always true: "
                                  "not used")
                return
            where = body.args.get("where")
            if where is None:
                return
            correlated, rest = [], []
            for cj in _conjuncts(where.this):
                if _refers_to(cj, p.alias):
                    correlated.append(cj)
                else:
                    rest.append(cj)
            if len(correlated) != 1 or not isinstance(correlated[0], exp.EQ):
                if correlated:
                    plan.notes.append("EXISTS with a non-equality correlation: not used")
                return
            eq = correlated[0]
            a, b = eq.this, eq.expression
            if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
                return
            if _refers_to(b, p.alias):
                a, b = b, a
            if not _refers_to(a, p.alias) or _refers_to(b, p.alias):
                return
            if a.name.lower() not in (k.lower() for k in p.info.columns):  # type: ignore[union-attr]
                return
            if not rest:
                plan.notes.append("EXISTS subquery without predicates: not used")
                return
            sub = body.copy()
            sub.set("where", exp.Where(this=exp.and_(*[x.copy() for x in rest])))
            for k in ("group", "having", "order", "limit", "offset", "qualify"):
                sub.set(k, None)
            sub.set("expressions", [exp.alias_(b.copy(), KEY_ALIAS)])
            sub.set("distinct", None)
            q = _with_ctes(sub, self.ctes)
            self._add_dynamic(plan, a.name.lower(), q, _label(body), "semi")

    def _add_dynamic(self, plan: TableRefPlan, probe_col: str, tree: exp.Expression,
                     label: str, kind: str, origin: Optional[str] = None) -> None:
        if not _repeatable(tree):
            plan.notes.append(f"build side {label} is not repeatable (random functions, "
                              f"LIMIT or sampling): not used")
            return
        q = tree.sql(dialect="spark")
        for existing in plan.dynamic:
            if existing.build_query == q and existing.probe_column == probe_col:
                return
        self._fid += 1
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        tables = tuple(sorted({_table_name(t).lower() for t in tree.find_all(exp.Table)
                               if t.name.lower() not in ctes or t.args.get("db")}))
        origins = [o for o in (origin, _origins(tree)) if o]
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, label, tables,
                                              kind, origin="; ".join(origins) or None))


# ====================================================================== helpers

def _short(c: exp.Expression, width: int = 90) -> str:
    text = c.sql(dialect="spark")
    return text if len(text) <= width else text[:width - 1] + "…"


def _positions(node: exp.Subquery) -> dict[str, int]:
    """Output column name → position, for a derived table (its alias's column list, else the
    names its query selects; a UNION is named by its first branch)."""
    alias = node.args.get("alias")
    names = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
    if not names:
        names = list(node.this.named_selects)
    out: dict[str, int] = {}
    for i, n in enumerate(names):
        out.setdefault(n.lower(), i)
    return out


_NULL_AWARE = (exp.Is, exp.Coalesce, exp.Case, exp.If, exp.NullSafeEQ, exp.NullSafeNEQ,
               exp.Anonymous, exp.Not, exp.Or)


def _null_rejecting(c: exp.Expression) -> bool:
    """A comparison that is never true on NULL: safe to move into the null-supplying side of
    an outer join from the WHERE above it (the rows it removes there would be removed above)."""
    c = c.unnest() if isinstance(c, exp.Paren) else c
    if not isinstance(c, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.In,
                          exp.Between, exp.Like)):
        return False
    return not any(True for _ in c.find_all(*_NULL_AWARE))


def _origins(tree: exp.Expression) -> Optional[str]:
    """Where the pushed conjuncts a build query carries came from (for ``explain``)."""
    where = tree.args.get("where")
    found = [c.meta[ORIGIN] for c in (_conjuncts(where.this) if where is not None else [])
             if c.meta.get(ORIGIN)]
    return "; ".join(dict.fromkeys(found)) or None


def _table_name(t: exp.Table) -> str:
    parts = [p.name for p in t.parts]
    return ".".join(parts) if parts else t.name


def _join_type(j: exp.Join) -> tuple[str, str]:
    side = (j.args.get("side") or "").upper()
    kind = (j.args.get("kind") or "").upper()
    if kind == "OUTER" and not side:
        side = "FULL"
    return side, kind


def _conjuncts(e: Optional[exp.Expression]) -> list[exp.Expression]:
    if e is None:
        return []
    out = []
    for c in e.flatten() if isinstance(e, exp.And) else [e]:
        c = c.unnest() if isinstance(c, exp.Paren) else c
        if isinstance(c, exp.And):
            out.extend(_conjuncts(c))
        else:
            out.append(c)
    return out


def _owner(c: exp.Column, sources: dict[str, _Source], single_alias: Optional[str]
           ) -> Optional[str]:
    """Which FROM item of this scope a column belongs to (None: outer scope or unknown)."""
    t = c.table.lower() if c.table else ""
    if t:
        return t if t in sources else None
    if single_alias is not None:
        return single_alias
    name = c.name.lower()
    hits = []
    for s in sources.values():
        if s.info is not None:
            if name in (k.lower() for k in s.info.columns):
                hits.append(s.alias)
        elif isinstance(s.node, exp.Subquery):
            if name in _positions(s.node):
                hits.append(s.alias)
        elif s.cte is not None:
            if name in {n.lower() for n in getattr(s.cte, "named_selects", [])}:
                hits.append(s.alias)
    return hits[0] if len(hits) == 1 else None


def _below_subquery_of(sub: exp.Expression, top: exp.Expression) -> bool:
    """Is ``sub`` nested in another subquery that is itself inside ``top``?"""
    p = sub.parent
    while p is not None and p is not top:
        if isinstance(p, exp.Subquery):
            return True
        p = p.parent
    return False


def _has_is_null(c: exp.Expression) -> bool:
    for n in c.find_all(exp.Is):
        if not isinstance(n.parent, exp.Not):
            return True
    return bool(list(c.find_all(exp.Coalesce)))


def _has_subquery(c: exp.Expression) -> bool:
    return any(True for _ in c.find_all(exp.Select))


def _refers_to(e: exp.Expression, alias: str) -> bool:
    return any(col.table and col.table.lower() == alias for col in e.find_all(exp.Column))


def _correlated(body: exp.Expression, alias: str) -> bool:
    inner_aliases = {(t.alias or t.name).lower() for t in body.find_all(exp.Table)}
    inner_aliases |= {(s.alias or "").lower() for s in body.find_all(exp.Subquery)}
    return alias not in inner_aliases and _refers_to(body, alias)


def _query_filters(body: Optional[exp.Expression]) -> bool:
    """Does a subquery/CTE body restrict its rows at all (WHERE, JOIN ON filters, HAVING,
    LIMIT, or set operations of filtered branches)?"""
    if body is None:
        return False
    if isinstance(body, exp.Union):
        return _query_filters(body.left) and _query_filters(body.right)
    if isinstance(body, (exp.Intersect, exp.Except)):
        return True
    if isinstance(body, exp.Select):
        if body.args.get("where") is not None or body.args.get("having") is not None or \
                body.args.get("limit") is not None:
            return True
        frm = body.args.get("from_")
        if frm is not None and isinstance(frm.this, exp.Subquery) and \
                _query_filters(frm.this.this):
            return True
        return bool(body.args.get("joins"))
    return False


def _with_ctes(body: exp.Expression, ctes: dict[str, exp.Expression]) -> exp.Expression:
    """Prefixes the CTEs a build query needs (all of the query's, in order; Spark drops the
    unused ones), unless the body already has its own WITH."""
    if not ctes or body.args.get("with_") is not None:
        return body
    names = {t.name.lower() for t in body.find_all(exp.Table)}
    if not names & set(ctes):
        return body
    with_ = exp.With(expressions=[exp.CTE(this=v.copy(), alias=exp.TableAlias(
        this=exp.to_identifier(k))) for k, v in ctes.items()])
    body.set("with_", with_)
    return body


def _label(body: exp.Expression) -> str:
    sels = getattr(body, "selects", None) or []
    frm = body.find(exp.Table)
    first = sels[0].alias_or_name if sels else "?"
    return f"{frm.name if frm is not None else 'subquery'}.{first}"


def _two_sided(c: exp.Expression, p: _Source, owner: Callable[[exp.Column], Optional[str]]) -> bool:
    owners = {owner(col) for col in c.find_all(exp.Column)}
    return p.alias in owners and len(owners) > 1


def _repeatable(tree: exp.Expression) -> bool:
    """A build query must select the same keys when Spark evaluates the query itself: no
    random or per-run functions, no LIMIT (which rows is unspecified) and no sampling."""
    if any(True for _ in tree.find_all(exp.Limit)):
        return False
    return deterministic(tree)


def _aggregates_without_group(body: exp.Select) -> bool:
    if body.args.get("group") is not None:
        return False
    return any(isinstance(e.unalias(), exp.AggFunc) or any(True for _ in e.find_all(exp.AggFunc))
               for e in body.expressions)


def _compatible(build: DataType, probe: DataType) -> bool:
    if build == probe:
        return True
    if build.is_integral and probe.is_integral:
        return True
    if build.name == probe.name == "decimal":
        return True
    if build.is_floating and probe.is_floating:
        return True
    # a date is its midnight, an NTZ reading meets an instant in the session zone:
    # dpp.core.reconcile converts between the three with the session's rules
    temporal = ("date", "timestamp", "timestamp_ntz")
    return build.name in temporal and probe.name in temporal


# ---------------------------------------------------------------------- static domains

_CMP = {exp.EQ: "=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}


def _static_domain(c: exp.Expression, is_probe_col: Callable[[exp.Column], bool],
                   cols: dict[str, Optional[DataType]],
                   rules: SparkRules = DEFAULT_RULES) -> Optional[tuple[str, Domain]]:
    """(column, domain) for a conjunct on one probe column against literals, else None."""
    c = c.unnest() if isinstance(c, exp.Paren) else c
    if isinstance(c, exp.Or):
        parts = [_static_domain(x, is_probe_col, cols, rules) for x in c.flatten()]
        if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:  # type: ignore[index]
            return None
        col = parts[0][0]  # type: ignore[index]
        dom = parts[0][1]  # type: ignore[index]
        for p in parts[1:]:
            dom = dom.union(p[1])  # type: ignore[index]
        return col, dom
    if isinstance(c, exp.Not) and isinstance(c.this, exp.Is) and isinstance(c.this.expression, exp.Null):
        col = c.this.this
        if isinstance(col, exp.Column) and is_probe_col(col):
            t = cols.get(col.name.lower())
            if t is not None:
                return col.name.lower(), Domain.not_null(t)
        return None
    if isinstance(c, exp.Is) and isinstance(c.expression, exp.Null):
        col = c.this
        if isinstance(col, exp.Column) and is_probe_col(col):
            t = cols.get(col.name.lower())
            if t is not None:
                return col.name.lower(), Domain.only_null(t)
        return None
    if type(c) in _CMP:
        op = _CMP[type(c)]
        a, b = c.this, c.expression
        if isinstance(b, exp.Column) and not isinstance(a, exp.Column):
            a, b, op = b, a, _FLIP[op]
        if not (isinstance(a, exp.Column) and is_probe_col(a)):
            return None
        t = cols.get(a.name.lower())
        if t is None:
            return None
        v = _literal(b, t, rules)
        if v is _NO:
            return None
        name = a.name.lower()
        if op == "=":
            return name, Domain.values(t, [v])
        if op == ">":
            return name, Domain.range(t, v, None, low_inclusive=False)
        if op == ">=":
            return name, Domain.range(t, v, None)
        if op == "<":
            return name, Domain.range(t, None, v, high_inclusive=False)
        return name, Domain.range(t, None, v)
    if isinstance(c, exp.In) and c.args.get("query") is None and not c.args.get("unnest"):
        col = c.this
        if not (isinstance(col, exp.Column) and is_probe_col(col)):
            return None
        t = cols.get(col.name.lower())
        if t is None:
            return None
        vals = []
        for e in c.expressions:
            if isinstance(e, exp.Null):
                continue  # x IN (NULL, ...) never matches through the NULL
            v = _literal(e, t, rules)
            if v is _NO:
                return None
            vals.append(v)
        return col.name.lower(), Domain.values(t, vals)
    if isinstance(c, exp.Between):
        col = c.this
        if not (isinstance(col, exp.Column) and is_probe_col(col)):
            return None
        t = cols.get(col.name.lower())
        if t is None:
            return None
        lo, hi = _literal(c.args["low"], t, rules), _literal(c.args["high"], t, rules)
        if lo is _NO or hi is _NO:
            return None
        return col.name.lower(), Domain.range(t, lo, hi)
    return None


class _NoValue:
    pass


_NO: Any = _NoValue()


def _literal(e: exp.Expression, t: DataType, rules: SparkRules = DEFAULT_RULES) -> Any:
    """The literal as a value of the column's type, the way Spark would compare it; _NO
    when it is not a plain literal or the comparison would go through a cast we don't model."""
    e = e.unnest() if isinstance(e, exp.Paren) else e
    neg = False
    if isinstance(e, exp.Neg):
        neg, e = True, e.this
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
        target = e.to.sql(dialect="spark").lower()
        try:
            ct = DataType.parse(target)
        except DomainError:
            return _NO
        if ct.name != t.name and not (ct.is_integral and t.is_integral):
            return _NO
        e = e.this
    if isinstance(e, exp.Boolean):
        return e.this if t.name == "boolean" else _NO
    if not isinstance(e, exp.Literal):
        return _NO
    text = e.this
    if neg:
        if e.is_string:
            return _NO
        text = "-" + text
    try:
        if e.is_string:
            if t.name == "string":
                return text
            if t.name in ("date", "timestamp", "timestamp_ntz") or t.is_integral:
                return rules.read_text(t, text)
            return _NO
        # numeric literal
        if t.name == "string":
            return _NO
        if t.is_integral:
            d = decimal.Decimal(text)
            if d != d.to_integral_value():
                return _NO
            return t.coerce(int(d))
        if t.name == "decimal":
            return t.coerce(decimal.Decimal(text))
        if t.is_floating:
            return t.coerce(float(text))
        return _NO
    except (DomainError, decimal.InvalidOperation, ValueError):
        return _NO
