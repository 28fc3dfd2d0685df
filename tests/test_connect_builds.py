"""The Spark Connect DataFrame rewrite's build sides against a real Connect server
(:mod:`dpp.frontends.connect.builds`): a build side that filters nothing narrowed by the probe side's
other key (TPC-DS q72's two calendars), the shapes where that narrowing would drop rows, and
data-column keys (Parquet statistics) with ``statsPruning`` on and off.

Beside ``tests/test_connect.py`` (already past the project's 600 lines a file), with a server
and data of its own. Every query's rows are compared with a second client session that has
neither dpp nor Spark's own dynamic pruning, and with ``spark.dpp.enabled=false`` on the
dpp session; the report says how many partitions (or files) were kept.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from tests.conftest import make_partitioned_table, write_parquet
from tests.connect_server import client as _client

SPARK_DPP_OFF = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
WEEK_1 = list(range(8, 15))   # the days of d_week = 1


@pytest.fixture(scope="module")
def connect_server(plain_connect_server: Any) -> Any:
    """The session's plain Connect server (``tests/conftest.py``): this module's client
    sessions and tables are its own."""
    return plain_connect_server


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``inv`` by ``day`` (30 partitions, two files each: items 0-3 and 4-6, so statistics
    can tell them apart), the calendar ``days`` (weeks of 7 days; day 30's week is NULL),
    ``orders`` (one a day, item ``day % 4``) and ``items`` (item 6 alone is black)."""
    root = tmp_path_factory.mktemp("connect-builds-data")
    make_partitioned_table(root / "inv", {(("day", str(d)),): {
        "item": list(range(7)), "qty": [d * 10 + i for i in range(7)]} for d in range(1, 31)},
        files_per_partition=2)
    write_parquet(root / "days" / "part-0.parquet",
                  {"d_day": list(range(1, 31)),
                   "d_week": [(d - 1) // 7 if d < 30 else None for d in range(1, 31)]})
    write_parquet(root / "orders" / "part-0.parquet",
                  {"o_day": list(range(1, 31)), "o_item": [d % 4 for d in range(1, 31)]})
    write_parquet(root / "items" / "part-0.parquet",
                  {"i_item": list(range(7)),
                   "i_color": ["red", "blue", "red", "green", "blue", "red", "black"]})
    return {"root": root, "inv": root / "inv", "days": root / "days",
            "orders": root / "orders", "items": root / "items"}


def _views(spark: Any, data: dict[str, Path]) -> None:
    for name in ("days", "orders", "items"):
        spark.read.parquet(str(data[name])).createOrReplaceTempView(name)


@pytest.fixture(scope="module")
def plain(connect_server: Any, data: dict[str, Path]) -> Iterator[Any]:
    """The reference session: no dpp, no Spark DPP; also makes the catalog table
    ``cat_inv`` over ``inv``'s folder (the server's catalog is every session's)."""
    spark = _client(connect_server.url)
    spark.conf.set(SPARK_DPP_OFF, "false")
    _views(spark, data)
    spark.sql(f"CREATE TABLE cat_inv (item BIGINT, qty BIGINT, day INT) USING parquet "
              f"PARTITIONED BY (day) LOCATION '{data['inv']}'")
    spark.sql("ALTER TABLE cat_inv RECOVER PARTITIONS")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def connect(connect_server: Any, data: dict[str, Path], plain: Any) -> Iterator[Any]:
    """The job's session: ``dpp.enable``d, ``inv`` declared, the DataFrame rewrite on."""
    import dpp

    spark = _client(connect_server.url)
    spark.conf.set("spark.dpp.tables.inv", str(data["inv"]))
    spark.conf.set("spark.dpp.connect.dataFrames", "true")
    _views(spark, data)
    dpp.enable(spark)
    yield spark
    dpp.disable(spark)
    spark.stop()


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _checked(connect: Any, plain: Any, build: Callable[[Any], Any],
             settings: Optional[dict[str, str]] = None) -> tuple[list[tuple], Optional[dict]]:
    """``build(session)``'s rows through dpp (with ``settings``), checked against the plain
    session's and against spark.dpp.enabled=false; with dpp's report of it (None: the plan
    was sent as built without one)."""
    import dpp

    session = dpp.session_of(connect)
    settings = settings or {}
    for k, v in settings.items():
        connect.conf.set(k, v)
    try:
        session.last_report = None
        got = _rows(build(connect))
        report = session.last_report
        expected = _rows(build(plain))
        assert expected, "the case must have rows to compare"
        assert got == expected
        connect.conf.set("spark.dpp.enabled", "false")
        assert _rows(build(connect)) == expected
    finally:
        connect.conf.unset("spark.dpp.enabled")
        for k in settings:
            connect.conf.unset(k)
    return expected, (report.to_dict() if report is not None else None)


def _entries(report: Optional[dict], table: str) -> list[dict[str, Any]]:
    return [t for t in (report or {}).get("tables", []) if t["table"] == table]


def _kept(report: Optional[dict], table: str) -> Optional[int]:
    """Partitions of ``table`` kept by dpp's pruning; None when it did not prune them."""
    pruned = [t for t in _entries(report, table) if t["pruning"] == "applied"
              and t["partitions_kept"] < t["partitions_total"]]
    assert len(pruned) <= 1, pruned
    return pruned[0]["partitions_kept"] if pruned else None


# ---------------------------------------------------------------------- q72's narrowing

def _fact(spark: Any, data: dict[str, Path], kind: str) -> Any:
    return spark.read.parquet(str(data["inv"])) if kind == "path" else spark.table("cat_inv")


def _q72(spark: Any, data: dict[str, Path], kind: str, shape: str) -> Any:
    """Two calendars: ``d1`` filtered (week 1; for ``null_safe`` also the NULL week), ``d2``
    whole, joined to the fact on its day and on ``d1``'s week."""
    from dpp.core.remote import functions_for

    F = functions_for(spark)
    inv, o = _fact(spark, data, kind), spark.table("orders")
    d1 = spark.table("days").where("d_week = 1" + (" OR d_week IS NULL"
                                                  if shape == "null_safe" else ""))
    d2 = spark.table("days")
    week = (d1["d_week"].eqNullSafe(d2["d_week"]) if shape == "null_safe"
            else d1["d_week"] == d2["d_week"])
    if shape == "one_calendar_aliased":   # both calendars from one DataFrame, as in SQL
        days = spark.table("days")
        d1, d2 = days.alias("d1").where("d1.d_week = 1"), days.alias("d2")
        j = o.join(d1, o["o_day"] == F.col("d1.d_day")).join(inv, o["o_item"] == inv["item"])
        out = j.join(d2, (inv["day"] == F.col("d2.d_day"))
                     & (F.col("d1.d_week") == F.col("d2.d_week")))
        return out.groupBy(inv["day"], F.col("d2.d_week")).agg(
            F.sum(inv["qty"]).alias("q"), F.count(F.lit(1)).alias("n"))
    if shape in ("q72", "null_safe"):
        j = o.join(d1, o["o_day"] == d1["d_day"]).join(inv, o["o_item"] == inv["item"])
    elif shape == "d1_null_supplied":   # d1 on the NULL-supplied side of the probe side
        j = inv.join(o, inv["item"] == o["o_item"]).join(d1, o["o_day"] == d1["d_day"], "left")
    elif shape == "d2_preserved":   # every d2 day comes out; the fact's only where matched
        j = o.join(d1, o["o_day"] == d1["d_day"]).join(inv, o["o_item"] == inv["item"])
        out = d2.join(j, (inv["day"] == d2["d_day"]) & week, "left")
        return out.groupBy(d2["d_day"], inv["day"]).agg(F.sum(inv["qty"]).alias("q"),
                                                        F.count(F.lit(1)).alias("n"))
    else:
        raise AssertionError(shape)
    out = j.join(d2, (inv["day"] == d2["d_day"]) & week)
    return out.groupBy(inv["day"], d2["d_week"]).agg(F.sum(inv["qty"]).alias("q"),
                                                     F.count(F.lit(1)).alias("n"))


@pytest.mark.parametrize("kind", ["path", "catalog"])
@pytest.mark.parametrize("shape", ["q72", "d1_null_supplied", "one_calendar_aliased",
                                   "d2_preserved"])
def test_an_unfiltered_calendar_narrowed_by_the_other_ones_week_prunes_the_fact(
        connect, plain, data, kind, shape):
    """q72: ``d2`` filters nothing itself, but a fact row reaches the output only with a
    ``d2`` day whose week some ``d1`` row has, so the build side is ``d2 ⋉ d1`` on the week
    (a LEFT SEMI join) and the fact keeps week 1's 7 days. With ``d1`` on the NULL-supplied
    side of the probe side too (a NULL week equals no ``d2`` week), both calendars aliases
    of one DataFrame, and ``d2`` preserved by a left join (the fact is its NULL-supplied
    side: a pruned fact row matched no ``d2`` row)."""
    table = "inv" if kind == "path" else "cat_inv"
    rows, report = _checked(connect, plain, lambda s: _q72(s, data, kind, shape),
                            {"spark.dpp.statsPruning.enabled": "false"})
    if shape == "d2_preserved":   # (d2's day, the fact's day or None for unmatched)
        assert {r[0] for r in rows} == set(range(1, 31))
        assert {r[1] for r in rows} - {None} <= set(WEEK_1)
    else:
        assert {r[0] for r in rows} <= set(WEEK_1)
    assert _kept(report, table) == 7, report and report["tables"]
    assert " ⋉ (" in report["query_text"], report["query_text"]


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_a_null_safe_week_is_no_narrowing_key(connect, plain, data, kind):
    """``d1.week <=> d2.week`` matches day 30's NULL week: narrowing by an equality would drop
    its partition and its rows. ``<=>`` is no key, so ``d2`` filters nothing: not pruned."""
    table = "inv" if kind == "path" else "cat_inv"
    rows, report = _checked(connect, plain, lambda s: _q72(s, data, kind, "null_safe"),
                            {"spark.dpp.statsPruning.enabled": "false"})
    assert 30 in {r[0] for r in rows}, rows
    assert _kept(report, table) is None, report and report["tables"]


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_a_calendar_narrowed_on_the_build_sides_outer_join_is_not_narrowed(connect, plain,
                                                                            data, kind):
    """``d2 ⟕ d1`` on the week is the build side: every ``d2`` day stays in it, matched or
    not, so narrowing ``d2`` by ``d1`` there would drop fact rows of other weeks. The pair's
    build side is the whole outer join: all 30 days, nothing pruned."""
    table = "inv" if kind == "path" else "cat_inv"

    def build(spark: Any) -> Any:
        inv = _fact(spark, data, kind)
        d1, d2 = spark.table("days").where("d_week = 1"), spark.table("days")
        outer = d2.join(d1, d2["d_week"] == d1["d_week"], "left")
        return inv.join(outer, inv["day"] == d2["d_day"]).select(inv["day"], inv["qty"],
                                                                 d1["d_day"])

    rows, report = _checked(connect, plain, build, {"spark.dpp.statsPruning.enabled": "false"})
    assert {r[0] for r in rows} == set(range(1, 31))
    assert _kept(report, table) is None, report and report["tables"]


# ---------------------------------------------------------------------- data columns

def _black(spark: Any, data: dict[str, Path], kind: str) -> Any:
    """The fact joined on its *data* column ``item`` to the black items (item 6 only)."""
    inv, items = _fact(spark, data, kind), spark.table("items").where("i_color = 'black'")
    return inv.join(items, inv["item"] == items["i_item"]).select(inv["day"], inv["qty"])


@pytest.mark.parametrize("stats", ["true", "false", "auto"])
def test_a_data_column_key_skips_files_by_statistics_only_when_asked(connect, plain, data,
                                                                     stats):
    """With ``statsPruning.enabled=true`` the client reads the kept files' footers and drops
    each partition's file of items 0-3 (its max is below 6): 30 of 60 files. With ``false``
    no filter is worth building: the plan goes out as built, with no report. ``auto`` (the
    default) samples footers on the client and says its verdict once; if it judges the
    statistics unable to pay, the read is sent as built and the report says why."""
    rows, report = _checked(connect, plain, lambda s: _black(s, data, "path"),
                            {"spark.dpp.statsPruning.enabled": stats})
    assert len(rows) == 30
    if stats == "false":
        assert report is None, report
        return
    (entry,) = _entries(report, "inv")
    if stats == "auto":
        verdicts = [n for n in report["analysis_notes"] if "statistics pruning (auto)" in n]
        assert len(verdicts) == 1, report["analysis_notes"]
        if entry["pruning"] == "none":
            assert "no filter worth building" in entry["reason"], entry
            return
    assert entry["pruning"] == "applied", entry
    assert (entry["partitions_kept"], entry["partitions_total"]) == (30, 30), entry
    assert (entry["files_pruned_stats"], entry["files_kept"]) == (30, 30), entry


def test_a_catalog_tables_data_column_key_builds_nothing(connect, plain, data):
    """A catalog table on Connect is handed as a partition predicate (Spark reads the kept
    partitions' files whole): a data column's filter could skip nothing, so none is built,
    whatever ``statsPruning`` says; the plan goes out as built."""
    _rows_, report = _checked(connect, plain, lambda s: _black(s, data, "catalog"),
                              {"spark.dpp.statsPruning.enabled": "true"})
    assert report is None, report


def test_a_data_column_key_beside_a_narrowed_partition_key(connect, plain, data):
    """q72 with statistics on: the partition key (narrowed) keeps week 1's 7 days, and the
    data key ``item`` (built from orders ⋈ d1: week 1's orders are of items 0-3) skips each
    kept day's file of items 4-6 by its footer."""
    _rows_, report = _checked(connect, plain, lambda s: _q72(s, data, "path", "q72"),
                              {"spark.dpp.statsPruning.enabled": "true"})
    assert _kept(report, "inv") == 7, report and report["tables"]
    (entry,) = _entries(report, "inv")
    assert (entry["files_pruned_stats"], entry["files_kept"]) == (7, 7), entry


def test_a_partition_key_refused_beside_a_data_key_is_said(connect, plain, data):
    """The fact's partition key joins a calendar drawn with ``rand()`` (refused: run again
    it may keep other days), its data key the black items (statistics on): the data key
    prunes, and the report says why the partition key did not."""
    def job(spark: Any) -> Any:
        from dpp.core.remote import functions_for

        F = functions_for(spark)
        inv = _fact(spark, data, "path")
        days = spark.table("days").where(F.rand(7) < 2.0)   # every day, but not provably
        items = spark.table("items").where("i_color = 'black'")
        return inv.join(days, inv["day"] == days["d_day"]).join(
            items, inv["item"] == items["i_item"]).select(inv["day"], inv["qty"])

    rows, report = _checked(connect, plain, job, {"spark.dpp.statsPruning.enabled": "true"})
    assert len(rows) == 30
    (entry,) = _entries(report, "inv")
    assert (entry["files_pruned_stats"], entry["files_kept"]) == (30, 30), entry
    assert any(n.startswith("inv: ") and "not deterministic" in n
               for n in report["analysis_notes"]), report["analysis_notes"]


@pytest.mark.parametrize("kind", ["path", "catalog"])
def test_a_calendar_inside_an_aggregate_narrowed_by_a_join_above_it(connect, plain, data, kind):
    """TPC-DS q2's shape: the fact joins the whole calendar inside a weekly aggregate, which
    joins the weeks of days 8-10 (week 1). The calendar ⋉ those weeks keeps week 1's 7
    days."""
    def job(spark: Any) -> Any:
        from dpp.core.remote import functions_for

        F = functions_for(spark)
        inv, days = _fact(spark, data, kind), spark.table("days")
        weekly = (inv.join(days, inv["day"] == days["d_day"]).groupBy(days["d_week"])
                  .agg(F.sum(inv["qty"]).alias("q")))
        picked = spark.table("days").where("d_day BETWEEN 8 AND 10").select(
            F.col("d_week").alias("w"))
        return weekly.join(picked, weekly["d_week"] == picked["w"])

    rows, report = _checked(connect, plain, job)
    assert len(rows) == 3 and {r[0] for r in rows} == {1}
    assert _kept(report, "inv" if kind == "path" else "cat_inv") == 7, \
        report and report["tables"]
    assert " ⋉ (" in report["query_text"], report["query_text"]
