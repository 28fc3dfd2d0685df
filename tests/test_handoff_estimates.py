"""A pruned file list must not make Spark choose a worse join (TPC-DS q72).

The handoff sizes the pruned relation like the table it stands for, through
``spark.sql.sources.fileCompressionFactor`` in a sibling session (see hive_splits.spark_io).
Checked here: the join strategies Spark picks for dpp's rewritten query equal those it picks
over the unpruned table; without the adjustment the same query would broadcast the fact (so
the test cannot pass vacuously); rows are unchanged; the user's session settings are untouched
and still govern how the relation is read (time zone of timestamp partitions).
"""
from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp import DppSession
from hive_splits import SplitLoader, table_from_path
from hive_splits.spark_io import to_dataframe
from dpp.core.domain import TupleDomain
from tests.conftest import spark_conf

PARTS = 20


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    root = tmp_path_factory.mktemp("estimates")
    for p in range(PARTS):
        folder = root / "fact" / f"k={p}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array(range(p * 200, p * 200 + 200), pa.int64()),
                                 "v": pa.array([float(i) for i in range(200)])}),
                       folder / "part-0.parquet")
    (root / "other").mkdir()
    pq.write_table(pa.table({"o_id": pa.array(range(0, 4000), pa.int64()),
                             "o_pad": [f"padding-{i:06d}" * 4 for i in range(4000)]}),
                   root / "other" / "o.parquet")
    (root / "dim").mkdir()
    pq.write_table(pa.table({"d_k": pa.array(range(PARTS), pa.int32()),
                             "d_name": [f"n{p}" for p in range(PARTS)]}),
                   root / "dim" / "d.parquet")
    return root


def _joins(df) -> list[str]:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return sorted(re.findall(r"\b(BroadcastHashJoin|SortMergeJoin|ShuffledHashJoin|"
                             r"BroadcastNestedLoopJoin|CartesianProduct)\b", plan))


def _size(df) -> int:
    return int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())


QUERY = ("SELECT count(*) AS n, sum(v) AS s FROM est_fact f JOIN est_other o ON f.id = o.o_id "
         "JOIN est_dim d ON f.k = d.d_k WHERE d.d_name = 'n3'")


def test_join_strategy_over_the_pruned_files_is_the_one_over_the_whole_table(spark, star):
    full = spark.read.parquet(str(star / "fact"))
    one = spark.read.option("basePath", str(star / "fact")).parquet(str(star / "fact" / "k=3"))
    # a threshold the unpruned fact is above and one partition of it below
    threshold = (_size(full.select("id", "v", "k")) + _size(one.select("id", "v", "k"))) // 2
    spark.read.parquet(str(star / "dim")).createOrReplaceTempView("est_dim")
    spark.read.parquet(str(star / "other")).createOrReplaceTempView("est_other")
    full.createOrReplaceTempView("est_fact")
    settings = {"spark.sql.autoBroadcastJoinThreshold": str(threshold),
                "spark.sql.adaptive.enabled": "false",
                "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
                "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}
    dpp = DppSession(spark)
    try:
        with spark_conf(spark, settings):
            plain = spark.sql(QUERY)
            expected_joins, expected_rows = _joins(plain), plain.collect()
            spark.catalog.dropTempView("est_fact")
            dpp.register_table("est_fact", str(star / "fact"))
            df = dpp.sql(QUERY)
            assert dpp.last_report.tables[0].partitions_kept == 1
            assert _joins(df) == expected_joins
            assert "SortMergeJoin" in expected_joins
            assert df.collect() == expected_rows
            # the same pruned files without the estimate: Spark would broadcast the fact
            table = table_from_path(str(star / "fact"), "est_fact")
            result = SplitLoader(table, TupleDomain.all(), []).load()
            kept = [s for s in result.splits if "/k=3/" in s.path]
            result.splits = kept
            result.bytes_kept = sum(s.size for s in kept)
            result.partitions = [p for p in result.partitions if p.path.endswith("k=3")]
            bare = to_dataframe(spark, table, result)
            bare.createOrReplaceTempView("est_fact_bare")
            worse = spark.sql(QUERY.replace("est_fact", "est_fact_bare"))
            assert _joins(worse) != expected_joins
            assert worse.collect() == expected_rows
            # the user's session is untouched
            assert spark.conf.get("spark.sql.sources.fileCompressionFactor", None) is None
    finally:
        for v in ("est_dim", "est_other", "est_fact", "est_fact_bare"):
            spark.catalog.dropTempView(v)
        dpp.close()


def test_sized_relation_is_read_with_the_users_settings(spark, tmp_path):
    # timestamp partition folders are read in the session time zone: the sibling session
    # that sizes the relation must read them exactly as the user's session does
    for i, text in enumerate(["2024-03-10 01:30:00", "2024-03-10 03:30:00"]):
        folder = tmp_path / "t" / f"t={text.replace(':', '%3A')}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": [i]}), folder / "p.parquet")
    with spark_conf(spark, {"spark.sql.session.timeZone": "America/Los_Angeles"}):
        table = table_from_path(str(tmp_path / "t"), "tz_t", timestamp_type="TIMESTAMP_LTZ")
        result = SplitLoader(table, TupleDomain.all(), []).load()
        sized = to_dataframe(spark, table, result, estimate_bytes=result.bytes_kept * 100)
        plain = to_dataframe(spark, table, result)
        assert _size(sized) > 50 * _size(plain)
        got = sorted((r["v"], r["t"]) for r in sized.collect())
        assert got == sorted((r["v"], r["t"]) for r in plain.collect())
        # 01:30 on the LA wall clock (PySpark hands instants back in the process's zone)
        la = dt.datetime(2024, 3, 10, 1, 30, tzinfo=ZoneInfo("America/Los_Angeles"))
        assert got[0][1] == la.astimezone().replace(tzinfo=None)


def test_estimates_follow_what_spark_prunes_while_planning(spark):
    """Path tables: Spark sizes the whole table (it prunes partitions only at run time);
    catalog tables: Spark prunes static filters while optimizing and sizes what is left, so
    only the dynamic pruning is undone."""
    from hive_splits import LoadResult, PartitionColumn, Table
    from dpp.core.domain import INT

    dpp = DppSession(spark)
    path = Table(name="t", location="/x", columns=(("v", "int"),),
                 partition_columns=(PartitionColumn("k", INT),))
    catalog = Table(name="t", location="/x", columns=(("v", "int"),),
                    partition_columns=(PartitionColumn("k", INT),), catalog_partitions=(),
                    catalog_name="no_such_table_here")
    # 100 partitions; static pruning left 20, dynamic pruning kept 5 of those (1 kB each)
    r = LoadResult(table="t", partitions_total=100, partitions_kept=5, pruned_static=80,
                   pruned_dynamic=15, bytes_kept=5000)
    try:
        assert dpp.handoff.unpruned_estimate(path, r) == 100_000
        assert dpp.handoff.unpruned_estimate(catalog, r) == 20_000
        r.pruned_static, r.pruned_dynamic = 0, 95
        # a dynamic filter on a partition column: Spark infers IS NOT NULL from the join,
        # prunes by it while optimizing and sizes the partitions it admits (all 100 here)
        assert dpp.handoff.partition_filtered(catalog, (), ["K"]) is True
        assert dpp.handoff.unpruned_estimate(catalog, r, partition_filtered=True) == 100_000
        # filters on data columns only: the catalog's own figure (none here)
        assert dpp.handoff.partition_filtered(catalog, ["v"], ["v"]) is False
        assert dpp.handoff.unpruned_estimate(catalog, r) is None
        with spark_conf(spark, {"spark.sql.constraintPropagation.enabled": "false"}):
            assert dpp.handoff.partition_filtered(catalog, (), ["k"]) is False
            assert dpp.handoff.partition_filtered(catalog, ["k"], ()) is True
    finally:
        dpp.close()


def _relation_sizes(df, pattern: str) -> list[int]:
    """Sizes Spark's optimizer gives the leaves of ``df``'s plan matching ``pattern``."""
    out: list[int] = []

    def walk(p) -> None:
        ch = p.children()
        if ch.size() == 0 and re.search(pattern, p.toString()):
            out.append(int(p.stats().sizeInBytes()))
        for i in range(ch.size()):
            walk(ch.apply(i))
    walk(df._jdf.queryExecution().optimizedPlan())
    return out


def _runtime_filters(df) -> int:
    return len(re.findall(r"might_contain|bloom_filter_agg",
                          df._jdf.queryExecution().executedPlan().toString()))


def test_a_catalog_table_joined_on_its_partition_column_is_sized_as_spark_sizes_it(spark, star):
    """TPC-DS q72 on catalog tables: Spark infers ``k IS NOT NULL`` from the join on the
    partition column and sizes the table by its partitions' files; the pruned relation must
    be sized the same (not by the catalog's default for a table without statistics, which
    made Spark add runtime bloom filters over it that it does not add over the table)."""
    name = "est_cfact"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.read.parquet(str(star / "fact")).write.partitionBy("k").saveAsTable(name)
    spark.read.parquet(str(star / "dim")).createOrReplaceTempView("est_dim")
    spark.read.parquet(str(star / "other")).createOrReplaceTempView("est_other")
    query = QUERY.replace("est_fact", name)
    dpp = DppSession(spark)
    try:
        # a threshold that makes the fact an application side of a bloom filter when it is
        # sized by the catalog's default (no statistics) and not when sized by its files
        settings = {"spark.sql.adaptive.enabled": "false",
                    "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold":
                        str(10 * 1024 * 1024)}
        with spark_conf(spark, settings):
            plain = spark.sql(query)
            fact_leaf = r"\bid#"   # the fact's relation (the others hold o_id, d_k)
            expected = _relation_sizes(plain, fact_leaf)
            assert len(expected) == 1 and expected[0] < 10 * 1024 * 1024, expected
            expected_rows = plain.collect()
            df = dpp.sql(query)
            t = dpp.last_report.tables[0]
            assert t.pruning == "applied" and t.partitions_kept == 1
            got = _relation_sizes(df, fact_leaf)
            assert len(got) == 1
            # every partition holds the same rows: scaling the kept one is within 10%
            assert abs(got[0] - expected[0]) <= expected[0] // 10, (got, expected)
            assert _runtime_filters(df) == _runtime_filters(plain)
            assert _joins(df) == _joins(plain)
            assert df.collect() == expected_rows
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        for v in ("est_dim", "est_other"):
            spark.catalog.dropTempView(v)
        dpp.close()
