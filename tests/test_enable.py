"""``dpp.enable(spark)``: an existing job's ``spark.sql`` pruned by configuration alone.

Real Parquet in tmp folders, the shared SparkSession; every test leaves the session as it
found it (``dpp.disable`` in a fixture, conf restored by ``spark_conf``).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator

import pytest

import dpp
from dpp.runtime.config import DppConfig
from dpp.core.errors import ConfigError
from tests.conftest import make_partitioned_table, spark_conf, write_parquet

FACT, DIM = "en_sales", "en_days"
DAYS = list(range(1, 13))                      # 12 partitions, 3 per month
QUERY = f"""
    SELECT d.d_month, s.item, count(*) AS n, sum(s.amount) AS amount
    FROM {FACT} s JOIN {DIM} d ON s.ss_day = d.day_sk
    WHERE d.d_month = 2
    GROUP BY d.d_month, s.item"""
PRUNING_OFF = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
               "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
               "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false"}
TABLE_KEY = f"spark.dpp.tables.{FACT}"


def _month(day: int) -> int:
    return (day - 1) // 3 + 1


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("enable")
    fact = make_partitioned_table(root / FACT, {
        (("ss_day", str(d)),): {"item": [f"i{(d * 7 + k) % 4}" for k in range(5)],
                                "amount": [d * 100 + k for k in range(5)]}
        for d in DAYS})
    # the same table with only the first 6 days: a "moved" table reads differently
    short = make_partitioned_table(root / "short", {
        (("ss_day", str(d)),): {"item": [f"i{(d * 7 + k) % 4}" for k in range(5)],
                                "amount": [d * 100 + k for k in range(5)]}
        for d in DAYS[:6]})
    dim = write_parquet(root / DIM / "part-0.parquet",
                        {"day_sk": DAYS, "d_month": [_month(d) for d in DAYS]}).parent
    return {"fact": fact, "short": short, "dim": dim, "root": root}


@pytest.fixture
def job(spark: Any, data: dict[str, Path], tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The job's dimension as an ordinary view; report file and fact table by conf; dpp
    always disabled and conf restored afterwards."""
    report = tmp_path / "report.jsonl"
    spark.read.parquet(str(data["dim"])).createOrReplaceTempView(DIM)
    try:
        with spark_conf(spark, {"spark.dpp.enabled": None, TABLE_KEY: str(data["fact"]),
                                "spark.dpp.report.path": str(report),
                                "spark.dpp.waitTimeout": "20s"}):
            try:
                yield {"report": report}
            finally:
                dpp.disable(spark)
    finally:
        spark.catalog.dropTempView(DIM)
        spark.catalog.dropTempView(FACT)


def _rows(df_or_rows: Any) -> list[tuple]:
    rows = df_or_rows.collect() if hasattr(df_or_rows, "collect") else df_or_rows
    return sorted(tuple(r) for r in rows)


def _plain_spark_rows(spark: Any, path: Path, query: str = QUERY) -> list[tuple]:
    """The reference: Spark alone (dpp not enabled, every pruning off) over a view of the
    fact folder."""
    assert dpp.session_of(spark) is None
    spark.read.parquet(str(path)).createOrReplaceTempView(FACT)
    try:
        with spark_conf(spark, PRUNING_OFF):
            return _rows(spark.sql(query))
    finally:
        spark.catalog.dropTempView(FACT)


def _report_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _fact_entry(report: dict) -> dict:
    (entry,) = [t for t in report["tables"] if t["table"] == FACT]
    return entry


def _assert_pruned(report: dict) -> None:
    t = _fact_entry(report)
    assert t["pruning"] == "applied", t
    assert t["partitions_kept"] == 3 and t["partitions_total"] == len(DAYS), t


def _fact_files(df: Any, data: dict[str, Path]) -> set[str]:
    """The fact-table folders the DataFrame's plan reads (Spark's own inputFiles)."""
    root = data["fact"].resolve().as_posix()
    return {f.split(root + "/", 1)[1].split("/")[0] for f in df.inputFiles() if root in f}


# ------------------------------------------------------------------------------ switched on

def test_on_same_rows_as_plain_spark_and_pruning_reported(spark, data, job):
    expected = _plain_spark_rows(spark, data["fact"])
    assert expected  # the query selects something
    session = dpp.enable(spark)
    df = spark.sql(QUERY)
    assert type(df).__module__.startswith("pyspark.sql") and type(df).__name__ == "DataFrame"
    assert _rows(df) == expected
    assert _fact_files(df, data) == {"ss_day=4", "ss_day=5", "ss_day=6"}
    assert dpp.session_of(spark) is session
    _assert_pruned(session.last_report.to_dict())
    (line,) = _report_lines(job["report"])
    _assert_pruned(line)


def test_off_from_the_start_is_plain_spark_no_report(spark, data, job):
    from pyspark.errors import AnalysisException

    expected = _plain_spark_rows(spark, data["fact"])
    spark.conf.set("spark.dpp.enabled", "false")
    session = dpp.enable(spark)
    # off, dpp touches nothing: a table only declared is unknown, as to Spark alone
    assert not spark.catalog.tableExists(FACT)
    with pytest.raises(AnalysisException):
        spark.sql(QUERY)
    spark.read.parquet(str(data["fact"])).createOrReplaceTempView(FACT)   # the job's own
    df = spark.sql(QUERY)
    assert _rows(df) == expected
    # Spark reads every partition itself (its own pruning is not dpp's), and no dpp report
    assert _fact_files(df, data) == {f"ss_day={d}" for d in DAYS}
    assert session.last_report is None
    assert _report_lines(job["report"]) == []


def test_switched_off_and_on_mid_job_with_conf_set(spark, data, job):
    expected = _plain_spark_rows(spark, data["fact"])
    session = dpp.enable(spark)
    assert _rows(spark.sql(QUERY)) == expected
    first = session.last_report
    _assert_pruned(first.to_dict())

    spark.conf.set("spark.dpp.enabled", "false")
    df = spark.sql(QUERY)
    assert _rows(df) == expected
    assert _fact_files(df, data) == {f"ss_day={d}" for d in DAYS}   # plain Spark
    assert session.last_report is first              # no dpp report for that call
    assert len(_report_lines(job["report"])) == 1

    spark.conf.set("spark.dpp.enabled", "true")
    assert _rows(spark.sql(QUERY)) == expected
    assert session.last_report is not first
    _assert_pruned(session.last_report.to_dict())
    assert len(_report_lines(job["report"])) == 2


# ------------------------------------------------------------------------------ install, restore

def test_disable_restores_spark_sql_exactly(spark, data, job):
    cls_sql = type(spark).sql
    before = spark.sql
    assert "sql" not in vars(spark)
    dpp.enable(spark)
    assert "sql" in vars(spark) and spark.sql != before
    assert _rows(spark.sql(QUERY))  # registered from the conf, a plain view made for it
    dpp.disable(spark)
    assert "sql" not in vars(spark)
    assert spark.sql == before and spark.sql.__func__ is cls_sql
    assert dpp.session_of(spark) is None
    # behaviour: plain Spark again — a table only declared by spark.dpp.tables is unknown
    from pyspark.errors import AnalysisException

    assert not spark.catalog.tableExists(FACT)
    with pytest.raises(AnalysisException):
        spark.sql(QUERY)
    dpp.disable(spark)  # a second disable is a no-op


def test_disable_restores_a_users_own_sql_attribute(spark, job):
    calls: list[str] = []
    real = spark.sql

    def users_sql(q: str, args: Any = None, **kw: Any) -> Any:  # e.g. a logging wrapper
        calls.append(q)
        return real(q, args, **kw)

    spark.sql = users_sql
    try:
        dpp.enable(spark)
        assert spark.sql("SELECT 41 + 1").collect()[0][0] == 42
        assert calls == ["SELECT 41 + 1"]   # dpp calls through the function it replaced
        dpp.disable(spark)
        assert vars(spark)["sql"] is users_sql
    finally:
        del spark.sql


def test_enable_twice_is_harmless(spark, data, job):
    s1 = dpp.enable(spark)
    wrapper = vars(spark)["sql"]
    s2 = dpp.enable(spark)
    assert s1 is s2 and vars(spark)["sql"] is wrapper
    assert wrapper.dpp_original_sql == type(spark).sql.__get__(spark)   # wrapped once
    expected = _rows(spark.sql(QUERY))
    assert len(_report_lines(job["report"])) == 1     # one query, one report
    dpp.disable(spark)
    assert "sql" not in vars(spark)
    assert expected == _plain_spark_rows(spark, data["fact"])


def test_two_sessions_are_independent(spark, data, job):
    other = spark.newSession()
    other.read.parquet(str(data["dim"])).createOrReplaceTempView(DIM)
    session = dpp.enable(spark)
    assert "sql" not in vars(other) and dpp.session_of(other) is None
    # other: plain Spark; the fact is its own view (the conf keys above are spark's session's)
    other.read.parquet(str(data["fact"])).createOrReplaceTempView(FACT)
    assert _rows(other.sql(QUERY)) == _rows(spark.sql(QUERY))
    report = session.last_report
    _assert_pruned(report.to_dict())
    assert len(_report_lines(job["report"])) == 1

    # enabling the other session gives it a DppSession of its own; disabling one leaves the other
    other.conf.set(TABLE_KEY, str(data["fact"]))
    other.catalog.dropTempView(FACT)
    other_session = dpp.enable(other)
    try:
        assert other_session is not session
        dpp.disable(spark)
        assert dpp.session_of(other) is other_session and "sql" in vars(other)
        assert _rows(other.sql(QUERY)) == _plain_spark_rows(spark, data["fact"])
        _assert_pruned(other_session.last_report.to_dict())
        assert session.last_report is report
    finally:
        dpp.disable(other)
    assert "sql" not in vars(other)


# ------------------------------------------------------------------------------ what passes through

def test_commands_and_parameterized_sql_go_straight_to_spark(spark, data, job):
    session = dpp.enable(spark)
    assert {r.tableName for r in spark.sql("SHOW TABLES").collect()} >= {DIM}
    n = spark.sql(f"SELECT count(*) FROM {DIM} WHERE d_month = :m", args={"m": 2})
    assert n.collect()[0][0] == 3
    days = spark.read.parquet(str(data["dim"]))
    assert spark.sql("SELECT count(*) FROM {t} WHERE d_month = 1", t=days).collect()[0][0] == 3
    # a parameterized query on a declared table: Spark's own sql, with no dpp analysis; with
    # the optimizer hook (the default path) the table is Spark's reader of its folder and,
    # with no join, nothing of dpp's: Spark's partition filter picks the day, no report
    df = spark.sql(f"SELECT count(*) FROM {FACT} WHERE ss_day = ?", args=[4])
    assert df.collect()[0][0] == 5
    assert session.last_report is None and _report_lines(job["report"]) == []
    # on the SQL-text path it goes to Spark untouched: no pruning, no report
    session.last_report = None
    job["report"].unlink(missing_ok=True)
    with spark_conf(spark, {"spark.dpp.sqlPath": "text", "spark.dpp.optimizerHook": "false"}):
        df = spark.sql(f"SELECT count(*) FROM {FACT} WHERE ss_day = ?", args=[4])
        assert df.collect()[0][0] == 5
    assert session.last_report is None and _report_lines(job["report"]) == []


def test_spark_errors_are_sparks_own(spark, job):
    from pyspark.errors import AnalysisException, ParseException

    dpp.enable(spark)
    with pytest.raises(AnalysisException):
        spark.sql("SELECT * FROM en_no_such_table")
    with pytest.raises(ParseException):
        spark.sql("SELECT 1 +")


def test_an_internal_failure_runs_the_query_with_sparks_sql(spark, data, job, monkeypatch,
                                                              caplog):
    """The SQL-text path (a session enabled without the optimizer hook): a failure in dpp's
    analysis runs the query with Spark's own ``sql``."""
    expected = _plain_spark_rows(spark, data["fact"])
    with spark_conf(spark, {"spark.dpp.optimizerHook": "false"}):
        session = dpp.enable(spark)
    assert session.optimizer_hook is None

    def broken(*a: Any, **k: Any) -> Any:
        raise RuntimeError("a bug inside dpp")

    monkeypatch.setattr(type(session), "_run_sql", broken)   # dpp's code, not Spark's
    with caplog.at_level(logging.WARNING, logger="dpp.enable"):
        df = spark.sql(QUERY)
    assert _rows(df) == expected
    assert "a bug inside dpp" in caplog.text


def test_an_internal_failure_in_the_hook_keeps_sparks_plan(spark, data, job, monkeypatch,
                                                           caplog):
    """The default path on a classic session (the optimizer hook): a failure in dpp's
    planning leaves Spark's own plan (same rows), said in the log."""
    from dpp.frontends.hook.optimizer_hook import OptimizerHook

    expected = _plain_spark_rows(spark, data["fact"])
    session = dpp.enable(spark)
    if session.optimizer_hook is None:
        pytest.skip(f"no optimizer hook here: {session.hook_note}")

    def broken(*a: Any, **k: Any) -> Any:
        raise RuntimeError("a bug inside dpp's hook")

    monkeypatch.setattr(OptimizerHook, "on_plan", broken)   # dpp's code, not Spark's
    with caplog.at_level(logging.WARNING, logger="dpp.frontends.hook.optimizer_hook"):
        df = spark.sql(QUERY)
        assert _rows(df) == expected
    assert "a bug inside dpp's hook" in caplog.text


# ------------------------------------------------------------------------------ spark.dpp.tables.*

def test_tables_declared_after_enable_and_moved_and_removed(spark, data, job):
    spark.conf.unset(TABLE_KEY)
    session = dpp.enable(spark)
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):          # not declared yet: unknown to Spark
        spark.sql(QUERY)
    spark.conf.set(TABLE_KEY, str(data["fact"]))    # declared after enable: read per call
    assert _rows(spark.sql(QUERY)) == _plain_spark_rows_enabled(spark, data["fact"])
    _assert_pruned(session.last_report.to_dict())

    spark.conf.set(TABLE_KEY, str(data["short"]))   # moved: registered again at the new path
    count = f"SELECT count(*) FROM {FACT} s JOIN {DIM} d ON s.ss_day = d.day_sk " \
            f"WHERE d.d_month <= 3"
    assert spark.sql(count).collect()[0][0] == 6 * 5   # the short table has days 1..6 only

    spark.conf.unset(TABLE_KEY)                      # removed: forgotten, its view dropped
    with pytest.raises(AnalysisException):
        spark.sql(count)


def _plain_spark_rows_enabled(spark: Any, path: Path) -> list[tuple]:
    """The reference while dpp is enabled: plain Spark through the unwrapped sql, over a view
    named apart from the declared table."""
    spark.read.parquet(str(path)).createOrReplaceTempView("en_sales_ref")
    try:
        with spark_conf(spark, PRUNING_OFF):
            return _rows(vars(spark)["sql"].dpp_original_sql(QUERY.replace(FACT, "en_sales_ref")))
    finally:
        spark.catalog.dropTempView("en_sales_ref")


def test_a_bad_table_path_is_an_error_naming_key_and_path(spark, data, job, tmp_path):
    missing = tmp_path / "no" / "such" / "table"
    bad_key = "spark.dpp.tables.en_missing"
    # at enable(): the error, and spark.sql left as it was
    with spark_conf(spark, {bad_key: str(missing)}):
        with pytest.raises(ConfigError) as err:
            dpp.enable(spark)
        assert bad_key in str(err.value) and str(missing) in str(err.value)
        assert "sql" not in vars(spark) and dpp.session_of(spark) is None
    # declared later: the error at the next spark.sql, until the conf is fixed
    dpp.enable(spark)
    with spark_conf(spark, {bad_key: str(missing)}):
        with pytest.raises(ConfigError) as err:
            spark.sql(QUERY)
        assert bad_key in str(err.value) and str(missing) in str(err.value)
    assert _rows(spark.sql(QUERY))   # fixed: the job goes on
    # a name that cannot be a table name
    with spark_conf(spark, {"spark.dpp.tables.en-x": str(data["fact"])}):
        with pytest.raises(ConfigError, match=r"spark\.dpp\.tables\.en-x"):
            spark.sql(QUERY)


def test_table_keys_are_not_unknown_settings(caplog):
    with caplog.at_level(logging.WARNING, logger="dpp.runtime.config"):
        cfg = DppConfig.from_mapping({"spark.dpp.tables.store_sales": "/data/store_sales",
                                      "spark.dpp.enabled": "true"})
    assert cfg.enabled and "unknown" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="dpp.runtime.config"):
        DppConfig.from_mapping({"spark.dpp.enabeld": "true"})
    assert "unknown setting spark.dpp.enabeld" in caplog.text   # the warning still works


def test_a_misspelled_key_gets_one_warning_with_a_suggestion(caplog):
    """Settings are read on every query: a misspelled key is named once per process, with
    the setting it most likely means (a letter dropped, a case slip); a key close to none
    gets no guess."""
    from dpp.runtime.config import suggestion

    with caplog.at_level(logging.WARNING, logger="dpp.runtime.config"):
        for _ in range(3):
            DppConfig.from_mapping({"spark.dpp.waitTimeot": "20s"})
    lines = [r.getMessage() for r in caplog.records if "waitTimeot" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "(did you mean spark.dpp.waitTimeout?)" in lines[0]
    assert suggestion("spark.dpp.REPORT.PATH") == "spark.dpp.report.path"
    assert suggestion("spark.dpp.bloomFilter.fp") == "spark.dpp.bloomFilter.fpp"
    assert suggestion("spark.dpp.nothingLikeThis") is None


def test_settings_are_read_as_spark_holds_them(spark):
    # spark_settings (read on every call) against PySpark's own reading of the session conf
    from dpp.runtime.config import spark_settings

    odd = {"spark.dpp.tables.en_odd": '/a b/c, d=e"f\\g/ünï', "spark.dpp.waitTimeout": "7s"}
    with spark_conf(spark, odd):
        mine = spark_settings(spark)
        theirs = {k: v for k, v in spark.conf.getAll.items() if k.startswith("spark.dpp.")}
        assert mine == theirs and mine["spark.dpp.tables.en_odd"] == odd["spark.dpp.tables.en_odd"]
    assert "spark.dpp.tables.en_odd" not in spark_settings(spark)
