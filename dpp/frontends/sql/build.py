"""Build sides: the query whose keys prune a probe reference, written as SQL Spark runs on
its own (``SELECT other.key AS dpp_key FROM other [JOIN filtered neighbours] WHERE ...``).

It must select every key the probe's surviving rows can match, and be worth running: only
the other side's own conjuncts, and those of inner neighbours joined to it by equalities that
carry filters of their own (a snowflake); never another fact table (a build side that scans a
fact whole costs more than it saves). Whether it gives the same keys when Spark evaluates the
query itself is :func:`dpp.analysis.plan_pairs.find_prunes`' call: the typed plan's build side
(:mod:`dpp.frontends.sql.typed`) is made of the same FROM items and the same conjuncts
(:func:`snowflake`, :func:`local_to`).
"""
from __future__ import annotations

from typing import Callable, Optional

from sqlglot import exp

from dpp.frontends.sql.pushdown import ORIGIN, PUSHED_QUERY, outer_columns
from dpp.analysis.pruning_plan import KEY_ALIAS, REF
from dpp.frontends.sql.scopes import (Scope, Source, Tables, conjuncts, has_subquery, selective,
                             table_name)

__all__ = ["build_query", "snowflake", "local_to", "with_ctes", "label", "origins",
           "Filters"]

# does a derived table's query filter its rows (dpp.frontends.sql.typed.query_filters, bound to the
# analysis' tables)
Filters = Callable[[exp.Expression], bool]


def build_query(tables: Tables, other: Source, key: exp.Column, sc: Scope,
                conjuncts_: list[exp.Expression], probe: Source, derived_filters: Filters
                ) -> Optional[tuple[exp.Select, tuple[str, ...], str]]:
    """SELECT other.key AS dpp_key FROM other [JOIN filtered neighbours] WHERE locals,
    as a tree (rendered once, by the caller), with the tables it reads and its label; None
    when a FROM item cannot be written. (Whether it filters anything is the typed plan's
    question: :func:`dpp.analysis.plan_pairs.find_prunes`, or :func:`dpp.frontends.sql.typed.query_filters`.)"""
    members, joins = snowflake(tables, other, sc, conjuncts_, probe, derived_filters)
    sel = exp.select(exp.alias_(exp.column(key.name, table=other.alias), KEY_ALIAS))
    for i, m in enumerate(members):
        item = _source_sql(tables, m)
        if item is None:
            return None
        if i == 0:
            sel = sel.from_(item)
        else:
            sel = sel.join(item, on=joins[i - 1].copy(), join_type="inner")
    locals_all = [c.copy() for m in members for c in local_to(tables, sc, conjuncts_, m.alias)]
    if locals_all:
        sel = sel.where(exp.and_(*locals_all))
    read = tuple(sorted({t for m in members for t in _tables_of(tables, m)}))
    return sel, read, f"{other.table or other.alias}.{key.name}"


def snowflake(tables: Tables, other: Source, sc: Scope, conjuncts_: list[exp.Expression],
              probe: Optional[Source], derived_filters: Filters
              ) -> tuple[list[Source], list[exp.Expression]]:
    """The FROM items a build side over ``other`` reads: ``other``, then (unless an outer
    join may fill it with NULLs) the inner neighbours joined to it by equalities of
    ``conjuncts_`` that carry filters of their own, never ``probe`` nor another fact; with
    the equalities joining them. A neighbour carries filters of its own when a conjunct
    about it alone is selective, or it is a derived table whose query filters its rows
    (``derived_filters``: the typed plan's answer, the one find_prunes gives)."""
    def filtered(src: Source) -> bool:
        if any(selective(c) for c in local_to(tables, sc, conjuncts_, src.alias)):
            return True
        derived = src.node is not None and (isinstance(src.node, exp.Subquery)
                                             or src.cte is not None)
        return derived and derived_filters(src.cte if src.cte is not None
                                           else src.node.this)

    members = [other]
    joins: list[exp.Expression] = []
    if not other.null_supplied or other.preserved_outer:
        # snowflake: inner neighbours joined by equality that carry filters of their own
        frontier = [other]
        while frontier and len(members) < 6:
            cur = frontier.pop()
            for c in conjuncts_:
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
    return members, joins


def local_to(tables: Tables, sc: Scope, conjuncts_: list[exp.Expression],
             alias: str) -> list[exp.Expression]:
    """The conjuncts about the FROM item ``alias`` alone (a subquery in one only when it
    is self-contained): what a build query filters that item by, in its SQL and in its
    typed plan alike."""
    out = []
    for c in conjuncts_:
        if id(c) not in sc.about:
            cols = outer_columns(c)
            sc.about[id(c)] = frozenset() if has_subquery(c) and not _self_contained(
                tables, c) else frozenset(sc.owner(col) for col in cols)
        if sc.about[id(c)] == {alias}:
            out.append(c)
    return out


def _self_contained(tables: Tables, c: exp.Expression) -> bool:
    """Every subquery of a conjunct is uncorrelated (a build side carries it whole: a
    scalar subquery bounding a date range, an IN list pushed in), so it can be copied
    into a build query. A column inside binds inside when a table there has it."""
    for sub in c.find_all(exp.Subquery):
        if sub.meta.get(PUSHED_QUERY):
            continue
        if sub.find_ancestor(exp.Subquery) is not None and _below_subquery_of(sub, c):
            continue            # checked with the outermost one
        aliases, names = set(), set()
        for t in sub.find_all(exp.Table):
            aliases.add((t.alias or t.name).lower())
            if t.name.lower() in tables.ctes and not t.args.get("db"):
                names |= {n.lower() for n in tables.ctes[t.name.lower()].named_selects}
                continue
            info = tables.info(table_name(t))
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


def _below_subquery_of(sub: exp.Expression, top: exp.Expression) -> bool:
    """Is ``sub`` nested in another subquery that is itself inside ``top``?"""
    p = sub.parent
    while p is not None and p is not top:
        if isinstance(p, exp.Subquery):
            return True
        p = p.parent
    return False


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
    """Where the pushed conjuncts a build query carries came from (for ``explain``)."""
    where = tree.args.get("where")
    found = [c.meta[ORIGIN] for c in (conjuncts(where.this) if where is not None else [])
             if c.meta.get(ORIGIN)]
    return "; ".join(dict.fromkeys(found)) or None
