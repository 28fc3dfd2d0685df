"""Jobs as users write them, pruned through the optimizer hook (``dpp.frontends.hook.optimizer_hook``).

Each shape runs with ``dpp.enable(spark)`` on a declared path table and on a catalog table
over the same folder, in UTC and in America/Los_Angeles (a DATE partition column), and is
checked against Spark with every pruning off on the same data: same rows, the report shows
the fact pruned, and only the kept partitions were listed (folders listed <= kept + 1).
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from tests.conftest import spark_conf

DAYS = [dt.date(2024, 1, 20) + dt.timedelta(days=i) for i in range(40)]   # to 2024-02-28
FEB = [d for d in DAYS if d.month == 2]
OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}


def write_shape_data(root: Path) -> tuple[Path, Path]:
    """The shapes' star under ``root``: ``events`` by a DATE ``day`` (40 days and a NULL
    partition) and a ``calendar`` dimension; returns their folders."""
    fact = root / "events"
    for i, day in enumerate(DAYS):
        folder = fact / f"day={day.isoformat()}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([i, i + 100, -i], pa.int32()),
                                 "item": pa.array([i % 7, (i + 1) % 7, 3], pa.int32())}),
                       folder / "part-0.parquet")
    null_folder = fact / "day=__HIVE_DEFAULT_PARTITION__"
    null_folder.mkdir()
    pq.write_table(pa.table({"amount": pa.array([999], pa.int32()),
                             "item": pa.array([1], pa.int32())}), null_folder / "part-0.parquet")
    cal = root / "calendar"
    cal.mkdir()
    pq.write_table(pa.table({"day": pa.array(DAYS + [dt.date(2024, 3, 1)], pa.date32()),
                             "month": pa.array([d.month for d in DAYS] + [3], pa.int32())}),
                   cal / "part-0.parquet")
    return fact, cal


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("shapes")
    fact, cal = write_shape_data(root)
    spark.sql("DROP TABLE IF EXISTS js_events")
    spark.sql(f"CREATE TABLE js_events (amount INT, item INT, day DATE) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{fact}'")
    spark.sql("ALTER TABLE js_events RECOVER PARTITIONS")
    with spark_conf(spark, {"spark.dpp.tables.js_fact": str(fact),
                            "spark.dpp.report.path": str(root / "reports.jsonl")}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"fact": fact, "cal": str(cal), "root": root, "session": session,
                   "reports": root / "reports.jsonl", "expected": {}}
        finally:
            dpp.disable(spark)
            for t in ("js_events", "js_out", "js_ctas", "js_saved"):
                spark.sql(f"DROP TABLE IF EXISTS {t}")


def _cal(spark: Any, data: dict[str, Any]) -> Any:
    return spark.read.parquet(data["cal"]).where("month = 2")


def _sql_join(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    return spark.sql(f"SELECT f.amount, f.item, f.day FROM {fact} f JOIN "
                     f"parquet.`{data['cal']}` c ON f.day = c.day WHERE c.month = 2").collect()


def _df_join(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    return spark.table(fact).join(_cal(spark, data), "day").select("amount", "item",
                                                                   "day").collect()


def _write_back(spark: Any, data: dict[str, Any], fact: str, how: str) -> list[Any]:
    spark.read.parquet(data["cal"]).createOrReplaceTempView("js_cal")
    select = (f"SELECT f.amount, f.item, f.day FROM {fact} f JOIN js_cal c "
              f"ON f.day = c.day WHERE c.month = 2")
    spark.sql("DROP TABLE IF EXISTS js_out")
    if how == "insert":
        spark.sql("CREATE TABLE js_out (amount INT, item INT, day DATE) USING parquet")
        spark.sql(f"INSERT OVERWRITE js_out {select}")
    elif how == "ctas":
        spark.sql(f"CREATE TABLE js_out USING parquet AS {select}")
    else:
        (spark.table(fact).join(_cal(spark, data), "day").select("amount", "item", "day")
         .write.mode("overwrite").saveAsTable("js_out"))
    return spark.table("js_out").collect()


def _reader_view(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    source = (spark.read.parquet(str(data["fact"])) if fact == "js_fact"
              else spark.table(fact))
    source.createOrReplaceTempView("js_view")
    return spark.sql(f"SELECT v.amount, v.item, v.day FROM js_view v JOIN "
                     f"parquet.`{data['cal']}` c ON v.day = c.day WHERE c.month = 2").collect()


def _sql_view(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    spark.sql(f"CREATE OR REPLACE TEMP VIEW js_sqlview AS SELECT * FROM {fact} "
              f"WHERE amount > -1000")
    return spark.sql(f"SELECT v.amount, v.item, v.day FROM js_sqlview v JOIN "
                     f"parquet.`{data['cal']}` c ON v.day = c.day WHERE c.month = 2").collect()


def _union(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    a = spark.table(fact).join(_cal(spark, data), "day").select("amount", "day")
    b = (spark.table(fact).join(spark.read.parquet(data["cal"]).where("day < '2024-02-05'"),
                                "day").select("amount", "day"))
    return a.unionAll(b).collect()


def _cached_dim(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    cal = _cal(spark, data).cache()
    try:
        cal.count()
        return spark.table(fact).join(cal, "day").select("amount", "item", "day").collect()
    finally:
        cal.unpersist()


def _broadcast(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    # the hint F.broadcast puts on a DataFrame, spelled so a Connect client sends it too
    return (spark.table(fact).join(_cal(spark, data).hint("broadcast"), "day")
            .select("amount", "item", "day").collect())


def _aqe_off(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    with spark_conf(spark, {"spark.sql.adaptive.enabled": "false"}):
        return _df_join(spark, data, fact)


def _in_subquery(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    return spark.sql(f"SELECT amount, item, day FROM {fact} WHERE day IN "
                     f"(SELECT day FROM parquet.`{data['cal']}` WHERE month = 2)").collect()


def _static_and_dynamic(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    """Spark's own partition filter on top of dpp's: the index applies both."""
    return (spark.table(fact).where("day >= DATE'2024-02-10'").join(_cal(spark, data), "day")
            .select("amount", "item", "day").collect())


def _outer_non_preserved(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    return (_cal(spark, data).join(spark.table(fact), "day", "left")
            .select("amount", "item", "day").collect())


SHAPES: dict[str, Callable[[Any, dict[str, Any], str], list[Any]]] = {
    "static_and_dynamic": _static_and_dynamic,
    "outer_join_non_preserved_fact": _outer_non_preserved,
    "sql_join": _sql_join,
    "dataframe_join": _df_join,
    "insert_overwrite": lambda s, d, f: _write_back(s, d, f, "insert"),
    "ctas": lambda s, d, f: _write_back(s, d, f, "ctas"),
    "save_as_table": lambda s, d, f: _write_back(s, d, f, "save"),
    "reader_temp_view": _reader_view,
    "sql_temp_view": _sql_view,
    "dataframe_union": _union,
    "cached_dimension": _cached_dim,
    "broadcast_hint": _broadcast,
    "aqe_off": _aqe_off,
    "in_subquery": _in_subquery,
}


def _fact_entries(session: Any) -> list[Any]:
    report = session.last_report
    assert report is not None
    return [t for t in report.tables if t.pruning == "applied"]


@pytest.mark.parametrize("tz", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_job_shape_prunes_with_sparks_rows(spark: Any, data: dict[str, Any], shape: str,
                                           fact: str, tz: str) -> None:
    run = SHAPES[shape]
    session = data["session"]
    with spark_conf(spark, {"spark.sql.session.timeZone": tz}):
        # the path table and the catalog table are the same folder: Spark's answer (pruning
        # off) is computed once per shape and time zone and both kinds must give it
        expected = data["expected"].get((shape, tz))
        if expected is None:
            with spark_conf(spark, OFF):
                expected = sorted(map(tuple, run(spark, data, fact)), key=repr)
            data["expected"][(shape, tz)] = expected
        session.last_report = None
        got = sorted(map(tuple, run(spark, data, fact)), key=repr)
    assert got == expected
    assert len(expected) > 0
    applied = _fact_entries(session)
    assert applied, f"{shape} on {fact}: nothing pruned: {session.last_report.tables}"
    for t in applied:
        assert t.partitions_kept <= len(FEB), t
        assert t.partitions_kept < t.partitions_total, t
        # the listing skipped: only the kept partitions' folders (+ the root for path tables)
        assert t.folders_listed <= t.partitions_kept + 1, t


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_explain_starts_no_build_side(spark: Any, data: dict[str, Any], fact: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    session = data["session"]
    reports: Path = data["reports"]
    before = reports.read_text().count("\n") if reports.exists() else 0
    session.last_report = None
    df = spark.table(fact).join(_cal(spark, data), "day").select("amount", "item", "day")
    jobs_before = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    df.explain()
    capsys.readouterr()
    after = reports.read_text().count("\n") if reports.exists() else 0
    assert after == before and session.last_report is None
    jobs = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) - set(jobs_before)
    assert not jobs, f"explain ran Spark jobs {jobs}"
    # the same DataFrame, executed after its explain, is pruned (its build sides start then)
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, df.sparkSession.table(fact).join(_cal(spark, data), "day")
                              .select("amount", "item", "day").collect()), key=repr)
    assert sorted(map(tuple, df.collect()), key=repr) == expected
    assert _fact_entries(session)


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_preserved_fact_of_an_outer_join_is_not_pruned(spark: Any, data: dict[str, Any],
                                                       fact: str) -> None:
    session = data["session"]

    def run() -> list[Any]:
        return sorted(map(tuple, spark.table(fact).join(_cal(spark, data), "day", "left")
                          .select("amount", "item", "day").collect()), key=repr)

    with spark_conf(spark, OFF):
        expected = run()
    session.last_report = None
    assert run() == expected
    assert len(expected) == 3 * len(DAYS) + 1   # every fact row, the NULL partition's too
    report = session.last_report
    assert report is None or not [t for t in report.tables if t.pruning == "applied"]


def _file_indexes(df: Any) -> list[str]:
    """The class of each file relation's index in the optimized plan."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    out = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() == "LogicalRelation":
            rel = leaf.relation()
            if rel.getClass().getSimpleName() == "HadoopFsRelation":
                out.append(str(rel.location().getClass().getSimpleName()))
    return out


@pytest.mark.parametrize("setting", ["spark.dpp.enabled", "spark.dpp.optimizerHook"])
def test_off_leaves_sparks_plan(spark: Any, data: dict[str, Any], setting: str) -> None:
    session = data["session"]
    from dpp.frontends.hook.optimizer_hook import explaining

    on = spark.table("js_events").join(_cal(spark, data), "day")
    with explaining(spark):   # planned only: no build side started for nothing
        assert "DppFileIndex" in _file_indexes(on)
    with spark_conf(spark, {setting: "false"}):
        session.last_report = None
        df = spark.table("js_events").join(_cal(spark, data), "day")
        df.collect()
        assert session.last_report is None
        assert "DppFileIndex" not in _file_indexes(df)
        assert _file_indexes(df)   # the fact's own index is there


@pytest.mark.parametrize("mode", ["simple", "formatted"])
def test_explain_says_what_dpp_prunes_a_scan_by(spark: Any, data: dict[str, Any],
                                                mode: str, capsys: pytest.CaptureFixture
                                                ) -> None:
    """Spark's own plan text of a scan dpp prunes says what dpp prunes it by, ahead of the
    path (the simple mode abbreviates a Location to 100 characters); the root path Spark
    compares (a write over what a query reads, a refresh by path) is still the table's own:
    equal to it, and a plain path once qualified."""
    for fact in ("js_events", "js_fact"):
        df = spark.table(fact).join(_cal(spark, data), "day")
        capsys.readouterr()
        df.explain(mode=mode)
        text = capsys.readouterr().out
        assert "dpp: day IN calendar.day | file:" in text, text
        rel = [leaf for leaf in _leaves(df) if leaf.relation().location().getClass()
               .getSimpleName() == "DppFileIndex"]
        assert len(rel) == 1
        index = rel[0].relation().location()
        root, base = index.rootPaths().head(), index.base().rootPaths().head()
        assert root.equals(base) and base.equals(root) and root.hashCode() == base.hashCode()
        assert root.toString() == f"dpp: day IN calendar.day | {base.toString()}"
        jvm = spark.sparkContext._jvm
        fs = base.getFileSystem(spark._jsc.hadoopConfiguration())
        qualified = root.makeQualified(fs.getUri(), fs.getWorkingDirectory())
        assert qualified.toString() == base.makeQualified(
            fs.getUri(), fs.getWorkingDirectory()).toString()
        assert qualified.getClass().getName() == "org.apache.hadoop.fs.Path"
        assert jvm.org.apache.hadoop.fs.Path(root.toUri()).equals(base)


def _leaves(df: Any) -> list[Any]:
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    return [leaves.apply(i) for i in range(leaves.size())
            if leaves.apply(i).getClass().getSimpleName() == "LogicalRelation"]


def test_report_line_per_pruned_query(spark: Any, data: dict[str, Any]) -> None:
    reports: Path = data["reports"]
    before = reports.read_text().splitlines() if reports.exists() else []
    _df_join(spark, data, "js_events")
    lines = reports.read_text().splitlines()[len(before):]
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert entry["kind"] == "plan"
    assert any(t["pruning"] == "applied" for t in entry["tables"])


def test_a_query_pyspark_names_no_call_site_for_is_named_by_the_users_line(
        spark: Any, data: dict[str, Any]) -> None:
    """PySpark tells Spark where the user's code is for ``collect``, not for a write: the
    report then names the query by the user's Python line, never by dpp's own JVM frame."""
    reports: Path = data["reports"]
    before = reports.read_text().splitlines() if reports.exists() else []
    (spark.table("js_events").join(_cal(spark, data), "day").select("amount", "item", "day")
     .write.mode("overwrite").saveAsTable("js_saved"))
    entries = [json.loads(x) for x in reports.read_text().splitlines()[len(before):]]
    plans = [e for e in entries if e["kind"] == "plan"
             and any(t["pruning"] == "applied" for t in e["tables"])]
    assert plans, entries
    for e in plans:
        assert e["query_text"].startswith("saveAsTable at test_job_shapes.py:"), e["query_text"]
        assert "PlanDescriber" not in e["query_text"]


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_a_query_explained_then_run_is_named_by_the_action(
        spark: Any, data: dict[str, Any], fact: str, capsys: pytest.CaptureFixture) -> None:
    """A DataFrame explained, then collected, is planned once (at the explain, which starts
    nothing): its report names it by the action that ran it, not by the explain."""
    reports: Path = data["reports"]
    before = reports.read_text().splitlines() if reports.exists() else []
    df = spark.table(fact).join(_cal(spark, data), "day").select("amount", "item", "day")
    df.explain()
    capsys.readouterr()
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.table(fact).join(_cal(spark, data), "day")
                              .select("amount", "item", "day").collect()), key=repr)
    assert sorted(map(tuple, df.collect()), key=repr) == expected
    entries = [json.loads(x) for x in reports.read_text().splitlines()[len(before):]]
    plans = [e for e in entries if e["kind"] == "plan"
             and any(t["pruning"] == "applied" for t in e["tables"])]
    assert len(plans) == 1, entries
    assert plans[0]["query_text"].startswith("collect at test_job_shapes.py:"), \
        plans[0]["query_text"]
    assert "planned during an explain" in " ".join(plans[0]["analysis_notes"])


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_spark_sql_always_goes_through_the_optimizer_hook(spark: Any, data: dict[str, Any],
                                                         fact: str) -> None:
    """On a classic session with the hook, ``spark.sql`` is pruned by the hook whatever the
    retired ``spark.dpp.sqlPath`` says (``text`` is still accepted, and changes nothing);
    the same rows; a value that is neither is still an error naming the key."""
    session = data["session"]
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, _sql_join(spark, data, fact)), key=repr)
    kinds = {}
    for path in ("text", "hook", None):
        with spark_conf(spark, {"spark.dpp.sqlPath": path}):
            session.last_report = None
            assert sorted(map(tuple, _sql_join(spark, data, fact)), key=repr) == expected
            kinds[path] = session.last_report.kind
            assert _fact_entries(session), (path, session.last_report.tables)
    assert kinds["hook"] == kinds[None] == kinds["text"] == "plan", kinds
    session.last_report = None
    text = (f"SELECT f.amount, f.item, f.day FROM {fact} f JOIN parquet.`{data['cal']}` c "
            f"ON f.day = c.day WHERE c.month = 2")
    assert sorted(map(tuple, session.sql(text).collect()), key=repr) == expected
    assert session.last_report.kind == "plan"
    with spark_conf(spark, {"spark.dpp.sqlPath": "sideways"}):
        with pytest.raises(Exception, match="spark.dpp.sqlPath"):
            _sql_join(spark, data, fact)


def _reader_jobs(spark: Any, data: dict[str, Any], fact: str) -> int:
    """The Spark jobs ``spark.read.parquet`` of a declared table's folder runs (its view is
    made so for each query that names it); none for a catalog table."""
    if fact != "js_fact":
        return 0
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    spark.read.parquet(str(data["fact"]))
    return len(set(tracker.getJobIdsForGroup(None)) - before)


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_sql_explain_starts_no_build_side(spark: Any, data: dict[str, Any], fact: str) -> None:
    """``spark.sql("EXPLAIN …")`` optimizes the query (the hook plans it) but runs none of it."""
    session = data["session"]
    reports: Path = data["reports"]
    tracker = spark.sparkContext.statusTracker()

    def explain() -> set[int]:
        """The Spark jobs one EXPLAIN ran."""
        before = set(tracker.getJobIdsForGroup(None))
        text = spark.sql(f"EXPLAIN SELECT f.amount FROM {fact} f JOIN parquet.`{data['cal']}` "
                         f"c ON f.day = c.day WHERE c.month = 2").collect()[0][0]
        assert "Physical Plan" in text
        return set(tracker.getJobIdsForGroup(None)) - before

    with spark_conf(spark, OFF):
        # what Spark itself runs to explain it (a listing job), with the reader of a declared
        # table's folder, which lists it when its view is made for the query
        sparks_own = len(explain()) + _reader_jobs(spark, data, fact)
    before = reports.read_text().count("\n") if reports.exists() else 0
    session.last_report = None
    hook = session.optimizer_hook
    known = set(hook._requests)
    jobs = explain()
    planned = [r for q, r in hook._requests.items() if q not in known]
    assert planned, "the hook did not plan the explained query"
    assert not [r for r in planned if r.started], "EXPLAIN started build sides"
    assert len(jobs) <= sparks_own, f"EXPLAIN ran Spark jobs {jobs} (Spark alone: {sparks_own})"
    after = reports.read_text().count("\n") if reports.exists() else 0
    assert after == before and session.last_report is None


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_copies_of_a_pruned_relation_are_one_scan_for_sparks_reuse(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    """A subtree that appears twice (a CTE or a DataFrame used twice) is computed once by
    Spark's exchange reuse; dpp's copies share one load and equal file indexes, so the reuse
    survives pruning (TPC-DS q14 read its facts three times when it did not)."""
    session = data["session"]

    def job() -> Any:
        daily = (spark.table(fact).join(_cal(spark, data), "day").groupBy("day")
                 .agg({"amount": "sum"}))
        return daily.union(daily)

    def scans(df: Any) -> int:
        """Scans of the fact the executed plan runs (a reused exchange runs its scan once)."""
        plan = df._jdf.queryExecution().executedPlan().toString().split("Initial Plan")[0]
        return sum(1 for line in plan.splitlines()
                   if "FileScan parquet" in line and "amount" in line
                   and "ReusedExchange" not in line)

    with spark_conf(spark, OFF):
        off = job()
        expected = sorted(map(tuple, off.collect()), key=repr)
    session.last_report = None
    on = job()
    assert sorted(map(tuple, on.collect()), key=repr) == expected
    assert scans(off) == 1, "Spark itself does not reuse here: the test shows nothing"
    assert scans(on) == 1
    applied = _fact_entries(session)
    assert len(applied) == 1, applied   # one load for both copies
    assert applied[0].partitions_kept == len(FEB)


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_copies_in_subqueries_share_one_load_and_sparks_subquery_reuse(
        spark: Any, data: dict[str, Any], fact: str) -> None:
    """A CTE read by the query and by scalar subqueries (TPC-DS q14's shape): Spark optimizes
    each subquery in a run of its own, and the copies there must still share one filter, one
    load and one file index, or Spark cannot reuse the repeated subquery and reads the fact
    once more per copy (q14 read 53,887 fact files against Spark's 18,127 when they did not).
    The query gets one report."""
    session = data["session"]
    spark.read.parquet(data["cal"]).createOrReplaceTempView("js_cal")
    query = (f"WITH feb AS (SELECT f.day, f.amount, f.item FROM {fact} f JOIN js_cal c "
             f"ON f.day = c.day WHERE c.month = 2) "
             f"SELECT item, sum(amount) s FROM feb GROUP BY item "
             f"HAVING sum(amount) > (SELECT avg(amount) FROM feb) "
             f"UNION ALL SELECT item, count(*) FROM feb GROUP BY item "
             f"HAVING count(*) > (SELECT avg(amount) FROM feb) / 100")

    def scans(df: Any) -> int:
        """Fact scans the executed plan runs (reused subqueries and exchanges run once)."""
        df.collect()
        plan = df._jdf.queryExecution().executedPlan().toString()
        return sum(1 for line in plan.splitlines()
                   if "FileScan parquet" in line and "amount" in line
                   and "Reused" not in line)

    with spark_conf(spark, OFF):
        off = spark.sql(query)
        expected = sorted(map(tuple, off.collect()), key=repr)
        off_scans = scans(off)
    reports = data["reports"]
    before = reports.read_text().count("\n") if reports.exists() else 0
    session.last_report = None
    with spark_conf(spark, {"spark.dpp.sqlPath": "hook"}):
        on = spark.sql(query)
        rows = sorted(map(tuple, on.collect()), key=repr)
    assert rows == expected
    assert session.last_report is not None and session.last_report.kind == "plan"
    assert scans(on) == off_scans, on._jdf.queryExecution().executedPlan().toString()
    applied = _fact_entries(session)
    assert len(applied) == 1, applied   # one load for the query's and the subqueries' copies
    assert applied[0].partitions_kept == len(FEB)
    assert reports.read_text().count("\n") == before + 1   # one report for the query


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_a_relation_spark_never_scans_still_gets_its_report(spark: Any, data: dict[str, Any],
                                                            fact: str) -> None:
    """AQE drops the fact's scan when the broadcast dimension turns out empty: the wrapped
    relation is never listed, and the query's report (written on the last listing) must
    still be written, when Spark ends the execution, saying why."""
    import time

    session = data["session"]
    reports = data["reports"]
    spark.read.parquet(data["cal"]).createOrReplaceTempView("js_cal")
    query = (f"SELECT f.amount, f.day FROM {fact} f JOIN js_cal c ON f.day = c.day "
             f"WHERE c.month = 13")
    before = reports.read_text().count("\n") if reports.exists() else 0
    with spark_conf(spark, {"spark.sql.adaptive.enabled": "true",
                            "spark.dpp.sqlPath": "hook"}):
        df = spark.sql(query)
        assert df.collect() == []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (reports.read_text().count("\n") if reports.exists() else 0) > before:
            break
        time.sleep(0.2)
    lines = reports.read_text().splitlines()[before:]
    assert len(lines) == 1, lines
    entry = json.loads(lines[0])
    assert entry["kind"] == "plan"
    assert any("never listed" in (t.get("reason") or "") for t in entry["tables"]), entry


@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
def test_dpp_explain_shows_the_hooks_decisions(spark: Any, data: dict[str, Any],
                                               fact: str) -> None:
    """``DppSession.explain`` on a session with the hook describes what the hook decides on
    Spark's plan (not the SQL-text analysis), and runs nothing: no report, no build side, no
    Spark job beyond what Spark's own EXPLAIN runs."""
    session = data["session"]
    reports: Path = data["reports"]
    tracker = spark.sparkContext.statusTracker()
    query = (f"SELECT f.amount FROM {fact} f JOIN parquet.`{data['cal']}` c "
             f"ON f.day = c.day WHERE c.month = 2")
    with spark_conf(spark, OFF):   # what Spark itself runs to explain it (a listing job)
        jobs_before = set(tracker.getJobIdsForGroup(None))
        spark.sql(f"EXPLAIN {query}").collect()
        sparks_own = (len(set(tracker.getJobIdsForGroup(None)) - jobs_before)
                      + _reader_jobs(spark, data, fact))
    before = reports.read_text().count("\n") if reports.exists() else 0
    session.last_report = None
    jobs_before = set(tracker.getJobIdsForGroup(None))
    text = session.explain(query)
    jobs = set(tracker.getJobIdsForGroup(None)) - jobs_before
    assert len(jobs) <= sparks_own, f"explain ran Spark jobs {jobs} (Spark alone: {sparks_own})"
    assert "dpp (optimizer hook):" in text and "pruned on day" in text, text
    outer = session.explain(f"SELECT f.amount FROM {fact} f LEFT JOIN parquet.`{data['cal']}` c "
                            f"ON f.day = c.day AND c.month = 2")
    assert "pruned on" not in outer and "LEFT OUTER" in outer, outer
    missing = session.explain("SELECT * FROM js_no_such_table")
    assert "Spark cannot plan the query" in missing and "js_no_such_table" in missing
    assert session.last_report is None
    assert (reports.read_text().count("\n") if reports.exists() else 0) == before
