"""Spark Connect (issue 29): dpp on a client session without a JVM never crashes, prunes, and
says once what it does without.

One real Spark Connect server (the session's plain one, ``tests/conftest.py``), real Parquet
folders written with pyarrow. Every query's rows are compared with those of a *second* client
session on the same server that has neither dpp nor Spark's own dynamic pruning (plain temp
views over the same folders), and with ``spark.dpp.enabled=false`` on the dpp session itself.
The client sessions are made with the Connect builder itself, so this module neither needs nor
disturbs the classic ``spark`` fixture's JVM (it never touches it).
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import make_partitioned_table, write_parquet
from tests.connect_server import client as _client

# every query and shape runs, in a sample of its time zones (and half the generated seeds):
# tests/conftest.py; DPP_ALL_VARIANTS=1 runs them all
SAMPLE_VARIANTS = 12
SAMPLE_CASES = ("name", "shape", "key", "conf")


SPARK_DPP_OFF = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
UTC = dt.timezone.utc


# ---------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def connect_server(plain_connect_server: Any) -> Any:
    """The session's plain Connect server (``tests/conftest.py``): this module's client
    sessions and tables are its own."""
    return plain_connect_server


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A star: ``sales`` by ``day`` (30 partitions, 2 files each), ``days`` and ``items``
    dimensions, and ``events`` by a TIMESTAMP ``hour`` around the 2024-03-10 DST change of
    America/Los_Angeles, with ``slots`` holding instants (UTC in the files)."""
    root = tmp_path_factory.mktemp("connect-data")
    sales = {(("day", str(d)),): {"item": [d % 7, (d * 3) % 7, d % 5, 6],
                                  "amount": [float(d), 1.5, 2.0 * d, 0.25]}
             for d in range(1, 31)}
    make_partitioned_table(root / "sales", sales, files_per_partition=2)
    write_parquet(root / "days" / "part-0.parquet",
                  {"d_day": list(range(1, 31)), "d_week": [(d - 1) // 7 for d in range(1, 31)],
                   "d_weekend": [d % 7 in (0, 6) for d in range(1, 31)]})
    write_parquet(root / "items" / "part-0.parquet",
                  {"i_item": list(range(7)), "i_color": ["red", "blue", "red", "green",
                                                         "blue", "red", "black"]})
    hours = [f"2024-03-10 {h:02d}%3A00%3A00" for h in range(0, 13)]
    make_partitioned_table(root / "events", {(("hour", h),): {"v": [i, i + 100]}
                                            for i, h in enumerate(hours)})
    slots = [dt.datetime(2024, 3, 10, 9, tzinfo=UTC), dt.datetime(2024, 3, 10, 10, tzinfo=UTC),
             dt.datetime(2024, 3, 10, 3, tzinfo=UTC)]
    write_parquet(root / "slots" / "part-0.parquet",
                  {"s_hour": slots, "s_tag": ["a", "a", "b"]},
                  schema=pa.schema([("s_hour", pa.timestamp("us", tz="UTC")),
                                    ("s_tag", pa.string())]))
    # the catalog tables' tag dimension: some tags kept, one of each escaping kind, CHAR's 'xyz'
    write_parquet(root / "tagdim" / "part-0.parquet",
                  {"t_tag": ["a/b", "x=y", "it's", "ünï", "#[]^", "50%", "xyz", "zzz"],
                   "t_n": [1, 2, 2, 1, 2, 1, 2, 1],
                   "t_keep": [True, True, True, True, True, False, True, True]})
    return {"root": root, "sales": root / "sales", "days": root / "days",
            "items": root / "items", "events": root / "events", "slots": root / "slots",
            "tagdim": root / "tagdim"}


def _dims(spark: Any, data: dict[str, Path]) -> None:
    for name in ("days", "items", "slots", "tagdim"):
        spark.read.parquet(str(data[name])).createOrReplaceTempView(name)


@pytest.fixture(scope="module")
def plain(connect_server: Any, data: dict[str, Path]) -> Iterator[Any]:
    """The reference: a client session with no dpp and no Spark DPP, plain views over the
    same folders (Spark infers the partition columns, as it would for any job)."""
    spark = _client(connect_server.url)
    spark.conf.set(SPARK_DPP_OFF, "false")
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    _dims(spark, data)
    for name in ("sales", "events"):
        spark.read.parquet(str(data[name])).createOrReplaceTempView(name)
    spark.sql(f"CREATE TABLE cat_sales (item BIGINT, amount DOUBLE, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{data['sales']}'")
    spark.sql("ALTER TABLE cat_sales RECOVER PARTITIONS")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def connect(connect_server: Any, data: dict[str, Path], plain: Any) -> Iterator[Any]:
    """The job's client session, ``dpp.enable``d with ``spark.dpp.tables.sales`` declared."""
    import dpp

    spark = _client(connect_server.url)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    spark.conf.set("spark.dpp.tables.sales", str(data["sales"]))
    _dims(spark, data)
    session = dpp.enable(spark)
    assert dpp.session_of(spark) is session
    yield spark
    dpp.disable(spark)
    spark.stop()


def _rows(df_or_rows: Any) -> list[tuple]:
    rows = df_or_rows.collect() if hasattr(df_or_rows, "collect") else df_or_rows
    return sorted((tuple(r) for r in rows), key=repr)


def _same_as_plain(connect: Any, plain: Any, query: str) -> dict[str, Any]:
    """Runs ``query`` through dpp, checks its rows against the plain session's and against
    spark.dpp.enabled=false, and returns dpp's report (as a dict)."""
    import dpp

    zone = connect.conf.get("spark.sql.session.timeZone")
    plain.conf.set("spark.sql.session.timeZone", zone)
    expected = _rows(plain.sql(query))
    assert expected, f"the case must have rows to compare: {query}"
    got = _rows(connect.sql(query))
    report = dpp.session_of(connect).last_report.to_dict()
    assert got == expected
    connect.conf.set("spark.dpp.enabled", "false")
    # off, dpp makes no view of a declared table: the job's own view of the folder stands
    # in for it, as in a job without dpp (dropped after, so the declaration is used again)
    connect.read.parquet(connect.conf.get("spark.dpp.tables.sales")
                         ).createOrReplaceTempView("sales")
    try:
        assert _rows(connect.sql(query)) == expected
    finally:
        connect.catalog.dropTempView("sales")
        connect.conf.unset("spark.dpp.enabled")
    return report


def _pruned(report: dict[str, Any], table: str) -> list[dict[str, Any]]:
    """The report's entries for ``table`` that kept fewer partitions than it has."""
    return [t for t in report["tables"] if t["table"] == table and t["pruning"] == "applied"
            and t["partitions_kept"] < t["partitions_total"]]


# ---------------------------------------------------------------------------- SQL

QUERIES = {
    "star": """SELECT d_week, i_color, count(*) AS n, sum(amount) AS s
               FROM sales JOIN days ON day = d_day JOIN items ON item = i_item
               WHERE d_week = 2 AND i_color = 'red' GROUP BY d_week, i_color""",
    "in_subquery": """SELECT day, sum(amount) AS s FROM sales
                      WHERE day IN (SELECT d_day FROM days WHERE d_weekend) GROUP BY day""",
    "union_branch": """SELECT 's' AS src, day, amount FROM sales JOIN days ON day = d_day
                       WHERE d_week = 0
                       UNION ALL SELECT 'x' AS src, d_day, 0.0 FROM days WHERE d_week = 4""",
    "cte": """WITH w AS (SELECT day, item, amount FROM sales)
              SELECT d_week, count(*) AS n FROM w JOIN days ON w.day = days.d_day
              WHERE d_day BETWEEN 10 AND 12 GROUP BY d_week""",
}


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_enable_prunes_path_table_declared_by_conf(connect, plain, name, zone):
    connect.conf.set("spark.sql.session.timeZone", zone)
    try:
        report = _same_as_plain(connect, plain, QUERIES[name])
    finally:
        connect.conf.set("spark.sql.session.timeZone", "UTC")
    assert _pruned(report, "sales"), report["tables"]


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_timestamp_partitions_prune_in_the_session_time_zone(connect_server, data, plain,
                                                             zone):
    """``hour`` folders are wall-clock readings in the session zone: the same instants keep
    different folders under UTC and Los Angeles (whose 02:00 does not exist that day)."""
    from dpp import DppSession

    spark = _client(connect_server.url)
    try:
        spark.conf.set("spark.sql.session.timeZone", zone)
        _dims(spark, data)
        session = DppSession(spark)
        session.register_table("events", str(data["events"]),
                               partition_types={"hour": "timestamp"})
        query = ("SELECT hour, v FROM events JOIN slots ON hour = s_hour "
                 "WHERE s_tag = 'a'")
        plain.conf.set("spark.sql.session.timeZone", zone)
        # Spark reads the folders' wall-clock text in the zone of the session that lists them
        plain.read.parquet(str(data["events"])).createOrReplaceTempView("events")
        expected = _rows(plain.sql(query))
        assert expected
        assert _rows(session.sql(query)) == expected
        report = session.last_report.to_dict()
        assert _pruned(report, "events"), report["tables"]
    finally:
        spark.stop()


def test_dpp_session_register_table_sql_collect_explain_join(connect_server, data, plain):
    from dpp import DppSession

    spark = _client(connect_server.url)
    try:
        _dims(spark, data)
        session = DppSession(spark)
        session.register_table("sales", str(data["sales"]))
        query = QUERIES["star"]
        expected = _rows(plain.sql(query))
        assert _rows(session.sql(query)) == expected
        assert _pruned(session.last_report.to_dict(), "sales")
        assert _rows(session.collect(query)) == expected
        assert _pruned(session.last_report.to_dict(), "sales")
        assert "sales: pruned" in session.explain(query)

        dim = spark.table("days").where("d_week = 1")
        joined = session.join("sales", dim, on=[("day", "d_day")])
        assert _pruned(session.last_report.to_dict(), "sales")
        got = _rows(joined.select("day", "item", "amount", "d_day"))
        assert got == _rows(plain.sql("SELECT day, item, amount, d_day FROM sales "
                                      "JOIN days ON day = d_day WHERE d_week = 1"))
    finally:
        spark.stop()


def test_fact_without_partitions_filters_its_row_groups_on_connect(connect_server, data,
                                                                     plain, tmp_path):
    """A registered table with no partition column, one file sorted by day (one row group per
    day): the join's days reach Parquet as a predicate on the handed files (dpp.runtime.row_groups)."""
    from dpp import DppSession

    days = [d for d in range(1, 31) for _ in range(20)]
    pq.write_table(pa.table({"day": pa.array(days, pa.int32()),
                             "qty": pa.array(range(len(days)), pa.int64())}),
                   tmp_path / "stock.parquet", row_group_size=20)
    plain.read.parquet(str(tmp_path)).createOrReplaceTempView("stock")
    query = ("SELECT d_week, count(*) AS n, sum(qty) AS q FROM stock JOIN days ON day = d_day "
             "WHERE d_week = 2 GROUP BY d_week")
    spark = _client(connect_server.url)
    try:
        _dims(spark, data)
        session = DppSession(spark)
        session.register_table("stock", str(tmp_path))
        expected = _rows(plain.sql(query))
        assert expected and _rows(session.sql(query)) == expected
        (entry,) = [t for t in session.last_report.to_dict()["tables"] if t["table"] == "stock"]
        assert entry["row_group_filter"] == "`day` IN (15, 16, 17, 18, 19, 20, 21)", entry
        # the sized relation's global view is dropped once the query holds the filtered one
        gdb = spark.conf.get("spark.sql.globalTempDatabase", "global_temp")
        assert not [r for r in spark.sql(f"SHOW VIEWS IN {gdb}").collect()
                    if r.namespace == gdb and r.viewName.startswith("__dpp_")]
    finally:
        spark.stop()
        plain.catalog.dropTempView("stock")


def _relation_sizes(explained: str) -> list[int]:
    """sizeInBytes of each Parquet relation in an ``explain(mode="cost")`` text."""
    import re

    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    out = []
    for line in explained.splitlines():
        if "Relation" in line and "parquet" in line:
            m = re.search(r"sizeInBytes=([0-9.]+)\s*(B|KiB|MiB|GiB)", line)
            if m:
                out.append(int(float(m.group(1)) * units[m.group(2)]))
    return out


def test_pruned_relation_is_sized_as_the_whole_table(connect, plain, data):
    """Spark's join selection sees the table's size, not the kept files' (q72 otherwise
    broadcasts a pruned fact): a declared table's relation is Spark's reader of the folder,
    which Spark sizes as the whole folder; no global view is left behind."""
    import dpp

    df = connect.sql("SELECT day, amount FROM sales JOIN days ON day = d_day "
                     "WHERE d_week = 0")
    report = dpp.session_of(connect).last_report.to_dict()
    t = _pruned(report, "sales")[0]
    assert t["partitions_kept"] * 3 < t["partitions_total"]
    table_bytes = sum(f.stat().st_size for f in data["sales"].rglob("*.parquet"))
    explained = df._explain_string(mode="cost")
    sizes = _relation_sizes(explained)
    assert sizes and max(sizes) >= table_bytes * 0.8, explained
    gdb = connect.conf.get("spark.sql.globalTempDatabase", "global_temp")
    assert not [r for r in connect.sql(f"SHOW VIEWS IN {gdb}").collect()
                if r.namespace == gdb and r.viewName.startswith("__dpp_")]


def test_returned_dataframe_outlives_the_query_and_derives(connect, plain):
    """A Connect DataFrame is resolved by the server at every action: the views the rewritten
    query reads stay while the DataFrame (or one derived from it) is alive."""
    import gc

    df = connect.sql("SELECT day, amount FROM sales JOIN days ON day = d_day "
                     "WHERE d_week = 1").groupBy("day").count()
    gc.collect()
    expected = _rows(plain.sql("SELECT day, count(*) FROM sales JOIN days ON day = d_day "
                               "WHERE d_week = 1 GROUP BY day"))
    assert _rows(df) == expected
    assert _rows(df) == expected   # a second action resolves it again


def test_spark_errors_stay_spark_errors(connect):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):
        connect.sql("SELECT * FROM sales JOIN no_such_table ON day = x").collect()


# ---------------------------------------------------------------------------- catalog tables

@pytest.fixture(scope="module")
def catalog(plain: Any, data: dict[str, Path]) -> dict[str, str]:
    """Catalog tables of the server (its catalog is shared by every client session), made by
    the plain session: ``cat_sales`` by ``day`` (the ``plain`` fixture), ``cat_events`` by a
    TIMESTAMP ``hour`` over the path tables' folders, ``cat_orc`` (ORC, by ``day``),
    ``cat_tags`` by (``tag`` STRING, ``n`` INT) written by Spark — values that need escaping
    in folder names, NULLs in both columns — and ``cat_char`` by a CHAR(3) column."""
    plain.sql(f"CREATE TABLE cat_events (v BIGINT, hour TIMESTAMP) USING parquet "
              f"PARTITIONED BY (hour) LOCATION '{data['events']}'")
    plain.sql("ALTER TABLE cat_events RECOVER PARTITIONS")
    plain.sql("CREATE TABLE cat_orc USING orc PARTITIONED BY (day) "
              "AS SELECT item, amount, day FROM sales")
    plain.sql("CREATE TABLE cat_tags (v INT, tag STRING, n INT) USING parquet "
              "PARTITIONED BY (tag, n)")
    plain.sql("INSERT INTO cat_tags VALUES " + ", ".join(
        f"({v}, {t}, {n})" for v, t, n in TAG_ROWS))
    plain.sql("CREATE TABLE cat_char (v INT, c CHAR(3)) USING parquet PARTITIONED BY (c)")
    plain.sql("INSERT INTO cat_char VALUES (1, 'ab'), (2, 'xyz')")
    return {"tags_folders": "|".join(r.partition for r in
                                     plain.sql("SHOW PARTITIONS cat_tags").collect())}


# (v, tag, n) as SQL: a slash, '=', ':', a quote, '%', a space, non-ASCII, Hive's escaped
# brackets, and NULLs (the default partition) in either column
TAG_ROWS = [(1, "'a/b'", 1), (2, "'x=y'", 1), (3, "'c:d'", 2), (4, '"it\'s"', 2),
            (5, "'50%'", 3), (6, "'sp ace'", 3), (7, "'ünï'", 1), (8, "NULL", 1),
            (9, "NULL", "NULL"), (10, "'a/b'", "NULL"), (11, "'#[]^'", 2), (12, "'x=y'", 2)]


def _catalog_query(name: str) -> str:
    """QUERIES[name] over the catalog table ``cat_sales`` instead of the path table."""
    import re

    return re.sub(r"\bsales\b", "cat_sales", QUERIES[name])


def _catalog_pruned(report: dict[str, Any], table: str, sized: bool = False
                    ) -> list[dict[str, Any]]:
    """The report's pruned entries of catalog ``table`` (kept < total), each with its
    predicate in ``metastore_note``. ``sized``: a plain Parquet table pruned by a join, its
    partitions at their default folders — read as those folders (listed by dpp, counted),
    sized as the table; otherwise Spark lists the kept partitions, nothing listed by dpp."""
    from dpp.session import CONNECT_NOTES

    entries = _pruned(report, table)
    for t in entries:
        note = t["metastore_note"] or ""
        assert t["metastore_names"] == t["partitions_total"]
        assert "handed to Spark as WHERE" in note
        if sized:
            assert "read from their default folders" in note, note
            assert t["lister"] != "spark" and t["files_kept"] > 0
            assert 0 < t["folders_listed"] <= t["partitions_kept"] == t["list_calls"] or \
                0 < t["folders_listed"] == t["list_calls"] <= t["partitions_kept"], t
        else:
            assert "read from their default folders" not in note, note
            assert t["lister"] == "spark" and t["folders_listed"] == 0 and t["list_calls"] == 0
    if entries:
        seen = dpp_notes_seen(report)
        assert CONNECT_NOTES["catalog_predicate"] in seen
    return entries


_NOTES_SEEN: list[str] = []


def dpp_notes_seen(report: dict[str, Any]) -> list[str]:
    """Environment notes of every report checked so far in this module (a note is said once
    per session, in the first report that meets it)."""
    _NOTES_SEEN.extend(report["environment"])
    return _NOTES_SEEN


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_catalog_table_pruned_by_a_partition_predicate(connect, plain, catalog, name, zone):
    """Star join, IN subquery, UNION branch, CTE over a catalog table: Spark's rows, the
    table pruned (kept of total partitions in the report)."""
    connect.conf.set("spark.sql.session.timeZone", zone)
    try:
        report = _same_as_plain(connect, plain, _catalog_query(name))
    finally:
        connect.conf.set("spark.sql.session.timeZone", "UTC")
    assert _catalog_pruned(report, "cat_sales", sized=True), report["tables"]


def test_catalog_table_pruned_by_a_join_is_sized_as_spark_sizes_it(connect, plain, catalog,
                                                                   data):
    """Spark sizes a catalog table it prunes while planning by the partitions it admits;
    over the original query that is every partition (the join's IS NOT NULL), so the pruned
    relation must be sized so too, or join selection flips (q72 on catalog tables: a
    broadcast of the fact, 2.45x slower): the kept default folders are read in a clone of
    the session whose compression factor is raised."""
    import dpp

    query = _catalog_query("star")
    df = connect.sql(query)
    t = _catalog_pruned(dpp.session_of(connect).last_report.to_dict(), "cat_sales",
                        sized=True)[0]
    assert t["partitions_kept"] * 3 < t["partitions_total"]
    table_bytes = sum(f.stat().st_size for f in data["sales"].rglob("*.parquet"))
    assert t["bytes_kept"] * 3 < table_bytes
    sizes = _relation_sizes(df._explain_string(mode="cost"))
    assert sizes and max(sizes) >= table_bytes * 0.8, sizes
    # the predicate alone: sized by the kept partitions (what the remedy is for)
    with_pred = connect.table("cat_sales").where(_kept_predicate(t))
    assert max(_relation_sizes(with_pred._explain_string(mode="cost"))) < table_bytes / 2
    assert _rows(df) == _rows(plain.sql(query))


def _kept_predicate(entry: dict[str, Any]) -> str:
    """The SQL of a report entry's predicate (its ``metastore_note`` shows it)."""
    note = entry["metastore_note"]
    return note[note.index("as WHERE ") + len("as WHERE "):note.index(": Spark fetches")]


def test_catalog_table_of_another_format_is_pruned_too(connect, plain, catalog):
    """The predicate is a row filter on partition columns: right whatever the format."""
    report = _same_as_plain(connect, plain, QUERIES["star"].replace("FROM sales",
                                                                    "FROM cat_orc"))
    assert _catalog_pruned(report, "cat_orc"), report["tables"]


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_catalog_timestamp_partitions_prune_in_the_session_time_zone(connect, plain, catalog,
                                                                     zone):
    """A catalog partition's text is cast in the session zone by Spark, and read there by
    the loader: Los Angeles' nonexistent 02:00 is its 03:00."""
    connect.conf.set("spark.sql.session.timeZone", zone)
    try:
        report = _same_as_plain(connect, plain, "SELECT hour, v FROM cat_events JOIN slots "
                                                "ON hour = s_hour WHERE s_tag = 'a'")
    finally:
        connect.conf.set("spark.sql.session.timeZone", "UTC")
    t = _catalog_pruned(report, "cat_events", sized=True)
    assert t and t[0]["partitions_kept"] <= 3, report["tables"]


TAG_QUERIES = {
    "join": "SELECT v, tag, n FROM cat_tags JOIN tagdim ON tag = t_tag WHERE t_keep",
    "two_columns": "SELECT v, tag, n FROM cat_tags JOIN tagdim ON tag = t_tag AND n = t_n "
                   "WHERE t_keep",
    "in_subquery": "SELECT v, tag, n FROM cat_tags "
                   "WHERE tag IN (SELECT t_tag FROM tagdim WHERE t_keep)",
    "null_kept": "SELECT v, tag, n FROM cat_tags WHERE tag IS NULL OR tag = 'x=y'",
}


@pytest.mark.parametrize("name", sorted(TAG_QUERIES))
def test_catalog_string_partitions_needing_escapes_and_nulls(connect, plain, catalog, name):
    """Partition texts from SHOW PARTITIONS are Hive-escaped ('a%2Fb'), NULL is
    __HIVE_DEFAULT_PARTITION__: read as Spark reads them, the kept ones handed back as
    typed literals (no SQL text to escape); a kept NULL partition as IS NULL."""
    assert "%2F" in catalog["tags_folders"] and "__HIVE_DEFAULT_PARTITION__" in \
        catalog["tags_folders"]
    report = _same_as_plain(connect, plain, TAG_QUERIES[name])
    # a join pruned it: its default folders are read (their names Hive-escaped, read back
    # by Spark's reader); the static filter alone leaves Spark's sizing as it is
    t = _catalog_pruned(report, "cat_tags", sized=name != "null_kept")
    assert t, report["tables"]
    if name == "null_kept":
        assert "`tag` IS NULL" in t[0]["metastore_note"]
    else:   # a join never matches NULL: the default partitions of tag are pruned
        assert "`tag` IS NULL" not in t[0]["metastore_note"]


def test_partition_added_at_a_location_of_its_own(connect, plain, data, tmp_path):
    """``ALTER TABLE … ADD PARTITION … LOCATION`` elsewhere: Spark reads it from there, so
    does the pruned query (dpp hands no location), not the folder at its default path."""
    import shutil

    root = tmp_path / "loc_sales"
    shutil.copytree(data["sales"], root)
    plain.sql(f"CREATE TABLE cat_loc (item BIGINT, amount DOUBLE, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{root}'")
    try:
        plain.sql("ALTER TABLE cat_loc RECOVER PARTITIONS")
        # a folder at day=31's default path with other rows: never part of the table
        make_partitioned_table(root, {(("day", "31"),): {"item": [1], "amount": [999.0]}})
        elsewhere = tmp_path / "elsewhere" / "late"
        write_parquet(elsewhere / "part-0.parquet", {"item": [2, 3], "amount": [31.0, 62.0]})
        plain.sql(f"ALTER TABLE cat_loc ADD PARTITION (day=31) LOCATION '{elsewhere}'")
        for s in (plain, connect):
            s.createDataFrame([(29, False), (30, True), (31, True)],
                              "k INT, keep BOOLEAN").createOrReplaceTempView("late_days")
        query = "SELECT day, item, amount FROM cat_loc JOIN late_days ON day = k WHERE keep"
        report = _same_as_plain(connect, plain, query)
        t = _catalog_pruned(report, "cat_loc")
        assert t and (t[0]["partitions_kept"], t[0]["partitions_total"]) == (2, 31)
        # day=31's files are elsewhere: its default folder (a decoy) is not read
        assert "not in its default folder" in t[0]["metastore_note"]
        assert (31, 2, 31.0) in _rows(connect.sql(query))
    finally:
        plain.sql("DROP TABLE IF EXISTS cat_loc")


def test_dpp_join_prunes_a_catalog_table(connect, plain, catalog):
    import dpp

    session = dpp.session_of(connect)
    dim = connect.table("days").where("d_week = 1")
    joined = session.join("cat_sales", dim, on=[("day", "d_day")])
    assert _catalog_pruned(session.last_report.to_dict(), "cat_sales")
    got = _rows(joined.select("day", "item", "amount", "d_day"))
    assert got == _rows(plain.sql("SELECT day, item, amount, d_day FROM cat_sales "
                                  "JOIN days ON day = d_day WHERE d_week = 1"))


def test_catalog_table_dpp_cannot_prune_is_left_to_spark_with_one_note(connect, plain,
                                                                       catalog):
    """CHAR(n) partition values are padded by Spark: such a table is Spark's, said once."""
    import dpp
    from dpp.session import CONNECT_CATALOG_LEFT, CONNECT_NOTES

    query = "SELECT v, c FROM cat_char JOIN tagdim ON c = t_tag WHERE t_keep"
    expected = _rows(plain.sql(query))
    assert expected
    assert _rows(connect.sql(query)) == expected
    report = dpp.session_of(connect).last_report.to_dict()
    entry = [t for t in report["tables"] if t["table"] == "cat_char"]
    assert entry and entry[0]["pruning"] == "none"
    assert entry[0]["reason"].startswith(CONNECT_CATALOG_LEFT) and "CHAR" in entry[0]["reason"]
    assert CONNECT_NOTES["catalog"] in report["environment"]   # the first query meeting one
    assert _rows(connect.sql(query)) == expected
    again = dpp.session_of(connect).last_report.to_dict()
    assert CONNECT_NOTES["catalog"] not in again["environment"]   # said once per session


# ---------------------------------------------------------------------------- degradations

def _fresh(connect_server: Any, data: dict[str, Path], **conf: str) -> Any:
    spark = _client(connect_server.url)
    _dims(spark, data)
    for k, v in conf.items():
        spark.conf.set(k, v)
    return spark


@pytest.mark.parametrize("key, conf, action", [
    ("handoff_calls", {}, "sql"),
    ("scan_metrics", {}, "collect"),
    ("lister", {"spark.dpp.lister": "hadoop"}, "sql"),
    ("collector", {"spark.dpp.collector": "arrow"}, "sql"),
])
def test_each_jvm_feature_degrades_with_one_note_and_still_prunes(connect_server, data, plain,
                                                                  key, conf, action):
    from dpp import DppSession
    from dpp.session import CONNECT_NOTES

    spark = _fresh(connect_server, data, **conf)
    try:
        session = DppSession(spark)
        session.register_table("sales", str(data["sales"]))
        query = QUERIES["star"]
        run = session.collect if action == "collect" else session.sql
        expected = _rows(plain.sql(query))
        assert _rows(run(query)) == expected
        first = session.last_report.to_dict()
        assert CONNECT_NOTES[key] in first["environment"]
        assert _pruned(first, "sales")
        assert _rows(run(query)) == expected
        second = session.last_report.to_dict()
        assert CONNECT_NOTES[key] not in second["environment"]   # once per session
        if key == "handoff_calls":
            t = _pruned(first, "sales")[0]
            assert t.get("handoff_list_calls") is None
        if key == "scan_metrics":
            assert all(v is None for v in (first.get("spark_scan") or {}).values())
    finally:
        spark.stop()


def test_unlistable_scheme_is_a_config_error_naming_the_path(connect):
    from dpp.core.errors import ConfigError
    import dpp

    with pytest.raises(ConfigError, match="wasb://c@a/t"):
        dpp.session_of(connect).register_table("remote_t", "wasb://c@a/t")


# ---------------------------------------------------------------------------- no server needed

def test_is_remote_tells_the_two_kinds_apart_by_class():
    from dpp.core.remote import is_remote

    class Classic:
        pass

    assert not is_remote(Classic())
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    assert is_remote(RemoteSparkSession.__new__(RemoteSparkSession))


@pytest.mark.parametrize("conf, key", [
    ({"spark.hadoop.fs.s3a.access.key": "AK"}, "spark.hadoop.fs.s3a.secret.key"),
    ({"spark.hadoop.fs.s3a.aws.credentials.provider":
      "com.amazonaws.auth.InstanceProfileCredentialsProvider"},
     "spark.hadoop.fs.s3a.aws.credentials.provider"),
    ({"spark.hadoop.google.cloud.auth.service.account.json.keyfile": "/k.json"},
     "spark.hadoop.google.cloud.auth.service.account.json.keyfile"),
])
def test_hadoop_settings_without_a_pyarrow_counterpart_are_config_errors(conf, key):
    from dpp.core.errors import ConfigError
    from hive_splits.arrow_fs import arrow_filesystem

    location = "gs://b/t" if "google" in key else "s3a://bucket/t"
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        arrow_filesystem(location, conf)


def test_s3_settings_map_to_pyarrow():
    from hive_splits.arrow_fs import arrow_filesystem

    fs = arrow_filesystem("s3a://bucket/t", {
        "spark.hadoop.fs.s3a.access.key": "AK", "spark.hadoop.fs.s3a.secret.key": "SK",
        "spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.path.style.access": "true"})
    assert type(fs).__name__ == "S3FileSystem"
    assert fs.region == "eu-west-1"


def test_arrow_lister_lists_as_the_local_lister(tmp_path):
    from pyarrow import fs

    from hive_splits.arrow_fs import ArrowLister
    from hive_splits.listing import LocalLister

    make_partitioned_table(tmp_path / "t", {(("k", "1"),): {"x": [1]},
                                            (("k", "a%3Ab"),): {"x": [2, 3]}},
                           files_per_partition=2)
    (tmp_path / "t" / "_SUCCESS").write_text("")
    arrow, local = ArrowLister(fs.LocalFileSystem()), LocalLister()
    root = str(tmp_path / "t")
    a_dirs, a_files = arrow.list("file://" + root)
    l_dirs, l_files = local.list(root)
    assert [d.name for d in a_dirs] == [d.name for d in l_dirs] == ["k=1", "k=a%3Ab"]
    assert a_files == l_files == []
    a_dirs, a_files = arrow.list("file://" + root + "/k=a%3Ab")
    l_dirs, l_files = local.list(root + "/k=a%3Ab")
    assert [(os.path.basename(f.path), f.size) for f in a_files] == \
        [(os.path.basename(f.path), f.size) for f in l_files]
    assert arrow.calls.snapshot() == (2, 0)


def _admits(pred: Any, row: dict[str, Any]) -> bool:
    """Evaluates a :mod:`dpp.runtime.remote_catalog` predicate on one partition's typed values
    (None = NULL) as SQL would: the test's own reading of the structure, not Spark's."""
    from dpp.runtime.remote_catalog import And, Or

    if pred is None:
        return True
    if isinstance(pred, Or):
        return any(_admits(p, row) for p in pred.parts)
    if isinstance(pred, And):
        return all(_admits(t, row) for t in pred.terms)
    v = row[pred.column]
    if v is None:
        return pred.null
    read = pred.type.parse_text
    return (any(read(lo) <= v <= read(hi) for lo, hi in pred.runs)
            or any(read(t) == v for t in pred.exact))


@pytest.mark.parametrize("seed", range(40))
def test_kept_predicate_admits_every_kept_partition_and_prunes(seed):
    """Random two- and three-column partition sets with NULLs and random survivors: the
    predicate handed to Spark admits every kept partition (never a lost row) and, within
    its term limits, nothing else."""
    import random

    from dpp.core.domain import DataType
    from dpp.runtime.remote_catalog import MAX_DISJUNCTS, kept_predicate
    from hive_splits import KeptPartition, LoadResult, PartitionColumn, Table

    rnd = random.Random(seed)
    cols = [PartitionColumn("d", "date"), PartitionColumn("h", "int"),
            PartitionColumn("s", "string")][:rnd.choice([2, 3])]
    texts = {"d": [f"2024-01-{i:02d}" for i in range(1, 29)] + [None],
             "h": [str(i) for i in range(24)] + [None], "s": ["a/b", "x=y", "ü", None]}
    every = sorted({tuple((c.name, rnd.choice(texts[c.name])) for c in cols)
                    for _ in range(rnd.randint(1, 200))}, key=repr)
    kept = [spec for spec in every if rnd.random() < rnd.choice([0.05, 0.3, 0.9])]

    def typed(c: PartitionColumn, t: Any) -> Any:
        return None if t is None else c.type.parse_text(t)

    table = Table(name="t", location="/t", columns=(), partition_columns=tuple(cols),
                  catalog_name="t")
    result = LoadResult(table="t", partitions_total=len(every), partitions_kept=len(kept))
    result.partitions = [KeptPartition("/t/x", {c.name: typed(c, t) for c, (_, t) in
                                                zip(cols, spec)}, None, dict(spec))
                         for spec in kept]
    result.metastore["connect_values"] = [
        sorted({(typed(c, spec[i][1]), spec[i][1]) for spec in every
                if spec[i][1] is not None}, key=lambda vt: vt[0]) for i, c in enumerate(cols)]
    pred = kept_predicate(table, result, every)
    rows = {spec: {c.name: typed(c, t) for c, (_, t) in zip(cols, spec)} for spec in every}
    assert all(_admits(pred, rows[spec]) for spec in kept), pred
    admitted = [spec for spec in every if _admits(pred, rows[spec])]
    if not kept:
        assert admitted == []
    elif len(cols) * len(kept) <= MAX_DISJUNCTS:
        # no fallback to one term per column, and under 32 ranges per column: exact
        assert sorted(admitted, key=repr) == sorted(kept, key=repr), pred


# ---------------------------------------------------------------------------- DataFrame API

@pytest.fixture
def frames(connect: Any) -> Iterator[Any]:
    """The DataFrame plan rewrite switched on (``spark.dpp.connect.dataFrames``, off by
    default) for one test."""
    connect.conf.set("spark.dpp.connect.dataFrames", "true")
    yield connect
    connect.conf.unset("spark.dpp.connect.dataFrames")


def _frame_report(connect: Any) -> dict[str, Any]:
    import dpp

    report = dpp.session_of(connect).last_report
    assert report is not None and report.kind == "plan", report
    return report.to_dict()


FRAME_SHAPES = ["catalog_cond", "catalog_plan_ids", "catalog_using", "folder_cond",
                "catalog_two_dims", "catalog_date_joined_last", "folder_filter_project"]


def _frame(spark: Any, data: dict[str, Path], shape: str, fact: Any = None) -> Any:
    """A DataFrame star join, as a job writes it (``fact``: the fact DataFrame to use)."""
    from dpp.core.remote import functions_for

    F = functions_for(spark)

    days = spark.table("days").where("d_week = 1")
    if fact is None:
        fact = (spark.read.parquet(str(data["sales"])) if shape.startswith("folder")
                else spark.table("cat_sales"))
    if shape in ("catalog_cond", "folder_cond"):
        return fact.join(days, F.col("day") == F.col("d_day")).select("day", "item", "amount")
    if shape == "catalog_plan_ids":
        return fact.join(days, days["d_day"] == fact["day"]).select(fact["day"], "amount")
    if shape == "catalog_using":
        return fact.join(days.withColumnRenamed("d_day", "day"), "day").select("day", "item")
    if shape == "catalog_two_dims":
        items = spark.table("items").where("i_color = 'red'")
        return (fact.join(days, F.col("day") == F.col("d_day"))
                .join(items, F.col("item") == F.col("i_item"))
                .groupBy("day").agg(F.sum("amount").alias("s")))
    if shape == "catalog_date_joined_last":   # the date join above another: by df["col"]
        items = spark.table("items")
        j = fact.join(items, fact["item"] == items["i_item"])
        return j.join(days, fact["day"] == days["d_day"]).select(fact["day"], "i_color")
    if shape == "folder_filter_project":
        f = fact.where("amount > 1").select("day", "amount")
        return f.join(days, f["day"] == days["d_day"], "left_semi")
    raise AssertionError(shape)


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("shape", FRAME_SHAPES)
def test_dataframe_star_join_is_pruned_by_rewriting_the_plan(connect, frames, plain, catalog, data,
                                                             shape, zone):
    """Issue 29's stretch: a Connect DataFrame is a protobuf plan on the client; the fact
    read under the join (a catalog table by name, a declared folder by path) is replaced by
    its pruned relation before the plan is sent. Same rows as the plain session (no dpp, no
    Spark DPP) and as spark.dpp.enabled=false; the report says the fact was pruned."""
    for sess in (connect, plain):
        sess.conf.set("spark.sql.session.timeZone", zone)
    try:
        expected = _rows(_frame(plain, data, shape))
        assert expected
        got = _rows(_frame(connect, data, shape))
        report = _frame_report(connect)
        assert got == expected
        table = "sales" if shape.startswith("folder") else "cat_sales"
        pruned = _pruned(report, table)
        assert pruned, report["tables"]
        assert pruned[0]["partitions_kept"] == 7, pruned   # the 7 days of week 1
        if table == "cat_sales":
            _catalog_pruned(report, table, sized=True)
        else:
            assert pruned[0]["folders_listed"] == 7 + 1
        connect.conf.set("spark.dpp.enabled", "false")
        try:
            assert _rows(_frame(connect, data, shape)) == expected
        finally:
            connect.conf.unset("spark.dpp.enabled")
    finally:
        for sess in (connect, plain):
            sess.conf.set("spark.sql.session.timeZone", "UTC")


def test_dataframe_star_join_that_ends_in_a_write_is_pruned(connect, frames, plain, catalog, data,
                                                            tmp_path):
    """A write command carries the plan too: the written rows are the plain session's."""
    out = tmp_path / "frame_out"
    _frame(connect, data, "catalog_cond").write.mode("overwrite").parquet(str(out))
    report = _frame_report(connect)
    assert _pruned(report, "cat_sales"), report["tables"]
    assert _rows(plain.read.parquet(str(out))) == _rows(_frame(plain, data, "catalog_cond"))


@pytest.mark.parametrize("shape", ["fact_preserved", "limit_below", "renamed_key",
                                   "not_equality", "another_tables_key", "bare_name_above_join"])
def test_dataframe_shapes_that_cannot_be_pruned_are_sent_as_built(connect, frames, plain, catalog,
                                                                  data, shape):
    """Where dropping fact rows could change the answer (the fact side of a left outer join,
    a limit under the join) or the key is not the fact's column as it is (renamed), or the
    condition is not an equality, the plan is sent as the user built it: no report, Spark's
    rows."""
    import dpp
    from dpp.core.remote import functions_for

    def build(spark: Any) -> Any:
        F = functions_for(spark)
        fact = spark.table("cat_sales")
        days = spark.table("days").where("d_week = 1")
        if shape == "fact_preserved":
            return fact.join(days, F.col("day") == F.col("d_day"), "left")
        if shape == "limit_below":
            return fact.orderBy("day", "item", "amount").limit(9).join(
                days, F.col("day") == F.col("d_day"))
        if shape in ("another_tables_key", "bare_name_above_join"):
            # another table with a `day` of its own joined to the fact, then the calendar
            # joined on *its* day: the fact's rows must not be pruned by that
            other = spark.createDataFrame([(i, 8 + i) for i in range(7)], "o_item INT, day INT")
            j = fact.join(other, fact["item"] == other["o_item"])
            if shape == "another_tables_key":
                return j.join(days, other["day"] == days["d_day"])
            j = j.select(fact["item"], other["day"], fact["amount"])
            return j.join(days, F.col("day") == F.col("d_day"))
        if shape == "renamed_key":
            f = fact.select((F.col("day") + 1).alias("day"), "amount")
            return f.join(days, F.col("day") == F.col("d_day"))
        return fact.join(days, F.col("day") <= F.col("d_day"))

    session = dpp.session_of(connect)
    session.last_report = None
    got = _rows(build(connect))
    assert session.last_report is None, session.last_report.to_dict()
    expected = _rows(build(plain))
    assert got == expected
    if shape == "another_tables_key":   # rows of fact days outside week 1 (r[2]: day)
        assert expected and {r[2] for r in expected} - set(range(8, 15)), expected


# shape -> how many reads of cat_sales are pruned to week 1's 7 days
NODE_SHAPES = {"renamed": 1, "renamed_swap_key": 1, "renamed_swap_other": 0, "dropped": 1,
               "dropped_key_then_renamed": 0, "dropped_others_day": 1,
               "dropped_facts_day": 0, "to_df": 1, "to_df_swapped": 0,
               "union_by_name": 2, "union_by_name_missing_key": 0,
               "union_by_name_missing_other": 2, "intersect": 1, "intersect_all": 0,
               "except_fact_left": 1, "except_fact_right": 0, "except_all_fact_right": 0,
               "rollup": 0, "cube": 0, "grouping_sets": 0}


def _node_shape(spark: Any, shape: str) -> Any:
    """A DataFrame whose fact reaches the star join through a rename, a drop, ``toDF``, a
    set operation or grouping sets (``NODE_SHAPES``); hostile ones put another column under
    the key's name, drop it, leave it NULL on one side, or put the fact on EXCEPT's right."""
    from dpp.core.remote import functions_for

    F = functions_for(spark)
    a, b = spark.table("cat_sales"), spark.table("cat_sales")   # two reads, two plan ids
    week = spark.table("days").where("d_week = 1")
    first = spark.table("days").where("d_week = 0")   # days 1..7: item values 0..6 match

    def on(df: Any, key: str = "day", days: Any = week) -> Any:
        # d_day by the dimension's plan id: a local relation (``other``) may hold any name
        return df.join(days, F.col(key) == days["d_day"])

    swap = (a.withColumnRenamed("day", "tmp").withColumnRenamed("item", "day")
            .withColumnRenamed("tmp", "item"))
    every = spark.createDataFrame([(d, i) for d in range(1, 31) for i in range(7)],
                                  "day INT, item BIGINT")
    two = (a.select("day", "item"), b.select("day", "item"))
    other = spark.createDataFrame([(i, 8 + i) for i in range(7)], "o_item INT, day INT")
    both = a.join(other, a["item"] == other["o_item"])   # two columns named day
    build = {
        "renamed": lambda: on(a.withColumnRenamed("day", "dd"), "dd"),
        "renamed_swap_key": lambda: on(swap, "item"),
        "renamed_swap_other": lambda: on(swap, "day", first),
        "dropped": lambda: on(a.drop("amount")),
        "dropped_key_then_renamed": lambda: on(a.drop("day").withColumnRenamed("item", "day"),
                                               "day", first),
        "dropped_others_day": lambda: on(both.drop(other["day"])),
        "dropped_facts_day": lambda: on(both.drop(a["day"])),
        "to_df": lambda: on(a.select("day", "item", "amount").toDF("dd", "it", "am"), "dd"),
        "to_df_swapped": lambda: on(a.select("day", "item", "amount")
                                    .toDF("item", "day", "amount"), "day", first),
        "union_by_name": lambda: on(a.select("day", "amount")
                                    .unionByName(b.select("amount", "day"))),
        "union_by_name_missing_key": lambda: on(a.select("day", "amount").unionByName(
            b.select("amount"), allowMissingColumns=True)),
        "union_by_name_missing_other": lambda: on(a.select("day", "amount").unionByName(
            b.select("day"), allowMissingColumns=True)),
        "intersect": lambda: on(two[0].intersect(two[1].where("item < 4"))),
        "intersect_all": lambda: on(two[0].intersectAll(two[1])),
        "except_fact_left": lambda: on(two[0].subtract(two[1].where("item = 6"))),
        "except_fact_right": lambda: on(every.subtract(two[1])),
        "except_all_fact_right": lambda: on(every.exceptAll(two[1])),
        "rollup": lambda: on(a.rollup("day").agg(F.sum("amount").alias("s"))),
        "cube": lambda: on(a.cube("day", "item").count()),
        "grouping_sets": lambda: on(a.groupingSets([["day"], ["day", "item"]], "day", "item")
                                    .count()),
    }
    return build[shape]()


@pytest.mark.parametrize("shape", list(NODE_SHAPES))
def test_dataframe_keys_through_renames_drops_set_operations_and_grouping_sets(
        connect, frames, plain, catalog, shape):
    """The Connect translation of withColumnRenamed, drop, toDF, unionByName, intersect,
    except, rollup, cube and grouping sets (``dpp.frontends.connect.typed``, ``dpp.frontends.connect.setops``):
    the fact is pruned exactly where a key passes (``NODE_SHAPES``), and the rows are the
    plain session's (no dpp, no Spark DPP) and those of spark.dpp.enabled=false."""
    import dpp

    session = dpp.session_of(connect)
    session.last_report = None
    got = _rows(_node_shape(connect, shape))
    report = session.last_report
    expected = _rows(_node_shape(plain, shape))
    assert expected, shape
    assert got == expected
    pruned = _pruned(report.to_dict(), "cat_sales") if report is not None else []
    assert len(pruned) == NODE_SHAPES[shape], (shape, report and report.to_dict()["tables"])
    assert all(t["partitions_kept"] == 7 for t in pruned), pruned
    connect.conf.set("spark.dpp.enabled", "false")
    try:
        assert _rows(_node_shape(connect, shape)) == expected
    finally:
        connect.conf.unset("spark.dpp.enabled")


def test_spark_column_semantics_the_connect_translation_follows(plain, catalog):
    """What ``dpp.frontends.connect.typed`` / ``dpp.frontends.connect.setops`` assume of the server's Spark:
    renames fold in order (a swap in one call names both columns ``day``), a drop by name
    is case-insensitive, unionByName puts the right side's own columns last."""
    a, b = plain.table("cat_sales"), plain.table("cat_sales")
    assert a.columns == ["item", "amount", "day"]
    assert a.withColumnsRenamed({"day": "item", "item": "day"}).columns == \
        ["day", "amount", "day"]
    assert a.withColumnRenamed("DAY", "d").columns == ["item", "amount", "d"]
    assert a.drop("DAY").columns == ["item", "amount"]
    assert a.select("day", "amount").unionByName(
        b.select("item", "day"), allowMissingColumns=True).columns == ["day", "amount", "item"]


def test_dataframe_plan_spark_rejects_after_the_rewrite_is_sent_as_built(connect, frames, plain,
                                                                       catalog, data,
                                                                       monkeypatch):
    """The rewritten plan is analyzed by Spark before it is sent; if Spark rejects it (here
    the rewrite is made to name a view that does not exist), the user's plan goes out as
    built: Spark's rows, the report says why, no view left behind."""
    import dpp

    frames = dpp.session_of(connect).connect_frames
    real = frames._prune

    def broken(facts: Any, cfg: Any, views: list[str]) -> Any:
        report = real(facts, cfg, views)
        for f in facts:
            f.read.read.named_table.unparsed_identifier = "__dpp_no_such_view"
        return report

    monkeypatch.setattr(frames, "_prune", broken)
    got = _rows(_frame(connect, data, "catalog_cond"))
    report = _frame_report(connect)
    assert got == _rows(_frame(plain, data, "catalog_cond"))
    entry = [t for t in report["tables"] if t["table"] == "cat_sales"]
    assert entry and entry[0]["pruning"] == "none", report["tables"]
    assert "Spark rejected the rewritten DataFrame plan" in entry[0]["reason"]
    assert not [r for r in connect.sql("SHOW VIEWS").collect()
                if r.viewName.startswith("__dpp_frame_")]


# ------------------------------------------------------- sizing a catalog table (no server)

def test_folder_format_only_for_plain_parquet_tables():
    """Only a Parquet data-source table's folder reads as the table: not ORC, not a
    Hive-format table (its serde), not a bucketed one, not one with storage options."""
    from dpp.runtime.remote_catalog import folder_format

    plain_parquet = {"Provider": "parquet", "Location": "file:/t"}
    assert folder_format(plain_parquet) == "parquet"
    for extra in ({"Provider": "orc"}, {"Provider": "hive"}, {"Num Buckets": "4"},
                  {"Bucket Columns": "[`k`]"}, {"Storage Properties": "[mergeSchema=true]"}):
        assert folder_format({**plain_parquet, **extra}) is None, extra
    assert folder_format({**plain_parquet, "Storage Properties": "[]"}) == "parquet"


def test_default_folders_accepts_only_files_directly_in_a_partitions_default_folder():
    """A file Spark serves from anywhere but ``root/k=v`` of one of the table's partitions
    (a partition at a location of its own, a nested folder, another root) means the folders
    cannot stand for the partitions: None."""
    from dpp.runtime.remote_catalog import default_folders, same_files

    every = [(("day", "1"),), (("day", "2"),), (("day", None),), (("day", "a/b"),)]
    served = ["file:/t/day=1/p0.parquet", "file:/t/day=1/p1.parquet", "/t/day=2/p0.parquet",
              "file:/t/day=__HIVE_DEFAULT_PARTITION__/x.parquet",
              "file:/t/day=a%252Fb/y.parquet"]   # a URI of the escaped folder day=a%2Fb
    got = default_folders("/t", every, served)
    assert got == {"/t/day=1": {"/t/day=1/p0.parquet", "/t/day=1/p1.parquet"},
                   "/t/day=2": {"/t/day=2/p0.parquet"},
                   "/t/day=__HIVE_DEFAULT_PARTITION__":
                       {"/t/day=__HIVE_DEFAULT_PARTITION__/x.parquet"},
                   "/t/day=a%2Fb": {"/t/day=a%2Fb/y.parquet"}}
    assert same_files(got, ["/t/day=1/p0.parquet", "/t/day=1//p1.parquet",
                            "/t/day=2/p0.parquet", "/t/day=__HIVE_DEFAULT_PARTITION__/x.parquet",
                            "/t/day=a%2Fb/y.parquet"])
    assert not same_files(got, ["/t/day=1/p0.parquet"])               # Spark serves more
    assert not same_files(got, [*sum(map(list, got.values()), []),
                                "/t/day=2/decoy.parquet"])           # the folder holds more
    for bad in ("file:/elsewhere/late/p.parquet", "file:/t/day=1/sub/p.parquet",
                "file:/t/day=3/p.parquet", "file:/u/day=1/p.parquet"):
        assert default_folders("/t", every, [*served, bad]) is None, bad
    assert default_folders("", every, served) is None
    s3 = default_folders("s3a://b/t", every, ["s3a://b/t/day=1/p.parquet"])
    assert s3 == {"s3a://b/t/day=1": {"s3a://b/t/day=1/p.parquet"}}
