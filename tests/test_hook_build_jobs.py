"""Build sides started by the optimizer hook keep their place in Spark's job queue.

Spark's local and standalone schedulers run jobs in the order of their ids (FIFO). Under
adaptive execution every query stage is a job of its own, submitted when the stage before it
ends, so a build side's last stage would queue behind the stages the main query submitted in
the meantime, and its filter would come too late to prune (TPC-DS q49 waited 97 s). The hook
runs each build side as one job (a clone of the session without adaptive execution) and lets
the query start only once that job is submitted. Both are checked here on Spark's own job
records, with adaptive execution on in the user's session, against Spark with every pruning
off for the rows.
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
MAIN_GROUP = "dpp-test-main-query"


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("build_jobs")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"item": pa.array(range(10), pa.int32()),
                                 "amount": pa.array([day * 100 + i for i in range(10)],
                                                    pa.int64())}),
                       folder / "part-0.parquet")
    cal = root / "cal"
    cal.mkdir()
    pq.write_table(pa.table({"d": pa.array(range(DAYS), pa.int32()),
                             "tag": pa.array(["x" if d in PICKED else "y"
                                              for d in range(DAYS)])}),
                   cal / "part-0.parquet")
    spark.sql("DROP TABLE IF EXISTS bj_sales_cat")
    spark.sql(f"CREATE TABLE bj_sales_cat (item INT, amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{sales}'")
    spark.sql("ALTER TABLE bj_sales_cat RECOVER PARTITIONS")
    spark.read.parquet(str(cal)).createOrReplaceTempView("bj_cal")
    with spark_conf(spark, {"spark.dpp.tables.bj_sales": str(sales),
                            "spark.dpp.sqlPath": "hook",
                            # every case must run its build side (a cached filter runs no
                            # job; tests/test_hook_filter_cache.py checks those; one left to
                            # Spark's keys neither: tests/test_spark_keys.py)
                            "spark.dpp.filterCache.enabled": "false",
                            "spark.dpp.sparkKeys.enabled": "false",
                            "spark.sql.adaptive.enabled": "true"}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session}
        finally:
            dpp.disable(spark)
            spark.sql("DROP TABLE IF EXISTS bj_sales_cat")


def _job(spark: Any, fact: str) -> Any:
    f, c = spark.table(fact), spark.table("bj_cal").where("tag = 'x'")
    return (f.join(c, f["day"] == c["d"]).groupBy("day")
            .agg({"amount": "sum"}).withColumnRenamed("sum(amount)", "total"))


@pytest.mark.parametrize("fact", ["bj_sales", "bj_sales_cat"])
def test_a_build_side_is_one_job_submitted_before_the_query_runs(spark: Any,
                                                                 data: dict[str, Any],
                                                                 fact: str) -> None:
    session = data["session"]
    sc = spark.sparkContext
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, _job(spark, fact).collect()))
    session.last_report = None
    group = f"{MAIN_GROUP}-{fact}"
    tracker = sc.statusTracker()
    sc.setJobGroup(group, "the user's query")
    try:
        df = _job(spark, fact)   # Spark's reader lists a declared folder now (a job of its own)
        made = set(tracker.getJobIdsForGroup(group))
        got = sorted(map(tuple, df.collect()))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    assert got == expected and len(expected) == len(PICKED)
    report = session.last_report
    assert report is not None and report.kind == "plan", report
    (t,) = [t for t in report.tables if t.pruning == "applied"]
    assert t.partitions_kept == len(PICKED) and t.partitions_total == DAYS, t
    main_jobs = [j for j in tracker.getJobIdsForGroup(group) if j not in made]
    assert main_jobs, "the query ran no job in its group"
    assert report.filters, report
    for f in report.filters:
        build_jobs = list(tracker.getJobIdsForGroup(job_group_id(f.filter_id)))
        # one job: adaptive execution would make each of its stages a job of its own
        assert len(build_jobs) == 1, (f.filter_id, build_jobs)
        # and that job came first: the query's stages queue behind it, not the other way
        assert build_jobs[0] < min(main_jobs), (f.filter_id, build_jobs, main_jobs)
