"""A pruned Hive catalog table's kept partitions, fetched by name at the scan.

The scan of a catalog table dpp prunes asks the metastore for the partitions dpp kept, by
name, and Spark's own evaluation of the scan's filters decides on them (``CatalogByName``).
Through a Hive metastore the table is read once and the kept partitions in one call: the
catalog's own ``getPartition`` reads the table twice more per partition, under the lock every query of
the driver needs to be analysed, which is what many queries at once queued for. The rows
must stay Spark's whatever the partition columns' case, the default (NULL) partition or
escaped values, and the count of Hive client calls must not grow with the kept partitions.
"""
from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

import dpp
from tests.conftest import spark_conf

OFF = {"spark.dpp.enabled": "false"}
TABLE = "cbn_sales"
DIM = "cbn_days"


@pytest.fixture(scope="module")
def session(spark: Any) -> Iterator[Any]:
    spark.sql(f"DROP TABLE IF EXISTS {TABLE}")
    rows = [(i, d, s) for d in range(12) for i, s in enumerate(["a/b", "x", None])]
    (spark.createDataFrame(rows, "amount INT, Day INT, Src STRING")
     .write.partitionBy("Day", "Src").format("parquet").saveAsTable(TABLE))
    spark.createDataFrame([(d, d % 4) for d in range(12)], "d_day INT, pick INT") \
        .createOrReplaceTempView(DIM)
    with spark_conf(spark, {"spark.dpp.sqlPath": "hook", "spark.dpp.filterCache.enabled": "false"}):
        s = dpp.enable(spark)
        assert s.optimizer_hook is not None, s.hook_note
        try:
            yield s
        finally:
            dpp.disable(spark)
            spark.sql(f"DROP TABLE IF EXISTS {TABLE}")


def _query(where: str) -> str:
    return (f"SELECT f.amount, f.Day, f.Src FROM {TABLE} f JOIN {DIM} d ON f.Day = d.d_day "
            f"WHERE {where}")


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _report_after(session: Any, before: Any) -> Any:
    """The report of the query just run: a relation whose build side keeps nothing is never
    scanned (AQE skips the scan), and its report comes with the execution's end through
    Spark's listener bus, which may be after ``collect()`` returned."""
    deadline = time.monotonic() + 30
    while session.last_report is before and time.monotonic() < deadline:
        time.sleep(0.1)
    return session.last_report


def _client_calls(spark: Any) -> int:
    from hive_splits.jvm_refs import scala_object

    metrics = scala_object(spark._jvm, "org.apache.spark.metrics.source.HiveCatalogMetrics")
    return int(metrics.METRIC_HIVE_CLIENT_CALLS().getCount())


@pytest.mark.parametrize("where, kept", [
    ("d.pick = 1", 9),                                        # three days, every Src
    # the default partition and an escaped value: dpp keeps the three days' nine partitions,
    # Spark's own evaluation of the scan's filters then reads the six that match
    ("d.pick = 2 AND (f.Src IS NULL OR f.Src = 'a/b')", 9),
    # dpp keeps the day's three partitions; Spark's filters read the one of Src 'x'
    ("d.d_day = 5 AND f.Src = 'x'", 3),
    ("d.pick = 9", 0),                                         # the dimension keeps no day
])
def test_rows_are_sparks_and_the_kept_partitions_are_read(spark: Any, session: Any, where: str,
                                                          kept: int) -> None:
    q = _query(where)
    with spark_conf(spark, OFF):
        expected = _rows(spark.sql(q))
    before = session.last_report
    got = _rows(spark.sql(q))
    assert got == expected
    report = _report_after(session, before)
    assert report is not None and report is not before
    fact = [t for t in report.tables if t.table.lower().endswith(TABLE)]
    assert fact, report.summary_line()
    if kept == 0 and fact[0].partitions_kept is None:
        # nothing to join with: AQE may skip the fact's scan altogether, and the report says so
        assert (fact[0].reason or "").startswith("never listed"), fact[0]
    else:
        assert fact[0].partitions_kept == kept, report.summary_line()


def test_the_kept_partitions_cost_one_hive_client_call_however_many(spark: Any,
                                                                     session: Any) -> None:
    """Two queries of the same shape, keeping one day's partitions and five days': both ask
    the Hive client the same number of times (the kept partitions come in one call; the
    catalog's own getPartition asks three times per partition)."""
    def calls(where: str) -> tuple[int, int]:
        q = _query(where)
        spark.sql(q).collect()          # analysed and planned once before: caches are warm
        before, last = _client_calls(spark), session.last_report
        spark.sql(q).collect()
        report = _report_after(session, last)
        fact = [t for t in report.tables if t.table.lower().endswith(TABLE)]
        return _client_calls(spark) - before, fact[0].partitions_kept

    one, kept_one = calls("d.d_day = 5")
    five, kept_five = calls("d.d_day IN (1, 2, 3, 5, 7)")
    assert (kept_one, kept_five) == (3, 15)
    assert one > 0 and five == one, (one, five)


def test_the_loader_reads_the_names_the_rule_listed(spark: Any, session: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule lists a pruned catalog table's partition names for Spark's own static check;
    the split loader reads those, and asks the catalog nothing itself."""
    from hive_splits.metastore import MetastorePartitions

    asked: list[str] = []
    real = MetastorePartitions._catalog

    def counted(self: MetastorePartitions) -> Any:
        asked.append(self.name)
        return real(self)

    monkeypatch.setattr(MetastorePartitions, "_catalog", counted)
    q = _query("d.pick = 3")
    with spark_conf(spark, OFF):
        expected = _rows(spark.sql(q))
    last = session.last_report
    assert _rows(spark.sql(q)) == expected
    fact = [t for t in _report_after(session, last).tables if t.table.lower().endswith(TABLE)]
    assert fact[0].partitions_kept == 9 and fact[0].metastore_names == 36
    assert asked == []


def test_names_under_an_unknown_token_are_listed_from_the_catalog(spark: Any,
                                                                  session: Any) -> None:
    from hive_splits.metastore import MetastorePartitions

    t = session.catalog.table(TABLE)
    listed = MetastorePartitions(spark, t.partition_source.name, t.partition_columns)
    taken = listed.for_plan("no-such-token")
    assert sorted(taken.rows(), key=repr) == sorted(listed.rows(), key=repr)
    assert len(listed.rows()) == 36
