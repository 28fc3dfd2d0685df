"""tpcds.bench: modes off and spark answer like DuckDB; metrics and the report files exist."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from tpcds import bench as B

QUERIES = "q3,q7,q42,q52,q55"
# Spark lists >32 paths with a Spark job per table by default; in the shared local session the
# driver-side listing is far quicker and lists the same files.
THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@pytest.fixture(scope="module")
def data(tpcds_sf001: Path) -> Path:
    return tpcds_sf001


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


def test_each_run_counts_its_storage_requests(result) -> None:
    """Spark's own LIST/HEAD requests, counted by the filesystem: a path table opened by
    Spark lists every folder of it, so each run lists at least one folder per fact partition
    of the tables it reads; the report's projection adds them at object-store latency."""
    import os

    from tpcds.report import render_storage, storage_table

    if os.environ.get("DPP_TEST_NO_COUNTING"):
        pytest.skip(f"no counting filesystem: {os.environ['DPP_TEST_NO_COUNTING']}")
    for r in result["runs"]:
        assert r["storage"] is not None, r["query"]
        assert r["storage"]["list"] > 0 and r["storage"]["head"] >= 0
    table = storage_table(result, "path")
    some = next(iter(table.values()))["spark"]
    assert some["projected_s"] == pytest.approx(
        some["measured_s"] + (some["list"] * 20 + some["head"] * 5) / 1000)
    assert any("projection from counted calls" in line for line in render_storage(result, "path"))


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


def test_a_stopped_run_resumes_without_running_finished_queries_again(
        spark, data, fast_listing) -> None:
    cfg = B.BenchConfig(data_dir=str(data), modes=["off", "spark"], queries="q52,q55",
                        warmup=False)
    partials: list[dict[str, Any]] = []
    full = B.run_bench(spark, cfg, checkpoint=lambda p: partials.append(json.loads(
        json.dumps(p, default=str))))
    assert [p["done"] for p in partials] == [[["path", "q52"]], [["path", "q52"], ["path", "q55"]]]
    assert all(p["complete"] is False for p in partials) and full["complete"] is True

    first = partials[0]                      # as if the run had been stopped after q52
    resumed = B.run_bench(spark, cfg, resume=first)
    assert resumed["done"] == [["path", "q52"], ["path", "q55"]]
    kept = [r for r in resumed["runs"] if r["query"] == "q52"]
    assert kept == [r for r in first["runs"]]            # measured once, kept as measured
    assert sorted(r["mode"] for r in resumed["runs"] if r["query"] == "q55") == ["off", "spark"]
    assert B.failures(resumed) == []
    assert resumed["summary"]["coverage"]["path"]["correct"] == ["q52", "q55"]


def test_resume_refuses_a_run_measured_under_other_settings(spark, data) -> None:
    prev = {"config": {"data_dir": str(data), "repeat": 3, "warmup": False, "check": True,
                       "rules": []}, "modes": ["off", "spark"], "runs": [], "done": []}
    cfg = B.BenchConfig(data_dir=str(data), modes=["off", "spark"], queries="q52",
                        warmup=False)
    with pytest.raises(B.BenchError, match="repeat was 3"):
        B.run_bench(spark, cfg, resume=prev)
    prev["config"]["repeat"] = 1
    prev["modes"] = ["off"]
    with pytest.raises(B.BenchError, match="modes were"):
        B.run_bench(spark, cfg, resume=prev)


def test_read_partial_names_a_corrupt_results_file(tmp_path: Path) -> None:
    assert B.read_partial(tmp_path) is None
    (tmp_path / "results.json").write_text('{"runs": [')
    with pytest.raises(B.BenchError, match="results.json"):
        B.read_partial(tmp_path)


def test_a_run_past_the_time_limit_is_cancelled_and_listed_as_not_run(
        spark, data, fast_listing) -> None:
    cfg = B.BenchConfig(data_dir=str(data), modes=["off", "spark"], queries="q52,q55",
                        warmup=True, query_timeout_s=0.01)
    res = B.run_bench(spark, cfg)
    # the warm-up already passes the limit: one record per query, no measured runs
    assert [(r["query"], r["rep"], r["timed_out"]) for r in res["runs"]] == [
        ("q52", -1, True), ("q55", -1, True)]
    assert B.failures(res) == [] and len(B.timed_out(res)) == 2
    cov = res["summary"]["coverage"]["path"]
    assert cov["ran"] == [] and set(cov["not_run"]) == {"q52", "q55"}
    assert "timed out after 0.01s" in cov["not_run"]["q52"]
    # Spark is usable afterwards: nothing stays cancelled
    assert spark.range(10).count() == 10
    ok = B.run_bench(spark, B.BenchConfig(data_dir=str(data), modes=["spark"], queries="q52",
                                          warmup=False, query_timeout_s=600))
    assert B.failures(ok) == [] and B.timed_out(ok) == []


def test_cli_rejects_a_non_positive_time_limit(data, tmp_path: Path, capsys) -> None:
    from tpcds.cli import main

    assert main(["bench", "--data", str(data), "--out", str(tmp_path / "o"),
                 "--query-timeout", "0"]) == 2
    assert "--query-timeout" in capsys.readouterr().err


def test_the_cold_run_starts_with_what_dpp_learned_forgotten(spark, data, fast_listing) -> None:
    """The headline run (rep 0) of each query meets dpp as a new job does: with the filter
    cache on, a filter cached by an earlier run is not reused by it — the later (warm)
    repetition reuses it, and the cold run of the next bench in this process forgets it."""
    key = "spark.dpp.filterCache.enabled"
    spark.conf.set(key, "true")
    try:
        cfg = B.BenchConfig(data_dir=str(data), modes=["dpp"], queries="q52", repeat=2,
                            table_kinds=["path"], warmup=False)
        first = B.run_bench(spark, cfg)
        again = B.run_bench(spark, cfg)
    finally:
        spark.conf.unset(key)
    for res in (first, again):
        assert B.failures(res) == []
        by_rep = {r["rep"]: r for r in res["runs"]}
        cold, warm = by_rep[0], by_rep[1]
        hits = [f.get("cache_hit") for f in cold["dpp_report"]["filters"]]
        assert hits and not any(hits), hits
        assert any(f.get("cache_hit") for f in warm["dpp_report"]["filters"])
        assert cold["forgot"] is not None and warm["forgot"] is None
        assert res["summary"]["kinds"]["path"]["totals"]["dpp"]["total_s"] == cold["total_s"]
        assert res["summary"]["warm"]["path"]["totals"]["dpp"]["total_s"] == warm["total_s"]
    # the second bench's cold run found the first bench's cached filter and forgot it
    assert {r["rep"]: r for r in again["runs"]}[0]["forgot"]["filters"] >= 1
