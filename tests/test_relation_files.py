"""Spark defines every relation; dpp only removes.

For each kind of relation dpp prunes — a catalog table (partitions at custom locations outside
the table folder, a NULL partition, string values Spark escapes in folder names), a
``spark.read.parquet`` relation, a declared table (``spark.dpp.tables.NAME``) — the files the
pruned scan lists are taken from the executed plan's file scan and compared with the files
Spark's own scan of the same relation lists with dpp off, as the same path strings: a subset,
a strict one where dpp pruned, and the query's rows equal Spark's with every dynamic pruning
off. A declared table is compared with ``spark.read.parquet(folder)``.
"""
from __future__ import annotations

import shutil
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
# value -> folder name as Spark escapes it (None: the default partition)
FOLDERS = {"east": "k=east", "west": "k=west", "a/b": "k=a%2Fb", "x=y": "k=x%3Dy",
           "has space": "k=has space", None: "k=__HIVE_DEFAULT_PARTITION__"}
FAR = {"far": "far away", "q/r": "qr"}      # catalog partitions at custom locations
PICKED = {"a/b", "x=y", "has space", "far"}
ITEMS = 20                                  # file j of a partition holds items j*10 .. j*10+9


def _write(folder: Any, tag: int) -> None:
    folder.mkdir(parents=True)
    for j in range(2):
        items = list(range(j * 10, j * 10 + 10))
        pq.write_table(pa.table({"item": pa.array(items, pa.int32()),
                                 "amount": pa.array([tag * 1000 + i for i in items],
                                                    pa.int64())}),
                       folder / f"part-{j}.parquet")


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("relation_files")
    sales = root / "sales"
    for tag, name in enumerate(FOLDERS.values()):
        _write(sales / name, tag)
    cat = root / "cat"
    shutil.copytree(sales, cat)
    for tag, name in enumerate(FAR.values()):
        _write(root / "elsewhere" / name, 100 + tag)
    dims = root / "dims"
    dims.mkdir()
    keys = ["east", "a/b", "x=y", "has space", "far", "q/r"]
    pq.write_table(pa.table({"dk": keys, "pick": ["y" if k in PICKED else "n" for k in keys]}),
                   dims / "part-0.parquet")
    items = root / "items"
    items.mkdir()
    pq.write_table(pa.table({"item_id": pa.array(range(ITEMS), pa.int32()),
                             "cat": ["x" if i in (12, 13) else "y" for i in range(ITEMS)]}),
                   items / "part-0.parquet")
    spark.sql("DROP TABLE IF EXISTS rf_cat")
    spark.sql(f"CREATE TABLE rf_cat (item INT, amount BIGINT, k STRING) USING parquet "
              f"PARTITIONED BY (k) LOCATION '{cat}'")
    spark.sql("ALTER TABLE rf_cat RECOVER PARTITIONS")
    for value, name in FAR.items():
        spark.sql(f"ALTER TABLE rf_cat ADD PARTITION (k='{value}') "
                  f"LOCATION '{root / 'elsewhere' / name}'")
    spark.read.parquet(str(sales)).createOrReplaceTempView("rf_path")
    spark.read.parquet(str(dims)).createOrReplaceTempView("rf_dim")
    spark.read.parquet(str(items)).createOrReplaceTempView("rf_items")
    with spark_conf(spark, {"spark.dpp.tables.rf_decl": str(sales),
                            "spark.dpp.sqlPath": "hook",
                            "spark.dpp.statsPruning.enabled": "true"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session, "sales": str(sales)}
        finally:
            dpp.disable(spark)
            spark.sql("DROP TABLE IF EXISTS rf_cat")
            for view in ("rf_path", "rf_dim", "rf_items"):
                spark.catalog.dropTempView(view)


def _seq(s: Any) -> list[Any]:
    return [s.apply(i) for i in range(s.size())]


def _scans(node: Any) -> list[Any]:
    """The file scans of an executed plan, adaptive stages, reused exchanges and subqueries
    included."""
    name = node.getClass().getSimpleName()
    found = [node] if name == "FileSourceScanExec" else []
    more = _seq(node.children()) + _seq(node.subqueries())
    if name == "AdaptiveSparkPlanExec":
        more.append(node.executedPlan())
    elif name.endswith("QueryStageExec"):
        more.append(node.plan())
    elif name.startswith("Reused"):
        more.append(node.child())
    for child in more:
        found.extend(_scans(child))
    return found


def _files(scan: Any) -> set[str]:
    """The files the scan's file index answered (Spark's own dynamic pruning not applied:
    what dpp's index returned, or Spark's own with dpp off)."""
    out = set()
    selected = scan.selectedPartitions()
    if selected.getClass().isArray():   # Spark 3.5: an array of PartitionDirectory
        for part in selected:
            it = part.files().iterator()
            while it.hasNext():
                out.add(it.next().getPath().toString())
        return out
    it = selected.filePartitionIterator()   # Spark 4: a ScanFileListing
    while it.hasNext():
        files = it.next().files()
        while files.hasNext():
            out.add(files.next().getPath().toString())
    return out


def _fact_scan(df: Any) -> tuple[set[str], str]:
    """(files, index class) of the one partitioned scan of ``df``'s executed plan."""
    scans = [s for s in _scans(df._jdf.queryExecution().executedPlan())
             if s.relation().partitionSchema().size() > 0]
    assert len({s.relation().location().toString() for s in scans}) == 1, \
        [s.toString() for s in scans]
    files: set[str] = set()
    for s in scans:
        files |= _files(s)
    return files, scans[0].relation().location().getClass().getSimpleName()


def _spark_files(spark: Any, sql: str) -> set[str]:
    with spark_conf(spark, OFF):
        df = spark.sql(sql)
        df.collect()
        files, kind = _fact_scan(df)
        assert kind != "DppFileIndex"
        return files


def _check(spark: Any, data: dict[str, Any], fact: str, whole: str, join: str
           ) -> tuple[set[str], set[str], Any]:
    """Runs the join with dpp and without; returns (dpp's files, Spark's files of ``whole``,
    the report) after checking rows and the subset."""
    sql = (f"SELECT f.k, f.item, f.amount FROM {fact} f {join}")
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.sql(sql).collect()), key=repr)
    data["session"].last_report = None
    df = spark.sql(sql)
    got = sorted(map(tuple, df.collect()), key=repr)
    assert got == expected
    files, kind = _fact_scan(df)
    assert kind == "DppFileIndex"
    every = _spark_files(spark, whole)
    assert files <= every, sorted(files - every)
    return files, every, data["session"].last_report


BY_KEY = "JOIN rf_dim d ON f.k = d.dk WHERE d.pick = 'y'"
BY_ITEM = "JOIN rf_items i ON f.item = i.item_id WHERE i.cat = 'x'"


def test_catalog_table_by_partition(spark: Any, data: dict[str, Any]) -> None:
    files, every, report = _check(spark, data, "rf_cat", "SELECT * FROM rf_cat", BY_KEY)
    assert files < every
    # exactly Spark's own answer for the kept partitions
    picked = ", ".join("'" + k + "'" for k in sorted(PICKED))
    assert files == _spark_files(spark, f"SELECT * FROM rf_cat WHERE k IN ({picked})")
    t = report.tables[0]
    assert (t.partitions_total, t.partitions_kept, t.pruned_dynamic) == (8, 4, 4)
    # Spark's catalog index lists the kept partitions; dpp lists nothing of them
    assert (t.folders_listed, t.files_listed) == (0, 0)


def test_catalog_table_by_statistics(spark: Any, data: dict[str, Any]) -> None:
    files, every, report = _check(spark, data, "rf_cat", "SELECT * FROM rf_cat", BY_ITEM)
    assert files < every
    # items 12, 13 sit in part-1 of every partition: part-0 is skipped everywhere, the
    # NULL partition and those at custom locations included
    assert files == {f for f in every if f.endswith("part-1.parquet")}
    assert len(files) == 8
    t = report.tables[0]
    assert t.files_pruned_stats == 8
    assert (t.partitions_total, t.partitions_kept, t.files_listed) == (8, 8, 16)


def test_catalog_table_kept_null_partition(spark: Any, data: dict[str, Any]) -> None:
    # the NULL partition's key is 'far' here: kept, with the picked ones, by a predicate
    join = "JOIN rf_dim d ON coalesce(f.k, 'far') = d.dk WHERE d.pick = 'y'"
    files, every, report = _check(spark, data, "rf_cat", "SELECT * FROM rf_cat", join)
    assert files < every
    picked = ", ".join("'" + k + "'" for k in sorted(PICKED))
    assert files == _spark_files(spark, f"SELECT * FROM rf_cat WHERE k IN ({picked}) "
                                        f"OR k IS NULL")
    assert any("__HIVE_DEFAULT_PARTITION__" in f for f in files)
    t = report.tables[0]
    assert (t.partitions_total, t.partitions_kept, t.pruned_dynamic) == (8, 5, 3)


def test_path_relation(spark: Any, data: dict[str, Any]) -> None:
    files, every, _report = _check(spark, data, "rf_path", "SELECT * FROM rf_path", BY_KEY)
    assert files < every
    assert len(files) == 6   # a/b, x=y, has space: two files each


def test_declared_table(spark: Any, data: dict[str, Any]) -> None:
    spark.read.parquet(data["sales"]).createOrReplaceTempView("rf_plain")
    try:
        files, every, _report = _check(spark, data, "rf_decl", "SELECT * FROM rf_plain",
                                       BY_KEY)
    finally:
        spark.catalog.dropTempView("rf_plain")
    assert files < every
    assert len(files) == 6
