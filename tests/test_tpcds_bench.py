"""tpcds.bench: modes off and spark answer like DuckDB; metrics and the report files exist."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from tpcds import bench as B
from tpcds.generate import generate

QUERIES = "q3,q7,q42,q52,q55"
# Spark lists >32 paths with a Spark job per table by default; in the shared local session the
# driver-side listing is far quicker and lists the same files.
THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tpcds-bench") / "sf001"
    generate(0.01, out)
    return out


@pytest.fixture(scope="module")
def fast_listing(spark) -> Iterator[None]:
    old = spark.conf.get(THRESHOLD, None)
    spark.conf.set(THRESHOLD, "100000")
    yield
    if old is None:
        spark.conf.unset(THRESHOLD)
    else:
        spark.conf.set(THRESHOLD, old)


@pytest.fixture(scope="module")
def result(spark, data: Path, fast_listing, tmp_path_factory) -> dict[str, Any]:
    cfg = B.BenchConfig(data_dir=str(data), modes=["off", "spark"], queries=QUERIES, repeat=1,
                        table_kinds=["path"], warmup=False)
    return B.run_bench(spark, cfg)


def test_every_query_in_off_and_spark_matches_duckdb(result) -> None:
    runs = result["runs"]
    assert {(r["query"], r["mode"]) for r in runs} == {
        (q, m) for q in QUERIES.split(",") for m in ("off", "spark")}
    assert B.failures(result) == []
    assert all(r["correct"] is True for r in runs)


def test_each_run_reports_both_phases_and_the_same_metrics(result) -> None:
    for r in result["runs"]:
        assert r["listing_s"] >= 0 and r["execution_s"] >= 0
        assert r["total_s"] == pytest.approx(r["listing_s"] + r["execution_s"])
        for key in ("executor_cpu_ms", "fact_bytes_read", "fact_files_read",
                    "fact_partitions_read", "fact_files_listed", "input_bytes", "scans"):
            assert key in r["metrics"], key


def test_spark_dpp_reads_fewer_fact_files_than_off(result) -> None:
    by = {(r["query"], r["mode"]): r["metrics"] for r in result["runs"]}
    off, spark = by[("q42", "off")], by[("q42", "spark")]
    assert off["fact_files_read"] > 0
    assert spark["fact_files_read"] < off["fact_files_read"]
    assert spark["fact_bytes_read"] < off["fact_bytes_read"]
    # path tables: Spark listed the whole table in both modes
    assert spark["fact_files_listed"] == off["fact_files_listed"] >= off["fact_files_read"]
    assert off["executor_cpu_ms"] > 0


def test_report_files_are_written(result, tmp_path: Path) -> None:
    paths = B.write_outputs(result, tmp_path / "report")
    saved = json.loads(paths["json"].read_text())
    assert saved["summary"]["failures"] == 0
    assert "spark" in saved["summary"]["kinds"]["path"]["against_off"]
    md = paths["md"].read_text()
    assert "| q42 |" in md and "spark vs off" in md
    assert paths["chart"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unavailable_dpp_mode_is_reported_not_fatal(spark, data, fast_listing,
                                                    monkeypatch) -> None:
    monkeypatch.setattr(B, "dpp_available", lambda: (False, "ImportError: not yet"))
    cfg = B.BenchConfig(data_dir=str(data), modes=["spark", "dpp"], queries="q52",
                        warmup=False)
    res = B.run_bench(spark, cfg)
    assert res["modes"] == ["spark"]
    assert res["unavailable_modes"] == {"dpp": "ImportError: not yet"}
    assert B.failures(res) == []


def test_rows_differing_from_duckdb_fail_the_run(spark, data, fast_listing, monkeypatch) -> None:
    from tpcds.reference import DuckDBReference

    monkeypatch.setattr(DuckDBReference, "rows",
                        lambda self, q, unlimited=False: [("not", "this")])
    cfg = B.BenchConfig(data_dir=str(data), modes=["off"], queries="q55", warmup=False)
    res = B.run_bench(spark, cfg)
    bad = B.failures(res)
    assert len(bad) == 1 and bad[0]["correct"] is False and bad[0]["mismatch"]
    assert "FAILURES" in __import__("tpcds.report", fromlist=["x"]).render_markdown(res)


def test_catalog_tables_are_benchmarked_apart(spark, data, fast_listing) -> None:
    cfg = B.BenchConfig(data_dir=str(data), modes=["off", "spark"], queries="q52",
                        table_kinds=["catalog"], warmup=False)
    res = B.run_bench(spark, cfg)
    assert B.failures(res) == []
    assert {r["kind"] for r in res["runs"]} == {"catalog"}
    by = {r["mode"]: r["metrics"] for r in res["runs"]}
    assert by["spark"]["fact_files_read"] < by["off"]["fact_files_read"]
    assert spark.catalog.currentDatabase() == "default"


def test_bad_mode_and_kind_are_rejected() -> None:
    with pytest.raises(B.BenchError, match="fast"):
        B.parse_modes("off,fast")
    with pytest.raises(B.BenchError, match="lake"):
        B.parse_kinds("lake")
    assert B.parse_kinds("both") == ["path", "catalog"]
