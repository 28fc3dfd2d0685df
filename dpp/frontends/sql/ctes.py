"""Each use of a deterministic CTE that holds a partitioned table, as its own copy.

Spark inlines every deterministic CTE (``InlineCTE``), so the query Spark runs is unchanged,
and each use is then pruned by its own outer filters (q74 filters one ``year_total`` use to
2001 and another to 2002: one relation for both would read both years twice). A
non-deterministic CTE is evaluated once by Spark: it stays one relation.
"""
from __future__ import annotations

from typing import Callable

from sqlglot import exp

from dpp.analysis.functions import deterministic

__all__ = ["inline_ctes"]


def inline_ctes(tree: exp.Expression, worth: Callable[[exp.Expression], bool]) -> list[str]:
    """Replaces every use of each deterministic, non-recursive top-level CTE whose body
    ``worth`` accepts (it holds a partitioned table) with a copy of the body as a derived
    table, and drops the definition; returns notes for the plan. Later CTEs may use earlier
    ones, so definitions are handled in order and a copied body carries the earlier
    inlining with it."""
    with_ = tree.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        return []
    notes: list[str] = []
    for cte in list(with_.expressions):
        name = cte.alias_or_name.lower()
        body = cte.this
        if not worth(body):
            continue
        uses = [t for t in tree.find_all(exp.Table)
                if not t.args.get("db") and t.name.lower() == name and
                not _below(t, cte)]
        if not uses:
            continue
        if not deterministic(body):
            notes.append(f"CTE {name} is not deterministic: kept as one relation, as Spark "
                         f"keeps it; no condition of one use moves into it")
            continue
        if any(_shadowed(t, with_, name) for t in uses) or \
                any(t.args.get(k) for t in uses for k in ("sample", "version", "when",
                                                           "pivots", "joins", "laterals")):
            notes.append(f"CTE {name}: a use is shadowed or sampled; not inlined")
            continue
        columns = cte.args["alias"].args.get("columns") if cte.args.get("alias") else None
        for t in uses:
            alias_name = t.alias or cte.alias_or_name
            alias = exp.TableAlias(this=exp.to_identifier(alias_name))
            if columns:
                alias.set("columns", [c.copy() for c in columns])
            t.replace(exp.Subquery(this=body.copy(), alias=alias))
        cte.pop()
        if len(uses) > 1:
            notes.append(f"CTE {name} inlined in each of its {len(uses)} uses (as Spark "
                         f"inlines deterministic CTEs): each use is pruned by its own filters")
    if not with_.expressions:
        tree.set("with_", None)
    return notes


def _below(node: exp.Expression, ancestor: exp.Expression) -> bool:
    p = node.parent
    while p is not None:
        if p is ancestor:
            return True
        p = p.parent
    return False


def _shadowed(use: exp.Table, top: exp.With, name: str) -> bool:
    """A nested WITH between the use and the top-level one may define the same name."""
    p = use.parent
    while p is not None:
        w = p.args.get("with_") if isinstance(p, exp.Query) else None
        if w is not None and w is not top and \
                any(c.alias_or_name.lower() == name for c in w.expressions):
            return True
        p = p.parent
    return False
