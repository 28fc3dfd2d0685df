"""Dynamic bucket pruning: a catalog table bucketed by a join key keeps only the files of the
buckets the build side's values hash to (Spark's own ``pmod(hash(v), n)``), and the rows stay
exactly Spark's with all pruning off — for int, bigint, decimal, string and date keys, NULL
keys on both sides, empty build sides, and a build side too large for a value set."""
from __future__ import annotations

import datetime as dt
import decimal

import pytest

from tests.differential import Checks, Fact

BUCKETS = 8

KEYS = {
    "int": ("int", lambda i: i - 20),                                   # negatives included
    "bigint": ("bigint", lambda i: (i - 20) * 10_000_000_000),
    "decimal": ("decimal(10,2)", lambda i: decimal.Decimal(i * 37) / 100),
    "string": ("string", lambda i: f"k{i:03d}" if i % 5 else f"é-{i}"),
    "date": ("date", lambda i: dt.date(1969, 12, 1) + dt.timedelta(days=i * 3)),
}
N = 48          # distinct keys; every fourth fact row has a NULL key


def _make(spark, key_type: str, value) -> tuple[str, str]:
    """A bucketed, partitioned catalog fact and a plain dimension view over the same keys."""
    from pyspark.sql import Row
    from pyspark.sql.types import (DateType, DecimalType, IntegerType, LongType, StringType,
                                   StructField, StructType)

    fact = f"bk_fact_{key_type}"
    dim = f"bk_dim_{key_type}"
    spark_type = {"int": IntegerType(), "bigint": LongType(),
                  "decimal": DecimalType(10, 2), "string": StringType(),
                  "date": DateType()}[key_type]
    rows = [Row(k=None if i % 4 == 3 else value(i % N), v=i, p=i % 3) for i in range(4 * N)]
    schema = StructType([StructField("k", spark_type), StructField("v", IntegerType()),
                         StructField("p", IntegerType())])
    spark.sql(f"DROP TABLE IF EXISTS {fact}")
    (spark.createDataFrame(rows, schema).repartition(2).write.format("parquet")
     .partitionBy("p").bucketBy(BUCKETS, "k").saveAsTable(fact))
    dims = [Row(d_k=value(i), pick=i % 7, d_name=f"n{i}") for i in range(N)]
    dims.append(Row(d_k=None, pick=0, d_name="null key"))
    spark.createDataFrame(dims, StructType([StructField("d_k", spark_type),
                                            StructField("pick", IntegerType()),
                                            StructField("d_name", StringType())])
                          ).createOrReplaceTempView(dim)
    return fact, dim


@pytest.fixture(scope="module")
def bucketed(spark):
    made = {kt: _make(spark, kt, fn) for kt, (_, fn) in KEYS.items()}
    yield made
    for fact, dim in made.values():
        spark.sql(f"DROP TABLE IF EXISTS {fact}")
        spark.catalog.dropTempView(dim)


def _table_report(check, fact):
    (_, rep), *_ = check.runs
    return [t for t in rep["tables"] if t["table"] == fact]


@pytest.mark.parametrize("key_type", list(KEYS))
def test_buckets_of_the_build_values_only_rows_exact(spark, bucketed, key_type):
    fact, dim = bucketed[key_type]
    f = Fact("catalog", fact, "")
    with Checks(spark) as checks:
        # pick = 0: 7 of 48 keys (plus the NULL key, which an inner join never matches)
        c = checks.sql([f], f"SELECT f.k, f.v, f.p, d.d_name FROM {{f0}} f JOIN {dim} d "
                            f"ON f.k = d.d_k WHERE d.pick = 0", cache=False)
        c.verify()
        (t,) = _table_report(c, fact)
        assert t["buckets_total"] == BUCKETS and t["buckets_kept"] < BUCKETS, t
        assert t["files_pruned_buckets"] > 0 and t["pruning"] == "applied", t
        # an aggregate, a semi join, and a build side that matches nothing
        checks.sql([f], f"SELECT p, count(*), sum(v) FROM {{f0}} WHERE k IN "
                        f"(SELECT d_k FROM {dim} WHERE pick IN (1, 2)) GROUP BY p",
                   cache=False).verify()
        e = checks.sql([f], f"SELECT count(*) FROM {{f0}} f JOIN {dim} d ON f.k = d.d_k "
                            f"WHERE d.pick = 99", cache=False)
        e.verify()
        (t,) = _table_report(e, fact)
        assert t["files_kept"] == 0 and t["buckets_kept"] == 0, t


@pytest.mark.parametrize("key_type", ["int", "string"])
def test_null_safe_and_outer_joins_keep_every_bucket(spark, bucketed, key_type):
    fact, dim = bucketed[key_type]
    f = Fact("catalog", fact, "")
    with Checks(spark) as checks:
        c = checks.sql([f], f"SELECT f.k, f.v, d.d_name FROM {{f0}} f LEFT JOIN {dim} d "
                            f"ON f.k = d.d_k AND d.pick = 0", cache=False)
        c.verify()
        for t in _table_report(c, fact):
            assert t["files_pruned_buckets"] == 0, t
        checks.sql([f], f"SELECT count(*) FROM {{f0}} f JOIN {dim} d ON f.k <=> d.d_k "
                        f"WHERE d.pick = 0 OR d.d_k IS NULL", cache=False).verify()


def test_a_build_side_past_max_distinct_values_keeps_every_bucket(spark, bucketed):
    fact, dim = bucketed["bigint"]
    f = Fact("catalog", fact, "")
    with Checks(spark) as checks:
        c = checks.sql([f], f"SELECT count(*), sum(f.v) FROM {{f0}} f JOIN {dim} d "
                            f"ON f.k = d.d_k WHERE d.pick < 3", cache=False,
                       settings={"spark.dpp.maxDistinctValues": "3"})
        c.verify()
        for t in _table_report(c, fact):
            assert t["buckets_kept"] in (None, BUCKETS), t     # a range: cannot say
