"""Table shapes are kept per session and dropped when Spark drops its own object for the table.

A second query over the same tables asks Spark nothing but the token lookups; a replaced view,
an altered or re-created table is read again; and a catalog table's partitions are fetched for
every query, so a partition added between queries (from this or another session) is never
missed.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp import DppSession


@pytest.fixture
def dpp(spark):
    d = DppSession(spark)
    yield d
    d.close()


def _dim(spark, tmp_path, name, rows):
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(pa.table({"d_k": pa.array([r[0] for r in rows], pa.int32()),
                             "d_name": [r[1] for r in rows]}), folder / "d.parquet")
    spark.read.parquet(str(folder)).createOrReplaceTempView(name)


def _catalog_fact(spark, name, parts):
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (v INT, k INT) USING parquet PARTITIONED BY (k)")
    for p in parts:
        spark.sql(f"INSERT INTO {name} PARTITION (k={p}) VALUES ({p * 10}), ({p * 10 + 1})")


Q = "SELECT sum(v) AS s, count(*) AS n FROM {f} JOIN sc_dim ON k = d_k WHERE d_name = 'x'"


def test_second_query_uses_the_kept_shapes_and_stays_right(spark, tmp_path, dpp):
    _catalog_fact(spark, "sc_fact", range(4))
    _dim(spark, tmp_path, "sc_dim", [(1, "x"), (2, "y"), (3, "x")])
    try:
        q = Q.format(f="sc_fact")
        first = dpp.collect(q)
        misses = dpp.catalog.schemas.misses
        second = dpp.collect(q)
        assert first == second and first[0]["n"] == 4 and first[0]["s"] == 10 + 11 + 30 + 31
        assert dpp.catalog.schemas.misses == misses          # nothing asked again
        assert dpp.catalog.schemas.hits >= 2
        assert dpp.last_report.tables[0].partitions_kept == 2
    finally:
        spark.sql("DROP TABLE IF EXISTS sc_fact")
        spark.catalog.dropTempView("sc_dim")


def test_partitions_added_between_queries_are_read(spark, tmp_path, dpp):
    _catalog_fact(spark, "sc_fact2", range(3))
    _dim(spark, tmp_path, "sc_dim", [(1, "x"), (5, "x"), (6, "x")])
    try:
        q = Q.format(f="sc_fact2")
        assert dpp.collect(q)[0]["n"] == 2
        # this session, then another session of the same application
        spark.sql("INSERT INTO sc_fact2 PARTITION (k=5) VALUES (50)")
        spark.newSession().sql("INSERT INTO sc_fact2 PARTITION (k=6) VALUES (60), (61)")
        got = dpp.collect(q)[0]
        expected = spark.sql(q).collect()[0]
        assert (got["n"], got["s"]) == (expected["n"], expected["s"]) == (5, 10 + 11 + 50 + 60 + 61)
        assert dpp.last_report.tables[0].partitions_kept == 3
    finally:
        spark.sql("DROP TABLE IF EXISTS sc_fact2")
        spark.catalog.dropTempView("sc_dim")


def test_replaced_view_and_recreated_table_are_read_again(spark, tmp_path, dpp):
    _catalog_fact(spark, "sc_fact3", range(3))
    _dim(spark, tmp_path, "sc_dim", [(1, "x")])
    try:
        assert dpp.collect(Q.format(f="sc_fact3"))[0]["n"] == 2
        # the view now has another column layout: the analysis must see the new one
        folder = tmp_path / "sc_dim2"
        folder.mkdir()
        pq.write_table(pa.table({"d_name": ["x", "x"], "d_k": pa.array([0, 2], pa.int32()),
                                 "extra": [1, 2]}), folder / "d.parquet")
        spark.read.parquet(str(folder)).createOrReplaceTempView("sc_dim")
        q = Q.format(f="sc_fact3") + " AND extra > 0"
        assert dpp.collect(q)[0]["n"] == 4
        assert dpp.last_report.tables[0].partitions_kept == 2
        # the table re-created with a string partition column
        spark.sql("DROP TABLE sc_fact3")
        spark.sql("CREATE TABLE sc_fact3 (v INT, k STRING) USING parquet PARTITIONED BY (k)")
        spark.sql("INSERT INTO sc_fact3 PARTITION (k='2') VALUES (7)")
        got = dpp.collect(q)
        assert got == spark.sql(q).collect() and got[0]["n"] == 1
    finally:
        spark.sql("DROP TABLE IF EXISTS sc_fact3")
        spark.catalog.dropTempView("sc_dim")
