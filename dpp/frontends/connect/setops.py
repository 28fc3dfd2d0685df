"""Set operations and grouping sets of a Spark Connect plan, as the typed plan the optimizer
hook describes for them (part of :mod:`dpp.frontends.connect.typed`).

The hook's rule runs among Spark's pre-CBO rules, after the analyzer and the optimizer's
"Replace Operators" batch have rewritten these relations; the JVM describes what they became,
and :func:`dpp.analysis.plan_pairs.find_prunes` applies the one rule set (:mod:`dpp.analysis.rules`) to it. So
each is written here as those same operators, and a key passes exactly where it passes in the
hook's plan, never further:

* ``union`` is a ``Union``: a key passes by position into every branch.
* ``unionByName`` is a ``Union`` of the branches projected to the left's names (Spark's
  ``ResolveUnion``); with ``allowMissingColumns`` a name one side lacks is a NULL literal
  there (a computed column), so a key on it does not pass into either branch.
* ``intersect`` is an ``Aggregate`` over every column (``Distinct``) of a ``LEFT SEMI`` join
  of the left on the right (``ReplaceIntersectWithSemiJoin``), ``subtract`` the same over a
  ``LEFT ANTI`` join (``ReplaceExceptWithAntiJoin``): the output is the left's columns, so a
  key passes into the left only. The rewrite's condition is ``<=>`` on every column, which
  the describer does not key (a NULL matches NULL there, an IN-list never), so neither side
  prunes the other. The right side of a difference is never reached from above: a filter
  removing rows of the right side would add rows to the answer.
* ``intersectAll`` / ``exceptAll`` become a union, an aggregate and a ``Generate`` of
  ``replicaterows`` (``RewriteIntersectAll`` / ``RewriteExceptAll``): no key passes the
  ``Generate``, so they are an ``Intersect`` / ``Except`` node no key passes either.
* ``rollup``, ``cube`` and grouping sets are an ``Aggregate`` over an ``Expand``: a grouping
  column is the ``Expand``'s copy, NULL in the sets without it; no key passes an ``Expand``.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

from dpp.frontends.connect.nodes import Col, Node

__all__ = ["GROUPING_SETS", "Translator", "set_op", "grouping_sets"]

# Aggregate.GroupType values (spark/connect/relations.proto): ROLLUP, CUBE, GROUPING_SETS
GROUPING_SETS = frozenset({2, 3, 5})
# SetOperation.SetOpType values
_INTERSECT, _UNION, _EXCEPT = 1, 2, 3


class Translator(Protocol):
    """What a set operation's translation uses of the plan's translator: ``_Translator`` of
    :mod:`dpp.frontends.connect.typed` implements it. Declared here, not imported from there, so the
    import arrow points one way: ``connect_typed`` calls this module, never the reverse."""

    def visit(self, rel: Any, depth: int = 0) -> Node: ...

    def node(self, op: str, kids: list[Node], rel: Any, **extra: Any) -> Node: ...

    def passing(self, op: str, child: Node, rel: Any, **extra: Any) -> Node: ...

    def opaque(self, n: Node) -> Node: ...

    def col(self, name: str) -> Col: ...

    def add(self, n: Node, name: str, src: Optional[Col]) -> None: ...

    def named(self, scope: list[Node], expr: Any) -> tuple[str, Optional[Col]]: ...

    def column(self, scope: list[Node], expr: Any) -> Optional[Col]: ...


def set_op(tr: Translator, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
    """The typed nodes of a ``SetOperation`` relation (module docstring)."""
    s = rel.set_op
    left = tr.visit(s.left_input, depth + 1)
    right = tr.visit(s.right_input, depth + 1)
    kind = s.set_op_type
    if kind == _UNION and s.by_name:
        return _union_by_name(tr, rel, left, right, s.allow_missing_columns, extra)
    if kind == _UNION:
        return _union(tr, rel, left, right, extra)
    if kind in (_INTERSECT, _EXCEPT) and not s.by_name:
        op = "Intersect" if kind == _INTERSECT else "Except"
        if s.is_all:   # a Generate in Spark's rewrite: no key passes
            n = tr.node(op, [left, right], rel, **extra)
            n.leaf_open = True
            return n
        return _semi_or_anti(tr, rel, left, right,
                             "LEFT SEMI" if kind == _INTERSECT else "LEFT ANTI", extra)
    return tr.opaque(tr.node("set_op", [left, right], rel, **extra))


def _union(tr: Translator, rel: Any, left: Node, right: Node,
           extra: dict[str, Any]) -> Node:
    """``union``: by position, so both sides' columns and their order must be known."""
    if not all(k.known() and k.ordered for k in (left, right)) \
            or len(left.cols) != len(right.cols):   # positions of columns not all known
        return tr.opaque(tr.node("Union", [left, right], rel, **extra))
    return _unioned(tr, rel, [left, right], [c.name for c in left.cols], True, extra)


def _unioned(tr: Translator, rel: Any, sides: list[Node], names: list[str],
             ordered: bool, extra: dict[str, Any]) -> Node:
    """A ``Union`` of ``sides`` (their columns in the same positions) with new attributes
    named ``names``; under a ``Distinct`` unless UNION ALL. The top node carries ``rel``
    (its plan id names it, and it is what a build side over the union runs)."""
    distinct = not rel.set_op.is_all
    n = tr.node("Union", sides, None if distinct else rel, **({} if distinct else extra))
    n.cols, n.ordered = [tr.col(name) for name in names], ordered
    return tr.passing("Distinct", n, rel, **extra) if distinct else n


def _by_name(cols: list[Col]) -> Optional[dict[str, Col]]:
    """Columns by lower-case name, or None when two share one (Spark refuses the union)."""
    out = {c.name.lower(): c for c in cols}
    return out if len(out) == len(cols) else None


def _union_by_name(tr: Translator, rel: Any, left: Node, right: Node,
                   missing: bool, extra: dict[str, Any]) -> Node:
    """``unionByName``: Spark's ``ResolveUnion`` projects the right side to the left's
    names (and, with ``allowMissingColumns``, each side's missing names as NULLs: the left's
    columns first, then the right's own in its order) and unions them by position. Matching
    by name needs every column of both sides known, not their order."""
    lcols = _by_name(left.cols) if left.known() else None
    rcols = _by_name(right.cols) if right.known() else None
    if lcols is None or rcols is None or (not missing and set(lcols) != set(rcols)):
        # names not all known, or a union Spark refuses
        return tr.opaque(tr.node("Union", [left, right], rel, **extra))
    extra_right = [c for c in right.cols if c.name.lower() not in lcols]
    names = [c.name for c in left.cols] + [c.name for c in extra_right]
    sides = []
    for side, cols in ((left, lcols), (right, rcols)):
        proj = tr.node("Project", [side], None, map=[])
        for name in names:
            src = cols.get(name.lower())
            if src is None:    # NULL AS name: a computed column, no key passes it
                proj.cols.append(tr.col(name))
            else:
                tr.add(proj, name, src)
        proj.ordered = True
        sides.append(proj)
    return _unioned(tr, rel, sides, names, left.ordered and (right.ordered or not extra_right),
                    extra)


def _semi_or_anti(tr: Translator, rel: Any, left: Node, right: Node, how: str,
                  extra: dict[str, Any]) -> Node:
    """``intersect`` / ``subtract``: ``Aggregate`` (every column grouped) over a ``how``
    join of the left on the right with no key; the output is the left's columns, as are
    the join's, so a column not yet known passes up from the left as through a filter."""
    j = tr.node("Join", [left, right], None, joinType=how, keys=[])
    j.cols, j.links, j.ordered = list(left.cols), [left], left.ordered
    n = tr.node("Aggregate", [j], rel, map=[], **extra)
    for c in left.cols:
        tr.add(n, c.name, c)
    n.links, n.ordered = [j], left.ordered
    return n


def grouping_sets(tr: Translator, rel: Any, depth: int, extra: dict[str, Any]) -> Node:
    """``rollup`` / ``cube`` / ``groupingSets``: an ``Aggregate`` grouping by the columns
    of an ``Expand`` (one row per input row and grouping set, a column NULL in the sets
    without it). No key passes an ``Expand`` in the rule set, as in the hook's plan: rollup
    and cube always have the empty set; a key in every set would be sound but the hook's
    plan does not pass it either, and the two front ends decide alike."""
    agg = rel.aggregate
    child = tr.visit(agg.input, depth + 1)
    ex = tr.node("Expand", [child], None)
    n = tr.node("Aggregate", [ex], rel, map=[], **extra)
    for e in agg.grouping_expressions:
        name, _src = tr.named([child], e)
        copy = tr.col(name)   # the Expand's copy of the grouping column
        ex.cols.append(copy)
        tr.add(n, name, copy)
    for group in agg.grouping_sets:   # resolved as Spark does, so names below are known
        for e in group.grouping_set:
            tr.column([child], e)
    ex.cols.append(tr.col("spark_grouping_id"))
    for e in agg.aggregate_expressions:
        name, _src = tr.named([child], e)
        tr.add(n, name, None)
    n.ordered = True
    return n
