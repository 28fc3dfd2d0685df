"""Which conjuncts of a SELECT move into the derived tables it reads, where they can prune the
fact tables inside (:func:`dpp.frontends.sql.pushdown.push_into` carries each one down).

Sound moves only: any deterministic conjunct of the WHERE or of an inner join's ON into the
derived table it is about alone; into the NULL-supplied side of an outer join, its own ON's
conjuncts and WHERE comparisons that reject NULL; nothing into a full outer join's sides or
a semi join's right. A join of a derived table to a filtered dimension moves in as
``col IN (the dimension's keys)``.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import build_scope

from dpp.frontends.sql.pushdown import POSITION, PUSHED_QUERY, deterministic, outer_columns, push_into
from dpp.frontends.sql.build import build_query, with_ctes
from dpp.analysis.pruning_plan import first_line, short
from dpp.frontends.sql.scopes import (Scope, Source, Tables, has_is_null, has_subquery, matched_only,
                             positions, scope)
from dpp.frontends.sql.typed import query_filters

__all__ = ["push_down"]


def push_down(atree: exp.Expression, tables: Tables, notes: list[str]) -> None:
    """Pushes every SELECT's conjuncts inward, in the analysis copy ``atree``. Outer scopes
    first (sqlglot's scope tree, parents before children), so a conjunct pushed into a
    derived table travels on into the derived tables below it."""
    if not any(isinstance(s, exp.Subquery) and tables.holds_partitioned(s.this)
               for s in atree.find_all(exp.Subquery)):
        return
    try:
        root = build_scope(atree)
    except (SqlglotError, KeyError, ValueError) as exc:
        notes.append(f"predicates not pushed inward: {first_line(exc)}")
        return
    if root is None:
        return
    for sc in reversed(list(root.traverse())):
        if isinstance(sc.expression, exp.Select):
            _push_from(sc.expression, tables, notes)


def _push_from(sel: exp.Select, tables: Tables, notes: list[str]) -> None:
    sc = scope(sel, tables)
    if sc is None:
        return
    targets = {a: s for a, s in sc.sources.items()
               if isinstance(s.node, exp.Subquery) and not s.full and not s.semi_right
               and tables.holds_partitioned(s.node.this)}
    if not targets:
        return
    for c in sc.where:
        s = _pushable(c, sc, targets, "WHERE")
        if s is not None:
            _push_one(c, s, f"pushed from outer WHERE {short(c)}", notes)
    for c in sc.inner_on:
        s = _pushable(c, sc, targets, "ON")
        if s is not None:
            _push_one(c, s, f"pushed from outer ON {short(c)}", notes)
    for s in targets.values():
        for c in s.outer_on if s.null_supplied else []:
            if _pushable(c, sc, {s.alias: s}, "OWN_ON") is s:
                _push_one(c, s, f"pushed from its outer join's ON {short(c)}", notes)
    for c in sc.where + sc.inner_on:
        _push_semi(c, sc, targets, tables, notes)


def _pushable(c: exp.Expression, sc: Scope, targets: dict[str, Source], where: str
              ) -> Optional[Source]:
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
    if has_subquery(c) and not any(q.meta.get(PUSHED_QUERY)
                                   for q in c.find_all(exp.Subquery)):
        return None
    if where == "OWN_ON":
        return s if s.null_supplied else None
    if s.null_supplied:
        if where != "WHERE" or has_is_null(c) or not _null_rejecting(c):
            return None
    return s


def _push_one(c: exp.Expression, s: Source, origin: str, notes: list[str]) -> None:
    where = positions(s.node)
    template = c.copy()
    for col in outer_columns(template):
        pos = where.get(col.name.lower())
        if pos is None:
            return
        col.meta[POSITION] = pos
    push_into(s.node.this, template, origin, notes)


def _push_semi(c: exp.Expression, sc: Scope, targets: dict[str, Source], tables: Tables,
               notes: list[str]) -> None:
    """``dt.col = dim.key`` with a filtered dimension: ``col IN (dimension's keys)``
    inside the derived table, where it can prune the fact that produces ``col``. (Whether
    that build query gives the same keys when run again is find_prunes' call, on the IN
    subquery's typed plan: a conjunct pushed in is no part of the query Spark runs.)"""
    if not isinstance(c, exp.EQ) or not all(isinstance(x, exp.Column)
                                            for x in (c.this, c.expression)):
        return
    a, b = c.this, c.expression
    if sc.owner(b) in targets and sc.owner(a) not in targets:
        a, b = b, a
    dt = targets.get(sc.owner(a) or "")
    other = sc.sources.get(sc.owner(b) or "")
    if dt is None or other is None or other is dt or not matched_only(dt, other):
        return      # not an inner join's key (the rules' sides, as sql_typed pairs them)
    if _is_fact(other, tables):
        return      # a build side over another fact would scan it whole to prune this one
    built = build_query(tables, other, b, sc, sc.where + sc.inner_on, dt,
                        lambda body: query_filters(body, tables))
    if built is None or not query_filters(built[0], tables):
        return      # all the dimension's keys: nothing to prune by (find_prunes' rule)
    query, _tables, label = built
    pos = positions(dt.node).get(a.name.lower())
    if pos is None:
        return
    sub = exp.Subquery(this=with_ctes(query, tables.ctes))
    sub.meta[PUSHED_QUERY] = True
    placeholder = exp.column(a.name)
    placeholder.meta[POSITION] = pos
    template = exp.In(this=placeholder, query=sub)
    push_into(dt.node.this, template, f"semi join pushed from outer {short(c)} "
              f"(values of {label})", notes)


def _is_fact(s: Source, tables: Tables) -> bool:
    if s.info is not None:
        return bool(s.info.partition_columns)
    body = s.cte if s.cte is not None else s.node.this
    return tables.holds_partitioned(body)


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
