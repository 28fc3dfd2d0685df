"""A join that compares the fact's column with the dimension's (``<``, ``<=``, ``>``, ``>=``,
``BETWEEN``) prunes by the build key's bounds.

``sales JOIN periods ON sales.day BETWEEN periods.first AND periods.last`` keeps only the days
from the smallest ``first`` to the largest ``last`` of the periods the query keeps: a row
beyond them compares false with every period. Each case runs against Spark with every
pruning off on the same folders (a NULL day partition, a NULL bound, an empty build side),
on a ``spark.read.parquet`` view and a catalog table, as SQL and as DataFrame code, under a
non-UTC session time zone with ANSI mode on.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial_support import OFF, enabled, int_partitions
from tests.conftest import spark_conf

DAYS = 10                      # sales partitions day=0..9 and day=__HIVE_DEFAULT_PARTITION__
USER = {"spark.sql.session.timeZone": "Asia/Kolkata", "spark.sql.ansi.enabled": "true"}
# name, first, last, keep, big (a bigint bound)
PERIODS = [("a", 1, 4, 1, 3), ("b", 7, 8, 0, 5_000_000_000), ("c", 6, 6, 1, None),
           ("n", None, None, 1, None)]


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("compare_keys")
    sales = root / "sales"
    int_partitions(sales, "day", [*range(DAYS), None])
    periods = root / "periods"
    periods.mkdir()
    cols = list(zip(*PERIODS))
    pq.write_table(pa.table({"name": list(cols[0]), "first": pa.array(cols[1], pa.int32()),
                             "last": pa.array(cols[2], pa.int32()),
                             "keep": pa.array(cols[3], pa.int32()),
                             "big": pa.array(cols[4], pa.int64())}),
                   periods / "part-0.parquet")
    dated = root / "dated"
    for i in range(6):
        d = dt.date(2024, 2, 27) + dt.timedelta(days=i)
        part = dated / f"dt={d.isoformat()}"
        part.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([i], pa.int64())}), part / "part-0.parquet")
    until = root / "until"
    until.mkdir()
    pq.write_table(pa.table({"until": pa.array([dt.date(2024, 2, 29), dt.date(2024, 3, 10)]),
                             "tag": ["leap", "later"]}), until / "part-0.parquet")
    spark.read.parquet(str(sales)).createOrReplaceTempView("ck_sales")
    spark.read.parquet(str(periods)).createOrReplaceTempView("ck_periods")
    spark.read.parquet(str(dated)).createOrReplaceTempView("ck_dated")
    spark.read.parquet(str(until)).createOrReplaceTempView("ck_until")
    spark.sql("DROP TABLE IF EXISTS ck_sales_cat")
    spark.sql(f"CREATE TABLE ck_sales_cat (amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{sales}'")
    spark.sql("ALTER TABLE ck_sales_cat RECOVER PARTITIONS")
    try:
        with spark_conf(spark, USER), enabled(spark, root) as session:
            yield {"session": session, "periods": periods}
    finally:
        spark.sql("DROP TABLE IF EXISTS ck_sales_cat")
        for v in ("ck_sales", "ck_periods", "ck_dated", "ck_until"):
            spark.catalog.dropTempView(v)


def _sql(where: str, on: str, how: str = "JOIN") -> Callable[[Any, str, str], Any]:
    def job(spark: Any, fact: str, form: str) -> Any:
        if form == "sql":
            return spark.sql(f"SELECT f.day, f.amount, p.name FROM {fact} f {how} "
                             f"(SELECT * FROM ck_periods WHERE {where}) p ON {on}")
        f = spark.table(fact).alias("f")
        p = spark.table("ck_periods").where(where).alias("p")
        kind = {"JOIN": "inner", "LEFT JOIN": "left", "RIGHT JOIN": "right"}[how]
        from pyspark.sql import functions as F
        return f.join(p, F.expr(on), kind).select("f.day", "f.amount", "p.name")
    return job


# query -> (job, the days kept of DAYS + 1)
PRUNING: dict[str, tuple[Callable[[Any, str, str], Any], int]] = {
    # day <= 4
    "le": (_sql("name = 'a'", "f.day <= p.last"), 5),
    # 7 > day (the dimension's operand first): day <= 6
    "gt_reversed": (_sql("name = 'b'", "p.first > f.day"), 7),
    # BETWEEN over periods a, c and n (n's NULL bounds compare with nothing): day 1..6
    "between": (_sql("keep = 1", "f.day BETWEEN p.first AND p.last"), 6),
    # day > 7
    "gt": (_sql("name = 'b'", "f.day > p.first"), 2),
    # an equi-key and a comparison: day 1 or 6, and day <= 6
    "eq_and_le": (_sql("keep = 1", "f.day = p.first AND f.day <= p.last"), 2),
    # a bigint bound of an int column: day <= 3
    "widened": (_sql("name = 'a'", "f.day <= p.big"), 4),
}


def _run(spark: Any, session: Any, job: Callable[[Any, str, str], Any], fact: str,
         form: str) -> tuple[list, list, Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, job(spark, fact, form).collect()), key=repr)
    session.last_report = None
    got = sorted(map(tuple, job(spark, fact, form).collect()), key=repr)
    return expected, got, session.last_report


def _kept(report: Any) -> list[int]:
    assert report is not None, "no report"
    return [t.partitions_kept for t in report.tables if t.pruning == "applied"]


@pytest.mark.parametrize("fact", ["ck_sales", "ck_sales_cat"])
@pytest.mark.parametrize("form", ["sql", "dataframe"])
@pytest.mark.parametrize("query", sorted(PRUNING))
def test_a_comparison_prunes_the_days_beyond_the_bound(
        spark: Any, data: dict[str, Any], query: str, form: str, fact: str) -> None:
    job, days = PRUNING[query]
    expected, got, report = _run(spark, data["session"], job, fact, form)
    assert got == expected and expected, (got, expected)
    assert _kept(report) == [days], (report.tables, report.analysis_notes)


@pytest.mark.parametrize("fact", ["ck_sales", "ck_sales_cat"])
@pytest.mark.parametrize("where", ["name = 'none'", "name = 'n'"])
def test_no_bound_keeps_no_day(spark: Any, data: dict[str, Any], fact: str,
                               where: str) -> None:
    """An empty build side, and one whose only bound is NULL: no row compares true.

    Spark's adaptive execution replaces a join whose build side it has seen empty with an
    empty relation, and then never scans the fact (no report at all); whether it sees that
    before the scan starts is a race, so that rule is switched off here to reach the loader."""
    no_shortcut = {"spark.sql.adaptive.optimizer.excludedRules":
                   "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"}
    with spark_conf(spark, no_shortcut):
        expected, got, report = _run(spark, data["session"], _sql(where, "f.day <= p.last"),
                                     fact, "sql")
    assert got == expected == []
    assert report is not None and all(k == 0 for k in _kept(report)), report.tables


@pytest.mark.parametrize("form", ["sql", "dataframe"])
def test_the_preserved_side_of_an_outer_join_keeps_every_day(
        spark: Any, data: dict[str, Any], form: str) -> None:
    expected, got, report = _run(spark, data["session"],
                                 _sql("name = 'a'", "f.day <= p.last", "LEFT JOIN"),
                                 "ck_sales", form)
    assert got == expected and len(expected) == 2 * (DAYS + 1)
    assert not _kept(report) if report is not None else True


def test_the_other_side_of_a_right_join_is_pruned(spark: Any, data: dict[str, Any]) -> None:
    expected, got, report = _run(spark, data["session"],
                                 _sql("name = 'a'", "f.day <= p.last", "RIGHT JOIN"),
                                 "ck_sales", "sql")
    assert got == expected and expected
    assert _kept(report) == [5], report.tables


def test_a_data_column_gets_a_row_filter(spark: Any, data: dict[str, Any]) -> None:
    """``f.amount < p.first * 100``: a row filter on the data column (``amount <= 399``, the
    strict bound of an integer as the inclusive one below it), the rows Spark's."""
    job = _sql("name = 'b'", "f.amount < p.first * 100")
    expected, got, report = _run(spark, data["session"], job, "ck_sales", "sql")
    assert got == expected and expected
    filters = [t.row_group_filter for t in report.tables if t.row_group_filter]
    assert filters == ["`amount` <= 699"], (report.tables, report.analysis_notes)


def test_a_nondeterministic_build_side_prunes_nothing(spark: Any,
                                                       data: dict[str, Any]) -> None:
    """(``rand(5) < 0.5``: Spark folds a test rand always passes, ``rand(5) < 2``, to true.)"""
    job = _sql("rand(5) < 0.5 AND name = 'a'", "f.day <= p.last")
    expected, got, report = _run(spark, data["session"], job, "ck_sales", "sql")
    assert got == expected
    assert report is not None and not _kept(report), report.tables
    assert any("not deterministic" in n for n in report.analysis_notes), report.analysis_notes


@pytest.mark.parametrize("tz", ["Asia/Kolkata", "America/Los_Angeles"])
def test_a_date_partition_is_cut_at_the_last_date(spark: Any, data: dict[str, Any],
                                                  tz: str) -> None:
    """``f.dt <= u.until`` over a leap day, and ``f.dt < u.until`` (the day before)."""
    for op, days in (("<=", 3), ("<", 2)):
        def job(spark: Any, fact: str, form: str, op: str = op) -> Any:
            return spark.sql(f"SELECT f.dt, f.amount, u.tag FROM {fact} f JOIN ck_until u "
                             f"ON f.dt {op} u.until WHERE u.tag = 'leap'")
        with spark_conf(spark, {"spark.sql.session.timeZone": tz}):
            expected, got, report = _run(spark, data["session"], job, "ck_dated", "sql")
        assert got == expected and len(expected) == days, (op, expected)
        assert _kept(report) == [days], (op, report.tables)


@pytest.mark.parametrize("cache", [False, True])
def test_a_dimension_rewritten_between_actions_gives_sparks_rows(
        spark: Any, data: dict[str, Any], tmp_path: Any, cache: bool) -> None:
    """The bound moves (a file rewritten, the folder read again): each action prunes by the
    bound it reads, with the filter cache on and off."""
    folder = tmp_path / "bounds"
    folder.mkdir()
    kept = []
    try:
        for last in (2, 8, 0):
            pq.write_table(pa.table({"last": pa.array([last], pa.int32())}),
                           folder / "part-0.parquet")
            spark.read.parquet(str(folder)).createOrReplaceTempView("ck_bounds")
            text = "SELECT f.day, f.amount FROM ck_sales f JOIN ck_bounds b ON f.day <= b.last"
            with spark_conf(spark, OFF):
                expected = sorted(map(tuple, spark.sql(text).collect()))
            data["session"].last_report = None
            with spark_conf(spark, {"spark.dpp.filterCache.enabled": str(cache).lower()}):
                got = sorted(map(tuple, spark.sql(text).collect()))
            assert got == expected and expected, (last, got, expected)
            kept += _kept(data["session"].last_report)
        assert kept == [3, 9, 1], kept
    finally:
        spark.catalog.dropTempView("ck_bounds")
