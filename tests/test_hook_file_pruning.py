"""File pruning by a data column through the optimizer hook: Parquet statistics and buckets.

A join key that is a data column of a partitioned fact (``f.item = i.item_id``) prunes no
partition, but files whose ``item`` range misses every build value, and buckets the build
values do not hash to, cannot match. The SQL-text path has pruned them since the start; the
hook must too, or DataFrame jobs and the one-path switch lose it. Each case runs against Spark
with every pruning off on the same folders: same rows, and exactly the files that can match
kept.
"""
from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from tests.conftest import spark_conf

OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}
DAYS, FILES, SPAN = 4, 4, 25     # per day, FILES files; file j holds items j*SPAN .. j*SPAN+SPAN-1
PICKED = range(30, 36)           # the dimension's filter picks these items: all in file 1
BUCKETS = 4


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("file_pruning")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        for j in range(FILES):
            items = list(range(j * SPAN, (j + 1) * SPAN))
            pq.write_table(pa.table({"item": pa.array(items, pa.int32()),
                                     "amount": pa.array([i * 10 + day for i in items],
                                                        pa.int64())}),
                           folder / f"part-{j}.parquet")
    items = root / "items"
    items.mkdir()
    pq.write_table(pa.table({"item_id": pa.array(range(FILES * SPAN), pa.int32()),
                             "cat": pa.array(["x" if i in PICKED else "y"
                                              for i in range(FILES * SPAN)])}),
                   items / "part-0.parquet")
    spark.sql("DROP TABLE IF EXISTS fp_sales_cat")
    spark.sql(f"CREATE TABLE fp_sales_cat (item INT, amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{sales}'")
    spark.sql("ALTER TABLE fp_sales_cat RECOVER PARTITIONS")
    spark.sql("DROP TABLE IF EXISTS fp_bucketed")
    (spark.read.parquet(str(sales)).repartition(2).write.format("parquet")
     .partitionBy("day").bucketBy(BUCKETS, "item").saveAsTable("fp_bucketed"))
    spark.read.parquet(str(items)).createOrReplaceTempView("fp_items")
    with spark_conf(spark, {"spark.dpp.tables.fp_sales": str(sales),
                            "spark.dpp.sqlPath": "hook"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session}
        finally:
            dpp.disable(spark)
            for t in ("fp_sales_cat", "fp_bucketed"):
                spark.sql(f"DROP TABLE IF EXISTS {t}")


def _job(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT f.day, f.item, f.amount FROM {fact} f JOIN fp_items i "
                         f"ON f.item = i.item_id WHERE i.cat = 'x'")
    f, i = spark.table(fact), spark.table("fp_items").where("cat = 'x'")
    return f.join(i, f["item"] == i["item_id"]).select("day", "item", "amount")


def _run(spark: Any, data: dict[str, Any], fact: str, form: str, stats: str
         ) -> tuple[list[tuple], list[tuple], Any]:
    session = data["session"]
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, _job(spark, fact, form).collect()))
    with spark_conf(spark, {"spark.dpp.statsPruning.enabled": stats}):
        session.last_report = None
        got = sorted(map(tuple, _job(spark, fact, form).collect()))
    return got, expected, session.last_report


@pytest.mark.parametrize("form", ["sql", "dataframe"])
@pytest.mark.parametrize("fact", ["fp_sales", "fp_sales_cat"])
def test_statistics_skip_the_files_no_build_value_falls_in(spark: Any, data: dict[str, Any],
                                                           fact: str, form: str) -> None:
    got, expected, report = _run(spark, data, fact, form, "true")
    assert got == expected and len(expected) == DAYS * len(PICKED)
    assert report is not None and report.kind == "plan", report
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == t.partitions_total == DAYS, t   # no partition pruned ...
    assert t.files_kept == DAYS, t                                # ... one file per day kept
    assert t.files_pruned_stats == DAYS * (FILES - 1), t


def test_statistics_off_builds_no_filter_on_a_data_column(spark: Any, data: dict[str, Any]
                                                          ) -> None:
    got, expected, report = _run(spark, data, "fp_sales", "dataframe", "false")
    assert got == expected and expected
    assert report is None or not [t for t in report.tables if t.pruning == "applied"], report


@pytest.mark.parametrize("form", ["sql", "dataframe"])
def test_buckets_prune_by_hash_with_statistics_off(spark: Any, data: dict[str, Any],
                                                   form: str) -> None:
    """A table bucketed by the key keeps only the buckets the build values hash to, whatever
    the statistics setting (Spark's own bucket pruning needs a literal filter)."""
    got, expected, report = _run(spark, data, "fp_bucketed", form, "false")
    assert got == expected and len(expected) == DAYS * len(PICKED)
    assert report is not None and report.kind == "plan", report
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.buckets_total == BUCKETS and 0 < t.buckets_kept < BUCKETS, t
    assert t.files_pruned_buckets > 0, t
