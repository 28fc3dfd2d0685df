"""Bad input on a classic session: folders Spark's partition discovery passes over, and
invalid ``spark.dpp.*`` values.

A declared folder may hold folders that are not partitions (``aaa_tmp/`` left by a tool).
Spark only looks at folders holding files: an empty one contributes nothing and the table reads
fine, so dpp must read it too, with the same rows, and still prune; one holding a file makes
Spark refuse the table, and dpp refuses it as well (never a wrong answer).

An invalid setting is a ``ConfigError`` naming the key and the value: at ``dpp.enable`` and at
the next ``spark.sql`` query after ``spark.conf.set``, on either path a query may take (the
optimizer hook or the SQL text), never a silently unpruned run. Every reference is Spark alone
(dpp not enabled, Spark's own pruning off) on the same data.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

import dpp
from dpp.core.errors import ConfigError
from tests.adversarial_support import OFF as PRUNING_OFF, rows as _rows, spark_rows_over
from tests.conftest import make_partitioned_table, spark_conf, write_parquet

FACT, DIM = "ab_sales", "ab_days"
KEY = f"spark.dpp.tables.{FACT}"
DAYS = list(range(1, 9))
QUERY = (f"SELECT s.day, sum(s.amount) AS amount, count(*) AS n FROM {FACT} s "
         f"JOIN {DIM} d ON s.day = d.day_sk WHERE d.tag = 'x' GROUP BY s.day")
KEPT = 3   # days tagged x


@pytest.fixture(scope="module")
def dim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_parquet(tmp_path_factory.mktemp("adv_bad_dim") / "part-0.parquet",
                         {"day_sk": DAYS, "tag": ["x" if d in (2, 3, 7) else "y" for d in DAYS]}
                         ).parent


def _spark_rows(spark: Any, folder: Path, query: str = QUERY) -> list[tuple]:
    """Spark alone over ``folder`` as FACT: dpp not enabled, pruning off."""
    return spark_rows_over(spark, folder, FACT, query)


@pytest.fixture
def session_state(spark: Any, dim: Path, tmp_path: Path) -> Iterator[None]:
    """The dimension a view of the job's own; afterwards dpp disabled, conf restored."""
    spark.read.parquet(str(dim)).createOrReplaceTempView(DIM)
    try:
        with spark_conf(spark, {"spark.dpp.enabled": None, "spark.dpp.sqlPath": None,
                                KEY: None, "spark.dpp.waitTimeout": "20s",
                                "spark.dpp.report.path": str(tmp_path / "r.jsonl")}):
            try:
                yield
            finally:
                dpp.disable(spark)
    finally:
        spark.catalog.dropTempView(DIM)
        spark.catalog.dropTempView(FACT)


def _fact(root: Path, levels: int = 1) -> Path:
    if levels == 1:
        return make_partitioned_table(root, {
            (("day", str(d)),): {"amount": [d * 10 + k for k in range(3)]} for d in DAYS})
    return make_partitioned_table(root, {
        (("day", str(d)), ("h", str(h))): {"amount": [d * 10 + h]} for d in DAYS for h in (1, 2)})


# ------------------------------------------------------------------------------ stray folders

EMPTY_STRAYS = {
    "beside, sorts first": (1, ["aaa_tmp"]),
    "beside, sorts last": (1, ["zzz_tmp"]),
    "nested empty folders": (1, ["aaa_tmp/sub/deeper", "tmp2/x"]),
    "another column's, empty": (1, ["aaa=5"]),
    "only a hidden file inside": (1, ["aaa_tmp/_SUCCESS"]),
    "inside a partition of two levels": (2, ["day=1/aaa_tmp", "day=3/zz"]),
}


@pytest.mark.parametrize("sql_path", ["hook", "text"])
@pytest.mark.parametrize("case", sorted(EMPTY_STRAYS))
def test_an_empty_non_partition_folder_is_passed_over_as_spark_does(spark, session_state,
                                                                    tmp_path, case, sql_path):
    levels, strays = EMPTY_STRAYS[case]
    root = _fact(tmp_path / "sales", levels)
    for s in strays:
        if s.endswith("_SUCCESS"):
            (root / s).parent.mkdir(parents=True, exist_ok=True)
            (root / s).write_bytes(b"")
        else:
            (root / s).mkdir(parents=True, exist_ok=True)
    expected = _spark_rows(spark, root)
    assert expected
    with spark_conf(spark, {KEY: str(root), "spark.dpp.sqlPath": sql_path}):
        session = dpp.enable(spark)
        session.last_report = None
        assert _rows(spark.sql(QUERY)) == expected
        (t,) = [t for t in session.last_report.tables if t.table == FACT]
        assert t.pruning == "applied", t
        assert t.partitions_kept == KEPT * (2 if levels == 2 else 1), t


STRAYS_WITH_FILES = {
    "beside, sorts first": "aaa_tmp/part-0.parquet",
    "beside, sorts last": "zzz_tmp/part-0.parquet",
    "deep below": "aaa_tmp/sub/part-0.parquet",
    "a partition below it": "aaa_tmp/day=20/part-0.parquet",
}


@pytest.mark.parametrize("case", sorted(STRAYS_WITH_FILES))
def test_a_non_partition_folder_holding_a_file_is_refused_as_spark_refuses_it(
        spark, session_state, tmp_path, case):
    root = _fact(tmp_path / "sales")
    rel = STRAYS_WITH_FILES[case]
    write_parquet(root / rel, {"amount": [99]})
    stray = root / rel.split("/")[0]
    with pytest.raises(Exception, match="(?i)conflicting"):   # Spark cannot read it either
        _spark_rows(spark, root)
    with spark_conf(spark, {KEY: str(root)}):
        with pytest.raises(ConfigError) as err:
            dpp.enable(spark)
    msg = str(err.value)
    assert KEY in msg and str(stray) in msg, msg
    # the stray file removed: the same folder reads, with Spark's rows
    shutil.rmtree(stray)
    expected = _spark_rows(spark, root)
    with spark_conf(spark, {KEY: str(root)}):
        dpp.enable(spark)
        assert _rows(spark.sql(QUERY)) == expected


def test_a_stray_folder_appearing_after_registration(spark, session_state, tmp_path):
    """Listed per query: an empty folder added later is passed over; one with a file is an
    error on the SQL-text path and, through the optimizer hook, Spark's own refusal."""
    root = _fact(tmp_path / "sales")
    expected = _spark_rows(spark, root)
    with spark_conf(spark, {KEY: str(root), "spark.dpp.sqlPath": "text"}):
        session = dpp.enable(spark)
        (root / "aaa_tmp").mkdir()
        session.last_report = None
        assert _rows(spark.sql(QUERY)) == expected
        (t,) = [t for t in session.last_report.tables if t.table == FACT]
        assert t.pruning == "applied" and t.partitions_kept == KEPT, t


# ------------------------------------------------------------------------------ settings

BAD_VALUES = [
    ("spark.dpp.waitTimeout", "forever"),
    ("spark.dpp.waitTimeout", "-5s"),
    ("spark.dpp.waitTimeout", "0x"),
    ("spark.dpp.maxDistinctValues", "0"),
    ("spark.dpp.maxDistinctValues", "1_000"),
    ("spark.dpp.bloomFilter.fpp", "1.5"),
    ("spark.dpp.filterTtl", "soon"),
    ("spark.dpp.maxFilterBytes", "10"),
    ("spark.dpp.statsPruning.enabled", "sometimes"),
    ("spark.dpp.coordinator", "http://localhost:6379"),
    ("spark.dpp.sqlPath", "both"),
]


GOOD = {"spark.dpp.waitTimeout": "30s", "spark.dpp.maxDistinctValues": "10000",
        "spark.dpp.bloomFilter.fpp": "0.01", "spark.dpp.filterTtl": "600s",
        "spark.dpp.maxFilterBytes": "16m", "spark.dpp.statsPruning.enabled": "auto",
        "spark.dpp.coordinator": "embedded"}   # spark.dpp.sqlPath: the path under test


def _names(err: pytest.ExceptionInfo, key: str, value: str) -> None:
    msg = str(err.value)
    assert key in msg and repr(value) in msg, msg


@pytest.mark.parametrize("key, value", BAD_VALUES)
def test_an_invalid_setting_is_an_error_at_enable(spark, session_state, tmp_path, key, value):
    root = _fact(tmp_path / "sales")
    with spark_conf(spark, {KEY: str(root), key: value}):
        with pytest.raises(ConfigError) as err:
            dpp.enable(spark)
        _names(err, key, value)
        assert "sql" not in vars(spark) and dpp.session_of(spark) is None


@pytest.mark.parametrize("sql_path", ["hook", "text"])
@pytest.mark.parametrize("key, value", BAD_VALUES)
def test_an_invalid_setting_set_later_fails_the_next_query(spark, session_state, tmp_path,
                                                           key, value, sql_path):
    root = _fact(tmp_path / "sales")
    expected = _spark_rows(spark, root)
    with spark_conf(spark, {KEY: str(root), "spark.dpp.sqlPath": sql_path, key: None}):
        spark.conf.set("spark.dpp.sqlPath", sql_path)   # (the key under test may be it)
        session = dpp.enable(spark)
        assert _rows(spark.sql(QUERY)) == expected
        spark.conf.set(key, value)
        with pytest.raises(ConfigError) as err:
            spark.sql(QUERY)
        _names(err, key, value)
        with pytest.raises(ConfigError):
            spark.sql(f"EXPLAIN {QUERY}")
        with pytest.raises(ConfigError):
            session.sql(QUERY)
        # switched off, the bad value breaks nothing: Spark's own sql
        spark.conf.set("spark.dpp.enabled", "false")
        assert spark.sql(f"SELECT count(*) FROM {DIM}").collect()[0][0] == len(DAYS)
        spark.conf.set("spark.dpp.enabled", "true")
        # fixed with SQL's SET (never refused for a bad dpp value): the job goes on, pruned
        spark.sql(f"SET {key}={GOOD.get(key, sql_path)}")
        session.last_report = None
        assert _rows(spark.sql(QUERY)) == expected
        (t,) = [t for t in session.last_report.tables if t.table == FACT]
        assert t.pruning == "applied" and t.partitions_kept == KEPT, t


def test_a_dataframe_job_under_an_invalid_setting_keeps_sparks_rows(spark, session_state,
                                                                    tmp_path, caplog):
    """No ``spark.sql`` call to fail: the optimizer hook cannot fail Spark's plan, so the job
    runs unpruned with Spark's own plan and the error is logged, naming key and value."""
    root = _fact(tmp_path / "sales")
    expected = _spark_rows(spark, root)
    with spark_conf(spark, {KEY: str(root)}):
        session = dpp.enable(spark)
        if session.optimizer_hook is None:
            pytest.skip(f"no optimizer hook here: {session.hook_note}")
        spark.conf.set("spark.dpp.waitTimeout", "forever")
        with caplog.at_level(logging.WARNING, logger="dpp"):
            f, d = spark.table(FACT), spark.table(DIM).where("tag = 'x'")
            df = (f.join(d, f["day"] == d["day_sk"]).groupBy("day")
                  .agg({"amount": "sum", "*": "count"}))
            got = _rows(df.select("day", "sum(amount)", "count(1)"))
        assert got == expected
        assert "spark.dpp.waitTimeout='forever'" in caplog.text
