"""A small table that filters nothing is read whole for its keys, and prunes by them.

``sales JOIN days_to_load ON sales.day = days_to_load.day`` has no predicate on the lookup
table, yet its rows list the days the job wants: Spark's own pruning (which asks for a
selective predicate) and the "filters nothing" rule both read every partition of ``sales``.
A build side of at most 1 MiB of files (``WHOLE_BUILD_BYTES``) is now built for a partition
column whatever it filters; a larger one is still taken to hold every key. Each case runs
against Spark with every pruning off on the same folders (a NULL day partition, a lookup day
with no sales, a NULL lookup key), on a ``spark.read.parquet`` view and a catalog table, as
SQL and as DataFrame code.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.analysis.plan_pairs import WHOLE_BUILD_BYTES
from dpp.core.refusals import Code
from tests.adversarial_support import OFF, enabled, int_partitions
from tests.conftest import spark_conf

DAYS = 10                      # sales partitions day=0..9 and day=__HIVE_DEFAULT_PARTITION__
WANTED = (2, 5, 40)            # the lookup table's days: 40 has no sales; a NULL row too
BIG_DAYS = (1, 3)              # the large table's days: it would prune, but is not read


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("whole_small")
    sales = root / "sales"
    int_partitions(sales, "day", [*range(DAYS), None])
    wanted = root / "wanted"
    wanted.mkdir()
    pq.write_table(pa.table({"day": pa.array([*WANTED, None], pa.int32()),
                             "label": ["a", "b", "c", "d"]}), wanted / "part-0.parquet")
    every = root / "every"
    every.mkdir()
    pq.write_table(pa.table({"day": pa.array(range(DAYS), pa.int32())}),
                   every / "part-0.parquet")
    # over WHOLE_BUILD_BYTES of incompressible bytes: its two days are never collected
    big = root / "big"
    big.mkdir()
    rows = 2 * WHOLE_BUILD_BYTES // 64
    pq.write_table(pa.table({
        "day": pa.array([BIG_DAYS[i % 2] for i in range(rows)], pa.int32()),
        "label": ["big"] * rows,
        "pad": pa.array([os.urandom(64) for _ in range(rows)], pa.binary())}),
        big / "part-0.parquet", compression="none")
    assert sum(f.stat().st_size for f in big.iterdir()) > WHOLE_BUILD_BYTES
    spark.read.parquet(str(sales)).createOrReplaceTempView("ws_sales")
    for name, folder in (("ws_wanted", wanted), ("ws_every", every), ("ws_big", big)):
        spark.read.parquet(str(folder)).createOrReplaceTempView(name)
    spark.sql("DROP TABLE IF EXISTS ws_sales_cat")
    spark.sql("DROP TABLE IF EXISTS ws_wanted_cat")
    spark.sql(f"CREATE TABLE ws_sales_cat (amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{sales}'")
    spark.sql("ALTER TABLE ws_sales_cat RECOVER PARTITIONS")
    spark.sql(f"CREATE TABLE ws_wanted_cat (day INT, label STRING) USING parquet "
              f"LOCATION '{wanted}'")
    try:
        with enabled(spark, root) as session:
            yield {"session": session}
    finally:
        for t in ("ws_sales_cat", "ws_wanted_cat"):
            spark.sql(f"DROP TABLE IF EXISTS {t}")
        for v in ("ws_sales", "ws_wanted", "ws_every", "ws_big"):
            spark.catalog.dropTempView(v)


def _join(spark: Any, fact: str, dim: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT f.day, f.amount, d.* FROM {fact} f JOIN {dim} d "
                         f"ON f.day = d.day")
    f, d = spark.table(fact).alias("f"), spark.table(dim).alias("d")
    return f.join(d, f["day"] == d["day"]).select("f.day", "f.amount", "d.day")


def _in(spark: Any, fact: str, dim: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT day, amount FROM {fact} WHERE day IN (SELECT day FROM {dim})")
    f, d = spark.table(fact).alias("f"), spark.table(dim).alias("d")
    return f.join(d.select("day"), f["day"] == d["day"], "left_semi")


def _exists(spark: Any, fact: str, dim: str, form: str) -> Any:
    """Not pruned by dpp's own filters (the optimizer hook meets a correlated EXISTS before
    Spark makes it a join, and does not read it): its rows are checked."""
    return spark.sql(f"SELECT day, amount FROM {fact} f "
                     f"WHERE EXISTS (SELECT 1 FROM {dim} d WHERE d.day = f.day)")


def _aggregated(spark: Any, fact: str, dim: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT d.label, sum(f.amount) AS total FROM {fact} f "
                         f"JOIN {dim} d ON f.day = d.day GROUP BY d.label")
    f, d = spark.table(fact).alias("f"), spark.table(dim).alias("d")
    return f.join(d, f["day"] == d["day"]).groupBy("d.label").sum("amount")


JOBS: dict[str, Callable[[Any, str, str, str], Any]] = {
    "join": _join, "in": _in, "aggregated": _aggregated}
CASES = [(j, f) for j in sorted(JOBS) for f in ("sql", "dataframe")]


def _run(spark: Any, session: Any, job: Callable[[Any, str, str, str], Any], fact: str,
         dim: str, form: str) -> tuple[list, list, Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, job(spark, fact, dim, form).collect()), key=repr)
    session.last_report = None
    got = sorted(map(tuple, job(spark, fact, dim, form).collect()), key=repr)
    return expected, got, session.last_report


def _applied(report: Any) -> list:
    assert report is not None, "no report"
    return [t for t in report.tables if t.pruning == "applied"]


@pytest.mark.parametrize("fact,dim", [("ws_sales", "ws_wanted"),
                                      ("ws_sales_cat", "ws_wanted_cat"),
                                      ("ws_sales_cat", "ws_wanted")])
@pytest.mark.parametrize("job,form", CASES)
def test_a_small_lookup_table_prunes_without_a_filter(
        spark: Any, data: dict[str, Any], job: str, form: str, fact: str, dim: str) -> None:
    expected, got, report = _run(spark, data["session"], JOBS[job], fact, dim, form)
    assert got == expected and expected, (got, expected)
    applied = _applied(report)
    assert applied, f"{job} {form} on {fact}: not pruned: {report.tables} " \
                    f"{report.analysis_notes}"
    for t in applied:
        # days 2 and 5: never the NULL partition (a NULL key matches nothing), never fewer
        assert t.partitions_kept == 2 and t.partitions_total == DAYS + 1, t


@pytest.mark.parametrize("dim", ["ws_wanted", "ws_big"])
@pytest.mark.parametrize("fact", ["ws_sales", "ws_sales_cat"])
def test_an_exists_over_a_lookup_table_gives_sparks_rows(
        spark: Any, data: dict[str, Any], fact: str, dim: str) -> None:
    expected, got, _report = _run(spark, data["session"], _exists, fact, dim, "sql")
    assert got == expected and expected, (got, expected)


@pytest.mark.parametrize("fact", ["ws_sales", "ws_sales_cat"])
def test_a_lookup_holding_every_day_still_drops_the_null_partition(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    expected, got, report = _run(spark, data["session"], _join, fact, "ws_every", "sql")
    assert got == expected and len(expected) == 2 * DAYS, expected
    for t in _applied(report):
        assert t.partitions_kept == DAYS and t.partitions_total == DAYS + 1, t


@pytest.mark.parametrize("job,form", CASES)
def test_a_large_table_that_filters_nothing_is_not_read_for_its_keys(
        spark: Any, data: dict[str, Any], job: str, form: str) -> None:
    expected, got, report = _run(spark, data["session"], JOBS[job], "ws_sales", "ws_big",
                                 form)
    assert got == expected and expected, (got, expected)
    assert report is not None and not _applied(report), report.tables
    codes = {r["code"] for r in report.refusals} | {t.reason_code for t in report.tables}
    assert codes & {Code.BUILD_FILTERS_NOTHING.value, Code.IN_FILTERS_NOTHING.value}, \
        (report.refusals, report.tables)


@pytest.mark.parametrize("form", ["sql", "dataframe"])
def test_the_lookup_on_the_preserved_side_of_an_outer_join_prunes_nothing(
        spark: Any, data: dict[str, Any], form: str) -> None:
    def job(spark: Any, fact: str, dim: str, form: str) -> Any:
        if form == "sql":
            return spark.sql(f"SELECT f.day, f.amount, d.label FROM {fact} f LEFT JOIN {dim} d "
                             f"ON f.day = d.day")
        f, d = spark.table(fact).alias("f"), spark.table(dim).alias("d")
        return f.join(d, f["day"] == d["day"], "left").select("f.day", "f.amount", "d.label")
    expected, got, report = _run(spark, data["session"], job, "ws_sales", "ws_wanted", form)
    assert got == expected and len(expected) == 2 * (DAYS + 1), expected
    if report is not None:
        assert not _applied(report), report.tables


@pytest.mark.parametrize("cache", [False, True])
def test_a_lookup_edited_between_two_actions_gives_sparks_rows(
        spark: Any, data: dict[str, Any], tmp_path: Any, cache: bool) -> None:
    """A lookup table gains days (a file added), then loses one (a file rewritten), between
    actions: a query over a new read of the folder reads its keys anew, as Spark reads the
    table then; a DataFrame made before runs as Spark runs it (its relation keeps the files
    it listed, reading a rewritten file's new content), with dpp as without."""
    lookup = tmp_path / "lookup"
    lookup.mkdir()
    pq.write_table(pa.table({"day": pa.array([3], pa.int32())}), lookup / "a.parquet")
    spark.read.parquet(str(lookup)).createOrReplaceTempView("ws_edit")
    text = "SELECT f.day, f.amount FROM ws_sales f JOIN ws_edit d ON f.day = d.day"
    session = data["session"]
    with spark_conf(spark, OFF):
        again_off = spark.sql(text)
        first_off = sorted(map(tuple, again_off.collect()))
    again = spark.sql(text)
    assert sorted(map(tuple, again.collect())) == first_off and first_off
    kept = []
    try:
        for edit in (None, "add", "rewrite", "none"):
            if edit == "add":
                pq.write_table(pa.table({"day": pa.array([7, 8], pa.int32())}),
                               lookup / "b.parquet")
            elif edit == "rewrite":
                pq.write_table(pa.table({"day": pa.array([9], pa.int32())}), lookup / "a.parquet")
            if edit is not None:   # a new read of the folder (the view's own listing stays)
                spark.read.parquet(str(lookup)).createOrReplaceTempView("ws_edit")
            with spark_conf(spark, OFF):
                expected = sorted(map(tuple, spark.sql(text).collect()))
            session.last_report = None
            # the filter cache on: a build side reading files only is kept by its files'
            # paths, sizes and times, so each edit is seen and an unchanged table reused
            with spark_conf(spark, {"spark.dpp.filterCache.enabled": str(cache).lower()}):
                got = sorted(map(tuple, spark.sql(text).collect()))
            assert got == expected and expected, (edit, got, expected)
            kept += [t.partitions_kept for t in _applied(session.last_report)]
            # the DataFrames made before: each as its own first run planned it
            with spark_conf(spark, OFF):
                off_rows = sorted(map(tuple, again_off.collect()))
            assert sorted(map(tuple, again.collect())) == off_rows, edit
        assert kept == [1, 3, 3, 3], kept   # {3}, {3, 7, 8}, {9, 7, 8}, unchanged
    finally:
        spark.catalog.dropTempView("ws_edit")


def test_a_lookup_whose_names_differ_in_case_prunes(
        spark: Any, data: dict[str, Any], tmp_path: Any) -> None:
    """The lookup file's column is ``Day``, the query writes ``F.DAY = D.day`` (Spark's
    default case-insensitive names): the keys are read all the same."""
    folder = tmp_path / "cased"
    folder.mkdir()
    pq.write_table(pa.table({"Day": pa.array([2, 6, None], pa.int32()), "Note": ["x", "y", "z"]}),
                   folder / "part-0.parquet")
    spark.read.parquet(str(folder)).createOrReplaceTempView("ws_cased")
    try:
        def job(spark: Any, fact: str, dim: str, form: str) -> Any:
            return spark.sql(f"SELECT F.DAY, f.Amount, d.note FROM {fact} f "
                             f"JOIN {dim} d ON F.Day = D.DAY")
        expected, got, report = _run(spark, data["session"], job, "ws_sales", "ws_cased", "sql")
        assert got == expected and len(expected) == 4, expected
        assert [t.partitions_kept for t in _applied(report)] == [2], report.tables
    finally:
        spark.catalog.dropTempView("ws_cased")


def test_a_csv_lookup_gives_sparks_rows(spark: Any, data: dict[str, Any], tmp_path: Any) -> None:
    """A lookup table in another format than Parquet: its size is not described to the
    analysis (only Parquet relations are), so it is not read for its keys; its rows are
    checked."""
    csv = tmp_path / "days_csv"
    csv.mkdir()
    (csv / "days.csv").write_text("Day,Note\n2,x\n6,y\n,z\n")
    spark.read.option("header", "true").schema("Day INT, Note STRING").csv(str(csv)) \
        .createOrReplaceTempView("ws_days_csv")
    try:
        expected, got, _report = _run(spark, data["session"], _join, "ws_sales", "ws_days_csv",
                                      "sql")
        assert got == expected and len(expected) == 4, expected
    finally:
        spark.catalog.dropTempView("ws_days_csv")
