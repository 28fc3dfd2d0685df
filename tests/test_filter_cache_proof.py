"""The filter cache reuses a build side's filter only on proof it would return the same rows.

With ``spark.dpp.filterCache.enabled=true``, the same query runs twice with something changed
in between that the old fingerprint (query or canonical plan, file sizes and mtimes, a few
settings) did not all see: the session time zone (a date key computed from a string), ANSI
mode (a cast that gives NULL or fails), case sensitivity (a column a user schema names in
other case), a dimension file rewritten in place with the same size and modification time,
a view defined again over the same files with other reader options, a value-changing setting
outside those the rules read. Each run is compared with Spark with every dynamic pruning off.
The order of the runs is chosen so that a stale filter would drop rows (the first run keeps
fewer keys than the second needs). And the cache is off unless asked for.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpp
from dpp.runtime.config import DppConfig
from tests.conftest import spark_conf

pytestmark = pytest.mark.spark

OFF = {"spark.dpp.enabled": "false",
       "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
       "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
       "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false"}
CACHE = {"spark.dpp.filterCache.enabled": "true"}
DAYS = 6
DATES = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]


@pytest.fixture(scope="module")
def star(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("filter_cache_proof")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([day * 10 + i for i in range(3)],
                                                    pa.int64())}),
                       folder / "part-0.parquet")
    dsales = root / "dsales"
    for i, d in enumerate(DATES):
        folder = dsales / f"day={d}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"amount": pa.array([i * 10, i * 10 + 1], pa.int64())}),
                       folder / "part-0.parquet")
    with spark_conf(spark, {"spark.dpp.tables.pf_sales": str(sales),
                            "spark.dpp.tables.pf_dsales": str(dsales),
                            **CACHE}):
        session = dpp.enable(spark)
        assert session.optimizer_hook is not None, session.hook_note
        try:
            yield {"session": session, "root": root}
        finally:
            dpp.disable(spark)
            for v in ("pf_cal", "pf_ev"):
                spark.catalog.dropTempView(v)


def _run(spark: Any, session: Any, query: str) -> tuple[list[tuple], Any]:
    """The query's rows (asserted equal to Spark's with every pruning off) and dpp's report."""
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.sql(query).collect()))
    session.last_report = None
    got = sorted(map(tuple, spark.sql(query).collect()))
    assert got == expected, (query, got, expected)
    # a scan AQE skips (an empty dimension) is never listed: the report is then written when
    # Spark's listener bus ends the execution, after ``collect`` returned
    deadline = time.monotonic() + 30
    while session.last_report is None and time.monotonic() < deadline:
        time.sleep(0.1)
    report = session.last_report
    assert report is not None and report.kind == "plan", report
    return got, report


def _hits(report: Any) -> list[bool]:
    return [f.cache_hit for f in report.filters]


def _cal(root: Path, name: str, d: list[int], tag: list[str]) -> Path:
    folder = root / name
    folder.mkdir(exist_ok=True)
    pq.write_table(pa.table({"d": pa.array(d, pa.int32()), "tag": pa.array(tag)}),
                   folder / "part-0.parquet")
    return folder


Q = ("SELECT f.day, sum(f.amount) FROM pf_sales f JOIN pf_cal c ON f.day = c.d "
     "WHERE c.tag = 'x' GROUP BY f.day")


def test_the_cache_is_off_by_default(spark: Any, star: dict[str, Any]) -> None:
    assert DppConfig().filter_cache is False
    assert DppConfig.from_mapping({}).filter_cache is False
    spark.read.parquet(str(_cal(star["root"], "cal_default", [1, 2], ["x", "x"]))) \
        .createOrReplaceTempView("pf_cal")
    with spark_conf(spark, {"spark.dpp.filterCache.enabled": None}):
        for _ in range(2):
            rows, report = _run(spark, star["session"], Q)
            assert [r[0] for r in rows] == [1, 2]
            assert _hits(report) == [False], report.filters


def test_a_hit_needs_everything_equal(spark: Any, star: dict[str, Any]) -> None:
    """The same build side twice is a hit (the cache still works), a value-changing setting
    the rules do not read changed in between is a miss, and set back it is a hit again."""
    spark.read.parquet(str(_cal(star["root"], "cal_hit", [1, 2, 3], ["x", "x", "y"]))) \
        .createOrReplaceTempView("pf_cal")
    _rows, first = _run(spark, star["session"], Q)
    _rows, second = _run(spark, star["session"], Q)
    assert _hits(first) == [False] and _hits(second) == [True]
    for key, value in (("spark.sql.files.ignoreCorruptFiles", "true"),
                       ("spark.sql.parquet.binaryAsString", "true"),
                       ("spark.sql.legacy.sizeOfNull", "false")):
        with spark_conf(spark, {key: value}):
            _rows, report = _run(spark, star["session"], Q)
        assert _hits(report) == [False], key
    _rows, again = _run(spark, star["session"], Q)
    assert _hits(again) == [True]


def test_session_time_zone_changes_a_date_key_read_from_text(spark: Any,
                                                             star: dict[str, Any]) -> None:
    folder = star["root"] / "ev"
    folder.mkdir()
    pq.write_table(pa.table({"ts": pa.array(["2024-01-01T23:30:00Z", "2024-01-02T12:00:00Z"]),
                             "tag": pa.array(["x", "x"])}), folder / "part-0.parquet")
    spark.read.parquet(str(folder)).createOrReplaceTempView("pf_ev")
    q = ("SELECT f.day, sum(f.amount) FROM pf_dsales f JOIN pf_ev e "
         "ON f.day = to_date(CAST(e.ts AS TIMESTAMP)) WHERE e.tag = 'x' GROUP BY f.day")
    # Tokyo first: both instants fall on 2024-01-02 there; in UTC the first is 2024-01-01
    with spark_conf(spark, {"spark.sql.session.timeZone": "Asia/Tokyo"}):
        rows, _ = _run(spark, star["session"], q)
    assert [str(r[0]) for r in rows] == ["2024-01-02"]
    with spark_conf(spark, {"spark.sql.session.timeZone": "UTC"}):
        rows, report = _run(spark, star["session"], q)
    assert [str(r[0]) for r in rows] == ["2024-01-01", "2024-01-02"]
    assert _hits(report) == [False]


def test_ansi_toggled_a_cast_gives_null_or_fails(spark: Any, star: dict[str, Any]) -> None:
    folder = star["root"] / "cal_text"
    folder.mkdir()
    pq.write_table(pa.table({"s": pa.array(["1", "2", "x"]), "tag": pa.array(["x"] * 3)}),
                   folder / "part-0.parquet")
    spark.read.parquet(str(folder)).createOrReplaceTempView("pf_cal")
    q = ("SELECT f.day, sum(f.amount) FROM pf_sales f JOIN pf_cal c "
         "ON f.day = CAST(c.s AS INT) WHERE c.tag = 'x' GROUP BY f.day")
    with spark_conf(spark, {"spark.sql.ansi.enabled": "false"}):
        rows, _ = _run(spark, star["session"], q)
        assert [r[0] for r in rows] == [1, 2]
    with spark_conf(spark, {"spark.sql.ansi.enabled": "true"}):
        with spark_conf(spark, OFF), pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            spark.sql(q).collect()
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            spark.sql(q).collect()
    with spark_conf(spark, {"spark.sql.ansi.enabled": "false"}):
        rows, _ = _run(spark, star["session"], q)
        assert [r[0] for r in rows] == [1, 2]


def test_case_sensitivity_toggled_changes_what_a_user_schema_reads(spark: Any,
                                                                    star: dict[str, Any]
                                                                    ) -> None:
    folder = _cal(star["root"], "cal_case", [1, 2, 3], ["x", "x", "y"])
    # the user's schema names the file's ``tag`` as ``TAG``: case-insensitive Parquet reads
    # it, case-sensitive reads NULLs (no key passes the filter)
    spark.read.schema("d INT, TAG STRING").parquet(str(folder)).createOrReplaceTempView("pf_cal")
    q = ("SELECT f.day, sum(f.amount) FROM pf_sales f JOIN pf_cal c ON f.day = c.d "
         "WHERE c.TAG = 'x' GROUP BY f.day")
    with spark_conf(spark, {"spark.sql.caseSensitive": "true"}):
        rows, _ = _run(spark, star["session"], q)
    assert rows == []
    with spark_conf(spark, {"spark.sql.caseSensitive": "false"}):
        rows, report = _run(spark, star["session"], q)
    assert [r[0] for r in rows] == [1, 2]
    assert _hits(report) == [False]


def test_a_file_rewritten_in_place_with_same_size_and_mtime(spark: Any,
                                                            star: dict[str, Any]) -> None:
    folder = _cal(star["root"], "cal_inplace", [1, 2, 3], ["y", "y", "x"])
    path = folder / "part-0.parquet"
    before = os.stat(path)
    spark.read.parquet(str(folder)).createOrReplaceTempView("pf_cal")
    rows, _ = _run(spark, star["session"], Q)
    assert [r[0] for r in rows] == [3]
    # the same values in another order: same size, same statistics; mtime set back
    pq.write_table(pa.table({"d": pa.array([1, 2, 3], pa.int32()),
                             "tag": pa.array(["x", "x", "y"])}), path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)
    rows, report = _run(spark, star["session"], Q)   # the same view: Spark reads the file anew
    assert [r[0] for r in rows] == [1, 2]
    assert _hits(report) == [False]


def test_a_view_redefined_with_other_reader_options(spark: Any, star: dict[str, Any]) -> None:
    folder = star["root"] / "cal_csv"
    folder.mkdir()
    (folder / "part-0.csv").write_text("d,tag\n1,x\n2,x\n3,y\n")

    def view(**options: str) -> None:
        spark.read.schema("d INT, tag STRING").option("header", "true").options(**options) \
            .csv(str(folder)).createOrReplaceTempView("pf_cal")

    view(nullValue="1")          # d = 1 reads as NULL: only day 2
    rows, _ = _run(spark, star["session"], Q)
    assert [r[0] for r in rows] == [2]
    view()                       # same files, same schema, same plan text: days 1 and 2
    rows, report = _run(spark, star["session"], Q)
    assert [r[0] for r in rows] == [1, 2]
    assert _hits(report) == [False]


@pytest.mark.parametrize("key,value", [
    ("spark.sql.session.timeZone", "Asia/Tokyo"),
    ("spark.sql.ansi.enabled", "false"),
    ("spark.sql.caseSensitive", "true"),
    ("spark.sql.parquet.datetimeRebaseModeInRead", "LEGACY"),
    ("spark.sql.parquet.int96RebaseModeInRead", "LEGACY"),
    ("spark.sql.legacy.parquet.datetimeRebaseModeInRead", "LEGACY"),
    ("spark.sql.files.ignoreMissingFiles", "true"),
    ("spark.sql.files.ignoreCorruptFiles", "true"),
    ("spark.sql.sources.partitionColumnTypeInference.enabled", "false"),
    ("spark.sql.legacy.timeParserPolicy", "LEGACY"),
    ("spark.sql.legacy.castComplexTypesToString.enabled", "true"),
    ("spark.sql.storeAssignmentPolicy", "LEGACY"),
    ("spark.sql.parquet.binaryAsString", "true"),
    ("spark.sql.parquet.int96AsTimestamp", "false"),
    ("spark.sql.mapKeyDedupPolicy", "LAST_WIN"),
])
def test_each_value_changing_setting_is_in_the_signature(spark: Any, star: dict[str, Any],
                                                         key: str, value: str) -> None:
    from dpp.runtime.cache_proof import settings_signature

    df = spark.read.parquet(str(_cal(star["root"], "cal_sig", [1], ["x"])))
    base = settings_signature(df)
    assert base is not None
    with spark_conf(spark, {key: value}):
        changed = settings_signature(spark.read.parquet(str(star["root"] / "cal_sig")))
    assert changed is not None and changed != base, key
    assert settings_signature(spark.read.parquet(str(star["root"] / "cal_sig"))) == base


def test_relations_hold_schemas_and_reader_options(spark: Any, star: dict[str, Any]) -> None:
    from dpp.runtime.cache_proof import relations_signature

    folder = str(_cal(star["root"], "cal_rel", [1], ["x"]))
    plain = relations_signature(spark.read.parquet(folder))
    assert plain is not None
    assert relations_signature(spark.read.parquet(folder)) == plain
    assert relations_signature(spark.read.schema("d BIGINT, tag STRING").parquet(folder)) \
        not in (None, plain)
    assert relations_signature(spark.read.option("datetimeRebaseMode", "LEGACY")
                               .parquet(folder)) not in (None, plain)
    local = spark.createDataFrame([(1, "x")], "d INT, tag STRING")
    assert relations_signature(spark.read.parquet(folder).union(local)) is None
