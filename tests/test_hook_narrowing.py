"""A build side that filters nothing, narrowed by a join above it, through the optimizer hook.

TPC-DS q2's shape: the sales (partitioned by day) join an unfiltered calendar inside a
weekly aggregate, and the aggregate joins a calendar filtered to one year on the week. A
sales row whose day falls in another week feeds only groups that join nothing, so the hook
builds ``calendar ⋉ filtered calendar`` on the week and reads that year's days only. Every
case is compared with Spark with all pruning off on the same folders; the shapes where the
narrowing could drop rows (the aggregate on the preserved side of an outer join, a side
above drawn at random) must read every day.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.enable import session_of
from tests.adversarial_support import OFF, enabled
from tests.conftest import spark_conf

DAYS = 28   # four weeks; year 1 is week 0 (days 0-6)


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("hook_narrowing")
    for day in range(DAYS):
        folder = root / "sales" / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([day, day + 100], pa.int64())}),
                       folder / "part-0.parquet")
    (root / "cal").mkdir()
    pq.write_table(pa.table({"c_day": pa.array(range(DAYS), pa.int32()),
                             "c_week": pa.array([d // 7 for d in range(DAYS)], pa.int32()),
                             "c_year": pa.array([1 if d < 7 else 2 for d in range(DAYS)],
                                                pa.int32())}),
                   root / "cal" / "part-0.parquet")
    for name in ("sales", "cal"):
        spark.read.parquet(str(root / name)).createOrReplaceTempView(f"nr_{name}")
    try:
        with enabled(spark, root):
            yield root
    finally:
        for name in ("sales", "cal"):
            spark.catalog.dropTempView(f"nr_{name}")


WEEKLY = ("WITH weekly AS (SELECT c_week, sum(amount) AS total, count(*) AS n "
          "FROM nr_sales JOIN nr_cal ON day = c_day GROUP BY c_week) ")


def _days_read(spark: Any, job: Any) -> tuple[list[tuple], Optional[int]]:
    """The job's rows through dpp, checked against Spark with pruning off, and the days of
    ``sales`` dpp kept (None: not pruned)."""
    with spark_conf(spark, OFF):
        want = sorted(tuple(r) for r in job().collect())
    session_of(spark).last_report = None
    got = sorted(tuple(r) for r in job().collect())
    assert got == want
    report = session_of(spark).last_report
    kept = [t.partitions_kept for t in (report.tables if report else [])
            if t.location and t.location.endswith("sales") and t.pruning == "applied"
            and t.partitions_kept < t.partitions_total]
    return want, (kept[0] if kept else None)


def test_a_weekly_aggregate_joined_to_one_year_reads_that_years_days(spark: Any,
                                                                       data: Path) -> None:
    sql = (WEEKLY + "SELECT w.c_week, w.total, w.n FROM weekly w JOIN nr_cal y "
           "ON w.c_week = y.c_week WHERE y.c_year = 1")
    rows, kept = _days_read(spark, lambda: spark.sql(sql))
    assert rows and {r[0] for r in rows} == {0}
    assert kept == 7
    report = session_of(spark).last_report
    assert any(f.build_column and f.build_column.endswith("c_day") for f in report.filters)
    assert "nr_cal.c_day ⋉ (w.c_week = y.c_week)" in report.query_text, report.query_text


def test_the_same_job_written_with_dataframes(spark: Any, data: Path) -> None:
    def job() -> Any:
        from pyspark.sql import functions as F

        sales, cal = spark.table("nr_sales"), spark.table("nr_cal")
        weekly = (sales.join(cal, sales["day"] == cal["c_day"]).groupBy("c_week")
                  .agg(F.sum("amount").alias("total")))
        year = spark.table("nr_cal").where("c_year = 1").select(
            F.col("c_week").alias("y_week"))
        return weekly.join(year, weekly["c_week"] == year["y_week"])

    rows, kept = _days_read(spark, job)
    assert rows and kept == 7


@pytest.mark.parametrize("shape", [
    # every week comes out of a left join that keeps the aggregate's rows
    "SELECT w.c_week, w.total, y.c_year FROM weekly w LEFT JOIN "
    "(SELECT c_week, c_year FROM nr_cal WHERE c_year = 1) y ON w.c_week = y.c_week",
    # the side above keeps rows at random: run again for its keys it could keep others
    "SELECT w.c_week, w.total FROM weekly w JOIN "
    "(SELECT c_week FROM nr_cal WHERE c_year = 1 AND rand(3) < 0.99) y ON w.c_week = y.c_week",
    # the week is an aggregate's result, not a grouping key
    "SELECT w.total FROM (SELECT max(c_week) AS c_week, sum(amount) AS total FROM nr_sales "
    "JOIN nr_cal ON day = c_day GROUP BY c_year) w JOIN nr_cal y ON w.c_week = y.c_week "
    "WHERE y.c_year = 1",
])
def test_no_narrowing_where_it_could_drop_rows(spark: Any, data: Path, shape: str) -> None:
    sql = shape if shape.startswith("SELECT w.total FROM (") else WEEKLY + shape
    rows, kept = _days_read(spark, lambda: spark.sql(sql))
    assert rows and kept is None
