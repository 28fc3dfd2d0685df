"""Data and helpers shared by the adversarial suites (``test_adversarial_*.py``).

A small star schema written as real Parquet: a fact ``sales`` partitioned by ``day`` (20
days, several files of the same size per day, so Spark's order among equal-size files
matters) and a calendar ``cal`` (day, week). Every check compares dpp's rows with Spark's
rows with every pruning off, on the same data and the same DataFrame objects.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pyarrow as pa
import pyarrow.parquet as pq

import dpp
from tests.conftest import spark_conf

DAYS = list(range(1, 21))
FILES_PER_DAY = 3
ROWS_PER_FILE = 20
OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
       "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false"}


def int_partitions(table: Path, column: str, values: list[Optional[int]]) -> None:
    """A fact of one small file per integer partition ``column=v`` (``None``: Hive's
    default partition), two amounts each: ``100·v + 1`` and ``+ 2`` (``v`` = 99 for NULL)."""
    for v in values:
        folder = table / f"{column}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}"
        folder.mkdir(parents=True)
        base = 100 * (v if v is not None else 99)
        pq.write_table(pa.table({"amount": pa.array([base + 1, base + 2], pa.int64())}),
                       folder / "part-0.parquet")


def fact_file(day: int, k: int, rows: int = ROWS_PER_FILE) -> pa.Table:
    """One data file of ``day``: ids unique across the table, every file the same size."""
    base = day * 10_000 + k * 1_000
    return pa.table({"id": pa.array([base + i for i in range(rows)], pa.int64()),
                     "amount": pa.array([(day * 7 + k * 3 + i) % 50 for i in range(rows)],
                                        pa.int64())})


def write_fact(folder: Path, days: list[int] = DAYS, files: int = FILES_PER_DAY,
               name: Callable[[int], str] = lambda d: f"day={d}") -> Path:
    for d in days:
        part = folder / name(d)
        part.mkdir(parents=True, exist_ok=True)
        for k in range(files):
            pq.write_table(fact_file(d, k), part / f"part-{k}.parquet")
    return folder


def write_calendar(folder: Path, days: list[int] = DAYS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"day": pa.array(days, pa.int32()),
                             "wk": pa.array([(d - 1) // 7 + 1 for d in days], pa.int32())}),
                   folder / "part-0.parquet")
    return folder


def rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def spark_rows(spark: Any, run: Callable[[], Any], ordered: bool = False) -> list[tuple]:
    """``run()``'s rows with every pruning off (Spark's answer)."""
    with spark_conf(spark, OFF):
        df = run()
        return [tuple(r) for r in df.collect()] if ordered else rows(df)


def spark_rows_over(spark: Any, folder: Path, view: str, query: str) -> list[tuple]:
    """Spark alone over a view of ``folder`` named ``view``: dpp not enabled, pruning off."""
    assert dpp.session_of(spark) is None
    spark.read.parquet(str(folder)).createOrReplaceTempView(view)
    try:
        with spark_conf(spark, OFF):
            return rows(spark.sql(query))
    finally:
        spark.catalog.dropTempView(view)


def dpp_rows(spark: Any, session: Any, run: Callable[[], Any], ordered: bool = False
             ) -> tuple[list[tuple], Optional[Any]]:
    """``run()``'s rows with dpp on, and the report of that query (None: dpp wrote none)."""
    session.last_report = None
    df = run()
    got = [tuple(r) for r in df.collect()] if ordered else rows(df)
    return got, session.last_report


def applied(report: Optional[Any]) -> list[Any]:
    return [] if report is None else [t for t in report.tables if t.pruning == "applied"]


def notes(report: Optional[Any]) -> str:
    return "" if report is None else " | ".join(report.analysis_notes)


@contextlib.contextmanager
def enabled(spark: Any, root: Path, extra: Optional[dict[str, str]] = None) -> Iterator[Any]:
    """dpp on for the block (the optimizer hook), reports written under ``root``."""
    settings = {"spark.dpp.report.path": str(root / "reports.jsonl"), **(extra or {})}
    with spark_conf(spark, settings):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield session
        finally:
            dpp.disable(spark)


def catalog_table(spark: Any, name: str, folder: Path) -> str:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, amount BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{folder}'")
    spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
    return name
