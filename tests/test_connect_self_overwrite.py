"""Spark Connect: a write over the table it reads stays refused by Spark with dpp enabled.

Spark refuses to overwrite a table (or path) the same plan reads: the overwrite deletes the
files before the plan has read them. dpp on a Connect client rewrites what the client sends
(``spark.sql`` text into views of the kept partitions; DataFrame plans, when
``spark.dpp.connect.dataFrames`` is on) — if a rewritten plan reached a write, Spark would no
longer see the table among the reads, the check would pass, and the overwrite would empty the
table. Each test makes the same write on a plain session (no dpp, no Spark DPP) and on the dpp
session, over a real catalog table of Parquet files, and asserts the same refusal and that
every row is still there.

One real Spark Connect server, shared with other modules (``tests/conftest.py``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.connect_server import client as _client

SPARK_DPP_OFF = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
ROWS = 300          # the table's rows, 10 in each of 30 day partitions
REFUSALS = ("UNSUPPORTED_OVERWRITE", "CANNOT_OVERWRITE", "being read from")


@pytest.fixture(scope="module")
def connect_server(plain_connect_server: Any) -> Any:
    """The session's plain Connect server (``tests/conftest.py``): this module's client
    sessions and tables are its own."""
    return plain_connect_server


@pytest.fixture(scope="module")
def plain(connect_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The reference session: no dpp, no Spark DPP; it also writes the calendar dimension."""
    spark = _client(connect_server.url)
    spark.conf.set(SPARK_DPP_OFF, "false")
    root = tmp_path_factory.mktemp("overwrite-data")
    spark.createDataFrame([(d, d // 7) for d in range(30)], "d_day INT, d_week INT") \
        .write.parquet(str(root / "days"))
    spark.read.parquet(str(root / "days")).createOrReplaceTempView("days")
    spark.root = root  # type: ignore[attr-defined]
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def connect(connect_server: Any, plain: Any) -> Iterator[Any]:
    """The job's session, ``dpp.enable``d."""
    import dpp

    spark = _client(connect_server.url)
    spark.read.parquet(str(plain.root / "days")).createOrReplaceTempView("days")
    dpp.enable(spark)
    yield spark
    dpp.disable(spark)
    spark.stop()


@pytest.fixture
def table(plain: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh partitioned catalog table of ``ROWS`` rows (Parquet files written by Spark)."""
    name = f"t_{request.node.name.split('[')[0][5:35]}_{abs(hash(request.node.name)) % 10_000}"
    location = plain.root / name
    plain.sql(f"DROP TABLE IF EXISTS {name}")
    plain.sql(f"CREATE TABLE {name} (v INT, day INT) USING parquet PARTITIONED BY (day) "
              f"LOCATION '{location}'")
    plain.sql(f"INSERT INTO {name} SELECT CAST(id AS INT), CAST(id % 30 AS INT) "
              f"FROM range({ROWS})")
    yield name
    plain.sql(f"DROP TABLE IF EXISTS {name}")


def _refused(write: Any) -> str:
    """Runs ``write()``; the text of the error it must raise (Spark's refusal)."""
    with pytest.raises(Exception) as info:
        write()
    text = str(info.value)
    assert any(r in text for r in REFUSALS), text
    return text


def _same_refusal(plain: Any, connect: Any, table: str, make: Any) -> None:
    """``make(spark)`` is refused on the plain session and on the dpp session alike, and
    the table keeps every row."""
    _refused(lambda: make(plain))
    assert plain.table(table).count() == ROWS
    _refused(lambda: make(connect))
    assert plain.table(table).count() == ROWS
    assert connect.table(table).count() == ROWS


@pytest.mark.parametrize("frames", ["default", "on"])
def test_dataframe_insert_into_the_table_it_reads(plain, connect, table, frames):
    """``spark.table(t).join(dim).write.mode("overwrite").insertInto(t)``: with the DataFrame
    rewrite on, the fact read under the join would have become a view of kept folders."""
    def make(spark: Any) -> None:
        f = spark.table(table)
        d = spark.table("days").where("d_week = 1")
        f.join(d, f["day"] == d["d_day"]).select("v", "day") \
            .write.mode("overwrite").insertInto(table)

    if frames == "on":
        connect.conf.set("spark.dpp.connect.dataFrames", "true")
    try:
        _same_refusal(plain, connect, table, make)
    finally:
        connect.conf.unset("spark.dpp.connect.dataFrames")


def test_dataframe_save_as_table_over_the_table_it_reads(plain, connect, table):
    def make(spark: Any) -> None:
        f = spark.table(table)
        d = spark.table("days").where("d_week = 1")
        f.join(d, f["day"] == d["d_day"]).select("v", "day") \
            .write.mode("overwrite").saveAsTable(table)

    connect.conf.set("spark.dpp.connect.dataFrames", "true")
    try:
        _same_refusal(plain, connect, table, make)
    finally:
        connect.conf.unset("spark.dpp.connect.dataFrames")


def test_sql_insert_overwrite_of_the_table_it_reads(plain, connect, table):
    """The SQL form through dpp's ``spark.sql``."""
    def make(spark: Any) -> None:
        spark.sql(f"INSERT OVERWRITE {table} SELECT v, day FROM {table} "
                  f"JOIN days ON day = d_day WHERE d_week = 1")

    _same_refusal(plain, connect, table, make)


def test_pruned_sql_dataframe_written_over_the_table_it_reads(plain, connect, table):
    """A ``spark.sql`` query dpp rewrote (it reads views of the kept partitions) and then
    wrote back to its own table: Spark still sees the table read."""
    import dpp

    query = f"SELECT v, day FROM {table} JOIN days ON day = d_day WHERE d_week = 1"
    df = connect.sql(query)
    report = dpp.session_of(connect).last_report.to_dict()
    assert [t for t in report["tables"] if t["table"] == table
            and t["pruning"] == "applied"], report["tables"]   # the rewrite did happen
    _refused(lambda: plain.sql(query).write.mode("overwrite").insertInto(table))
    _refused(lambda: df.write.mode("overwrite").insertInto(table))
    assert plain.table(table).count() == ROWS
    # and through a temporary view of it, then SQL
    df.createOrReplaceTempView("week_one")
    _refused(lambda: connect.sql(f"INSERT OVERWRITE {table} SELECT * FROM week_one"))
    assert plain.table(table).count() == ROWS
    # the DataFrame itself still gives Spark's rows
    assert sorted(df.collect()) == sorted(plain.sql(query).collect())


def test_pruned_dataframe_written_to_another_table_keeps_its_rows(plain, connect, table):
    """Not every write is refused: a DataFrame star join written to another table is sent
    as built and writes Spark's rows."""
    other = f"{table}_copy"
    connect.conf.set("spark.dpp.connect.dataFrames", "true")
    try:
        f = connect.table(table)
        d = connect.table("days").where("d_week = 1")
        f.join(d, f["day"] == d["d_day"]).select("v", "day") \
            .write.mode("overwrite").saveAsTable(other)
    finally:
        connect.conf.unset("spark.dpp.connect.dataFrames")
    try:
        pf = plain.table(table)
        pd = plain.table("days").where("d_week = 1")
        expected = sorted(pf.join(pd, pf["day"] == pd["d_day"]).select("v", "day").collect())
        assert sorted(plain.table(other).collect()) == expected
        assert len(expected) == 70
    finally:
        plain.sql(f"DROP TABLE IF EXISTS {other}")
