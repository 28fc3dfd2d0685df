"""Names on a classic session: a declared table (``spark.dpp.tables.<name>``) never takes a
name the user's session already holds, and ``spark.dpp.enabled=false`` touches nothing.

The user's own objects here read *other* data than the declared folder (fewer days, other
amounts), so reading the declared folder in their place is a wrong answer the row comparison
sees. Every reference is Spark alone (dpp not enabled, Spark's own pruning off) on the same
data; every test leaves the shared session as it found it.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator

import pytest

import dpp
from dpp.core.errors import ConfigError
from tests.adversarial_support import OFF as PRUNING_OFF, rows as _rows, spark_rows_over
from tests.conftest import make_partitioned_table, spark_conf, write_parquet

FACT, DIM = "an_events", "an_days"
KEY = f"spark.dpp.tables.{FACT}"
DAYS = list(range(1, 9))
QUERY = (f"SELECT e.day, sum(e.amount) AS amount, count(*) AS n FROM {FACT} e "
         f"JOIN {DIM} d ON e.day = d.day_sk WHERE d.tag = 'x' GROUP BY e.day")
SQL_PATHS = ["hook", "text"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adv_names")
    declared = make_partitioned_table(root / "declared", {
        (("day", str(d)),): {"amount": [d * 10 + k for k in range(4)]} for d in DAYS})
    # the user's own data under the same name: days 2..4 only, other amounts
    users = make_partitioned_table(root / "users", {
        (("day", str(d)),): {"amount": [1000 + d]} for d in (2, 3, 4)})
    dim = write_parquet(root / "dim" / "part-0.parquet",
                        {"day_sk": DAYS, "tag": ["x" if d in (2, 3, 7) else "y" for d in DAYS]}
                        ).parent
    return {"declared": declared, "users": users, "dim": dim, "root": root}


def _spark_rows(spark: Any, folder: Path, query: str = QUERY) -> list[tuple]:
    """Spark alone over a view of ``folder`` named FACT: dpp not enabled, pruning off."""
    return spark_rows_over(spark, folder, FACT, query)


@pytest.fixture
def refs(spark: Any, data: dict[str, Path]) -> dict[str, list[tuple]]:
    spark.read.parquet(str(data["dim"])).createOrReplaceTempView(DIM)
    out = {"declared": _spark_rows(spark, data["declared"]),
           "users": _spark_rows(spark, data["users"])}
    assert out["declared"] and out["users"] and out["declared"] != out["users"]
    return out


@pytest.fixture
def job(spark: Any, data: dict[str, Path], refs: dict[str, list[tuple]],
        tmp_path: Path) -> Iterator[dict[str, Any]]:
    """FACT declared, the dimension a view of the job's own; afterwards dpp disabled, the
    conf restored, every view and table of these names gone."""
    try:
        with spark_conf(spark, {"spark.dpp.enabled": None, KEY: str(data["declared"]),
                                "spark.dpp.sqlPath": None,
                                "spark.dpp.report.path": str(tmp_path / "r.jsonl"),
                                "spark.dpp.waitTimeout": "20s"}):
            try:
                yield {"refs": refs, "report": tmp_path / "r.jsonl"}
            finally:
                dpp.disable(spark)
    finally:
        for v in (FACT, DIM):
            spark.catalog.dropTempView(v)
        spark.sql(f"DROP TABLE IF EXISTS {FACT}")


def _users_view(spark: Any, data: dict[str, Path], name: str = FACT) -> None:
    spark.read.parquet(str(data["users"])).createOrReplaceTempView(name)


def _reads(spark: Any, folder: Path, name: str = FACT) -> bool:
    """Whether every file ``spark.table(name)`` reads lies in ``folder``."""
    files = spark.table(name).inputFiles()
    return bool(files) and all(str(folder.resolve()) in f for f in files)


def _said(session: Any, caplog: Any, report_path: Path, query: str = QUERY) -> None:
    """The decline is said: a warning, a note in the next report dpp wrote, and in explain."""
    assert any(FACT in r.getMessage() and "wins" in r.getMessage()
               for r in caplog.records if r.levelno >= logging.WARNING), caplog.text
    lines = [json.loads(x) for x in report_path.read_text().splitlines() if x.strip()]
    assert any(FACT in n and "wins" in n for line in lines for n in line["analysis_notes"]), \
        lines
    assert any(FACT in x and "wins" in x for x in session.explain(query).splitlines())


# ------------------------------------------------------------------------------ the user's view

@pytest.mark.parametrize("sql_path", SQL_PATHS)
def test_a_users_view_made_before_enable_wins(spark, data, job, caplog, sql_path):
    _users_view(spark, data)
    spark.conf.set("spark.dpp.sqlPath", sql_path)
    with caplog.at_level(logging.WARNING, logger="dpp"):
        session = dpp.enable(spark)
        session.last_report = None
        assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
    assert _reads(spark, data["users"])          # still the user's view, not replaced
    _said(session, caplog, job["report"])
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]   # and on every later call


@pytest.mark.parametrize("sql_path", SQL_PATHS)
def test_a_users_view_made_after_dpps_is_not_overwritten_nor_dropped(spark, data, job,
                                                                     caplog, sql_path):
    spark.conf.set("spark.dpp.sqlPath", sql_path)
    session = dpp.enable(spark)
    assert _rows(spark.sql(QUERY)) == job["refs"]["declared"]   # dpp's view of the folder
    _users_view(spark, data)                                    # the user's, over it
    with caplog.at_level(logging.WARNING, logger="dpp"):
        session.last_report = None
        assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
        assert _rows(spark.sql(QUERY)) == job["refs"]["users"]   # not overwritten later
    assert _reads(spark, data["users"])
    _said(session, caplog, job["report"])
    spark.conf.unset(KEY)                    # the declaration goes: the user's view stays
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
    dpp.disable(spark)
    assert _reads(spark, data["users"])


@pytest.mark.parametrize("sql_path", SQL_PATHS)
def test_dropping_the_users_view_gives_the_declared_table_back(spark, data, job, sql_path):
    spark.conf.set("spark.dpp.sqlPath", sql_path)
    _users_view(spark, data)
    session = dpp.enable(spark)
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
    spark.catalog.dropTempView(FACT)
    session.last_report = None
    assert _rows(spark.sql(QUERY)) == job["refs"]["declared"]
    (t,) = [t for t in session.last_report.tables if t.table == FACT]
    assert t.pruning == "applied" and t.partitions_kept == 3, t
    _users_view(spark, data)                 # redefined by the user: theirs again
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]


@pytest.mark.parametrize("sql_path", SQL_PATHS)
@pytest.mark.parametrize("view, declared", [("AN_Events", "an_events"),
                                            ("an_events", "An_Events")])
def test_names_differing_in_case_are_the_same_name(spark, data, job, view, declared,
                                                   sql_path):
    spark.conf.unset(KEY)
    spark.conf.set("spark.dpp.sqlPath", sql_path)
    _users_view(spark, data, view)
    with spark_conf(spark, {f"spark.dpp.tables.{declared}": str(data["declared"])}):
        dpp.enable(spark)
        assert _rows(spark.sql(QUERY.replace(FACT, "an_EVENTS"))) == job["refs"]["users"]
        assert _reads(spark, data["users"])


# ------------------------------------------------------------------------------ the user's table

@pytest.mark.parametrize("sql_path", SQL_PATHS)
def test_a_users_catalog_table_wins_before_and_after_dpps_view(spark, data, job, sql_path):
    spark.conf.set("spark.dpp.sqlPath", sql_path)
    table = f"{spark.catalog.currentDatabase()}.{FACT}"   # never a temporary view
    create = (f"CREATE TABLE {table} (amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{data['users']}'")
    spark.sql(create)
    spark.sql(f"ALTER TABLE {table} RECOVER PARTITIONS")
    dpp.enable(spark)
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
    assert not spark.catalog.getTable(FACT).isTemporary
    # the table made after dpp's view: dpp's view must not hide it
    spark.sql(f"DROP TABLE {table}")
    assert _rows(spark.sql(QUERY)) == job["refs"]["declared"]   # the name is free: dpp's
    spark.sql(create)
    spark.sql(f"ALTER TABLE {table} RECOVER PARTITIONS")
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
    assert not spark.catalog.getTable(FACT).isTemporary


# ------------------------------------------------------------------------------ switched off

def test_switched_off_dpp_makes_no_view_and_registers_nothing(spark, data, job):
    from pyspark.errors import AnalysisException

    spark.conf.set("spark.dpp.enabled", "false")
    session = dpp.enable(spark)
    assert not spark.catalog.tableExists(FACT)
    with pytest.raises(AnalysisException):       # only declared: unknown to Spark itself
        spark.sql(QUERY)
    assert not spark.catalog.tableExists(FACT) and session.explain(QUERY)  # still nothing
    _users_view(spark, data)
    assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
    assert session.last_report is None
    spark.catalog.dropTempView(FACT)
    spark.conf.set("spark.dpp.enabled", "true")   # on: declared tables are read now
    assert _rows(spark.sql(QUERY)) == job["refs"]["declared"]


@pytest.mark.parametrize("bad_key, bad_value", [
    ("spark.dpp.tables.an_missing", "{root}/no/such/folder"),
    ("spark.dpp.tables.an_notatable", "{root}/dim/part-0.parquet"),
    ("spark.dpp.tables.an-bad", "{root}/declared"),
])
def test_a_bad_declared_table_breaks_nothing_while_off(spark, data, job, bad_key, bad_value):
    value = bad_value.format(root=data["root"])
    _users_view(spark, data)
    with spark_conf(spark, {bad_key: value, "spark.dpp.enabled": "false"}):
        dpp.enable(spark)                        # off: the declaration is not even read
        assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
        shown = {r.tableName for r in spark.sql("SHOW TABLES").collect()}
        assert {FACT, DIM} <= shown
        spark.conf.set("spark.dpp.enabled", "true")   # on: the error names key and path
        with pytest.raises(ConfigError) as err:
            spark.sql(QUERY)
        assert bad_key in str(err.value) and value in str(err.value)
        spark.conf.set("spark.dpp.enabled", "false")
        assert _rows(spark.sql(QUERY)) == job["refs"]["users"]
