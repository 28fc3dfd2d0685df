"""A Connect client's own session settings govern dpp's work for that session.

Two client sessions of one ``dpp connect-server`` at once, with settings that differ from each
other and from the server's defaults (the server runs in ``America/Los_Angeles``): one in UTC,
one in ``Asia/Kolkata`` with ``ignoreMissingFiles`` and ``caseSensitive`` on. Facts are
partitioned by a TIMESTAMP (and a DATE) column whose folders hold wall-clock texts; the
dimension's keys are of another type, computed from strings. Each fact is read three ways: a
path relation (``spark.read.parquet`` in the client session), a declared table
(``spark.dpp.tables.*``, read as ``global_temp.NAME``) and a catalog table. Every query's rows
are compared with Spark's on the same client session with dpp and every dynamic pruning off
(for a declared table: ``spark.read.parquet`` of its folder, which it must read exactly as),
and where it should prune, the server's report says it pruned.

The filter cache is keyed by every setting that changes a build side's rows: a dimension
written without Spark's calendar metadata (pyarrow) holds a date of the year 1000, which
``spark.sql.parquet.datetimeRebaseModeInRead`` reads as two different days (LEGACY rebases
it from the Julian calendar); a filter one session cached must not prune the other's.
"""
from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

import pyarrow as pa
import pytest

from tests.conftest import make_partitioned_table, write_parquet
from tests.connect_server import DppConnectServer, client

pytestmark = pytest.mark.connect

SERVER_TZ = "America/Los_Angeles"
PRUNING_OFF = {
    "spark.dpp.enabled": "false",
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false",
}
# wall-clock folder texts of the timestamp fact: several readings close to midnight in UTC,
# in Kolkata (+05:30) and in Los Angeles, so that a reading in the wrong zone lands elsewhere
TS_TEXTS = ["2024-01-01 00:00:00", "2024-01-01 05:30:00", "2024-01-01 08:00:00",
            "2024-01-01 13:30:00", "2024-01-01 18:30:00", "2024-01-02 00:00:00",
            "2024-01-02 05:30:00", "2024-01-02 08:00:00", "2024-01-03 00:00:00",
            "2024-01-03 05:30:00"]
DAYS = ["2023-12-31", "2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
# year-1000 days around the Julian/Gregorian shift (6 days then) for the rebase case
OLD_DAYS = [dt.date(1000, 1, 1) + dt.timedelta(days=i) for i in range(-8, 9)]


def _esc(text: str) -> str:
    return text.replace(":", "%3A")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("session-conf-data")
    make_partitioned_table(root / "ev", {(("ts", _esc(t)),): {
        "v": [i * 10, i * 10 + 1], "k": [i, i]} for i, t in enumerate(TS_TEXTS)})
    make_partitioned_table(root / "ed", {(("d", day),): {
        "v": [i * 10, i * 10 + 1]} for i, day in enumerate(DAYS)})
    make_partitioned_table(root / "old", {(("d", day.isoformat()),): {
        "v": [i]} for i, day in enumerate(OLD_DAYS)})
    # the dimension: keys as strings (a timestamp text, a day text), a tag to filter by
    write_parquet(root / "dims" / "part-0.parquet", {
        "s": ["2024-01-01 05:30:00", "2024-01-02 00:00:00", "2024-01-03 05:30:00",
              "2024-01-01 13:30:00"],
        "day": ["2024-01-01", "2024-01-02", "2024-01-03", "2023-12-31"],
        "tag": ["x", "x", "y", "y"]})
    # written by pyarrow: no Spark calendar metadata, so the session's rebase mode decides
    write_parquet(root / "olddim" / "part-0.parquet",
                  {"od": [dt.date(1000, 1, 1)], "tag": ["x"]},
                  schema=pa.schema([("od", pa.date32()), ("tag", pa.string())]))
    # folders a test changes after the server declared them
    for name in ("drift", "mine"):
        make_partitioned_table(root / name, {(("p", str(i)),): {"v": [i]} for i in (1, 2)})
    return {"root": root, "ev": root / "ev", "ed": root / "ed", "old": root / "old",
            "dims": root / "dims", "olddim": root / "olddim", "drift": root / "drift",
            "mine": root / "mine"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data: dict[str, Path]
           ) -> Iterator[DppConnectServer]:
    srv = DppConnectServer(tmp_path_factory.mktemp("session-conf-server"), conf={
        "spark.sql.session.timeZone": SERVER_TZ,
        "spark.dpp.tables.ev_decl": str(data["ev"]),
        "spark.dpp.tables.ed_decl": str(data["ed"]),
        "spark.dpp.tables.drift_decl": str(data["drift"]),
        "spark.dpp.tables.mine_decl": str(data["mine"]),
        "spark.dpp.waitTimeout": "30s",
    })
    srv.start(timeout=300.0)
    try:
        yield srv
    finally:
        srv.stop()


SESSION_SETTINGS = {
    "utc": {"spark.sql.session.timeZone": "UTC"},
    "ist": {"spark.sql.session.timeZone": "Asia/Kolkata",
            "spark.sql.files.ignoreMissingFiles": "true",
            "spark.sql.caseSensitive": "true"},
}


def _session(server: DppConnectServer, data: dict[str, Path], name: str) -> Any:
    s = client(server.url)
    for k, v in SESSION_SETTINGS[name].items():
        s.conf.set(k, v)
    s.conf.set("spark.dpp.report.path", str(Path(server.workdir) / f"reports-{name}.jsonl"))
    s.conf.set("spark.dpp.filterCache.enabled", "true")
    for t in ("ev", "ed", "old"):
        s.read.parquet(str(data[t])).createOrReplaceTempView(t)
    for t in ("dims", "olddim"):
        s.read.parquet(str(data[t])).createOrReplaceTempView(t)
    return s


@pytest.fixture(scope="module")
def sessions(server: DppConnectServer, data: dict[str, Path]) -> Iterator[dict[str, Any]]:
    made = {name: _session(server, data, name) for name in SESSION_SETTINGS}
    # the catalog tables (the server's catalog is every session's), partitions recovered
    s = made["utc"]
    s.sql(f"CREATE TABLE cat_ev (v BIGINT, k BIGINT, ts TIMESTAMP) USING parquet "
          f"PARTITIONED BY (ts) LOCATION '{data['ev']}'")
    s.sql("ALTER TABLE cat_ev RECOVER PARTITIONS")
    s.sql(f"CREATE TABLE cat_ed (v BIGINT, d DATE) USING parquet "
          f"PARTITIONED BY (d) LOCATION '{data['ed']}'")
    s.sql("ALTER TABLE cat_ed RECOVER PARTITIONS")
    try:
        yield made
    finally:
        for sess in made.values():
            sess.stop()


# ---------------------------------------------------------------------- helpers

class _Conf:
    """Settings on a session for a block, restored afterwards."""

    def __init__(self, spark: Any, settings: Mapping[str, str]) -> None:
        self.spark, self.settings = spark, dict(settings)
        self.saved: dict[str, Optional[str]] = {}

    def __enter__(self) -> None:
        for k, v in self.settings.items():
            self.saved[k] = self.spark.conf.get(k, None)
            self.spark.conf.set(k, v)

    def __exit__(self, *exc: Any) -> None:
        for k, v in self.saved.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


def _rows(spark: Any, query: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=repr)


def _report_path(spark: Any) -> Path:
    return Path(spark.conf.get("spark.dpp.report.path"))


def _lines(spark: Any) -> int:
    try:
        return len(_report_path(spark).read_text().splitlines())
    except OSError:
        return 0


def _reports(spark: Any, since: int) -> list[dict]:
    try:
        lines = _report_path(spark).read_text().splitlines()[since:]
    except OSError:
        return []
    return [r for r in map(json.loads, filter(str.strip, lines))
            if (r.get("connect_session") or {}).get("session_id") == spark.session_id]


def _summary(reports: list[dict]) -> str:
    out = []
    for r in reports:
        for t in r["tables"]:
            out.append(f"{t['table']}: {t['pruning']} {t['partitions_kept']}/"
                       f"{t['partitions_total']} ({t.get('reason')})")
        for f in r["filters"]:
            out.append(f"filter {f['filter_id']}: {f['outcome']} cache_hit={f['cache_hit']} "
                       f"({f.get('reason')})")
        out.extend(f"note: {n}" for n in r.get("analysis_notes", []))
        if r.get("error"):
            out.append(f"error: {r['error']}")
    return "; ".join(out) or "no report"


def _fact_query(kind: str, fact: str, query: str) -> tuple[str, str]:
    """``query`` with ``{f}`` naming the fact as dpp's run reads it, and as the reference."""
    run = {"path": fact, "declared": f"global_temp.{fact}_decl", "catalog": f"cat_{fact}"}[kind]
    ref = {"path": fact, "declared": f"{fact}_ref", "catalog": f"cat_{fact}"}[kind]
    return query.format(f=run), query.format(f=ref)


def check(spark: Any, data: dict[str, Path], kind: str, fact: str, query: str, *,
          kept: Optional[int] = None, prune: bool = True,
          settings: Mapping[str, str] = {}) -> list[tuple]:
    """``query``'s rows through the server's dpp equal Spark's on the same session with
    every pruning off; with ``prune``, the report says the fact was pruned (to ``kept``)."""
    q, ref = _fact_query(kind, fact, query)
    with _Conf(spark, settings):
        with _Conf(spark, PRUNING_OFF):
            # a declared table reads exactly what spark.read.parquet(folder) reads
            spark.read.parquet(str(data[fact])).createOrReplaceTempView(f"{fact}_ref")
            expected = _rows(spark, ref)
        since = _lines(spark)
        got = _rows(spark, q)
        reports = _reports(spark, since)
        deadline = time.monotonic() + 10.0
        while prune and not reports and time.monotonic() < deadline:
            time.sleep(0.2)
            reports = _reports(spark, since)
    where = f"[{kind} {fact}; {spark.conf.get('spark.sql.session.timeZone')}] {q}"
    assert expected, f"{where}: the case must have rows to compare"
    assert got == expected, (f"{where}: dpp returned {got}, Spark returns {expected}; "
                             f"{_summary(reports)}")
    if prune:
        tables = [t for r in reports for t in r["tables"]]
        assert tables, f"{where}: no report: {_summary(reports)}"
        pruned = [t for t in tables if t["pruning"] == "applied"
                  and t["partitions_kept"] < t["partitions_total"]]
        assert pruned, f"{where}: expected pruning: {_summary(reports)}"
        if kept is not None:
            assert all(t["partitions_kept"] == kept for t in pruned), (
                f"{where}: expected {kept} partitions kept: {_summary(reports)}")
    return got


KINDS = ("path", "declared", "catalog")

# a timestamp partition column, the dimension's key a timestamp computed from a string
Q_TS = ("SELECT f.v, f.ts FROM {f} f JOIN dims d ON f.ts = to_timestamp(d.s) "
        "WHERE d.tag = 'x'")
# a timestamp partition column, the key a DATE computed from a string (Spark casts the date
# to a timestamp at midnight in the session zone)
Q_TS_DATE = ("SELECT f.v, f.ts FROM {f} f JOIN dims d ON f.ts = CAST(d.day AS DATE) "
             "WHERE d.tag = 'x'")
# a DATE partition column, the key a timestamp computed from a string (Spark casts the
# partition's date to a timestamp in the session zone)
Q_DATE_TS = ("SELECT f.v, f.d FROM {f} f JOIN dims d ON f.d = to_timestamp(d.s) "
             "WHERE d.tag = 'x'")


# ---------------------------------------------------------------------- the cases

@pytest.mark.parametrize("kind", KINDS)
def test_timestamp_partitions_by_each_sessions_zone(sessions: dict[str, Any],
                                                    data: dict[str, Path], kind: str) -> None:
    """Each session reads the folders' wall-clock texts in its own zone, as Spark does; the
    same two partitions match in both (the dimension's texts are read in the same zone)."""
    for name in ("utc", "ist"):
        check(sessions[name], data, kind, "ev", Q_TS, kept=2)


@pytest.mark.parametrize("kind", KINDS)
def test_date_key_against_timestamp_partitions(sessions: dict[str, Any],
                                               data: dict[str, Path], kind: str) -> None:
    for name in ("utc", "ist"):
        check(sessions[name], data, kind, "ev", Q_TS_DATE, kept=2)


@pytest.mark.parametrize("kind", KINDS)
def test_timestamp_key_against_date_partitions(sessions: dict[str, Any],
                                               data: dict[str, Path], kind: str) -> None:
    for name in ("utc", "ist"):
        check(sessions[name], data, kind, "ed", Q_DATE_TS)


def test_two_sessions_at_once(sessions: dict[str, Any], data: dict[str, Path]) -> None:
    """Both sessions' queries planned and run at the same time on the one server."""
    def run(name: str) -> None:   # one query at a time per session (its reports are its)
        for kind in KINDS:
            for fact, q, kept in (("ev", Q_TS, 2), ("ev", Q_TS_DATE, 2)):
                check(sessions[name], data, kind, fact, q, kept=kept)

    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        for f in [pool.submit(run, name) for name in ("utc", "ist")]:
            f.result()


@pytest.mark.parametrize("kind", ("path", "declared"))
def test_partition_type_inference_off(sessions: dict[str, Any], data: dict[str, Path],
                                      kind: str) -> None:
    """With partition type inference off, Spark reads the path table's ``ts`` as a string:
    rows as Spark's."""
    check(sessions["utc"], data, kind, "ev",
          "SELECT f.v, f.ts FROM {f} f JOIN dims d ON f.ts = d.s WHERE d.tag = 'x'",
          prune=kind == "path",
          settings={"spark.sql.sources.partitionColumnTypeInference.enabled": "false"})


def test_a_declared_table_reads_the_folder_as_it_is_at_each_query(
        sessions: dict[str, Any], data: dict[str, Path]) -> None:
    """The folder changes after the server declared it (a column added, a partition value
    that makes Spark type ``p`` as a string): a client reads exactly what
    ``spark.read.parquet`` reads at that moment, names and types included, pruned or not."""
    spark = sessions["utc"]
    q = "SELECT * FROM global_temp.drift_decl"
    assert _rows(spark, q) == [(1, 1), (2, 2)]
    write_parquet(data["drift"] / "p=x" / "part-0.parquet", {"v": [3], "w": ["new"]})
    (data["drift"] / "p=1" / "part-00000.parquet").unlink()
    with _Conf(spark, {"spark.sql.parquet.mergeSchema": "true"}):
        ref = spark.read.parquet(str(data["drift"]))
        got = spark.sql(q)
        assert got.schema == ref.schema
        assert got.schema["p"].dataType.simpleString() == "string"
        expected = sorted(map(tuple, ref.collect()), key=repr)
        assert sorted(map(tuple, got.collect()), key=repr) == expected
        assert len(expected) == 2
        join = ("SELECT f.v, f.p FROM {f} f JOIN dims d ON f.p = d.tag "
                "WHERE d.day > '2000-01-01'")
        spark.read.parquet(str(data["drift"])).createOrReplaceTempView("drift_ref")
        assert _rows(spark, join.format(f="global_temp.drift_decl")) == \
            _rows(spark, join.format(f="drift_ref"))


def test_a_declared_name_a_client_redefines_is_the_clients_view(
        sessions: dict[str, Any], data: dict[str, Path]) -> None:
    """dpp reads only the view it declared: a global view redefined under the same name is
    Spark's, as written."""
    spark = sessions["utc"]
    assert _rows(spark, "SELECT v FROM global_temp.mine_decl") == [(1,), (2,)]
    spark.sql("CREATE OR REPLACE GLOBAL TEMP VIEW mine_decl AS SELECT 7 AS v")
    assert _rows(spark, "SELECT * FROM global_temp.mine_decl") == [(7,)]
    assert _rows(sessions["ist"], "SELECT * FROM global_temp.mine_decl") == [(7,)]


def test_case_sensitive_session_keeps_its_names(sessions: dict[str, Any],
                                                data: dict[str, Path]) -> None:
    """The case-sensitive session refuses a column written in another case, as Spark does,
    while the other session's same query runs."""
    q = "SELECT f.V FROM ev f JOIN dims d ON f.TS = to_timestamp(d.s) WHERE d.tag = 'x'"
    with pytest.raises(Exception):
        sessions["ist"].sql(q).collect()
    assert len(sessions["utc"].sql(q).collect()) == 4


def test_rebase_mode_is_each_sessions_own_and_keys_the_cache(
        sessions: dict[str, Any], data: dict[str, Path]) -> None:
    """A year-1000 date written without Spark's calendar metadata: LEGACY reads it 6 days
    off CORRECTED. Each session's build side and each session's cached filter follow its
    own mode; neither session's cached filter prunes the other's rows."""
    q = "SELECT f.v, f.d FROM {f} f JOIN olddim o ON f.d = o.od WHERE o.tag = 'x'"
    modes = {"utc": "LEGACY", "ist": "CORRECTED"}
    got = {}
    for _round in range(2):   # the second round may take the cached filters
        for name, mode in modes.items():
            got[name] = check(sessions[name], data, "path", "old", q, kept=1, settings={
                "spark.sql.parquet.datetimeRebaseModeInRead": mode})
    assert got["utc"] != got["ist"], "the two modes must read different days"
