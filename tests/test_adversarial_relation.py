"""The relation is what Spark's relation says (optimizer hook, classic sessions).

A ``spark.read`` DataFrame defines which files it holds: its reader options
(``pathGlobFilter``, ``modifiedAfter``/``modifiedBefore``), the listing it made when it was
created (a snapshot: files added later are not in it), and the order Spark hands its files to
tasks. dpp may skip what Spark would read, never read what Spark would not. Declared tables and
catalog tables are dpp's own semantics, documented in docs/reliability.md and checked here: a
declared table is listed afresh by every query; a catalog table's pruned reads list the kept
partitions afresh too, where Spark may answer from its file-status cache until ``REFRESH TABLE``.
Every case is compared with Spark with every pruning off on the same DataFrame objects.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq
import pytest

import dpp

from dpp.runtime.spark_metrics import file_scans
from tests.adversarial_support import (DAYS, applied, catalog_table, dpp_rows, enabled,
                                       fact_file, rows, spark_rows, write_calendar, write_fact)
from tests.conftest import spark_conf


@pytest.fixture(scope="module")
def env(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("relation")
    cal = write_calendar(root / "cal")
    with enabled(spark, root) as session:
        yield {"root": root, "cal": str(cal), "session": session}


def _week2(spark: Any, env: dict[str, Any]) -> Any:
    return spark.read.parquet(env["cal"]).where("wk = 2")


def _week2_join(spark: Any, env: dict[str, Any], df: Any) -> tuple[list, list, Any]:
    """``df`` joined to week 2's days: Spark's rows, dpp's rows, and dpp's report."""
    def run() -> Any:
        return df.join(_week2(spark, env), "day").select("id", "day")

    expected = spark_rows(spark, run)
    got, report = dpp_rows(spark, env["session"], run)
    return expected, got, report


def _fresh_fact(env: dict[str, Any], name: str) -> Path:
    folder = env["root"] / name
    if folder.exists():
        shutil.rmtree(folder)
    return write_fact(folder)


def test_path_glob_filter_is_honoured(spark: Any, env: dict[str, Any]) -> None:
    """Files the reader's glob excludes (here: Parquet files named ``*.bak``) stay out."""
    fact = _fresh_fact(env, "glob")
    for d in DAYS:
        pq.write_table(fact_file(d, 7), fact / f"day={d}" / "old.bak")
    df = spark.read.option("pathGlobFilter", "*.parquet").parquet(str(fact))

    expected, got, report = _week2_join(spark, env, df)
    assert got == expected and len(expected) == 7 * 3 * 20
    assert applied(report), report


@pytest.mark.parametrize("option", ["modifiedAfter", "modifiedBefore"])
def test_modified_time_options_are_honoured(spark: Any, env: dict[str, Any],
                                            option: str) -> None:
    fact = _fresh_fact(env, f"mtime_{option}")
    old = time.time() - 10 * 86400
    for d in DAYS:   # file part-0 of every day is ten days old
        os.utime(fact / f"day={d}" / "part-0.parquet", (old, old))
    cut = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 5 * 86400))
    with spark_conf(spark, {"spark.sql.session.timeZone": "UTC"}):
        df = spark.read.option(option, cut).parquet(str(fact))

        expected, got, report = _week2_join(spark, env, df)
    assert got == expected
    assert len(expected) == 7 * 20 * (2 if option == "modifiedAfter" else 1)
    assert applied(report), report


def test_a_dataframe_keeps_the_listing_it_made(spark: Any, env: dict[str, Any]) -> None:
    """Files and partitions added after ``spark.read`` are not in that DataFrame, with dpp or
    without (Spark lists when the DataFrame is made)."""
    fact = _fresh_fact(env, "snapshot")
    df = spark.read.parquet(str(fact))
    pq.write_table(fact_file(9, 5), fact / "day=9" / "late.parquet")   # a kept day
    extra = fact / "day=10"
    pq.write_table(fact_file(10, 6), extra / "late.parquet")

    expected, got, report = _week2_join(spark, env, df)
    assert got == expected and len(expected) == 7 * 3 * 20
    assert applied(report), report


def test_files_in_sparks_order_when_nothing_is_pruned(spark: Any, env: dict[str, Any]) -> None:
    """Equal-size files in Spark's own order: the rows of an unordered query come back in
    the order Spark returns them without dpp, even when the build side keeps every day."""
    fact = _fresh_fact(env, "order")
    df = spark.read.parquet(str(fact))

    def run() -> Any:
        return df.join(spark.read.parquet(env["cal"]).where("wk <= 9"), "day") \
            .select("id", "day")

    expected = spark_rows(spark, run, ordered=True)
    with spark_conf(spark, {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
                            "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}):
        got, report = dpp_rows(spark, env["session"], run, ordered=True)
    assert got == expected and len(expected) == 20 * 3 * 20
    assert report is not None and report.tables, "dpp did not handle the fact"


def test_a_declared_table_is_listed_by_each_query(spark: Any, env: dict[str, Any]) -> None:
    """dpp's semantics for ``spark.dpp.tables.*``: every query lists the folder afresh, so a
    file added between two actions is read by the second (as a new ``spark.read`` would)."""
    fact = _fresh_fact(env, "declared")
    with spark_conf(spark, {"spark.dpp.tables.adv_declared": str(fact)}):
        dpp.enable(spark)   # re-reads the declared tables

        def run() -> Any:
            return spark.table("adv_declared").join(_week2(spark, env), "day") \
                .select("id", "day")

        first, report = dpp_rows(spark, env["session"], run)
        assert applied(report), report
        pq.write_table(fact_file(9, 5), fact / "day=9" / "late.parquet")
        second, report = dpp_rows(spark, env["session"], run)
        assert applied(report), report
    expected = spark_rows(spark, lambda: spark.read.parquet(str(fact))
                          .join(_week2(spark, env), "day").select("id", "day"))
    assert second == expected and len(second) == len(first) + 20


def test_a_catalog_table_after_refresh(spark: Any, env: dict[str, Any]) -> None:
    """A catalog table: Spark may answer from its file-status cache until ``REFRESH TABLE``;
    dpp's pruned read lists the kept partitions afresh. After a refresh both read the same
    files; before it, dpp reads every row Spark reads (never fewer)."""
    fact = _fresh_fact(env, "catalog")
    name = catalog_table(spark, "adv_rel_sales", fact)
    try:
        def run() -> Any:
            return spark.table(name).join(_week2(spark, env), "day").select("id", "day")

        assert spark_rows(spark, run) == dpp_rows(spark, env["session"], run)[0]
        pq.write_table(fact_file(9, 5), fact / "day=9" / "late.parquet")
        cached = spark_rows(spark, run)
        got, report = dpp_rows(spark, env["session"], run)
        assert applied(report), report
        assert set(cached) <= set(got)
        spark.sql(f"REFRESH TABLE {name}")
        expected = spark_rows(spark, run)
        got, report = dpp_rows(spark, env["session"], run)
        assert got == expected and len(expected) == 7 * 3 * 20 + 20
        assert applied(report), report
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_case_sensitive_partition_columns(spark: Any, env: dict[str, Any]) -> None:
    """A case-sensitive session with partition columns ``Day`` and ``day``: each reads its own
    folder level; dpp must not key one by the other's name."""
    folder = env["root"] / "cased"
    if folder.exists():
        shutil.rmtree(folder)
    for d in DAYS:
        part = folder / f"Day={d}" / f"day={21 - d}"
        part.mkdir(parents=True)
        pq.write_table(fact_file(d, 0), part / "part-0.parquet")
    with spark_conf(spark, {"spark.sql.caseSensitive": "true"}):
        df = spark.read.parquet(str(folder))
        assert [f.name for f in df.schema.fields][-2:] == ["Day", "day"]

        def run() -> Any:
            return df.join(_week2(spark, env), "day").select("id", "Day", "day")

        expected = spark_rows(spark, run)
        got, _report = dpp_rows(spark, env["session"], run)
    assert got == expected and len(expected) == 7 * 20


def test_partition_type_inference_off(spark: Any, env: dict[str, Any]) -> None:
    """With type inference off, ``day=07`` is the string '07', not the integer 7: a join on
    a string key matches '07' only."""
    folder = env["root"] / "untyped"
    if folder.exists():
        shutil.rmtree(folder)
    write_fact(folder, name=lambda d: f"day={d:02d}")
    with spark_conf(spark, {"spark.sql.sources.partitionColumnTypeInference.enabled": "false"}):
        df = spark.read.parquet(str(folder))
        assert dict(df.dtypes)["day"] == "string"
        keys = spark.createDataFrame([("08",), ("9",), ("10",)], "day string")

        def run() -> Any:
            return df.join(keys, "day").select("id", "day")

        expected = spark_rows(spark, run)
        got, _report = dpp_rows(spark, env["session"], run)
    assert got == expected and len(expected) == 2 * 3 * 20


@pytest.mark.parametrize("how", ["union", "join"])
@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_one_dataframe_in_two_star_joins(spark: Any, env: dict[str, Any], how: str,
                                         kind: str) -> None:
    """The same fact DataFrame in two star joins with other weeks: each read is pruned by its
    own join, never by the two filters' intersection or one read's filter for both."""
    fact = _fresh_fact(env, f"twice_{kind}")
    name = catalog_table(spark, "adv_twice", fact) if kind == "catalog" else None
    try:
        f = spark.table(name) if name else spark.read.parquet(str(fact))
        cal = spark.read.parquet(env["cal"])

        def run() -> Any:
            a = f.join(cal.where("wk = 1"), "day").select("id", "day")
            b = f.join(cal.where("wk = 2"), "day").select("id", "day")
            if how == "union":
                return a.union(b)
            b2 = b.withColumnRenamed("id", "id2").withColumnRenamed("day", "day2")
            return a.join(b2, a["day"] + 7 == b2["day2"])

        expected = spark_rows(spark, run)
        got, report = dpp_rows(spark, env["session"], run)
        assert got == expected and expected
        assert applied(report), report
    finally:
        if name:
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_escaped_partition_values_are_matched(spark: Any, env: dict[str, Any]) -> None:
    """String partition values Spark escapes in folder names (``a:b`` is ``city=a%3Ab``), a
    space, a percent sign: dpp's verdicts meet Spark's own listing folder by folder, so the
    kept ones are read and the rest skipped."""
    folder = env["root"] / "escaped"
    if folder.exists():
        shutil.rmtree(folder)
    cities = ["a:b", "New York", "100%", "x=y", "plain", "q?r", "s/t"]
    rows_in = [(i, c) for i, c in enumerate(cities * 3)]
    spark.createDataFrame(rows_in, "id long, city string").write.partitionBy("city") \
        .parquet(str(folder))
    df = spark.read.parquet(str(folder))
    keys = spark.createDataFrame([("a:b",), ("New York",), ("100%",), ("s/t",)], "city string")

    def run() -> Any:
        return df.join(keys, "city").select("id", "city")

    expected = spark_rows(spark, run)
    env["session"].last_report = None
    with spark_conf(spark, {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false"}):
        pruned = run()
        got = rows(pruned)
    assert got == expected and len(expected) == 4 * 3
    (t,) = applied(env["session"].last_report)
    assert t.partitions_kept == 4 and t.partitions_total == len(cities), t
    # and Spark's scan read only the kept folders' files (the verdicts met its listing)
    (scan,) = [s for s in file_scans(pruned) if "escaped" in " ".join(s.root_paths)]
    assert scan.partitions_read == 4, scan
