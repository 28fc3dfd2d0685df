"""Query analysis: SQL text → the pruning plan (which table references, by what, and why not).

One public function, :func:`analyze`, plus :func:`rewrite` to substitute pruned references.
Pure sqlglot and the domain algebra: no Spark, so it is fast and testable alone. The parts it
asks are :mod:`dpp.analysis.pruning_plan` (the plan's types), :mod:`dpp.frontends.sql.scopes` (a SELECT's FROM items
and join sides), :mod:`dpp.frontends.sql.typed` (the query as the typed plan the optimizer hook
describes), :mod:`dpp.frontends.sql.conditions` (where each conjunct holds, decided on that
plan by :func:`dpp.analysis.plan_filters.place_conditions`),
:mod:`dpp.frontends.sql.build` (build-side queries) and :mod:`dpp.frontends.sql.static` (domains from literals).

The rules (DESIGN, "Rules that keep results right") exist once, on the typed plan:
:func:`dpp.analysis.plan_pairs.find_prunes` decides every pair for SQL text as it does for the hook —
which side of a join may be pruned (:func:`dpp.analysis.rules.may_prune`: never the preserved side of
an outer join, either side of a full or anti join; ``IN (subquery)``, ``EXISTS`` and ``LEFT
SEMI JOIN`` prune the outer side), how a key passes through derived tables, whether either
side is deterministic, and whether the build side filters anything. This module files each
pair under its table reference, when the build side is in the reference's own SELECT (a key
traced into a derived table prunes there), and writes it as a query:

* The build side is the other reference with its local predicates, plus inner references
  joined to it by equalities that carry predicates of their own (snowflake); CTEs and derived
  tables are inlined as subqueries. A query that would not give the same keys when Spark runs
  it (a random function, LIMIT or sampling anywhere in it) is not used: find_prunes refuses
  it, on the typed build side that reads the same FROM items by the same conjuncts.
* Static domains come from the conjuncts that hold for a reference's rows (its own, and those
  of outer queries placed on it), of the forms ``col op literal``, ``IN (literals)``,
  ``BETWEEN``, ``IS [NOT] NULL`` and ORs of these on one column; everything stays in the
  query for Spark to evaluate (the domains only decide what is read).

>>> plan = analyze("SELECT * FROM f JOIN d ON f.k = d.k WHERE d.x = 1",
...                lambda n: TableInfo(n, {"k": None}, ("k",)) if n == "f" else None)
>>> [r.pruning for r in plan.refs], plan.refs[0].dynamic[0].build_query
([True], 'SELECT d.k AS dpp_key FROM d AS d WHERE d.x = 1')
"""
from __future__ import annotations

from typing import Any, Optional

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from dpp.core.domain import TupleDomain
from dpp.core.refusals import Code, Refusal
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules
from dpp.analysis.plan_filters import JoinPosition, join_position
from dpp.analysis.plan_pairs import Prune, find_prunes
from dpp.frontends.sql.build import origins, with_ctes, write_side
from dpp.frontends.sql.conditions import Placed, place
from dpp.frontends.sql.ctes import inline_ctes
from dpp.analysis.pruning_plan import (KEY_ALIAS, REF, ColumnInfo, DynamicFilterSpec, PruningPlan, Resolver,
                          TableInfo, TableRefPlan, first_line, short)
from dpp.frontends.sql.scopes import Scope, Source, Tables, table_name
from dpp.frontends.sql.static import compatible, static_domain
from dpp.frontends.sql.typed import translate
from dpp.frontends.sql.using import expand_using

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
        self.atree: exp.Expression = tree   # the analysis copy (USING joins spelled out)
        self.tables = Tables(resolve)
        self.refs: dict[str, TableRefPlan] = {}
        self.notes: list[str] = []
        self._fid = 0
        self._prunes: dict[int, list[tuple[tuple[int, int], Prune]]] = {}
        self.pair_notes: list[str] = []

    def inline(self) -> None:
        """Each use of a deterministic CTE holding a partitioned table becomes its own copy,
        pruned by its own filters (see dpp.frontends.sql.ctes)."""
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
        expand_using(self.atree, self.tables, self.notes)
        self.typed = translate(self.atree, self.tables, self.rules.broadcast)
        self.placed: Placed = place(self.typed)
        self.notes.extend(dict.fromkeys(self.placed.notes))
        self.relation_of = {id(src.node): nid
                            for nid, (_sc, src) in self.typed.relations.items()}
        self.nodes = {n["id"]: n for n in self.typed.message["nodes"]}
        self.key_dicts = {k["expr"]: k for n in self.nodes.values()
                          for pair in n.get("keys", []) for k in pair}
        prunes, self.pair_notes = find_prunes(dict(self.typed.message))
        for pr in prunes:
            self._found(pr)
        for sel in list(self.atree.find_all(exp.Select)):
            sc = self.typed.scopes.get(id(sel))
            if sc is None:
                continue
            for p in sc.sources.values():
                if p.prunable and (p.info.partition_columns  # type: ignore[union-attr]
                                   or p.info.data_only):  # type: ignore[union-attr]
                    self._probe(p, sc)
        # references not reached by any SELECT scope (should not happen) stay unpruned
        for t in self.atree.find_all(exp.Table):
            ref = t.meta.get(REF)
            name = table_name(t)
            if ref in self.refs or name.lower() in self.tables.ctes:
                continue
            info = self.tables.info(name)
            if info is not None and info.partition_columns:
                self.refs[ref] = TableRefPlan(ref, name.lower(), t.alias or None, False,
                                              Refusal(Code.NO_USABLE_PREDICATE),
                                              TupleDomain.all())
        refs = sorted(self.refs.values(), key=lambda r: int(r.ref_id[1:]))
        return PruningPlan(sql=self.sql, refs=refs, notes=self.notes, _tree=self.tree)

    def _found(self, pr: Prune) -> None:
        """Files a pair of :func:`find_prunes` under its reference, when its build side is a
        FROM item of the reference's own SELECT or an IN / EXISTS subquery of it (a key
        traced into a derived table prunes there)."""
        sc, p = self.typed.relations.get(pr.relation, (None, None))
        origin = self.typed.keys.get(pr.build_expr)
        if p is None or origin is None:
            return
        if pr.fact_expr is not None or (origin.column is None and origin.query is None):
            # an expression key: the loader of the SQL-text path tests a partition column's
            # values (DynamicFilterSpec.probe_column), not an expression over them
            what = f"key {pr.fact_sql}" if pr.fact_expr is not None else \
                f"build key {pr.build_sql}"
            refusal = Refusal.of(Code.EXPRESSION_KEY_SQL, what)
            notes = self.typed.notes.setdefault(id(p.node), [])
            if all(n[2] != refusal for n in notes):
                notes.append((origin.phase, origin.index, refusal))
            return
        self._prunes.setdefault(id(p.node), []).append(((origin.phase, origin.index), pr))

    def _probe(self, p: Source, sc: Scope) -> None:
        ref = p.node.meta.get(REF)
        info = p.info
        assert info is not None
        plan = TableRefPlan(ref, info.name, p.node.alias or None, False, None, TupleDomain.all(),
                            data_only=not info.partition_columns)
        self.refs[ref] = plan
        unsupported = _unsupported_reference(p)
        rel = self.relation_of.get(id(p.node))
        at = join_position(self.typed.message, rel) if rel is not None else JoinPosition()
        if plan.data_only:
            # a table with no partition column: only its inner (or semi-joined) equi-joins
            # to a filtered side count, as filters on its data columns; anything less and it
            # is no reference at all (the query reads it as written; nothing to report)
            simple = not (at.semi_right or at.null_supplied or at.full or self._empty(p))
            if simple and unsupported is None:
                self._dynamic(p, sc, plan)
            if plan.dynamic:
                plan.pruning = True
            else:
                del self.refs[plan.ref_id]
            return
        if at.semi_right:
            plan.reason = Refusal(Code.SEMI_RIGHT_SIDE)
            return
        plan.reason = unsupported
        if plan.reason is not None:
            return
        empty = self._empty(p)
        if empty:           # WHERE is false: no row of this SELECT survives, whatever it joins
            plan.static = TupleDomain.none()
            plan.pruning = True
            plan.notes.append(f"reads nothing: {empty}")
            return
        self._static(p, plan)
        self._dynamic(p, sc, plan)
        if at.full and not plan.dynamic:
            plan.reason = Refusal(Code.FULL_OUTER)
        if at.preserved_outer and not plan.dynamic and plan.reason is None:
            plan.notes.append("preserved side of an outer join: not pruned by that join")
        if plan.dynamic or not plan.static.is_all():
            plan.pruning = True
            plan.reason = None
        elif plan.reason is None:
            if at.preserved_outer:
                plan.reason = Refusal(Code.PRESERVED_SIDE)
            else:
                plan.reason = plan.refusals[-1] if plan.refusals else \
                    Refusal(Code.NO_USABLE_PREDICATE)

    def _empty(self, p: Source) -> Optional[str]:
        """Why no row of the reference survives the conditions above it, or None."""
        rel = self.relation_of.get(id(p.node))
        return None if rel is None else self.placed.empty.get(rel)

    def _static(self, p: Source, plan: TableRefPlan) -> None:
        """The domains of the conjuncts that hold for the reference's rows: its own, and
        those of outer queries that :func:`dpp.analysis.plan_filters.place_conditions`
        placed on it (written over its columns)."""
        cols = {c.lower(): t for c, t in p.info.columns.items()}  # type: ignore[union-attr]
        static = TupleDomain.all()
        rel = self.relation_of.get(id(p.node))
        for c, words in self.placed.statics.get(rel, []) if rel is not None else []:
            res = static_domain(c, lambda col: col.name.lower() in cols, cols, self.rules)
            if res is not None:
                static = static.intersect(TupleDomain.of({res[0]: res[1]}))
                if words:
                    plan.notes.append(f"static {short(c)}: {words}")
        plan.static = static

    def _dynamic(self, p: Source, sc: Scope, plan: TableRefPlan) -> None:
        """The reference's dynamic filters: the pairs find_prunes found for it, each written
        as a build query, in the order the query states them, with the notes on conjuncts
        that made no pair and on pairs refused."""
        events: list[tuple[tuple[int, int], Any]] = list(self._prunes.get(id(p.node), []))
        events += [((ph, i), text) for ph, i, text in self.typed.notes.get(id(p.node), [])]
        for _pos, ev in sorted(events, key=lambda e: e[0]):
            if isinstance(ev, Refusal):
                plan.refuse(ev)
            else:
                self._filter(p, sc, plan, ev)
        for note in self.pair_notes:    # pairs refused for determinism, on either side
            if note.code is Code.BUILD_NONDETERMINISTIC:   # named by the build side
                for src, name in self.typed.partners.get(note.subject, []):
                    if _holds(src, p):
                        plan.refuse(Refusal(note.code, name, note.values))
            elif note.code is Code.FACT_BELOW_NONDETERMINISTIC:
                if any(_holds(src, p) for src, _n in self.typed.partners.get(note.subject, [])):
                    plan.refuse(note)
            elif note.code in (Code.BUILD_FILTERS_NOTHING, Code.IN_FILTERS_NOTHING) and \
                    note.subject in self._key_names(p):
                plan.refuse(note)     # named by the reference's own key

    def _key_names(self, p: Source) -> set[str]:
        """The reference's key columns as find_prunes' notes name them."""
        return {o.column.sql(dialect="spark") for o in self.typed.keys.values()
                if o.source is p and o.column is not None}

    def _filter(self, p: Source, sc: Scope, plan: TableRefPlan, pr: Prune) -> None:
        """A pair of find_prunes as a build query: its build side written as SQL
        (:func:`dpp.frontends.sql.build.write_side`), narrowed, where find_prunes narrowed
        it, to the rows a filtered side matches (``key IN (that side's keys)``)."""
        origin = self.typed.keys[pr.build_expr]
        c = origin.conjunct
        if origin.query is not None:            # IN (subquery), EXISTS
            tree = origin.query.copy() if isinstance(c, exp.In) else origin.query
            self._add_dynamic(plan, pr.column.lower(), with_ctes(tree, self.tables.ctes),
                              origin.name, "semi")
            return
        kind = _KINDS.get(pr.join, "outer_non_preserved")
        # the key's column where find_prunes built it: the build side may be an item inside
        # the derived table the equality names (the key passes out by the same number)
        found = self._column_of(pr.build_expr, pr.build_node)
        if found is None:
            plan.refuse(Refusal.of(Code.NARROWED_BUILD_SQL, pr.build_sql))
            return
        other, b = found[0], exp.column(found[1])
        build = self._side(pr.build_node, b, other)
        if build is None:
            plan.refuse(Refusal.of(Code.NARROWED_BUILD_SQL, pr.build_sql))
            return
        tree, read, name = build
        if pr.build_semi is not None:
            semi = self._narrowing(pr.build_semi, pr.build_node)
            if semi is None:
                plan.refuse(Refusal.of(Code.NARROWED_BUILD_SQL, pr.build_sql))
                return
            tests, more = semi
            for test in tests:
                tree = tree.where(test)
            read = tuple(sorted(set(read) | set(more)))
        probe_col = pr.column.lower()
        q = self._new_query(plan, probe_col, with_ctes(tree, self.tables.ctes), name)
        if q is None:
            return
        btype = None
        if other.info is not None:
            btype = {k.lower(): v for k, v in other.info.columns.items()}.get(b.name.lower())
        ptype = {k.lower(): v for k, v in p.info.columns.items()}.get(probe_col)  # type: ignore[union-attr]
        if btype is not None and ptype is not None and not compatible(btype, ptype):
            plan.refuse(Refusal.of(Code.TYPE_MISMATCH, name, build_type=btype,
                                   probe=f"{p.table}.{probe_col}", probe_type=ptype))
            return
        self._fid += 1
        traced = narrowed = None
        if origin.scope is not sc:   # find_prunes followed the key out of a derived table
            traced = f"key traced from outer {short(origin.conjunct)}"
        if pr.build_semi is not None:
            by = self.typed.keys.get(pr.build_semi[1][0][1])
            narrowed = f"build side narrowed by {short(by.conjunct)}" if by else None
        found_origins = [o for o in (traced, narrowed, origins(tree)) if o]
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, name, read,
                                              kind, btype,
                                              origin="; ".join(found_origins) or None))

    def _side(self, node: int, key: exp.Column, source: Source
              ) -> Optional[tuple[exp.Select, tuple[str, ...], str]]:
        return write_side(self.tables, self.typed.items, self.typed.joins, self.nodes, node,
                          key, source)

    def _narrowing(self, semi: tuple[int, tuple[tuple[int, int], ...]], build_node: int
                   ) -> Optional[tuple[list[exp.Expression], tuple[str, ...]]]:
        """The tests that narrow a build side to the rows a filtered side matches, one per
        key pair: ``EXISTS (SELECT 1 FROM (<the filtered side's keys>) n WHERE n.key =
        <build column>)`` — the pair's own equality, so Spark compares as the join does (an
        ``IN`` subquery coerces both sides to one type first: a STRING '01' is not IN an INT
        1 that it equals in the join). Several pairs test each key on its own: a superset of
        the rows that match on all of them, never fewer. With the tables read."""
        node, pairs = semi
        tests: list[exp.Expression] = []
        read: set[str] = set()
        for i, (m, t) in enumerate(pairs):
            mine, theirs = self._column_of(m, build_node), self._column_of(t, node)
            if mine is None or theirs is None:
                return None
            side = self._side(node, exp.column(theirs[1]), theirs[0])
            if side is None:
                return None
            query, more, _name = side
            alias = f"dpp_narrow{i}"
            tests.append(exp.Exists(this=exp.select("1").from_(
                exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias))))
                .where(exp.EQ(this=exp.column(KEY_ALIAS, table=alias),
                              expression=exp.column(mine[1], table=mine[0].alias)))))
            read |= set(more)
        return (tests, tuple(sorted(read))) if tests else None

    def _column_of(self, expr: int, node: int) -> Optional[tuple[Source, str]]:
        """The FROM item under ``node`` and its column that key ``expr`` reads (a key of a
        join above names the column a derived table passes out, by the same number)."""
        key = self.key_dicts.get(expr)
        if key is None or key.get("attr") is None:
            return None
        named = self.typed.columns.get(key["attr"], [])
        for level in self._sources_under(node):   # the outermost item that outputs it
            found = [(src, name) for src, name in named if any(src is u for u in level)]
            if found:
                return found[0] if len(found) == 1 else None
        return None

    def _sources_under(self, node: int) -> list[list[Source]]:
        """The FROM items under ``node``, level by level (a derived table before the items
        of its own query)."""
        nodes = self.nodes
        levels: list[list[Source]] = []
        frontier = [node]
        while frontier:
            level: list[Source] = []
            below: list[int] = []
            for n in frontier:
                found = self.typed.items.get(n)
                if found:
                    level += [it.source for it in found]
                    below += [c for c in nodes[n]["children"]]
                else:
                    below += nodes[n]["children"]
            if level:
                levels.append(level)
            frontier = below
        return levels

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
        """A build query's text, None when the reference has it already. (Whether it gives
        the same keys when Spark runs it was find_prunes' call, on the typed build side made
        of the same FROM items and conjuncts.)"""
        q = tree.sql(dialect="spark")
        for existing in plan.dynamic:
            if existing.build_query == q and existing.probe_column == probe_col:
                return None
        return q


# ====================================================================== helpers

# the join type a pair holds by -> the kind its filter is reported as
_KINDS = {"INNER": "inner", "CROSS": "inner", "LEFT SEMI": "semi", "IN subquery": "semi"}


def _holds(src: Source, p: Source) -> bool:
    """Whether the FROM item ``src`` is the reference ``p`` or a query holding it (a derived
    table or a CTE's use reading it, at any depth): a key traced into it prunes ``p``."""
    if src is p:
        return True
    body = src.cte if src.cte is not None else src.node
    return body is not None and any(n is p.node for n in body.walk())


def _unsupported_reference(p: Source) -> Optional[Refusal]:
    """Why a table reference's rows are not simply the table's (column aliases, a sample,
    time travel, a pivot), None when they are."""
    alias_node = p.node.args.get("alias")
    if alias_node is not None and alias_node.args.get("columns"):
        return Refusal.of(Code.UNSUPPORTED_REFERENCE, what="column aliases")
    if any(p.node.args.get(k) for k in ("sample", "version", "when", "pivots", "joins",
                                        "laterals")):
        return Refusal.of(Code.UNSUPPORTED_REFERENCE,
                          what="TABLESAMPLE, time travel or pivot")
    return None
