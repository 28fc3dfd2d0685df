"""The native build side (Spark's own aggregation, nothing on executors).

Its domains must equal the Arrow collector's on the same keys, for every key type, NULL keys,
empty and NULL-only build sides, and past the exact limit — both when the build side's rows
come to the driver whole (at most ``raw_rows``) and when Spark groups them first; its jobs
carry a readable description in Spark's status store; and the session uses it by default.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from collectors import build_filter, spark_to_datatype
from collectors.native import RAW_ROWS, build_filter_native
from coordinator import make_service
from dpp import DppSession
from tests.conftest import spark_conf

UTC = dt.timezone.utc


@pytest.fixture
def service():
    svc = make_service("embedded", app_id="t-native", max_distinct=50, bloom_fpp=0.01,
                       max_bytes=1 << 20)
    yield svc
    svc.close()


# the native build both ways: the rows whole (the default bound), and grouped by Spark first
# (no row taken whole: raw_rows=0), or past a bound of 2 rows (the first job finds more)
WAYS = [RAW_ROWS, 0, 2]


def _build(svc, builder, df, key, fid, raw_rows=RAW_ROWS, **kw):
    opts = dict(max_distinct=50, bloom_enabled=True, bloom_fpp=0.01, bloom_capacity=None)
    opts.update(kw)
    svc.register(fid, 1 << 30, {key: spark_to_datatype(df.schema[key].dataType)}, 600)
    if builder is build_filter:
        res = build_filter(df, [key], filter_id=fid, sink=svc, **opts)
    else:
        res = build_filter_native(df, key, filter_id=fid, sink=svc, raw_rows=raw_rows, **opts)
    w = svc.wait(fid, 60)
    assert w.outcome == "complete", w.reason
    return res, w.domain


_CASES = {
    "int": ("int", [3, -7, 3, None, 2_000_000_000]),
    "bigint": ("bigint", [2 ** 40, -(2 ** 62), 0, None, 0]),
    "decimal": ("decimal(7,2)", [Decimal("1.25"), Decimal("-99999.99"), None, Decimal("0.00")]),
    "string": ("string", ["a", "", "ü ß", None, "a", "zz"]),
    "date": ("date", [dt.date(2000, 1, 1), dt.date(1, 1, 1), None, dt.date(9999, 12, 31)]),
    "timestamp": ("timestamp", [dt.datetime(2024, 3, 10, 10, 30, tzinfo=UTC), None,
                                dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC)]),
    "timestamp_ntz": ("timestamp_ntz", [dt.datetime(2024, 3, 10, 2, 30), None,
                                        dt.datetime(2024, 11, 3, 1, 30)]),
    "double": ("double", [1.5, -0.0, None, float("inf")]),
    "nulls only": ("int", [None, None]),
    "empty": ("int", []),
}


@pytest.mark.parametrize("raw_rows", WAYS)
@pytest.mark.parametrize("case", list(_CASES))
def test_native_domain_equals_the_arrow_collectors(spark, service, case, raw_rows):
    type_, values = _CASES[case]
    with spark_conf(spark, {"spark.sql.session.timeZone": "America/Los_Angeles"}):
        df = spark.createDataFrame([(v,) for v in values], f"k {type_}")
        fid = case.replace(" ", "_")
        arrow_res, arrow = _build(service, build_filter, df, "k", f"a-{fid}")
        native_res, native = _build(service, build_filter_native, df, "k", f"n-{fid}",
                                    raw_rows=raw_rows)
    assert native == arrow
    assert native_res.rows == len(values) == arrow_res.rows
    assert native_res.published_by == "driver" and native_res.parts_expected == 1


@pytest.mark.parametrize("raw_rows", WAYS)
def test_past_the_limit_a_bloom_like_the_arrow_collectors(spark, service, raw_rows):
    df = spark.range(0, 500, numPartitions=3).selectExpr("id * 7 AS k")
    _, arrow = _build(service, build_filter, df, "k", "a-bloom", max_distinct=50)
    res, native = _build(service, build_filter_native, df, "k", "n-bloom", max_distinct=50,
                         raw_rows=raw_rows)
    d = native.get("k")
    assert d.kind == "bloom" and native == arrow
    assert all(d.contains(k) for k in range(0, 3500, 7))
    assert res.distinct == 500


@pytest.mark.parametrize("raw_rows", WAYS)
def test_past_the_limit_without_blooms_min_max(spark, service, raw_rows):
    df = spark.range(0, 500, numPartitions=3).selectExpr("CAST(id * 3 - 100 AS INT) AS k")
    df = df.union(spark.createDataFrame([(None,)], "k int"))
    _, arrow = _build(service, build_filter, df, "k", "a-range", max_distinct=50,
                      bloom_enabled=False)
    res, native = _build(service, build_filter_native, df, "k", "n-range", max_distinct=50,
                         bloom_enabled=False, raw_rows=raw_rows)
    d = native.get("k")
    assert d.kind == "range" and d.bounds() == (-100, 1397) and d.null_allowed
    assert native == arrow
    assert res.distinct is None and res.rows == 501


@pytest.mark.parametrize("raw_rows", WAYS)
@pytest.mark.parametrize("bloom", [False, True])
def test_a_null_key_never_hides_a_key_at_the_limit(spark, service, bloom, raw_rows):
    # limit + 1 non-null keys and a NULL: the NULL group must not push a key out unseen
    # (found by the property test: keys {9588, -26632, -296188, 11, NULL}, maxDistinct 3
    # gave values(3) without 11, and the partition p=11 was pruned)
    keys = [9588, -26632, -296188, 11, None]
    df = spark.createDataFrame([(k,) for k in keys], "k int").repartition(3)
    limit = 3
    _, arrow = _build(service, build_filter, df, "k", f"a-nl-{bloom}", max_distinct=limit,
                      bloom_enabled=bloom, bloom_capacity=4 if bloom else None)
    res, native = _build(service, build_filter_native, df, "k", f"n-nl-{bloom}",
                         max_distinct=limit, bloom_enabled=bloom,
                         bloom_capacity=4 if bloom else None, raw_rows=raw_rows)
    d = native.get("k")
    assert all(d.contains(k) for k in keys if k is not None), d
    assert native == arrow


def _star(tmp_path, parts=6):
    fact = tmp_path / "fact"
    for p in range(parts):
        folder = fact / f"k={p}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"v": pa.array([p * 10 + i for i in range(3)], pa.int64())}),
                       folder / "part-0.parquet")
    dim = tmp_path / "dim"
    dim.mkdir()
    pq.write_table(pa.table({"d_k": pa.array(list(range(parts)), pa.int32()),
                             "d_name": [f"n{p}" for p in range(parts)]}), dim / "d.parquet")
    return fact, dim


def test_build_jobs_carry_a_readable_description_in_sparks_status_store(spark, tmp_path):
    fact, dim = _star(tmp_path)
    spark.read.parquet(str(dim)).createOrReplaceTempView("native_dim")
    dpp = DppSession(spark)
    dpp.register_table("native_fact", str(fact))
    try:
        rows = dpp.collect("SELECT sum(v) AS s FROM native_fact JOIN native_dim ON k = d_k "
                           "WHERE d_name IN ('n1', 'n4')")
        assert rows[0]["s"] == sum(p * 10 + i for p in (1, 4) for i in range(3))
        report = dpp.last_report
        (f,) = report.filters
        assert f.outcome == "complete"
        assert report.tables[0].partitions_kept == 2
        group = f"dpp-build-{f.filter_id}"
        store = spark.sparkContext._jsc.sc().statusStore()
        ids = spark.sparkContext.statusTracker().getJobIdsForGroup(group)
        assert ids, f"no job in group {group}"
        descriptions = {store.job(i).description().get() for i in ids}
        assert descriptions == {"dpp build: native_dim.d_k for native_fact"}
    finally:
        spark.catalog.dropTempView("native_dim")
        dpp.close()


def test_arrow_collector_still_selectable_and_reports_which_ran(spark, tmp_path):
    fact, dim = _star(tmp_path)
    spark.read.parquet(str(dim)).createOrReplaceTempView("native_dim2")
    dpp = DppSession(spark)
    dpp.register_table("native_fact2", str(fact))
    q = ("SELECT count(*) AS n FROM native_fact2 JOIN native_dim2 ON k = d_k "
         "WHERE d_name = 'n3'")
    try:
        for collector in ("arrow", "native", "auto"):
            with spark_conf(spark, {"spark.dpp.collector": collector}):
                assert dpp.collect(q)[0]["n"] == 3
                assert dpp.last_report.tables[0].partitions_kept == 1
                assert dpp.last_report.settings["spark.dpp.collector"] == collector
    finally:
        spark.catalog.dropTempView("native_dim2")
        dpp.close()


# the driver's build steps through the hook jar's one-call helpers (dpp.spark.BuildSide), and
# through PySpark's calls where the jar lacks them: both must give the same answers
HELPER_WAYS = ["jar", "pyspark"]


@pytest.fixture
def helper_way(request, monkeypatch):
    if request.param == "pyspark":
        import collectors.native
        import hive_splits.jvm_refs

        monkeypatch.setattr(collectors.native, "jvm_static", lambda *a: None)
        monkeypatch.setattr(hive_splits.jvm_refs, "jvm_static", lambda *a: None)
    else:
        from dpp.runtime.jvm_build import load_into
        from hive_splits.jvm_refs import jvm_static

        spark = request.getfixturevalue("spark")
        load_into(spark)
        assert jvm_static(spark._jvm, "dpp.spark.BuildSide", "sizeBelowLimits") is not None, \
            "the session's hook jar has no dpp.spark.BuildSide"
    return request.param


@pytest.mark.parametrize("helper_way", HELPER_WAYS, indirect=True)
def test_rows_are_tried_whole_only_where_spark_estimates_a_small_build_side(spark, helper_way):
    """A build side Spark estimates past the bound is grouped at once: trying its rows first
    would scan it twice when they are too many. The estimate is read below the row bound the
    collection puts on top (the bound's own estimate is rows × row size, always small)."""
    from collectors.native import RAW_ROWS, _small
    from dpp.core.spark_rules import DEFAULT_BROADCAST_BYTES

    def bounded(df):
        return df.limit(RAW_ROWS + 1)

    assert _small(bounded(spark.range(1000).selectExpr("id AS k")))
    # 8 bytes a row by Spark's estimate: past Spark's default broadcast threshold
    big = spark.range(DEFAULT_BROADCAST_BYTES).selectExpr("id AS k")
    assert not _small(bounded(big))
    assert not _small(bounded(big.where("k % 1000 = 0")))     # a filter does not lower it
    # the bound is the session's own broadcast threshold
    with spark_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": "4k"}):
        assert not _small(bounded(spark.range(1000).selectExpr("id AS k")))   # 8,000 bytes
    with spark_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": "200m"}):
        assert _small(bounded(big))


@pytest.mark.parametrize("helper_way", HELPER_WAYS, indirect=True)
@pytest.mark.parametrize("before", [None, ("mine", "my own jobs", "false")])
def test_build_job_group_puts_the_jobs_in_its_group_then_restores_the_threads_own(
        spark, helper_way, before):
    """A build's jobs carry its group and description (cancelJobGroup stops them, Spark's UI
    names them); afterwards the thread's own group, description and interrupt flag are as they
    were — unset ones unset — so a user's jobs on that thread are not filed under dpp's."""
    from collectors.build import build_job_group

    sc = spark.sparkContext
    keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    for k in keys:
        sc.setLocalProperty(k, None)
    if before is not None:
        sc.setJobGroup(before[0], before[1], interruptOnCancel=before[2] == "true")
    group = f"dpp-build-t-{helper_way}-{before is not None}"
    try:
        with build_job_group(spark, group, "dpp build: the test's"):
            assert sc.getLocalProperty("spark.job.interruptOnCancel") == "true"
            spark.range(5).count()
        ids = sc.statusTracker().getJobIdsForGroup(group)
        assert ids, f"no job in group {group}"
        store = sc._jsc.sc().statusStore()
        assert {store.job(i).description().get() for i in ids} == {"dpp build: the test's"}
        assert tuple(sc.getLocalProperty(k) for k in keys) == (before or (None, None, None))
    finally:
        for k in keys:
            sc.setLocalProperty(k, None)


def test_groups_without_jobs_in_one_call(spark):
    """The hook waits for its build jobs' submission by asking which groups have no job yet:
    one call for all of them, the ones with a job left out."""
    from dpp.runtime.jvm_build import load_into
    from hive_splits.jvm_refs import jvm_static

    load_into(spark)
    lacking = jvm_static(spark._jvm, "dpp.spark.BuildSide", "withoutJobs")
    sc = spark.sparkContext
    sc.setJobGroup("dpp-build-t-has-a-job", "t")
    try:
        spark.range(3).count()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    text = str(lacking(sc._jsc, "dpp-build-t-has-a-job\ndpp-build-t-none-yet\n"))
    assert text.split("\n") == ["dpp-build-t-none-yet"]
    assert str(lacking(sc._jsc, "dpp-build-t-has-a-job")) == ""


def test_a_build_that_fails_in_the_jvm_names_the_java_cause(spark):
    """py4j's own first line only names the gateway call ("An error occurred while calling
    o8119.getResult"): the report says what failed, the innermost Java cause."""
    from py4j.protocol import Py4JJavaError

    from collectors.build import short_error

    jvm = spark.sparkContext._jvm
    inner = jvm.java.io.FileNotFoundException("file:/x/part-0.parquet does not exist")
    failed = jvm.java.util.concurrent.CompletableFuture()
    failed.completeExceptionally(jvm.java.lang.RuntimeException("job aborted", inner))
    with pytest.raises(Py4JJavaError) as caught:
        failed.get()
    said = short_error(caught.value)
    assert said.startswith("Py4JJavaError: java.io.FileNotFoundException: "), said
    assert "file:/x/part-0.parquet does not exist" in said and "calling" not in said, said
    assert short_error(ValueError("bad\nmore")) == "ValueError: bad"
