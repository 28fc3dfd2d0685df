"""Spark Connect, client side: dpp gives Spark's rows where names and texts do not say what
Spark resolves.

The client-side rewrites see a plan (or SQL text) before Spark resolves it: a DataFrame used
twice shares one ``plan_id``, ``f["meta.day"]`` looks like a column named ``day``, a
dimension filter can be ``rand()`` inside a SQL string, a redefined view keeps its name, a
cached plan is only used for that plan, a user's view may carry a declared table's name, a
folder's columns and types are what Spark's reader (and its settings) make of them. Each test
runs the same job on a plain session (no dpp, no Spark DPP) and on a ``dpp.enable``d one,
with the DataFrame rewrite (``spark.dpp.connect.dataFrames``) switched on where the job is a
DataFrame one, and compares the rows; where the rewrite must refuse, the report says so;
where it may prune (``on="day"``, ``alias("f")``/``alias("d")``), it does.

One real Spark Connect server, shared with other modules (``tests/conftest.py``); Parquet written by
pyarrow and by Spark.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest

from tests.conftest import make_partitioned_table, write_parquet
from tests.connect_server import client as _client

SPARK_DPP_OFF = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
FRAMES = "spark.dpp.connect.dataFrames"
INFERENCE = "spark.sql.sources.partitionColumnTypeInference.enabled"


@pytest.fixture(scope="module")
def connect_server(plain_connect_server: Any) -> Any:
    """The session's plain Connect server (``tests/conftest.py``): this module's client
    sessions and tables are its own."""
    return plain_connect_server


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``fold``: a folder by ``day`` (30 partitions, 10 rows each); ``dup``: a folder by
    ``day`` whose files hold ``day`` too (first column); ``days``: the calendar (7 days a
    week), also with a ``day`` column for ``on="day"``."""
    root = tmp_path_factory.mktemp("identity-data")
    make_partitioned_table(root / "fold", {(("day", str(d)),): {"v": [d * 100 + i for i in range(10)]}
                                          for d in range(30)})
    make_partitioned_table(root / "dup", {(("day", str(d)),): {"day": [d, d], "v": [d, d + 50]}
                                         for d in range(30)},
                           schema=pa.schema([("day", pa.int32()), ("v", pa.int64())]))
    write_parquet(root / "days" / "part-0.parquet",
                  {"d_day": list(range(30)), "d_week": [d // 7 for d in range(30)],
                   "day": list(range(30))},
                  schema=pa.schema([("d_day", pa.int32()), ("d_week", pa.int32()),
                                    ("day", pa.int32())]))
    return {"root": root, "fold": root / "fold", "dup": root / "dup", "days": root / "days"}


def _dims(spark: Any, data: dict[str, Path]) -> None:
    """``days`` (``d_day``, ``d_week``) and ``caldays``, which also names its day ``day``."""
    cal = spark.read.parquet(str(data["days"]))
    cal.createOrReplaceTempView("caldays")
    cal.select("d_day", "d_week").createOrReplaceTempView("days")


@pytest.fixture(scope="module")
def plain(connect_server: Any, data: dict[str, Path]) -> Iterator[Any]:
    """The reference session; it also makes the catalog table ``cat_s`` (Spark's Parquet):
    ``v``, a struct ``meta`` whose ``day`` is another day than the partition's, ``day``."""
    spark = _client(connect_server.url)
    spark.conf.set(SPARK_DPP_OFF, "false")
    _dims(spark, data)
    spark.sql(f"CREATE TABLE cat_s (v INT, meta STRUCT<day: INT>, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{data['root'] / 'cat_s'}'")
    spark.sql("INSERT INTO cat_s SELECT CAST(id AS INT), named_struct('day', "
              "CAST((id % 30 + 10) % 30 AS INT)), CAST(id % 30 AS INT) FROM range(300)")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def connect(connect_server: Any, data: dict[str, Path], plain: Any) -> Iterator[Any]:
    import dpp

    spark = _client(connect_server.url)
    spark.conf.set("spark.dpp.tables.fold", str(data["fold"]))
    spark.conf.set("spark.dpp.tables.dup", str(data["dup"]))
    _dims(spark, data)
    dpp.enable(spark)
    yield spark
    dpp.disable(spark)
    spark.stop()


@pytest.fixture
def frames(connect: Any) -> Iterator[Any]:
    connect.conf.set(FRAMES, "true")
    yield connect
    connect.conf.unset(FRAMES)


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _report(spark: Any) -> dict[str, Any]:
    import dpp

    report = dpp.session_of(spark).last_report
    assert report is not None
    return report.to_dict()


def _entries(spark: Any, table: str) -> list[dict[str, Any]]:
    return [t for t in _report(spark)["tables"] if t["table"] == table]


def _fresh_report(spark: Any) -> None:
    import dpp

    dpp.session_of(spark).last_report = None


# ---------------------------------------------------------------- a DataFrame read twice

def _weeks_twice(spark: Any, how: str) -> Any:
    f = spark.table("cat_s")
    d1 = spark.table("days").where("d_week = 1")
    d2 = spark.table("days").where("d_week = 2")
    a = f.join(d1, f["day"] == d1["d_day"]).select(f["v"], f["day"])
    b = f.join(d2, f["day"] == d2["d_day"]).select(f["v"], f["day"])
    if how == "union":
        return a.union(b)
    b2 = b.withColumnRenamed("v", "v2").withColumnRenamed("day", "day2")
    return a.join(b2, a["day"] + 7 == b2["day2"])


@pytest.mark.parametrize("how", ["union", "join"])
def test_one_fact_dataframe_in_two_star_joins(frames, plain, how):
    """``f`` joined to week 1 and to week 2 in one plan: both uses share ``f``'s plan id;
    one view cannot stand for both (pruned by the intersection, only one use replaced)."""
    _fresh_report(frames)
    expected = _rows(_weeks_twice(plain, how))
    assert _rows(_weeks_twice(frames, how)) == expected
    if how == "union":
        assert len(expected) == 140
    entries = _entries(frames, "cat_s")
    assert entries and all(t["pruning"] != "applied" for t in entries), entries
    assert "more than once" in entries[0]["reason"]


# ---------------------------------------------------------------- what a name resolves to

def test_nested_field_key_is_not_the_partition_column(frames, plain):
    """``f["meta.day"]`` is field ``day`` of struct ``meta``, not the partition ``day``."""
    def job(spark: Any) -> Any:
        f = spark.table("cat_s")
        d = spark.table("days").where("d_week = 1")
        return f.join(d, f["meta.day"] == d["d_day"]).select("v", "d_day")

    expected = _rows(job(plain))
    assert len(expected) == 70
    assert _rows(job(frames)) == expected


def test_qualified_nested_field_key_is_not_the_partition_column(frames, plain):
    from dpp.core.remote import functions_for

    def job(spark: Any) -> Any:
        F = functions_for(spark)
        f = spark.table("cat_s")
        d = spark.table("days").where("d_week = 1")
        return f.join(d, F.col("meta.day") == F.col("d_day")).select("v", "d_day")

    assert _rows(job(frames)) == _rows(job(plain))


@pytest.mark.parametrize("shape", ["using", "aliases"])
def test_same_column_name_on_both_sides_prunes(frames, plain, shape):
    """``on="day"`` and ``alias("f")``/``alias("d")`` with ``col("f.day") == col("d.day")``:
    Spark resolves each name on its own side, so the fact's ``day`` is the partition column;
    pruned, Spark's rows."""
    from dpp.core.remote import functions_for

    def job(spark: Any) -> Any:
        F = functions_for(spark)
        f = spark.table("cat_s")
        d = spark.table("caldays").where("d_week = 1")
        if shape == "using":
            return f.join(d, "day").select("day", "v", "d_week")
        return (f.alias("f").join(d.alias("d"), F.col("f.day") == F.col("d.day"))
                .select("f.day", "v", "d_week"))

    expected = _rows(job(plain))
    assert len(expected) == 70
    _fresh_report(frames)
    assert _rows(job(frames)) == expected
    entries = _entries(frames, "cat_s")
    assert entries and entries[0]["pruning"] == "applied", entries
    assert entries[0]["partitions_kept"] == 7


# ---------------------------------------------------------------- build sides drawn again

def test_random_dimension_filter_in_sql_text_is_not_drawn_again(frames, plain):
    """``days.where("rand() < 0.5")`` as the preserved side of a left join: every drawn day
    has its fact rows. A build side run again draws other days, and pruning by those would
    leave drawn days without theirs (nulls)."""
    def job(spark: Any) -> Any:
        f = spark.table("cat_s")
        d = spark.table("days").where("rand() < 0.5")
        return d.join(f, d["d_day"] == f["day"], "left").select("d_day", "v")

    for _ in range(2):
        _fresh_report(frames)
        got = job(frames).collect()
        assert got and all(r.v is not None for r in got), [r for r in got if r.v is None]
        entries = _entries(frames, "cat_s")
        assert entries and entries[0]["pruning"] != "applied", entries
        assert "not deterministic" in entries[0]["reason"]
    ref = job(plain).collect()
    assert ref and all(r.v is not None for r in ref)


# ---------------------------------------------------------------- the filter cache

def test_redefined_view_is_not_served_the_old_filter(connect, plain, data):
    """SQL text path: the same query text over a temporary view redefined with another
    filter (same name, same files) gets the new view's rows, not the old filter's."""
    query = ("SELECT day, count(*) AS n FROM fold JOIN dsel ON day = d_day "
             "WHERE d_week < 5 GROUP BY day")   # a predicate of its own: a build side
    plain.read.parquet(str(data["fold"])).createOrReplaceTempView("fold")
    try:
        for week_filter in ("d_week = 1", "d_day = 20"):
            for spark in (plain, connect):
                spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW dsel AS SELECT * FROM days "
                          f"WHERE {week_filter}")
            expected = _rows(plain.sql(query))
            assert expected
            assert _rows(connect.sql(query)) == expected, week_filter
            entries = _entries(connect, "fold")
            assert entries and entries[0]["pruning"] == "applied", (entries[0]["reason"], _report(connect)["analysis_notes"])
    finally:
        plain.catalog.dropTempView("fold")


# ---------------------------------------------------------------- results Spark reuses

def test_cached_plan_is_what_spark_reads(frames, plain, data):
    """``df.cache()`` then files added to a kept partition: Spark answers from the cache;
    the rewrite must not read the folder around it."""
    def job(spark: Any) -> Any:
        f = spark.read.parquet(str(data["fold"]))
        d = spark.table("days").where("d_week = 1")
        return f.join(d, f["day"] == d["d_day"]).select("v", "day")

    p, c = job(plain).cache(), job(frames).cache()
    try:
        assert p.count() == c.count() == 70
        extra = data["fold"] / "day=8" / "part-extra.parquet"
        write_parquet(extra, {"v": list(range(9000, 9026))})
        try:
            assert _rows(c) == _rows(p)
            assert c.count() == p.count() == 70
        finally:
            extra.unlink()
    finally:
        p.unpersist()
        c.unpersist()


def test_users_view_named_like_a_declared_table_wins(frames, plain, data):
    """The user's own view ``fold`` (a subset) is what ``spark.table("fold")`` reads, not
    the declared folder of that name."""
    def job(spark: Any) -> Any:
        spark.read.parquet(str(data["fold"])).where("v % 100 < 3") \
            .createOrReplaceTempView("fold")
        f = spark.table("fold")
        d = spark.table("days").where("d_week = 1")
        return f.join(d, f["day"] == d["d_day"]).select("v", "day")

    try:
        expected = _rows(job(plain))
        assert len(expected) == 21
        assert _rows(job(frames)) == expected
    finally:
        for spark in (plain, frames):
            spark.catalog.dropTempView("fold")


def test_partition_column_stored_in_the_files_keeps_spark_column_order(frames, plain, data):
    """Files of ``dup`` hold ``day`` first: Spark's reader puts it there, before ``v``."""
    def job(spark: Any) -> Any:
        f = spark.read.parquet(str(data["dup"]))
        d = spark.table("days").where("d_week = 1").select("d_day")
        return f.join(d, f["day"] == d["d_day"])

    expected = job(plain)
    got = job(frames)
    assert got.columns == expected.columns
    assert _rows(got) == _rows(expected)


def test_partition_type_inference_off_is_honoured(frames, plain, data):
    """With ``partitionColumnTypeInference.enabled=false`` Spark reads ``day`` as a string."""
    def job(spark: Any) -> Any:
        f = spark.read.parquet(str(data["fold"]))
        d = spark.table("days").where("d_week = 1").select("d_day")
        return f.join(d, f["day"] == d["d_day"]).select("v", "day")

    for spark in (plain, frames):
        spark.conf.set(INFERENCE, "false")
    try:
        expected = job(plain)
        got = job(frames)
        assert [f.dataType for f in got.schema.fields] == \
            [f.dataType for f in expected.schema.fields]
        assert _rows(got) == _rows(expected)
        assert isinstance(_rows(got)[0][1], str)
    finally:
        for spark in (plain, frames):
            spark.conf.unset(INFERENCE)


def test_dataframe_rewrite_is_off_by_default(connect, plain):
    """Without ``spark.dpp.connect.dataFrames`` a DataFrame star join goes out as built."""
    def job(spark: Any) -> Any:
        f = spark.table("cat_s")
        d = spark.table("days").where("d_week = 1")
        return f.join(d, f["day"] == d["d_day"]).select("v", "day")

    _fresh_report(connect)
    assert _rows(job(connect)) == _rows(job(plain))
    import dpp

    assert dpp.session_of(connect).last_report is None
    assert "spark.dpp.connect.dataFrames" in dpp.session_of(connect).hook_note


# ---------------------------------------------------------------- dpp's own semantics

def test_a_spark_sql_dataframe_keeps_the_listing_of_its_creation(connect, data, tmp_path):
    """dpp's documented semantics for a declared folder on Spark Connect: a ``spark.sql``
    DataFrame that dpp pruned reads the files listed when it was made; a file added later is
    read by the next ``spark.sql`` call (the same text), which lists again."""
    folder = tmp_path / "snap"
    make_partitioned_table(folder, {(("day", str(d)),): {"v": [d * 100 + i for i in range(10)]}
                                    for d in range(30)})
    connect.conf.set("spark.dpp.tables.snap", str(folder))
    try:
        query = ("SELECT s.v, s.day FROM snap s JOIN days d ON s.day = d.d_day "
                 "WHERE d.d_week = 1")
        _fresh_report(connect)
        first = connect.sql(query)
        before = _rows(first)
        assert len(before) == 70 and _entries(connect, "snap")[0]["pruning"] == "applied"
        write_parquet(folder / "day=8" / "late.parquet", {"v": [9999]},
                      schema=pa.schema([("v", pa.int64())]))
        assert _rows(first) == before                       # the same DataFrame: its listing
        again = _rows(connect.sql(query))                   # a new spark.sql: listed again
        assert again == sorted(before + [(9999, 8)], key=repr)
    finally:
        connect.conf.unset("spark.dpp.tables.snap")
