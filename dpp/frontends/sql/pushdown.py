"""Carrying a predicate from an outer scope into the query that produces its columns.

The planner analyses one SELECT scope at a time, so a filter written outside a derived table,
a UNION or a CTE (``WHERE year = 2001`` on a ``year_total`` CTE, a date dimension joined to a
UNION ALL of two fact tables) would stop at the scope's edge, and the fact inside be read
whole. Spark's optimizer pushes such filters inward before its own pruning, and so must we to
read no more than Spark does. Two steps, both pure sqlglot:

* :func:`inline_ctes` replaces each use of a deterministic CTE that holds a partitioned table
  with a copy of its body. Spark does the same (``InlineCTE`` inlines every deterministic CTE),
  so the query Spark runs is unchanged, and each use is then pruned by its own outer filters
  (q74 filters one ``year_total`` use to 2001 and another to 2002: a union of the two would
  read both years twice). A non-deterministic CTE is evaluated once by Spark: it stays, and
  nothing is pushed into it.
* :func:`push_into` places a conjunct, written over a derived table's output columns, in the
  WHERE of every SELECT that produces those columns: through projections and renames, into
  every UNION/INTERSECT branch (by position), into EXCEPT's left side only, through GROUP BY
  when every column is a plain grouping key, and through window functions only when every
  column is a PARTITION BY key of each window. It never crosses LIMIT/OFFSET, QUALIFY,
  TABLESAMPLE, grouping sets, aggregate or window outputs, or non-deterministic expressions.

Pushing happens on the analysis copy of the query only (the query Spark runs is the user's,
with CTEs inlined where that was worth it): a pushed conjunct is a fact the outer query
guarantees, so the analysis may use it to prune, and Spark still evaluates the original one.
Each pushed conjunct carries, in ``meta[ORIGIN]``, the path it took, for ``explain``.
"""
from __future__ import annotations

from typing import Callable, Optional

from sqlglot import exp

from dpp.analysis.functions import deterministic

__all__ = ["ORIGIN", "EMPTY", "POSITION", "inline_ctes", "push_into", "outer_columns"]

ORIGIN = "dpp_origin"          # meta of a pushed conjunct: the path it took
EMPTY = "dpp_empty"            # meta of a SELECT whose pushed WHERE is false: reads nothing
POSITION = "dpp_pos"           # meta of a placeholder column: the output column's position


def outer_columns(node: exp.Expression) -> list[exp.Column]:
    """The columns of a conjunct that belong to its own scope: not those inside a subquery
    (a subquery names its own tables, whatever their aliases)."""
    out: list[exp.Column] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            out.append(n)
            continue
        if isinstance(n, (exp.Subquery, exp.Query)) and n is not node:
            continue
        stack.extend(n.iter_expressions())
    return out


# ---------------------------------------------------------------------- CTE inlining

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
                         f"keeps it; nothing pushed into it")
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


# ---------------------------------------------------------------------- pushing

def push_into(query: exp.Expression, template: exp.Expression, origin: str,
              notes: list[str]) -> int:
    """Places ``template`` in every SELECT of ``query`` that produces the output columns it
    names; returns how many it reached. The template's placeholders are columns with
    ``meta[POSITION]``, the output position they read (positions survive renames and map
    UNION branches, whose columns are named by the first branch). ``notes`` gets a line for
    every place the conjunct had to stop."""
    if isinstance(query, exp.Subquery):
        return push_into(query.this, template, origin, notes)
    if isinstance(query, exp.SetOperation):
        if any(query.args.get(k) for k in ("limit", "offset", "fetch")):
            notes.append(f"not pushed into a set operation with LIMIT/OFFSET ({origin})")
            return 0
        if isinstance(query, exp.Except):
            return push_into(query.left, template, f"{origin}, into EXCEPT's left side",
                             notes)
        kind = "UNION" if isinstance(query, exp.Union) else "INTERSECT"
        return (push_into(query.left, template, f"{origin}, into {kind} branch", notes) +
                push_into(query.right, template, f"{origin}, into {kind} branch", notes))
    if not isinstance(query, exp.Select):
        return 0
    blocked = _blocker(query)
    if blocked:
        notes.append(f"not pushed past {blocked} ({origin})")
        return 0
    sels = query.selects
    mapped: dict[int, exp.Expression] = {}
    for col in outer_columns(template):
        pos = col.meta.get(POSITION)
        if pos is None:
            continue
        if pos >= len(sels):
            return 0
        proj = sels[pos].unalias()
        reason = _not_through(query, proj)
        if reason:
            notes.append(f"not pushed: {sels[pos].alias_or_name} is {reason} ({origin})")
            return 0
        mapped[pos] = proj
    steps = []
    for pos, proj in sorted(mapped.items()):
        out_name = sels[pos].alias_or_name
        if query.args.get("group"):
            steps.append(f"through GROUP BY key {proj.sql('spark')}")
        elif not (isinstance(proj, exp.Column) and proj.name == out_name):
            steps.append(f"through projection {out_name} = {proj.sql('spark')}")
    here = ", ".join([origin] + steps)

    def fill(node: exp.Expression) -> exp.Expression:
        pos = node.meta.get(POSITION) if isinstance(node, exp.Column) else None
        if pos is not None:
            return mapped[pos].copy()
        return node

    conj = template.copy().transform(fill, copy=False)
    conj.meta[ORIGIN] = here
    if not outer_columns(conj) and not any(True for _ in conj.find_all(exp.Query)):
        truth = constant_truth(conj)
        if truth is True:
            return 1
        if truth is False:
            query.meta[EMPTY] = f"{conj.sql('spark')} is false ({here})"
            return 1
    query.where(conj, append=True, copy=False)
    return 1


def _blocker(sel: exp.Select) -> Optional[str]:
    for k, what in (("limit", "LIMIT"), ("offset", "OFFSET"), ("fetch", "FETCH"),
                    ("qualify", "QUALIFY")):
        if sel.args.get(k) is not None:
            return what
    group = sel.args.get("group")
    if group is not None and any(group.args.get(k) for k in ("rollup", "cube",
                                                              "grouping_sets")):
        return "ROLLUP/CUBE/GROUPING SETS"
    if any(isinstance(s, exp.Star) or isinstance(s, exp.Column) and
           isinstance(s.this, exp.Star) for s in sel.selects):
        return "SELECT * (columns not known by position)"
    if not deterministic(sel):
        return "a non-deterministic expression"
    return None


def _same(a: exp.Expression, b: exp.Expression) -> bool:
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        if a.name.lower() != b.name.lower():
            return False
        return not a.table or not b.table or a.table.lower() == b.table.lower()
    return a.sql("spark").lower() == b.sql("spark").lower()


def _not_through(sel: exp.Select, proj: exp.Expression) -> Optional[str]:
    """Why a filter on this output column may not move below this SELECT, or None."""
    if any(True for _ in proj.find_all(exp.Window)):
        return "a window function's output"
    if any(a.find_ancestor(exp.Window) is None for a in proj.find_all(exp.AggFunc)):
        return "an aggregate's output"
    if not outer_columns(proj) and not any(True for _ in proj.find_all(exp.Query)):
        return None         # a constant: the same for every row and every group
    group = sel.args.get("group")
    if group is not None:
        keys = []
        for g in group.expressions:
            if isinstance(g, exp.Literal) and g.is_int and 0 < int(g.this) <= len(sel.selects):
                g = sel.selects[int(g.this) - 1].unalias()
            elif isinstance(g, exp.Column) and not g.table:
                for s in sel.selects:    # GROUP BY an output alias
                    if isinstance(s, exp.Alias) and s.alias.lower() == g.name.lower():
                        g = s.unalias()
            keys.append(g)
        if not any(_same(proj, k) for k in keys):
            return "not a grouping key"
    elif _aggregates(sel) and outer_columns(proj):
        return "a column of an aggregate without GROUP BY"
    for w in (w for s in sel.selects for w in s.find_all(exp.Window)):
        parts = w.args.get("partition_by") or []
        if not any(_same(proj, p) for p in parts):
            return "not a PARTITION BY key of every window"
    return None


def _aggregates(sel: exp.Select) -> bool:
    """Does the SELECT aggregate its rows (an aggregate outside any window function)?"""
    return any(a.find_ancestor(exp.Window) is None
               for s in sel.selects for a in s.find_all(exp.AggFunc))


def constant_truth(c: exp.Expression) -> Optional[bool]:
    """True/False for a comparison of two literals of one kind (a UNION branch's constant
    meeting the outer filter: ``'w' = 's'``), None when not sure. NULL compares to nothing."""
    c = c.unnest() if isinstance(c, exp.Paren) else c
    if isinstance(c, (exp.EQ, exp.NEQ)):
        a, b = _lit(c.this), _lit(c.expression)
        if a is _UNKNOWN or b is _UNKNOWN:
            return None
        if a is None or b is None:
            return False
        if type(a) is not type(b):
            return None
        return (a == b) if isinstance(c, exp.EQ) else (a != b)
    if isinstance(c, exp.In) and c.args.get("query") is None:
        a = _lit(c.this)
        vals = [_lit(v) for v in c.expressions]
        if a is _UNKNOWN or any(v is _UNKNOWN for v in vals):
            return None
        if a is None:
            return False
        if any(v is not None and type(v) is not type(a) for v in vals):
            return None
        return a in vals          # not found: false, or NULL with a NULL in the list
    return None


_UNKNOWN = object()


def _lit(e: exp.Expression) -> object:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Null):
        return None
    if isinstance(e, exp.Literal):
        if e.is_string:
            return e.this
        try:
            from decimal import Decimal
            return Decimal(e.this)
        except ArithmeticError:
            return _UNKNOWN
    return _UNKNOWN
