"""A catalog relation Spark's own static partition filters leave empty is left to Spark.

The optimizer hook tests every partition name of a catalog table against the query's
partition filters (Spark's evaluation, on names only) to find relations Spark plans as empty.
The names are tested a batch at a time and the test stops at the first kept partition: here
a table of more partitions than one batch, queried for a partition in the first batch, in a
later one, at the very end, and for none — rows against Spark with every pruning off, and the
report saying which relations were left to Spark.
"""
from __future__ import annotations

import time
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

PARTITIONS = 1100          # past two batches of names (512 a batch)
EMPTY = "keep no partition of the table"
OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}


@pytest.fixture(scope="module")
def star(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("static_emptiness")
    fact = root / "fact"
    template = root / "template.parquet"
    pq.write_table(pa.table({"v": pa.array([1, 2], pa.int64())}), template)
    for p in range(PARTITIONS):
        folder = fact / f"p={p}"
        folder.mkdir(parents=True)
        (folder / "part-0.parquet").hardlink_to(template)
    spark.sql("DROP TABLE IF EXISTS se_fact")
    spark.sql(f"CREATE TABLE se_fact (v BIGINT, p INT) USING parquet PARTITIONED BY (p) "
              f"LOCATION '{fact.as_uri()}'")
    spark.sql("ALTER TABLE se_fact RECOVER PARTITIONS")
    spark.createDataFrame([(k, k % 2) for k in range(0, PARTITIONS, 7)], "k INT, odd INT") \
        .createOrReplaceTempView("se_dim")
    session = dpp.enable(spark)
    assert session.optimizer_hook is not None, session.hook_note
    try:
        yield {"session": session}
    finally:
        dpp.disable(spark)
        spark.sql("DROP TABLE IF EXISTS se_fact")
        spark.catalog.dropTempView("se_dim")


def _run(spark: Any, session: Any, query: str) -> tuple[list[tuple], Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.sql(query).collect()))
    session.last_report = None
    got = sorted(map(tuple, spark.sql(query).collect()))
    assert got == expected, (query, got, expected)
    deadline = time.monotonic() + 30   # a scan Spark skips is reported at the execution's end
    while session.last_report is None and time.monotonic() < deadline:
        time.sleep(0.1)
    return got, session.last_report


@pytest.mark.parametrize("where", ["f.p = 0", "f.p = 693", "f.p = 1099", "f.p >= 1050",
                                   "f.p IN (5, 1092)"])
def test_a_relation_spark_keeps_partitions_of_is_pruned_by_dpp(spark: Any, star: dict[str, Any],
                                                              where: str) -> None:
    query = (f"SELECT f.p, sum(f.v) FROM se_fact f JOIN se_dim d ON f.p = d.k "
             f"WHERE d.odd = 1 AND {where} GROUP BY f.p")
    rows, report = _run(spark, star["session"], query)
    assert report is not None and report.kind == "plan", report
    assert report.tables and {t.table for t in report.tables} == {"se_fact"}, report.tables
    assert not any(EMPTY in (t.reason or "") for t in report.tables), report.tables


@pytest.mark.parametrize("where", ["f.p = 5000", "f.p < 0", "f.p IS NULL"])
def test_a_relation_spark_keeps_no_partition_of_is_left_to_spark(spark: Any,
                                                                 star: dict[str, Any],
                                                                 where: str) -> None:
    query = (f"SELECT f.p, sum(f.v) FROM se_fact f JOIN se_dim d ON f.p = d.k "
             f"WHERE d.odd = 1 AND {where} GROUP BY f.p")
    rows, report = _run(spark, star["session"], query)
    assert rows == []
    assert report is not None, "no report"
    assert any(EMPTY in (t.reason or "") for t in report.tables), report.tables
