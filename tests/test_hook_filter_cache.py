"""The filter cache on the optimizer hook's build sides.

A build side the hook cuts from Spark's plan has no SQL text; it is keyed by that plan made
canonical, the files it reads (path, size, modification time) and the session's rules. So
the same build side of a later query is served from the cache, and anything that could change
its keys — another predicate, a view redefined, a file added, local rows, another time zone —
is a miss. Every answer is checked against Spark with every pruning off.
"""
from __future__ import annotations

from pathlib import Path
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
DAYS = 10


@pytest.fixture(scope="module")
def star(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hook_filter_cache")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"item": pa.array(range(5), pa.int32()),
                                 "amount": pa.array([day * 10 + i for i in range(5)],
                                                    pa.int64())}),
                       folder / "part-0.parquet")
    cal = root / "cal"
    cal.mkdir()
    pq.write_table(pa.table({"d": pa.array([1, 2, 3], pa.int32()),
                             "tag": pa.array(["x", "x", "y"])}), cal / "part-0.parquet")
    with spark_conf(spark, {"spark.dpp.tables.fc_sales": str(sales),
                            "spark.dpp.filterCache.enabled": "true"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session, "sales": sales, "cal": cal}
        finally:
            dpp.disable(spark)
            for v in ("fc_cal", "fc_local"):
                spark.catalog.dropTempView(v)


def _run(spark: Any, session: Any, query: str) -> tuple[list[tuple], Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.sql(query).collect()))
    session.last_report = None
    got = sorted(map(tuple, spark.sql(query).collect()))
    assert got == expected, (query, got, expected)
    report = session.last_report
    assert report is not None and report.kind == "plan", report
    return got, report


def _kept(report: Any) -> int:
    (t,) = [t for t in report.tables if t.table == "fc_sales"]
    assert t.pruning == "applied", t
    return t.partitions_kept


def _hits(report: Any) -> list[bool]:
    return [f.cache_hit for f in report.filters]


Q = "SELECT f.day, sum(f.amount) FROM fc_sales f JOIN fc_cal c ON f.day = c.d " \
    "WHERE c.tag = '{tag}' GROUP BY f.day"


def test_the_same_build_side_is_served_from_the_cache(spark: Any, star: dict[str, Any]
                                                      ) -> None:
    spark.read.parquet(str(star["cal"])).createOrReplaceTempView("fc_cal")
    rows1, first = _run(spark, star["session"], Q.format(tag="x"))
    rows2, second = _run(spark, star["session"], Q.format(tag="x"))
    assert rows1 == rows2 and len(rows1) == 2
    assert _hits(first) == [False] and _hits(second) == [True], (first.filters, second.filters)
    assert _kept(first) == _kept(second) == 2


def test_another_predicate_or_a_redefined_view_is_a_miss(spark: Any, star: dict[str, Any]
                                                         ) -> None:
    spark.read.parquet(str(star["cal"])).createOrReplaceTempView("fc_cal")
    _run(spark, star["session"], Q.format(tag="x"))
    rows, report = _run(spark, star["session"], Q.format(tag="y"))
    assert _hits(report) == [False] and len(rows) == 1 and _kept(report) == 1
    # the same name and text, another definition: its plan differs, so does its entry
    spark.read.parquet(str(star["cal"])).where("d > 1").createOrReplaceTempView("fc_cal")
    rows, report = _run(spark, star["session"], Q.format(tag="x"))
    assert _hits(report) == [False] and [r[0] for r in rows] == [2] and _kept(report) == 1


def test_a_file_added_to_the_dimension_is_a_miss(spark: Any, star: dict[str, Any],
                                                 tmp_path: Path) -> None:
    cal = tmp_path / "cal"
    cal.mkdir()
    pq.write_table(pa.table({"d": pa.array([1], pa.int32()), "tag": pa.array(["x"])}),
                   cal / "part-0.parquet")
    spark.read.parquet(str(cal)).createOrReplaceTempView("fc_cal")
    rows, _ = _run(spark, star["session"], Q.format(tag="x"))
    assert [r[0] for r in rows] == [1]
    pq.write_table(pa.table({"d": pa.array([7], pa.int32()), "tag": pa.array(["x"])}),
                   cal / "part-1.parquet")
    spark.read.parquet(str(cal)).createOrReplaceTempView("fc_cal")   # listed afresh
    rows, report = _run(spark, star["session"], Q.format(tag="x"))
    assert [r[0] for r in rows] == [1, 7], rows
    assert _hits(report) == [False] and _kept(report) == 2


def test_local_rows_are_never_cached(spark: Any, star: dict[str, Any]) -> None:
    q = ("SELECT f.day, f.amount FROM fc_sales f JOIN fc_local c ON f.day = c.d "
         "WHERE c.tag = 'x'")
    for days in ([3, 4], [5]):
        spark.createDataFrame([(d, "x") for d in days] + [(9, "y")], "d INT, tag STRING") \
            .createOrReplaceTempView("fc_local")
        rows, report = _run(spark, star["session"], q)
        assert sorted({r[0] for r in rows}) == days
        assert not any(_hits(report)), report.filters


def test_another_time_zone_is_a_miss(spark: Any, star: dict[str, Any]) -> None:
    spark.read.parquet(str(star["cal"])).createOrReplaceTempView("fc_cal")
    _run(spark, star["session"], Q.format(tag="x"))
    with spark_conf(spark, {"spark.sql.session.timeZone": "America/Los_Angeles"}):
        _rows, report = _run(spark, star["session"], Q.format(tag="x"))
    assert _hits(report) == [False]


def test_switched_off_it_builds_every_time(spark: Any, star: dict[str, Any]) -> None:
    spark.read.parquet(str(star["cal"])).createOrReplaceTempView("fc_cal")
    with spark_conf(spark, {"spark.dpp.filterCache.enabled": "false"}):
        for _ in range(2):
            _rows, report = _run(spark, star["session"], Q.format(tag="x"))
            assert _hits(report) == [False]


def test_a_function_defined_again_under_its_name_is_a_miss(spark: Any, star: dict[str, Any]
                                                           ) -> None:
    """A build side that calls a user-defined function is never cached: its plan names the
    function, not its code, and the old keys would drop the new function's rows."""
    spark.read.parquet(str(star["cal"])).createOrReplaceTempView("fc_cal")
    q = ("SELECT f.day, sum(f.amount) FROM fc_sales f JOIN fc_cal c ON f.day = c.d "
         "WHERE fc_pick(c.tag) GROUP BY f.day")
    for tag, days in (("x", [1, 2]), ("y", [3])):
        spark.udf.register("fc_pick", lambda t, tag=tag: t == tag, "boolean")
        rows, report = _run(spark, star["session"], q)
        assert [r[0] for r in rows] == days, rows
        assert _hits(report) == [False] and _kept(report) == len(days)


def test_a_sql_text_build_query_that_calls_an_unknown_function_is_not_cached() -> None:
    from dpp.analysis.functions import calls_unknown_function

    assert calls_unknown_function("SELECT d.k AS dpp_key FROM d WHERE fc_pick(d.tag)")
    assert calls_unknown_function("SELECT d.k AS dpp_key FROM d WHERE d.tag = 'x' AND (")
    assert not calls_unknown_function("SELECT d.k AS dpp_key FROM d WHERE upper(d.tag) = 'X' "
                                      "AND year(d.t) = 2000")
