"""dpp.frontends.sql.typed: SQL text as the typed plan the optimizer hook describes, whose pairs
:func:`dpp.analysis.plan_pairs.find_prunes` decides for the SQL front end too."""
from __future__ import annotations

from typing import Optional

import pytest
import sqlglot

from dpp.core.refusals import Code, Refusal
from dpp.analysis.plan_pairs import Prune, find_prunes
from dpp.analysis.plan_wire import WIRE_VERSION, check_plan
from dpp.frontends.sql.planner import TableInfo
from dpp.frontends.sql.scopes import Tables
from dpp.frontends.sql.typed import Typed, translate


def _resolve(name: str) -> Optional[TableInfo]:
    return {"f": TableInfo("f", {"v": None, "k": None}, ("k",)),
            "g": TableInfo("g", {"w": None, "k": None}, ("k",)),
            "d": TableInfo("d", {"k": None, "x": None}, ())}.get(name)


def _typed(sql: str) -> Typed:
    typed = translate(sqlglot.parse_one(sql, read="spark"), Tables(_resolve))
    check_plan(typed.message)
    return typed


def _prunes(sql: str) -> tuple[Typed, list[Prune], list[str]]:
    typed = _typed(sql)
    prunes, notes = find_prunes(dict(typed.message))
    return typed, prunes, notes


def _pruned(typed: Typed, prunes: list[Prune]) -> set[str]:
    """``table.column`` of each reference a pair prunes, by the references' aliases."""
    return {f"{typed.relations[p.relation][1].alias}.{p.column}" for p in prunes
            if p.relation in typed.relations}


def _ops(typed: Typed) -> list[str]:
    return [n["op"] for n in typed.message["nodes"]]


def _leaf_filters(typed: Typed) -> list[dict]:
    """The Filters right over a table (a FROM item's own conjuncts)."""
    nodes = typed.message["nodes"]
    return [n for n in nodes if n["op"] == "Filter"
            and nodes[n["children"][0]]["op"] == "LogicalRelation"]


def test_the_message_passes_the_wire_check_and_links_back() -> None:
    typed = _typed("SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1")
    msg = typed.message
    assert msg["version"] == WIRE_VERSION and msg["roots"]
    rels = [n for n in msg["nodes"] if n.get("relation")]
    assert [n["relation"]["partitionColumns"] for n in rels] == [["k"]]
    assert {s.alias for _sc, s in typed.relations.values()} == {"f"}
    ids = [c[0] for n in msg["nodes"] if n["op"] == "LogicalRelation" for c in n["output"]]
    assert len(ids) == len(set(ids)), "every column has its own number"
    (dim_filter,) = _leaf_filters(typed)
    assert dim_filter["selective"] is True
    origins = {o.column.sql() for o in typed.keys.values() if o.column is not None}
    assert origins == {"f.k", "d.k"}


def test_is_not_null_alone_filters_nothing() -> None:
    typed, prunes, notes = _prunes("SELECT f.v FROM f JOIN d ON f.k = d.k "
                                   "WHERE d.x IS NOT NULL")
    (flt,) = _leaf_filters(typed)
    assert flt["selective"] is False
    assert not prunes and any(n.code in (Code.BUILD_FILTERS_NOTHING, Code.IN_FILTERS_NOTHING) for n in notes)


@pytest.mark.parametrize("join,pruned", [
    ("JOIN", {"f.k"}),
    ("LEFT JOIN", set()),            # f preserved
    ("RIGHT JOIN", {"f.k"}),         # f NULL-supplied, d preserved and filtered
    ("FULL JOIN", set()),
    ("LEFT SEMI JOIN", {"f.k"}),
    ("LEFT ANTI JOIN", set()),
])
def test_join_types_and_sides(join: str, pruned: set[str]) -> None:
    dim = "(SELECT k, x FROM d WHERE x = 1) dd"
    typed, prunes, _notes = _prunes(f"SELECT f.v FROM f {join} {dim} ON f.k = dd.k")
    spelled = {n.get("joinType") for n in typed.message["nodes"] if n["op"] == "Join"}
    assert spelled == {{"JOIN": "INNER", "LEFT JOIN": "LEFT OUTER", "RIGHT JOIN": "RIGHT OUTER",
                        "FULL JOIN": "FULL OUTER", "LEFT SEMI JOIN": "LEFT SEMI",
                        "LEFT ANTI JOIN": "LEFT ANTI"}[join]}
    assert _pruned(typed, prunes) == pruned


def test_where_equalities_of_a_comma_list_key_inner_joins() -> None:
    typed, prunes, _notes = _prunes("SELECT f.v FROM f, d, g WHERE f.k = d.k AND g.k = d.k "
                                    "AND d.x = 1")
    assert _pruned(typed, prunes) == {"f.k", "g.k"}
    keyed = [n for n in typed.message["nodes"] if n["op"] == "Join" and n["keys"]]
    assert len(keyed) == 2 and all(n["joinType"] == "INNER" for n in keyed)


def test_an_outer_join_keeps_a_where_equality_off_its_keys() -> None:
    # d is NULL-supplied: the WHERE equality over it is no key of any join
    typed, prunes, _notes = _prunes("SELECT f.v FROM f LEFT JOIN d ON f.v = d.x "
                                    "WHERE f.k = d.k")
    assert "f.k" not in _pruned(typed, prunes)


@pytest.mark.parametrize("inner,pruned", [
    ("SELECT v, k FROM f", True),
    ("SELECT k, sum(v) AS s FROM f GROUP BY k", True),
    ("SELECT v, k FROM f UNION ALL SELECT w, k FROM g", True),
    ("SELECT v, k, row_number() OVER (PARTITION BY k ORDER BY v) AS r FROM f", True),
    ("SELECT v, k + 1 AS k FROM f", False),          # computed
    ("SELECT sum(v) AS v, max(k) AS k FROM f", False),  # an aggregate's result
    ("SELECT v, k FROM f LIMIT 5", False),           # a limit stops the key
])
def test_keys_pass_through_derived_tables_as_spark_passes_them(inner: str,
                                                               pruned: bool) -> None:
    typed, prunes, _notes = _prunes(f"SELECT t.v FROM ({inner}) t JOIN d ON t.k = d.k "
                                    f"WHERE d.x = 1")
    assert bool(_pruned(typed, prunes)) is pruned, _ops(typed)
    if "UNION" in inner and pruned:
        assert _pruned(typed, prunes) == {"f.k", "g.k"}


@pytest.mark.parametrize("dim", [
    "(SELECT k FROM d WHERE x = 1 AND rand() < 0.5) dd",
    "(SELECT k FROM d WHERE x = 1 LIMIT 10) dd",
    "(SELECT k FROM d TABLESAMPLE (10 PERCENT) WHERE x = 1) dd",
    "(SELECT k FROM d WHERE x = 1 AND uuid() IS NOT NULL) dd",
])
def test_nondeterministic_build_sides_are_refused(dim: str) -> None:
    typed, prunes, notes = _prunes(f"SELECT f.v FROM f JOIN {dim} ON f.k = dd.k")
    assert not _pruned(typed, prunes)
    assert any(n.code is Code.BUILD_NONDETERMINISTIC for n in notes), notes


def test_a_build_side_calling_a_rerun_function_is_refused_a_fact_side_is_not() -> None:
    typed, prunes, _notes = _prunes("SELECT f.v FROM f JOIN d ON f.k = d.k "
                                    "WHERE d.x = 1 AND current_date() > '2000-01-01'")
    # the conjunct is about no FROM item: a filter above the join, over the fact too
    assert _pruned(typed, prunes) == {"f.k"}
    typed, prunes, _notes = _prunes("SELECT f.v FROM f JOIN (SELECT k FROM d WHERE "
                                    "x < datediff(current_date(), '2000-01-01')) dd "
                                    "ON f.k = dd.k")
    assert not _pruned(typed, prunes)


def test_a_fact_below_a_limit_is_not_pruned_unless_a_sort_decides_it() -> None:
    base = "SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1"
    typed, prunes, notes = _prunes(base + " LIMIT 10")
    assert not _pruned(typed, prunes) and any("GlobalLimit" in n.get("why") for n in notes)
    typed, prunes, _notes = _prunes(base + " ORDER BY f.v LIMIT 10")
    assert _pruned(typed, prunes) == {"f.k"}
    # a global aggregate's one row: Spark drops the limit
    typed, prunes, _notes = _prunes("SELECT count(*) FROM f JOIN d ON f.k = d.k "
                                    "WHERE d.x = 1 LIMIT 100")
    assert _pruned(typed, prunes) == {"f.k"} and "GlobalLimit" not in _ops(typed)


def test_in_subquery_and_exists_are_filter_subqueries() -> None:
    typed, prunes, _notes = _prunes("SELECT f.v FROM f WHERE f.k IN "
                                    "(SELECT k FROM d WHERE x = 1)")
    (flt,) = [n for n in typed.message["nodes"] if n.get("inSubqueries")]
    assert len(flt["inSubqueries"]) == 1
    assert [(p.join, p.column) for p in prunes] == [("IN subquery", "k")]
    typed, prunes, _notes = _prunes("SELECT f.v FROM f WHERE EXISTS (SELECT 1 FROM d "
                                    "WHERE d.k = f.k AND d.x = 1)")
    assert [(p.join, p.column) for p in prunes] == [("IN subquery", "k")]
    origin = typed.keys[prunes[0].build_expr]
    assert origin.query is not None and "d.x = 1" in origin.query.sql()
    assert "f.k" not in origin.query.sql()


def test_correlated_in_and_anti_joins_make_no_subquery() -> None:
    typed, prunes, _notes = _prunes("SELECT f.v FROM f WHERE f.k NOT IN "
                                    "(SELECT k FROM d WHERE x = 1)")
    assert not prunes and not any(n.get("inSubqueries") for n in typed.message["nodes"])
    typed, prunes, _notes = _prunes("SELECT f.v FROM f WHERE f.k IN "
                                    "(SELECT k FROM d WHERE d.x = f.v)")
    assert not prunes
    notes = [text for found in typed.notes.values() for _ph, _i, text in found]
    assert Refusal(Code.CORRELATED_IN) in notes


def test_a_nondeterministic_filter_above_the_fact_stops_it() -> None:
    typed, prunes, notes = _prunes("SELECT f.v FROM f JOIN d ON f.k = d.k "
                                   "WHERE d.x = 1 AND rand() < 0.5")
    assert not _pruned(typed, prunes)
    assert any(n.code is Code.FACT_BELOW_NONDETERMINISTIC for n in notes)


def test_unknown_tables_get_the_columns_the_query_uses() -> None:
    typed, prunes, _notes = _prunes("SELECT f.v FROM f JOIN other o ON f.k = o.id "
                                    "WHERE o.flag = 'y'")
    (leaf,) = [n for n in typed.message["nodes"]
               if n["op"] == "LogicalRelation" and not n.get("relation")]
    assert sorted(c[1] for c in leaf["output"]) == ["flag", "id"]
    assert _pruned(typed, prunes) == {"f.k"}


@pytest.mark.parametrize("sql,pruned", [
    ("SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1", True),
    ("SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1 LIMIT 10", False),
    ("SELECT f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1 ORDER BY f.v LIMIT 10", True),
    ("SELECT rand() AS r, f.v FROM f JOIN d ON f.k = d.k WHERE d.x = 1", False),
    # the WHERE's IN rejects the NULL-supplied side's padded rows: pruned through the join
    ("SELECT d.x FROM d LEFT JOIN f ON f.k = d.x WHERE f.k IN (SELECT k FROM d WHERE x = 1)",
     True),
])
def test_the_planner_takes_find_prunes_answers(sql: str, pruned: bool) -> None:
    from dpp.frontends.sql.planner import analyze

    plan = analyze(sql, _resolve)
    (ref,) = [r for r in plan.refs if r.table == "f"]
    assert bool(ref.dynamic) is pruned, plan.explain()
