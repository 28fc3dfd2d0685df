"""Tables with nothing to prune, through the optimizer hook.

Every relation the hook does not prune is Spark's, listed and read by Spark alone: a declared
path table is Spark's reader of its folder, a catalog table its catalog index (dpp only ever
restricts that listing, where it prunes). A query that joins a declared table and prunes
nothing says so in its report (read whole by Spark's reader); a catalog table left alone has no
report entry. Checked against Spark with every pruning off on the same folders: same rows.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from dpp.analysis.plan_pairs import WHOLE_BUILD_BYTES
from dpp.frontends.hook.explain import WHOLE
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}
DAYS = 6
FACTS = ("wt_sales", "wt_sales_cat")


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("whole_hook")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        for j in range(2):
            pq.write_table(pa.table({"item": pa.array(range(j * 5, j * 5 + 5), pa.int32()),
                                     "amount": pa.array([day * 100 + j * 10 + i
                                                         for i in range(5)], pa.int64())}),
                           folder / f"part-{j}.parquet")
    items = root / "items"
    items.mkdir()
    pq.write_table(pa.table({"item_id": pa.array(range(10), pa.int32()),
                             "cat": pa.array(["x" if i % 2 else "y" for i in range(10)])}),
                   items / "part-0.parquet")
    spark.sql("DROP TABLE IF EXISTS wt_sales_cat")
    spark.sql(f"CREATE TABLE wt_sales_cat (item INT, amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{sales}'")
    spark.sql("ALTER TABLE wt_sales_cat RECOVER PARTITIONS")
    spark.read.parquet(str(items)).createOrReplaceTempView("wt_items")
    days = root / "days"
    days.mkdir()
    pq.write_table(pa.table({"d": pa.array(range(DAYS), pa.int32()),
                             "label": [f"d{d}" for d in range(DAYS)]}), days / "part-0.parquet")
    spark.read.parquet(str(days)).createOrReplaceTempView("wt_days")   # a scan, no filter
    # the same days in a table over WHOLE_BUILD_BYTES (incompressible padding): a build side
    # that filters nothing and is too large to read whole for its keys
    days_big = root / "days_big"
    days_big.mkdir()
    rows = 2 * WHOLE_BUILD_BYTES // 64
    pq.write_table(pa.table({"d": pa.array([i % DAYS for i in range(rows)], pa.int32()),
                             "label": [f"d{i % DAYS}" for i in range(rows)],
                             "pad": pa.array([os.urandom(64) for _ in range(rows)])}),
                   days_big / "part-0.parquet", compression="none")
    spark.read.parquet(str(days_big)).createOrReplaceTempView("wt_days_big")
    with spark_conf(spark, {"spark.dpp.tables.wt_sales": str(sales),
                            "spark.dpp.sqlPath": "hook",
                            "spark.dpp.statsPruning.enabled": "false"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session}
        finally:
            dpp.disable(spark)
            spark.sql("DROP TABLE IF EXISTS wt_sales_cat")
            spark.catalog.dropTempView("wt_items")
            spark.catalog.dropTempView("wt_days")
            spark.catalog.dropTempView("wt_days_big")


def _run(spark: Any, data: dict[str, Any], job: Callable[[], Any]) -> tuple[list, list, Any]:
    session = data["session"]
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, job().collect()))
    session.last_report = None
    got = sorted(map(tuple, job().collect()))
    return got, expected, session.last_report


def _entries(report: Any, fact: str) -> list[Any]:
    return [t for t in report.tables if t.table == fact]


def _sparks(report: Any, fact: str) -> bool:
    """For the catalog table: checks that dpp left it to Spark (no report entry), True."""
    if fact != "wt_sales_cat":
        return False
    assert report is None or not _entries(report, fact), report
    return True


def _left_whole(report: Any, fact: str) -> None:
    """The declared table's one entry: not pruned, read whole by Spark's reader (nothing of
    it listed by dpp)."""
    assert report is not None and report.kind == "plan", report
    (t,) = _entries(report, fact)      # however many copies the plan reads: one entry
    assert t.pruning == "none" and t.reason == WHOLE and t.reason_code == "nothing-to-prune", t
    assert not t.files_kept and not t.folders_listed, t


@pytest.mark.parametrize("fact", FACTS)
def test_a_join_on_a_data_column_leaves_the_table_whole_to_spark(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    def job() -> Any:
        f, i = spark.table(fact), spark.table("wt_items").where("cat = 'x'")
        return f.join(i, f["item"] == i["item_id"]).groupBy("day").agg({"amount": "sum"})

    got, expected, report = _run(spark, data, job)
    assert got == expected and len(expected) == DAYS
    if _sparks(report, fact):
        return
    _left_whole(report, fact)


@pytest.mark.parametrize("fact", FACTS)
def test_a_query_with_no_join_and_a_union_of_copies_is_sparks_alone(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    """No join: nothing the hook could prune, no report, for either kind of table."""
    def job() -> Any:
        f = spark.table(fact)
        return f.unionAll(f).groupBy("day").count()

    got, expected, report = _run(spark, data, job)
    assert got == expected and len(expected) == DAYS
    assert report is None or not _entries(report, fact), report


@pytest.mark.parametrize("fact", FACTS)
def test_a_join_on_the_partition_column_that_filters_nothing_reads_whole(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    """Every day joins a dimension too large to read whole for its keys (a small one is read:
    ``tests/test_whole_small_build.py``): no filter worth building, yet Spark infers ``day IS
    NOT NULL`` from the join, which would still have the metastore return every partition:
    read whole."""
    def job() -> Any:
        f, d = spark.table(fact), spark.table("wt_days_big")
        return f.join(d, f["day"] == d["d"]).groupBy("label").count()

    got, expected, report = _run(spark, data, job)
    assert got == expected and len(expected) == DAYS
    if _sparks(report, fact):
        return
    _left_whole(report, fact)
    # the key's refusal, typed: its code and the key it is about, in the report's words too
    (refused,) = [r for r in report.refusals if r["code"] == "build-filters-nothing"]
    assert "day" in refused["subject"] and refused["words"] in report.analysis_notes, report


def test_the_preserved_side_of_an_outer_join_is_refused_by_code(
        spark: Any, data: dict[str, Any]) -> None:
    """A left outer join keeps every fact row: the key is refused as the join's, the table
    read whole; both by code in the report's JSON."""
    def job() -> Any:
        f, d = spark.table("wt_sales"), spark.table("wt_days").where("label = 'd1'")
        return f.join(d, f["day"] == d["d"], "left").groupBy("day", "label").count()

    got, expected, report = _run(spark, data, job)
    assert got == expected and len(expected) == DAYS
    line = report.to_dict()
    codes = {r["code"] for r in line["refusals"]}
    assert "join-keeps-unmatched" in codes, line
    (t,) = [t for t in line["tables"] if t["table"] == "wt_sales"]
    assert t["reason_code"] == "nothing-to-prune" and t["pruning"] == "none", t


def test_a_catalog_table_with_a_partition_filter_stays_sparks(spark: Any,
                                                              data: dict[str, Any]) -> None:
    def job() -> Any:
        f, i = spark.table("wt_sales_cat").where("day >= 4"), spark.table("wt_items")
        return f.join(i, f["item"] == i["item_id"]).groupBy("day").count()

    got, expected, report = _run(spark, data, job)
    assert got == expected and len(expected) == 2
    assert report is None or not _entries(report, "wt_sales_cat"), report


def test_the_setting_off_leaves_catalog_tables_to_spark(spark: Any,
                                                        data: dict[str, Any]) -> None:
    with spark_conf(spark, {"spark.dpp.listWholeCatalogTables": "false"}):
        got, expected, report = _run(
            spark, data, lambda: spark.table("wt_sales_cat").groupBy("day").count())
    assert got == expected and len(expected) == DAYS
    assert report is None or not _entries(report, "wt_sales_cat"), report
