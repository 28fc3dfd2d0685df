"""Build sides as SQL: the build side :func:`dpp.analysis.plan_pairs.find_prunes` chose on
the typed plan, written as a query Spark runs on its own (``SELECT key AS dpp_key FROM
<the FROM items of that side, joined as the query joins them> WHERE <their own conjuncts>``),
narrowed where find_prunes narrowed it (``AND EXISTS (SELECT 1 FROM (<the filtered side's
keys>) n WHERE n.dpp_key = key)`` per key pair, by the planner: the join's own equality). Nothing here decides: which side, whether it filters, whether it is repeatable
and how it is narrowed are find_prunes' answers; this module only writes them.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from sqlglot import exp

from dpp.analysis.pruning_plan import KEY_ALIAS, REF
from dpp.analysis.rules import JoinType
from dpp.frontends.sql.scopes import Source, Tables, conjuncts, table_name

__all__ = ["ORIGIN", "write_side", "with_ctes", "label", "origins"]

# meta of a conjunct an outer query's condition placed on a FROM item
# (dpp.frontends.sql.conditions): the path it took, for ``explain``
ORIGIN = "dpp_origin"


def write_side(tables: Tables, items: Mapping[int, list[Any]], joins: Mapping[int, Any],
               nodes: Mapping[int, dict[str, Any]], node: int, key: exp.Column,
               key_source: Source) -> Optional[tuple[exp.Select, tuple[str, ...], str]]:
    """The build side find_prunes chose — node ``node`` of the typed plan, a FROM item of a
    SELECT or a join of its items — as SQL Spark runs on its own: ``SELECT key AS dpp_key
    FROM <those items, joined as the query joins them> WHERE <their own conjuncts>``, with
    the tables it reads and its label. ``items`` / ``joins``: what each FROM-tree node reads
    (:class:`dpp.frontends.sql.typed.Item`, :class:`~dpp.frontends.sql.typed.JoinStep`).
    None when the node is not such a side (the pair is then not used). Conjuncts above the
    joins are left out: the query keeps a subset of these keys, never another one."""
    chain = _chain(items, joins, nodes, node, 0)
    if chain is None or key_source not in [it.source for it, _s in chain]:
        return None
    sel = exp.select(exp.alias_(exp.column(key.name, table=key_source.alias), KEY_ALIAS))
    where: list[exp.Expression] = []
    for i, (item, step) in enumerate(chain):
        sql = _source_sql(tables, item.source)
        if sql is None:
            return None
        if i == 0:
            sel = sel.from_(sql)
        elif step.join_type in (JoinType.INNER, JoinType.CROSS):
            on = [c.copy() for c in step.keys]
            sel = sel.join(sql, on=exp.and_(*on) if on else None,
                           join_type="inner" if on else "cross")
        else:
            sel = sel.join(sql, on=exp.and_(*[c.copy() for c in step.on]),
                           join_type=step.join_type.value.lower().replace(" outer", ""))
        where += [c.copy() for c in item.where]
    if where:
        sel = sel.where(exp.and_(*where))
    read = tuple(sorted({t for it, _s in chain for t in _tables_of(tables, it.source)}))
    return sel, read, f"{key_source.table or key_source.alias}.{key.name}"


def _chain(items: Mapping[int, list[Any]], joins: Mapping[int, Any],
           nodes: Mapping[int, dict[str, Any]], node: int, depth: int
           ) -> Optional[list[tuple[Any, Any]]]:
    """The FROM items under ``node`` in the order the query joins them, each with the join
    step that brings it in (None for the first); None for any other node."""
    if depth > 200:
        return None
    if node in items:
        found = items[node]
        return [(found[0], None)] if len(found) == 1 else None
    step = joins.get(node)
    if step is None:
        return None
    left, right = nodes[node]["children"]
    head = _chain(items, joins, nodes, left, depth + 1)
    tail = items.get(right)
    if head is None or tail is None or len(tail) != 1:
        return None
    return head + [(tail[0], step)]


def _tables_of(tables: Tables, src: Source) -> set[str]:
    if src.table is not None and src.cte is None:
        return {src.table}
    body = src.cte if src.cte is not None else src.node.this
    return {table_name(t).lower() for t in body.find_all(exp.Table)
            if t.name.lower() not in tables.ctes} or {src.table or src.alias}


def _source_sql(tables: Tables, src: Source) -> Optional[exp.Expression]:
    alias = exp.TableAlias(this=exp.to_identifier(src.alias))
    if src.cte is not None:
        body = with_ctes(src.cte.copy(), tables.ctes)
        return exp.Subquery(this=body, alias=alias)
    if isinstance(src.node, exp.Table):
        t = src.node.copy()
        t.set("alias", alias)
        t.meta.pop(REF, None)
        return t
    if isinstance(src.node, exp.Subquery):
        body = with_ctes(src.node.this.copy(), tables.ctes)
        return exp.Subquery(this=body, alias=alias)
    return None


def with_ctes(body: exp.Expression, ctes: dict[str, exp.Expression]) -> exp.Expression:
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


def label(body: exp.Expression) -> str:
    """How a subquery build side is named in the plan: its first table and column."""
    sels = getattr(body, "selects", None) or []
    frm = body.find(exp.Table)
    first = sels[0].alias_or_name if sels else "?"
    return f"{frm.name if frm is not None else 'subquery'}.{first}"


def origins(tree: exp.Expression) -> Optional[str]:
    """Where the conjuncts an outer query placed on a build query's items came from (for
    ``explain``)."""
    where = tree.args.get("where")
    found = [c.meta[ORIGIN] for c in (conjuncts(where.this) if where is not None else [])
             if c.meta.get(ORIGIN)]
    return "; ".join(dict.fromkeys(found)) or None
