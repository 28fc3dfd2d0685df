"""A fact on the right of a left-semi join is pruned by the left side's keys; on the right of
an anti join it is not.

``stores LEFT SEMI JOIN sales`` outputs the stores that have a sale: a sales row whose store
no left row holds tests no store, so its partition may be skipped. (The same join written
``WHERE s.id IN (SELECT f.store FROM sales f)`` is not pruned yet: the analysis meets the IN
before Spark makes it a join, and asks it to filter the stores; its rows are checked here.) A ``NOT IN`` / ``LEFT ANTI``
right side decides by its NULLs and by being empty at all, so it is read whole. Every case
runs against Spark with every pruning off on the same folders (a NULL store partition, a
store with no sales, a left row with a NULL key, an extra non-equality condition), on a
``spark.read.parquet`` view and a catalog table, as SQL and as DataFrame code.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial_support import OFF, enabled, int_partitions
from tests.conftest import spark_conf

STORES = 12                    # sales partitions store=0..11 and store=__HIVE_DEFAULT_PARTITION__
NL = (2, 5, 11, 40)            # 40: a store with no sales


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("semi_right")
    sales = root / "sales"
    int_partitions(sales, "store", [*range(STORES), None])
    stores = root / "stores"
    stores.mkdir()
    ids = [*range(STORES), 40, None]
    pq.write_table(pa.table({
        "id": pa.array(ids, pa.int32()),
        "country": ["NL" if i in NL or i is None else "DE" for i in ids],
        "floor": pa.array([150 if i == 5 else 0 for i in ids], pa.int64())}),
        stores / "part-0.parquet")
    spark.read.parquet(str(sales)).createOrReplaceTempView("sr_sales")
    spark.read.parquet(str(stores)).createOrReplaceTempView("sr_stores")
    spark.sql("DROP TABLE IF EXISTS sr_sales_cat")
    spark.sql(f"CREATE TABLE sr_sales_cat (amount BIGINT, store INT) USING parquet "
              f"PARTITIONED BY (store) LOCATION '{sales}'")
    spark.sql("ALTER TABLE sr_sales_cat RECOVER PARTITIONS")
    try:
        with enabled(spark, root) as session:
            yield {"session": session}
    finally:
        spark.sql("DROP TABLE IF EXISTS sr_sales_cat")
        for v in ("sr_sales", "sr_stores"):
            spark.catalog.dropTempView(v)


def _semi(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT s.id, s.country FROM sr_stores s LEFT SEMI JOIN {fact} f "
                         f"ON f.store = s.id AND s.country = 'NL'")
    s, f = spark.table("sr_stores").alias("s"), spark.table(fact).alias("f")
    return s.where("country = 'NL'").join(f, s["id"] == f["store"], "left_semi")


def _in_subquery(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT s.id FROM sr_stores s WHERE s.country = 'NL' "
                         f"AND s.id IN (SELECT f.store FROM {fact} f)")
    s, f = spark.table("sr_stores").alias("s"), spark.table(fact).alias("f")
    return (s.where("country = 'NL'")
            .join(f.select("store"), s["id"] == f["store"], "left_semi").select("id"))


def _semi_non_equi(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT s.id FROM sr_stores s LEFT SEMI JOIN {fact} f "
                         f"ON f.store = s.id AND f.amount > s.floor WHERE s.country = 'NL'")
    s, f = spark.table("sr_stores").alias("s"), spark.table(fact).alias("f")
    return (s.where("country = 'NL'")
            .join(f, (s["id"] == f["store"]) & (f["amount"] > s["floor"]), "left_semi")
            .select("id"))


def _semi_under_aggregate(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT s.country, count(*) AS n FROM sr_stores s LEFT SEMI JOIN "
                         f"(SELECT store, max(amount) AS top FROM {fact} GROUP BY store) f "
                         f"ON f.store = s.id WHERE s.country = 'NL' GROUP BY s.country")
    s, f = spark.table("sr_stores").alias("s"), spark.table(fact)
    top = f.groupBy("store").agg({"amount": "max"}).alias("f")
    return (s.where("country = 'NL'").join(top, s["id"] == top["store"], "left_semi")
            .groupBy("country").count())


def _anti(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT s.id FROM sr_stores s WHERE s.country = 'NL' "
                         f"AND s.id NOT IN (SELECT f.store FROM {fact} f)")
    s, f = spark.table("sr_stores").alias("s"), spark.table(fact).alias("f")
    return s.where("country = 'NL'").join(f, s["id"] == f["store"], "left_anti").select("id")


PRUNED: dict[str, Callable[[Any, str, str], Any]] = {
    "semi": _semi, "semi_non_equi": _semi_non_equi, "semi_under_aggregate": _semi_under_aggregate,
    "in_dataframe": _in_subquery}      # as DataFrame code: the left-semi join itself


def _run(spark: Any, session: Any, job: Callable[[Any, str, str], Any], fact: str,
         form: str) -> tuple[list, list, Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, job(spark, fact, form).collect()), key=repr)
    session.last_report = None
    got = sorted(map(tuple, job(spark, fact, form).collect()), key=repr)
    return expected, got, session.last_report


@pytest.mark.parametrize("fact", ["sr_sales", "sr_sales_cat"])
@pytest.mark.parametrize("case,form", [(c, f) for c in sorted(PRUNED)
                                       for f in ("sql", "dataframe")
                                       if (c, f) != ("in_dataframe", "sql")])
def test_fact_right_of_a_semi_join_is_pruned_by_the_left_keys(
        spark: Any, data: dict[str, Any], case: str, fact: str, form: str) -> None:
    expected, got, report = _run(spark, data["session"], PRUNED[case], fact, form)
    assert got == expected and expected, (got, expected)
    assert report is not None, f"{case}: no report"
    applied = [t for t in report.tables if t.pruning == "applied"]
    assert applied, f"{case} on {fact}: not pruned: {report.tables} {report.analysis_notes}"
    for t in applied:
        # the NL stores that have sales (2, 5, 11): never the NULL partition, never fewer
        assert t.partitions_kept == 3 and t.partitions_total == STORES + 1, t


@pytest.mark.parametrize("fact", ["sr_sales", "sr_sales_cat"])
def test_fact_inside_an_in_subquery_gives_sparks_rows(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    expected, got, _report = _run(spark, data["session"], _in_subquery, fact, "sql")
    assert got == expected and expected, (got, expected)


@pytest.mark.parametrize("form", ["sql", "dataframe"])
@pytest.mark.parametrize("fact", ["sr_sales", "sr_sales_cat"])
def test_fact_right_of_an_anti_join_is_read_whole(
        spark: Any, data: dict[str, Any], fact: str, form: str) -> None:
    expected, got, report = _run(spark, data["session"], _anti, fact, form)
    assert got == expected, (got, expected)
    if report is not None:
        assert not [t for t in report.tables if t.pruning == "applied"], report.tables
