"""A declared table pruned on the SQL-text road (a session without the optimizer hook) and by
``DppSession.join`` is Spark's reader of its folder made for the query, less the partitions
the loader ruled out: what the folder holds now (files, columns, partition types) is Spark's
to say, and dpp only removes rows of folders it proved cannot match. Each case compares the
rows with the same query on the same session with dpp off.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from dpp.runtime.handoff import pruned_predicate
from dpp.runtime.remote_catalog import predicate_sql
from hive_splits import table_from_path
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

FACT = "sth_fact"
DIM = "sth_dim"
QUERY = f"SELECT f.p, f.v FROM {FACT} f JOIN {DIM} d ON f.p = d.k WHERE d.keep"


def _file(folder: Path, name: str, table: pa.Table) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / name)


@pytest.fixture()
def text_road(spark: Any, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """A fact folder of partitions p=1..6 declared as ``FACT``; a dimension keeping p in
    (2, 5); dpp enabled without the optimizer hook."""
    root = tmp_path / "fact"
    for p in range(1, 7):
        _file(root / f"p={p}", "part-0.parquet",
              pa.table({"v": pa.array([p * 10, p * 10 + 1], pa.int64())}))
    spark.createDataFrame([(k, k in (2, 5)) for k in range(1, 7)], "k int, keep boolean") \
        .createOrReplaceTempView(DIM)
    with spark_conf(spark, {"spark.dpp.optimizerHook": "false",
                            f"spark.dpp.tables.{FACT}": str(root)}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is None
        try:
            yield session, root
        finally:
            dpp.disable(spark)
            spark.catalog.dropTempView(FACT)
            spark.catalog.dropTempView(DIM)


def _rows(df: Any) -> list[tuple]:
    return sorted(map(tuple, df.collect()), key=repr)


def _off(spark: Any, root: Path, query: str) -> list[tuple]:
    """The query as Spark answers it with nothing of dpp: the folder read by Spark's reader."""
    spark.read.parquet(str(root)).createOrReplaceTempView("sth_off")
    try:
        return _rows(spark.sql(query.replace(FACT, "sth_off")))
    finally:
        spark.catalog.dropTempView("sth_off")


def _entry(session: Any) -> dict:
    report = session.last_report.to_dict()
    return [t for t in report["tables"] if t["table"] == FACT][0]


def test_a_pruned_declared_table_reads_sparks_reader_less_the_pruned_folders(
        spark: Any, text_road: tuple[Any, Path]) -> None:
    session, root = text_road
    want = _off(spark, root, QUERY)
    assert want and {r[0] for r in want} == {2, 5}
    assert _rows(session.sql(QUERY)) == want
    entry = _entry(session)
    assert entry["partitions_kept"] == 2 and entry["partitions_total"] == 6, entry


def test_a_file_with_a_wider_column_added_since_declaration_reads_as_spark_reads_it(
        spark: Any, text_road: tuple[Any, Path]) -> None:
    """The folder's files rewritten with another column type after the table was declared:
    the handoff read the kept files with the declared schema and failed (or mis-read) where
    Spark's reader infers the new one."""
    session, root = text_road
    assert _rows(session.sql(QUERY)) == _off(spark, root, QUERY)
    for p in range(1, 7):
        (root / f"p={p}" / "part-0.parquet").unlink()
        _file(root / f"p={p}", "part-0.parquet",
              pa.table({"v": pa.array([f"s{p}"], pa.string()), "w": pa.array([p])}))
    want = _off(spark, root, QUERY)
    assert {r[1] for r in want} == {"s2", "s5"}
    assert _rows(session.sql(QUERY)) == want


def test_a_partition_whose_value_changes_sparks_type_is_read_with_the_new_type(
        spark: Any, text_road: tuple[Any, Path]) -> None:
    """A folder added since declaration makes Spark's reader type the partition column as a
    string: the loader read the declared int and failed on it (a query Spark answers). The
    table is read again as Spark reads it now, and prunes by the string values."""
    session, root = text_road
    spark.createDataFrame([(str(k), k in (2, 5)) for k in range(1, 7)],
                          "k string, keep boolean").createOrReplaceTempView(DIM)
    assert _rows(session.sql(QUERY)) == _off(spark, root, QUERY)
    # p is an int to both: a string key does not prune it
    assert not [t for t in session.last_report.to_dict()["tables"]
                if t["table"] == FACT and t["pruning"] != "none"]
    _file(root / "p=x7", "part-0.parquet", pa.table({"v": pa.array([70], pa.int64())}))
    want = _off(spark, root, QUERY)
    assert {r[0] for r in want} == {"2", "5"}
    assert _rows(session.sql(QUERY)) == want
    entry = _entry(session)
    assert (entry["partitions_kept"], entry["partitions_total"]) == (2, 7), entry


def test_a_declared_table_spark_reads_otherwise_is_read_whole_and_says_which_column(
        spark: Any, text_road: tuple[Any, Path]) -> None:
    """Spark's reader and dpp's reading of the folder disagree and reading it again does not
    help (the partition types are Spark's inference off): nothing is pruned, the report
    names the column and both types, the rows are Spark's."""
    session, root = text_road
    with spark_conf(spark, {"spark.sql.sources.partitionColumnTypeInference.enabled":
                            "false"}):
        want = _off(spark, root, QUERY)
        assert {r[0] for r in want} == {"2", "5"}
        assert _rows(session.sql(QUERY)) == want
        entry = _entry(session)
    assert entry["pruning"] == "none"
    assert entry["reason_code"] in ("type-differs", "type-mismatch"), entry


def test_a_folder_added_after_the_loader_listed_is_read(spark: Any, tmp_path: Path) -> None:
    """Only folders the loader ruled out are removed: one it never saw stays (here: a
    folder the predicate of pruned folders cannot name)."""
    root = tmp_path / "fact"
    for p in (1, 2, 3):
        _file(root / f"p={p}", "part-0.parquet", pa.table({"v": pa.array([p], pa.int64())}))
    table = table_from_path(str(root), name=FACT)
    pred = pruned_predicate(table, ["p=1", "p=3", "q=9", "p=1/r=2"])
    # the stray names are left out (their rows would stay), the rest grouped under one term
    assert predicate_sql(pred) == "`p` IN (CAST('1' AS int), CAST('3' AS int))"
    df = spark.read.parquet(str(root))
    _file(root / "p=4", "part-0.parquet", pa.table({"v": pa.array([4], pa.int64())}))
    from pyspark.sql import functions as F
    from dpp.runtime.remote_catalog import predicate_column

    kept = spark.read.parquet(str(root)).where(
        ~F.coalesce(predicate_column(pred, F), F.lit(False)))
    assert sorted(r.p for r in kept.collect()) == [2, 4]
    assert df.count() == 3


def test_pruned_folders_of_two_levels_and_the_default_partition(spark: Any,
                                                                tmp_path: Path) -> None:
    """Folders pruned at either level, NULL (the default partition) among them: exactly
    their rows go, and a kept NULL partition stays (the predicate is never NULL itself)."""
    root = tmp_path / "fact2"
    for a in ("1", "2", "__HIVE_DEFAULT_PARTITION__"):
        for b in ("x", "y", "__HIVE_DEFAULT_PARTITION__"):
            _file(root / f"a={a}" / f"b={b}", "part-0.parquet",
                  pa.table({"v": pa.array([1], pa.int64())}))
    table = table_from_path(str(root), name="two")
    pruned = ["a=1", "a=2/b=__HIVE_DEFAULT_PARTITION__", "a=__HIVE_DEFAULT_PARTITION__/b=y"]
    pred = pruned_predicate(table, pruned)
    from pyspark.sql import functions as F
    from dpp.runtime.remote_catalog import predicate_column

    df = spark.read.parquet(str(root))
    kept = df.where(~F.coalesce(predicate_column(pred, F), F.lit(False)))
    got = sorted(((r.a, r.b) for r in kept.collect()), key=repr)
    assert got == sorted([(2, "x"), (2, "y"), (None, "x"), (None, None)], key=repr), got


def test_dpp_join_reads_a_declared_table_as_spark_reads_it_now(
        spark: Any, text_road: tuple[Any, Path]) -> None:
    session, root = text_road
    for p in range(1, 7):
        (root / f"p={p}" / "part-0.parquet").unlink()
        _file(root / f"p={p}", "part-0.parquet", pa.table({"v": pa.array([f"s{p}"])}))
    dim = spark.table(DIM).where("keep")
    got = session.join(FACT, dim, on=[("p", "k")]).select("p", "v")
    fact = spark.read.parquet(str(root))
    want = fact.join(dim, fact["p"] == dim["k"]).select("p", "v")
    assert _rows(got) == _rows(want)
    entry = _entry(session)
    assert entry["partitions_kept"] == 2, entry


@pytest.mark.parametrize("shadow", [False, True])
def test_files_skipped_by_statistics_are_removed_by_sparks_own_file_names(
        spark: Any, tmp_path: Path, shadow: bool) -> None:
    """Statistics pruning on a declared table (the SQL-text road): the files whose footers
    rule out every key are removed by Spark's own name for them (``_metadata.file_path``;
    names with a space and a percent sign), the rest read. A table with a column of its own
    named ``_metadata`` hides Spark's: nothing is removed by file, and the report counts
    those files as read."""
    root = tmp_path / "t x%y"
    for p in (1, 2):
        for item in range(4):
            extra = {"_metadata": pa.array(["m"] * 3)} if shadow else {}
            _file(root / f"p={p}", f"part {item}.parquet",
                  pa.table({"item": pa.array([item] * 3, pa.int64()),
                            "v": pa.array([p, p, p], pa.int64()), **extra}))
    spark.createDataFrame([(i, i in (1, 2)) for i in range(4)], "i int, keep boolean") \
        .createOrReplaceTempView(DIM)
    query = f"SELECT f.p, f.item, f.v FROM {FACT} f JOIN {DIM} d ON f.item = d.i WHERE d.keep"
    with spark_conf(spark, {"spark.dpp.optimizerHook": "false",
                            "spark.dpp.statsPruning.enabled": "true",
                            f"spark.dpp.tables.{FACT}": str(root)}):
        session = dpp.enable(spark)
        try:
            want = _off(spark, root, query)
            assert len(want) == 12
            assert _rows(session.sql(query)) == want
            entry = _entry(session)
        finally:
            dpp.disable(spark)
            spark.catalog.dropTempView(FACT)
            spark.catalog.dropTempView(DIM)
    if shadow:
        assert (entry["files_pruned_stats"], entry["files_kept"]) == (0, 8), entry
    else:
        assert (entry["files_pruned_stats"], entry["files_kept"]) == (4, 4), entry


def test_sparks_file_names_are_matched_decoded() -> None:
    from dpp.runtime.handoff import _decoded

    assert _decoded("file:/tmp/t%20x%25y/p=1/part%200.parquet") == "/tmp/t x%y/p=1/part 0.parquet"
    assert _decoded("file:///tmp/a/b.parquet") == "/tmp/a/b.parquet"
    assert _decoded("s3a://bucket/t%20x/p=%C3%A9/f.parquet") == "s3a://bucket/t x/p=é/f.parquet"


@pytest.mark.parametrize("ansi", ["false", "true"])
def test_a_narrowing_compares_as_the_join_does(spark: Any, text_road: tuple[Any, Path],
                                                ansi: str) -> None:
    """``d`` filters nothing, ``x`` does: ``d``'s keys are narrowed to the rows some ``x`` row
    matches. ``d.w`` is a STRING, ``x.w`` an INT: with ANSI off the join matches '01' to 1,
    which an IN subquery (both sides as STRING first) does not — written as IN, the build
    side lost the key 1 and the fact its rows; with ANSI on Spark rejects the IN and dpp ran
    unpruned. Written as the join's own equality, both prune and keep every row."""
    session, root = text_road
    rows = [(1, "01"), (2, "1"), (3, "2"), (5, "3"), (6, "4")]
    if ansi == "false":   # (with ANSI on, Spark's own join fails on it)
        rows.append((4, "x"))
    spark.createDataFrame(rows, "k int, w string").createOrReplaceTempView("sth_d2")
    spark.createDataFrame([(1, True), (2, False)], "w int, keep boolean") \
        .createOrReplaceTempView("sth_x")
    query = (f"SELECT f.p, f.v FROM {FACT} f JOIN sth_d2 d ON f.p = d.k JOIN sth_x x "
             f"ON d.w = x.w WHERE x.keep")
    try:
        with spark_conf(spark, {"spark.sql.ansi.enabled": ansi}):
            want = _off(spark, root, query)
            assert {r[0] for r in want} == {1, 2}
            assert _rows(session.sql(query)) == want
            entry = _entry(session)
            notes = session.last_report.to_dict()["analysis_notes"]
    finally:
        spark.catalog.dropTempView("sth_d2")
        spark.catalog.dropTempView("sth_x")
    assert entry["pruning"] == "applied" and entry["partitions_kept"] == 2, (entry, notes)


def _many_kept(spark: Any, tmp_path: Path, name: str) -> tuple[list, list, dict]:
    """A catalog table of 240 partitions joined to a dimension keeping 234 of them, on the
    SQL-text road: its rows, Spark's rows with dpp off, and the table's report entry."""
    dim = f"{name}_dim"
    root = tmp_path / name
    for p in range(1, 241):
        _file(root / f"p={p}", "part-0.parquet", pa.table({"v": pa.array([p], pa.int64())}))
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (v BIGINT, p INT) USING parquet PARTITIONED BY (p) "
              f"LOCATION '{root}'")
    spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
    spark.createDataFrame([(k, k % 40 != 0) for k in range(1, 241)], "k int, keep boolean") \
        .createOrReplaceTempView(dim)
    query = f"SELECT f.p, f.v FROM {name} f JOIN {dim} d ON f.p = d.k WHERE d.keep"
    try:
        expected = _rows(spark.sql(query))
        with spark_conf(spark, {"spark.dpp.optimizerHook": "false"}):
            session = dpp.enable(spark)
            try:
                got = _rows(session.sql(query))
                entry = [t for t in session.last_report.to_dict()["tables"]
                         if t["table"].endswith(name)][0]
            finally:
                dpp.disable(spark)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.catalog.dropTempView(dim)
    return got, expected, entry


def test_a_catalog_table_keeping_many_partitions_is_narrowed_without_a_metastore_filter(
        spark: Any, tmp_path: Path) -> None:
    """More than 200 kept partitions of a catalog table: the narrowing is one membership
    test Spark does not send to the metastore (an IN list of them was sent, as one long OR
    the Hive metastore refused: the query failed)."""
    got, expected, entry = _many_kept(spark, tmp_path, "sth_many")
    assert got == expected and len(expected) == 234
    assert entry["pruning"] == "applied", entry
    assert (entry["partitions_kept"], entry["partitions_total"]) == (234, 240), entry


def test_a_narrowing_spark_cannot_plan_runs_the_query_unpruned(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A narrowed relation Spark fails to plan (here: dpp's narrowing made an IN list the
    Hive metastore refuses) costs the pruning, reported, never the query: Spark's own
    optimization runs before the rewritten query is returned."""
    from dpp.runtime.handoff import Handoff

    def in_list(self: Any, spark_: Any, table: Any, result: Any) -> Any:
        from pyspark.sql import functions as F
        c = table.partition_columns[0]
        vals = sorted({kp.texts.get(c.name) for kp in result.partitions} - {None})
        return spark_.table(table.catalog_name or table.name).where(
            F.col(c.name).isin(*[F.lit(v).cast(c.type.simple_string()) for v in vals]))

    monkeypatch.setattr(Handoff, "_catalog_kept", in_list)
    got, expected, entry = _many_kept(spark, tmp_path, "sth_refused")
    assert got == expected and len(expected) == 234
    assert entry["pruning"] == "none" and entry["reason_code"] == "rewrite-failed", entry
