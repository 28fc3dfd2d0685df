"""Every counter of the job report, checked exactly on layouts where the right numbers are known."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

N_PARTS = 40
FILES_PER_PART = 2


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """fact: 40 partitions k=0..39, 2 files each of 3 rows; dim: k 0..39 with 7 flagged."""
    root = tmp_path_factory.mktemp("counters")
    fact = root / "fact"
    sizes = {}
    for k in range(N_PARTS):
        for f in range(FILES_PER_PART):
            p = fact / f"k={k}" / f"part-{f}.parquet"
            p.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"v": pa.array([k * 10 + f * 3 + i for i in range(3)],
                                                   pa.int64())}), p)
            sizes[str(p)] = p.stat().st_size
    (fact / "_SUCCESS").write_text("")
    dim = root / "dim"
    dim.mkdir()
    pq.write_table(pa.table({"dk": pa.array(list(range(N_PARTS)), pa.int32()),
                             "flag": [k in (3, 5, 8, 13, 21, 34, 39) for k in range(N_PARTS)],
                             "grp": [k % 4 for k in range(N_PARTS)]}), dim / "d.parquet")
    return {"fact": fact, "dim": dim, "sizes": sizes}  # type: ignore[dict-item]


@pytest.fixture(scope="module")
def env(spark, layout):
    from dpp import DppSession
    from dpp.runtime.config import DppConfig

    spark.read.parquet(str(layout["dim"])).createOrReplaceTempView("cnt_dim")
    dpp = DppSession(spark, config=DppConfig(filter_cache=False, wait_timeout=60.0))
    dpp.register_table("cnt_fact", str(layout["fact"]), partition_types={"k": "int"})
    return dpp


def _table(report, name="cnt_fact"):
    return [t for t in report.to_dict()["tables"] if t["table"] == name][0]


def _bytes(layout, keys):
    return sum(s for p, s in layout["sizes"].items()
               if any(f"/k={k}/" in p for k in keys))


KEPT = (3, 5, 8, 13, 21, 34, 39)


def test_dynamic_filter_keeping_7_of_40(env, layout):
    rows = env.collect("SELECT count(*), sum(v) FROM cnt_fact JOIN cnt_dim ON k = dk WHERE flag")
    assert rows[0][0] == 7 * FILES_PER_PART * 3
    rep = env.last_report
    t = _table(rep)
    assert t["pruning"] == "applied"
    assert t["partitions_total"] == 40
    assert t["partitions_kept"] == 7
    assert t["pruned_dynamic"] == 33
    assert t["pruned_static"] == 0
    assert t["folders_listed"] == 7 + 1
    assert t["files_listed"] == 7 * FILES_PER_PART
    assert t["files_kept"] == 7 * FILES_PER_PART
    assert t["files_skipped"] == 0
    assert t["bytes_kept"] == _bytes(layout, KEPT)
    assert t["bytes_skipped"] == 0
    assert t["files_pruned_stats"] == 0
    assert len(t["filters"]) == 1 and t["filters"][0]["arrived"] is True
    assert t["filters"][0]["outcome"] == "complete"
    [f] = rep.to_dict()["filters"]
    assert f["outcome"] == "complete" and f["kind"] == "values"
    assert f["distinct_values"] == 7
    assert f["build_rows"] == 7
    assert f["parts_reported"] == f["parts_expected"] >= 1
    assert f["cache_hit"] is False
    assert f["encoded_bytes"] and f["encoded_bytes"] > 0
    assert "cnt_dim" in f["build_query"] and "flag" in f["build_query"]
    # Spark's own scan metrics after execution: exactly the kept files were read
    scan = rep.to_dict()["spark_scan"]
    assert scan["files_read"] == 7 * FILES_PER_PART + 1  # + the dimension's one file
    for phase in ("analysis", "build", "wait", "execution", "total"):
        assert phase in rep.phases and rep.phases[phase] >= 0
    line = rep.summary_line()
    assert line.startswith("dpp: cnt_fact kept 7/40 partitions (82% pruned)")
    assert "cnt_dim.dk values(7)" in line


def test_static_and_dynamic_counted_apart(env, layout):
    env.collect("SELECT count(*) FROM cnt_fact JOIN cnt_dim ON k = dk WHERE flag AND k < 20")
    t = _table(env.last_report)
    # static k < 20 prunes 20 folders; of the 20 left the filter keeps 3, 5, 8, 13
    assert t["pruned_static"] == 20
    assert t["pruned_dynamic"] == 16
    assert t["partitions_kept"] == 4
    assert t["folders_listed"] == 4 + 1
    assert t["files_kept"] == 4 * FILES_PER_PART


def test_timed_out_filter_means_no_pruning_reported(spark, layout, tmp_path):
    from dpp import DppSession
    from dpp.runtime.config import DppConfig

    marker = tmp_path / "slow-once"
    marker.write_text("")

    def slow_once(x, marker=str(marker)):  # the first row of the build side outlasts the wait
        if os.path.exists(marker):
            os.remove(marker)
            import time

            time.sleep(2.0)
        return True

    spark.udf.register("cnt_slow", slow_once, "boolean")
    dpp = DppSession(spark, config=DppConfig(filter_cache=False, wait_timeout=0.3))
    dpp.register_table("cnt_fact", str(layout["fact"]), partition_types={"k": "int"})
    rows = dpp.collect("SELECT count(*) FROM cnt_fact JOIN cnt_dim ON k = dk "
                       "WHERE flag AND cnt_slow(dk)")
    assert rows[0][0] == 7 * FILES_PER_PART * 3
    rep = dpp.last_report.to_dict()
    t = _table(dpp.last_report)
    assert t["pruning"] == "none"
    assert t["partitions_kept"] == 40 and t["pruned_dynamic"] == 0
    assert t["folders_listed"] == 41
    assert t["filters"][0]["arrived"] is False
    assert t["filters"][0]["outcome"] == "timeout"
    [f] = rep["filters"]
    assert f["outcome"] in ("timeout", "cancelled", "failed")
    assert "timeout" in (t["reason"] or "")


def test_cache_hit_on_second_run_and_counters_repeat(spark, layout):
    from dpp import DppSession
    from dpp.runtime.config import DppConfig

    dpp = DppSession(spark, config=DppConfig(filter_cache=True, wait_timeout=60.0))
    dpp.register_table("cnt_fact", str(layout["fact"]), partition_types={"k": "int"})
    q = "SELECT count(*) FROM cnt_fact JOIN cnt_dim ON k = dk WHERE flag AND grp = 1"
    first = dpp.collect(q)
    f1 = dpp.last_report.to_dict()["filters"][0]
    second = dpp.collect(q)
    rep2 = dpp.last_report.to_dict()
    f2 = rep2["filters"][0]
    assert first == second
    assert f1["cache_hit"] is False and f2["cache_hit"] is True
    assert f2["outcome"] == "complete" and f2["distinct_values"] == 3  # 5, 13, 21
    t = _table(dpp.last_report)
    assert t["partitions_kept"] == 3 and t["pruned_dynamic"] == 37
    assert "(cache hit)" in dpp.last_report.summary_line()


def test_query_with_no_opportunity(env):
    env.collect("SELECT count(*) FROM cnt_fact")
    rep = env.last_report.to_dict()
    [t] = rep["tables"]
    assert t["pruning"] == "none" and t["reason"] == "no usable predicate"
    assert rep["filters"] == []
    assert env.last_report.summary_line() == "dpp: no pruning (cnt_fact: no usable predicate)"


def test_report_file_gets_one_json_line_per_job(spark, layout, tmp_path):
    from dpp import DppSession
    from dpp.runtime.config import DppConfig
    from dpp.runtime.report import read_jsonl

    path = tmp_path / "reports" / "jobs.jsonl"
    dpp = DppSession(spark, config=DppConfig(report_path=str(path), filter_cache=False))
    dpp.register_table("cnt_fact", str(layout["fact"]), partition_types={"k": "int"})
    dpp.collect("SELECT count(*) FROM cnt_fact WHERE k IN (1, 2)")
    dpp.collect("SELECT count(*) FROM cnt_fact JOIN cnt_dim ON k = dk WHERE flag")
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    reports = read_jsonl(path)
    assert [r.tables[0].partitions_kept for r in reports] == [2, 7]
    assert json.loads(lines[0])["schema_version"] == 2
    assert reports[0].tables[0].pruned_static == 38


def test_one_log_line_per_query(env, caplog):
    with caplog.at_level(logging.INFO, logger="dpp.session"):
        env.collect("SELECT count(*) FROM cnt_fact JOIN cnt_dim ON k = dk WHERE flag")
    lines = [r.getMessage() for r in caplog.records if r.name == "dpp.session"
             and r.getMessage().startswith("dpp:")]
    assert lines == [env.last_report.summary_line()]


@pytest.mark.parametrize("spark_dpp", ["true", "false"])
def test_the_jvm_plan_walk_reads_what_the_py4j_walk_reads(spark, layout, spark_dpp) -> None:
    """``file_scans`` reads the executed plan in one JVM call (``dpp.spark.PlanScans``); the
    node-by-node py4j walk it replaced stays as the fallback, and both give the same scans, in
    the same order, on a plan with AQE stages, a reused exchange, a scalar subquery and (with
    Spark's DPP on) a pruning subquery."""
    from dpp.runtime import spark_metrics as M
    from tests.conftest import spark_conf

    spark.read.parquet(str(layout["fact"])).createOrReplaceTempView("cnt_walk_fact")
    spark.read.parquet(str(layout["dim"])).createOrReplaceTempView("cnt_walk_dim")
    with spark_conf(spark, {"spark.sql.optimizer.dynamicPartitionPruning.enabled": spark_dpp,
                            "spark.sql.adaptive.enabled": "true"}):
        df = spark.sql(
            "SELECT a.k, count(*) AS n FROM cnt_walk_fact a JOIN cnt_walk_dim d ON a.k = d.dk "
            "WHERE d.flag AND a.v > (SELECT min(v) FROM cnt_walk_fact) GROUP BY a.k "
            "UNION ALL SELECT b.k, count(*) FROM cnt_walk_fact b JOIN cnt_walk_dim d2 "
            "ON b.k = d2.dk WHERE d2.flag GROUP BY b.k")
        df.collect()
        assert M._jvm_walker(spark) is not None, "the hook's jar should load in the test JVM"
        fast = M.file_scans(df)
        slow = M._file_scans_py4j(df, df._jdf.queryExecution().executedPlan())
    assert fast == slow
    assert len(fast) >= 3 and {s.table for s in fast} >= {str(layout["dim"])}
    assert sum(s.files_read for s in fast) > 0 and all(s.root_paths for s in fast)
