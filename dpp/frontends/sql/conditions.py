"""The conditions of the translated query placed where they hold, and what that gives the
planner: :func:`dpp.analysis.plan_filters.place_conditions` decides on the typed plan how
far each conjunct moves (into derived tables, UNION branches, through grouping keys and
window partitions, into an outer join's NULL-supplied side only when it rejects NULL); this
module only writes its answers back in SQL terms:

* each relation's conjuncts, over its own columns (``alias.column``): its static domains;
* a conjunct that reaches a table from an outer query joins that FROM item's own conjuncts
  (a ``Filter`` over it in the typed plan, a condition of its build query), so that a build
  side restricted from outside counts as filtering (TPC-DS's ``year_total`` CTE, filtered to
  one year by the query that reads it);
* a UNION branch whose constant contradicts the condition reads nothing;
* words for ``explain``: where a conjunct came from, and where one had to stop.

Nothing is rewritten in the query Spark runs: these are facts the query guarantees, and
Spark still evaluates every conjunct where the user wrote it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Optional

from sqlglot import exp

from dpp.analysis.plan_filters import (Placement, Steps, Stop, place_conditions,
                                       relations_below)
from dpp.analysis.pruning_plan import short
from dpp.frontends.sql.build import ORIGIN
from dpp.frontends.sql.scopes import outer_columns, selective
from dpp.frontends.sql.typed import Typed

__all__ = ["Placed", "place", "constant_truth"]


@dataclass
class Placed:
    # relation node -> its conjuncts over its own columns, each with the words of the path
    # it took from an outer query (None: written about the relation where it is)
    statics: dict[int, list[tuple[exp.Expression, Optional[str]]]] = field(default_factory=dict)
    empty: dict[int, str] = field(default_factory=dict)   # relation node -> why it reads nothing
    notes: list[str] = field(default_factory=list)


def place(typed: Typed) -> Placed:
    """Places the conditions of ``typed`` (and adds the moved ones to the typed plan and to
    the FROM items the build queries are written from)."""
    msg = typed.message
    conds = {nid: [c for _e, c in lst] for nid, lst in typed.conditions.items()}
    placements, stops = place_conditions(msg, conds, typed.constants)
    nodes: dict[int, dict[str, Any]] = {n["id"]: n for n in msg["nodes"]}
    parents: dict[int, list[int]] = {}
    for n in msg["nodes"]:
        for ch in n["children"]:
            parents.setdefault(ch, []).append(n["id"])
    out = Placed()
    for p in placements:
        c = typed.conditions[p.filter][p.index][0]
        words = _origin(typed, nodes, c, p.steps, p.constant)
        if p.constant:
            consts = typed.constants[p.target]
            filled = _fill(typed, c, p, lambda a: consts[a].copy())
            if filled is not None and constant_truth(filled) is False:
                why = f"{filled.sql(dialect='spark')} is false" + (f" ({words})" if words else "")
                for r in relations_below(msg, p.target):
                    out.empty.setdefault(r, why)
            continue
        src = typed.leaves.get(p.target)
        if src is None:
            continue
        names = {e: n for e, n, _t in nodes[p.target]["output"]}
        moved = _fill(typed, c, p, lambda a: exp.column(names[a], table=src.alias)
                      if a in names else None)
        if moved is None:
            continue
        out.statics.setdefault(p.target, []).append((moved, words))
        if p.filter in parents.get(p.target, []):
            continue                       # written about this table where it is
        if words:
            moved.meta[ORIGIN] = words
        _attach(typed, nodes, parents, p.target, moved.copy())
    for st in stops:
        out.notes.append(_stop_words(typed, nodes, st))
    return out


def _fill(typed: Typed, c: exp.Expression, p: Placement,
          value: Callable[[int], Optional[exp.Expression]]) -> Optional[exp.Expression]:
    """The conjunct with each of its columns replaced by ``value`` of the attribute it reads
    at the placement (None when one has none)."""
    renamed = p.renamed()
    copy = c.copy()
    for orig, col in zip(outer_columns(c), outer_columns(copy)):
        attr = typed.attrs.get(id(orig))
        new = value(renamed[attr]) if attr in renamed else None
        if new is None:
            return None
        if col is copy:
            copy = new
        else:
            col.replace(new)
    return copy


def _attach(typed: Typed, nodes: dict[int, dict[str, Any]], parents: dict[int, list[int]],
            leaf: int, conjunct: exp.Expression) -> None:
    """A conjunct from an outer query joins the conjuncts of the FROM item ``leaf`` is: in
    its ``Filter`` (made when it had none) and in the item's own list."""
    item = leaf if leaf in typed.items else next(
        (q for q in parents.get(leaf, []) if q in typed.items and nodes[q]["op"] == "Filter"),
        None)
    if item is None:
        return
    for it in typed.items[item]:
        if typed.leaves.get(leaf) is it.source:
            it.where.append(conjunct)
    if item != leaf:
        nodes[item]["selective"] = bool(nodes[item].get("selective")) or selective(conjunct)
        return
    fid = len(typed.message["nodes"])
    f = {"id": fid, "op": "Filter", "children": [leaf],
         "output": [list(o) for o in nodes[leaf]["output"]], "selective": selective(conjunct)}
    typed.message["nodes"].append(f)
    nodes[fid] = f
    for q in parents.get(leaf, []):
        nodes[q]["children"] = [fid if ch == leaf else ch for ch in nodes[q]["children"]]
    parents[fid] = parents.pop(leaf, [])
    parents[leaf] = [fid]
    typed.items[fid] = typed.items.pop(leaf)


def _origin(typed: Typed, nodes: dict[int, dict[str, Any]], c: exp.Expression,
            steps: Steps, entered: bool = False) -> Optional[str]:
    """The path a conjunct took into a derived table, for ``explain``; None when it stayed
    in its own query (``entered``: it did, whatever the steps say)."""
    if not entered and not any(nodes[n]["op"] in _QUERY_OPERATORS for n, _a in steps):
        return None
    parts = [_from(typed, c)]
    for n, attrs in steps:
        op = nodes[n]["op"]
        sel = typed.selects.get(n, {})
        names = {e: nm for e, nm, _t in nodes[n]["output"]}
        if op == "Aggregate":
            parts += [f"through GROUP BY key {sel[a].sql(dialect='spark')}"
                      for a in attrs if a in sel]
        elif op == "Project":
            for a in attrs:
                e = sel.get(a)
                if e is not None and not (isinstance(e, exp.Column) and
                                          e.name.lower() == names.get(a)):
                    parts.append(f"through projection {names.get(a)} = {e.sql(dialect='spark')}")
        elif op in ("Union", "Intersect"):
            parts.append(f"into {op.upper()} branch")
        elif op == "Except":
            parts.append("into EXCEPT's left side")
    return ", ".join(dict.fromkeys(parts))


def _from(typed: Typed, c: exp.Expression) -> str:
    return f"pushed from {typed.written.get(id(c), 'outer WHERE')} {short(c)}"


def _stop_words(typed: Typed, nodes: dict[int, dict[str, Any]], st: Stop) -> str:
    c = typed.conditions[st.filter][st.index][0]
    origin = _origin(typed, nodes, c, st.steps, True)
    n = nodes[st.node]
    op = n["op"]
    if op in _POSITIONAL:
        return f"not pushed past {_POSITIONAL[op]} ({origin})"
    if n.get("flagged"):
        return f"not pushed past a non-deterministic expression ({origin})"
    name = {e: nm for e, nm, _t in n["output"]}.get(st.attr, "a column") \
        if st.attr is not None else "a column"
    if op == "Window":
        return f"not pushed: {name} is not a PARTITION BY key of every window ({origin})"
    e = typed.selects.get(st.node, {}).get(st.attr) if st.attr is not None else None
    reason = "a computed column"
    if e is not None and e.find(exp.Window) is not None:
        reason = "a window function's output"
    elif e is not None and any(a.find_ancestor(exp.Window) is None
                               for a in e.find_all(exp.AggFunc)):
        reason = "an aggregate's output"
    elif op == "Aggregate":
        reason = "not a grouping key"
    return f"not pushed: {name} is {reason} ({origin})"


# the operators a condition meets only where it enters a derived table (its own Filter is
# below its own SELECT's)
_QUERY_OPERATORS = frozenset({"Project", "Aggregate", "Union", "Intersect", "Except"})
_POSITIONAL = {"GlobalLimit": "LIMIT", "Offset": "OFFSET", "Sample": "TABLESAMPLE"}


# ---------------------------------------------------------------------- constants

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
            return Decimal(e.this)
        except ArithmeticError:
            return _UNKNOWN
    return _UNKNOWN
