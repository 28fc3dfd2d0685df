"""Build-side collectors: Arrow batches → partials, and the build-side Spark job."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from collectors import (BuildError, PartialCollector, arrow_to_datatype, build_filter,
                        build_key_types, dataframe_files, effective_bloom_capacity,
                        job_group_id, map_in_arrow)
from coordinator import fingerprint, make_service
from dpp.core.domain import (BIGINT, BOOLEAN, DATE, DOUBLE, FLOAT, INT, SMALLINT, STRING, TIMESTAMP,
                        TIMESTAMP_NTZ, TINYINT, Domain, TupleDomain, decimal_type)

from tests.conftest import write_parquet


def collect(batches, keys, max_distinct=100, bloom=False, fpp=0.01, cap=None):
    pc_ = PartialCollector(batches[0].schema, keys, max_distinct=max_distinct,
                           bloom_enabled=bloom, bloom_fpp=fpp, bloom_capacity=cap)
    for b in batches:
        pc_.add_batch(b)
    return pc_


def batch(**cols):
    return pa.RecordBatch.from_pydict(cols)


# --------------------------------------------------------------------------- types

@pytest.mark.parametrize("arrow_type, expected", [
    (pa.int32(), INT), (pa.int64(), BIGINT), (pa.int16(), SMALLINT), (pa.int8(), TINYINT),
    (pa.string(), STRING), (pa.large_string(), STRING), (pa.date32(), DATE),
    (pa.decimal128(7, 2), decimal_type(7, 2)), (pa.timestamp("us", tz="UTC"), TIMESTAMP),
    (pa.timestamp("us"), TIMESTAMP_NTZ), (pa.bool_(), BOOLEAN), (pa.float64(), DOUBLE),
    (pa.float32(), FLOAT),
])
def test_arrow_types_map_to_domain_types(arrow_type, expected):
    assert arrow_to_datatype(arrow_type) == expected


def test_unsupported_arrow_type_names_the_column():
    with pytest.raises(ValueError, match="'blob'"):
        arrow_to_datatype(pa.binary(), "blob")


# --------------------------------------------------------------------------- partials

def test_partial_holds_exact_distinct_values_and_nulls():
    p = collect([batch(k=pa.array([3, 1, None, 3], pa.int64())),
                 batch(k=pa.array([2, 1], pa.int64()))], ["k"])
    d = p.result().get("k")
    assert d.discrete_values() == [1, 2, 3] and d.null_allowed
    assert p.rows == 6 and p.distinct() == 3


def test_partial_without_nulls_does_not_allow_null():
    d = collect([batch(k=pa.array([5], pa.int32()))], ["k"]).result().get("k")
    assert d == Domain.values(INT, [5])


def test_task_without_rows_is_none():
    p = PartialCollector(pa.schema([("k", pa.int64())]), ["k"], max_distinct=10,
                         bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None)
    assert p.result().is_none()


def test_only_nulls_gives_only_null_domain():
    d = collect([batch(k=pa.array([None, None], pa.int64()))], ["k"]).result().get("k")
    assert d.is_only_null()


def test_over_max_distinct_without_bloom_keeps_min_max_only():
    batches = [batch(k=pa.array(range(i * 100, i * 100 + 100), pa.int64())) for i in range(5)]
    p = collect(batches, ["k"], max_distinct=50)
    col = p.columns[0]
    d = p.result().get("k")
    assert d.kind == "range" and d.bounds() == (0, 499)
    assert col.mode == "minmax" and col._chunks == []   # the running set was dropped


def test_running_distinct_set_is_bounded_without_bloom():
    # many batches of fresh values: the collector must not hold them all
    p = PartialCollector(pa.schema([("k", pa.int64())]), ["k"], max_distinct=10,
                         bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None)
    for i in range(40):
        p.add_batch(batch(k=pa.array(range(i * 5000, (i + 1) * 5000), pa.int64())))
        assert sum(len(c) for c in p.columns[0]._chunks) <= (1 << 16) + 5000
    assert p.result().get("k").bounds() == (0, 199_999)


def test_over_max_distinct_with_bloom_gives_bloom_that_contains_every_value():
    values = list(range(0, 3000, 3))
    p = collect([batch(k=pa.array(values, pa.int64()))], ["k"], max_distinct=100, bloom=True,
                cap=5000)
    d = p.result().get("k")
    assert d.kind == "bloom"
    assert all(d.contains(v) for v in values)
    assert not d.contains(5000)          # outside the envelope
    assert d == Domain.values(BIGINT, values).simplify(100, 0.01, 5000)


def test_bloom_over_its_capacity_falls_back_to_min_max():
    p = collect([batch(k=pa.array(range(1000), pa.int64()))], ["k"], max_distinct=10,
                bloom=True, cap=500)
    assert p.result().get("k").kind == "range"


def test_string_date_decimal_timestamp_values():
    b = batch(s=pa.array(["b", "a", None], pa.large_string()),
              d=pa.array([dt.date(2000, 1, 2), dt.date(2000, 1, 1), dt.date(2000, 1, 2)]),
              m=pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25"), None],
                         pa.decimal128(7, 2)),
              t=pa.array([dt.datetime(2020, 1, 1, 12), None, None], pa.timestamp("us", "UTC")))
    td = collect([b], ["s", "d", "m", "t"]).result()
    assert td.get("s") == Domain.values(STRING, ["a", "b"], null_allowed=True)
    assert td.get("d") == Domain.values(DATE, [dt.date(2000, 1, 1), dt.date(2000, 1, 2)])
    assert td.get("m") == Domain.values(decimal_type(7, 2), [decimal.Decimal("1.50"),
                                                             decimal.Decimal("2.25")],
                                        null_allowed=True)
    assert td.get("t").contains(dt.datetime(2020, 1, 1, 12))


def test_double_nan_survives_collapse_to_min_max():
    b = batch(x=pa.array([1.0, float("nan"), -0.0, 3.5] + [float(i) for i in range(10, 40)]))
    d = collect([b], ["x"], max_distinct=5).result().get("x")
    assert d.kind == "range"
    assert d.contains(math.nan) and d.contains(0.0) and d.contains(3.5)
    assert not d.contains(-1.0)


def test_multi_column_key_gives_one_domain_per_column():
    b = batch(a=pa.array([1, 2], pa.int32()), b=pa.array(["x", "y"]))
    td = collect([b], ["a", "b"]).result()
    assert td.columns == ("a", "b")
    assert td.get("a").discrete_values() == [1, 2]


def test_bloom_capacity_rule_is_shared():
    assert effective_bloom_capacity(10, 777) == 777
    assert effective_bloom_capacity(10, None) >= 11


# --------------------------------------------------------------------------- the Spark job

@pytest.fixture
def embedded():
    svc = make_service("embedded", app_id="t-collectors", max_distinct=1000, bloom_fpp=None,
                       max_bytes=1 << 20)
    yield svc
    svc.close()


def _run(svc, df, keys, fid, **kw):
    opts = dict(max_distinct=1000, bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None)
    opts.update(kw)
    res = build_filter(df, keys, filter_id=fid, sink=svc, **opts)
    return res, svc.wait(fid, 60)


@pytest.mark.parametrize("pre_aggregate", [True, False])
def test_build_side_job_gives_exact_distinct_values_through_the_driver(spark, embedded,
                                                                       pre_aggregate):
    df = spark.range(0, 1000, numPartitions=3).selectExpr("id % 37 AS k", "id AS other")
    fid = f"f-embedded-{pre_aggregate}"
    res, w = _run(embedded, df, ["k"], fid, pre_aggregate=pre_aggregate)
    assert w.outcome == "complete", w.reason
    assert w.domain.get("k") == Domain.values(BIGINT, range(37))
    assert res.published_by == "driver" and res.rows == 1000
    assert res.parts_expected == res.parts_reported == w.parts_expected >= 1
    if not pre_aggregate:
        assert res.parts_expected == 3          # one part per partition of the selection
    assert res.key_types == {"k": BIGINT}


def test_build_restores_job_group_and_description(spark, embedded):
    sc = spark.sparkContext
    sc.setJobGroup("outer-group", "outer description")
    try:
        seen = []

        class Spy:
            def __getattr__(self, name):
                return getattr(embedded, name)

            def expect_parts(self, fid, n, kt):
                seen.append((sc.getLocalProperty("spark.jobGroup.id"),
                             sc.getLocalProperty("spark.job.description")))
                embedded.expect_parts(fid, n, kt)

        df = spark.range(10, numPartitions=1)
        build_filter(df, ["id"], filter_id="f-group", max_distinct=10, bloom_enabled=False,
                     bloom_fpp=0.01, bloom_capacity=None, sink=Spy())
        assert seen[0][0] == job_group_id("f-group") and "f-group" in seen[0][1]
        assert sc.getLocalProperty("spark.jobGroup.id") == "outer-group"
        assert sc.getLocalProperty("spark.job.description") == "outer description"
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
        sc.setLocalProperty("spark.job.interruptOnCancel", None)


@pytest.mark.parametrize("pre_aggregate", [True, False])
def test_multi_column_key_and_nulls_through_spark(spark, embedded, pre_aggregate):
    df = spark.createDataFrame([(1, "a"), (2, None), (1, "b")], "x int, y string")
    res, w = _run(embedded, df, ["x", "y"], f"f-multi-{pre_aggregate}",
                  pre_aggregate=pre_aggregate)
    assert res.rows == 3
    assert w.domain == TupleDomain.of({
        "x": Domain.values(INT, [1, 2]),
        "y": Domain.values(STRING, ["a", "b"], null_allowed=True)})
    assert res.key_types == {"x": INT, "y": STRING}


def test_empty_build_side_completes_as_none(spark, embedded):
    df = spark.range(100, numPartitions=2).where("id < 0")
    res, w = _run(embedded, df, ["id"], "f-empty")
    assert w.outcome == "complete" and w.domain.is_none() and res.rows == 0


def test_build_collapses_to_bloom_that_merges_across_tasks(spark):
    svc = make_service("embedded", app_id="t-bloom", max_distinct=50, bloom_fpp=0.01,
                       max_bytes=1 << 22, bloom_capacity=2000)
    try:
        df = spark.range(0, 600, numPartitions=3).selectExpr("id * 7 AS k")
        res, w = _run(svc, df, ["k"], "f-bloom", max_distinct=50, bloom_enabled=True,
                      bloom_capacity=2000)
        d = w.domain.get("k")
        assert d.kind == "bloom"
        assert all(d.contains(i * 7) for i in range(600))
        assert d.bounds() == (0, 599 * 7)
    finally:
        svc.close()


def test_decimal_and_date_keys_from_spark_types(spark, embedded):
    df = spark.sql("SELECT CAST(id AS DECIMAL(7,2)) AS m, DATE_ADD(DATE'2000-01-01', "
                   "CAST(id AS INT)) AS d FROM range(3)")
    assert build_key_types(df, ["m", "d"]) == {"m": decimal_type(7, 2), "d": DATE}
    _, w = _run(embedded, df, ["m", "d"], "f-dec")
    assert w.domain.get("m").discrete_values() == [decimal.Decimal("0.00"),
                                                   decimal.Decimal("1.00"),
                                                   decimal.Decimal("2.00")]
    assert w.domain.get("d").bounds() == (dt.date(2000, 1, 1), dt.date(2000, 1, 3))


def test_failing_build_raises_build_error(spark, embedded):
    def boom(it):
        for _ in it:
            raise RuntimeError("dimension scan exploded")
        yield from ()

    df = map_in_arrow(spark.range(10, numPartitions=1), boom, "id bigint")
    with pytest.raises(BuildError, match="f-boom"):
        build_filter(df, ["id"], filter_id="f-boom", max_distinct=10, bloom_enabled=False,
                     bloom_fpp=0.01, bloom_capacity=None, sink=embedded)


def test_redis_sink_publishes_from_executor_processes(spark, redis_server):
    svc = make_service(redis_server.url, app_id="t-redis-sink", max_distinct=1000,
                       bloom_fpp=None, max_bytes=1 << 20)
    try:
        df = spark.range(0, 500, numPartitions=4).selectExpr("CONCAT('v', id % 13) AS s")
        svc.register("f-redis", 1, {"s": STRING}, 60)       # wrong count: the build fixes it
        res = build_filter(df, ["s"], filter_id="f-redis", max_distinct=1000,
                           bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None, sink=svc)
        w = svc.wait("f-redis", 30)
        assert w.outcome == "complete", w.reason
        assert w.domain.get("s") == Domain.values(STRING, [f"v{i}" for i in range(13)])
        assert res.published_by == "executor"
        assert w.parts_reported == res.parts_expected == res.parts_reported
        assert res.executor_pids and os.getpid() not in res.executor_pids
    finally:
        svc.close()


def test_eight_filters_built_concurrently_do_not_cross_talk(spark, redis_server):
    svc = make_service(redis_server.url, app_id="t-concurrent", max_distinct=1000,
                       bloom_fpp=None, max_bytes=1 << 20)
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            df = spark.range(0, 40, numPartitions=2).selectExpr(f"id * 100 + {i} AS k")
            fid = f"f-conc-{i}"
            svc.register(fid, 2, {"k": BIGINT}, 60)
            build_filter(df, ["k"], filter_id=fid, max_distinct=1000, bloom_enabled=False,
                         bloom_fpp=0.01, bloom_capacity=None, sink=svc)
            results[i] = svc.wait(fid, 60)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        for i in range(8):
            w = results[i]
            assert w.outcome == "complete", w.reason
            assert w.domain.get("k") == Domain.values(BIGINT, [j * 100 + i for j in range(40)])
    finally:
        svc.close()


# --------------------------------------------------------------------------- files and cache

def test_dataframe_files_and_fingerprint_follow_file_changes(spark, tmp_path: Path):
    write_parquet(tmp_path / "dim" / "part-0.parquet", {"k": [1, 2, 3]})
    df = spark.read.parquet(str(tmp_path / "dim"))
    files = dataframe_files(df)
    assert len(files) == 1 and files[0][1] == (tmp_path / "dim" / "part-0.parquet").stat().st_size
    fp1 = fingerprint("select k from dim", ["k"], files)
    assert fp1 == fingerprint("select k from dim", ["k"], list(reversed(files)))
    time.sleep(0.01)
    write_parquet(tmp_path / "dim" / "part-0.parquet", {"k": [1, 2, 3, 4]})
    fp2 = fingerprint("select k from dim", ["k"],
                      dataframe_files(spark.read.parquet(str(tmp_path / "dim"))))
    assert fp2 != fp1
    assert fingerprint("select k from dim", ["j"], files) != fp1
