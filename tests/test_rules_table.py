"""The rules table (``dpp.analysis.rules``, ``docs/rules.md``) held against every front end.

For every join type and both positions of the fact, each front end must prune the fact
exactly when the table says that side may be pruned: the typed plan the optimizer hook's
rule describes (:func:`dpp.analysis.plan_pairs.find_prunes`), SQL text (:func:`dpp.frontends.sql.planner.analyze`),
the Spark Connect plan (:func:`dpp.frontends.connect.frames.find_fact_joins`), and — with a real Spark
session — the hook on real plans and ``dpp.join``, each checked against Spark with pruning
off. Then how a key passes through operators, and the determinism rules, on each front end
that has the operator.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.core.refusals import Code, Refusal
from dpp.analysis import rules
from dpp.analysis.plan_pairs import find_prunes
from dpp.frontends.sql.planner import TableInfo, analyze
from dpp.analysis.rules import JoinType, may_prune
from tests.adversarial_support import OFF

EQUI_JOINS = [JoinType.INNER, JoinType.LEFT_OUTER, JoinType.RIGHT_OUTER, JoinType.FULL_OUTER,
              JoinType.LEFT_SEMI, JoinType.LEFT_ANTI]
SQL_JOIN = {JoinType.INNER: "JOIN", JoinType.LEFT_OUTER: "LEFT JOIN",
            JoinType.RIGHT_OUTER: "RIGHT JOIN", JoinType.FULL_OUTER: "FULL JOIN",
            JoinType.LEFT_SEMI: "LEFT SEMI JOIN", JoinType.LEFT_ANTI: "LEFT ANTI JOIN"}
HOW = {JoinType.INNER: "inner", JoinType.LEFT_OUTER: "left", JoinType.RIGHT_OUTER: "right",
       JoinType.FULL_OUTER: "full", JoinType.LEFT_SEMI: "left_semi",
       JoinType.LEFT_ANTI: "left_anti"}
# a semi or anti join outputs its left side only; a fact on a semi join's right is pruned by
# the left's keys (its rows only test for a match), on an anti join's right it is not
CASES = [(jt, side) for jt in EQUI_JOINS for side in ("left", "right")]


def test_the_docs_show_the_rules_the_code_reads() -> None:
    doc = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
    text = doc.read_text()
    assert rules.rules_markdown() in text, "docs/rules.md is stale: regenerate it with " \
                                           "python -m dpp.analysis.rules > docs/rules.md"


def test_the_table_itself() -> None:
    """The rules as DESIGN states them: a side whose rows are needed only when they match —
    both sides of an inner or a left-semi join, the non-preserved side of an outer join;
    never an anti, full or existence join's."""
    got = {jt: rules.prunable_sides(jt) for jt in JoinType}
    assert got == {JoinType.INNER: ("left", "right"), JoinType.CROSS: (),
                   JoinType.LEFT_OUTER: ("right",), JoinType.RIGHT_OUTER: ("left",),
                   JoinType.FULL_OUTER: (), JoinType.LEFT_SEMI: ("left", "right"),
                   JoinType.LEFT_ANTI: (), JoinType.EXISTENCE: ()}
    for spelling, jt in [("LEFT OUTER", JoinType.LEFT_OUTER), ("left_outer", JoinType.LEFT_OUTER),
                         ("leftsemi", JoinType.LEFT_SEMI), ("JOIN_TYPE_LEFT_ANTI",
                                                            JoinType.LEFT_ANTI),
                         ("ExistenceJoin(exists#12)", JoinType.EXISTENCE),
                         ("outer", JoinType.FULL_OUTER)]:
        assert rules.join_type(spelling) is jt
    assert rules.join_type("sideways") is None and not may_prune("sideways", "left")
    assert {jt for jt in JoinType if rules.output_sides(jt) == ("left",)} == {
        JoinType.LEFT_SEMI, JoinType.LEFT_ANTI, JoinType.EXISTENCE}
    with pytest.raises(ValueError, match="side"):
        may_prune(JoinType.INNER, "middle")


# ---------------------------------------------------------------------- the typed plan

class _Typed:
    """A plan description as the hook's rule sends it: fact ``f`` partitioned by ``k``,
    dimension ``d`` filtered selectively, joined on ``f.k = d.k``."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []

    def node(self, op: str, children: list[int], output: list[tuple[int, str]],
             **extra: Any) -> int:
        self.nodes.append({"id": len(self.nodes), "op": op, "children": children,
                           "output": [[e, n, "int"] for e, n in output], **extra})
        return len(self.nodes) - 1

    def fact(self) -> int:
        return self.node("LogicalRelation", [], [(1, "v"), (2, "k")],
                         relation={"kind": "path", "rootPaths": ["file:/f"],
                                   "partitionColumns": ["k"]})

    def dim(self, **flags: Any) -> int:
        leaf = self.node("LogicalRelation", [], [(10, "k"), (11, "x")])
        return self.node("Filter", [leaf], [(10, "k"), (11, "x")], selective=True, **flags)

    @staticmethod
    def key(expr: int, attr: int) -> dict[str, Any]:
        return {"expr": expr, "attr": attr, "type": "int", "sql": f"a{attr}",
                "refs": [attr], "deterministic": True}

    def join(self, jt: str, left: int, right: int, keys: list[tuple[int, int]]) -> int:
        out = [tuple(o[:2]) for o in self.nodes[left]["output"]]
        if jt not in ("LEFT SEMI", "LEFT ANTI"):
            out += [tuple(o[:2]) for o in self.nodes[right]["output"]]
        return self.node("Join", [left, right], out, joinType=jt,
                         keys=[[self.key(2 * i, a), self.key(2 * i + 1, b)]
                               for i, (a, b) in enumerate(keys)])

    def desc(self) -> dict[str, Any]:
        return {"nodes": self.nodes}


def _typed_prunes_fact(jt: JoinType, side: str) -> bool:
    p = _Typed()
    f, d = p.fact(), p.dim()
    left, right = (f, d) if side == "left" else (d, f)
    p.join(jt.value, left, right, [(2, 10)] if side == "left" else [(10, 2)])
    prunes, _notes = find_prunes(p.desc())
    return any(x.relation == f for x in prunes)


@pytest.mark.parametrize("jt,side", CASES)
def test_typed_plan_front_end(jt: JoinType, side: str) -> None:
    assert _typed_prunes_fact(jt, side) == may_prune(jt, side)


# ---------------------------------------------------------------------- SQL text

def _resolve(name: str) -> Optional[TableInfo]:
    if name == "f":
        return TableInfo("f", {"v": None, "k": None}, ("k",))
    if name == "d":
        return TableInfo("d", {"k": None, "x": None}, ())
    return None


def _sql(jt: JoinType, side: str) -> str:
    dim = "(SELECT k, x FROM d WHERE x = 1) dd"
    left, right = ("f", dim) if side == "left" else (dim, "f")
    cols = "f.v" if side == "left" or jt not in (JoinType.LEFT_SEMI, JoinType.LEFT_ANTI) \
        else "dd.x"
    return f"SELECT {cols} FROM {left} {SQL_JOIN[jt]} {right} ON f.k = dd.k"


@pytest.mark.parametrize("jt,side", CASES)
def test_sql_text_front_end(jt: JoinType, side: str) -> None:
    plan = analyze(_sql(jt, side), _resolve)
    fact = [r for r in plan.refs if r.table == "f"]
    pruned = any(r.pruning and r.dynamic for r in fact)
    assert pruned == may_prune(jt, side), plan.explain()


# ---------------------------------------------------------------------- Spark Connect plan

def _proto_join(jt: JoinType, side: str) -> Any:
    import pyspark.sql.connect.proto as proto

    def read(name: str, alias: str) -> Any:
        r = proto.Relation()
        r.subquery_alias.alias = alias
        r.subquery_alias.input.read.named_table.unparsed_identifier = name
        return r

    def col(name: str) -> Any:
        e = proto.Expression()
        e.unresolved_attribute.unparsed_identifier = name
        return e

    dim = proto.Relation()
    dim.filter.input.CopyFrom(read("d", "dd"))
    cond = dim.filter.condition.unresolved_function
    cond.function_name = "=="
    cond.arguments.extend([col("dd.x"), proto.Expression()])
    cond.arguments[1].literal.integer = 1
    f = read("f", "ff")
    code = {JoinType.INNER: proto.Join.JOIN_TYPE_INNER,
            JoinType.LEFT_OUTER: proto.Join.JOIN_TYPE_LEFT_OUTER,
            JoinType.RIGHT_OUTER: proto.Join.JOIN_TYPE_RIGHT_OUTER,
            JoinType.FULL_OUTER: proto.Join.JOIN_TYPE_FULL_OUTER,
            JoinType.LEFT_SEMI: proto.Join.JOIN_TYPE_LEFT_SEMI,
            JoinType.LEFT_ANTI: proto.Join.JOIN_TYPE_LEFT_ANTI}[jt]
    root = proto.Relation()
    root.join.left.CopyFrom(f if side == "left" else dim)
    root.join.right.CopyFrom(dim if side == "left" else f)
    root.join.join_type = code
    eq = root.join.join_condition.unresolved_function
    eq.function_name = "=="
    eq.arguments.extend([col("ff.k"), col("dd.k")])
    return root


def _fact_of(read: Any) -> Optional[tuple[str, set[str], set[str]]]:
    name = read.named_table.unparsed_identifier
    return ("f", {"v", "k"}, {"k"}) if name == "f" else None


@pytest.mark.parametrize("jt,side", CASES)
def test_connect_plan_front_end(jt: JoinType, side: str) -> None:
    from dpp.frontends.connect.frames import find_fact_joins

    found = find_fact_joins(_proto_join(jt, side), _fact_of)
    pruned = any(fr.name == "f" and fr.pairs for fr in found)
    assert pruned == may_prune(jt, side)


# ---------------------------------------------------------------------- operators

def _typed_through(op: str) -> tuple[bool, bool]:
    """(pruned through ``op`` by a passed-through key, pruned by a key ``op`` computes)."""
    out = []
    for passed in (True, False):
        p = _Typed()
        f = p.fact()
        extra: dict[str, Any] = {}
        output = [(1, "v"), (2, "k")]
        if op in ("Project", "Aggregate"):
            extra["map"] = [[2, 2]] if passed else []
            if not passed:
                output = [(1, "v"), (3, "k2")]
        elif op == "Window":
            extra["partitionSpec"] = [2] if passed else []
        node = p.node(op, [f], output, **extra)
        key = 2 if passed or op not in ("Project", "Aggregate") else 3
        p.join("INNER", node, p.dim(), [(key, 10)])
        out.append(any(x.relation == f for x in find_prunes(p.desc())[0]))
    return out[0], out[1]


@pytest.mark.parametrize("op", sorted(set(rules.KEY_PASSAGE) - {"Join", "Union"}))
def test_a_key_passes_through_the_operators_the_table_names(op: str) -> None:
    passed, computed = _typed_through(op)
    assert passed
    if op in ("Project", "Aggregate", "Window"):
        assert not computed   # a computed column, an aggregate, a non-partition key


@pytest.mark.parametrize("op", ["GlobalLimit", "LocalLimit", "Sample", "Expand", "Generate"])
def test_any_other_operator_stops_the_key(op: str) -> None:
    assert _typed_through(op)[0] is False


@pytest.mark.parametrize("sql,pruned", [
    ("SELECT t.v FROM (SELECT v, k FROM f) t JOIN {dim} ON t.k = dd.k", True),
    ("SELECT t.k FROM (SELECT k, sum(v) AS s FROM f GROUP BY k) t JOIN {dim} ON t.k = dd.k",
     True),
    ("SELECT t.v FROM (SELECT v, k + 1 AS k FROM f) t JOIN {dim} ON t.k = dd.k", False),
    ("SELECT t.v FROM (SELECT v, k FROM f LIMIT 5) t JOIN {dim} ON t.k = dd.k", False),
    ("SELECT t.v FROM (SELECT v, k FROM f UNION ALL SELECT v, k FROM f) t JOIN {dim} "
     "ON t.k = dd.k", True),
])
def test_sql_text_passes_keys_as_the_table_says(sql: str, pruned: bool) -> None:
    plan = analyze(sql.format(dim="(SELECT k, x FROM d WHERE x = 1) dd"), _resolve)
    got = any(r.pruning and r.dynamic for r in plan.refs if r.table == "f")
    assert got == pruned, plan.explain()


# ---------------------------------------------------------------------- build sides

def test_typed_plan_wants_a_build_side_that_filters() -> None:
    """A join or an IN subquery over a whole dimension gives no filter (its keys are every
    key the fact's foreign key can hold): the rule find_prunes applies to every front end."""
    for how in ("join", "in"):
        for selective in (True, False):
            p = _Typed()
            f = p.fact()
            d = p.dim()
            p.nodes[d]["selective"] = selective
            if how == "join":
                p.join("INNER", f, d, [(2, 10)])
            else:
                p.node("Filter", [f], [(1, "v"), (2, "k")], selective=True, inSubqueries=[
                    {"value": p.key(2, 2), "query": d, "queryKey": p.key(10, 10)}])
            prunes, notes = find_prunes(p.desc())
            assert bool(prunes) is selective, (how, selective)
            assert selective or any(n.code in (Code.BUILD_FILTERS_NOTHING, Code.IN_FILTERS_NOTHING) for n in notes), notes


@pytest.mark.parametrize("sql,pruned", [
    ("SELECT f.v FROM f JOIN d ON f.k = d.k", False),
    ("SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x IS NOT NULL", False),
    ("SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1", True),
    ("SELECT f.v FROM f WHERE f.k IN (SELECT k FROM d)", False),
    ("SELECT f.v FROM f WHERE f.k IN (SELECT k FROM d WHERE x IS NOT NULL)", False),
    ("SELECT f.v FROM f WHERE f.k IN (SELECT k FROM d WHERE x = 1)", True),
    ("SELECT f.v FROM f WHERE EXISTS (SELECT 1 FROM d WHERE d.k = f.k)", False),
    ("SELECT f.v FROM f WHERE EXISTS (SELECT 1 FROM d WHERE d.k = f.k AND d.x = 1)", True),
    # a derived neighbour joins the build side only when its own query filters
    ("SELECT f.v FROM f JOIN d ON f.k = d.k JOIN (SELECT x FROM d) e ON d.x = e.x", False),
    ("SELECT f.v FROM f JOIN d ON f.k = d.k JOIN (SELECT x FROM d WHERE k = 2) e "
     "ON d.x = e.x", True),
    ("SELECT f.v FROM f JOIN (SELECT k FROM d) dd ON f.k = dd.k", False),
    ("SELECT f.v FROM f JOIN (SELECT k FROM d WHERE x > 3) dd ON f.k = dd.k", True),
])
def test_sql_text_wants_a_build_side_that_filters(sql: str, pruned: bool) -> None:
    plan = analyze(sql, _resolve)
    got = any(r.pruning and r.dynamic for r in plan.refs if r.table == "f")
    assert got == pruned, plan.explain()
    if not pruned:
        assert any("filters nothing" in n for r in plan.refs for n in r.notes + plan.notes), \
            plan.explain()


@pytest.mark.parametrize("condition,pruned", [(None, False), ("isnotnull", False),
                                              ("==", True)])
def test_connect_wants_a_build_side_that_filters(condition: Optional[str], pruned: bool
                                                 ) -> None:
    import pyspark.sql.connect.proto as proto

    from dpp.frontends.connect.frames import find_fact_joins

    root = _proto_join(JoinType.INNER, "left")
    dim = root.join.right
    if condition is None:
        dim.CopyFrom(dim.filter.input)
    elif condition == "isnotnull":
        call = proto.Expression()
        call.unresolved_function.function_name = "isnotnull"
        call.unresolved_function.arguments.append(
            dim.filter.condition.unresolved_function.arguments[0])
        dim.filter.condition.CopyFrom(call)
    found = find_fact_joins(root, _fact_of)
    assert any(fr.name == "f" and fr.pairs for fr in found) is pruned


# ---------------------------------------------------------------------- determinism

def test_typed_plan_refuses_nondeterministic_sides() -> None:
    p = _Typed()
    f = p.fact()
    p.join("INNER", f, p.dim(flagged="rand(1)"), [(2, 10)])
    prunes, notes = find_prunes(p.desc())
    assert not prunes and any(n.code is Code.BUILD_NONDETERMINISTIC for n in notes)
    p = _Typed()
    f = p.fact()
    sample = p.node("Sample", [f], [(1, "v"), (2, "k")])
    p.join("INNER", sample, p.dim(), [(2, 10)])
    assert find_prunes(p.desc())[0] == []


@pytest.mark.parametrize("fn", sorted(rules.NONDETERMINISTIC_FUNCTIONS
                                      & {"rand", "uuid", "shuffle", "input_file_name"}))
def test_sql_text_refuses_a_build_side_calling(fn: str) -> None:
    arg = "ARRAY(1)" if fn == "shuffle" else ""
    sql = (f"SELECT f.v FROM f JOIN (SELECT k, x FROM d WHERE x = 1 AND "
           f"{fn}({arg}) IS NOT NULL) dd ON f.k = dd.k")
    plan = analyze(sql, _resolve)
    assert not any(r.pruning and r.dynamic for r in plan.refs if r.table == "f"), plan.explain()


@pytest.mark.parametrize("fn", sorted(rules.RERUN_FUNCTIONS))
def test_connect_refuses_a_build_side_calling(fn: str) -> None:
    import pyspark.sql.connect.proto as proto

    from dpp.frontends.connect.frames import deterministic_relation

    rel = proto.Relation()
    rel.filter.input.read.named_table.unparsed_identifier = "d"
    call = rel.filter.condition.unresolved_function
    call.function_name = "isnotnull"
    inner = proto.Expression()
    inner.unresolved_function.function_name = fn
    call.arguments.append(inner)
    assert deterministic_relation(rel) is False
    rel.filter.condition.unresolved_function.arguments[0].unresolved_function.function_name = \
        "abs"
    assert deterministic_relation(rel) is True


# ---------------------------------------------------------------------- real Spark



@pytest.fixture(scope="module")
def star(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import dpp

    root = tmp_path_factory.mktemp("rules_table")
    for k in range(6):
        folder = root / "f" / f"k={k}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": pa.array([k * 10 + i for i in range(3)], pa.int64())}),
                       folder / "part-0.parquet")
    (root / "d").mkdir()
    # keys 1, 2 picked; key 9 matches no fact row (outer joins output it unmatched)
    pq.write_table(pa.table({"dk": pa.array([1, 2, 3, 9], pa.int32()),
                             "x": pa.array([1, 1, 0, 1], pa.int32())}),
                   root / "d" / "part-0.parquet")
    spark.read.parquet(str(root / "f")).createOrReplaceTempView("rt_f")
    spark.read.parquet(str(root / "d")).createOrReplaceTempView("rt_d")
    session = dpp.enable(spark)
    assert session.optimizer_hook is not None, session.hook_note
    session.register_table("rt_fact", str(root / "f"))
    try:
        yield {"session": session}
    finally:
        dpp.disable(spark)
        for v in ("rt_f", "rt_d"):
            spark.catalog.dropTempView(v)


def _applied(report: Any) -> bool:
    return report is not None and any(t.pruning == "applied" for t in report.tables)


@pytest.mark.parametrize("jt,side", CASES)
def test_the_hook_on_real_plans(spark: Any, star: dict[str, Any], jt: JoinType,
                                side: str) -> None:
    from tests.conftest import spark_conf

    def job() -> Any:
        f, d = spark.table("rt_f"), spark.table("rt_d").where("x = 1")
        left, right = (f, d) if side == "left" else (d, f)
        out = left.join(right, f["k"] == d["dk"], HOW[jt])
        return sorted((tuple(r) for r in out.collect()), key=repr)

    with spark_conf(spark, OFF):
        want = job()
    star["session"].last_report = None
    assert job() == want
    assert _applied(star["session"].last_report) == may_prune(jt, side), \
        star["session"].last_report
    if not may_prune(jt, side):   # refused by the rule, not by something else
        assert not _typed_prunes_fact(jt, side)


@pytest.mark.parametrize("jt", EQUI_JOINS)
def test_dpp_join(spark: Any, star: dict[str, Any], jt: JoinType) -> None:
    """``dpp.join`` puts the fact on the left."""
    from tests.conftest import spark_conf

    session = star["session"]
    dim = spark.table("rt_d").where("x = 1")
    got = sorted((tuple(r) for r in session.join("rt_fact", dim, [("k", "dk")],
                                                 HOW[jt]).collect()), key=repr)
    report = session.last_report
    with spark_conf(spark, OFF):
        f = spark.table("rt_f")
        want = sorted((tuple(r) for r in f.join(dim, f["k"] == dim["dk"], HOW[jt]).collect()),
                      key=repr)
    assert got == want
    assert _applied(report) == may_prune(jt, "left"), report


# a build side filtered by a window's value: the value of a row may depend on the order in
# which tied rows arrive (row_number, an aggregate over a ROWS frame), so another run may keep
# other keys; rank and RANGE frames give ties one value. One rule (dpp.analysis.rules.tie_order) over
# what each front end records.
TIE_CASES = [("row_number", None, False), ("rank", None, True), ("sum", "rows", False),
             ("sum", "range", True)]


@pytest.mark.parametrize("fn,frame,pruned", TIE_CASES)
def test_typed_plan_window_tie_order(fn: str, frame: Optional[str], pruned: bool) -> None:
    p = _Typed()
    f, d = p.fact(), p.dim()
    w = p.node("Window", [d], [(10, "k"), (11, "x"), (12, "w")],
               windowCalls=[[fn, fn == "sum", frame == "rows", False, True]])
    kept = p.node("Filter", [w], [(10, "k"), (11, "x"), (12, "w")], selective=True)
    p.join("INNER", f, kept, [(2, 10)])
    prunes, notes = find_prunes(p.desc())
    assert any(x.relation == f for x in prunes) is pruned, notes


@pytest.mark.parametrize("fn,frame,pruned", TIE_CASES)
def test_sql_text_window_tie_order(fn: str, frame: Optional[str], pruned: bool) -> None:
    call = "sum(x)" if fn == "sum" else f"{fn}()"
    spec = {None: "", "rows": " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
            "range": " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"}[frame]
    sql = (f"SELECT f.v FROM f JOIN (SELECT k, x FROM (SELECT k, x, {call} OVER "
           f"(ORDER BY x{spec}) AS w FROM d) t WHERE w = 1) dd ON f.k = dd.k")
    plan = analyze(sql, _resolve)
    got = any(r.pruning and r.dynamic for r in plan.refs if r.table == "f")
    assert got is pruned, plan.explain()


def _proto_window_dim(fn: str, frame: Optional[str]) -> Any:
    import pyspark.sql.connect.proto as proto

    root = _proto_join(JoinType.INNER, "left")
    wrapped = proto.Relation()
    wrapped.with_columns.input.CopyFrom(root.join.right)
    alias = wrapped.with_columns.aliases.add()
    alias.name.append("w")
    window = alias.expr.window
    window.window_function.unresolved_function.function_name = fn
    if fn == "sum":
        arg = window.window_function.unresolved_function.arguments.add()
        arg.unresolved_attribute.unparsed_identifier = "dd.x"
    order = window.order_spec.add()
    order.child.unresolved_attribute.unparsed_identifier = "dd.x"
    order.direction = proto.Expression.SortOrder.SORT_DIRECTION_ASCENDING
    if frame is not None:
        spec = window.frame_spec
        spec.frame_type = (proto.Expression.Window.WindowFrame.FRAME_TYPE_ROW if frame == "rows"
                           else proto.Expression.Window.WindowFrame.FRAME_TYPE_RANGE)
        if frame == "rows":
            spec.lower.value.literal.integer = -1
        else:
            spec.lower.unbounded = True
        spec.upper.current_row = True
    kept = proto.Relation()   # the rows the window's value picks: the build side's keys
    kept.filter.input.CopyFrom(wrapped)
    cond = kept.filter.condition.unresolved_function
    cond.function_name = "=="
    cond.arguments.add().unresolved_attribute.unparsed_identifier = "w"
    cond.arguments.add().literal.integer = 1
    root.join.right.CopyFrom(kept)
    return root


@pytest.mark.parametrize("fn,frame,pruned", TIE_CASES)
def test_connect_window_tie_order(fn: str, frame: Optional[str], pruned: bool) -> None:
    """The Connect plan, through its typed translation and as a DataFrame build side."""
    from dpp.frontends.connect.frames import deterministic_relation, find_fact_joins

    root = _proto_window_dim(fn, frame)
    found = find_fact_joins(root, _fact_of)
    assert any(fr.name == "f" and fr.pairs for fr in found) is pruned
    assert deterministic_relation(root.join.right) is pruned
