"""The SQL-text front end translates, :func:`dpp.analysis.plan_pairs.find_prunes` decides: a build
query's determinism is asked of the typed build side made of the same FROM items and
conjuncts; USING / NATURAL joins are the equalities Spark makes of them (a full outer join's
USING column is ``coalesce(l, r)``, no key); an expression key over a partition column is
found and reported, not pruned (the SQL-text loader tests a column's own values)."""
from __future__ import annotations

from collections import Counter
from typing import Optional

import pytest
import sqlglot

import dpp.frontends.sql.build
from dpp.core.refusals import Code, Refusal
from dpp.analysis.plan_pairs import find_prunes
from dpp.frontends.sql.planner import TableInfo, analyze
from dpp.frontends.sql.scopes import Tables
from dpp.frontends.sql.typed import translate


def _resolve(name: str) -> Optional[TableInfo]:
    return {"f": TableInfo("f", {"v": None, "k": None}, ("k",)),
            "g": TableInfo("g", {"w": None, "k": None}, ("k",)),
            "d": TableInfo("d", {"k": None, "x": None}, ()),
            "e": TableInfo("e", {"y": None, "z": None}, ())}.get(name)


def _ref(sql: str, table: str = "f"):
    plan = analyze(sql, _resolve)
    (ref,) = [r for r in plan.refs if r.table == table]
    return plan, ref


SNOW = "SELECT f.v FROM f JOIN d ON f.k = d.k JOIN e ON d.x = e.y WHERE "


def test_the_written_gate_is_gone() -> None:
    assert not hasattr(dpp.frontends.sql.build, "repeatable")


def test_a_build_side_that_filters_is_read_alone() -> None:
    """``d`` filters on its own: its keys are the build side (the smallest that filters, as
    find_prunes narrows it on every front end), whatever its neighbours filter."""
    _plan, ref = _ref(SNOW + "d.x > 0 AND e.z = 3")
    (flt,) = ref.dynamic
    assert flt.build_query == "SELECT d.k AS dpp_key FROM d AS d WHERE d.x > 0"


def test_a_filtered_neighbour_narrows_a_build_side_that_filters_nothing() -> None:
    """``d`` filters nothing, ``e`` does: the build side is ``d``'s rows some ``e`` row
    matches on the join above (find_prunes' narrowing), written as that join's own equality
    in an EXISTS (an IN subquery would compare in another type than the join does)."""
    _plan, ref = _ref(SNOW + "e.z = 3")
    (flt,) = ref.dynamic
    assert flt.build_query == (
        "SELECT d.k AS dpp_key FROM d AS d WHERE EXISTS(SELECT 1 FROM (SELECT e.y AS dpp_key "
        "FROM e AS e WHERE e.z = 3) AS dpp_narrow0 WHERE dpp_narrow0.dpp_key = d.x)")


@pytest.mark.parametrize("neighbour", [
    SNOW + "e.z + rand() > 1",                                   # a random function
    SNOW + "e.z < datediff(current_date(), DATE'2000-01-01')",   # run again another day
    SNOW + "e.z > (SELECT z FROM e ORDER BY y LIMIT 1)",         # a limit over ties
    "SELECT f.v FROM f JOIN d ON f.k = d.k JOIN (SELECT * FROM e WHERE z = 3 LIMIT 2) e "
    "ON d.x = e.y",                                               # a limit in a derived table
    "SELECT f.v FROM f JOIN d ON f.k = d.k JOIN (SELECT * FROM e WHERE z = 3 "
    "ORDER BY rand() LIMIT 2) e ON d.x = e.y",
])
def test_an_unrepeatable_neighbour_of_the_build_side_is_refused_by_find_prunes(
        neighbour: str) -> None:
    # ``d`` filters nothing: only a narrowing by ``e`` would make it a build side, and ``e``
    # may give other rows when run again, so find_prunes does not narrow by it (on every
    # front end): the pair is refused, its build side filtering nothing
    _plan, ref = _ref(neighbour)
    assert ref.dynamic == [] and not ref.pruning
    assert any(r.code is Code.BUILD_FILTERS_NOTHING for r in ref.refusals), ref.notes
    typed = translate(sqlglot.parse_one(neighbour, read="spark"), Tables(_resolve))
    prunes, notes = find_prunes(dict(typed.message))
    assert not [p for p in prunes if p.relation in typed.relations]
    assert any(n.code is Code.BUILD_FILTERS_NOTHING for n in notes), notes
    # the same neighbour, repeatable, narrows it
    _plan, ref = _ref(SNOW + "e.z = 3")
    assert ref.pruning and ref.dynamic


def test_the_typed_build_side_is_what_the_build_query_reads() -> None:
    sql = SNOW + "e.z = 3"
    typed = translate(sqlglot.parse_one(sql, read="spark"), Tables(_resolve))
    prunes, _notes = find_prunes(dict(typed.message))
    (p,) = [p for p in prunes if p.relation in typed.relations]
    nodes = {n["id"]: n for n in typed.message["nodes"]}

    def leaves(i: int) -> int:
        n = nodes[i]
        return (n["op"] == "LogicalRelation") + sum(leaves(c) for c in n["children"])
    assert leaves(p.build_node) == 1         # d, narrowed by e: both read by the query
    assert p.build_semi is not None and leaves(p.build_semi[0]) == 1
    _plan, ref = _ref(sql)
    (flt,) = ref.dynamic
    assert flt.build_tables == ("d", "e")


def test_a_limit_of_a_global_aggregate_in_a_scalar_subquery_limits_nothing() -> None:
    # Spark's EliminateLimits: the one row of max() is the row (the old written gate refused
    # any LIMIT in the build query's text)
    _plan, ref = _ref("SELECT f.v FROM f JOIN d ON f.k = d.k "
                      "WHERE d.x > (SELECT max(x) FROM d LIMIT 1)")
    assert ref.pruning and len(ref.dynamic) == 1


def test_a_random_build_side_of_a_key_traced_into_a_derived_table_is_refused() -> None:
    _plan, ref = _ref("SELECT x.v FROM (SELECT v, k FROM f) x JOIN d ON x.k = d.k "
                      "WHERE d.x > 0 AND d.x + rand() > 1")
    assert not ref.dynamic
    assert any(r.code is Code.BUILD_NONDETERMINISTIC for r in ref.refusals), ref.notes
    assert not any("read below" in n for n in ref.notes)


def test_a_random_in_subquery_is_refused() -> None:
    _plan, ref = _ref("SELECT v FROM f WHERE k IN (SELECT k FROM d WHERE x > 0 LIMIT 3)")
    assert not ref.dynamic and any(r.code is Code.BUILD_NONDETERMINISTIC for r in ref.refusals)


# ------------------------------------------------------------------ USING / NATURAL

@pytest.mark.parametrize("sql,build", [
    ("SELECT v FROM f JOIN d USING (k) WHERE d.x = 1", "FROM d AS d WHERE d.x = 1"),
    ("SELECT v FROM f NATURAL JOIN d WHERE d.x = 1", "FROM d AS d WHERE d.x = 1"),
    ("SELECT v FROM f RIGHT JOIN d USING (k) WHERE d.x = 1", "FROM d AS d WHERE d.x = 1"),
    ("SELECT v FROM f LEFT SEMI JOIN (SELECT k FROM d WHERE x = 1) s USING (k)",
     "FROM d AS d WHERE x = 1"),   # the derived table's own filtered item
    # the left of a later USING is the merged column: the left's for left joins ...
    ("SELECT v FROM d LEFT JOIN g USING (k) JOIN f USING (k) WHERE d.x = 1",
     "FROM d AS d WHERE d.x = 1"),
    # ... the right's for right joins
    ("SELECT v FROM g RIGHT JOIN d USING (k) JOIN f USING (k) WHERE d.x = 1",
     "FROM d AS d WHERE d.x = 1"),
])
def test_using_and_natural_joins_key_like_on(sql: str, build: str) -> None:
    _plan, ref = _ref(sql)
    assert ref.pruning and len(ref.dynamic) == 1, (ref.reason, ref.notes)
    assert build in ref.dynamic[0].build_query


@pytest.mark.parametrize("sql", [
    "SELECT v FROM f FULL JOIN d USING (k) WHERE d.x = 1",
    "SELECT v FROM f LEFT JOIN d USING (k) WHERE d.x = 1",
    # a full outer join's USING column is coalesce(d.k, g.k): no key to prune f by d alone
    "SELECT v FROM d FULL JOIN g USING (k) JOIN f USING (k) WHERE d.x = 1",
    "SELECT v FROM d FULL JOIN (SELECT k FROM d WHERE x = 2) d2 USING (k) JOIN f USING (k) "
    "WHERE d.x = 1",
    "SELECT v FROM f NATURAL JOIN u WHERE u.x = 1",       # u's columns are unknown
    "SELECT v FROM d, g JOIN f USING (k) WHERE d.x = 1",  # Spark: g JOIN f, not d
])
def test_using_joins_that_give_no_key(sql: str) -> None:
    _plan, ref = _ref(sql)
    assert not ref.dynamic, ref.dynamic


@pytest.mark.parametrize("sql,equalities", [
    ("SELECT 1 FROM d JOIN g USING (k) JOIN f USING (k)", ["d.k = g.k", "d.k = f.k"]),
    ("SELECT 1 FROM d LEFT JOIN g USING (k) JOIN f USING (k)", ["d.k = g.k", "d.k = f.k"]),
    ("SELECT 1 FROM d RIGHT JOIN g USING (k) JOIN f USING (k)", ["d.k = g.k", "g.k = f.k"]),
    ("SELECT 1 FROM d FULL JOIN g USING (k) JOIN f USING (k)",
     ["d.k = g.k", "COALESCE(d.k, g.k) = f.k"]),
    ("SELECT 1 FROM d FULL JOIN g USING (k) FULL JOIN f USING (k) JOIN e ON e.y = 1 "
     "JOIN (SELECT k FROM d) d2 USING (k)",
     ["d.k = g.k", "COALESCE(d.k, g.k) = f.k", None, "COALESCE(COALESCE(d.k, g.k), f.k) = d2.k"]),
    ("SELECT 1 FROM d LEFT SEMI JOIN g USING (k) JOIN f USING (k)", ["d.k = g.k", "d.k = f.k"]),
    ("SELECT 1 FROM f NATURAL JOIN g", ["f.k = g.k"]),              # v and w differ
    ("SELECT 1 FROM f NATURAL JOIN (SELECT k, v FROM f) f2", ["f.v = f2.v AND f.k = f2.k"]),
    ("SELECT 1 FROM e NATURAL JOIN d", [""]),                         # no common column
])
def test_the_equalities_spark_makes_of_using(sql: str, equalities: list) -> None:
    from dpp.frontends.sql.scopes import join_on
    from dpp.frontends.sql.using import expand_using

    tree = sqlglot.parse_one(sql, read="spark")
    notes: list[str] = []
    expand_using(tree, Tables(_resolve), notes)
    got = [" AND ".join(c.sql("spark") for c in join_on(j)) if j.args.get("on") is None
           else None for j in tree.args["joins"]]
    assert got == equalities and not notes, notes


def test_using_joins_that_cannot_be_told_are_noted() -> None:
    plan, _ref_ = _ref("SELECT v FROM d, g JOIN f USING (k) WHERE d.x = 1")
    assert any("after a comma or CROSS join" in n for n in plan.notes), plan.notes
    plan, _ref_ = _ref("SELECT v FROM f NATURAL JOIN u WHERE u.x = 1")
    assert any("NATURAL join of u" in n for n in plan.notes), plan.notes


def test_the_text_spark_runs_keeps_its_using() -> None:
    # a build query carries a derived table's text as written: with ON instead of USING,
    # its ``SELECT k`` would be ambiguous
    _plan, ref = _ref("SELECT v FROM f JOIN (SELECT k FROM d JOIN (SELECT k, x AS x2 FROM d) "
                      "d2 USING (k) WHERE d2.x2 = 1) s ON f.k = s.k")
    (flt,) = ref.dynamic
    assert "USING (k)" in flt.build_query


# ------------------------------------------------------------------ expression keys

@pytest.mark.parametrize("sql,what", [
    ("SELECT v FROM f JOIN d ON f.k + 1 = d.k WHERE d.x = 1", "expression key f.k + 1"),
    ("SELECT v FROM f JOIN d ON CAST(f.k AS STRING) = d.x WHERE d.x = '1'",
     "expression key CAST(f.k AS STRING)"),
    ("SELECT v FROM f JOIN d ON f.k = d.k + 1 WHERE d.x = 1", "expression build key d.k + 1"),
])
def test_an_expression_key_is_found_and_reported_not_pruned(sql: str, what: str) -> None:
    _plan, ref = _ref(sql)
    assert not ref.dynamic and not ref.pruning
    assert any(n.startswith(what) and "not pruned" in n for n in ref.notes), ref.notes


@pytest.mark.parametrize("sql", [
    "SELECT v FROM f JOIN d ON f.v + 1 = d.k WHERE d.x = 1",       # a data column
    "SELECT v FROM f JOIN d ON f.k + f.v = d.k WHERE d.x = 1",     # two columns
    "SELECT v FROM f JOIN d ON f.k + rand() = d.k WHERE d.x = 1",  # not deterministic
])
def test_other_expression_keys_are_no_keys(sql: str) -> None:
    _plan, ref = _ref(sql)
    assert not ref.dynamic and not any("expression" in n for n in ref.notes)


# ------------------------------------------------------------------ against Spark

from tests.test_session_differential import (  # noqa: E402  (fixtures of the star schema)
    _pruned_tables, _reference, dpp_env, star)

__all__ = ["dpp_env", "star"]

DATES = "(SELECT d_date_sk AS ss_sold_date_sk, d_moy FROM date_dim WHERE d_year = {y})"
KEYS = "(SELECT d_date_sk AS k FROM date_dim WHERE d_moy = {m})"
FACT = "(SELECT ss_sold_date_sk AS k, ss_qty FROM sales)"

SPARK_QUERIES = [
    ("using_inner", f"SELECT ss_sold_date_sk, ss_qty, d_moy FROM sales JOIN "
                    f"{DATES.format(y=2000)} d USING (ss_sold_date_sk)", {"sales"}, set()),
    ("natural_inner", f"SELECT ss_sold_date_sk, ss_qty, d_moy FROM sales NATURAL JOIN "
                      f"{DATES.format(y=2001)} d", {"sales"}, set()),
    ("using_full_outer", f"SELECT ss_sold_date_sk, count(*), count(ss_qty), count(d_moy) "
                         f"FROM sales FULL JOIN {DATES.format(y=2001)} d "
                         f"USING (ss_sold_date_sk) GROUP BY ss_sold_date_sk", set(), {"sales"}),
    ("natural_full_outer", f"SELECT count(*), count(ss_qty), count(d_moy) FROM sales "
                           f"NATURAL FULL JOIN {DATES.format(y=2000)} d", set(), {"sales"}),
    ("using_after_full_outer", f"SELECT k, count(*), sum(ss_qty) FROM {KEYS.format(m=1)} a "
                               f"FULL JOIN {KEYS.format(m=2)} b USING (k) JOIN {FACT} s "
                               f"USING (k) GROUP BY k", set(), {"sales"}),
    ("using_after_right_outer", f"SELECT k, count(*), sum(ss_qty) FROM {KEYS.format(m=1)} a "
                                f"RIGHT JOIN {KEYS.format(m=2)} b USING (k) JOIN {FACT} s "
                                f"USING (k) GROUP BY k", {"sales"}, set()),
    ("using_after_left_outer", f"SELECT k, count(*), sum(ss_qty) FROM {KEYS.format(m=3)} a "
                               f"LEFT JOIN {KEYS.format(m=2)} b USING (k) JOIN {FACT} s "
                               f"USING (k) GROUP BY k", {"sales"}, set()),
]


@pytest.mark.parametrize("qid,query,must_prune,must_not", SPARK_QUERIES,
                         ids=[q[0] for q in SPARK_QUERIES])
def test_using_and_natural_joins_equal_spark_without_pruning(spark, dpp_env, qid, query,
                                                             must_prune, must_not) -> None:
    expected = Counter(_reference(spark, query))
    got = Counter(tuple(r) for r in dpp_env.collect(query))
    assert got == expected, f"{qid}: rows differ"
    assert sum(expected.values()) > 0
    applied, _ = _pruned_tables(dpp_env.last_report)
    for t in must_prune:
        assert t in applied, f"{qid}: expected pruning of {t}"
    if dpp_env.config.stats_pruning != "false":
        applied = {t["table"] for t in dpp_env.last_report.to_dict()["tables"]
                   if t["pruned_static"] + t["pruned_dynamic"] > 0}
    for t in must_not:
        assert t not in applied, f"{qid}: {t} must not be pruned here"
