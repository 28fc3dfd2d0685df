"""tpcds.reference: DuckDB's answers within a memory bound, cached next to the data, and the
modes compared with each other when DuckDB's answers are not computed (``--no-check``)."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import duckdb
import pytest

from tests.conftest import spark_conf
from tpcds import bench as B
from tpcds.queries import load_queries, select_queries
from tpcds.reference import CACHE_DIR, DuckDBReference, modes_agree
from tpcds.report import render_markdown, summarize

#: Far below what the scale-0.01 data takes once loaded into DuckDB (about 25 MB), and enough
#: for these queries' scans and aggregates over views (measured at 8 MB with one thread).
TIGHT = "16MB"
SMALL_QUERIES = "q42,q43,q52,q55,q96"


@pytest.fixture(scope="module")
def queries() -> dict[str, Any]:
    return {q.name: q for q in select_queries(SMALL_QUERIES, load_queries())}


@pytest.fixture
def data(tpcds_sf001: Path, tmp_path: Path) -> Path:
    """The tables q42 reads and the manifest, copied: the cache tests change and delete them."""
    out = tmp_path / "sf001"
    out.mkdir()
    for t in ("date_dim", "item", "store_sales"):
        shutil.copytree(tpcds_sf001 / t, out / t)
    shutil.copy(tpcds_sf001 / "manifest.json", out / "manifest.json")
    return out


# ------------------------------------------------------------------ bounded memory

def test_loading_the_tables_runs_out_of_memory_where_the_views_answer(tpcds_sf001: Path,
                                                                      queries) -> None:
    """The old way (every table loaded into DuckDB) cannot even start under a memory limit
    the data exceeds; the views answer under that same limit, with the rows DuckDB gives
    without any limit."""
    old = DuckDBReference(tpcds_sf001, threads=1, materialize=True, memory_limit=TIGHT,
                          cache=False)
    with pytest.raises(duckdb.OutOfMemoryException):
        old.con
    old.close()
    with DuckDBReference(tpcds_sf001, threads=1, memory_limit=TIGHT, cache=False) as tight, \
            DuckDBReference(tpcds_sf001, threads=1, memory_limit="1GB", cache=False) as free:
        assert tight.con.execute("SELECT current_setting('memory_limit')").fetchone()[0] \
            == "15.2 MiB"                             # DuckDB's spelling of 16 MB
        for q in queries.values():
            got = tight.rows(q)
            assert got == free.rows(q), q.name
            assert tight.sources[(q.name, False)] == "duckdb"
        assert any(len(rows) > 0 and rows[0][0] is not None
                   for rows in (tight.rows(q) for q in queries.values()))


def test_the_reference_spills_to_a_temporary_folder_it_removes(tpcds_sf001: Path,
                                                               queries) -> None:
    ref = DuckDBReference(tpcds_sf001, threads=1, memory_limit=TIGHT)
    spill = Path(ref.con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
    assert spill.is_dir() and spill.parent == tpcds_sf001 / CACHE_DIR
    ref.rows(queries["q42"])
    ref.close()
    assert not spill.exists()


# ------------------------------------------------------------------ the cache

def test_a_second_reference_answers_from_the_cache_without_the_data(data: Path,
                                                                    queries) -> None:
    q = queries["q42"]
    with DuckDBReference(data, threads=1) as first:
        rows = first.rows(q)
        assert first.sources[("q42", False)] == "duckdb"
    files = sorted(p.name for p in (data / CACHE_DIR).glob("*.json"))
    assert len(files) == 1 and files[0].startswith("sf0.01-default-q42-limit-")
    shutil.rmtree(data / "store_sales")          # DuckDB could no longer answer q42
    with DuckDBReference(data, threads=1) as second:
        assert second.rows(q) == rows
        assert second.sources[("q42", False)] == "cache"


def test_regenerated_data_misses_the_cache_and_replaces_the_old_answer(data: Path,
                                                                       queries) -> None:
    q = queries["q42"]
    with DuckDBReference(data, threads=1) as first:
        first.rows(q)
    (old,) = (data / CACHE_DIR).glob("*.json")
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["tables"]["store_sales"]["rows"] += 1      # what a regeneration changes
    (data / "manifest.json").write_text(json.dumps(manifest))
    with DuckDBReference(data, threads=1) as second:
        second.rows(q)
        assert second.sources[("q42", False)] == "duckdb"
    (new,) = (data / CACHE_DIR).glob("*.json")
    assert new != old


def test_another_query_text_misses_the_cache(data: Path, queries) -> None:
    q = queries["q42"]
    changed = SimpleNamespace(name="q42", duckdb_sql=q.duckdb_sql.replace("LIMIT 100",
                                                                          "LIMIT 1"))
    assert changed.duckdb_sql != q.duckdb_sql
    with DuckDBReference(data, threads=1) as first:
        first.rows(q)
    with DuckDBReference(data, threads=1) as second:
        second.rows(changed)
        assert second.sources[("q42", False)] == "duckdb"


def test_cached_values_keep_their_types(data: Path) -> None:
    q = SimpleNamespace(name="q0", duckdb_sql=(
        "SELECT 12.34::DECIMAL(7,2) AS d, DATE '2001-02-03' AS day, "
        "TIMESTAMP '2001-02-03 04:05:06' AS ts, NULL AS n, 'x' AS s, 2.5::DOUBLE AS f, "
        "'nan'::DOUBLE AS nan, 7::BIGINT AS i, true AS b"))
    with DuckDBReference(data, threads=1) as first:
        computed = first.rows(q)
    with DuckDBReference(data, threads=1) as second:
        cached = second.rows(q)
        assert second.sources[("q0", False)] == "cache"
    assert computed[0][:5] == (decimal.Decimal("12.34"), dt.date(2001, 2, 3),
                               dt.datetime(2001, 2, 3, 4, 5, 6), None, "x")
    assert [type(v) for v in cached[0]] == [type(v) for v in computed[0]]
    assert cached[0][:6] == computed[0][:6] and cached[0][7:] == computed[0][7:]
    assert cached[0][6] != cached[0][6]              # NaN survives as NaN


def test_an_unreadable_cache_file_is_recomputed(data: Path, queries) -> None:
    q = queries["q42"]
    with DuckDBReference(data, threads=1) as first:
        rows = first.rows(q)
    (path,) = (data / CACHE_DIR).glob("*.json")
    path.write_text("{not json")
    with DuckDBReference(data, threads=1) as second:
        assert second.rows(q) == rows
        assert second.sources[("q42", False)] == "duckdb"


def test_without_a_manifest_nothing_is_cached(data: Path, queries) -> None:
    (data / "manifest.json").unlink()
    with DuckDBReference(data, threads=1) as ref:
        ref.rows(queries["q42"])
    assert not list((data / CACHE_DIR).glob("*.json"))


# ------------------------------------------------------------------ modes against each other

A = [(1, "a"), (2, "b")]


def test_modes_agree_against_the_baseline_mode_whatever_the_order() -> None:
    verdicts = modes_agree([("dpp", 0, list(reversed(A))), ("spark", 0, A), ("dpp", 1, A)],
                           "spark")
    assert verdicts == [(True, None)] * 3


def test_a_mode_with_other_rows_disagrees_and_says_how() -> None:
    (dpp, spark) = modes_agree([("dpp", 0, A[:1]), ("spark", 0, A)], "spark")
    assert spark == (True, None)
    assert dpp[0] is False and "spark's rows" in dpp[1] and "1 rows, expected 2" in dpp[1]


def test_answers_cut_at_the_limit_that_differ_are_not_judged() -> None:
    (dpp, _) = modes_agree([("dpp", 0, [(1, "a"), (3, "c")]), ("spark", 0, A)], "spark",
                           limit=2)
    assert dpp[0] is None and "LIMIT 2" in dpp[1]
    (dpp, _) = modes_agree([("dpp", 0, [(1, "a"), (3, "c")]), ("spark", 0, A)], "spark",
                           limit=5)
    assert dpp[0] is False                            # fewer rows than the limit: no tie cut


def test_a_failed_run_is_not_judged_and_a_missing_baseline_falls_back() -> None:
    assert modes_agree([("dpp", 0, None), ("spark", 0, A)], "spark") == [(None, None),
                                                                         (True, None)]
    assert modes_agree([("dpp", 0, A), ("off", 0, A[:1]), ("spark", 0, None)], "spark") == [
        (True, None), (False, "differs from dpp's rows (repetition 0): 1 rows, expected 2"),
        (None, None)]


# ------------------------------------------------------------------ --no-check in the report

def _run(q: str, mode: str, *, agrees: Any = True, why: Any = None) -> dict[str, Any]:
    return {"query": q, "mode": mode, "kind": "path", "rep": 0, "ok": True, "correct": None,
            "timed_out": False, "error": None, "mismatch": None, "agrees": agrees,
            "disagreement": why, "total_s": 2.0, "listing_s": 0.5, "execution_s": 1.5,
            "metrics": {"fact_bytes_read": 10}, "dpp_report": None}


def _result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    r = {"modes": ["spark", "dpp"], "runs": runs, "config": {"repeat": 1, "check": False}}
    r["summary"] = summarize(r)
    return r


def test_unchecked_answers_are_reported_as_not_checked_and_modes_compared() -> None:
    res = _result([_run("q3", "spark"), _run("q3", "dpp"),
                   _run("q7", "spark"), _run("q7", "dpp")])
    md = render_markdown(res)
    assert "correct** (every mode's rows = DuckDB's): not checked (`--no-check`)" in md
    assert "**modes agree** (spark's rows = dpp's rows, every repetition): 2 of 2" in md
    assert "DuckDB's): 0" not in md and "FAILURES" not in md
    assert B.failures(res) == [] and res["summary"]["failures"] == 0


def test_modes_that_disagree_fail_the_run_and_are_named() -> None:
    res = _result([_run("q3", "spark"), _run("q3", "dpp", agrees=False, why="1 rows, expected 2"),
                   _run("q7", "spark"), _run("q7", "dpp", agrees=None, why="LIMIT 100 ties")])
    md = render_markdown(res)
    assert "0 of 2; **MODES DISAGREE**: q3; not judged (LIMIT ties): q7" in md
    assert "**q3 / dpp / path**: 1 rows, expected 2" in md
    assert [r["query"] for r in B.failures(res)] == ["q3"]
    assert res["summary"]["disagreements"] == 1


def test_checked_runs_are_reported_as_before() -> None:
    runs = [dict(_run("q3", m), correct=True, agrees=None) for m in ("spark", "dpp")]
    res = _result(runs)
    res["config"]["check"] = True
    res["summary"] = summarize(res)
    md = render_markdown(res)
    assert "**correct** (every mode's rows = DuckDB's): 1" in md and "modes agree" not in md


# ------------------------------------------------------------------ the bench, unchecked

THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@pytest.fixture
def fast_listing(spark) -> Iterator[None]:
    with spark_conf(spark, {THRESHOLD: "100000"}):
        yield


def test_bench_without_check_compares_the_modes_and_never_starts_duckdb(
        spark, tpcds_sf001: Path, fast_listing, monkeypatch) -> None:
    def no_duckdb(*a: Any, **k: Any) -> None:
        raise AssertionError("--no-check must not compute DuckDB's answers")

    monkeypatch.setattr(DuckDBReference, "rows", no_duckdb)
    cfg = B.BenchConfig(data_dir=str(tpcds_sf001), modes=["off", "spark"], queries="q42,q52",
                        repeat=2, warmup=False, check=False)
    res = B.run_bench(spark, cfg)
    assert len(res["runs"]) == 8
    assert all(r["agrees"] is True and r["correct"] is None for r in res["runs"])
    assert B.failures(res) == []
    cov = res["summary"]["coverage"]["path"]
    assert cov["agree"] == ["q42", "q52"] and cov["correct"] == []
    md = render_markdown(res)
    assert "not checked (`--no-check`)" in md
    assert "**modes agree** (spark's rows = off's rows, every repetition): 2 of 2" in md


def test_bench_with_check_reads_answers_a_first_bench_cached(spark, data: Path, fast_listing,
                                                             monkeypatch) -> None:
    cfg = B.BenchConfig(data_dir=str(data), modes=["spark"], queries="q42", warmup=False)
    assert B.failures(B.run_bench(spark, cfg)) == []
    monkeypatch.setattr(DuckDBReference, "_connect", lambda self: (_ for _ in ()).throw(
        AssertionError("answer recomputed")))
    res = B.run_bench(spark, cfg)
    assert B.failures(res) == [] and res["runs"][0]["correct"] is True


# ------------------------------------------------------------------ the scale table

def _scaled(sf: float, factor: float) -> dict[str, Any]:
    """Two queries in spark and dpp, two repetitions; every figure of dpp grows by
    ``factor`` with the scale, spark's by ``2 * factor``."""
    runs = []
    for q in ("q3", "q7"):
        for rep in (0, 1):
            for mode in ("spark", "dpp"):
                total = (4.0 if mode == "spark" else 2.0) * factor
                runs.append({
                    "query": q, "mode": mode, "kind": "path", "rep": rep, "ok": True,
                    "correct": True, "error": None, "mismatch": None, "total_s": total,
                    "listing_s": 0.5 * factor, "execution_s": total - 0.5 * factor,
                    "metrics": {"fact_bytes_read": 10},
                    "storage": {"list": 10 * factor if mode == "spark" else 1, "head": 0,
                                "metastore_fetched": None, "metastore_names": None},
                    "dpp_report": ({"tables": [], "filters": [],
                                    "phases": {"analysis": 0.1, "build": 0.2 * factor,
                                               "wait": 0.1 * factor,
                                               "split_enumeration": 0.05 * factor,
                                               "handoff": 0.01, "total": 0.5 * factor}}
                                   if mode == "dpp" else None)})
    return {"modes": ["spark", "dpp"], "runs": runs, "data": {"sf": sf},
            "config": {"repeat": 2, "check": True}}


def test_scale_table_shows_each_ratio_and_how_each_phase_grows() -> None:
    from tpcds.report import render_scale_table, scale_rows

    rows = scale_rows([_scaled(10, 10.0), _scaled(1, 1.0)])
    assert [(r["sf"], r["kind"]) for r in rows] == [(1, "path"), (10, "path")]
    assert all(r["dpp_over_spark"] == pytest.approx(0.5) for r in rows)
    assert rows[1]["phases"]["build_s"] == pytest.approx(2 * 0.2 * 10)   # summed over 2 queries
    assert rows[1]["calls"]["spark"]["list"] == 200 and rows[1]["projected_ratio"] < 0.5
    md = render_scale_table([_scaled(1, 1.0), _scaled(10, 10.0)])
    assert "| SF10 | path | 2 (0) | 2 / 2 | 80.0 | 40.0 | 0.50 | q3 0.50 | none |" in md
    assert "| path SF10 / SF1 | x10.0 | x1.0 | x10.0 | x10.0 | x10.0 | x1.0 |" in md
    assert "| path SF10 / SF1 | x10.0 / - | x1.0 / - |  |  |" in md
