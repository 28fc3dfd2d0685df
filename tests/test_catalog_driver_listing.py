"""A catalog table in local folders: the kept partitions are listed on the driver.

Spark's catalog index lists more than ``spark.sql.sources.parallelPartitionDiscovery.threshold``
(32) partition folders with a Spark job of its own ("Listing leaf files and directories for N
paths"). dpp asks Spark's own catalog index for the kept partitions in a clone of the table's
session with that threshold raised, so a pruned scan of local folders runs no listing job, and
reads exactly what Spark's index lists: the rows are compared with Spark's with every dynamic
pruning off, and the control (dpp off) shows the listing job is seen when there is one.
"""
from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}
DAYS, KEPT = 60, 45          # both above Spark's threshold of 32 folders
QUERY = "SELECT f.day, sum(f.v) FROM cdl_fact f JOIN cdl_dim d ON f.day = d.d " \
        "WHERE d.m = 1 GROUP BY f.day"


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("driver_listing")
    for d in range(DAYS):
        folder = root / "fact" / f"day={d}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": pa.array([d, 1000 + d], pa.int64())}),
                       folder / "part-0.parquet")
    (root / "dim").mkdir()
    pq.write_table(pa.table({"d": pa.array(range(DAYS), pa.int32()),
                             "m": [1 if d < KEPT else 2 for d in range(DAYS)]}),
                   root / "dim" / "part-0.parquet")
    spark.sql("DROP TABLE IF EXISTS cdl_fact")
    spark.sql(f"CREATE TABLE cdl_fact (v BIGINT, day INT) USING parquet PARTITIONED BY (day) "
              f"LOCATION '{root / 'fact'}'")
    spark.sql("ALTER TABLE cdl_fact RECOVER PARTITIONS")
    spark.read.parquet(str(root / "dim")).createOrReplaceTempView("cdl_dim")
    session = dpp.enable(spark)
    assert session.optimizer_hook is not None, session.hook_note
    try:
        yield session
    finally:
        dpp.disable(spark)
        spark.sql("DROP TABLE IF EXISTS cdl_fact")
        spark.catalog.dropTempView("cdl_dim")


def _run(spark: Any, group: str) -> tuple[list[tuple], list[str]]:
    """The query's rows, and the descriptions of the Spark jobs it ran in its job group."""
    sc = spark.sparkContext
    spark.catalog.refreshTable("cdl_fact")   # no listing cached by an earlier run
    sc.setJobGroup(group, "the user's query")
    try:
        rows = sorted(map(tuple, spark.sql(QUERY).collect()))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    store = sc._jsc.sc().statusStore()
    texts = []
    for job in sc.statusTracker().getJobIdsForGroup(group):
        desc = store.job(job).description()
        texts.append(str(desc.get()) if desc.isDefined() else "")
    return rows, texts


def test_kept_partitions_are_listed_without_a_spark_job(spark: Any, data: Any) -> None:
    with spark_conf(spark, OFF):
        expected, sparks = _run(spark, "cdl-spark")
    assert any(t.startswith("Listing leaf files") for t in sparks), sparks   # the control
    data.last_report = None
    got, jobs = _run(spark, "cdl-dpp")
    assert got == expected and len(got) == KEPT
    t = data.last_report.tables[0]
    assert t.pruning == "applied" and t.partitions_kept == KEPT, t
    assert not [x for x in jobs if x.startswith("Listing leaf files")], jobs


@pytest.mark.parametrize("query", [
    "SELECT day, sum(v) FROM cdl_fact GROUP BY day",
    "SELECT f.day, count(*) FROM cdl_fact f JOIN cdl_dim d ON f.v = d.d GROUP BY f.day",
], ids=["no_join", "data_column_join"])
def test_a_table_dpp_leaves_whole_is_listed_by_spark_without_a_job(
        spark: Any, data: Any, query: str) -> None:
    """Spark lists it (PruneFileSourcePartitions over its catalog index), on the driver."""
    global QUERY
    saved, QUERY = QUERY, query
    try:
        with spark_conf(spark, OFF):
            expected, sparks = _run(spark, "cdl-whole-spark")
        assert any(t.startswith("Listing leaf files") for t in sparks), sparks
        got, jobs = _run(spark, "cdl-whole-dpp")
    finally:
        QUERY = saved
    assert got == expected and got
    assert not [x for x in jobs if x.startswith("Listing leaf files")], jobs


@pytest.mark.parametrize("where", ["f.day = 999", "f.day IS NULL", "f.day > 100 AND d.m = 1"],
                         ids=["no_such_day", "null_day", "beyond_last_day"])
def test_a_table_spark_prunes_to_nothing_is_left_to_spark(
        spark: Any, data: Any, where: str) -> None:
    """Spark's own partition filters keep no partition: Spark plans the relation as empty
    (its size is that of nothing), so dpp leaves it to Spark and the report says so."""
    global QUERY
    saved = QUERY
    QUERY = f"SELECT f.day, sum(f.v) FROM cdl_fact f JOIN cdl_dim d ON f.day = d.d " \
            f"WHERE {where} GROUP BY f.day"
    try:
        with spark_conf(spark, OFF):
            expected, _ = _run(spark, "cdl-empty-spark")
        data.last_report = None
        got, _ = _run(spark, "cdl-empty-dpp")
        plan = spark.sql(QUERY)._jdf.queryExecution().optimizedPlan().toString()
    finally:
        QUERY = saved
    assert got == expected == []
    tables = data.last_report.tables
    assert [t.pruning for t in tables] == ["none"], tables
    assert "keep no partition" in (tables[0].reason or ""), tables[0]
    assert "DppFileIndex" not in plan, plan
