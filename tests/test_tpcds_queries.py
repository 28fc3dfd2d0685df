"""tpcds.queries and tpcds.reference: the 99 queries in Spark SQL; the row comparison."""
from __future__ import annotations

import decimal

import pytest

from tpcds import queries as Q
from tpcds.reference import compare_rows


@pytest.fixture(scope="module")
def queries() -> dict[str, Q.Query]:
    return Q.load_queries()


def test_all_99_queries_come_from_the_package_and_translate(queries) -> None:
    assert sorted(queries, key=lambda n: int(n[1:])) == [f"q{i}" for i in range(1, 100)]
    failed = {n: q.error for n, q in queries.items() if q.spark_sql is None}
    assert failed == {}, failed
    assert all(q.error is None for q in queries.values())


def test_translation_is_spark_sql(queries) -> None:
    import sqlglot

    for q in queries.values():
        assert sqlglot.parse_one(q.spark_sql, read="spark") is not None


def test_referenced_tables_exclude_ctes(queries) -> None:
    assert queries["q3"].tables() == ["date_dim", "item", "store_sales"]
    assert "customer_total_return" not in queries["q1"].tables()
    assert "store_returns" in queries["q1"].tables()
    assert "reason" in queries["q9"].tables()


def test_select_queries_by_name_and_all(queries) -> None:
    assert [q.name for q in Q.select_queries("q3,7 ,q42", queries)] == ["q3", "q7", "q42"]
    assert len(Q.select_queries("all", queries)) == 99
    with pytest.raises(KeyError, match="q100"):
        Q.select_queries("q100", queries)


def test_opt_in_rule_rewrites_division() -> None:
    sql, applied = Q.translate("SELECT a / b FROM t", [("d", Q.RULES["division_as_try_divide"])])
    assert applied == ("d",) and "TRY_DIVIDE(A, B)" in sql.upper()
    with pytest.raises(KeyError, match="nope"):
        Q.load_queries(["nope"])


def test_limit_of_the_outer_query(queries) -> None:
    assert queries["q3"].limit == 100


def test_rows_match_as_multisets_with_tolerance() -> None:
    got = [(2, "b", decimal.Decimal("1.000001")), (1, "a", None)]
    expected = [(1, "a", None), (2, "b", 1.0)]
    assert compare_rows(got, expected) is None


def test_different_rows_are_reported() -> None:
    assert "differs" in compare_rows([(1, 2.0)], [(1, 2.5)])
    assert "rows" in compare_rows([(1,)], [(1,), (1,)])
    assert compare_rows([(1,), (1,), (2,)], [(1,), (2,), (2,)]) is not None


def test_ties_cut_by_limit_pass_only_when_rows_belong_to_the_full_answer() -> None:
    full = [("a", 1), ("b", 1), ("c", 1)]
    assert compare_rows([("b", 1)], [("a", 1)], limit=1, full=lambda: full) is None
    assert compare_rows([("z", 1)], [("a", 1)], limit=1, full=lambda: full) is not None


@pytest.fixture(scope="module")
def tiny(tpcds_sf001):
    return tpcds_sf001


def test_check_queries_reports_analysis_failures_with_a_reason(spark, tiny, queries) -> None:
    from tpcds.bench import drop_views, open_path_tables
    from tpcds.generate import TABLES

    q3 = queries["q3"]
    broken = Q.Query(1000, "SELECT 1", "SELECT no_such_column FROM store_sales")
    open_path_tables(spark, tiny, q3.tables())
    try:
        st = Q.check_queries(spark, [q3, broken])
    finally:
        drop_views(spark, TABLES)
    assert st[0].ok and st[0].stage == "ok"
    assert not st[1].ok and st[1].stage == "analysis" and "no_such_column" in st[1].reason
