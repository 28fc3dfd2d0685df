"""A join's values reach Parquet's row groups (``dpp.runtime.row_groups``): a fact with no partition
column (TPC-DS ``inventory``: one file, one date per row group), registered by path or in
Spark's catalog, joined on a data column to a filtered dimension. Every case is checked
against Spark with every pruning off, on the same files: same rows; the report names the
predicate; Spark's scan of the fact outputs only the rows of the row groups it kept.
"""
from __future__ import annotations

import datetime as dt
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp import DppSession
from dpp.runtime.spark_metrics import file_scans
from tests.conftest import spark_conf

DAYS = 40
ROWS = 50               # rows per day: one row group each
BASE = dt.date(2001, 3, 1)
OFF = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
       "spark.dpp.enabled": "false"}


@pytest.fixture
def inventory(spark, tmp_path):
    """``rg_fact``: one file sorted by day, one row group per day (plus one of NULL days);
    ``rg_cal``: the days, flagged 'y' for days 5-9 and 'r' for days 10-29."""
    fact = tmp_path / "fact"
    fact.mkdir()
    days = [d for d in range(DAYS) for _ in range(ROWS)] + [None] * ROWS
    pq.write_table(pa.table({
        "day": pa.array(days, pa.int32()),
        "sday": pa.array([None if d is None else f"day-{d:04d}" for d in days]),
        "dte": pa.array([None if d is None else BASE + dt.timedelta(days=d) for d in days],
                        pa.date32()),
        "qty": pa.array(list(range(len(days))), pa.int64())}),
        fact / "part-0.parquet", row_group_size=ROWS)
    cal = tmp_path / "cal"
    cal.mkdir()
    flag = ["y" if 5 <= d < 10 else "r" if 10 <= d < 30 else "n" for d in range(DAYS)]
    pq.write_table(pa.table({
        "c_day": pa.array(list(range(DAYS)), pa.int64()),
        "c_sday": [f"day-{d:04d}" for d in range(DAYS)],
        "c_dte": pa.array([BASE + dt.timedelta(days=d) for d in range(DAYS)], pa.date32()),
        "c_flag": flag}), cal / "part-0.parquet")
    spark.read.parquet(str(cal)).createOrReplaceTempView("rg_cal")
    spark.read.parquet(str(fact)).createOrReplaceTempView("rg_plain")
    dpp = DppSession(spark)
    dpp.register_table("rg_fact", str(fact))
    yield dpp, fact
    dpp.close()
    for v in ("rg_cal", "rg_plain"):
        spark.catalog.dropTempView(v)


def _fact_rows_scanned(df, folder) -> int:
    scans = [s for s in file_scans(df) if any(str(folder) in p for p in s.root_paths)]
    assert scans, [s.root_paths for s in file_scans(df)]
    return sum(s.rows for s in scans)


def _spark_rows(spark, sql):
    with spark_conf(spark, OFF):
        return sorted(spark.sql(sql.replace("rg_fact", "rg_plain")).collect())


JOIN = ("SELECT c_flag, count(*) AS n, sum(qty) AS q FROM rg_fact JOIN rg_cal ON {on} "
        "WHERE c_flag = '{flag}' GROUP BY c_flag")


@pytest.mark.parametrize("tz", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("on,flag,expect", [
    ("day = c_day", "y", "`day` IN (5, 6, 7, 8, 9)"),
    ("day = c_day", "r", "`day` BETWEEN 10 AND 29"),
    ("sday = c_sday", "y", "`sday` IN ('day-0005'"),
    ("dte = c_dte", "r", "`dte` BETWEEN DATE '2001-03-11' AND DATE '2001-03-30'"),
], ids=["int-in", "int-range", "string", "date"])
def test_a_join_filters_the_row_groups_of_a_fact_without_partitions(spark, inventory, tz, on,
                                                                    flag, expect):
    dpp, fact = inventory
    sql = JOIN.format(on=on, flag=flag)
    with spark_conf(spark, {"spark.sql.session.timeZone": tz}):
        df = dpp.sql(sql)
        rows = sorted(df.collect())
        assert rows == _spark_rows(spark, sql) and rows[0]["n"] == ROWS * (5 if flag == "y" else 20)
    (t,) = [t for t in dpp.last_report.tables if t.table == "rg_fact"]
    assert t.pruning == "applied" and t.row_group_filter and expect in t.row_group_filter, t
    kept_days = 5 if flag == "y" else 20
    assert _fact_rows_scanned(df, fact) == kept_days * ROWS   # the other row groups skipped


def test_switched_off_the_files_are_handed_whole_and_rows_are_the_same(spark, inventory):
    dpp, fact = inventory
    sql = JOIN.format(on="day = c_day", flag="y")
    with spark_conf(spark, {"spark.dpp.rowGroupFilter.enabled": "false"}):
        df = dpp.sql(sql)
        rows = sorted(df.collect())
    assert rows == _spark_rows(spark, sql)
    (t,) = [t for t in dpp.last_report.tables if t.table == "rg_fact"]
    assert t.row_group_filter is None
    # only Spark's own IS NOT NULL of the join key skips a row group: the NULL days'
    assert _fact_rows_scanned(df, fact) == DAYS * ROWS


@pytest.mark.parametrize("sql,scanned", [
    # the fact is the preserved side: every row of it is needed
    ("SELECT count(*) AS n, count(c_day) AS m FROM rg_fact LEFT JOIN rg_cal "
     "ON day = c_day AND c_flag = 'y'", DAYS + 1),
    # an unfiltered dimension: nothing to filter by (Spark's IS NOT NULL skips the NULLs)
    ("SELECT count(*) AS n FROM rg_fact JOIN rg_cal ON day = c_day", DAYS),
    # the NULL days match nothing, and are counted where the query keeps them
    ("SELECT count(*) AS n FROM rg_fact WHERE day IS NULL OR day IN "
     "(SELECT c_day FROM rg_cal WHERE c_flag = 'y')", DAYS + 1),
], ids=["preserved-side", "unfiltered", "or-null"])
def test_where_no_join_may_filter_the_fact_it_is_read_whole(spark, inventory, sql, scanned):
    dpp, fact = inventory
    df = dpp.sql(sql)
    assert sorted(df.collect()) == _spark_rows(spark, sql)
    assert not [t for t in dpp.last_report.tables
                if t.table == "rg_fact" and t.row_group_filter], dpp.last_report.tables
    assert _fact_rows_scanned(df, fact) == scanned * ROWS


def test_a_semi_join_filters_row_groups_and_keeps_spark_rows(spark, inventory):
    dpp, fact = inventory
    sql = ("SELECT count(*) AS n, sum(qty) AS q FROM rg_fact "
           "WHERE day IN (SELECT c_day FROM rg_cal WHERE c_flag = 'r')")
    df = dpp.sql(sql)
    assert sorted(df.collect()) == _spark_rows(spark, sql)
    assert _fact_rows_scanned(df, fact) == 20 * ROWS


def test_an_unpartitioned_catalog_table_is_read_by_its_files_with_the_filter(spark, inventory):
    """Spark's catalog, plain Parquet, no partitions: read by its files (the catalog's
    schema, sized by the catalog's estimate) once it is larger than Spark broadcasts."""
    dpp, fact = inventory
    name = f"rg_cat_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{fact.as_uri()}'")
    try:
        sql = JOIN.format(on="day = c_day", flag="r").replace("rg_fact", name)
        with spark_conf(spark, OFF):
            want = sorted(spark.sql(sql).collect())
        # below the broadcast threshold a table is a dimension: left to Spark
        session = DppSession(spark)
        try:
            assert sorted(session.sql(sql).collect()) == want
            assert not [t for t in session.last_report.tables if t.table == name]
        finally:
            session.close()
        with spark_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": "1k"}):
            session = DppSession(spark)
            try:
                df = session.sql(sql)
                assert sorted(df.collect()) == want
                (t,) = [t for t in session.last_report.tables if t.table == name]
                assert t.row_group_filter == "`day` BETWEEN 10 AND 29", t
                assert _fact_rows_scanned(df, fact) == 20 * ROWS
                # cached: its cache is faster than its files, it stays Spark's
                spark.catalog.cacheTable(name)
                try:
                    assert sorted(session.sql(sql).collect()) == want
                    assert not [t for t in session.last_report.tables if t.table == name]
                finally:
                    spark.catalog.uncacheTable(name)
            finally:
                session.close()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
