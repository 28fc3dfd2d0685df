"""Join keys Spark's own dynamic partition pruning handles, through dpp's optimizer hook.

Spark's DPP suite prunes a fact whose join key is an expression of partition columns
(``f.sid + 1 = s.store_id + 1``, ``f.a + f.b = d.y + d.z``) and a fact compared with a key of
another type (a string dimension key against integer partition folders). dpp evaluates such a
key with Spark's own expression code on each partition's values (``dpp.spark.KeyEvaluator``),
so the answer to "could this partition match" follows Spark's arithmetic and casts exactly.
Every case runs on a declared path table and on a catalog table over the same folders, as SQL
and as DataFrame code, against Spark with every pruning off: same rows, the fact pruned to
the partitions that can match.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from tests.conftest import spark_conf

OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false"}
STORES = 20
NL = [2, 5, 11]        # stores whose country is NL: their ids, ...
NL_TEXT = ["2", "05", " 11"]   # ... and the same ids as a string key, as people type them


def write_coverage_data(root: Path) -> dict[str, Path]:
    """The cases' folders under ``root``: facts ``sales`` (by ``sid``) and ``ab`` (by ``a``,
    ``b``), dimensions ``stores`` and ``dims``."""
    sales = root / "sales"
    for sid in range(STORES):
        folder = sales / f"sid={sid}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([sid, sid * 10], pa.int32())}),
                       folder / "part-0.parquet")
    ab = root / "ab"
    for a in range(5):
        for b in range(5):
            folder = ab / f"a={a}" / f"b={b}"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"x": pa.array([a * 10 + b], pa.int32())}),
                           folder / "part-0.parquet")
    stores = root / "stores"
    stores.mkdir()
    ids = list(range(STORES))
    country = ["NL" if i in NL else "DE" for i in ids]
    text = [NL_TEXT[NL.index(i)] if i in NL else str(i) for i in ids]
    pq.write_table(pa.table({"store_id": pa.array(ids, pa.int32()),
                             "store_str": pa.array(text, pa.string()),
                             "country": pa.array(country, pa.string())}),
                   stores / "part-0.parquet")
    dims = root / "dims"
    dims.mkdir()
    pq.write_table(pa.table({"y": pa.array([1, 3, 0], pa.int32()),
                             "z": pa.array([1, 4, 0], pa.int32()),
                             "flag": pa.array([True, False, False])}),
                   dims / "part-0.parquet")
    return {"sales": sales, "ab": ab, "stores": stores, "dims": dims}


# catalog table: (its fact folder, columns, partition columns)
CATALOG_TABLES = {"cov_sales_cat": ("sales", "amount INT, sid INT", "sid"),
                  "cov_ab_cat": ("ab", "x INT, a INT, b INT", "a, b")}


def create_catalog_tables(spark: Any, folders: dict[str, Path]) -> None:
    for name, (fact, cols, parts) in CATALOG_TABLES.items():
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} ({cols}) USING parquet PARTITIONED BY ({parts}) "
                  f"LOCATION '{folders[fact]}'")
        spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folders = write_coverage_data(tmp_path_factory.mktemp("coverage"))
    sales, ab, stores, dims = (folders[k] for k in ("sales", "ab", "stores", "dims"))
    create_catalog_tables(spark, folders)
    spark.read.parquet(str(stores)).createOrReplaceTempView("cov_stores")
    spark.read.parquet(str(dims)).createOrReplaceTempView("cov_dims")
    with spark_conf(spark, {"spark.dpp.tables.cov_sales": str(sales),
                            "spark.dpp.tables.cov_ab": str(ab)}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session}
        finally:
            dpp.disable(spark)
            for t in ("cov_sales_cat", "cov_ab_cat"):
                spark.sql(f"DROP TABLE IF EXISTS {t}")


def _plus_one(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT f.amount, f.sid FROM {fact} f JOIN cov_stores s "
                         f"ON f.sid + 1 = s.store_id + 1 WHERE s.country = 'NL'")
    f, s = spark.table(fact), spark.table("cov_stores").where("country = 'NL'")
    return f.join(s, f["sid"] + 1 == s["store_id"] + 1).select("amount", "sid")


def _two_columns(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT f.x, f.a, f.b FROM {fact} f JOIN cov_dims d "
                         f"ON f.a + f.b = d.y + d.z WHERE d.flag")
    f, d = spark.table(fact), spark.table("cov_dims").where("flag")
    return f.join(d, f["a"] + f["b"] == d["y"] + d["z"]).select("x", "a", "b")


def _string_key(spark: Any, fact: str, form: str) -> Any:
    if form == "sql":
        return spark.sql(f"SELECT f.amount, f.sid FROM {fact} f JOIN cov_stores s "
                         f"ON f.sid = s.store_str WHERE s.country = 'NL'")
    f, s = spark.table(fact), spark.table("cov_stores").where("country = 'NL'")
    return f.join(s, f["sid"] == s["store_str"]).select("amount", "sid")


CASES: dict[str, tuple[Callable[[Any, str, str], Any], str, int]] = {
    # case: (job, fact table, partitions that can match)
    "sid_plus_one": (_plus_one, "cov_sales", len(NL)),
    "sum_of_two_partition_columns": (_two_columns, "cov_ab", 3),   # a + b = 2
    "string_key_against_int_folders": (_string_key, "cov_sales", len(NL)),
}


@pytest.mark.parametrize("ansi", ["true", "false"])
@pytest.mark.parametrize("form", ["sql", "dataframe"])
@pytest.mark.parametrize("kind", ["path", "catalog"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_expression_and_coerced_keys_prune_with_sparks_rows(
        spark: Any, data: dict[str, Any], case: str, kind: str, form: str, ansi: str) -> None:
    job, fact, can_match = CASES[case]
    fact = fact if kind == "path" else f"{fact}_cat"
    session = data["session"]
    with spark_conf(spark, {"spark.sql.ansi.enabled": ansi}):
        with spark_conf(spark, OFF):
            expected = sorted(map(tuple, job(spark, fact, form).collect()))
        session.last_report = None
        got = sorted(map(tuple, job(spark, fact, form).collect()))
    assert got == expected and expected
    report = session.last_report
    assert report is not None, f"{case}: no report"
    applied = [t for t in report.tables if t.pruning == "applied"]
    assert applied, f"{case} on {fact}: not pruned: {report.tables} {report.analysis_notes}"
    for t in applied:
        # what can match, never less (the rows above say nothing was lost)
        assert can_match <= t.partitions_kept < t.partitions_total, t
        assert t.partitions_kept <= can_match, t


def test_struct_keys_are_left_to_spark_with_sparks_rows(spark: Any, data: dict[str, Any]
                                                        ) -> None:
    """A struct key: dpp's domains hold atomic values, so no pruning (and the right rows)."""
    query = ("SELECT f.x FROM cov_ab f JOIN cov_dims d "
             "ON struct(f.a, f.b) = struct(d.y, d.z) WHERE d.flag")
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.sql(query).collect()))
    session = data["session"]
    session.last_report = None
    assert sorted(map(tuple, spark.sql(query).collect())) == expected == [(11,)]
    report = session.last_report
    assert report is None or not [t for t in report.tables if t.pruning == "applied"]
