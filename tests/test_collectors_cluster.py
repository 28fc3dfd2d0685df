"""The build side on a real Spark standalone cluster: executors in their own processes.

A master and a worker (1 core, 1g) run as separate JVMs on loopback; a separate Python driver
process (this file run as a script) connects to them, runs build sides with the Redis
coordinator, and prints what it saw as JSON. The shared session is local mode, so it cannot
show executor processes publishing to Redis, nor task retries (local[2] never retries).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the driver

def _fail_first_attempt(batches):
    """Upstream of the build: partition 1's first attempt dies after its first batch."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    for i, b in enumerate(batches):
        yield b
        if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and i == 0:
            raise RuntimeError("injected failure on attempt 0")


def driver_main(master: str, redis_url: str) -> None:
    from pyspark.sql import SparkSession

    from collectors import build_filter, map_in_arrow
    from coordinator import make_service

    spark = (SparkSession.builder.master(master).appName("dpp-cluster-test")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.executor.memory", "512m")
             .config("spark.executor.cores", "1")
             .config("spark.cores.max", "1")
             .config("spark.pyspark.python", sys.executable)
             .config("spark.task.maxFailures", "4")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out: dict = {"driver_pid": os.getpid()}
    svc = make_service(redis_url, app_id=spark.sparkContext.applicationId, max_distinct=1000,
                       bloom_fpp=None, max_bytes=1 << 20)
    opts = dict(max_distinct=1000, bloom_enabled=False, bloom_fpp=0.01, bloom_capacity=None)
    try:
        df = spark.range(0, 2000, numPartitions=4).selectExpr("id % 101 AS k")
        res = build_filter(df, ["k"], filter_id="cluster-k", sink=svc, pre_aggregate=False,
                           **opts)
        w = svc.wait("cluster-k", 60)
        out["executor"] = {
            "outcome": w.outcome, "reason": w.reason,
            "values": w.domain.get("k").discrete_values() if w.domain else None,
            "pids": list(res.executor_pids), "published_by": res.published_by,
            "parts_expected": res.parts_expected, "parts_reported": w.parts_reported}

        flaky = map_in_arrow(spark.range(0, 600, numPartitions=3).selectExpr("id % 53 AS k"),
                             _fail_first_attempt, "k bigint")
        retry = {}
        embedded = make_service("embedded", app_id="x", max_distinct=1000, bloom_fpp=None,
                                max_bytes=1 << 20)
        # map-only: the failing task is the build task itself; pre-aggregated: the failing
        # task is in the map stage below the build tasks
        for label, sink, pre in (("redis", svc, False), ("embedded", embedded, False),
                                 ("redis-preagg", svc, True)):
            res = build_filter(flaky, ["k"], filter_id=f"retry-{label}", sink=sink,
                               pre_aggregate=pre, **opts)
            w = sink.wait(f"retry-{label}", 60)
            retry[label] = {"outcome": w.outcome, "reason": w.reason,
                            "values": w.domain.get("k").discrete_values() if w.domain else None,
                            "retried_parts": res.retried_parts,
                            "parts_reported": w.parts_reported}
        out["retry"] = retry
    finally:
        print("RESULT " + json.dumps(out), flush=True)
        svc.close()
        spark.stop()


# --------------------------------------------------------------------------- the cluster

def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with contextlib.suppress(OSError):
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory, redis_server):
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("standalone")
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=str(work / "logs"), SPARK_WORKER_DIR=str(work / "worker"),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    spark_class = str(spark_home / "bin" / "spark-class")
    mport, mweb, wweb = _port(), _port(), _port()
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        mlog = open(work / "master.log", "wb")
        logs.append(mlog)
        master = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(mport), "--webui-port", str(mweb)],
            env=env, stdout=mlog, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(master)
        _wait_port(mport, master, "Spark master")
        wlog = open(work / "worker.log", "wb")
        logs.append(wlog)
        worker = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
             "--cores", "1", "--memory", "1g", "--webui-port", str(wweb),
             "--work-dir", str(work / "worker"), f"spark://127.0.0.1:{mport}"],
            env=env, stdout=wlog, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(worker)
        drv = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), f"spark://127.0.0.1:{mport}",
             redis_server.url],
            env=dict(env, PYTHONPATH=str(ROOT)), cwd=str(work), capture_output=True,
            timeout=400, text=True)
        lines = [ln for ln in drv.stdout.splitlines() if ln.startswith("RESULT ")]
        if not lines:
            raise AssertionError(f"driver failed ({drv.returncode}):\n{drv.stderr[-4000:]}")
        yield json.loads(lines[-1][len("RESULT "):])
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, 15)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)
                    p.wait()
        for f in logs:
            f.close()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
def test_executor_processes_publish_partials_to_redis(cluster_run):
    r = cluster_run["executor"]
    assert r["outcome"] == "complete", r["reason"]
    assert r["values"] == list(range(101))                 # exactly the distinct keys
    assert r["published_by"] == "executor"
    assert r["pids"] and cluster_run["driver_pid"] not in r["pids"]
    assert r["parts_expected"] == r["parts_reported"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("sink", ["redis", "embedded"])
def test_build_task_failing_once_is_retried_and_the_domain_is_exact(cluster_run, sink):
    r = cluster_run["retry"][sink]
    assert r["outcome"] == "complete", r["reason"]
    assert r["values"] == list(range(53))
    assert r["retried_parts"] == 1 and r["parts_reported"] == 3


@pytest.mark.slow
def test_failed_map_task_under_a_pre_aggregated_build_gives_the_exact_domain(cluster_run):
    r = cluster_run["retry"]["redis-preagg"]
    assert r["outcome"] == "complete", r["reason"]
    assert r["values"] == list(range(53))


if __name__ == "__main__":
    driver_main(sys.argv[1], sys.argv[2])
