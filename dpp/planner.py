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

from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import DomainError
from dpp.core.spark_rules import DEFAULT_RULES, SparkRules

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
            for n in r.notes:
                lines.append(f"    note: {n}")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)


# ====================================================================== analysis

def analyze(sql: str, resolve: Resolver, rules: SparkRules = DEFAULT_RULES) -> PruningPlan:
    """The pruning plan of ``sql``; never raises for SQL it cannot handle (no pruning then).

    ``rules`` are the session's: literals are read as Spark casts them in that session (a
    ``TIMESTAMP '...'`` in its time zone)."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except SqlglotError as exc:
        return PruningPlan(sql=sql, refs=[], parse_error=f"unparsable SQL: {_first_line(exc)}")
    if tree is None or not isinstance(tree, (exp.Query, exp.Subquery)):
        kind = type(tree).__name__ if tree is not None else "empty"
        return PruningPlan(sql=sql, refs=[], parse_error=f"not a query ({kind} statement)")
    for i, t in enumerate(tree.find_all(exp.Table)):
        t.meta[_REF] = f"r{i + 1}"
    try:
        return _Analyzer(sql, tree, resolve, rules).run()
    except SqlglotError as exc:
        return PruningPlan(sql=sql, refs=[], parse_error=f"unsupported SQL: {_first_line(exc)}",
                           _tree=tree)


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


class _Analyzer:
    def __init__(self, sql: str, tree: exp.Expression, resolve: Resolver,
                 rules: SparkRules = DEFAULT_RULES) -> None:
        self.sql = sql
        self.rules = rules
        self.tree = tree
        self._resolve_raw = resolve
        self._cache: dict[str, Optional[TableInfo]] = {}
        self.refs: dict[str, TableRefPlan] = {}
        self.notes: list[str] = []
        self._fid = 0

    def resolve(self, name: str) -> Optional[TableInfo]:
        key = name.lower()
        if key not in self._cache:
            self._cache[key] = self._resolve_raw(key)
        return self._cache[key]

    def run(self) -> PruningPlan:
        ctes = {c.alias_or_name.lower(): c.this for c in self.tree.find_all(exp.CTE)}
        for sel in self.tree.find_all(exp.Select):
            self._select(sel, ctes)
        # references not reached by any SELECT scope (should not happen) stay unpruned
        for t in self.tree.find_all(exp.Table):
            ref = t.meta.get(_REF)
            name = _table_name(t)
            if ref in self.refs or name.lower() in ctes:
                continue
            info = self.resolve(name)
            if info is not None and info.partition_columns:
                self.refs[ref] = TableRefPlan(ref, name.lower(), t.alias or None, False,
                                              "not in a SELECT scope the analyzer handles",
                                              TupleDomain.all())
        refs = sorted(self.refs.values(), key=lambda r: int(r.ref_id[1:]))
        return PruningPlan(sql=self.sql, refs=refs, notes=self.notes, _tree=self.tree)

    # ------------------------------------------------------------------ one SELECT
    def _select(self, sel: exp.Select, ctes: dict[str, exp.Expression]) -> None:
        sources = self._sources(sel, ctes)
        if not sources:
            return
        probes = [s for s in sources.values() if s.prunable and s.info.partition_columns]
        if not probes:
            return
        where = sel.args.get("where")
        where_conj = _conjuncts(where.this) if where is not None else []
        inner_on: list[exp.Expression] = []
        for j in sel.args.get("joins") or []:
            side, kind = _join_type(j)
            if side == "" and kind in ("", "INNER", "CROSS"):
                inner_on.extend(_conjuncts(j.args.get("on")))
        for p in probes:
            self._probe(p, sel, sources, where_conj, inner_on, ctes)

    def _sources(self, sel: exp.Select, ctes: dict[str, exp.Expression]
                 ) -> dict[str, _Source]:
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
                if name.lower() in ctes and not node.args.get("db"):
                    src.cte = ctes[name.lower()]
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
    def _probe(self, p: _Source, sel: exp.Select, sources: dict[str, _Source],
               where_conj: list[exp.Expression], inner_on: list[exp.Expression],
               ctes: dict[str, exp.Expression]) -> None:
        ref = p.node.meta.get(_REF)
        info = p.info
        assert info is not None
        plan = TableRefPlan(ref, info.name, p.node.alias or None, False, None, TupleDomain.all())
        self.refs[ref] = plan
        single = len(sources) == 1
        cols = {c.lower(): t for c, t in info.columns.items()}

        def owner(c: exp.Column) -> Optional[str]:
            return _owner(c, sources, single_alias=p.alias if single else None, probe=p,
                          probe_cols=cols)

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
        # ---- static domains
        if p.full:
            static_src: list[exp.Expression] = []
            plan.notes.append("full outer join: static predicates not used")
        elif p.null_supplied:
            static_src = list(p.outer_on) + [c for c in where_conj if not _has_is_null(c)]
        else:
            static_src = where_conj + inner_on
        static = TupleDomain.all()
        for c in static_src:
            d = self._static_conjunct(c, p, cols, owner, plan)
            if d is not None:
                static = static.intersect(d)
        plan.static = static
        # ---- dynamic filters
        if p.full:
            plan.reason = "full outer join: both sides are preserved"
        elif p.null_supplied:
            for c in p.outer_on:
                self._equi(c, p, sources, owner, plan, "outer_non_preserved", where_conj,
                           inner_on, ctes, allow_build=lambda s: not s.null_supplied or
                           s.preserved_outer)
        else:
            for c in where_conj + inner_on:
                self._equi(c, p, sources, owner, plan, "inner", where_conj, inner_on, ctes,
                           allow_build=lambda s: not s.null_supplied)
            for j in sel.args.get("joins") or []:
                side, kind = _join_type(j)
                if kind == "SEMI":
                    right = j.this
                    ralias = (right.alias or getattr(right, "name", "") or "").lower()
                    for c in _conjuncts(j.args.get("on")):
                        self._equi(c, p, sources, owner, plan, "semi", where_conj, inner_on,
                                   ctes, allow_build=lambda s, ra=ralias: s.alias == ra,
                                   extra_locals=_conjuncts(j.args.get("on")))
            for c in where_conj:
                self._subquery_semi(c, p, owner, plan, ctes)
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

    def _static_conjunct(self, c: exp.Expression, p: _Source, cols: dict[str, Any],
                         owner: Callable[[exp.Column], Optional[str]],
                         plan: TableRefPlan) -> Optional[TupleDomain]:
        res = _static_domain(c, lambda col: owner(col) == p.alias and
                             col.name.lower() in cols, cols, self.rules)
        if res is None:
            return None
        col, dom = res
        return TupleDomain.of({col: dom})

    # ------------------------------------------------------------------ joins
    def _equi(self, c: exp.Expression, p: _Source, sources: dict[str, _Source],
              owner: Callable[[exp.Column], Optional[str]], plan: TableRefPlan, kind: str,
              where_conj: list[exp.Expression], inner_on: list[exp.Expression],
              ctes: dict[str, exp.Expression], allow_build: Callable[[_Source], bool],
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
        other = sources.get(owner(b) or "")
        if other is None or not allow_build(other):
            return
        locals_ = where_conj + inner_on + (extra_locals or [])
        if other.null_supplied and not other.preserved_outer:
            locals_ = list(other.outer_on) + (extra_locals or [])
        build = self._build_query(other, b, sources, owner, locals_, ctes, p)
        if build is None:
            return
        q, tables, label = build
        if not _repeatable(q):
            plan.notes.append(f"build side {label} is not repeatable (random functions, "
                              f"LIMIT or sampling): not used")
            return
        for existing in plan.dynamic:
            if existing.build_query == q and existing.probe_column == probe_col:
                return
        self._fid += 1
        btype = None
        if other.info is not None:
            btype = {k.lower(): v for k, v in other.info.columns.items()}.get(b.name.lower())
        ptype = {k.lower(): v for k, v in p.info.columns.items()}.get(probe_col)  # type: ignore[union-attr]
        if btype is not None and ptype is not None and not _compatible(btype, ptype):
            plan.notes.append(f"type mismatch: {label} is {btype}, {p.table}.{probe_col} is "
                              f"{ptype}; filter not used")
            return
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, label, tables,
                                              kind, btype))

    def _build_query(self, other: _Source, key: exp.Column, sources: dict[str, _Source],
                     owner: Callable[[exp.Column], Optional[str]],
                     conjuncts: list[exp.Expression], ctes: dict[str, exp.Expression],
                     probe: _Source) -> Optional[tuple[str, tuple[str, ...], str]]:
        """SELECT other.key AS dpp_key FROM other [JOIN filtered neighbours] WHERE locals."""
        def local_to(alias: str) -> list[exp.Expression]:
            out = []
            for c in conjuncts:
                owners = {owner(col) for col in c.find_all(exp.Column)}
                if owners == {alias} and not _has_subquery(c):
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
                    oa, ob = owner(c.this), owner(c.expression)
                    if cur.alias not in (oa, ob):
                        continue
                    nb_alias = ob if oa == cur.alias else oa
                    nb = sources.get(nb_alias or "")
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
            item = self._source_sql(m, ctes)
            if item is None:
                return None
            if i == 0:
                sel = sel.from_(item)
            else:
                sel = sel.join(item, on=joins[i - 1].copy(), join_type="inner")
        locals_all = [c.copy() for m in members for c in local_to(m.alias)]
        if locals_all:
            sel = sel.where(exp.and_(*locals_all))
        tables = tuple(sorted({(m.table or m.alias) for m in members}))
        label = f"{other.table or other.alias}.{key.name}"
        return sel.sql(dialect="spark"), tables, label

    def _source_sql(self, src: _Source, ctes: dict[str, exp.Expression]) -> Optional[exp.Expression]:
        alias = exp.TableAlias(this=exp.to_identifier(src.alias))
        if src.cte is not None:
            body = _with_ctes(src.cte.copy(), ctes)
            return exp.Subquery(this=body, alias=alias)
        if isinstance(src.node, exp.Table):
            t = src.node.copy()
            t.set("alias", alias)
            t.meta.pop(_REF, None)
            return t
        if isinstance(src.node, exp.Subquery):
            body = _with_ctes(src.node.this.copy(), ctes)
            return exp.Subquery(this=body, alias=alias)
        return None

    # ------------------------------------------------------------------ IN / EXISTS
    def _subquery_semi(self, c: exp.Expression, p: _Source,
                       owner: Callable[[exp.Column], Optional[str]], plan: TableRefPlan,
                       ctes: dict[str, exp.Expression]) -> None:
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
            q = _with_ctes(body.copy(), ctes)
            self._add_dynamic(plan, col.name.lower(), q.sql(dialect="spark"),
                              _label(body), "semi", p)
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
            q = _with_ctes(sub, ctes)
            self._add_dynamic(plan, a.name.lower(), q.sql(dialect="spark"), _label(body),
                              "semi", p)

    def _add_dynamic(self, plan: TableRefPlan, probe_col: str, q: str, label: str,
                     kind: str, p: _Source) -> None:
        if not _repeatable(q):
            plan.notes.append(f"build side {label} is not repeatable (random functions, "
                              f"LIMIT or sampling): not used")
            return
        for existing in plan.dynamic:
            if existing.build_query == q and existing.probe_column == probe_col:
                return
        self._fid += 1
        tables = tuple(sorted({_table_name(t).lower() for t in
                               sqlglot.parse_one(q, read="spark").find_all(exp.Table)}))
        plan.dynamic.append(DynamicFilterSpec(f"f{self._fid}", probe_col, q, label, tables, kind))


# ====================================================================== helpers

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


def _owner(c: exp.Column, sources: dict[str, _Source], single_alias: Optional[str],
           probe: _Source, probe_cols: dict[str, Any]) -> Optional[str]:
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
        elif s.cte is not None or isinstance(s.node, exp.Subquery):
            body = s.cte if s.cte is not None else s.node.this
            names = {n.lower() for n in getattr(body, "named_selects", [])}
            if name in names:
                hits.append(s.alias)
    return hits[0] if len(hits) == 1 else None


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


_NONDETERMINISTIC = {"rand", "random", "randn", "uuid", "shuffle", "monotonically_increasing_id",
                     "spark_partition_id", "input_file_name", "current_timestamp", "now",
                     "try_reflect", "reflect", "java_method", "randstr", "uniform"}


def _repeatable(build_sql: str) -> bool:
    """A build query must select the same keys when Spark evaluates the query itself: no
    random or per-run functions, no LIMIT (which rows is unspecified) and no sampling."""
    tree = sqlglot.parse_one(build_sql, read="spark")
    if any(True for _ in tree.find_all(exp.Limit, exp.TableSample, exp.Rand, exp.Randn)):
        return False
    for f in tree.find_all(exp.Func):
        name = (f.sql_name() if not isinstance(f, exp.Anonymous) else f.name).lower()
        if name in _NONDETERMINISTIC:
            return False
    return True


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
