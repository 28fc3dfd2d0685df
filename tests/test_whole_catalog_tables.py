"""Catalog tables read whole through the split loader's listing (``dpp.frontends.sql.whole_tables``).

A partitioned catalog table that a query reads with none of its partition columns named is
listed by dpp and handed to Spark in place of Spark's metastore fetch and listing job. Checked
here against Spark with every pruning off on the same tables: the same rows (a partition at a
location of its own, the NULL partition, a partition added between two queries), the same size
estimate for the relation, one relation shared by all of a table's references; and where it must
not happen: a partition column named anywhere, a cached table, the setting off.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp import DppSession
from tests.conftest import spark_conf

OFF = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.dpp.enabled": "false"}
NOTE = "read whole through dpp's listing"


@pytest.fixture(autouse=True)
def _opted_in(spark: Any) -> Iterator[None]:
    """The listing tested here is opt-in (``spark.dpp.listWholeCatalogTables=true``): by
    default a catalog table with nothing to prune is Spark's own relation, listed by Spark."""
    with spark_conf(spark, {"spark.dpp.listWholeCatalogTables": "true"}):
        yield


@pytest.fixture(scope="module")
def whole(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("whole")
    spark.sql("DROP TABLE IF EXISTS wc_fact")
    spark.sql("CREATE TABLE wc_fact (v INT, item INT, p INT) USING parquet PARTITIONED BY (p)")
    rows = ", ".join(f"({p * 100 + i}, {i % 3}, {p})" for p in range(1, 7) for i in range(5))
    spark.sql(f"INSERT INTO wc_fact VALUES {rows}, (999, 1, NULL)")
    # a partition whose folder is outside the table's location
    away = root / "elsewhere" / "p=42"
    away.mkdir(parents=True)
    pq.write_table(pa.table({"v": pa.array([4200, 4201], pa.int32()),
                             "item": pa.array([1, 2], pa.int32())}), away / "part-0.parquet")
    spark.sql(f"ALTER TABLE wc_fact ADD PARTITION (p=42) LOCATION '{away.as_uri()}'")
    dim = root / "wc_items"
    dim.mkdir()
    pq.write_table(pa.table({"i_item": pa.array([0, 1, 2], pa.int32()),
                             "i_name": ["zero", "one", "two"]}), dim / "d.parquet")
    spark.read.parquet(str(dim)).createOrReplaceTempView("wc_items")
    yield {"root": root}
    spark.sql("DROP TABLE IF EXISTS wc_fact")
    spark.catalog.dropTempView("wc_items")


def _expected(spark: Any, query: str) -> list[Any]:
    with spark_conf(spark, OFF):
        return _sorted(spark.sql(query).collect())


def _sorted(rows: list[Any]) -> list[Any]:
    return sorted(rows, key=repr)   # NULLs sort too


def _notes(dpp: DppSession) -> list[str]:
    return [n for n in dpp.last_report.analysis_notes if n.startswith("wc_fact:")]


def _scans(df: Any) -> list[str]:
    """The file scans of the optimized plan (the catalog table, or dpp's relation)."""
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    return [line for line in plan.splitlines() if "Relation" in line]


WHOLE = [
    "SELECT count(*) AS n, sum(v) AS s FROM wc_fact WHERE item = 1",
    "SELECT i.i_name, count(*) AS n, sum(f.v) AS s FROM wc_fact f JOIN wc_items i "
    "ON f.item = i.i_item WHERE i.i_name <> 'zero' GROUP BY i.i_name",
    "SELECT (SELECT count(*) FROM wc_fact WHERE item = 0) AS a, "
    "(SELECT sum(v) FROM wc_fact WHERE item = 2) AS b",
    "SELECT * FROM wc_fact WHERE item = 2",
]


def _run_checked(spark: Any, query: str) -> tuple[Any, list[str]]:
    """Runs ``query`` through a fresh DppSession, asserts Spark's rows (pruning off), and
    returns the DataFrame and the report's notes about wc_fact."""
    expected = _expected(spark, query)
    dpp = DppSession(spark)
    try:
        df = dpp.sql(query)
        assert _sorted(df.collect()) == expected
        return df, _notes(dpp)
    finally:
        dpp.close()


@pytest.mark.parametrize("query", WHOLE)
def test_read_whole_through_the_listing_gives_sparks_rows(spark, whole, query):
    df, notes = _run_checked(spark, query)
    assert len(notes) == 1 and NOTE in notes[0], notes
    # 6 partitions + NULL + the one at its own location
    assert "in 8 partitions" in notes[0]
    assert not any("wc_fact" in s for s in _scans(df)), _scans(df)


def test_size_estimate_and_shared_relation_are_sparks(spark, whole):
    """Spark sizes the handed relation as it sizes the catalog table, and a table's
    references read one relation (so Spark can still merge or reuse their scans)."""
    query = ("SELECT a.item, count(*) AS n FROM wc_fact a JOIN wc_fact b ON a.item = b.item "
             "WHERE a.item > 0 GROUP BY a.item")
    plain = spark.sql(query)
    dpp = DppSession(spark)
    try:
        df = dpp.sql(query)
        assert _sorted(df.collect()) == _sorted(plain.collect())
        assert len(_notes(dpp)) == 1
        size = int(spark.table("wc_fact")._jdf.queryExecution().optimizedPlan().stats()
                   .sizeInBytes())
        views = {t.get("table") for t in dpp.last_report.tables}
        assert views == {"wc_fact"}
        assert not any("wc_fact" in s for s in _scans(df)), _scans(df)
        leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
        assert leaves.size() == 2
        # one relation read twice (Spark can reuse the scan), sized as the catalog table is
        assert leaves.apply(0).sameResult(leaves.apply(1))
        # (the handoff scales the files' bytes by a factor: equal to a part in 100, where the
        # files alone are a few kB against the catalog's 8 EB default)
        for i in (0, 1):
            assert abs(int(leaves.apply(i).stats().sizeInBytes()) - size) <= size // 100
    finally:
        dpp.close()


def test_a_partition_added_between_queries_is_read(spark, whole):
    query = "SELECT count(*) AS n, sum(v) AS s FROM wc_fact WHERE item >= 0"
    dpp = DppSession(spark)
    try:
        before = dpp.sql(query).collect()
        assert before == _expected(spark, query)
        spark.sql("INSERT INTO wc_fact VALUES (700, 1, 7), (701, 2, 7)")
        after = dpp.sql(query).collect()
        assert after == _expected(spark, query)
        assert after[0]["n"] == before[0]["n"] + 2
        assert "in 9 partitions" in _notes(dpp)[0]
    finally:
        spark.sql("ALTER TABLE wc_fact DROP IF EXISTS PARTITION (p=7)")
        dpp.close()


@pytest.mark.parametrize("query", [
    "SELECT p, count(*) AS n FROM wc_fact WHERE item = 1 GROUP BY p",
    "SELECT count(*) AS n FROM wc_fact f JOIN wc_items i ON f.p = i.i_item",
    "SELECT P, count(*) AS n FROM wc_fact WHERE item = 2 GROUP BY P",
])
def test_a_named_partition_column_leaves_the_table_to_spark(spark, whole, query):
    """Spark may hold a partition filter there (and size the relation by it): not ours."""
    _, notes = _run_checked(spark, query)
    assert not any(NOTE in n for n in notes)


def test_cached_table_and_setting_off_stay_sparks(spark, whole):
    query = WHOLE[0]
    expected = _expected(spark, query)
    dpp = DppSession(spark)
    try:
        with spark_conf(spark, {"spark.dpp.listWholeCatalogTables": "false"}):
            assert _sorted(dpp.sql(query).collect()) == expected
            assert _notes(dpp) == []
        spark.sql("CACHE TABLE wc_fact")
        try:
            df = dpp.sql(query)
            assert _sorted(df.collect()) == expected
            assert [n for n in _notes(dpp) if "Spark's cache" in n]
            assert "InMemoryRelation" in df._jdf.queryExecution().optimizedPlan().toString()
        finally:
            spark.sql("UNCACHE TABLE wc_fact")
        dpp.sql(query)   # uncached again: listed by dpp
        assert NOTE in _notes(dpp)[0]
    finally:
        dpp.close()


# ------------------------------------------------------------ every partition at root/k=v

STD_NOTE = "listed by Spark's reader"


@pytest.fixture(scope="module")
def standard(spark: Any, whole: dict[str, Any]) -> Iterator[str]:
    """``wc_std``: every partition where Spark puts it (the NULL one included)."""
    spark.sql("DROP TABLE IF EXISTS wc_std")
    spark.sql("CREATE TABLE wc_std (v INT, item INT, p INT) USING parquet PARTITIONED BY (p)")
    rows = ", ".join(f"({p * 100 + i}, {i % 3}, {p})" for p in range(1, 7) for i in range(5))
    spark.sql(f"INSERT INTO wc_std VALUES {rows}, (999, 1, NULL)")
    yield "wc_std"
    spark.sql("DROP TABLE IF EXISTS wc_std")


class _NoLoader:
    """Stands in for the split loader: a standard table read whole must not be listed by
    dpp (Spark lists the folders; a second listing would be thrown away)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the split loader listed a standard table read whole")


def _std_notes(dpp: DppSession, table: str) -> list[str]:
    return [n for n in dpp.last_report.analysis_notes if n.startswith(f"{table}:")]


@pytest.mark.parametrize("query", [q.replace("wc_fact", "wc_std") for q in WHOLE])
def test_a_standard_table_read_whole_is_listed_by_spark_once(spark, standard, query,
                                                             monkeypatch):
    import dpp.frontends.sql.whole_tables as whole_module

    monkeypatch.setattr(whole_module, "SplitLoader", _NoLoader)
    expected = _expected(spark, query)
    dpp = DppSession(spark)
    try:
        df = dpp.sql(query)
        assert _sorted(df.collect()) == expected
        notes = _std_notes(dpp, "wc_std")
        assert len(notes) == 1 and NOTE in notes[0] and STD_NOTE in notes[0], notes
        files = len(spark.table("wc_std").inputFiles())
        assert f"{files} files in 7 partition folders" in notes[0]
        assert not any("wc_std" in s for s in _scans(df)), _scans(df)
    finally:
        dpp.close()


def test_a_standard_table_is_sized_as_the_catalog_table(spark, standard):
    query = ("SELECT a.item, count(*) AS n FROM wc_std a JOIN wc_std b ON a.item = b.item "
             "WHERE a.item > 0 GROUP BY a.item")
    expected = _expected(spark, query)
    size = int(spark.table("wc_std")._jdf.queryExecution().optimizedPlan().stats()
               .sizeInBytes())
    dpp = DppSession(spark)
    try:
        df = dpp.sql(query)
        assert _sorted(df.collect()) == expected
        assert STD_NOTE in _std_notes(dpp, "wc_std")[0]
        leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
        assert leaves.size() == 2 and leaves.apply(0).sameResult(leaves.apply(1))
        for i in (0, 1):
            assert abs(int(leaves.apply(i).stats().sizeInBytes()) - size) <= size // 100
    finally:
        dpp.close()


def test_a_missing_partition_folder_leaves_the_table_to_spark(spark, whole, tmp_path):
    """The catalog names a partition whose folder is gone: Spark's reader refuses the path,
    and the table is read by Spark's own catalog listing, with Spark's rows."""
    import shutil

    spark.sql("DROP TABLE IF EXISTS wc_gone")
    spark.sql(f"CREATE TABLE wc_gone (v INT, item INT, p INT) USING parquet "
              f"PARTITIONED BY (p) LOCATION '{(tmp_path / 'wc_gone').as_uri()}'")
    try:
        spark.sql("INSERT INTO wc_gone VALUES (1, 1, 1), (2, 1, 2), (3, 2, 3)")
        shutil.rmtree(tmp_path / "wc_gone" / "p=2")
        spark.catalog.refreshTable("wc_gone")
        query = "SELECT count(*) AS n, sum(v) AS s FROM wc_gone"
        expected = _expected(spark, query)
        dpp = DppSession(spark)
        try:
            assert _sorted(dpp.sql(query).collect()) == expected
            notes = _std_notes(dpp, "wc_gone")
            assert len(notes) == 1 and "listing it whole failed" in notes[0], notes
        finally:
            dpp.close()
    finally:
        spark.sql("DROP TABLE IF EXISTS wc_gone")
