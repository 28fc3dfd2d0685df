"""``spark.dpp.sparkKeys.enabled``: a small build side's keys from Spark's own dynamic pruning.

Spark lists a scan with its static partition filters and applies its dynamic ones to that
listing afterwards, but resolves them first: when dpp's index is asked, the keys Spark took
from the broadcast of the dimension (which it makes anyway) are known. With the setting on, a
build side Spark estimates small, pruning one relation by a plain integer partition column,
runs no job of dpp's: those keys are its filter. Where Spark planned no such pruning, where
Spark prunes the column cast to a type that is not a widening of it, or the scan cannot be
told apart,
dpp's own build runs at the listing instead. Every case is checked against Spark with every
pruning off, on path-declared and catalog facts, with adaptive execution on and off, and on
Spark's job records (which builds ran a job).
"""
from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from collectors import job_group_id
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}
DAYS = 8
PICKED = {2, 5}
FACTS = ["sk_sales", "sk_sales_cat"]


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("spark_keys")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"item": pa.array(range(10), pa.int32()),
                                 "amount": pa.array([day * 100 + i for i in range(10)],
                                                    pa.int64())}),
                       folder / "part-0.parquet")
    for name, key_type in (("sk_cal", pa.int32()), ("sk_cal_long", pa.int64())):
        cal = root / name
        cal.mkdir()
        pq.write_table(pa.table({"d": pa.array(range(DAYS), key_type),
                                 "tag": pa.array(["x" if d in PICKED else "y"
                                                  for d in range(DAYS)]),
                                 "picked": pa.array([d in PICKED for d in range(DAYS)])}),
                       cal / "part-0.parquet")
        spark.read.parquet(str(cal)).createOrReplaceTempView(name)
    spark.sql("DROP TABLE IF EXISTS sk_sales_cat")
    spark.sql(f"CREATE TABLE sk_sales_cat (item INT, amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{sales}'")
    spark.sql("ALTER TABLE sk_sales_cat RECOVER PARTITIONS")
    with spark_conf(spark, {"spark.dpp.tables.sk_sales": str(sales),
                            "spark.dpp.filterCache.enabled": "false",
                            "spark.dpp.sparkKeys.enabled": "true"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session}
        finally:
            dpp.disable(spark)
            spark.sql("DROP TABLE IF EXISTS sk_sales_cat")
            for name in ("sk_cal", "sk_cal_long"):
                spark.catalog.dropTempView(name)


def _job(spark: Any, fact: str, cal: str = "sk_cal") -> Any:
    f, c = spark.table(fact), spark.table(cal).where("tag = 'x'")
    return (f.join(c, f["day"] == c["d"]).groupBy("day")
            .agg({"amount": "sum"}).withColumnRenamed("sum(amount)", "total"))


def _run(spark: Any, session: Any, df_of: Any) -> tuple[list[tuple], list[tuple], Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, df_of().collect()))
    session.last_report = None
    got = sorted(map(tuple, df_of().collect()))
    return got, expected, session.last_report


def _jobs_of(spark: Any, filter_id: str) -> list[int]:
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(job_group_id(filter_id)))


def _the_filter_of(spark: Any, data: dict[str, Any], job: Any) -> Any:
    """Runs ``job`` with the hook and without pruning: the same rows, the fact kept to the
    picked days; the one filter's report."""
    got, expected, report = _run(spark, data["session"], job)
    assert got == expected and len(expected) == len(PICKED)
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == len(PICKED), t
    (f,) = report.filters
    return f


@pytest.mark.parametrize("aqe", ["true", "false"])
@pytest.mark.parametrize("fact", FACTS)
def test_spark_keys_are_the_filter_and_no_build_job_runs(spark: Any, data: dict[str, Any],
                                                         fact: str, aqe: str) -> None:
    with spark_conf(spark, {"spark.sql.adaptive.enabled": aqe}):
        got, expected, report = _run(spark, data["session"], lambda: _job(spark, fact))
    assert got == expected and len(expected) == len(PICKED)
    assert report is not None, "no report"
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == len(PICKED) and t.partitions_total == DAYS, t
    (f,) = report.filters
    assert f.outcome == "complete" and f.spark_keys and f.deferred, f
    assert f.distinct_values == len(PICKED), f
    assert _jobs_of(spark, f.filter_id) == [], "a build job ran for keys Spark had"


@pytest.mark.parametrize("fact", FACTS)
def test_without_sparks_own_pruning_nothing_is_left_to_its_keys(spark: Any,
                                                                 data: dict[str, Any],
                                                                 fact: str) -> None:
    """Spark's dynamic pruning off: no keys can come, so no build is left to them — it starts
    with the query, as with the setting off, not at the scan's listing; the scan is pruned,
    with Spark's rows."""
    with spark_conf(spark, {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false"}):
        got, expected, report = _run(spark, data["session"], lambda: _job(spark, fact))
    assert got == expected and len(expected) == len(PICKED)
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == len(PICKED), t
    (f,) = report.filters
    assert f.outcome == "complete" and not f.spark_keys and not f.deferred, f
    assert len(_jobs_of(spark, f.filter_id)) == 1, "the build did not run"


@pytest.mark.parametrize("fact", FACTS)
def test_a_wider_dimension_key_prunes_the_column_widened(spark: Any, data: dict[str, Any],
                                                         fact: str) -> None:
    """A bigint dimension key against the int partition column (TPC-DS as generated): Spark
    prunes the column cast to bigint, exact for every int; its bigint keys are the filter,
    of the build key's own type, and the rows are Spark's."""
    got, expected, report = _run(spark, data["session"],
                                 lambda: _job(spark, fact, "sk_cal_long"))
    assert got == expected and len(expected) == len(PICKED)
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == len(PICKED), t
    (f,) = report.filters
    assert f.outcome == "complete" and f.spark_keys, f
    assert _jobs_of(spark, f.filter_id) == [], "a build job ran for keys Spark had"


@pytest.mark.parametrize("fact", FACTS)
def test_the_same_fact_twice_in_one_query_keeps_its_rows(spark: Any, data: dict[str, Any],
                                                         fact: str) -> None:
    """Two joins of the fact, one pruned by the picked days, one by all the others: an
    index listed for both scans must keep what either needs, whichever keys answer."""
    def both() -> Any:
        f = spark.table(fact)
        picked = spark.table("sk_cal").where("tag = 'x'")
        other = spark.table("sk_cal").where("tag = 'y'")
        a = f.join(picked, f["day"] == picked["d"]).select("day", "amount")
        g = spark.table(fact)
        b = g.join(other, g["day"] == other["d"]).select("day", "amount")
        return a.union(b).groupBy("day").count()

    got, expected, _report = _run(spark, data["session"], both)
    assert got == expected and len(expected) == DAYS


def test_with_the_setting_off_every_build_runs_its_job(spark: Any, data: dict[str, Any]) -> None:
    with spark_conf(spark, {"spark.dpp.sparkKeys.enabled": "false"}):
        got, expected, report = _run(spark, data["session"], lambda: _job(spark, "sk_sales"))
    assert got == expected
    (f,) = report.filters
    assert not f.spark_keys and not f.deferred and len(_jobs_of(spark, f.filter_id)) == 1, f


@pytest.mark.parametrize("fact", FACTS)
def test_the_fact_again_in_a_subquery_keeps_its_rows(spark: Any, data: dict[str, Any],
                                                     fact: str) -> None:
    """The fact joined with the same dimension in the query and in its scalar subquery, where
    one more filter of Spark's applies to the outer scan only: a listing answered for both
    scans must keep what the subquery's needs."""
    sql = (f"SELECT f.day, sum(f.amount) AS total FROM {fact} f JOIN sk_cal c ON f.day = c.d "
           f"JOIN sk_cal_long l ON f.day = l.d "
           f"WHERE c.tag = 'x' AND l.d = 2 AND f.amount >= (SELECT max(g.amount) FROM {fact} g "
           f"JOIN sk_cal c2 ON g.day = c2.d WHERE c2.tag = 'x') - 1000 GROUP BY f.day")
    got, expected, _report = _run(spark, data["session"], lambda: spark.sql(sql))
    assert got == expected and expected, expected


@pytest.mark.parametrize("fact", FACTS)
def test_where_spark_plans_no_pruning_the_build_runs_at_the_listing(spark: Any,
                                                                    data: dict[str, Any],
                                                                    fact: str) -> None:
    """A sort-merge join asked for by hint: no broadcast of the dimension for Spark's pruning
    to reuse, and no benefit for it to run a subquery of its own (a tiny fact), so it plans
    none and no keys come to the listing; the build left to them runs then, one job, and
    the rows are Spark's."""
    def job() -> Any:
        f, c = spark.table(fact), spark.table("sk_cal").where("tag = 'x'").hint("merge")
        return f.join(c, f["day"] == c["d"]).groupBy("day").agg({"amount": "sum"})

    f = _the_filter_of(spark, data, job)
    assert f.outcome == "complete" and not f.spark_keys and f.deferred, f
    assert len(_jobs_of(spark, f.filter_id)) == 1, "the build did not run at the listing"


@pytest.mark.parametrize("fact", FACTS)
def test_a_build_side_spark_counts_no_filter_on_is_not_left_to_its_keys(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    """A dimension filtered by a boolean column alone: Spark's own pruning plans nothing by
    a side without a predicate it counts (``PartitionPruning.isLikelySelective``: a
    comparison, IN, LIKE..., not a boolean column), so no keys can come; dpp's build starts
    with the query instead of waiting for the scan's listing, and the rows are Spark's."""
    def job() -> Any:
        f, c = spark.table(fact), spark.table("sk_cal").where("picked")
        return f.join(c, f["day"] == c["d"]).groupBy("day").agg({"amount": "sum"})

    f = _the_filter_of(spark, data, job)
    assert f.outcome == "complete" and not f.spark_keys and not f.deferred, f


@pytest.mark.parametrize("off", [None, "off"])
def test_the_default_takes_sparks_keys_and_off_spellings_turn_it_off(
        spark: Any, data: dict[str, Any], off: Any) -> None:
    """Unset, the setting is on in both halves of dpp (the hook's deferral in Python, the
    index's reading of the keys in the JVM); ``off`` (one of DppConfig's false spellings)
    turns both off: one build job, no keys."""
    key = "spark.dpp.sparkKeys.enabled"
    saved = spark.conf.get(key, None)
    spark.conf.unset(key)
    if off is not None:
        spark.conf.set(key, off)
    try:
        got, expected, report = _run(spark, data["session"], lambda: _job(spark, "sk_sales"))
    finally:
        spark.conf.unset(key)
        if saved is not None:
            spark.conf.set(key, saved)
    assert got == expected and len(expected) == len(PICKED)
    (f,) = report.filters
    assert f.outcome == "complete", f
    if off is None:
        assert f.spark_keys and f.deferred and _jobs_of(spark, f.filter_id) == [], f
    else:
        assert not f.spark_keys and not f.deferred, f
        assert len(_jobs_of(spark, f.filter_id)) == 1, f


def test_the_listing_wait_is_the_union_of_the_scans_waits() -> None:
    """Two scans listed at once wait together: the report's ``listing_wait`` counts the
    time in which any listing waited, once."""
    from dpp.frontends.hook.request import Request

    r = Request(report=None, runs=None, capacity=1)   # type: ignore[arg-type]
    assert r.listing_wait() == 0.0
    r.list_waits += [(10.0, 11.0), (10.5, 12.0), (20.0, 20.25), (11.5, 11.75)]
    assert r.listing_wait() == pytest.approx(2.0 + 0.25)


def test_the_report_says_how_long_sparks_listing_waited(spark: Any,
                                                        data: dict[str, Any]) -> None:
    """The hook's report holds ``listing_wait`` (what of dpp's time Spark's execution waited
    for, the TPC-DS bench's "Spark waited"): never more than the query's own time."""
    import time

    t0 = time.perf_counter()
    got, expected, report = _run(spark, data["session"], lambda: _job(spark, "sk_sales"))
    assert got == expected
    wait = report.phases.get("listing_wait")
    assert wait is not None and 0.0 <= wait <= time.perf_counter() - t0, report.phases


@pytest.mark.parametrize("fact", FACTS)
def test_keys_listed_after_the_wait_timeout_still_prune(spark: Any, data: dict[str, Any],
                                                        fact: str) -> None:
    """The keys come when Spark lists the scan, after its broadcast of the dimension (a Spark
    job: tens of milliseconds at least); here the wait timeout is one millisecond. The wait
    for a build left to the keys counts from the listing, not from planning: the scan is
    pruned by them, with Spark's rows (a wait counted from planning ends before the listing:
    mutating either half of that fails this test)."""
    with spark_conf(spark, {"spark.dpp.waitTimeout": "1ms"}):
        got, expected, report = _run(spark, data["session"], lambda: _job(spark, fact))
    assert got == expected and len(expected) == len(PICKED)
    (f,) = report.filters
    assert f.outcome == "complete" and f.spark_keys and f.deferred, f
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == len(PICKED), t
    # the loader waited past the timeout for the listing
    assert report.phases["wait"] > 0.001, report.phases


def test_with_the_filter_cache_on_builds_run_and_fill_it(spark: Any,
                                                         data: dict[str, Any]) -> None:
    """The filter cache on: no build is left to Spark's keys (dpp's builds fill the cache,
    and a cached filter serves the next query at planning, without waiting for Spark's)."""
    with spark_conf(spark, {"spark.dpp.filterCache.enabled": "true"}):
        got, expected, report = _run(spark, data["session"], lambda: _job(spark, "sk_sales"))
        again, _expected, second = _run(spark, data["session"],
                                        lambda: _job(spark, "sk_sales"))
    assert got == expected and again == expected
    (f,) = report.filters
    assert not f.deferred and not f.spark_keys and len(_jobs_of(spark, f.filter_id)) == 1, f
    (g,) = second.filters
    assert g.cache_hit and not g.deferred, g
