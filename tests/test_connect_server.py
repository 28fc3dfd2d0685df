"""``dpp connect-server``: plain Spark Connect clients pruned by the hook inside the server.

One server for the module, started as a user starts it (the ``dpp connect-server`` console
script, on a free loopback port). The clients are plain ``pyspark[connect]`` sessions: the
code they run never calls dpp (one test runs a client in a process that never imports it).
Two client sessions share the server: ``on`` (dpp's default, on) and ``off``
(``spark.dpp.enabled=false`` and Spark's own pruning off) — Spark's answer on the same server,
the same data. Every job shape of ``tests/test_job_shapes.py`` (SQL, DataFrames, INSERT, CTAS,
``saveAsTable``, views, unions, a cached dimension, IN subqueries) and a CTE run on a path
table (``spark.read.parquet`` of a folder) and a catalog table over the same folder, in UTC and
America/Los_Angeles (a DATE partition column), and the cases of Spark's DPP suite that
``tests/test_hook_coverage.py`` ports (expression keys, coerced key types; ANSI on and off): same
rows, and the server's report lines name the client's Connect session and show the fact
pruned as on a classic session. ``off`` gets no report at all.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.runtime.report import JobReport
from tests.conftest import spark_conf
from tests.connect_server import DppConnectServer, _free_port, client
from tests.test_hook_coverage import CASES as COVERAGE
from tests.test_hook_coverage import create_catalog_tables, write_coverage_data
from tests.test_job_shapes import FEB, OFF, SHAPES, write_shape_data

pytestmark = pytest.mark.connect   # every test here starts or uses a Connect server process
# every job shape and peer case runs, in a sample of its table kinds, time zones and forms
# (tests/conftest.py; DPP_ALL_VARIANTS=1 runs them all)
SAMPLE_VARIANTS = 16
SAMPLE_CASES = ("shape", "case")

ROOT = Path(__file__).resolve().parent.parent
CLIENT_JOB = ROOT / "tests" / "jobs" / "connect_client_job.py"


def _cte(spark: Any, data: dict[str, Any], fact: str) -> list[Any]:
    return spark.sql(f"WITH feb AS (SELECT day FROM parquet.`{data['cal']}` WHERE month = 2) "
                     f"SELECT f.amount, f.item, f.day FROM {fact} f JOIN feb "
                     f"ON f.day = feb.day").collect()


CONNECT_SHAPES: dict[str, Callable[[Any, dict[str, Any], str], list[Any]]] = {
    **SHAPES, "cte": _cte}


# ---------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DppConnectServer]:
    workdir = tmp_path_factory.mktemp("dpp-connect-server")
    data_root = workdir / "data"
    data_root.mkdir()
    fact, _cal = write_shape_data(data_root)
    for sid in range(24):   # integer partitions: what the kept-partition index reads
        folder = data_root / "by_store" / f"sid={sid}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([sid, 2 * sid], pa.int64())}),
                       folder / "part-0.parquet")
    (data_root / "stores").mkdir()
    pq.write_table(pa.table({"store": pa.array(range(24), pa.int32()),
                             "pick": pa.array([int(i % 7 == 3) for i in range(24)], pa.int32())}),
                   data_root / "stores" / "part-0.parquet")
    ui_port = _free_port()
    srv = DppConnectServer(workdir, conf={"spark.dpp.waitTimeout": "120s",
                                          "spark.dpp.report.path": str(workdir / "reports.jsonl"),
                                          "spark.dpp.tables.js_declared": str(fact),
                                          "spark.dpp.tables.js_by_store":
                                              str(data_root / "by_store"),
                                          # the Spark UI, as a client's user reads it
                                          "spark.ui.enabled": "true",
                                          "spark.ui.port": str(ui_port),
                                          "spark.port.maxRetries": "0"})
    srv.data_root = data_root  # type: ignore[attr-defined]
    srv.ui_port = ui_port  # type: ignore[attr-defined]
    srv.start(timeout=300.0)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def data(connect_server: DppConnectServer) -> Iterator[dict[str, Any]]:
    root: Path = connect_server.data_root  # type: ignore[attr-defined]
    reports = connect_server.workdir / "reports.jsonl"
    on, off = client(connect_server.url), client(connect_server.url)
    for k, v in OFF.items():
        off.conf.set(k, v)
    on.sql("DROP TABLE IF EXISTS js_events")
    on.sql(f"CREATE TABLE js_events (amount INT, item INT, day DATE) USING parquet "
           f"PARTITIONED BY (day) LOCATION '{root / 'events'}'")
    on.sql("ALTER TABLE js_events RECOVER PARTITIONS")
    for s in (on, off):
        s.read.parquet(str(root / "events")).createOrReplaceTempView("js_fact")
    try:
        yield {"fact": root / "events", "cal": str(root / "calendar"), "on": on, "off": off,
               "reports": reports}
    finally:
        for s in (on, off):
            try:
                s.stop()
            except Exception:
                pass


def _reports(path: Path) -> list[JobReport]:
    if not path.exists():
        return []
    return [JobReport.from_json(line) for line in path.read_text().splitlines() if line.strip()]


def _of(reports: list[JobReport], spark: Any) -> list[JobReport]:
    return [r for r in reports
            if (r.connect_session or {}).get("session_id") == spark.session_id]


def _assert_fact_pruned(new: list[JobReport], what: str) -> None:
    applied = [t for r in new for t in r.tables if t.pruning == "applied"]
    assert applied, f"{what}: nothing pruned: {[r.tables for r in new]}"
    for t in applied:
        assert t.partitions_kept <= len(FEB), t
        assert t.partitions_kept < t.partitions_total, t
        assert t.folders_listed <= t.partitions_kept + 1, t


def _rows(rows: list[Any]) -> list[tuple]:
    return sorted(map(tuple, rows), key=repr)


# ---------------------------------------------------------------------------- shapes

@pytest.mark.parametrize("tz", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("fact", ["js_fact", "js_events"])
@pytest.mark.parametrize("shape", sorted(CONNECT_SHAPES))
def test_client_job_is_pruned_by_the_server(data: dict[str, Any], shape: str, fact: str,
                                            tz: str) -> None:
    run = CONNECT_SHAPES[shape]
    on, off = data["on"], data["off"]
    with spark_conf(on, {"spark.sql.session.timeZone": tz}), \
            spark_conf(off, {"spark.sql.session.timeZone": tz}):
        expected = _rows(run(off, data, fact))
        before = len(_reports(data["reports"]))
        got = _rows(run(on, data, fact))
    assert got == expected
    assert expected, f"{shape}: no rows, the comparison would prove nothing"
    new = _reports(data["reports"])[before:]
    _assert_fact_pruned(_of(new, on), f"{shape} on {fact} ({tz})")
    assert not _of(_reports(data["reports"]), off), "a session with dpp off got a report"


def test_two_sessions_at_once_each_by_its_own_settings(data: dict[str, Any]) -> None:
    """``on`` and ``off`` run the same jobs at the same time: the server answers each plan by
    its own session's settings (one prunes, the other is Spark's own plan)."""
    on, off = data["on"], data["off"]
    shapes = ["sql_join", "dataframe_join", "in_subquery", "cte"]
    before = len(_reports(data["reports"]))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for shape in shapes:
            run = CONNECT_SHAPES[shape]
            a = pool.submit(run, on, data, "js_events")
            b = pool.submit(run, off, data, "js_events")
            assert _rows(a.result()) == _rows(b.result()), shape
    new = _reports(data["reports"])[before:]
    assert len(_of(new, on)) >= len(shapes)
    _assert_fact_pruned(_of(new, on), "concurrent on-session")
    assert not _of(new, off)


def test_declared_table_is_a_global_view_every_session_reads(data: dict[str, Any]) -> None:
    on, off = data["on"], data["off"]
    q = (f"SELECT f.amount, f.day FROM global_temp.js_declared f JOIN "
         f"parquet.`{data['cal']}` c ON f.day = c.day WHERE c.month = 2")
    expected = _rows(off.sql(q).collect())
    before = len(_reports(data["reports"]))
    assert _rows(on.sql(q).collect()) == expected and expected
    new = _of(_reports(data["reports"])[before:], on)
    _assert_fact_pruned(new, "declared table")
    assert any(t.table == "js_declared" for r in new for t in r.tables)


def test_a_declared_folder_of_many_partitions_is_read_through_the_kept_partition_index(
        data: dict[str, Any], capsys: pytest.CaptureFixture) -> None:
    """With ``spark.dpp.declaredTables.keptListing`` at or below its partition count, a
    declared view reads the folder through the kept-partition index, as a classic session
    does: the same rows as Spark's reader, and the split loader judges the folders the index
    knows by name without listing one (with the setting off: Spark's reader, listed)."""
    on, off = data["on"], data["off"]
    stores = data["fact"].parent / "stores"
    q = (f"SELECT f.sid, count(*) AS n, sum(f.amount) AS s FROM global_temp.js_by_store f "
         f"JOIN parquet.`{stores}` d ON f.sid = d.store WHERE d.pick = 1 "
         f"GROUP BY f.sid ORDER BY f.sid")
    expected = _rows(off.sql(q).collect())
    assert sorted(r[0] for r in expected) == [3, 10, 17]
    listed = {}
    for setting in ("0", "off"):
        with spark_conf(on, {"spark.dpp.declaredTables.keptListing": setting}):
            before = len(_reports(data["reports"]))
            assert _rows(on.sql(q).collect()) == expected
            new = _of(_reports(data["reports"])[before:], on)
        tables = [t for r in new for t in r.tables if t.table == "js_by_store"]
        assert tables and all(t.partitions_kept == 3 and t.partitions_total == 24
                              for t in tables), tables
        listed[setting] = sum(t.list_calls for t in tables)
    assert listed["0"] == 0 and listed["off"] > 0, listed
    # a partition added between two queries is read by the next one (the index is opened
    # in each query's analysis)
    folder = data["fact"].parent / "by_store" / "sid=31"
    folder.mkdir()
    pq.write_table(pa.table({"amount": pa.array([5], pa.int64())}), folder / "part-0.parquet")
    stores2 = data["fact"].parent / "stores_late"
    stores2.mkdir()
    pq.write_table(pa.table({"store": pa.array([3, 31], pa.int32()),
                             "pick": pa.array([1, 1], pa.int32())}), stores2 / "part-0.parquet")
    late = q.replace(str(stores), str(stores2))
    with spark_conf(on, {"spark.dpp.declaredTables.keptListing": "0"}):
        got = _rows(on.sql(late).collect())
    assert got == _rows(off.sql(late).collect())
    assert (31, 1, 5) in got and len(got) == 2
    # a session with dpp off reads the view by its text: Spark's reader, nothing of dpp's
    capsys.readouterr()
    for s in (on, off):
        with spark_conf(s, {"spark.dpp.declaredTables.keptListing": "0"}):
            s.sql("SELECT * FROM global_temp.js_by_store").explain()
    shown_on, shown_off = capsys.readouterr().out.split("== Physical Plan ==")[1:]
    assert "FolderIndex" in shown_on and "FolderIndex" not in shown_off, (shown_on, shown_off)


def test_reports_name_the_connect_session(data: dict[str, Any]) -> None:
    on = data["on"]
    before = len(_reports(data["reports"]))
    CONNECT_SHAPES["sql_join"](on, data, "js_events")
    new = _of(_reports(data["reports"])[before:], on)
    assert new, "no report names the session"
    assert all(r.kind == "plan" and r.connect_session["operation"] for r in new)


def test_explain_on_a_client_starts_nothing(data: dict[str, Any]) -> None:
    """A Connect explain is optimized outside an executed operation: planned, no build side
    started and no report; the same DataFrame executed afterwards is pruned."""
    on, off = data["on"], data["off"]
    df = on.table("js_events").join(on.read.parquet(data["cal"]).where("month = 2"), "day")
    before = len(_reports(data["reports"]))
    df.explain()
    time.sleep(1.0)
    assert _reports(data["reports"])[before:] == []
    ref = off.table("js_events").join(off.read.parquet(data["cal"]).where("month = 2"), "day")
    assert _rows(df.collect()) == _rows(ref.collect())
    _assert_fact_pruned(_of(_reports(data["reports"])[before:], on), "after explain")


def test_a_clients_explain_shows_the_relations_dpp_prunes(
        data: dict[str, Any], capsys: pytest.CaptureFixture) -> None:
    """Without server access, Spark's own ``explain()`` on the client shows dpp's file index
    on each fact scan dpp prunes and what it prunes it by, ahead of the path so Spark's
    abbreviation of a long Location keeps it (``Location: DppFileIndex(1 paths)[dpp: day IN
    calendar.day | file:…]``); with dpp off, Spark's own index and nothing of dpp."""
    for fact in ("js_events", "js_fact"):
        texts = {}
        for side in ("on", "off"):
            s = data[side]
            s.table(fact).join(s.read.parquet(data["cal"]).where("month = 2"), "day").explain()
            texts[side] = capsys.readouterr().out
        assert "Location: DppFileIndex(1 paths)[dpp: day IN calendar.day | file:" \
            in texts["on"], texts["on"]
        assert "DppFileIndex" not in texts["off"] and "dpp:" not in texts["off"], texts["off"]


def _ui(connect_server: DppConnectServer, path: str) -> Any:
    port = connect_server.ui_port  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/applications{path}",
                                timeout=30) as r:
        return json.load(r)


def test_the_sql_tab_shows_what_dpp_prunes_by_and_what_it_kept(
        connect_server: DppConnectServer, data: dict[str, Any]) -> None:
    """What the Spark UI's SQL tab shows a client's user (read through the UI's REST API, the
    data the page renders): the query's plan names dpp's index and what it prunes the fact
    by, and the pruned scan's ``number of partitions read`` is what the server's report says
    dpp kept, fewer than the table holds."""
    on = data["on"]
    before = len(_reports(data["reports"]))
    q = on.table("js_events").join(on.read.parquet(data["cal"]).where("month = 2"), "day")
    assert q.collect()
    applied = [t for r in _of(_reports(data["reports"])[before:], on) for t in r.tables
               if t.pruning == "applied"]
    assert applied, "nothing pruned"
    kept, total = applied[-1].partitions_kept, applied[-1].partitions_total
    assert kept < total
    app = _ui(connect_server, "")[0]["id"]
    deadline = time.monotonic() + 30.0
    while True:   # the UI's store takes the execution's end from Spark's listener bus
        executions = [e for e in _ui(connect_server, f"/{app}/sql?details=true"
                                                     "&planDescription=true&length=100000")
                      if e["status"] == "COMPLETED"
                      and "dpp: day IN calendar.day | " in e.get("planDescription", "")]
        if executions or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert executions, "no execution shows dpp's index in the SQL tab"
    last = max(executions, key=lambda e: e["id"])
    scans = [n for n in last["nodes"] if n["nodeName"].startswith("Scan parquet")
             and "js_events" in n["nodeName"]]
    assert scans, [n["nodeName"] for n in last["nodes"]]
    read = {m["name"]: m["value"] for m in scans[0]["metrics"]}
    assert read["number of partitions read"].replace(",", "") == str(kept), read


def test_client_enable_leaves_pruning_to_the_server(connect_server: DppConnectServer,
                                                   data: dict[str, Any]) -> None:
    """``dpp.enable`` on a client of a dpp server keeps the client-side analysis off: the
    query is pruned once, by the server, and the client's report says so."""
    import dpp
    from dpp.session import SERVER_PRUNES

    c = client(connect_server.url)
    try:
        session = dpp.enable(c)
        assert session.hook_note == SERVER_PRUNES
        assert session.connect_frames is None
        q = (f"SELECT f.amount, f.day FROM js_events f JOIN parquet.`{data['cal']}` c "
             f"ON f.day = c.day WHERE c.month = 2")
        before = len(_reports(data["reports"]))
        got = _rows(c.sql(q).collect())
        assert got == _rows(data["off"].sql(q).collect()) and got
        assert session.last_report is not None
        assert SERVER_PRUNES in session.last_report.analysis_notes
        assert not any(t.pruning == "applied" for t in session.last_report.tables)
        new = _of(_reports(data["reports"])[before:], c)
        _assert_fact_pruned(new, "client with dpp.enable")
        dpp.disable(c)
    finally:
        c.stop()


def test_a_client_process_that_never_imports_dpp(connect_server: DppConnectServer,
                                                 data: dict[str, Any],
                                                 tmp_path: Path) -> None:
    """A job run by the venv's Python, as a user runs it: SQL star join, DataFrame join and a
    write ending in ``saveAsTable``, with nothing of dpp in the process."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "PYSPARK_PYTHON", "PYTHONPATH")}
    out = subprocess.run([sys.executable, str(CLIENT_JOB), connect_server.url, str(data["fact"]),
                          data["cal"]], capture_output=True, text=True, timeout=600, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["dpp_imported"] is False
    off = data["off"]
    q = (f"SELECT f.amount, f.item, f.day FROM parquet.`{data['fact']}` f JOIN "
         f"parquet.`{data['cal']}` c ON f.day = c.day WHERE c.month = 2")
    expected = [list(r) for r in _rows(off.sql(q).collect())]
    for name in ("sql", "dataframe", "saved"):
        assert sorted(result[name], key=repr) == sorted(
            [[str(x) for x in row] for row in expected], key=repr), name
    mine = [r for r in _reports(data["reports"])
            if (r.connect_session or {}).get("session_id") == result["session_id"]]
    assert len(mine) >= 3, mine
    _assert_fact_pruned(mine, "client process")


def test_sigterm_stops_the_server_and_its_jvm(tmp_path: Path) -> None:
    srv = DppConnectServer(tmp_path, memory="512m").start(timeout=300.0)
    try:
        jvms = srv.jvm_pids()
        assert jvms, "no driver JVM found under the server process"
        assert srv.proc is not None
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=120) == 0
        deadline = time.monotonic() + 60
        alive = jvms
        while alive and time.monotonic() < deadline:
            alive = [p for p in jvms if Path(f"/proc/{p}").exists()
                     and "Z" not in Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1][:3]]
            time.sleep(0.5)
        assert not alive, f"driver JVM {alive} outlived the server"
    finally:
        srv.stop()


def test_a_server_stopped_mid_query_is_an_error_at_the_client(
        data: dict[str, Any], tmp_path: Path) -> None:
    """SIGTERM while a pruned star join runs: the client's action raises, it never returns
    rows (a half-finished query must not look like an answer)."""
    srv = DppConnectServer(tmp_path, memory="768m").start(timeout=300.0)
    c = client(srv.url)
    try:
        f = c.read.parquet(str(data["fact"]))
        cal = c.read.parquet(data["cal"]).where("month = 2")
        slow = (f.join(cal, f.day == cal.day)
                .crossJoin(c.range(5_000_000_000).selectExpr("id % 2 AS z"))
                .groupBy().count())
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(slow.collect)
            time.sleep(8.0)
            assert not running.done(), running.result()
            assert srv.proc is not None
            srv.proc.send_signal(signal.SIGTERM)
            with pytest.raises(Exception) as lost:
                running.result(timeout=180)
        assert "CANCELLED" in str(lost.value) or "UNAVAILABLE" in str(lost.value), lost.value
        assert srv.proc.wait(timeout=120) == 0
    finally:
        srv.stop()


def test_bad_setting_is_an_error_naming_it(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "dpp"
    out = subprocess.run([str(script), "connect-server", "--port", "1",
                          "--conf", "spark.dpp.waitTimeout=soon"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2
    assert "spark.dpp.waitTimeout" in out.stderr and "soon" in out.stderr


def test_a_sessions_own_report_path(connect_server: DppConnectServer, data: dict[str, Any],
                                    tmp_path: Path) -> None:
    """``spark.dpp.*`` set by a client applies to its session only: here its report file."""
    c = client(connect_server.url)
    try:
        own = tmp_path / "mine.jsonl"
        c.conf.set("spark.dpp.report.path", str(own))
        c.read.parquet(str(data["fact"])).createOrReplaceTempView("js_fact")
        before = len(_reports(data["reports"]))
        CONNECT_SHAPES["sql_join"](c, data, "js_fact")
        _assert_fact_pruned(_of(_reports(own), c), "own report path")
        assert not _of(_reports(data["reports"])[before:], c)
    finally:
        c.stop()


# ---------------------------------------------------------------------------- Spark's DPP cases

@pytest.fixture(scope="module")
def coverage(connect_server: DppConnectServer, data: dict[str, Any]) -> dict[str, Any]:
    """``tests/test_hook_coverage.py``'s cases (Spark's DPP suite: expression keys, a string
    key against integer folders) on the server: path facts read by each session, catalog
    facts made by a client."""
    folders = write_coverage_data(connect_server.workdir / "coverage")
    create_catalog_tables(data["on"], folders)
    for s in (data["on"], data["off"]):
        for name in ("sales", "ab", "stores", "dims"):
            s.read.parquet(str(folders[name])).createOrReplaceTempView(f"cov_{name}")
    return data


@pytest.mark.parametrize("ansi", ["true", "false"])
@pytest.mark.parametrize("form", ["sql", "dataframe"])
@pytest.mark.parametrize("kind", ["path", "catalog"])
@pytest.mark.parametrize("case", sorted(COVERAGE))
def test_sparks_dpp_cases_from_a_client(coverage: dict[str, Any], case: str, kind: str,
                                        form: str, ansi: str) -> None:
    job, fact, can_match = COVERAGE[case]
    fact = fact if kind == "path" else f"{fact}_cat"
    on, off = coverage["on"], coverage["off"]
    with spark_conf(on, {"spark.sql.ansi.enabled": ansi}), \
            spark_conf(off, {"spark.sql.ansi.enabled": ansi}):
        expected = _rows(job(off, fact, form).collect())
        before = len(_reports(coverage["reports"]))
        got = _rows(job(on, fact, form).collect())
    assert got == expected and expected
    applied = [t for r in _of(_reports(coverage["reports"])[before:], on) for t in r.tables
               if t.pruning == "applied"]
    assert applied, f"{case} on {fact}: not pruned"
    for t in applied:
        assert can_match == t.partitions_kept < t.partitions_total, t


# ---------------------------------------------------------------------------- hostile shapes

def test_partitions_added_between_two_actions_are_read(connect_server: DppConnectServer,
                                                        data: dict[str, Any]) -> None:
    """A client adds a partition to a catalog table between two queries of another session:
    the second query reads it (the server's hook holds no stale partition list)."""
    on, off = data["on"], data["off"]
    on.sql("DROP TABLE IF EXISTS cs_grow")
    on.sql("CREATE TABLE cs_grow (amount INT, day DATE) USING parquet PARTITIONED BY (day)")
    on.sql("INSERT INTO cs_grow VALUES (1, DATE'2024-02-01'), (2, DATE'2024-02-02')")
    q = (f"SELECT g.amount, g.day FROM cs_grow g JOIN parquet.`{data['cal']}` c "
         f"ON g.day = c.day WHERE c.month = 2")
    try:
        assert _rows(on.sql(q).collect()) == _rows(off.sql(q).collect())
        off.sql("INSERT INTO cs_grow VALUES (3, DATE'2024-02-03'), (4, DATE'2024-01-25')")
        got, expected = _rows(on.sql(q).collect()), _rows(off.sql(q).collect())
        assert got == expected and (3,) in [(r[0],) for r in got]
    finally:
        on.sql("DROP TABLE IF EXISTS cs_grow")


def test_each_sessions_own_temp_view_of_one_name(connect_server: DppConnectServer,
                                                 data: dict[str, Any], tmp_path: Path) -> None:
    """Two sessions name different folders ``js_mine`` at the same time: each query is
    pruned over its own session's view, never the other's."""
    from tests.test_job_shapes import write_shape_data

    other_fact, _ = write_shape_data(tmp_path)   # same layout, same rows, another folder
    a, b = client(connect_server.url), client(connect_server.url)
    try:
        a.read.parquet(str(data["fact"])).createOrReplaceTempView("js_mine")
        b.read.parquet(str(other_fact)).where("amount >= 100").createOrReplaceTempView("js_mine")
        q = (f"SELECT f.amount, f.day FROM js_mine f JOIN parquet.`{data['cal']}` c "
             f"ON f.day = c.day WHERE c.month = 2")
        with ThreadPoolExecutor(max_workers=2) as pool:
            ra, rb = pool.submit(lambda: a.sql(q).collect()), pool.submit(lambda: b.sql(q).collect())
            got_a, got_b = _rows(ra.result()), _rows(rb.result())
        off = data["off"]
        want_a = _rows(off.sql(q.replace("js_mine", f"parquet.`{data['fact']}`")).collect())
        want_b = _rows(off.sql(q.replace("js_mine", f"(SELECT * FROM parquet.`{other_fact}` "
                                                    f"WHERE amount >= 100)")).collect())
        assert got_a == want_a and got_b == want_b and got_a != got_b
        reports = _reports(data["reports"])
        for s, folder in ((a, data["fact"]), (b, other_fact)):
            mine = _of(reports, s)
            _assert_fact_pruned(mine, "own view")
            assert all(str(folder) in (t.location or "") for r in mine for t in r.tables
                       if t.pruning == "applied")
    finally:
        a.stop()
        b.stop()


def test_a_write_over_the_table_read_is_refused_as_by_spark(data: dict[str, Any]) -> None:
    """INSERT OVERWRITE of the catalog table the query reads: Spark refuses it with or without
    dpp, and the table keeps every row."""
    on, off = data["on"], data["off"]
    before = _rows(off.table("js_events").collect())
    write = (f"INSERT OVERWRITE TABLE js_events SELECT f.amount, f.item, f.day FROM js_events f "
             f"JOIN parquet.`{data['cal']}` c ON f.day = c.day WHERE c.month = 2")
    errors = []
    for s in (off, on):
        try:
            s.sql(write).collect()
            errors.append(None)
        except Exception as exc:   # Spark's AnalysisException, through Connect
            errors.append(type(exc).__name__)
    assert errors[0] is not None, "Spark accepted a self-overwrite: the test proves nothing"
    assert errors[1] == errors[0]
    assert _rows(off.table("js_events").collect()) == before


def test_a_sessions_bad_setting_is_reported_and_its_rows_are_sparks(
        connect_server: DppConnectServer, data: dict[str, Any]) -> None:
    """A client sets a ``spark.dpp.*`` value dpp cannot read: the server cannot fail its
    query, so it runs with Spark's plan, and a report names the key, the value and the
    session."""
    c = client(connect_server.url)
    try:
        c.conf.set("spark.dpp.waitTimeout", "soon")
        before = len(_reports(data["reports"]))
        q = (f"SELECT f.amount, f.day FROM js_events f JOIN parquet.`{data['cal']}` c "
             f"ON f.day = c.day WHERE c.month = 2")
        assert _rows(c.sql(q).collect()) == _rows(data["off"].sql(q).collect())
        mine = _of(_reports(data["reports"])[before:], c)
        assert mine and all(r.error and "spark.dpp.waitTimeout" in r.error and "soon" in r.error
                            for r in mine), mine
        assert not any(t.pruning == "applied" for r in mine for t in r.tables)
    finally:
        c.stop()
