"""Where a filter's conditions hold below it: each condition of a ``Filter`` node walked down
the typed plan as far as Spark's optimizer may move it (``PushDownPredicates``), so that a
relation below gets the conditions that provably hold for every row it contributes.

The SQL-text front end asks this before :func:`dpp.analysis.plan_pairs.find_prunes`: a
condition written outside a derived table, a UNION or an inlined CTE's use
(``WHERE t.year = 2001`` over a ``year_total`` CTE) reaches the relations inside, as a
static domain of a fact's partition column, or as a condition that makes a build side
selective. (The hook's plan is Spark's optimized plan: Spark has moved its filters already.)

A condition moves below an operator only where filtering the operator's input gives the
same rows as filtering its output:

* ``Filter``, ``Sort``, ``Distinct``, ``SubqueryAlias``: always.
* ``Project`` / ``Aggregate``: through the columns passed out unchanged (an aggregate's
  grouping keys), never through a computed or aggregated column, nor below a projection
  that evaluates a non-deterministic expression. A condition over columns that are all
  constants of the projection is decided there: :attr:`Placement.constant`.
* ``Window``: through the columns that partition every window.
* ``Join``: into the side that outputs every column it reads — either side of an inner
  join, the preserved side of an outer join, the left of a semi or anti join; into the
  NULL-supplied side of an outer join only a condition that is never true on NULL (the
  rows it removes there come out NULL-filled and are removed above); never into a full
  outer join's sides.
* ``Union`` / ``Intersect``: into every branch, by position; ``Except``: its left side.
* Anything else (a limit, an offset, a sample, a relation) ends the walk, and so does a node
  with two parents (one relation read by two consumers: a condition of one does not hold
  for the other's rows).

Only deterministic conditions without subqueries move (:attr:`Condition.movable`, decided by
the front end that wrote them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from dpp.analysis.rules import join_type, may_prune, output_sides

__all__ = ["Condition", "Placement", "Stop", "Steps", "JoinPosition", "place_conditions",
           "relations_below", "join_position"]

# the operators a condition passed: each node with the attributes of its output it read
Steps = tuple[tuple[int, tuple[int, ...]], ...]

_THROUGH = frozenset({"Filter", "Sort", "Distinct", "SubqueryAlias"})
_NULL_PRESERVING_LEFT = frozenset({"INNER", "CROSS", "LEFT OUTER", "LEFT SEMI", "LEFT ANTI"})
_NULL_PRESERVING_RIGHT = frozenset({"INNER", "CROSS", "RIGHT OUTER"})
# the operators whose stop is worth a word: a Filter is below its own SELECT's operators, so
# a condition meets these only where it enters a derived table
_NOTED = frozenset({"Project", "Aggregate", "Window", "GlobalLimit", "Offset", "Sample"})


@dataclass(frozen=True)
class Condition:
    """One conjunct of a Filter, as the walk needs it."""

    refs: frozenset[int]     # the attributes it reads
    movable: bool            # deterministic, no subquery, every column an attribute
    null_rejecting: bool     # never true when every column it reads is NULL


@dataclass(frozen=True)
class Placement:
    """Where a condition comes to rest: ``target`` (a relation, or the operator that stops
    it), with its attributes renamed to the ones there (``attrs``: the condition's
    attribute -> the attribute at ``target``), and the operators it passed (``steps``:
    each node id with the attributes of its output the condition read there, outermost
    first)."""

    filter: int
    index: int
    target: int
    attrs: tuple[tuple[int, int], ...]
    steps: Steps
    constant: bool = False   # every column is a constant of the projection at ``target``

    def renamed(self) -> dict[int, int]:
        return dict(self.attrs)


@dataclass(frozen=True)
class Stop:
    """A condition that had entered a derived table and stopped at ``node``: for the
    explanation (``attr``: the column at ``node`` that stopped it, when one did)."""

    filter: int
    index: int
    node: int
    attr: Optional[int]
    steps: Steps = ()


def place_conditions(desc: Mapping[str, Any],
                     conditions: Mapping[int, Sequence[Condition]],
                     constants: Mapping[int, Mapping[int, Any]]
                     ) -> tuple[list[Placement], list[Stop]]:
    """Every movable condition's resting places below its Filter (one per UNION branch it
    reaches), and the notable places where one had to stop. ``conditions``: Filter node ->
    its conditions, in order; ``constants``: projection node -> its outputs that are
    constants."""
    nodes = {n["id"]: n for n in desc["nodes"]}
    outputs = {i: [c[0] for c in n["output"]] for i, n in nodes.items()}
    uses: dict[int, int] = {}
    for n in desc["nodes"]:
        for ch in n["children"]:
            uses[ch] = uses.get(ch, 0) + 1
    shared = {c for c, k in uses.items() if k > 1}
    placed: list[Placement] = []
    stops: list[Stop] = []
    for fid, conds in conditions.items():
        node = nodes.get(fid)
        if node is None or node["op"] != "Filter" or len(node["children"]) != 1:
            continue
        for i, c in enumerate(conds):
            if not c.movable or not c.refs:
                continue
            _Walk(nodes, outputs, constants, shared, fid, i, c, placed, stops).go(
                node["children"][0], {a: a for a in c.refs}, ())
    return placed, stops


def _step(steps: Steps, node: int, cur: set[int]) -> Steps:
    return steps + ((node, tuple(sorted(cur))),)


class _Walk:
    def __init__(self, nodes: Mapping[int, dict[str, Any]], outputs: Mapping[int, list[int]],
                 constants: Mapping[int, Mapping[int, Any]], shared: set[int], fid: int,
                 index: int, cond: Condition, placed: list[Placement], stops: list[Stop]
                 ) -> None:
        self.nodes, self.outputs, self.constants, self.shared = nodes, outputs, constants, shared
        self.fid, self.index, self.cond = fid, index, cond
        self.placed, self.stops = placed, stops

    def rest(self, node: int, attrs: dict[int, int], steps: Steps,
             constant: bool = False) -> None:
        self.placed.append(Placement(self.fid, self.index, node,
                                     tuple(sorted(attrs.items())), steps, constant))

    def stop(self, node: int, steps: Steps, attr: Optional[int] = None) -> None:
        if self.nodes[node]["op"] in _NOTED:   # (a derived table's operators)
            self.stops.append(Stop(self.fid, self.index, node, attr, steps))

    def go(self, node: int, attrs: dict[int, int], steps: Steps,
           depth: int = 0) -> None:
        if depth > 200 or node in self.shared:
            # rows that go to two consumers (a CTE Spark keeps as one relation, used
            # twice): a condition of one does not hold for the other's
            return
        n = self.nodes[node]
        op = n["op"]
        kids = n["children"]
        cur = set(attrs.values())
        if op == "LogicalRelation":
            if cur <= set(self.outputs[node]):
                self.rest(node, attrs, steps)
            return
        if op in _THROUGH and len(kids) == 1:
            if cur <= set(self.outputs[kids[0]]):
                self.go(kids[0], attrs, _step(steps, node, cur), depth + 1)
            return
        if op in ("Project", "Aggregate") and len(kids) == 1:
            if n.get("flagged"):
                self.stop(node, steps)
                return
            passed = {o: s for o, s in n.get("map", [])}
            consts = self.constants.get(node, {})
            if all(a in consts for a in cur):
                self.rest(node, attrs, steps, constant=True)
                return
            blocked = [a for a in cur if a not in passed]
            if blocked:
                self.stop(node, steps, blocked[0])
                return
            self.go(kids[0], {k: passed[a] for k, a in attrs.items()}, _step(steps, node, cur),
                    depth + 1)
            return
        if op == "Window" and len(kids) == 1:
            spec = set(n.get("partitionSpec") or [])
            blocked = [a for a in cur if a not in spec]
            if blocked:
                self.stop(node, steps, blocked[0])
                return
            self.go(kids[0], attrs, _step(steps, node, cur), depth + 1)
            return
        if op == "Join" and len(kids) == 2:
            jt = n.get("joinType", "")
            left, right = kids
            if cur <= set(self.outputs[left]):
                if jt in _NULL_PRESERVING_LEFT or (jt == "RIGHT OUTER" and
                                                   self.cond.null_rejecting):
                    self.go(left, attrs, _step(steps, node, cur), depth + 1)
            elif cur <= set(self.outputs[right]) and jt not in ("LEFT SEMI", "LEFT ANTI"):
                if jt in _NULL_PRESERVING_RIGHT or (jt == "LEFT OUTER" and
                                                    self.cond.null_rejecting):
                    self.go(right, attrs, _step(steps, node, cur), depth + 1)
            return
        if op in ("Union", "Intersect", "Except") and kids:
            out = self.outputs[node]
            if not cur <= set(out):
                return
            for child in (kids[:1] if op == "Except" else kids):
                child_out = self.outputs[child]
                pos = {a: out.index(a) for a in cur}
                if any(p >= len(child_out) for p in pos.values()):
                    return
                self.go(child, {k: child_out[pos[a]] for k, a in attrs.items()},
                        _step(steps, node, cur), depth + 1)
            return
        self.stop(node, steps)


def relations_below(desc: Mapping[str, Any], node: int) -> list[int]:
    """The relation nodes of the rows under ``node`` (its children, at any depth; not the
    subqueries its expressions evaluate): what reads nothing when no row of ``node``
    survives the filter above it."""
    nodes = {n["id"]: n for n in desc["nodes"]}
    found: list[int] = []
    stack = [node]
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        n = nodes[i]
        if n["op"] == "LogicalRelation":
            found.append(i)
        stack.extend(n["children"])
    return found


@dataclass(frozen=True)
class JoinPosition:
    """Where a relation's rows stand in the joins of its own query (the joins between it
    and the first operator above them that is not a join, a filter or a sample), by
    :func:`dpp.analysis.rules.may_prune`: the report's reasons for a relation no pair
    prunes."""

    semi_right: bool = False        # the test side of an anti or existence join
    full: bool = False              # a side of a full outer join
    null_supplied: bool = False     # an outer join may fill it with NULLs
    preserved_outer: bool = False   # every row of it comes out of an outer join


def join_position(desc: Mapping[str, Any], node: int) -> JoinPosition:
    """The :class:`JoinPosition` of relation ``node`` in the typed plan ``desc``."""
    nodes = {n["id"]: n for n in desc["nodes"]}
    parent: dict[int, tuple[int, int]] = {}
    for n in desc["nodes"]:
        for i, ch in enumerate(n["children"]):
            parent.setdefault(ch, (n["id"], i))
    flags = {"semi_right": False, "full": False, "null_supplied": False,
             "preserved_outer": False}
    cur = node
    for _ in range(10_000):
        up = parent.get(cur)
        if up is None:
            break
        pid, idx = up
        n = nodes[pid]
        if n["op"] == "Join":
            jt = join_type(n.get("joinType", ""))
            side = "left" if idx == 0 else "right"
            if jt is not None:
                if output_sides(jt) == ("left",):
                    # a left-semi join's right side is pruned by the left's keys: only an
                    # anti or existence join's right side is a test no pruning may touch
                    flags["semi_right"] |= side == "right" and not may_prune(jt, "right")
                else:
                    left_kept = not may_prune(jt, "left")
                    right_kept = not may_prune(jt, "right")
                    if left_kept and right_kept:
                        flags["full"] = flags["null_supplied"] = True
                    elif (left_kept and side == "right") or (right_kept and side == "left"):
                        flags["null_supplied"] = True
                    elif left_kept or right_kept:
                        flags["preserved_outer"] = True
        elif n["op"] not in ("Filter", "Sample"):
            break
        cur = pid
    return JoinPosition(**flags)
