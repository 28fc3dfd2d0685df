"""``hive_splits.buckets``: Spark's hash and bucket ids, checked against Spark itself for every
type a bucket column can have, and against the files Spark's bucketed writer produces."""
from __future__ import annotations

import datetime as dt
import decimal
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dpp.core.domain import BIGINT, INT, STRING, DataType, Domain
from hive_splits.buckets import bucket_id, bucket_of_file, buckets_for, spark_hash

D = decimal.Decimal

VALUES: dict[str, list] = {
    "tinyint": [0, 1, -1, 127, -128, None],
    "smallint": [0, 7, -300, 32767, -32768],
    "int": [0, 1, -1, 42, 2**31 - 1, -2**31, 123456789, None],
    "bigint": [0, 1, -1, 2**63 - 1, -2**63, 10_000_000_000, -987654321012],
    "boolean": [True, False, None],
    "decimal(7,2)": [D("0.00"), D("1.50"), D("-1.50"), D("99999.99"), D("-0.01")],
    "decimal(18,2)": [D("0.00"), D("1234567890123456.78"), D("-9999999999999999.99")],
    "decimal(38,10)": [D("0E-10"), D("1.0000000001"), D("-12345678901234567890.1234567890"),
                       D("9999999999999999999999999999.9999999999"), D("-0.0000000001")],
    "string": ["", "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh",
               "abcdefghi", "abcdefghij", "abcdefghijk", "abcdefghijkl", "é", "日本", "🎉",
               "AAAAAAAH", "ÿÿÿ", None],
    "date": [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2000, 2, 29),
             dt.date(1, 1, 1), dt.date(9999, 12, 31), None],
    "double": [0.0, -0.0, 1.5, -2.25, 1e300, math.inf, -math.inf, math.nan, None],
    "float": [0.0, -0.0, 1.5, -2.25, math.inf, math.nan],
}


def _spark_hashes(spark, type_name: str, values: list) -> list[int]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    schema = StructType([StructField("i", _parse_datatype_string("int")),
                         StructField("v", _parse_datatype_string(type_name))])
    rows = [(i, v) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, schema)
    got = {r["i"]: r["h"] for r in df.select("i", F.hash("v").alias("h")).collect()}
    return [got[i] for i in range(len(values))]


@pytest.mark.parametrize("type_name", list(VALUES))
def test_spark_hash_equals_sparks_for_every_type(spark, type_name):
    t = DataType.parse(type_name)
    values = VALUES[type_name]
    ours = [spark_hash(None if v is None else t.coerce(v), t) for v in values]
    assert ours == _spark_hashes(spark, type_name, values)


def test_timestamps_hash_as_sparks_in_any_session_time_zone(spark):
    from tests.conftest import spark_conf

    t = DataType.parse("timestamp")
    utc = dt.timezone.utc
    values = [dt.datetime(1970, 1, 1, tzinfo=utc), dt.datetime(2001, 5, 6, 7, 8, 9, 123456, tzinfo=utc),
              dt.datetime(1960, 1, 1, 0, 0, 0, 1, tzinfo=utc)]
    for zone in ("UTC", "America/Los_Angeles"):
        with spark_conf(spark, {"spark.sql.session.timeZone": zone}):
            assert [spark_hash(t.coerce(v), t) for v in values] == \
                _spark_hashes(spark, "timestamp", values)


@pytest.mark.parametrize("n", [1, 4, 7, 16])
def test_bucket_ids_are_pmod_of_the_hash(spark, n):
    values = [v for v in VALUES["int"] if v is not None] + list(range(-50, 50))
    got = [r[0] for r in spark.createDataFrame([(v,) for v in values], "v int")
           .selectExpr(f"pmod(hash(v), {n})").collect()]
    assert [bucket_id(v, INT, n) for v in values] == got
    assert bucket_id(None, INT, n) == 42 % n


def test_bucket_of_file_reads_sparks_names():
    assert bucket_of_file("part-00000-6f1c-4a5e-b3c1_00003.c000.snappy.parquet") == 3
    assert bucket_of_file("part-00001-aa_00012.c000.parquet") == 12
    assert bucket_of_file("part-00000-6f1c.c000.snappy.parquet") is None
    assert bucket_of_file("data.parquet") is None


@pytest.mark.parametrize("key", ["int", "string"])
def test_every_file_spark_writes_holds_only_its_buckets_rows(spark, tmp_path, key):
    t = INT if key == "int" else STRING
    vals = [None if i % 9 == 0 else (i - 40 if key == "int" else f"s{i - 40}") for i in range(120)]
    df = spark.createDataFrame([(v, i % 3) for i, v in enumerate(vals)], f"k {key}, p int")
    name = f"bk_written_{key}"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    (df.repartition(3).write.format("parquet").partitionBy("p").bucketBy(5, "k")
     .option("path", str(tmp_path / name)).saveAsTable(name))
    try:
        files = [f for f in Path(tmp_path / name).rglob("*.parquet")]
        assert files
        seen = 0
        for f in files:
            b = bucket_of_file(f.name)
            assert b is not None, f.name
            for v in pq.read_table(f).column("k").to_pylist():
                assert bucket_id(v, t, 5) == b, (f.name, v)
                seen += 1
        assert seen == len(vals)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_buckets_for_value_sets_ranges_and_nulls():
    d = Domain.values(BIGINT, [1, 2, 3])
    assert buckets_for(d, BIGINT, 8) == frozenset(bucket_id(v, BIGINT, 8) for v in (1, 2, 3))
    with_null = Domain.values(BIGINT, [1], null_allowed=True)
    assert buckets_for(with_null, BIGINT, 8) == {bucket_id(1, BIGINT, 8), 42 % 8}
    assert buckets_for(Domain.none(BIGINT), BIGINT, 8) == frozenset()
    assert buckets_for(Domain.only_null(BIGINT), BIGINT, 8) == {42 % 8}
    assert buckets_for(Domain.range(BIGINT, 1, 100), BIGINT, 8) is None     # cannot say
    assert buckets_for(Domain.all(BIGINT), BIGINT, 8) is None
    assert buckets_for(d, INT, 8) is None                                    # wrong type


def test_catalog_tables_carry_their_bucket_spec(spark, tmp_path):
    from hive_splits import table_from_catalog
    from hive_splits.buckets import BucketSpec

    spark.sql("DROP TABLE IF EXISTS bk_spec_a")
    spark.sql("DROP TABLE IF EXISTS bk_spec_b")
    try:
        spark.sql(f"CREATE TABLE bk_spec_a (k INT, v STRING, p INT) USING parquet "
                  f"PARTITIONED BY (p) CLUSTERED BY (k) SORTED BY (k) INTO 8 BUCKETS "
                  f"LOCATION '{tmp_path / 'a'}'")
        spark.sql(f"CREATE TABLE bk_spec_b (k INT, p INT) USING parquet PARTITIONED BY (p) "
                  f"LOCATION '{tmp_path / 'b'}'")
        assert table_from_catalog(spark, "bk_spec_a").bucketing == BucketSpec(8, ("k",), ("k",))
        assert table_from_catalog(spark, "bk_spec_b").bucketing is None
    finally:
        spark.sql("DROP TABLE IF EXISTS bk_spec_a")
        spark.sql("DROP TABLE IF EXISTS bk_spec_b")
