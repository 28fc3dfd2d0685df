"""hive_splits against Spark itself: naming, type inference, round trips, catalog tables."""
from __future__ import annotations

import datetime as dt
import decimal
import shutil
from collections import Counter
from pathlib import Path

import pytest

from dpp.core.domain import DATE, INT, STRING, Domain, TupleDomain, decimal_type
from dpp.core.errors import LayoutError
from hive_splits import (DynamicFilter, SplitLoader, escape_path_name, spark_ddl,
                         table_from_catalog, table_from_path, to_dataframe,
                         unescape_path_name)
from hive_splits.table import infer_column_type

from tests.conftest import answer, write_parquet

SPECIAL = ["a:b", "a/b", "50%", "x y", "ünï", "#", "=", "plain", "a\tb", "{[*?]}", "%41"]


def rows(df) -> Counter:
    return Counter(tuple(r) for r in df.collect())


def test_escaping_matches_spark(spark) -> None:
    utils = spark._jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
    sample = "".join(chr(i) for i in range(1, 256)) + "ünï☃𝄞 "
    probe = "\x00" + sample
    assert escape_path_name(probe) == utils.escapePathName(probe)
    for s in ["%41", "%4", "%zz1", "a%41%", "%%41", "%+1x", "%e9", "%C3%A9", "%3a%3A", "50%"]:
        assert unescape_path_name(s) == utils.unescapePathName(s), s


def test_partition_type_inference_matches_spark(spark, tmp_path: Path) -> None:
    cases = {
        "i": ["1", "+2", "007"], "l": ["1", "3000000000"], "d": ["1", "99999999999999999999"],
        "f": ["1.5", "2"], "dt": ["2020-01-01", "2020-01-02"], "s": ["1", "abc"],
        "ts": ["2020-01-01 00%3A00%3A00", "2020-01-02 01%3A02%3A03.5"], "dtts":
        ["2020-01-01", "2020-01-02 00%3A00%3A00"], "mix": ["1", "2020-01-01"],
        "dl": ["1.5", "99999999999999999999"], "fl": ["1.5", "3000000000"], "e": ["1e5", "2"],
        "ni": ["__HIVE_DEFAULT_PARTITION__", "3"],
    }
    for col, values in cases.items():
        for v in values:
            write_parquet(tmp_path / col / f"{col}={v}" / "f.parquet", {"x": [1]})
        spark_type = spark.read.parquet(str(tmp_path / col)).schema[col].dataType.simpleString()
        t = table_from_path(str(tmp_path / col))
        assert t.partition_columns[0].type.simple_string() == spark_type, col
    assert infer_column_type([None, None]).simple_string() == "string"  # Spark says void


def test_round_trip_with_sparks_writer_special_characters_and_nulls(spark, tmp_path) -> None:
    data = [(i, v) for i, v in enumerate(SPECIAL + [None, ""] + SPECIAL)]
    path = str(tmp_path / "special")
    spark.createDataFrame(data, "x int, s string").write.partitionBy("s").parquet(path)
    t = table_from_path(path)
    assert [(c.name, c.type) for c in t.partition_columns] == [("s", STRING)]
    result = SplitLoader(t).load()
    assert result.partitions_kept == len(SPECIAL) + 1  # "" and NULL share the default folder
    got = to_dataframe(spark, t, result)
    expected = spark.read.parquet(path)
    assert got.schema.simpleString() == expected.schema.simpleString()
    assert rows(got) == rows(expected)
    # pruned: only some special values, and NULL
    static = TupleDomain.of({"s": Domain.values(STRING, ["a/b", "50%", "ünï"],
                                                null_allowed=True)})
    result = SplitLoader(t, static).load()
    got = to_dataframe(spark, t, result)
    assert rows(got) == rows(expected.where("s in ('a/b', '50%', 'ünï') or s is null"))


def test_round_trip_typed_partitions_two_levels(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "typed")
    data = [(i, i % 3 if i % 4 else None, dt.date(2000, 1, 1 + i % 2),
             decimal.Decimal(i % 5).scaleb(-1)) for i in range(24)]
    (spark.createDataFrame(data, "x int, a int, b date, c decimal(4,1)")
     .write.partitionBy("a", "b").parquet(path))
    t = table_from_path(path, partition_types={"a": "int", "b": "date"})
    expected = spark.read.schema(spark_ddl(t)).parquet(path)
    dyn = DynamicFilter("fb", "b", lambda timeout: answer(Domain.values(DATE,
                                                                       [dt.date(2000, 1, 2)])))
    result = SplitLoader(t, TupleDomain.of({"a": Domain.values(INT, [1, 2])}), [dyn],
                         wait_timeout=5).load()
    got = to_dataframe(spark, t, result)
    assert dict(got.dtypes) == {"x": "int", "c": "decimal(4,1)", "a": "int", "b": "date"}
    assert rows(got) == rows(expected.where("a in (1, 2) and b = date'2000-01-02'"))
    assert rows(to_dataframe(spark, t, SplitLoader(t).load())) == rows(expected)


def test_no_splits_gives_an_empty_dataframe_with_the_schema(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "e")
    spark.createDataFrame([(1, 2)], "x int, d int").write.partitionBy("d").parquet(path)
    t = table_from_path(path)
    df = to_dataframe(spark, t, SplitLoader(t, TupleDomain.of(
        {"d": Domain.values(INT, [7])})).load())
    assert df.count() == 0 and df.schema.simpleString() == "struct<x:int,d:int>"


def test_catalog_table_with_custom_partition_location(spark, tmp_path: Path) -> None:
    name = "hs_catalog_t"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        data = [(i, i % 3, "v:" + str(i % 2) if i % 5 else None) for i in range(20)]
        (spark.createDataFrame(data, "x int, p int, q string")
         .write.partitionBy("p", "q").saveAsTable(name))
        custom = tmp_path / "elsewhere" / "anything"
        spark.createDataFrame([(100,), (101,)], "x int").write.parquet(str(custom))
        spark.sql(f"ALTER TABLE {name} ADD PARTITION (p=9, q='a/b') LOCATION '{custom}'")
        t = table_from_catalog(spark, name)
        assert t.is_catalog and t.partition_names == ("p", "q")
        assert [c.type for c in t.partition_columns] == [INT, STRING]
        assert len(t.catalog_partitions) == 10
        expected = spark.table(name)
        static = TupleDomain.of({"p": Domain.values(INT, [0, 9])})
        result = SplitLoader(t, static).load()
        assert (result.partitions_total, result.partitions_kept) == (10, 4)
        assert result.folders_listed == 4  # only kept locations, no table-wide listing
        assert any(s.path.startswith(str(custom)) for s in result.splits)
        got = to_dataframe(spark, t, result)
        assert rows(got) == rows(expected.where("p in (0, 9)"))
        assert rows(got.where("p = 9")) == Counter({(100, 9, "a/b"): 1, (101, 9, "a/b"): 1})
        # NULL partition through the catalog, dynamic filter on q
        dyn = DynamicFilter("fq", "q", lambda timeout: answer(Domain.only_null(STRING)))
        got = to_dataframe(spark, t, SplitLoader(t, None, [dyn], wait_timeout=5).load())
        assert rows(got) == rows(expected.where("q is null"))
        # a kept partition whose location is gone holds no file, as Spark's catalog index
        # reads it (its metastore entry left behind): Spark's rows, the location named
        shutil.rmtree(custom)
        result = SplitLoader(t, static).load()
        assert result.missing_locations == [str(custom)] or \
            [m.rstrip("/") for m in result.missing_locations] == [str(custom).rstrip("/")]
        assert not any(s.path.startswith(str(custom)) for s in result.splits)
        spark.catalog.refreshTable(name)   # Spark's file-status cache still holds its files
        assert rows(to_dataframe(spark, t, result)) == \
            rows(spark.table(name).where("p in (0, 9)"))
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_catalog_table_created_with_sql(spark, tmp_path: Path) -> None:
    name = "hs_catalog_sql"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        spark.sql(f"CREATE TABLE {name} (x INT, d DECIMAL(5,2)) USING parquet "
                  f"PARTITIONED BY (d)")
        spark.sql(f"INSERT INTO {name} VALUES (1, 1.50), (2, 2.25), (3, NULL)")
        t = table_from_catalog(spark, name)
        assert t.partition_columns[0].type == decimal_type(5, 2)
        static = TupleDomain.of({"d": Domain.values(decimal_type(5, 2),
                                                    [decimal.Decimal("2.25")])})
        got = to_dataframe(spark, t, SplitLoader(t, static).load())
        assert rows(got) == Counter({(2, decimal.Decimal("2.25")): 1})
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_many_paths_reach_spark_in_one_string(spark, tmp_path: Path) -> None:
    """Past 64 paths the handoff sends them as one string split in the JVM (not a py4j call
    per path); Spark reads exactly what it reads given the paths one by one — including
    paths with spaces, '%' escapes and glob characters, made as the handoff makes them."""
    from hive_splits.spark_io import _parquet, _uri

    names = [f"k={i}" if i % 3 else f"k=x y%2B{i}[*]" for i in range(70)]
    for i, name in enumerate(names):
        write_parquet(tmp_path / "t" / name / "p.parquet", {"v": [i, i + 100]})
    paths = [_uri(str(tmp_path / "t" / n)) for n in names]
    expected = spark.read.option("basePath", str(tmp_path / "t")).parquet(*paths)

    reader = spark.read.option("basePath", str(tmp_path / "t"))

    def one_by_one(*_args, **_kw):
        raise AssertionError("the paths were sent one by one")
    reader.parquet = one_by_one    # the JVM path must not fall back to PySpark's own
    got = _parquet(spark, reader, paths)
    assert rows(got) == rows(expected)
    assert sorted(got.inputFiles()) == sorted(expected.inputFiles())
    assert len(got.inputFiles()) == 70


def test_jvm_handles_are_looked_up_once_and_work(spark) -> None:
    """Per-query paths name JVM classes through hive_splits.jvm_refs: one lookup per JVM."""
    from hive_splits.jvm_refs import jvm_cached, jvm_class, scala_object

    jvm = spark._jvm
    option = jvm_class(jvm, "scala.Option")
    assert option is jvm_class(jvm, "scala.Option")
    assert option.empty().isEmpty() and option.apply("x").get() == "x"
    folding = scala_object(jvm, "org.apache.spark.sql.catalyst.optimizer.ConstantFolding")
    assert folding is scala_object(jvm, "org.apache.spark.sql.catalyst.optimizer.ConstantFolding")
    assert "ConstantFolding" in str(folding.getClass().getName())
    made = []
    first = jvm_cached(jvm, "test-list", lambda: made.append(1) or jvm.java.util.ArrayList())
    assert jvm_cached(jvm, "test-list", lambda: made.append(1)) is first and made == [1]


@pytest.mark.parametrize("size", [0, 10, 2600, 2601, 30_000, 200_000])
def test_long_jvm_text_is_read_whole_in_pieces(spark, size: int) -> None:
    """hive_splits.jvm_refs.jvm_text reads a JVM buffer in pieces py4j sends in one write each
    (a longer reply stalls ~40 ms on Nagle's algorithm): the pieces must join to the very text,
    characters of two, three and four bytes and py4j's escapes (backslash, CR, LF) included,
    whether it comes in one call, in pieces, or (past 40 pieces) in one call again."""
    from hive_splits.jvm_refs import jvm_text

    unit = "a\\é\n€😀\r𝄞 "
    text = (unit * (size // len(unit) + 1))[:size]
    if text and "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]
    buffer = spark._jvm.java.lang.StringBuilder()
    for i in range(0, len(text), 5000):   # sent in pieces too: Python -> JVM is not measured
        buffer.append(text[i:i + 5000])
    assert jvm_text(buffer) == text


def test_more_partition_names_than_one_reply_holds_are_read_whole(spark, tmp_path) -> None:
    """A catalog table's partition names (one text, read in pieces past 64 names) and its
    partitions' locations (Jackson's JSON, read in pieces) come whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hive_splits.metastore import MetastorePartitions
    from hive_splits.table import table_from_catalog

    root = tmp_path / "names"
    for day in range(300):
        folder = root / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"x": pa.array([day], pa.int64())}), folder / "p.parquet")
    spark.sql("DROP TABLE IF EXISTS hs_many_names")
    spark.sql(f"CREATE TABLE hs_many_names (x BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{root}'")
    spark.sql("ALTER TABLE hs_many_names RECOVER PARTITIONS")
    try:
        table = table_from_catalog(spark, "hs_many_names")
        assert sorted(int(p.values[0][1]) for p in table.catalog_partitions) == list(range(300))
        assert all(p.location.endswith(f"day={p.values[0][1]}")
                   for p in table.catalog_partitions)
        source = MetastorePartitions(spark, "hs_many_names", table.partition_columns)
        assert sorted(int(s[0][1]) for s in source.names()) == list(range(300))
    finally:
        spark.sql("DROP TABLE IF EXISTS hs_many_names")


def test_catalog_names_read_in_one_pass_equal_the_slow_parse_and_sparks_values(spark) -> None:
    """``MetastorePartitions.rows`` reads every name in one pass over the joined text: the
    same texts as parsing each name apart, and as Spark's own partition values, for values
    that need escaping, the default (NULL) partition and two levels; a name of other
    columns is named, not misread."""
    from hive_splits.metastore import MetastorePartitions, _joined_names
    from hive_splits.table import table_from_catalog

    values = [*SPECIAL, None]
    data = [(i, v, i % 3) for i, v in enumerate(values)]
    spark.sql("DROP TABLE IF EXISTS hs_rows_pass")
    spark.createDataFrame(data, "x int, s string, n int").write \
        .partitionBy("s", "n").saveAsTable("hs_rows_pass")
    try:
        table = table_from_catalog(spark, "hs_rows_pass")
        source = MetastorePartitions(spark, "default.hs_rows_pass", table.partition_columns)
        fast = source.rows()
        jnames = spark._jsparkSession.sessionState().catalog().externalCatalog() \
            .listPartitionNames("default", "hs_rows_pass", spark._jvm.scala.Option.empty())
        slow = [tuple(v for _, v in spec)
                for spec in source._parsed(_joined_names(spark._jvm, jnames))]
        assert fast == slow
        assert any("%" in n for n in _joined_names(spark._jvm, jnames))   # escapes were met
        assert sorted(fast, key=repr) == sorted(
            ((p.values[0][1], p.values[1][1]) for p in table.catalog_partitions), key=repr)
        assert (None, str(len(SPECIAL) % 3)) in fast   # the default partition: NULL
        assert source.names() == [(("s", a), ("n", b)) for a, b in fast]
        # columns in another order than the names: the slow path names the partition
        other = MetastorePartitions(spark, "default.hs_rows_pass",
                                    tuple(reversed(table.partition_columns)))
        with pytest.raises(LayoutError, match="does not name the partition columns"):
            other.rows()
    finally:
        spark.sql("DROP TABLE IF EXISTS hs_rows_pass")
