"""The Spark Connect plan translated to the typed plan (:mod:`dpp.connect_typed`), and the
pairs :func:`dpp.connect_frames.find_fact_joins` takes from :func:`dpp.plan_pairs.find_prunes`
on it. Protobuf plans built by hand, as a Connect client sends them: no server."""
from __future__ import annotations

import itertools
from typing import Any, Optional

import pytest

from dpp.connect_frames import find_fact_joins
from dpp.connect_typed import translate
from dpp.plan_wire import check_plan
from dpp.rules import JoinType, may_prune

proto = pytest.importorskip("pyspark.sql.connect.proto")

_PIDS = itertools.count(100)
_CODES = {JoinType.INNER: 1, JoinType.FULL_OUTER: 2, JoinType.LEFT_OUTER: 3,
          JoinType.RIGHT_OUTER: 4, JoinType.LEFT_ANTI: 5, JoinType.LEFT_SEMI: 6}


def _fact_of(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
    """``f``: partitioned by ``k``, with data columns ``v`` and ``s`` (a struct)."""
    if read.named_table.unparsed_identifier == "f":
        return "f", {"v", "k", "s"}, {"k"}
    return None


def _rel(pid: bool = True) -> Any:
    r = proto.Relation()
    if pid:
        r.common.plan_id = next(_PIDS)
    return r


def read(name: str) -> Any:
    r = _rel()
    r.read.named_table.unparsed_identifier = name
    return r


def col(name: str, of: Any = None) -> Any:
    e = proto.Expression()
    e.unresolved_attribute.unparsed_identifier = name
    if of is not None:
        e.unresolved_attribute.plan_id = of.common.plan_id
    return e


def call(fn: str, *args: Any) -> Any:
    e = proto.Expression()
    e.unresolved_function.function_name = fn
    e.unresolved_function.arguments.extend(args)
    return e


def lit(v: int) -> Any:
    e = proto.Expression()
    e.literal.integer = v
    return e


def where(rel: Any, cond: Any = None) -> Any:
    r = _rel()
    r.filter.input.CopyFrom(rel)
    r.filter.condition.CopyFrom(cond if cond is not None else call("==", col("x"), lit(1)))
    return r


def alias(rel: Any, name: str) -> Any:
    r = _rel()
    r.subquery_alias.input.CopyFrom(rel)
    r.subquery_alias.alias = name
    return r


def select(rel: Any, *exprs: Any) -> Any:
    r = _rel()
    r.project.input.CopyFrom(rel)
    r.project.expressions.extend(exprs)
    return r


def renamed(e: Any, name: str) -> Any:
    out = proto.Expression()
    out.alias.expr.CopyFrom(e)
    out.alias.name.append(name)
    return out


def join(left: Any, right: Any, cond: Any = None, how: JoinType = JoinType.INNER,
         using: tuple[str, ...] = ()) -> Any:
    r = _rel()
    r.join.left.CopyFrom(left)
    r.join.right.CopyFrom(right)
    r.join.join_type = _CODES[how]
    if cond is not None:
        r.join.join_condition.CopyFrom(cond)
    r.join.using_columns.extend(using)
    return r


def dim() -> Any:
    return where(read("d"))


def _pruned(root: Any) -> list[tuple[str, str]]:
    """(fact column, build column) pairs found, after checking the typed plan."""
    check_plan(translate(root, _fact_of).message)  # type: ignore[arg-type]
    return [(c, b) for fr in find_fact_joins(root, _fact_of) for c, _rel_, b in fr.pairs]


# ---------------------------------------------------------------------- the typed plan

def test_the_translation_is_a_plan_message_the_checker_accepts() -> None:
    d = dim()
    root = select(join(read("f"), d, call("==", col("k"), col("dk"))), col("v"))
    typed = translate(root, _fact_of)
    check_plan(typed.message)  # type: ignore[arg-type]
    ops = {n["op"] for n in typed.message["nodes"]}
    assert {"LogicalRelation", "Filter", "Join", "Project"} <= ops
    fact = [n for n in typed.message["nodes"] if n.get("relation")]
    assert len(fact) == 1 and fact[0]["relation"]["partitionColumns"] == ["k"]
    join_node = next(n for n in typed.message["nodes"] if n["op"] == "Join")
    assert join_node["joinType"] == "INNER" and len(join_node["keys"]) == 1
    assert typed.relations[fact[0]["id"]].read.named_table.unparsed_identifier == "f"


@pytest.mark.parametrize("how", list(_CODES))
@pytest.mark.parametrize("side", ["left", "right"])
def test_join_types_and_sides_follow_the_rules_table(how: JoinType, side: str) -> None:
    f, d = read("f"), dim()
    left, right = (f, d) if side == "left" else (d, f)
    got = _pruned(join(left, right, call("==", col("k", f), col("dk", d)), how))
    assert bool(got) == may_prune(how, side)
    typed = translate(join(left, right, None, how), _fact_of)
    assert next(n for n in typed.message["nodes"] if n["op"] == "Join")["joinType"] == how.value


def test_using_and_bare_names_resolve_each_on_its_side() -> None:
    assert _pruned(join(read("f"), dim(), using=("k",))) == [("k", "k")]
    assert _pruned(join(dim(), read("f"), call("==", col("dk"), col("k")))) == [("k", "dk")]
    # a data column, and a name the fact does not have on either side: nothing
    assert _pruned(join(read("f"), dim(), call("==", col("v"), col("dk")))) == []
    assert _pruned(join(read("f"), dim(), call("==", col("dk"), col("dj")))) == []


def test_keys_through_aliases_projects_and_with_columns() -> None:
    f = read("f")
    kept = select(where(f, call(">", col("v"), lit(1))), col("k"), col("v"))
    assert _pruned(join(kept, dim(), call("==", col("k"), col("dk")))) == [("k", "dk")]
    moved = select(f, renamed(col("k"), "day"))
    assert _pruned(join(moved, dim(), call("==", col("day"), col("dk")))) == [("k", "dk")]
    computed = select(f, renamed(call("+", col("k"), lit(1)), "k"))
    assert _pruned(join(computed, dim(), call("==", col("k"), col("dk")))) == []
    wc = _rel()
    wc.with_columns.input.CopyFrom(f)
    wc.with_columns.aliases.add().name.append("k")
    wc.with_columns.aliases[0].expr.CopyFrom(call("+", col("k"), lit(1)))
    assert _pruned(join(wc, dim(), call("==", col("k"), col("dk")))) == []


def test_plan_id_and_alias_qualified_columns() -> None:
    f, d = read("f"), dim()
    assert _pruned(join(f, d, call("==", col("dk", d), col("k", f)))) == [("k", "dk")]
    aliased = join(alias(read("f"), "ff"), alias(dim(), "dd"),
                   call("==", col("ff.k"), col("dd.k")))
    assert _pruned(aliased) == [("k", "`dd`.`k`")]
    # a column by plan id above another join: still the fact's
    other = read("o")
    j = join(f, other, call("==", col("v", f), col("ov", other)))
    d2 = dim()
    assert _pruned(join(j, d2, call("==", col("k", f), col("dk", d2)))) == [("k", "dk")]
    # ... and another relation's column of the same name is not
    j = join(read("f"), other, call("==", col("v"), col("ov", other)))
    picked = select(j, col("k", other), col("v"))
    assert _pruned(join(picked, dim(), call("==", col("k"), col("dk")))) == []
    assert _pruned(join(j, dim(), call("==", col("k", other), col("dk")))) == []


def test_ambiguous_names_do_not_prune() -> None:
    f = read("f")
    # one DataFrame joined to itself: its plan id names two relations
    assert _pruned(join(join(f, f, call("==", col("v", f), col("v", f))), dim(),
                        call("==", col("k", f), col("dk")))) == []
    # f.k where the fact has a struct column ``s``: s.k could be its field
    assert _pruned(join(alias(read("f"), "s"), dim(), call("==", col("s.k"), col("dk")))) == []
    # a nested field by plan id
    assert _pruned(join(f, dim(), call("==", col("s.k", f), col("dk")))) == []
    # two reads of the fact, each with a k: a bare k is neither
    twice = join(read("f"), alias(read("f"), "g"), call("==", col("v"), col("g.v")))
    assert _pruned(join(twice, dim(), call("==", col("k"), col("dk")))) == []
    # a build side of two relations dpp knows nothing of: dk is one of theirs, not the
    # fact's, so the whole side builds the filter
    both = join(read("d"), read("e"), call("==", col("a"), col("b")))
    assert _pruned(join(read("f"), where(both), call("==", col("k"), col("dk")))) == \
        [("k", "dk")]


def test_a_nondeterministic_build_side_is_refused_with_the_reason() -> None:
    d = where(read("d"), call("<", call("rand"), lit(1)))
    found = find_fact_joins(join(read("f"), d, call("==", col("k"), col("dk"))), _fact_of)
    assert len(found) == 1 and found[0].pairs == [] and "rand" in (found[0].refused or "")
    sampled = _rel()
    sampled.sample.input.CopyFrom(dim())
    sampled.sample.upper_bound = 0.5
    found = find_fact_joins(join(read("f"), sampled, call("==", col("k"), col("dk"))),
                            _fact_of)
    assert found and found[0].pairs == [] and "Sample" in (found[0].refused or "")


def test_a_limit_or_sample_above_the_fact_stops_its_keys() -> None:
    lim = _rel()
    lim.limit.input.CopyFrom(read("f"))
    lim.limit.limit = 5
    assert _pruned(join(lim, dim(), call("==", col("k"), col("dk")))) == []
    srt = _rel()
    srt.sort.input.CopyFrom(read("f"))
    lim.limit.input.CopyFrom(srt)
    assert _pruned(join(lim, dim(), call("==", col("k"), col("dk")))) == []
    smp = _rel()
    smp.sample.input.CopyFrom(read("f"))
    smp.sample.upper_bound = 0.5
    assert _pruned(join(smp, dim(), call("==", col("k"), col("dk")))) == []
    # and no fact read below a nondeterministic filter is pruned
    noisy = where(read("f"), call("<", call("rand"), lit(1)))
    assert _pruned(join(noisy, dim(), call("==", col("k"), col("dk")))) == []


def test_a_build_side_must_filter_and_a_local_one_does() -> None:
    assert _pruned(join(read("f"), read("d"), call("==", col("k"), col("dk")))) == []
    local = _rel()
    local.local_relation.data = b""
    assert _pruned(join(read("f"), local, call("==", col("k"), col("dk")))) == [("k", "dk")]
    for query, pruned in (("SELECT dk FROM d WHERE x = 1", True), ("SELECT dk FROM d", False)):
        text = _rel()
        text.sql.query = query
        for key in (col("dk"), col("dk", text)):
            got = _pruned(join(read("f"), text, call("==", col("k"), key)))
            assert got == ([("k", "dk")] if pruned else []), query


def test_keys_through_aggregates_and_unions() -> None:
    agg = _rel()
    agg.aggregate.input.CopyFrom(read("f"))
    agg.aggregate.group_type = 1
    agg.aggregate.grouping_expressions.append(col("k"))
    agg.aggregate.aggregate_expressions.append(renamed(call("sum", col("v")), "t"))
    assert _pruned(join(agg, dim(), call("==", col("k"), col("dk")))) == [("k", "dk")]
    assert _pruned(join(agg, dim(), call("==", col("t"), col("dk")))) == []
    u = _rel()
    u.set_op.set_op_type = 2
    u.set_op.is_all = True
    u.set_op.left_input.CopyFrom(select(read("f"), col("k"), col("v")))
    u.set_op.right_input.CopyFrom(select(read("f"), col("k"), col("v")))
    assert _pruned(join(u, dim(), call("==", col("k"), col("dk")))) == [("k", "dk")] * 2


def test_unknown_operators_stop_the_key() -> None:
    drop = _rel()
    drop.drop.input.CopyFrom(read("f"))
    drop.drop.column_names.append("v")
    assert _pruned(join(drop, dim(), call("==", col("k"), col("dk")))) == []
    typed = translate(drop, _fact_of)
    assert typed.message["nodes"][-1]["op"] == "drop"
