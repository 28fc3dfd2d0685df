"""Where a condition holds below its Filter (dpp.analysis.plan_filters), on hand-made typed
plans: every join type and side, with and without NULL rejection; projections, grouping
keys, windows, set operations, limits and constants; and where a relation stands in its
query's joins."""
from __future__ import annotations

from typing import Any

import pytest

from dpp.analysis.plan_filters import (Condition, JoinPosition, join_position, place_conditions,
                                       relations_below)


def _rel(nid: int, cols: list[tuple[int, str]], parts: tuple[str, ...] = ()) -> dict[str, Any]:
    rel = {"kind": "lazy", "index": "t", "rootPaths": [], "partitionColumns": list(parts),
           "bucketed": False, "partitionFiltered": False, "table": f"t{nid}"}
    return {"id": nid, "op": "LogicalRelation", "children": [],
            "output": [[e, n, "int"] for e, n in cols], "relation": rel}


def _node(nid: int, op: str, children: list[int], out: list[int], **extra: Any
          ) -> dict[str, Any]:
    return {"id": nid, "op": op, "children": children,
            "output": [[e, f"c{e}", "int"] for e in out], **extra}


def _join_plan(join_type: str) -> dict[str, Any]:
    """Filter(3) over Join(2) of a fact (0: attributes 1, 2) and a dimension (1: attr 3)."""
    return {"nodes": [_rel(0, [(1, "p"), (2, "v")], ("p",)), _rel(1, [(3, "k")]),
                      _node(2, "Join", [0, 1], [1, 2] if "SEMI" in join_type or
                            "ANTI" in join_type else [1, 2, 3], joinType=join_type),
                      _node(3, "Filter", [2], [1, 2, 3])]}


def _targets(plan: dict[str, Any], refs: set[int], null_rejecting: bool = True,
             movable: bool = True) -> list[int]:
    placed, _stops = place_conditions(
        plan, {3: [Condition(frozenset(refs), movable, null_rejecting)]}, {})
    return sorted(p.target for p in placed)


# (join type, side of the condition's column, NULL-rejecting) -> reaches that side's relation
JOIN_MATRIX = [
    ("INNER", "left", False, True), ("INNER", "right", False, True),
    ("LEFT OUTER", "left", False, True),          # the preserved side: always
    ("LEFT OUTER", "right", False, False),        # the NULL-supplied side: ...
    ("LEFT OUTER", "right", True, True),          # ... only a NULL-rejecting condition
    ("RIGHT OUTER", "left", False, False), ("RIGHT OUTER", "left", True, True),
    ("RIGHT OUTER", "right", False, True),
    ("FULL OUTER", "left", True, False), ("FULL OUTER", "right", True, False),
    ("LEFT SEMI", "left", False, True), ("LEFT ANTI", "left", False, True),
]


@pytest.mark.parametrize("join_type,side,rejecting,reaches", JOIN_MATRIX)
def test_a_condition_crosses_a_join_into_the_side_the_rules_allow(join_type, side, rejecting,
                                                                  reaches):
    plan = _join_plan(join_type)
    refs, relation = ({1}, 0) if side == "left" else ({3}, 1)
    assert _targets(plan, refs, rejecting) == ([relation] if reaches else [])


def test_a_condition_on_both_sides_or_not_movable_stays():
    plan = _join_plan("INNER")
    assert _targets(plan, {1, 3}) == []
    assert _targets(plan, {1}, movable=False) == []


def _above(op_nodes: list[dict[str, Any]], top: int, refs: set[int],
           constants: dict[int, dict[int, Any]] | None = None) -> Any:
    plan = {"nodes": [_rel(0, [(1, "p"), (2, "v")], ("p",))] + op_nodes +
            [_node(99, "Filter", [top], [n[0] for n in op_nodes[-1]["output"]])]}
    return place_conditions(plan, {99: [Condition(frozenset(refs), True, True)]},
                            constants or {})


def test_projection_renames_and_grouping_keys_pass_computed_columns_stop():
    placed, _ = _above([_node(5, "Project", [0], [7, 8], map=[[7, 1]])], 5, {7})
    assert [(p.target, p.renamed()) for p in placed] == [(0, {7: 1})]
    placed, stops = _above([_node(5, "Aggregate", [0], [7, 8], map=[[7, 1]])], 5, {8})
    assert placed == [] and [(s.node, s.attr) for s in stops] == [(5, 8)]
    placed, stops = _above([_node(5, "Project", [0], [1, 2], map=[[1, 1], [2, 2]],
                                  flagged="rand()")], 5, {1})
    assert placed == [] and [s.node for s in stops] == [5]


def test_windows_pass_their_partition_keys_only_and_limits_stop():
    placed, _ = _above([_node(5, "Window", [0], [1, 2], partitionSpec=[1])], 5, {1})
    assert [p.target for p in placed] == [0]
    placed, stops = _above([_node(5, "Window", [0], [1, 2], partitionSpec=[1])], 5, {2})
    assert placed == [] and [(s.node, s.attr) for s in stops] == [(5, 2)]
    placed, stops = _above([_node(5, "GlobalLimit", [0], [1, 2])], 5, {1})
    assert placed == [] and [s.node for s in stops] == [5]


def test_set_operations_map_by_position_except_only_into_its_left():
    for op, reached in (("Union", [0, 6]), ("Intersect", [0, 6]), ("Except", [0])):
        plan = {"nodes": [_rel(0, [(1, "p"), (2, "v")], ("p",)),
                          _rel(6, [(11, "q"), (12, "v")], ("q",)),
                          _node(7, op, [0, 6], [1, 2]),
                          _node(8, "Filter", [7], [1, 2])]}
        placed, _ = place_conditions(plan, {8: [Condition(frozenset({1}), True, True)]}, {})
        assert sorted(p.target for p in placed) == reached, op
        assert {p.target: p.renamed()[1] for p in placed}.get(6, 11) == 11


def test_a_condition_on_constants_is_decided_at_the_projection():
    placed, _ = _above([_node(5, "Project", [0], [7, 1], map=[[1, 1]])], 5, {7},
                       constants={5: {7: "'w'"}})
    assert [(p.target, p.constant) for p in placed] == [(5, True)]
    plan = {"nodes": [_rel(0, [(1, "p")], ("p",)), _node(5, "Project", [0], [7])]}
    assert relations_below(plan, 5) == [0]


@pytest.mark.parametrize("join_type,side,expected", [
    ("INNER", 0, JoinPosition()),
    ("LEFT OUTER", 0, JoinPosition(preserved_outer=True)),
    ("LEFT OUTER", 1, JoinPosition(null_supplied=True)),
    ("RIGHT OUTER", 0, JoinPosition(null_supplied=True)),
    ("RIGHT OUTER", 1, JoinPosition(preserved_outer=True)),
    ("FULL OUTER", 0, JoinPosition(full=True, null_supplied=True)),
    ("LEFT SEMI", 1, JoinPosition()),     # pruned by the left's keys, as an inner side
    ("LEFT SEMI", 0, JoinPosition()),
    ("LEFT ANTI", 1, JoinPosition(semi_right=True)),
    ("LEFT ANTI", 0, JoinPosition()),
])
def test_join_position_follows_the_rules(join_type, side, expected):
    plan = _join_plan(join_type)
    assert join_position(plan, side) == expected


def test_join_position_ends_at_the_query_boundary():
    """A join above the relation's own SELECT (over a derived table) is not its join."""
    plan = {"nodes": [_rel(0, [(1, "p")], ("p",)), _rel(1, [(3, "k")]),
                      _node(2, "Project", [0], [1], map=[[1, 1]]),
                      _node(3, "Join", [2, 1], [1, 3], joinType="LEFT OUTER")]}
    assert join_position(plan, 0) == JoinPosition()
    assert join_position(plan, 1) == JoinPosition(null_supplied=True)


def test_a_node_with_two_parents_stops_a_condition():
    """One relation read by two consumers (a CTE Spark keeps as one relation, used twice): a
    condition of one use does not hold for the other's rows."""
    plan = {"nodes": [_rel(0, [(1, "p")], ("p",)),
                      _node(1, "Project", [0], [1], map=[[1, 1]]),
                      _node(2, "Filter", [1], [1]),
                      _node(3, "Sample", [1], [1]),
                      _node(4, "Union", [2, 3], [1])]}
    placed, _ = place_conditions(plan, {2: [Condition(frozenset({1}), True, True)]}, {})
    assert placed == []
    plan["nodes"].append(_rel(5, [(1, "p")], ("p",)))
    plan["nodes"][3]["children"] = [5]          # the other consumer reads its own copy
    placed, _ = place_conditions(plan, {2: [Condition(frozenset({1}), True, True)]}, {})
    assert [p.target for p in placed] == [0]
