"""``JOIN ... USING (cols)`` and ``NATURAL JOIN`` as the equalities Spark's analyzer makes of
them, so that the rest of the SQL front end (scopes, the typed plan, build queries) sees
them as it sees an ``ON``.

Spark resolves a USING column on the left against the join's left side, where an earlier
USING join has already merged its two columns into one: the left's for an inner, left outer
or semi join, the right's for a right outer join, ``coalesce(left, right)`` for a full outer
join. So ``a FULL JOIN b USING (k) JOIN c USING (k)`` joins ``c`` on
``coalesce(a.k, b.k) = c.k`` -- no column pair, so no key, and never ``a.k = c.k`` (that would
prune ``c`` by ``a``'s keys alone and drop the rows matching ``b``'s). A ``NATURAL`` join's
columns are the names both sides have.

The equalities are kept in the join's ``meta`` (:data:`USING_ON`, read by
:func:`dpp.frontends.sql.scopes.join_on`); the tree itself keeps its USING (its text is written into
build queries, whose columns must resolve as the user's query's do). A join whose columns
cannot be told for sure (a FROM item of unknown columns, a name two left items have, a
comma or CROSS join before it: Spark scopes ``a, b JOIN c USING (k)`` to ``b`` alone) is left
without any: no key, as before, and a note says so.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from dpp.analysis.rules import JoinType
from dpp.frontends.sql.scopes import USING_ON, Tables, join_type_of, positions, table_name

__all__ = ["expand_using", "USING_ON"]


def expand_using(tree: exp.Expression, tables: Tables, notes: list[str]) -> None:
    """Gives every USING / NATURAL join of ``tree`` its equalities (in place, in ``meta``)."""
    for sel in tree.find_all(exp.Select):
        if any(_using(j) for j in sel.args.get("joins") or []):
            why = _expand(sel, tables)
            if why:
                notes.append(why)


def _using(j: exp.Join) -> bool:
    return bool(j.args.get("using")) or (j.args.get("method") or "").upper() == "NATURAL"


def _alias(node: exp.Expression) -> str:
    if isinstance(node, exp.Table):
        return (node.alias or node.name).lower()
    return (node.alias or "").lower()


def _columns(node: exp.Expression, tables: Tables) -> Optional[list[str]]:
    """A FROM item's column names, None when they are not known for sure."""
    if isinstance(node, exp.Table):
        alias = node.args.get("alias")
        if alias is not None and alias.args.get("columns"):
            names = [c.name for c in alias.args["columns"]]
        elif table_name(node).lower() in tables.ctes and not node.args.get("db"):
            names = list(tables.ctes[table_name(node).lower()].named_selects)
        else:
            info = tables.info(table_name(node))
            if info is None:
                return None
            names = list(info.columns)
    elif isinstance(node, exp.Subquery):
        alias = node.args.get("alias")
        names = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
        names = names or list(node.this.named_selects)
        if len(set(positions(node))) != len(names):
            return None          # a name twice: Spark refuses it in a USING join
    else:
        return None
    if not names or any(n in ("", "*") for n in names):
        return None
    return [n.lower() for n in names]


def _expand(sel: exp.Select, tables: Tables) -> Optional[str]:
    """Sets the equalities of each USING / NATURAL join of one SELECT, in FROM order; stops
    at the first one it cannot tell for sure (the reason returned)."""
    frm = sel.args.get("from_")
    if frm is None:
        return None
    left: dict[str, Optional[exp.Expression]] = {}   # name -> its expression; None: ambiguous
    known = True           # every column of the left side is in ``left``
    scoped = True          # the left side is every FROM item so far (no comma before)

    def add(node: exp.Expression, cols: list[str], skip: set[str]) -> None:
        for n in cols:
            if n not in skip:
                left[n] = None if n in left else exp.column(n, table=_alias(node))

    first = _columns(frm.this, tables)
    if first is None:
        known = False
    else:
        add(frm.this, first, set())
    for j in sel.args.get("joins") or []:
        node = j.this
        jt = join_type_of(j)
        rcols = _columns(node, tables)
        semi = jt in (JoinType.LEFT_SEMI, JoinType.LEFT_ANTI)
        if not _using(j):
            if (j.args.get("kind") or "").upper() == "CROSS":
                scoped = False
            if rcols is None:
                known = False
            elif not semi:
                add(node, rcols, set())
            continue
        what = f"{'NATURAL' if not j.args.get('using') else 'USING'} join of {node.sql('spark')}"
        if jt is None or not scoped:
            return f"{what} after a comma or CROSS join: no key (which side it joins is not " \
                   f"told for sure)"
        if j.args.get("using"):
            names = [i.name.lower() for i in j.args["using"]]
        else:
            if not known or rcols is None:
                return f"{what}: the columns of a side are not known, no key"
            names = [n for n in left if n in set(rcols)]
        eqs: list[exp.Expression] = []
        ralias = _alias(node)
        for n in names:
            mine = left.get(n)
            if mine is None or (rcols is not None and n not in rcols):
                return f"{what}: column {n} is not one column of each side, no key"
            eqs.append(exp.EQ(this=mine.copy(), expression=exp.column(n, table=ralias)))
        j.meta[USING_ON] = eqs
        for n, eq in zip(names, eqs):      # the one column the join outputs for ``n``
            if jt is JoinType.RIGHT_OUTER:
                left[n] = eq.expression.copy()
            elif jt is JoinType.FULL_OUTER:
                left[n] = exp.Coalesce(this=eq.this.copy(), expressions=[eq.expression.copy()])
        if semi:
            continue
        if rcols is None:
            known = False
        else:
            add(node, rcols, set(names))
    return None
