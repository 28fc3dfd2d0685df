"""Spark Connect: what dpp leaves on the server ends without remote calls from finalizers
and without holding the client process.

* The views behind a returned ``spark.sql`` DataFrame go when the DataFrame is garbage. The
  finalizer that notices must make no remote call: garbage collection runs finalizers inside
  whatever the thread is doing, including the client's own ``ThreadPoolExecutor.submit``
  with its lock held, where a ``dropTempView`` waits for that lock forever and every Connect
  call of the process hangs behind it. The tests watch every gRPC call the client makes
  while the finalizer runs — with the client's release pool's lock held, as in that case —
  and then check that the views are gone after the next call, with Spark's rows.
* dpp's ``cloneSession()`` clients end with the user's session: after ``spark.stop()``, when
  the server goes away first, the client process exits at once (each clone's own exit hook
  would otherwise call the dead server with retries lasting minutes).

One real Spark Connect server for the module (``tests/connect_server.py``); the exit test
stops it, so it runs last.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import make_partitioned_table, write_parquet
from tests.connect_server import client as _client, serve

SPARK_DPP_OFF = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
QUERY = ("SELECT day, count(*) AS n FROM sales JOIN days ON day = d_day WHERE d_week = 1 "
         "GROUP BY day")
EXIT_BOUND = 5.0   # seconds: the one time bound the tests hold (an exit that hangs)


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from serve(tmp_path_factory, "connect-lifecycle")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``sales`` by ``day`` (30 partitions) and the ``days`` calendar."""
    root = tmp_path_factory.mktemp("lifecycle-data")
    make_partitioned_table(root / "sales", {(("day", str(d)),): {"v": [d, d + 100, d + 200]}
                                           for d in range(1, 31)})
    write_parquet(root / "days" / "part-0.parquet",
                  {"d_day": list(range(1, 31)), "d_week": [(d - 1) // 7 for d in range(1, 31)]})
    return {"sales": root / "sales", "days": root / "days"}


def _stop(spark: Any, server: Any) -> None:
    """Stops a client; once the exit test has stopped the server there is no session left
    to release (the client would retry that for minutes): only its channel is closed."""
    if server.proc is None or server.proc.poll() is not None:
        spark.release_session_on_close = False
    spark.stop()


@pytest.fixture(scope="module")
def plain(connect_server: Any, data: dict[str, Path]) -> Iterator[Any]:
    spark = _client(connect_server.url)
    spark.conf.set(SPARK_DPP_OFF, "false")
    for name in ("sales", "days"):
        spark.read.parquet(str(data[name])).createOrReplaceTempView(name)
    yield spark
    _stop(spark, connect_server)


@pytest.fixture(scope="module")
def connect(connect_server: Any, data: dict[str, Path]) -> Iterator[Any]:
    import dpp

    spark = _client(connect_server.url)
    spark.conf.set("spark.dpp.tables.sales", str(data["sales"]))
    spark.read.parquet(str(data["days"])).createOrReplaceTempView("days")
    dpp.enable(spark)
    yield spark
    if connect_server.proc.poll() is None:
        dpp.disable(spark)
    _stop(spark, connect_server)


class _Recorder:
    """The client's gRPC stub, recording the name of every call the test's own thread makes
    while armed (the client's pool threads release earlier executions on their own)."""

    def __init__(self, stub: Any) -> None:
        self._real = stub
        self.armed = False
        self.thread = threading.get_ident()
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.armed and threading.get_ident() == self.thread:
                self.calls.append(name)
            return method(*args, **kwargs)
        return call


@pytest.fixture
def recorder(connect: Any) -> Iterator[_Recorder]:
    client = connect.client
    rec = _Recorder(client._internal_stub)
    client._internal_stub = rec
    yield rec
    client._internal_stub = rec._real


def _dpp_views(spark: Any) -> list[str]:
    return [r.viewName for r in spark.sql("SHOW VIEWS").collect()
            if r.viewName.startswith("__dpp_")]


def _rows(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_finalizer_of_a_returned_dataframe_makes_no_remote_call(connect, plain, recorder):
    """The DataFrame's views are queued by its finalizer (no gRPC call while it runs, here
    with the client's release pool lock held, as when collection strikes inside ``submit``)
    and dropped at the session's next call."""
    import dpp
    from pyspark.sql.connect.client.reattach import ExecutePlanResponseReattachableIterator

    df = connect.sql(QUERY)
    report = dpp.session_of(connect).last_report.to_dict()
    assert [t for t in report["tables"] if t["pruning"] == "applied"], report["tables"]
    assert _rows(df) == _rows(plain.sql(QUERY))
    views = _dpp_views(connect)
    assert views, "the returned DataFrame reads views of the kept folders"

    pool = ExecutePlanResponseReattachableIterator._release_thread_pool_instance
    lock = pool._shutdown_lock if pool is not None else None
    recorder.armed = True
    try:
        if lock is not None:
            with lock:   # a gRPC call from the finalizer here would never return
                del df
                gc.collect()
        else:
            del df
            gc.collect()
    finally:
        recorder.armed = False
    assert recorder.calls == [], recorder.calls
    # the next call on the session drops them; Spark's rows still
    assert _rows(connect.sql(QUERY)) == _rows(plain.sql(QUERY))
    gc.collect()
    left = set(_dpp_views(connect)) & set(views)
    assert not left, left


def test_derived_dataframe_keeps_its_views_until_it_is_garbage(connect, plain, recorder):
    """A DataFrame derived from the returned one holds the views; dropping the first one's
    reference makes no call, and the derived one still gives Spark's rows."""
    derived = connect.sql(QUERY).where("n > 0")
    recorder.armed = True
    gc.collect()
    recorder.armed = False
    assert recorder.calls == [], recorder.calls
    assert _rows(derived) == _rows(plain.sql(QUERY).where("n > 0"))


# a catalog table over the sales folder: a pruned catalog table of plain Parquet folders is
# read as its kept folders in a clone sized as the table (a declared table needs no clone:
# it is Spark's reader of the folder, sized by Spark)
_CATALOG_SALES = ("CREATE TABLE IF NOT EXISTS lc_sales (v BIGINT, day INT) USING parquet "
                  "PARTITIONED BY (day) LOCATION '{sales}'",
                  "ALTER TABLE lc_sales RECOVER PARTITIONS")


def test_stop_ends_dpp_clones(connect_server, data):
    """``spark.stop()`` ends the clones dpp made to size pruned relations (their server
    sessions released, their channels closed)."""
    import dpp

    spark = _client(connect_server.url)
    for sql in _CATALOG_SALES:
        spark.sql(sql.format(sales=data["sales"]))
    spark.read.parquet(str(data["days"])).createOrReplaceTempView("days")
    session = dpp.enable(spark)
    spark.sql(QUERY.replace("sales", "lc_sales")).collect()
    clones = list(session.connect.siblings.values())
    assert clones, "the pruned catalog relation is sized as the table in a clone"
    spark.stop()
    assert spark.is_stopped
    assert all(c.client.is_closed for c in clones)


_SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql.connect.session import SparkSession

    url, sales, days, with_dpp = sys.argv[1:5]
    spark = SparkSession.builder.remote(url).create()
    spark.read.parquet(days).createOrReplaceTempView("days")
    query = {query!r}
    if with_dpp == "1":
        import dpp

        for sql in {catalog!r}:
            spark.sql(sql.format(sales=sales))
        session = dpp.enable(spark)
        spark.sql(query.replace("sales", "lc_sales")).collect()
        print("clones", len(session.connect.siblings), flush=True)
    else:
        spark.read.parquet(sales).createOrReplaceTempView("sales")
        spark.sql(query).collect()
    spark.stop()
    print("READY", flush=True)
    sys.stdin.readline()      # the server is stopped meanwhile
""").format(query=QUERY, catalog=_CATALOG_SALES)


def test_client_exits_at_once_when_the_server_stopped_first(connect_server, data, tmp_path):
    """A job that stopped its session, then the server goes away: the client process exits
    within the bound, with dpp as without it (a clone left open would call the dead server
    from its exit hook, with retries lasting minutes). Runs last: it stops the server."""
    script = tmp_path / "job.py"
    script.write_text(_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("SPARK_REMOTE", None)
    procs = {}
    for with_dpp in ("0", "1"):
        p = subprocess.Popen([sys.executable, str(script), connect_server.url,
                              str(data["sales"]), str(data["days"]), with_dpp],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env)
        lines = []
        while True:
            line = p.stdout.readline()
            lines.append(line)
            if not line or line.startswith("READY"):
                break
        assert lines[-1].startswith("READY"), lines
        if with_dpp == "1":
            assert any(ln.startswith("clones ") and ln.split()[1] != "0" for ln in lines), lines
        procs[with_dpp] = p
    connect_server.stop()
    try:
        for with_dpp, p in procs.items():
            t0 = time.monotonic()
            p.stdin.write("go\n")
            p.stdin.flush()
            try:
                p.wait(timeout=EXIT_BOUND)
            except subprocess.TimeoutExpired:
                pytest.fail(f"client (dpp={with_dpp}) still running {EXIT_BOUND:g} s after "
                            f"its last line")
            assert time.monotonic() - t0 < EXIT_BOUND
            assert p.returncode == 0, (with_dpp, p.returncode)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
