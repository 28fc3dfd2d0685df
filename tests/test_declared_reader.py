"""A declared table reads what ``spark.read.parquet(folder)`` reads at the moment a query names
it: ``spark.sql``, ``spark.table`` and ``spark.read.table`` alike — schema and column order,
partition types (and their inference setting), files added since, and a DataFrame made once
reads the listing it was made with, as the reader's does.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

NAME = "dr_fact"


def _file(folder: Path, name: str, table: pa.Table) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / name)


@pytest.fixture()
def folder(spark: Any, tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "fact"
    for p in ("1", "2"):
        _file(root / f"p={p}", "part-0.parquet", pa.table({"v": pa.array([int(p)], pa.int64())}))
    with spark_conf(spark, {f"spark.dpp.tables.{NAME}": str(root)}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield root
        finally:
            dpp.disable(spark)
            spark.catalog.dropTempView(NAME)


def _same(got: Any, want: Any) -> None:
    assert got.schema == want.schema, (got.schema, want.schema)
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, want.collect()))


def test_each_way_of_naming_it_reads_the_folder_as_the_reader_does_now(
        spark: Any, folder: Path) -> None:
    first = spark.table(NAME)
    first_ref = spark.read.parquet(str(folder))
    _same(first, first_ref)
    # a partition of another type and a file with one more column, added between two queries
    _file(folder / "p=abc", "part-0.parquet",
          pa.table({"v": pa.array([7], pa.int64()), "w": pa.array(["x"])}))
    ref = spark.read.parquet(str(folder))
    assert dict((f.name, f.dataType.simpleString()) for f in ref.schema)["p"] == "string"
    _same(spark.read.table(NAME), ref)
    _same(spark.table(NAME), ref)
    _same(spark.sql(f"SELECT * FROM {NAME}"), ref)
    # the DataFrame made before reads the listing it was made with, as the reader's does
    _same(first, first_ref)
    assert len(first.collect()) == 2


def test_partition_type_inference_off_is_the_readers(spark: Any, folder: Path) -> None:
    with spark_conf(spark, {"spark.sql.sources.partitionColumnTypeInference.enabled": "false"}):
        got = spark.sql(f"SELECT * FROM {NAME}")
        ref = spark.read.parquet(str(folder))
        assert dict((f.name, f.dataType.simpleString()) for f in ref.schema)["p"] == "string"
        _same(got, ref)


def test_a_folder_left_without_files_fails_as_the_reader_fails(spark: Any, folder: Path) -> None:
    """Every partition removed: Spark's reader cannot infer a schema, and neither can a query
    over the declared table (found by the fuzzer, seed 777: dpp answered 0 rows from the
    schema it was declared with)."""
    import shutil

    assert len(spark.table(NAME).collect()) == 2
    for p in ("1", "2"):
        shutil.rmtree(folder / f"p={p}")
    with pytest.raises(Exception) as want:
        spark.read.parquet(str(folder))
    with pytest.raises(Exception) as got:
        spark.sql(f"SELECT * FROM {NAME}").collect()
    assert "UNABLE_TO_INFER_SCHEMA" in str(want.value)
    assert "UNABLE_TO_INFER_SCHEMA" in str(got.value), got.value
