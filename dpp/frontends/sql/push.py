"""Which conjuncts of a SELECT move into the derived tables it reads, where they can prune the
fact tables inside (:func:`dpp.frontends.sql.pushdown.push_into` carries each one down).

Sound moves only: any deterministic conjunct of the WHERE or of an inner join's ON into the
derived table it is about alone; into the NULL-supplied side of an outer join, its own ON's
conjuncts and WHERE comparisons that reject NULL; nothing into a full outer join's sides or
a semi join's right. These are the static domains' moves; a join key is traced across
derived tables by :func:`dpp.analysis.plan_pairs.find_prunes` on the typed plan.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import build_scope

from dpp.analysis.functions import deterministic
from dpp.frontends.sql.pushdown import POSITION, outer_columns, push_into
from dpp.analysis.pruning_plan import first_line, short
from dpp.frontends.sql.scopes import (Scope, Source, Tables, has_is_null, has_subquery,
                                      positions, scope)

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
    if has_subquery(c):
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
