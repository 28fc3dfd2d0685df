"""A write over the table it reads stays refused by Spark, with dpp on (classic sessions).

Spark refuses to overwrite a table or folder that the same query reads (its analyzer sees
the relation): the files would be deleted before they are read. Nothing dpp does may hide the
relation from that check — the optimizer hook wraps the relation's file index after analysis,
so the check runs on Spark's own plan. (A DataFrame that overwrites the folder it reads with
``write.parquet(path)`` is not refused by Spark itself: it fails after deleting the folder,
with or without dpp.) Each form is tried with every pruning off and with dpp
on: the same refusal, and the table keeps every row.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from pyspark.errors import AnalysisException

from tests.adversarial_support import (OFF, catalog_table, enabled, write_calendar,
                                       write_fact)
from tests.conftest import spark_conf

ROWS = 20 * 3 * 20


@pytest.fixture()
def env(spark: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    fact = write_fact(tmp_path / "sales")
    cal = write_calendar(tmp_path / "cal")
    spark.read.parquet(str(cal)).createOrReplaceTempView("ow_cal")
    name = catalog_table(spark, "ow_sales", fact)
    try:
        yield {"root": tmp_path, "fact": str(fact), "name": name}
    finally:
        spark.sql("DROP TABLE IF EXISTS ow_sales")


def _df_insert_into(spark: Any, env: dict[str, Any]) -> None:
    (spark.table("ow_sales").join(spark.table("ow_cal").where("wk = 2"), "day")
     .select("id", "amount", "day").write.mode("overwrite").insertInto("ow_sales"))


def _sql_insert_overwrite(spark: Any, env: dict[str, Any]) -> None:
    spark.sql("INSERT OVERWRITE TABLE ow_sales SELECT s.id, s.amount, s.day FROM ow_sales s "
              "JOIN ow_cal c ON s.day = c.day WHERE c.wk = 2")


def _save_as_table(spark: Any, env: dict[str, Any]) -> None:
    (spark.table("ow_sales").join(spark.table("ow_cal").where("wk = 2"), "day")
     .select("id", "amount", "day").write.mode("overwrite").partitionBy("day")
     .saveAsTable("ow_sales"))


FORMS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "dataframe_insert_into": _df_insert_into,
    "sql_insert_overwrite": _sql_insert_overwrite,
    "save_as_table": _save_as_table,
}


def _count(spark: Any, env: dict[str, Any]) -> tuple[int, int]:
    spark.sql("REFRESH TABLE ow_sales")
    return (spark.table("ow_sales").count(),
            spark.read.parquet(env["fact"]).count())


@pytest.mark.parametrize("form", sorted(FORMS))
def test_spark_refuses_the_self_overwrite_with_dpp_on(spark: Any, env: dict[str, Any],
                                                      form: str) -> None:
    write = FORMS[form]
    with spark_conf(spark, OFF):
        with pytest.raises(AnalysisException) as off:
            write(spark, env)
    assert _count(spark, env) == (ROWS, ROWS)
    with enabled(spark, env["root"]):
        with pytest.raises(AnalysisException) as on:
            write(spark, env)
    assert _count(spark, env) == (ROWS, ROWS)
    assert type(on.value) is type(off.value)
    assert (on.value.getCondition() or "") == (off.value.getCondition() or ""), \
        (str(on.value)[:300], str(off.value)[:300])

