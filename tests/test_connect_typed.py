"""The Spark Connect plan translated to the typed plan (:mod:`dpp.frontends.connect.typed`), and the
pairs :func:`dpp.frontends.connect.frames.find_fact_joins` takes from :func:`dpp.analysis.plan_pairs.find_prunes`
on it. Protobuf plans built by hand, as a Connect client sends them: no server."""
from __future__ import annotations

import itertools
from typing import Any, Optional

import pytest

from dpp.core.refusals import Code, Refusal
from dpp.frontends.connect.frames import find_fact_joins
from dpp.frontends.connect.typed import translate
from dpp.analysis.plan_wire import check_plan
from dpp.analysis.rules import JoinType, may_prune

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


def _pruned(root: Any, data: bool = False) -> list[tuple[str, str]]:
    """(fact column, build column) pairs found on partition columns (``data``: on data
    columns), after checking the typed plan."""
    check_plan(translate(root, _fact_of).message)  # type: ignore[arg-type]
    return [(c, b) for fr in find_fact_joins(root, _fact_of) for c, build, b in fr.pairs
            if build.data == data]


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
    # a data column: a pair for statistics only; a name the fact does not have: nothing
    assert _pruned(join(read("f"), dim(), call("==", col("v"), col("dk")))) == []
    assert _pruned(join(read("f"), dim(), call("==", col("v"), col("dk"))), data=True) == \
        [("v", "dk")]
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
    assert len(found) == 1 and found[0].pairs == [] and found[0].refused is not None \
        and found[0].refused.code is Code.BUILD_NONDETERMINISTIC and "rand" in found[0].refused.get("why")
    sampled = _rel()
    sampled.sample.input.CopyFrom(dim())
    sampled.sample.upper_bound = 0.5
    found = find_fact_joins(join(read("f"), sampled, call("==", col("k"), col("dk"))),
                            _fact_of)
    assert found and found[0].pairs == [] and found[0].refused is not None \
        and "Sample" in found[0].refused.get("why")


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
    piv = _rel()
    piv.aggregate.input.CopyFrom(read("f"))
    piv.aggregate.group_type = 4   # pivot: not followed
    piv.aggregate.grouping_expressions.append(col("k"))
    piv.aggregate.pivot.col.CopyFrom(col("v"))
    piv.aggregate.aggregate_expressions.append(renamed(call("sum", col("v")), "t"))
    assert _pruned(join(piv, dim(), call("==", col("k"), col("dk")))) == []
    typed = translate(piv, _fact_of)
    assert typed.message["nodes"][-1]["op"] == "aggregate"


# ------------------------------------- renames, drops, set operations, grouping sets
# Built with the Connect client's own DataFrame API (no server: a DataFrame only needs a
# session object to hold), so the protobuf is exactly what a job sends.

def _facts(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
    """``f`` and ``g``: both partitioned by ``k``, with data columns ``v`` and ``s``."""
    name = read.named_table.unparsed_identifier
    return (name, {"v", "k", "s"}, {"k"}) if name in ("f", "g") else None


class _Frames:
    """DataFrames of the Connect client over tables by name, without a server."""

    def __init__(self) -> None:
        from types import SimpleNamespace

        from pyspark.sql.connect.functions import builtin as F

        self.F = F
        self._session = SimpleNamespace(session_id="no-server", client=None)

    def table(self, name: str) -> Any:
        from pyspark.sql.connect import plan as P
        from pyspark.sql.connect.dataframe import DataFrame

        return DataFrame(P.Read(name), self._session)

    def dim(self) -> Any:
        return self.table("d").where("x = 1")


@pytest.fixture
def frames() -> _Frames:
    return _Frames()


def _pairs(df: Any) -> list[tuple[str, str, str]]:
    """(table, fact column, build column) of every pair on a partition column found, sorted,
    after checking the typed plan of the DataFrame's protobuf."""
    root = df._plan.plan(None)
    check_plan(translate(root, _facts).message)  # type: ignore[arg-type]
    return sorted((fr.name, c, b) for fr in find_fact_joins(root, _facts)
                  for c, build, b in fr.pairs if not build.data)


def _ops(df: Any) -> list[str]:
    return [n["op"] for n in translate(df._plan.plan(None), _facts).message["nodes"]]


def _on(df: Any, key: str, frames: _Frames) -> Any:
    """``df`` joined to the filtered dimension on ``df[key] == dk``."""
    d = frames.dim()
    return df.join(d, frames.F.col(key) == d["dk"])


def test_with_column_renamed_carries_the_key_under_its_new_name(frames: _Frames) -> None:
    f = frames.table("f")
    assert _pairs(_on(f.withColumnRenamed("k", "day"), "day", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(f.withColumnsRenamed({"K": "day"}), "day", frames)) == \
        [("f", "k", "dk")]   # Spark's resolver: case-insensitive
    # the old name is gone: no column k above the rename (Spark would refuse it)
    assert _pairs(_on(f.withColumnRenamed("k", "day"), "k", frames)) == []
    # a data column renamed to the partition column's name is still the data column
    assert _pairs(_on(f.withColumnRenamed("k", "day").withColumnRenamed("v", "k"), "k",
                      frames)) == []
    # a rename of a name the child does not have is a no-op
    assert _pairs(_on(f.withColumnRenamed("nope", "x"), "k", frames)) == [("f", "k", "dk")]
    assert "OpaqueProject" not in _ops(f.withColumnRenamed("k", "day"))


def test_a_swap_of_two_names_keeps_each_column_apart(frames: _Frames) -> None:
    f = frames.table("f")
    swapped = (f.withColumnRenamed("k", "tmp").withColumnRenamed("v", "k")
               .withColumnRenamed("tmp", "v"))
    assert _pairs(_on(swapped, "v", frames)) == [("f", "k", "dk")]   # v is the old k
    assert _pairs(_on(swapped, "k", frames)) == []                   # k is the old v
    # in one call Spark folds in order: k -> v, then both v -> k: two columns named k, no v
    folded = f.withColumnsRenamed({"k": "v", "v": "k"})
    assert _pairs(_on(folded, "k", frames)) == []
    assert _pairs(_on(folded, "v", frames)) == []


def test_a_rename_map_of_an_older_client_whose_order_matters_is_opaque(frames: _Frames) -> None:
    rel = _rel()
    rel.with_columns_renamed.input.CopyFrom(read("f"))
    rel.with_columns_renamed.rename_columns_map["k"] = "v"
    rel.with_columns_renamed.rename_columns_map["v"] = "k"
    assert _pruned(join(rel, dim(), call("==", col("v"), col("dk")))) == []
    assert translate(rel, _fact_of).message["nodes"][-1]["op"] == "OpaqueProject"
    rel.with_columns_renamed.rename_columns_map.clear()
    rel.with_columns_renamed.rename_columns_map["k"] = "day"
    assert _pruned(join(rel, dim(), call("==", col("day"), col("dk")))) == [("k", "dk")]


def test_a_rename_over_an_open_side_does_not_pass_the_old_name_up(frames: _Frames) -> None:
    o = frames.table("o")   # a table dpp does not know: any column may be its
    f = frames.table("f")
    j = f.join(o, f["v"] == o["ov"]).withColumnRenamed("k", "day")
    assert _pairs(_on(j, "day", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(j, "k", frames)) == []   # o's k, if any, was renamed too


def test_drop_keeps_the_key_unless_it_drops_it(frames: _Frames) -> None:
    f = frames.table("f")
    assert _pairs(_on(f.drop("v"), "k", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(f.drop(f["v"], frames.F.col("s")), "k", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(f.drop("nope"), "k", frames)) == [("f", "k", "dk")]
    for dropped in (f.drop("k"), f.drop("K"), f.drop(f["k"]), f.drop(frames.F.col("k"))):
        assert _pairs(_on(dropped, "k", frames)) == []
        assert "OpaqueProject" not in _ops(dropped)
    # the key dropped, another column renamed to its name: that column, not the key
    assert _pairs(_on(f.drop("k").withColumnRenamed("v", "k"), "k", frames)) == []
    # the fact's k dropped above a join with an open side: no k of it comes up either
    o = frames.table("o")
    j = f.join(o, f["v"] == o["ov"])
    assert _pairs(_on(j.drop("k"), "k", frames)) == []
    # one of two k's dropped by column: the k left is the other's
    assert _pairs(_on(j.drop(o["k"]), "k", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(j.drop(f["k"]), "k", frames)) == []


def test_to_df_renames_by_position_only_when_the_positions_are_known(frames: _Frames) -> None:
    f = frames.table("f").select("k", "v", "s")
    assert _pairs(_on(f.toDF("a", "b", "c"), "a", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(f.toDF("a", "b", "c"), "b", frames)) == []
    # swapped names: k is now called v, and v is called k
    assert _pairs(_on(f.toDF("v", "k", "s"), "v", frames)) == [("f", "k", "dk")]
    assert _pairs(_on(f.toDF("v", "k", "s"), "k", frames)) == []
    # a table's columns are known, not their order: toDF over the read is opaque
    whole = frames.table("f").toDF("a", "b", "c")
    assert _pairs(_on(whole, "a", frames)) == []
    assert "OpaqueProject" in _ops(whole)
    assert _pairs(_on(f.toDF("a", "b"), "a", frames)) == []   # Spark refuses the count


def test_union_by_name_matches_columns_by_name(frames: _Frames) -> None:
    left = frames.table("f").select("k", "v")
    right = frames.table("g").select("v", "k")
    assert _pairs(_on(left.unionByName(right), "k", frames)) == \
        [("f", "k", "dk"), ("g", "k", "dk")]
    # by position the same two put g's v under k: f's k is pruned, g's partitions are not
    # (its v is a data column: a pair for its statistics at most)
    assert _pairs(_on(left.union(right), "k", frames)) == [("f", "k", "dk")]
    # whole reads: their columns are known by name, which is all unionByName needs
    whole = frames.table("f").unionByName(frames.table("g"))
    assert _pairs(_on(whole, "k", frames)) == [("f", "k", "dk"), ("g", "k", "dk")]
    # ... while a positional union of two reads of unknown column order is opaque
    assert _pairs(_on(frames.table("f").union(frames.table("g")), "k", frames)) == []


def test_union_by_name_with_missing_columns_passes_no_key_on_a_missing_one(
        frames: _Frames) -> None:
    f, g = frames.table("f"), frames.table("g")
    # the key missing on the right: NULL there, so it passes into neither side
    u = f.select("k", "v").unionByName(g.select("v"), allowMissingColumns=True)
    assert _pairs(_on(u, "k", frames)) == []
    # ... or missing on the left
    u = f.select("v").unionByName(g.select("v", "k"), allowMissingColumns=True)
    assert _pairs(_on(u, "k", frames)) == []
    # another column missing: the key passes into both sides
    u = f.select("k", "v").unionByName(g.select("k"), allowMissingColumns=True)
    assert _pairs(_on(u, "k", frames)) == [("f", "k", "dk"), ("g", "k", "dk")]
    # without allowMissingColumns Spark refuses different names: opaque
    u = f.select("k", "v").unionByName(g.select("k", "s"))
    assert _pairs(_on(u, "k", frames)) == []


def test_intersect_passes_the_key_into_its_left_side_only(frames: _Frames) -> None:
    f, g = frames.table("f").select("k", "v"), frames.table("g").select("k", "v")
    both = f.intersect(g)
    assert _pairs(_on(both, "k", frames)) == [("f", "k", "dk")]
    ops = _ops(both)
    assert "Aggregate" in ops and "Join" in ops   # as Spark's ReplaceIntersectWithSemiJoin
    typed = translate(both._plan.plan(None), _facts)
    semi = next(n for n in typed.message["nodes"] if n["op"] == "Join")
    assert semi["joinType"] == "LEFT SEMI" and semi["keys"] == []
    # the fact on the right side only: not reached from above
    o = frames.table("o").select("k", "v")
    assert _pairs(_on(o.intersect(g), "k", frames)) == []
    # INTERSECT ALL: Spark's rewrite ends in a Generate, which no key passes
    assert _pairs(_on(f.intersectAll(g), "k", frames)) == []
    assert "Intersect" in _ops(f.intersectAll(g))


def test_except_never_prunes_its_right_side_by_a_key_from_above(frames: _Frames) -> None:
    f, g = frames.table("f").select("k", "v"), frames.table("g").select("k", "v")
    assert _pairs(_on(f.subtract(g), "k", frames)) == [("f", "k", "dk")]
    typed = translate(f.subtract(g)._plan.plan(None), _facts)
    anti = next(n for n in typed.message["nodes"] if n["op"] == "Join")
    assert anti["joinType"] == "LEFT ANTI" and anti["keys"] == []
    # the fact on the right: a filter there would add rows to the answer, never pruned
    o = frames.table("o").select("k", "v")
    assert _pairs(_on(o.subtract(g), "k", frames)) == []
    assert _pairs(_on(f.exceptAll(g), "k", frames)) == []
    assert _pairs(_on(o.exceptAll(g), "k", frames)) == []
    # a join inside the right side still prunes within it (its rows are the same)
    inner = _on(frames.table("g"), "k", frames).select("k", "v")
    assert _pairs(o.subtract(inner)) == [("g", "k", "dk")]


def test_rollup_cube_and_grouping_sets_pass_no_key(frames: _Frames) -> None:
    F = frames.F
    f = frames.table("f")
    assert _pairs(_on(f.groupBy("k").agg(F.sum("v").alias("t")), "k", frames)) == \
        [("f", "k", "dk")]
    for grouped in (f.rollup("k").agg(F.sum("v").alias("t")),
                    f.rollup("k", "v").count(), f.cube("k").count(), f.cube("v", "k").count(),
                    f.groupingSets([["k"], ["k", "v"]], "k", "v").count()):
        assert _pairs(_on(grouped, "k", frames)) == []
        assert "Expand" in _ops(grouped)   # as the hook's plan: an Aggregate over an Expand


def test_union_is_positional_only_over_columns_in_a_known_order(frames: _Frames) -> None:
    f, g = frames.table("f"), frames.table("g")
    u = f.select("k", "v").union(g.select("k", "v"))
    assert _pairs(_on(u, "k", frames)) == [("f", "k", "dk"), ("g", "k", "dk")]
    # a UNION DISTINCT (no DataFrame method: the protobuf's is_all) passes it too
    rel = u._plan.plan(None)
    rel.set_op.is_all = False
    assert _pruned_facts(join(rel, dim(), call("==", col("k"), col("dk")))) == ["f", "g"]
    # a join's columns are the sides' in order, with a condition (USING puts keys first)
    o = frames.table("o").select("ok", "ov")
    j = f.select("k", "v").join(o, f["v"] == o["ov"])
    u = j.union(g.select("k", "v", "s", "v"))
    assert _pairs(_on(u, "k", frames)) == [("f", "k", "dk"), ("g", "k", "dk")]


def _pruned_facts(root: Any) -> list[str]:
    return sorted(fr.name for fr in find_fact_joins(root, _facts)
                  if any(not b.data for _c, b, _n in fr.pairs))


# ------------------------------------------------- narrowed build sides (q72), data columns

def _q72(frames: _Frames, how: str = "inner", eq: str = "==") -> Any:
    """q72's shape: orders ``o`` joined to the filtered calendar ``d1``, the fact ``f`` to the
    unfiltered calendar ``d2`` on its day and on ``d1``'s week (``how``: o ⋈ d1's type)."""
    o, f = frames.table("o"), frames.table("f")
    d1, d2 = frames.table("d").where("x = 1"), frames.table("d")
    week = d1["d_week"] == d2["d_week"] if eq == "==" else d1["d_week"].eqNullSafe(d2["d_week"])
    j = o.join(d1, o["o_day"] == d1["d_day"], how).join(f, o["o_item"] == f["v"])
    return j.join(d2, (f["k"] == d2["d_day"]) & week)


def _builds(df: Any) -> list[Any]:
    return [b for fr in find_fact_joins(df._plan.plan(None), _facts) for _c, b, _n in fr.pairs]


def test_an_unfiltered_build_side_is_narrowed_by_the_probe_sides_other_key(frames: _Frames
                                                                           ) -> None:
    q = _q72(frames)
    assert _pairs(q) == [("f", "k", "d_day")]
    (build,) = [b for b in _builds(q) if not b.data]
    assert build.relation.read.named_table.unparsed_identifier == "d"   # d2, unfiltered
    assert build.semi is not None and build.semi.pairs == (("d_week", "d_week"),)
    sub = build.semi.relation   # o ⋈ d1: the largest probe-side subtree without the fact
    assert sub.WhichOneof("rel_type") == "join" and sub.join.right.HasField("filter")
    # o ⟕ d1: its weeks are d1's matched ones and NULLs, which match no d2 row
    (build,) = [b for b in _builds(_q72(frames, "left")) if not b.data]
    assert build.semi is not None and build.semi.relation.join.join_type == 3
    # d1 NULL-supplied beside the fact itself: narrowed by d1 alone
    f, d1, d2 = frames.table("f"), frames.table("d").where("x = 1"), frames.table("d")
    q = f.join(d1, f["v"] == d1["d_day"], "left").join(
        d2, (f["k"] == d2["d_day"]) & (d1["d_week"] == d2["d_week"]))
    (build,) = [b for b in _builds(q) if not b.data]
    assert build.semi is not None and build.semi.relation.WhichOneof("rel_type") == "filter"


def test_narrowing_is_refused_where_it_could_drop_matching_rows(frames: _Frames) -> None:
    F = frames.F
    f, o = frames.table("f"), frames.table("o")
    d1, d2 = frames.table("d").where("x = 1"), frames.table("d")
    # <=> matches NULL to NULL: not a key, d2 filters nothing, no pair
    assert _pairs(_q72(frames, "left", eq="<=>")) == []
    # d1 on the build side's NULL-supplied side: every d2 row stays, the build is the join
    outer = d2.join(d1, d2["d_week"] == d1["d_week"], "left")
    q = f.join(outer, f["k"] == d2["d_day"])
    assert _pairs(q) == [("f", "k", "d_day")] and _builds(q)[0].semi is None
    assert _builds(q)[0].relation.WhichOneof("rel_type") == "join"
    # the other key read from the fact itself, or from a side drawn per run: nothing
    assert _pairs(f.join(d2, (f["k"] == d2["d_day"]) & (f["v"] == d2["d_week"]))) == []
    noisy = frames.table("d").where(F.rand() < 0.5)
    j = o.join(noisy, o["o_day"] == noisy["d_day"]).join(f, o["o_item"] == f["v"])
    assert _pairs(j.join(d2, (f["k"] == d2["d_day"]) & (noisy["d_week"] == d2["d_week"]))) == []
    # the fact preserved by the outer join: never pruned, narrowed or not
    j = o.join(d1, o["o_day"] == d1["d_day"]).join(f, o["o_item"] == f["v"], "right")
    assert _pairs(j.join(d2, (f["k"] == d2["d_day"]) & (d1["d_week"] == d2["d_week"]),
                         "left")) == []
    # the narrowing column's name is two columns of the probe-side subtree: no name for it
    j = o.join(d1, o["d_week"] == d1["d_week"]).join(f, o["o_item"] == f["v"])
    assert _pairs(j.join(d2, (f["k"] == d2["d_day"]) & (d1["d_week"] == d2["d_week"]))) == []


def test_a_narrowing_relation_the_translation_made_is_never_used() -> None:
    import dataclasses

    from dpp.frontends.connect.builds import _build_side
    from dpp.analysis.plan_pairs import find_prunes

    typed = translate(join(read("f"), dim(), call("==", col("k"), col("dk"))), _fact_of)
    (p,) = find_prunes(typed.message)[0]  # type: ignore[arg-type]
    assert _build_side(typed, p) is not None
    node = max(typed.relations) + 1   # a node with no Relation message of its own
    typed.relations[node] = None
    narrowed = dataclasses.replace(p, build_semi=(node, ((p.build_expr, p.build_expr),)))
    assert _build_side(typed, narrowed) is None


def test_data_column_pairs_carry_the_facts_their_build_side_scans(frames: _Frames) -> None:
    f, g, d = frames.table("f"), frames.table("g"), frames.dim()
    (b,) = _builds(f.join(d, f["v"] == d["dv"]))
    assert b.data and b.facts == () and b.column == "dv"
    gd = g.join(d, g["k"] == d["dk"])   # g is pruned by d; f's v by g's rows
    assert {(b.data, b.facts) for b in _builds(f.join(gd, f["v"] == g["v"]))} == \
        {(False, ()), (True, ("g",))}
