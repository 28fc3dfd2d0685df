"""Query analysis: SQL text → the pruning plan (which table references, by what, and why not).

One public function, :func:`analyze`, plus :func:`rewrite` to substitute pruned references.
Pure sqlglot and the domain algebra: no Spark, so it is fast and testable alone. This module
decides, per table reference, what prunes it; the parts it asks are :mod:`dpp.sql_plan` (the
plan's types), :mod:`dpp.sql_scopes` (a SELECT's FROM items and join sides),
:mod:`dpp.sql_push` (conjuncts moved into derived tables), :mod:`dpp.sql_build` (build-side
queries) and :mod:`dpp.sql_static` (domains from literals).

The rules (DESIGN, "Rules that keep results right"), per SELECT scope:

* Which side of a join may be pruned is :func:`dpp.rules.may_prune`'s answer. A reference is
  *inner* unless an outer join makes it null-supplying (the right side of a LEFT JOIN, the
  left of a RIGHT JOIN, either side of a FULL JOIN) or it is the right side of a SEMI/ANTI
  join. Dynamic filters come from equalities ``probe.col = other.col`` in WHERE
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

import functools
from typing import Any, Callable, Optional

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from dpp.core.domain import TupleDomain
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules
from dpp.pushdown import EMPTY, ORIGIN, inline_ctes, inside_pushed_query
from dpp.sql_build import build_query, label, origins, query_filters, repeatable, with_ctes
from dpp.sql_plan import (KEY_ALIAS, REF, ColumnInfo, DynamicFilterSpec, PruningPlan, Resolver,
                          TableInfo, TableRefPlan, first_line, short)
from dpp.sql_push import push_down
from dpp.sql_scopes import (Scope, Source, Tables, conjuncts, has_is_null, refers_to, scope,
                            semi_join, table_name, two_sided)
from dpp.sql_static import compatible, static_domain

__all__ = ["ColumnInfo", "TableInfo", "Resolver", "DynamicFilterSpec", "TableRefPlan",
           "PruningPlan", "KEY_ALIAS", "parse", "analyze", "table_names", "rewrite"]


# ====================================================================== analysis

def parse(sql: str) -> tuple[Optional[exp.Expression], Optional[str]]:
    """``(tree, None)`` for a query sqlglot parses, ``(None, why)`` for anything else."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as exc:
        return None, f"unparsable SQL: {first_line(exc)}"
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
        analyzer.notes.append(f"CTEs not inlined: {first_line(exc)}")
    for i, t in enumerate(tree.find_all(exp.Table)):
        t.meta[REF] = f"r{i + 1}"
    try:
        return analyzer.run()
    except SqlglotError as exc:
        return PruningPlan(sql=sql, refs=[], parse_error=f"unsupported SQL: {first_line(exc)}",
                           _tree=tree)


def table_names(tree: exp.Expression) -> set[str]:
    """The tables a parsed query reads (lower case, as written; CTE names left out). A cheap
    look before :func:`analyze`, which also resolves every relation's columns: when none of
    these names can be pruned, the session skips the analysis (a query over dimensions only
    pays nothing for dpp)."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return {table_name(t).lower() for t in tree.find_all(exp.Table)
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
        ref = t.meta.get(REF)
        if ref in replacements:
            # keep every other part of the reference (hints, ...): only the name changes
            if not t.alias:
                t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name)))
            t.set("this", exp.to_identifier(replacements[ref]))
            t.set("db", None)
            t.set("catalog", None)
    return tree.sql(dialect="spark")


class _Analyzer:
    """One query's analysis: every SELECT scope, each partitioned reference in it probed."""

    def __init__(self, sql: str, tree: exp.Expression, resolve: Resolver,
                 rules: SparkRules = DEFAULT_RULES) -> None:
        self.sql = sql
        self.rules = rules
        self.tree = tree                # the query Spark runs (CTEs inlined where worth it)
        self.atree: exp.Expression = tree   # the analysis copy, with predicates pushed in
        self.tables = Tables(resolve)
        self.refs: dict[str, TableRefPlan] = {}
        self.notes: list[str] = []
        self._fid = 0

    def inline(self) -> None:
        """Each use of a deterministic CTE holding a partitioned table becomes its own copy,
        pruned by its own filters (see dpp.pushdown)."""
        with_ = self.tree.args.get("with_")
        names = {c.alias_or_name.lower() for c in with_.expressions} if with_ else set()

        def worth(body: exp.Expression) -> bool:      # CTE names are not tables to resolve
            return any(self.tables.partitioned(t) for t in body.find_all(exp.Table)
                       if t.args.get("db") or t.name.lower() not in names)
        self.notes.extend(inline_ctes(self.tree, worth))

    def run(self) -> PruningPlan:
        self.atree = self.tree.copy()
        self.tables.ctes = {c.alias_or_name.lower(): c.this
                            for c in self.atree.find_all(exp.CTE)}
        push_down(self.atree, self.tables, self.notes)
        for sel in list(self.atree.find_all(exp.Select)):
            if not inside_pushed_query(sel):
                self._select(sel)
        # references not reached by any SELECT scope (should not happen) stay unpruned
        for t in self.atree.find_all(exp.Table):
            ref = t.meta.get(REF)
            name = table_name(t)
            if ref in self.refs or name.lower() in self.tables.ctes or inside_pushed_query(t):
                continue
            info = self.tables.info(name)
            if info is not None and info.partition_columns:
                self.refs[ref] = TableRefPlan(ref, name.lower(), t.alias or None, False,
                                              "not in a SELECT scope the analyzer handles",
                                              TupleDomain.all())
        refs = sorted(self.refs.values(), key=lambda r: int(r.ref_id[1:]))
        return PruningPlan(sql=self.sql, refs=refs, notes=self.notes, _tree=self.tree)

    def _select(self, sel: exp.Select) -> None:
        sc = scope(sel, self.tables)
        if sc is None:
            return
        for p in sc.sources.values():
            if p.prunable and (p.info.partition_columns  # type: ignore[union-attr]
                               or p.info.data_only):  # type: ignore[union-attr]
                self._probe(p, sc)


    def _probe(self, p: Source, sc: Scope) -> None:
        ref = p.node.meta.get(REF)
        info = p.info
        assert info is not None
        plan = TableRefPlan(ref, info.name, p.node.alias or None, False, None, TupleDomain.all(),
                            data_only=not info.partition_columns)
        self.refs[ref] = plan
        if plan.data_only:
            self._probe_data_only(p, sc, plan)
            return
        cols = {c.lower(): t for c, t in info.columns.items()}
        owner = functools.partial(sc.owner, probe=p)
        if p.semi_right:
            plan.reason = "right side of a semi/anti join (only its existence is tested)"
            return
        plan.reason = _unsupported_reference(p)
        if plan.reason is not None:
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
            static_src = list(p.outer_on) + [c for c in sc.where if not has_is_null(c)]
        else:
            static_src = sc.where + sc.inner_on
        static = TupleDomain.all()
        for c in static_src:
            d = self._static_conjunct(c, p, cols, owner)
            if d is not None:
                static = static.intersect(d)
                if c.meta.get(ORIGIN):
                    plan.notes.append(f"static {short(c)}: {c.meta[ORIGIN]}")
        plan.static = static
        # ---- dynamic filters
        if p.full:
            plan.reason = "full outer join: both sides are preserved"
        elif p.null_supplied:
            for c in p.outer_on:
                self._equi(c, p, sc, owner, plan, "outer_non_preserved",
                           allow_build=lambda s: not s.null_supplied or s.preserved_outer)
        else:
            self._matched(p, sc, owner, plan, semi_joins=True)
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

    def _probe_data_only(self, p: Source, sc: Scope, plan: TableRefPlan) -> None:
        """A table with no partition column: only its inner (or semi-joined) equi-joins to a
        filtered side count, as dynamic filters on its data columns. Anything less and it is
        no reference at all (the query reads it as written; nothing to report)."""
        simple = not (p.semi_right or p.null_supplied or p.full or sc.sel.meta.get(EMPTY))
        if simple and _unsupported_reference(p) is None:
            self._matched(p, sc, functools.partial(sc.owner, probe=p), plan, semi_joins=False)
        if plan.dynamic:
            plan.pruning = True
        else:
            del self.refs[plan.ref_id]

    def _matched(self, p: Source, sc: Scope, owner: Callable[[exp.Column], Optional[str]],
                 plan: TableRefPlan, semi_joins: bool) -> None:
        """The dynamic filters of a reference whose rows come out only when matched: its
        inner equi-joins, its ``LEFT SEMI JOIN``s (``semi_joins``), its ``IN``/``EXISTS``."""
        for c in sc.where + sc.inner_on:
            self._equi(c, p, sc, owner, plan, "inner",
                       allow_build=lambda s: not s.null_supplied)
        for j in (sc.sel.args.get("joins") or []) if semi_joins else []:
            if semi_join(j):
                right = j.this
                ralias = (right.alias or getattr(right, "name", "") or "").lower()
                for c in conjuncts(j.args.get("on")):
                    self._equi(c, p, sc, owner, plan, "semi",
                               allow_build=lambda s, ra=ralias: s.alias == ra,
                               extra_locals=conjuncts(j.args.get("on")))
        for c in sc.where:
            self._subquery_semi(c, p, owner, plan)

    def _static_conjunct(self, c: exp.Expression, p: Source, cols: dict[str, Any],
                         owner: Callable[[exp.Column], Optional[str]]) -> Optional[TupleDomain]:
        res = static_domain(c, lambda col: owner(col) == p.alias and
                             col.name.lower() in cols, cols, self.rules)
        if res is None:
            return None
        col, dom = res
        return TupleDomain.of({col: dom})

    # ------------------------------------------------------------------ joins
    def _equi(self, c: exp.Expression, p: Source, sc: Scope,
              owner: Callable[[exp.Column], Optional[str]], plan: TableRefPlan, kind: str,
              allow_build: Callable[[Source], bool],
              extra_locals: Optional[list[exp.Expression]] = None) -> None:
        if isinstance(c, exp.NullSafeEQ):
            plan.notes.append("null-safe equality (<=>) matches NULLs: not used")
            return
        if not isinstance(c, exp.EQ):
            if isinstance(c, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ)) and \
                    two_sided(c, p, owner):
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
        build = build_query(self.tables, other, b, sc, locals_, p)
        if build is None:
            return
        tree, read, name = build
        q = self._new_query(plan, probe_col, tree, name)
        if q is None:
            return
        btype = None
        if other.info is not None:
            btype = {k.lower(): v for k, v in other.info.columns.items()}.get(b.name.lower())
        ptype = {k.lower(): v for k, v in p.info.columns.items()}.get(probe_col)  # type: ignore[union-attr]
        if btype is not None and ptype is not None and not compatible(btype, ptype):
            plan.notes.append(f"type mismatch: {name} is {btype}, {p.table}.{probe_col} is "
                              f"{ptype}; filter not used")
            return
        self._fid += 1
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, name, read,
                                              kind, btype, origin=origins(tree)))

    # ------------------------------------------------------------------ IN / EXISTS
    def _subquery_semi(self, c: exp.Expression, p: Source,
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
            if not query_filters(body):
                plan.notes.append("IN subquery without predicates: not used")
                return
            q = with_ctes(body.copy(), self.tables.ctes)
            self._add_dynamic(plan, col.name.lower(), q, label(body), "semi",
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
            for cj in conjuncts(where.this):
                if refers_to(cj, p.alias):
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
            if refers_to(b, p.alias):
                a, b = b, a
            if not refers_to(a, p.alias) or refers_to(b, p.alias):
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
            q = with_ctes(sub, self.tables.ctes)
            self._add_dynamic(plan, a.name.lower(), q, label(body), "semi")

    def _add_dynamic(self, plan: TableRefPlan, probe_col: str, tree: exp.Expression,
                     name: str, kind: str, origin: Optional[str] = None) -> None:
        q = self._new_query(plan, probe_col, tree, name)
        if q is None:
            return
        self._fid += 1
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        read = tuple(sorted({table_name(t).lower() for t in tree.find_all(exp.Table)
                             if t.name.lower() not in ctes or t.args.get("db")}))
        found = [o for o in (origin, origins(tree)) if o]
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, name, read,
                                              kind, origin="; ".join(found) or None))

    def _new_query(self, plan: TableRefPlan, probe_col: str, tree: exp.Expression,
                   name: str) -> Optional[str]:
        """A build query's text, None when it may not be used (it would not give the same
        keys when Spark runs it) or the reference has it already."""
        if not repeatable(tree):
            plan.notes.append(f"build side {name} is not repeatable (random functions, "
                              f"LIMIT or sampling): not used")
            return None
        q = tree.sql(dialect="spark")
        for existing in plan.dynamic:
            if existing.build_query == q and existing.probe_column == probe_col:
                return None
        return q


# ====================================================================== helpers

def _unsupported_reference(p: Source) -> Optional[str]:
    """Why a table reference's rows are not simply the table's (column aliases, a sample,
    time travel, a pivot), None when they are."""
    alias_node = p.node.args.get("alias")
    if alias_node is not None and alias_node.args.get("columns"):
        return "unsupported expression: column aliases on the table reference"
    if any(p.node.args.get(k) for k in ("sample", "version", "when", "pivots", "joins",
                                        "laterals")):
        return "unsupported expression: TABLESAMPLE, time travel or pivot on the table reference"
    return None


def _correlated(body: exp.Expression, alias: str) -> bool:
    inner_aliases = {(t.alias or t.name).lower() for t in body.find_all(exp.Table)}
    inner_aliases |= {(s.alias or "").lower() for s in body.find_all(exp.Subquery)}
    return alias not in inner_aliases and refers_to(body, alias)



def _aggregates_without_group(body: exp.Select) -> bool:
    if body.args.get("group") is not None:
        return False
    return any(isinstance(e.unalias(), exp.AggFunc) or any(True for _ in e.find_all(exp.AggFunc))
               for e in body.expressions)

