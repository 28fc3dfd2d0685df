"""Shared pieces of the reliability suite (no tests here): a tiny star schema, the reference
(Spark over the same folders, every dynamic pruning off), and report helpers.

The star: ``date_dim`` (30 days, int key, one file, not partitioned) and ``sales`` (240 rows,
Hive-partitioned by ``ss_sold_date_sk`` int, one folder per day plus the NULL partition).
"""
from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

N_DAYS = 30
DATE_SCHEMA = pa.schema([("d_date_sk", pa.int32()), ("d_year", pa.int32()),
                         ("d_moy", pa.int32())])
SALES_SCHEMA = pa.schema([("ss_item", pa.int64()), ("ss_qty", pa.int32()),
                          ("ss_sold_date_sk", pa.int32())])
PARTITION_TYPES = {"sales": {"ss_sold_date_sk": "int"}}

#: (id, query): each prunes ``sales`` by a different dynamic filter (d_moy differs)
JOIN_Q = ("SELECT d_moy, count(*), sum(ss_qty) FROM sales JOIN date_dim "
          "ON ss_sold_date_sk = d_date_sk WHERE d_moy = {moy} GROUP BY d_moy")

_SPARK_DPP_KEYS = ("spark.sql.optimizer.dynamicPartitionPruning.enabled",
                   "spark.sql.optimizer.runtime.bloomFilter.enabled",
                   "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled")


def date_rows(moy_of: Any = None) -> list[dict[str, Any]]:
    moy_of = moy_of or (lambda i: 1 + i // 5 % 6)
    return [{"d_date_sk": 100 + i, "d_year": 2000 + i // 15, "d_moy": moy_of(i)}
            for i in range(N_DAYS)]


def write_date_dim(path: Path, rows: Optional[list[dict[str, Any]]] = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows if rows is not None else date_rows(),
                                        schema=DATE_SCHEMA), path / "part-0.parquet")
    return path


def write_star(root: Path) -> dict[str, Path]:
    """Writes the star under ``root``; returns {table name: folder}."""
    dates = write_date_dim(root / "date_dim")
    sales = [{"ss_item": i, "ss_qty": i % 7,
              "ss_sold_date_sk": None if i % 41 == 0 else 100 + (i * 7) % N_DAYS}
             for i in range(240)]
    pq.write_to_dataset(pa.Table.from_pylist(sales, schema=SALES_SCHEMA), str(root / "sales"),
                        partition_cols=["ss_sold_date_sk"])
    return {"date_dim": dates, "sales": root / "sales"}


def register_star(dpp: Any, paths: dict[str, Path]) -> None:
    for name, path in paths.items():
        dpp.register_table(name, str(path), partition_types=PARTITION_TYPES.get(name))


def reference(spark: Any, query: str, paths: dict[str, Path]) -> Counter:
    """The rows of ``query`` from Spark alone, reading the folders afresh, no pruning."""
    views = {}
    for name, path in paths.items():
        views[name] = f"ref_{name}_{abs(hash(str(path))) % 10**8}"
        df = spark.read.parquet(str(path))
        for col, typ in PARTITION_TYPES.get(name, {}).items():
            df = df.withColumn(col, df[col].cast(typ))
        df.createOrReplaceTempView(views[name])
    q = query
    for name, view in views.items():
        q = re.sub(rf"(?<![\w.]){name}(?!\w)", view, q)
    old = {k: spark.conf.get(k, None) for k in _SPARK_DPP_KEYS}
    try:
        for k in _SPARK_DPP_KEYS:
            spark.conf.set(k, "false")
        return Counter(tuple(r) for r in spark.sql(q).collect())
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
        for view in views.values():
            spark.catalog.dropTempView(view)


def rows(got: Iterable[Any]) -> Counter:
    return Counter(tuple(r) for r in got)


def table_report(report: Any, table: str = "sales") -> dict[str, Any]:
    tabs = [t for t in report.to_dict()["tables"] if t["table"] == table]
    assert tabs, f"no table {table} in report {report.to_dict()['tables']}"
    return tabs[0]


def only_filter(report: Any) -> dict[str, Any]:
    filters = report.to_dict()["filters"]
    assert len(filters) == 1, filters
    return filters[0]


def wait_until(pred: Any, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return bool(pred())
