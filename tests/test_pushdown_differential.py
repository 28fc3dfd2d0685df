"""Predicates carried into derived tables, UNION branches, GROUP BY keys, windows and CTE uses
(dpp.frontends.sql.pushdown): rows equal to Spark with all pruning off, on path and catalog tables, and
pruning exactly where a sound push reaches a partition column — never where it must stop
(aggregate outputs, LIMIT, EXCEPT's right side, window ORDER BY keys, non-deterministic
expressions, the preserved side of an outer join, grouping sets).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.differential import Check, Checks, Fact

# the facts: partition column p (sales) / q (web), 8 partitions of 4 rows each
ROWS = ", ".join(f"({p * 100 + i}, {i}, {p})" for p in range(1, 9) for i in range(1, 5))


@pytest.fixture(scope="module")
def facts(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Fact]]]:
    root = tmp_path_factory.mktemp("pushdown")
    dim = root / "pd_dim" / "part-0.parquet"
    dim.parent.mkdir(parents=True)
    # k: the date-like key; grp picks k in {1,2} ('a'), {3,4} ('b'), else 'c'; wk = week of k
    pq.write_table(pa.table({
        "k": pa.array(range(1, 9), pa.int32()),
        "grp": ["a", "a", "b", "b", "c", "c", "c", "c"],
        "wk": pa.array([(k + 1) // 2 for k in range(1, 9)], pa.int32())}), dim)
    spark.read.parquet(str(dim.parent)).createOrReplaceTempView("pd_dim")
    out: dict[str, list[Fact]] = {"path": [], "catalog": []}
    for name, col in (("pd_sales", "p"), ("pd_web", "q")):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} (v INT, item INT, {col} INT) USING parquet "
                  f"PARTITIONED BY ({col})")
        spark.sql(f"INSERT INTO {name} VALUES {ROWS}")
        path = root / f"{name}_p"
        spark.table(name).write.partitionBy(col).parquet(str(path))
        out["catalog"].append(Fact("catalog", name, str(path)))
        out["path"].append(Fact("path", f"{name}_p", str(path)))
    yield out
    for name in ("pd_sales", "pd_web"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    for v in ("pd_dim", "pd_sales_p", "pd_sales_p_ref", "pd_web_p", "pd_web_p_ref"):
        spark.catalog.dropTempView(v)


def _not_pruned(check: Check, table: str) -> None:
    """Every reference to ``table`` reads all its partitions (the push had to stop)."""
    for i, (got, rep) in enumerate(check.runs):
        if got.error is not None:
            continue
        for t in (rep or {"tables": []})["tables"]:
            if t["table"] == table and t["pruning"] == "applied":
                assert t["partitions_kept"] == t["partitions_total"], (
                    f"{check.label} run {i + 1}: {table} must not be pruned here "
                    f"(kept {t['partitions_kept']} of {t['partitions_total']})")


# (name, query, {fact index: partitions kept}); {f0} is pd_sales (p), {f1} pd_web (q)
PUSHED = [
    ("projection_rename",
     "SELECT x.pp, x.v FROM (SELECT p AS pp, v FROM {f0}) x WHERE x.pp = 3", {0: 1}),
    ("union_all_branches",
     "SELECT u.p, u.v FROM (SELECT p, v FROM {f0} UNION ALL SELECT q, v FROM {f1}) u "
     "WHERE u.p IN (2, 5)", {0: 2, 1: 2}),
    ("union_distinct_branches",
     "SELECT u.p FROM (SELECT p FROM {f0} UNION SELECT q FROM {f1}) u WHERE u.p > 6",
     {0: 2, 1: 2}),
    ("group_by_key",
     "SELECT g.p, g.s FROM (SELECT p, sum(v) s FROM {f0} GROUP BY p) g WHERE g.p >= 7", {0: 2}),
    ("group_by_alias_key",
     "SELECT g.pk, g.s FROM (SELECT p AS pk, sum(v) s FROM {f0} GROUP BY pk) g "
     "WHERE g.pk = 2", {0: 1}),
    ("window_partition_key",
     "SELECT w.p, w.v, w.r FROM (SELECT p, v, row_number() OVER (PARTITION BY p ORDER BY v "
     "DESC) r FROM {f0}) w WHERE w.p = 4", {0: 1}),
    ("cte_two_uses_own_filters",
     "WITH c AS (SELECT p, sum(v) s FROM {f0} GROUP BY p) SELECT a.s, b.s FROM c a "
     "JOIN c b ON a.s < b.s WHERE a.p = 1 AND b.p = 2", {0: 1}),
    ("dimension_joined_to_union",
     "SELECT u.p, u.v, d.grp FROM (SELECT p, v FROM {f0} UNION ALL SELECT q, v FROM {f1}) u "
     "JOIN pd_dim d ON u.p = d.k WHERE d.grp = 'b'", {0: 2, 1: 2}),
    ("dimension_through_grouping_key",
     "WITH w AS (SELECT d.wk, sum(f.v) s FROM {f0} f JOIN pd_dim d ON f.p = d.k GROUP BY d.wk) "
     "SELECT w.wk, w.s FROM w JOIN pd_dim x ON w.wk = x.wk WHERE x.grp = 'a'", {0: 2}),
    ("union_branch_constant_contradicts",
     "SELECT t.v FROM (SELECT v, 's' AS kind FROM {f0} UNION ALL SELECT v, 'w' AS kind "
     "FROM {f1}) t WHERE t.kind = 's' AND t.v > 700", {1: 0}),
    ("outer_join_own_on",
     "SELECT d.k, x.v FROM pd_dim d LEFT JOIN (SELECT p, v FROM {f0}) x "
     "ON d.k = x.p AND x.p < 3", {0: 2}),
    ("outer_join_where_rejects_null",
     "SELECT d.k, x.v FROM pd_dim d LEFT JOIN (SELECT p, v FROM {f0}) x ON d.k = x.p "
     "WHERE x.p = 6", {0: 1}),
    ("intersect_both_sides",
     "SELECT i.p FROM (SELECT p FROM {f0} INTERSECT SELECT q FROM {f1}) i WHERE i.p = 5",
     {0: 1, 1: 1}),
    ("group_by_ordinal",
     "SELECT g.p, g.s FROM (SELECT p, sum(v) s FROM {f0} GROUP BY 1) g WHERE g.p = 5", {0: 1}),
    ("grouping_sets_key_in_every_set",
     "SELECT g.p, g.s FROM (SELECT p, item, sum(v) s FROM {f0} "
     "GROUP BY GROUPING SETS ((p, item), (p))) g WHERE g.p = 5", {0: 1}),
    ("right_join_where_rejects_null",
     "SELECT d.k, x.v FROM (SELECT p, v FROM {f0}) x RIGHT JOIN pd_dim d ON d.k = x.p "
     "WHERE x.p = 6", {0: 1}),
    ("nested_derived_tables",
     "SELECT o.pp FROM (SELECT i.p AS pp, i.s FROM (SELECT p, sum(v) s FROM {f0} GROUP BY p) i) o "
     "WHERE o.pp IN (1, 8)", {0: 2}),
]

# (name, query, fact indexes that must be read whole)
NOT_PUSHED = [
    ("aggregate_output",
     "SELECT g.p, g.s FROM (SELECT p, sum(v) s FROM {f0} GROUP BY p) g WHERE g.s > 1500", {0}),
    ("having_on_aggregate",
     "SELECT p, sum(v) FROM {f0} GROUP BY p HAVING sum(v) > 1500", {0}),
    ("limit",
     "SELECT l.p, l.v FROM (SELECT p, v FROM {f0} ORDER BY v LIMIT 5) l WHERE l.p = 2", {0}),
    ("except_right_side",
     "SELECT e.p FROM (SELECT p FROM {f0} EXCEPT SELECT q FROM {f1}) e WHERE e.p = 3", {1}),
    ("window_order_key",
     "SELECT w.p, w.r FROM (SELECT p, v, rank() OVER (ORDER BY p) r FROM {f0}) w "
     "WHERE w.p = 4", {0}),
    ("window_other_partition",
     "SELECT w.p, w.r FROM (SELECT p, v, count(*) OVER (PARTITION BY item) r FROM {f0}) w "
     "WHERE w.p = 4", {0}),
    ("non_deterministic_body",
     "SELECT x.p FROM (SELECT p, v, rand(3) r FROM {f0}) x WHERE x.p = 3", {0}),
    ("non_deterministic_cte_not_inlined",
     "WITH c AS (SELECT p, v, rand(5) r FROM {f0}) SELECT count(*) FROM c a JOIN c b "
     "ON a.v = b.v WHERE a.p = 1", {0}),
    ("preserved_side_of_outer_join",
     "SELECT x.p, d.k FROM (SELECT p, v FROM {f0}) x LEFT JOIN pd_dim d "
     "ON x.p = d.k AND d.grp = 'a'", {0}),
    ("null_aware_where_on_null_supplied_side",
     "SELECT d.k, x.p FROM pd_dim d LEFT JOIN (SELECT p FROM {f0}) x ON d.k = x.p "
     "WHERE x.p IS NULL OR x.p = 2", {0}),
    ("set_operation_order_limit",
     "SELECT u.p, u.v FROM (SELECT p, v FROM {f0} UNION ALL SELECT q, v FROM {f1} "
     "ORDER BY v DESC LIMIT 5) u JOIN pd_dim d ON u.p = d.k WHERE d.grp = 'b'", {0, 1}),
    ("grouping_sets_key_missing_from_a_set",
     "SELECT g.p, g.s FROM (SELECT p, item, sum(v) s FROM {f0} "
     "GROUP BY p, item GROUPING SETS ((p, item), (item))) g WHERE g.p IS NULL", {0}),
    ("cte_kept_for_a_sampled_use",
     "WITH c AS (SELECT p, v FROM {f0}) SELECT a.p, a.v FROM c a WHERE a.p = 3 UNION ALL "
     "SELECT b.p, b.v FROM c TABLESAMPLE (50 PERCENT) REPEATABLE (3) b", {0}),
    ("cte_joined_in_one_use_sampled_in_another",
     "WITH c AS (SELECT p, v FROM {f0}) SELECT a.p, a.v FROM c a JOIN pd_dim d ON a.p = d.k "
     "WHERE d.grp = 'b' UNION ALL "
     "SELECT b.p, b.v FROM c TABLESAMPLE (50 PERCENT) REPEATABLE (3) b", {0}),
    ("rollup",
     "SELECT g.p, g.s FROM (SELECT p, item, sum(v) s FROM {f0} GROUP BY ROLLUP(p, item)) g "
     "WHERE g.p IS NULL", {0}),
]

KINDS = ["path", "catalog"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", KINDS)
def test_pushed_predicates_prune_and_keep_rows(spark, facts, kind):
    fs = facts[kind]
    with Checks(spark) as chk:
        for name, query, kept in PUSHED:
            c = chk.sql(fs, query, cache=False)
            assert c.expected_count > 0 or name == "union_branch_constant_contradicts", name
            for i, n in kept.items():
                if n == 0:
                    _kept_exactly(chk, c, fs[i].name, 0)
                else:
                    chk.pruned(c, fs[i].name, kept=n)


def _kept_exactly(chk: Checks, c: Check, table: str, n: int) -> None:
    def check() -> None:
        for got, rep in c.runs:
            refs = [t for t in (rep or {"tables": []})["tables"] if t["table"] == table]
            assert refs and all(t["partitions_kept"] == n for t in refs), (
                f"{c.label}: expected {n} partitions of {table}, got {refs}")
            # a reference that reads nothing is reported pruned, not "kept every partition"
            assert n or all(t["pruning"] == "applied" for t in refs), refs
    chk._soft(check)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", KINDS)
def test_predicates_stop_where_pushing_is_unsound(spark, facts, kind):
    fs = facts[kind]
    with Checks(spark) as chk:
        for name, query, whole in NOT_PUSHED:
            c = chk.sql(fs, query, cache=False)
            for i in whole:
                chk._soft(lambda c=c, i=i: _not_pruned(c, fs[i].name))


def test_explain_says_where_a_predicate_came_from():
    from dpp.core.domain import DataType
    from dpp.frontends.sql.planner import TableInfo, analyze

    infos = {"f": TableInfo("f", {"p": DataType.parse("int"), "v": DataType.parse("int")},
                            ("p",)),
             "d": TableInfo("d", {"k": DataType.parse("int"), "wk": DataType.parse("int")}, ())}
    plan = analyze("WITH w AS (SELECT d.wk, sum(f.v) s FROM f JOIN d ON f.p = d.k GROUP BY d.wk) "
                   "SELECT * FROM w a JOIN w b ON a.s = b.s WHERE a.wk = 3 AND b.wk = 4",
                   infos.get)
    text = plan.explain()
    assert "pushed from outer WHERE a.wk = 3, through GROUP BY key d.wk" in text, text
    assert "pushed from outer WHERE b.wk = 4, through GROUP BY key d.wk" in text, text
    assert "CTE w inlined in each of its 2 uses" in text, text
    # each use has its own build side: d restricted to its own week
    builds = sorted(f.build_query for r in plan.refs for f in r.dynamic)
    assert len(builds) == 2 and "d.wk = 3" in builds[0] and "d.wk = 4" in builds[1], builds
    # and the query Spark runs names each use's own copy
    assert plan._tree.sql("spark").count("FROM f") == 2


def test_not_pushed_past_an_aggregate_output_or_limit_is_explained():
    from dpp.core.domain import DataType
    from dpp.frontends.sql.planner import TableInfo, analyze

    infos = {"f": TableInfo("f", {"p": DataType.parse("int"), "v": DataType.parse("int")},
                            ("p",))}
    plan = analyze("SELECT * FROM (SELECT p, sum(v) s FROM f GROUP BY p) g WHERE g.s > 3",
                   infos.get)
    assert not plan.refs[0].pruning
    assert any("s is an aggregate's output" in n for n in plan.notes), plan.notes
    plan = analyze("SELECT * FROM (SELECT p FROM f LIMIT 3) l WHERE l.p = 1", infos.get)
    assert not plan.refs[0].pruning
    assert any("not pushed past LIMIT" in n for n in plan.notes), plan.notes


def _plan(query: str) -> Any:
    from dpp.core.domain import DataType
    from dpp.frontends.sql.planner import TableInfo, analyze

    i = DataType.parse("int")
    infos = {"pd_sales": TableInfo("pd_sales", {"v": i, "item": i, "p": i}, ("p",)),
             "pd_web": TableInfo("pd_web", {"v": i, "item": i, "q": i}, ("q",)),
             "pd_dim": TableInfo("pd_dim", {"k": i, "grp": DataType.parse("string"), "wk": i},
                                 ())}
    return analyze(query.format(f0="pd_sales", f1="pd_web"), infos.get)


@pytest.mark.parametrize("name,query,kept", PUSHED, ids=[c[0] for c in PUSHED])
def test_plan_prunes_where_a_push_reaches(name: str, query: str, kept: dict[int, int]) -> None:
    """The planner alone (the quick tier): each fact the push reaches gets a domain on its
    partition column, static or dynamic, and the plan says where it came from (a static
    conjunct pushed in, a join key find_prunes traced out of the derived table, or a build
    side it narrowed by a join above)."""
    plan = _plan(query)
    for i in kept:
        table, col = (("pd_sales", "p"), ("pd_web", "q"))[i]
        refs = [r for r in plan.refs if r.table == table]
        assert refs and all(r.pruning and (col in r.static.columns or r.static.is_none() or
                                           any(f.probe_column == col for f in r.dynamic))
                            for r in refs), f"{name}:\n{plan.explain()}"
        for r in refs:
            dynamic = [f for f in r.dynamic if f.probe_column == col]
            assert any("traced from outer" in (f.origin or "") or
                       "narrowed by" in (f.origin or "") for f in dynamic) or \
                any("pushed from" in n for n in r.notes + plan.notes) or \
                any("pushed from" in (f.origin or "") for f in dynamic), \
                f"{name}:\n{plan.explain()}"


@pytest.mark.parametrize("name,query,whole", NOT_PUSHED, ids=[c[0] for c in NOT_PUSHED])
def test_plan_does_not_prune_where_a_push_must_stop(name: str, query: str,
                                                    whole: set[int]) -> None:
    plan = _plan(query)
    for i in whole:
        table, col = (("pd_sales", "p"), ("pd_web", "q"))[i]
        for r in (r for r in plan.refs if r.table == table):
            assert col not in r.static.columns and \
                not any(f.probe_column == col for f in r.dynamic), f"{name}:\n{plan.explain()}"
