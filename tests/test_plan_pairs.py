"""dpp.analysis.plan_pairs on plan descriptions as the JVM rule sends them (no Spark needed)."""
from __future__ import annotations

import json

from typing import Any, Optional

from dpp.core.refusals import Code, Refusal
from dpp.analysis.plan_pairs import WHOLE_BUILD_BYTES, find_prunes, relation_nodes


class _Plan:
    """Builds a plan description: nodes numbered in the order they are added."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.exprs = 0

    def node(self, op: str, children: list[int], output: list[tuple[int, str]],
             **extra: Any) -> int:
        nid = len(self.nodes)
        self.nodes.append({"id": nid, "op": op, "children": children,
                           "output": [[e, n, "int"] for e, n in output], **extra})
        return nid

    def key(self, attr: Optional[int], cast: Optional[str] = None,
            src: Optional[str] = None) -> dict[str, Any]:
        self.exprs += 1
        k: dict[str, Any] = {"expr": self.exprs - 1, "type": cast or "int", "sql": f"a{attr}"}
        if attr is not None:
            k["attr"] = attr
        if cast:
            k["cast"], k["from"] = cast, src
        return k

    def fact(self) -> int:
        return self.node("LogicalRelation", [], [(1, "v"), (2, "day")],
                         relation={"kind": "path", "rootPaths": ["file:/f"],
                                   "partitionColumns": ["day"]})

    def dim(self, selective: bool = True) -> int:
        leaf = self.node("LogicalRelation", [], [(10, "d"), (11, "month")])
        return self.node("Filter", [leaf], [(10, "d"), (11, "month")], selective=selective,
                         inSubqueries=[])

    def desc(self) -> dict[str, Any]:
        return {"op": "plan", "request": "r1", "roots": [len(self.nodes) - 1],
                "nodes": self.nodes}


def _join(p: _Plan, left: int, right: int, how: str, keys: list[tuple[dict, dict]]) -> int:
    out = [(o[0], o[1]) for c in (left, right) for o in p.nodes[c]["output"]]
    if how in ("LEFT SEMI", "LEFT ANTI"):
        out = [(o[0], o[1]) for o in p.nodes[left]["output"]]
    return p.node("Join", [left, right], out, joinType=how, keys=[[a, b] for a, b in keys])


def test_inner_join_prunes_the_fact_by_the_filtered_dimension() -> None:
    p = _Plan()
    f, d = p.fact(), p.dim()
    _join(p, f, d, "INNER", [(p.key(2), p.key(10))])
    prunes, _ = find_prunes(p.desc())
    assert [(x.relation, x.column, x.build_node) for x in prunes] == [(f, "day", d)]


def test_a_build_side_says_whether_sparks_own_pruning_counts_its_filter() -> None:
    """``Prune.spark_selective`` follows the Filter's ``sparkSelective`` (Spark's
    ``isLikelySelective``) anywhere below the build's side of the join; a Filter that does
    not say counts as one (the hook then waits for Spark's keys, as before the field)."""
    for says, want in ((True, True), (False, False), (None, True)):
        p = _Plan()
        f = p.fact()
        leaf = p.node("LogicalRelation", [], [(10, "d"), (11, "month")])
        extra = {} if says is None else {"sparkSelective": says}
        flt = p.node("Filter", [leaf], [(10, "d"), (11, "month")], selective=True,
                     inSubqueries=[], **extra)
        d = p.node("Project", [flt], [(10, "d")], map=[[10, 10]])
        _join(p, f, d, "INNER", [(p.key(2), p.key(10))])
        (prune,) = find_prunes(p.desc())[0]
        assert prune.spark_selective is want, (says, prune)


def test_keys_written_the_other_way_round_still_pair() -> None:
    p = _Plan()
    d, f = p.dim(), p.fact()
    _join(p, d, f, "INNER", [(p.key(2), p.key(10))])
    assert [(x.relation, x.build_node) for x in find_prunes(p.desc())[0]] == [(f, d)]


def test_preserved_and_anti_sides_are_never_pruned() -> None:
    for how, fact_left in (("LEFT OUTER", True), ("FULL OUTER", True), ("LEFT ANTI", True),
                           ("RIGHT OUTER", False)):
        p = _Plan()
        f, d = p.fact(), p.dim()
        left, right = (f, d) if fact_left else (d, f)
        _join(p, left, right, how, [(p.key(2), p.key(10))])
        prunes, notes = find_prunes(p.desc())
        assert prunes == [], how
        if how != "LEFT ANTI":
            assert notes, how


def test_non_preserved_side_of_an_outer_join_is_pruned() -> None:
    p = _Plan()
    d, f = p.dim(), p.fact()
    _join(p, d, f, "LEFT OUTER", [(p.key(10), p.key(2))])
    assert [x.relation for x in find_prunes(p.desc())[0]] == [f]


def test_a_computed_key_is_not_traced_and_a_data_column_is_offered_for_statistics() -> None:
    p = _Plan()
    f, d = p.fact(), p.dim()
    _join(p, f, d, "INNER", [(p.key(1), p.key(10)), (p.key(None), p.key(10))])
    prunes = find_prunes(p.desc())[0]
    assert [(x.relation, x.column, x.data, x.build_reads_fact) for x in prunes] == [
        (f, "v", True, False)]


def test_a_data_column_is_offered_only_where_a_partition_column_would_be() -> None:
    """Statistics pruning is a row filter on the column: the same join types and build-side
    rules hold, and a build side that reads another fact is marked (costly to build)."""
    for how, offered in (("INNER", True), ("LEFT OUTER", False), ("LEFT ANTI", False)):
        p = _Plan()
        f, d = p.fact(), p.dim()
        _join(p, f, d, how, [(p.key(1), p.key(10))])
        assert bool(find_prunes(p.desc())[0]) is offered, how
    p = _Plan()
    f, d = p.fact(), p.dim(selective=False)
    _join(p, f, d, "INNER", [(p.key(1), p.key(10))])
    assert find_prunes(p.desc())[0] == []
    p = _Plan()
    f = p.fact()
    other = p.node("LogicalRelation", [], [(20, "w"), (21, "day2")],
                   relation={"kind": "path", "rootPaths": ["file:/g"],
                             "partitionColumns": ["day2"]})
    g = p.node("Filter", [other], [(20, "w"), (21, "day2")], selective=True, inSubqueries=[])
    _join(p, f, g, "INNER", [(p.key(1), p.key(20))])
    found = {(x.relation, x.data, x.build_reads_fact) for x in find_prunes(p.desc())[0]}
    assert found == {(f, True, True)}   # f, unfiltered, is no build side for the other


def test_an_unfiltered_build_side_prunes_nothing_and_says_so() -> None:
    p = _Plan()
    f, d = p.fact(), p.dim(selective=False)
    _join(p, f, d, "INNER", [(p.key(2), p.key(10))])
    prunes, notes = find_prunes(p.desc())
    assert prunes == [] and notes[0].code is Code.BUILD_FILTERS_NOTHING


def _sized_dim(p: _Plan, size: Optional[int]) -> int:
    """An unfiltered dimension read from files of ``size`` bytes (None: a size Spark does
    not know)."""
    rel: dict[str, Any] = {"kind": "path", "rootPaths": ["file:/d"], "partitionColumns": []}
    if size is not None:
        rel["sizeInBytes"] = size
    return p.node("LogicalRelation", [], [(10, "d"), (11, "month")], relation=rel)


def test_a_small_unfiltered_build_side_is_read_whole_for_its_keys() -> None:
    """A table of at most WHOLE_BUILD_BYTES is built though it filters nothing (its keys may
    be fewer than the fact's partitions); one byte more, or a size Spark does not know, and
    it is taken to hold every key: refused as before. The same for an IN subquery."""
    for how in ("join", "in"):
        for size, built in ((1, True), (WHOLE_BUILD_BYTES, True),
                            (WHOLE_BUILD_BYTES + 1, False), (None, False)):
            p = _Plan()
            f = p.fact()
            d = _sized_dim(p, size)
            if how == "join":
                _join(p, f, d, "INNER", [(p.key(2), p.key(10))])
            else:
                p.node("Filter", [f], [(1, "v"), (2, "day")], selective=True, inSubqueries=[
                    {"value": p.key(2), "query": d, "queryKey": p.key(10)}])
            prunes, notes = find_prunes(p.desc())
            assert [(x.relation, x.column, x.data) for x in prunes] == (
                [(f, "day", False)] if built else []), (how, size, prunes)
            if not built:
                assert notes and notes[0].code in (
                    Code.BUILD_FILTERS_NOTHING, Code.IN_FILTERS_NOTHING), (how, size, notes)


def test_a_small_unfiltered_build_side_is_never_a_data_column_filter() -> None:
    """Reading a small table whole pays only where it may drop partitions: a data column's
    statistics filter still wants a build side that filters."""
    for how in ("join", "in"):
        p = _Plan()
        f = p.fact()
        d = _sized_dim(p, 100)
        if how == "join":
            _join(p, f, d, "INNER", [(p.key(1), p.key(10))])
        else:
            p.node("Filter", [f], [(1, "v"), (2, "day")], selective=True, inSubqueries=[
                {"value": p.key(1), "query": d, "queryKey": p.key(10)}])
        assert find_prunes(p.desc())[0] == [], how


def test_a_small_unfiltered_build_side_keeps_the_outer_join_rule() -> None:
    """Its size changes what is worth a build, never which side may be pruned."""
    p = _Plan()
    f = p.fact()
    d = _sized_dim(p, 100)
    _join(p, f, d, "LEFT OUTER", [(p.key(2), p.key(10))])
    prunes, notes = find_prunes(p.desc())
    assert prunes == [] and notes[0].code is Code.JOIN_KEEPS_UNMATCHED


def test_traced_through_project_alias_aggregate_and_union() -> None:
    p = _Plan()
    f1, f2 = p.fact(), p.node("LogicalRelation", [], [(3, "v"), (4, "day")],
                              relation={"kind": "catalog", "table": "t",
                                        "partitionColumns": ["day"], "rootPaths": []})
    proj = p.node("Project", [f1], [(5, "dd")], map=[[5, 2]])
    agg = p.node("Aggregate", [f2], [(6, "day")], map=[[6, 4]])
    union = p.node("Union", [proj, agg], [(5, "dd")])
    d = p.dim()
    _join(p, union, d, "INNER", [(p.key(5), p.key(10))])
    assert sorted(x.relation for x in find_prunes(p.desc())[0]) == [f1, f2]


def test_union_with_an_untraceable_branch_prunes_no_branch() -> None:
    p = _Plan()
    f1 = p.fact()
    other = p.node("LogicalRDD", [], [(7, "x"), (8, "y")])
    union = p.node("Union", [f1, other], [(1, "v"), (2, "day")])
    d = p.dim()
    _join(p, union, d, "INNER", [(p.key(2), p.key(10))])
    assert find_prunes(p.desc())[0] == []


def test_limit_and_window_over_all_rows_stop_the_trace() -> None:
    for op, extra in (("GlobalLimit", {}), ("Window", {"partitionSpec": []}),
                      ("Sample", {})):
        p = _Plan()
        f = p.fact()
        mid = p.node(op, [f], [(1, "v"), (2, "day")], **extra)
        d = p.dim()
        _join(p, mid, d, "INNER", [(p.key(2), p.key(10))])
        assert find_prunes(p.desc())[0] == [], op


def test_window_partitioned_by_the_key_passes_it() -> None:
    p = _Plan()
    f = p.fact()
    w = p.node("Window", [f], [(1, "v"), (2, "day")], partitionSpec=[2])
    d = p.dim()
    _join(p, w, d, "INNER", [(p.key(2), p.key(10))])
    assert [x.relation for x in find_prunes(p.desc())[0]] == [f]


def test_fact_side_casts_only_integral_widening() -> None:
    for cast, src, ok in (("bigint", "int", True), ("int", "bigint", False),
                          ("string", "int", False), ("double", "int", False)):
        p = _Plan()
        f, d = p.fact(), p.dim()
        _join(p, f, d, "INNER", [(p.key(2, cast, src), p.key(10))])
        assert bool(find_prunes(p.desc())[0]) is ok, (cast, src)


def test_in_subquery_conjunct_prunes_the_outer_fact() -> None:
    p = _Plan()
    f = p.fact()
    d = p.dim()
    p.node("Filter", [f], [(1, "v"), (2, "day")], selective=True,
           inSubqueries=[{"value": p.key(2), "query": d, "queryKey": p.key(10)}])
    assert [(x.relation, x.build_node, x.join) for x in find_prunes(p.desc())[0]] == [
        (f, d, "IN subquery")]


def test_build_side_narrowed_to_the_filtered_child_that_gives_the_key() -> None:
    p = _Plan()
    f = p.fact()
    big = p.node("LogicalRelation", [], [(20, "w")])
    d = p.dim()
    build = _join(p, big, d, "INNER", [(p.key(20), p.key(11))])
    _join(p, f, build, "INNER", [(p.key(2), p.key(10))])
    assert [x.build_node for x in find_prunes(p.desc())[0]] == [d]


def test_build_side_not_narrowed_to_an_unfiltered_child() -> None:
    p = _Plan()
    f = p.fact()
    leaf = p.node("LogicalRelation", [], [(10, "d"), (11, "month")])
    other = p.dim()   # the filter is on the other side of the build join
    other_out = p.nodes[other]["output"]
    p.nodes[other]["output"] = [[30, "x", "int"]] + other_out[1:]
    build = _join(p, leaf, other, "INNER", [(p.key(11), p.key(30))])
    _join(p, f, build, "INNER", [(p.key(2), p.key(10))])
    assert [x.build_node for x in find_prunes(p.desc())[0]] == [build]


def _expr_key(p: _Plan, refs: list[int], sql: str, deterministic: bool = True,
              typ: str = "int") -> dict[str, Any]:
    """A key that is an expression (no single attribute): what the JVM sends for f.sid + 1."""
    p.exprs += 1
    return {"expr": p.exprs - 1, "type": typ, "sql": sql, "refs": refs,
            "deterministic": deterministic}


def _two_level_fact(p: _Plan) -> int:
    return p.node("LogicalRelation", [], [(1, "v"), (2, "day"), (3, "h")],
                  relation={"kind": "path", "rootPaths": ["file:/f"],
                            "partitionColumns": ["day", "h"]})


def test_an_expression_of_partition_columns_is_an_expression_key() -> None:
    p = _Plan()
    f, d = p.fact(), p.dim()
    _join(p, f, d, "INNER", [(_expr_key(p, [2], "(day + 1)"), _expr_key(p, [10], "(d + 1)"))])
    prunes, _ = find_prunes(p.desc())
    assert [(x.relation, x.build_node, x.fact_sql, x.fact_refs, x.columns) for x in prunes] == \
        [(f, d, "(day + 1)", ((2, "day"),), ("day",))]
    assert prunes[0].fact_expr is not None and prunes[0].build_sql == "(d + 1)"


def test_an_expression_of_two_partition_columns_reads_both() -> None:
    p = _Plan()
    f = _two_level_fact(p)
    d = p.dim()
    _join(p, f, d, "INNER", [(_expr_key(p, [2, 3], "(day + h)"),
                              _expr_key(p, [10, 11], "(d + month)"))])
    prunes, _ = find_prunes(p.desc())
    assert [x.columns for x in prunes] == [("day", "h")]


def test_expressions_that_read_data_columns_both_sides_or_chance_are_not_keys() -> None:
    cases = [([1], True, [10]),          # a data column of the fact
             ([2], False, [10]),         # rand(): not deterministic
             ([2, 10], True, [10])]      # reads the dimension too: not an equi-join key
    for fact_refs, deterministic, dim_refs in cases:
        p = _Plan()
        f, d = p.fact(), p.dim()
        _join(p, f, d, "INNER", [(_expr_key(p, fact_refs, "k", deterministic),
                                  _expr_key(p, dim_refs, "dk"))])
        assert find_prunes(p.desc())[0] == [], (fact_refs, deterministic)


def test_a_narrowing_cast_is_evaluated_as_an_expression_not_mapped_back() -> None:
    p = _Plan()
    f, d = p.fact(), p.dim()
    k = p.key(2, cast="tinyint", src="int")
    k["refs"], k["deterministic"] = [2], True
    _join(p, f, d, "INNER", [(k, p.key(10))])
    prunes, _ = find_prunes(p.desc())
    assert len(prunes) == 1 and prunes[0].fact_expr == k["expr"]


def test_an_expression_in_subquery_value_is_an_expression_key() -> None:
    p = _Plan()
    f = p.fact()
    sub = p.dim()
    p.node("Filter", [f], [(1, "v"), (2, "day")], selective=True,
           inSubqueries=[{"value": _expr_key(p, [2], "(day * 2)"), "query": sub,
                          "queryKey": p.key(10)}])
    prunes, _ = find_prunes(p.desc())
    assert [(x.relation, x.fact_sql, x.join) for x in prunes] == \
        [(f, "(day * 2)", "IN subquery")]


def _q72(p: _Plan, via: str = "Filter") -> tuple[int, int, int]:
    """fact ⋈ d1 (filtered) on day, then ⋈ d2 (unfiltered) on ``fact.day = d2.d AND
    d1.month = d2.month`` — TPC-DS q72's inventory, d1 and d2. Returns (fact, d1's Filter,
    d2)."""
    f, d1 = p.fact(), p.dim()
    left = _join(p, f, d1, "INNER", [(p.key(2), p.key(10))])
    if via != "Filter":   # what the fact side passes d1's month through
        out = [tuple(o[:2]) for o in p.nodes[left]["output"]]
        left = p.node(via, [left, left] if via == "Union" else [left], out)
    leaf = p.node("LogicalRelation", [], [(30, "d"), (31, "month")])
    d2 = p.node("Project", [leaf], [(30, "d"), (31, "month")], map=[[30, 30], [31, 31]])
    _join(p, left, d2, "INNER", [(p.key(2), p.key(30)), (p.key(11), p.key(31))])
    return f, d1, d2


def test_an_unfiltered_build_side_is_narrowed_by_the_joins_other_key() -> None:
    """d2 filters nothing, but a fact row matches only a d2 row whose month one of d1's rows
    has: the build is d2 ⋉ d1 on month (the fact's second filter, beside d1's own)."""
    p = _Plan()
    f, d1, d2 = _q72(p)
    prunes, _notes = find_prunes(p.desc())
    narrowed = [x for x in prunes if x.build_node == d2]
    assert [(x.relation, x.column, x.build_semi[0]) for x in narrowed] == [(f, "day", d1)]
    (b, a), = narrowed[0].build_semi[1]
    node, expr, semi = narrowed[0].build
    assert (node, expr) == (d2, narrowed[0].build_expr)
    assert json.loads(semi) == {"node": d1, "keys": [b], "otherKeys": [a]}


def test_no_narrowing_through_a_union_or_where_the_other_side_reads_the_fact() -> None:
    p = _Plan()
    _f, _d1, d2 = _q72(p, via="Union")
    assert not [x for x in find_prunes(p.desc())[0] if x.build_node == d2]
    p = _Plan()
    f = p.fact()
    # the other key comes from the fact itself (v): narrowing would read the fact to prune it
    leaf = p.node("LogicalRelation", [], [(30, "d"), (31, "month")])
    _join(p, f, leaf, "INNER", [(p.key(2), p.key(30)), (p.key(1), p.key(31))])
    assert find_prunes(p.desc())[0] == []


def _q2(p: _Plan, up: str = "INNER", grouping: bool = True, other_selective: bool = True,
        other_flags: Optional[dict[str, Any]] = None) -> tuple[int, int, int]:
    """fact ⋈ d (unfiltered) on day, grouped by d's month, then ⋈ ``other`` (filtered) on
    that month — TPC-DS q2's sales, inner ``date_dim`` and outer ``date_dim``. Returns
    (fact, d, other)."""
    f = p.fact()
    d = p.node("LogicalRelation", [], [(30, "d"), (31, "month")])
    low = _join(p, f, d, "INNER", [(p.key(2), p.key(30))])
    mapping = [[31, 31]] if grouping else []
    agg = p.node("Aggregate", [low], [(31, "month"), (40, "total")], map=mapping)
    leaf = p.node("LogicalRelation", [], [(50, "d"), (51, "month")])
    other = p.node("Filter", [leaf], [(50, "d"), (51, "month")], selective=other_selective,
                   inSubqueries=[], **(other_flags or {}))
    _join(p, agg, other, up, [(p.key(31), p.key(51))])
    return f, d, other


def test_an_unfiltered_build_side_is_narrowed_by_a_join_above_it() -> None:
    """d filters nothing, but a fact row reaches the output only through a group whose month
    the filtered ``other`` has: the build is d ⋉ other on month."""
    p = _Plan()
    f, d, other = _q2(p)
    prunes, _notes = find_prunes(p.desc())
    narrowed = [x for x in prunes if x.build_node == d]
    assert [(x.relation, x.column, x.build_semi[0]) for x in narrowed] == [(f, "day", other)]
    (b, a), = narrowed[0].build_semi[1]
    keys = p.nodes[-1]["keys"][0]
    assert (b, a) == (keys[0]["expr"], keys[1]["expr"])


def test_no_narrowing_from_above_where_it_could_drop_rows() -> None:
    """Not when the join above keeps the grouped side's rows unmatched (a left outer join
    with it on the left), when the month is an aggregate's result rather than a grouping
    key, or when the side above filters nothing or is not deterministic."""
    for kw in ({"up": "LEFT OUTER"}, {"up": "FULL OUTER"}, {"grouping": False},
               {"other_selective": False}, {"other_flags": {"flagged": "rand(1)"}}):
        p = _Plan()
        _f, d, _other = _q2(p, **kw)   # type: ignore[arg-type]
        assert not [x for x in find_prunes(p.desc())[0] if x.build_node == d], kw
    p = _Plan()
    f, d, other = _q2(p, up="RIGHT OUTER")   # the grouped side is NULL-supplied: prunable
    assert [x.build_semi[0] for x in find_prunes(p.desc())[0] if x.build_node == d] == [other]


def test_a_sort_decides_a_limit_above_the_join_never_a_sample() -> None:
    """``ordered`` (a front end's fact: a sort right below) makes a limit's rows the same
    from fewer files; a sample draws per task whatever the order, and an expression drawn
    per run in the limit's own node is drawn all the same."""
    for op, extra, pruned in (("GlobalLimit", {}, True), ("Sample", {}, False),
                              ("GlobalLimit", {"flagged": "rand()"}, False)):
        p = _Plan()
        f, d = p.fact(), p.dim()
        j = _join(p, f, d, "INNER", [(p.key(2), p.key(10))])
        out = [(o[0], o[1]) for o in p.nodes[j]["output"]]
        s = p.node("Sort", [j], out)
        p.node(op, [s], out, ordered=True, **extra)
        prunes, notes = find_prunes(p.desc())
        assert bool(prunes) == pruned, (op, extra, prunes)
        if not pruned:
            assert [n.code for n in notes] == [Code.FACT_BELOW_NONDETERMINISTIC], notes


def test_every_front_ends_facts_meet_one_rule() -> None:
    from dpp.analysis.rules import decided_by_sort, unrepeatable

    assert unrepeatable("GlobalLimit") == "GlobalLimit"
    assert unrepeatable("Limit", "rand()") == "Limit"        # the operator names it first
    assert unrepeatable("Filter", "rand(3) < 0.5") == "Filter (rand(3) < 0.5)"
    assert unrepeatable("Project") is None and unrepeatable("Filter", "") is None
    assert decided_by_sort("GlobalLimit", None, True)
    assert not decided_by_sort("Sample", None, True)
    assert not decided_by_sort("GlobalLimit", "rand()", True)
    assert not decided_by_sort("GlobalLimit", None, False)


def test_an_unpartitioned_relation_is_a_fact_only_at_the_broadcast_threshold() -> None:
    """The describer sends every Parquet relation read by its files with its size; whether an
    unpartitioned one is a fact (pruned by data-column filters, costly to build from) is
    dpp.analysis.rules.is_fact's call, at the session's broadcast setting."""
    def plan(size: int, setting: Optional[str]) -> dict[str, Any]:
        p = _Plan()
        f = p.node("LogicalRelation", [], [(1, "v"), (2, "item")],
                   relation={"kind": "path", "rootPaths": ["file:/f"], "partitionColumns": [],
                             "sizeInBytes": size})
        _join(p, f, p.dim(), "INNER", [(p.key(2), p.key(10))])
        desc = p.desc()
        if setting is not None:
            desc["broadcastThreshold"] = setting
        return desc

    def pruned(desc: dict[str, Any]) -> list[tuple[str, bool]]:
        return [(x.column, x.data) for x in find_prunes(desc)[0]]
    big, small = 64 << 20, 1 << 20
    assert pruned(plan(big, None)) == [("item", True)]
    assert pruned(plan(small, None)) == []           # Spark broadcasts it: no fact
    assert pruned(plan(small, "")) == []
    assert pruned(plan(small, "512k")) == [("item", True)]
    assert pruned(plan(big, "128MB")) == []
    assert pruned(plan(small, "-1")) == []            # broadcasts off: Spark's 10 MB default
    assert relation_nodes(plan(small, None)) == {}
    assert list(relation_nodes(plan(big, None))) == [0]


# ---------------------------------------------------------------- comparison conjuncts


def _compare_join(p: _Plan, left: int, right: int, how: str,
                  compares: list[tuple[dict, str, dict]],
                  keys: Optional[list[tuple[dict, dict]]] = None) -> int:
    j = _join(p, left, right, how, keys or [])
    p.nodes[j]["compares"] = [[a, op, b] for a, op, b in compares]
    return j


def test_a_comparison_prunes_the_fact_by_the_build_keys_bound() -> None:
    """``f.day <= d.d`` and ``d.d > f.day`` (operands the other way round: the operator read
    from the fact's side) each give a pair that carries the fact side's operator."""
    for written, want in ((lambda p: (p.key(2), "<=", p.key(10)), "<="),
                          (lambda p: (p.key(10), ">", p.key(2)), "<"),
                          (lambda p: (p.key(2), ">=", p.key(10)), ">=")):
        p = _Plan()
        f, d = p.fact(), p.dim()
        _compare_join(p, f, d, "INNER", [written(p)])
        prunes, _ = find_prunes(p.desc())
        assert [(x.relation, x.column, x.build_node, x.compare) for x in prunes] == \
            [(f, "day", d, want)], prunes


def test_a_comparison_keeps_the_join_rules_and_the_build_side_rules() -> None:
    """Not the preserved side of an outer join, not an anti join's; not by an unfiltered
    build side (too large to read whole); the non-preserved side of an outer join is."""
    for how, pruned in (("LEFT OUTER", False), ("RIGHT OUTER", True), ("LEFT ANTI", False),
                        ("FULL OUTER", False), ("LEFT SEMI", True)):
        p = _Plan()
        f, d = p.fact(), p.dim()
        _compare_join(p, f, d, how, [(p.key(2), "<", p.key(10))])
        prunes, _ = find_prunes(p.desc())
        assert bool([x for x in prunes if x.relation == f]) is pruned, (how, prunes)
    p = _Plan()
    f, d = p.fact(), p.dim(selective=False)
    _compare_join(p, f, d, "INNER", [(p.key(2), "<", p.key(10))])
    assert find_prunes(p.desc())[0] == []


def test_a_comparison_needs_an_ordered_type_and_the_column_itself() -> None:
    """Strings (collations order them otherwise), floating types (NaN) and booleans are not
    compared; a fact-side expression is not; an integral widening of the column is."""
    def one(fact_key: dict, dim_type: str = "int") -> list:
        p = _Plan()
        f, d = p.fact(), p.dim()
        dk = p.key(10)
        dk["type"] = dim_type
        _compare_join(p, f, d, "INNER", [(fact_key(p) if callable(fact_key) else fact_key,
                                          "<", dk)])
        return find_prunes(p.desc())[0]

    for t in ("string", "double", "float", "boolean"):
        def typed(p: _Plan, t: str = t) -> dict:
            k = p.key(2)
            k["type"] = t
            return k
        assert one(typed, t) == [], t
    assert one(lambda p: {"expr": 90, "type": "int", "sql": "day + 1", "refs": [2],
                          "deterministic": True}) == []
    widened = one(lambda p: p.key(2, cast="bigint", src="int"), "bigint")
    assert [x.compare for x in widened] == ["<"]
    decimal = one(lambda p: {**p.key(2), "type": "decimal(10,2)"}, "decimal(10,2)")
    assert [x.compare for x in decimal] == ["<"]


def test_a_comparison_on_a_data_column_wants_a_filtered_build_side() -> None:
    p = _Plan()
    f, d = p.fact(), p.dim()
    _compare_join(p, f, d, "INNER", [(p.key(1), ">=", p.key(11))])
    prunes, _ = find_prunes(p.desc())
    assert [(x.column, x.data, x.compare) for x in prunes] == [("v", True, ">=")]


def test_an_equi_key_and_a_comparison_of_one_column_both_pair() -> None:
    """``f.day = d.d AND f.day < d.month``: two pairs on ``day`` (the loader intersects
    their domains); the same operand compared twice (``>=`` and ``<=``) gives two as well."""
    p = _Plan()
    f, d = p.fact(), p.dim()
    _compare_join(p, f, d, "INNER", [(p.key(2), "<", p.key(11))], keys=[(p.key(2), p.key(10))])
    assert sorted(x.compare for x in find_prunes(p.desc())[0]) == ["<", "="]
    p = _Plan()
    f, d = p.fact(), p.dim()
    k = p.key(10)
    _compare_join(p, f, d, "INNER", [(p.key(2), ">=", k), (p.key(2), "<=", k)])
    assert sorted(x.compare for x in find_prunes(p.desc())[0]) == ["<=", ">="]
