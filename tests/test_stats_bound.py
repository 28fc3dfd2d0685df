"""A comparison with a whole table's column prunes by that column's bounds, read from the
Parquet footers of every file of the table (no scan).

``stock JOIN sales ON stock.item = sales.item AND stock.qty < sales.quantity``: no row of
``stock`` whose quantity is at least the largest quantity ``sales`` holds can match, and
``sales`` has no filter to build a domain from. The footers of all its files bound that
largest value; the rule puts ``qty <= bound - 1`` above ``stock``. Each case runs against
Spark with every pruning off on the same files, on ``spark.read.parquet`` views (Spark's own
listing names the files) and catalog tables (dpp lists the catalog's partitions), under a
non-UTC session time zone with ANSI mode on.
"""
from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial_support import OFF, enabled
from tests.conftest import spark_conf

USER = {"spark.sql.session.timeZone": "America/Sao_Paulo", "spark.sql.ansi.enabled": "true"}
DAYS = 4
START = dt.date(2024, 2, 26)


def _stock(day: int) -> pa.Table:
    n = 40
    return pa.table({"item": pa.array([i % 5 for i in range(n)], pa.int32()),
                     "qty": pa.array([(i * 37 + day * 11) % 300 for i in range(n)], pa.int32()),
                     "since": pa.array([START + dt.timedelta(days=(i * 7 + day) % 20)
                                        for i in range(n)])})


def _sales(day: int, top: int) -> pa.Table:
    n = 12
    return pa.table({"item": pa.array([i % 5 for i in range(n)], pa.int32()),
                     "quantity": pa.array([1 + (i * 13 + day) % top for i in range(n)],
                                          pa.int64()),
                     "shipped": pa.array([START + dt.timedelta(days=(i + day) % 9)
                                          for i in range(n)]),
                     "small": pa.array([(i + day) % 3 for i in range(n)], pa.int32())})


def _write(root: Path) -> None:
    for day in range(DAYS):
        for name, table in (("stock", _stock(day)), ("sales", _sales(day, 60))):
            folder = root / name / f"day={day}"
            folder.mkdir(parents=True)
            pq.write_table(table, folder / "part-0.parquet")
    (root / "days").mkdir()
    pq.write_table(pa.table({"day": pa.array(range(DAYS), pa.int32()),
                             "open": pa.array([1, 0, 1, 1], pa.int32())}),
                   root / "days" / "part-0.parquet")


_SCHEMAS = {"stock": "item INT, qty INT, since DATE, day INT",
            "sales": "item INT, quantity BIGINT, shipped DATE, small INT, day INT"}


def _open(spark: Any, root: Path, kind: str) -> None:
    """Views ``stock``, ``sales``, ``days`` over the folders: Spark's readers, or catalog
    tables (the views then name them)."""
    spark.read.parquet(str(root / "days")).createOrReplaceTempView("sb_days")
    for name, cols in _SCHEMAS.items():
        if kind == "path":
            spark.read.parquet(str(root / name)).createOrReplaceTempView(f"sb_{name}")
            continue
        spark.sql(f"DROP TABLE IF EXISTS sb_{name}_cat")
        spark.sql(f"CREATE TABLE sb_{name}_cat ({cols}) USING parquet PARTITIONED BY (day) "
                  f"LOCATION '{root / name}'")
        spark.sql(f"ALTER TABLE sb_{name}_cat RECOVER PARTITIONS")
        spark.table(f"sb_{name}_cat").createOrReplaceTempView(f"sb_{name}")


@pytest.fixture(params=["path", "catalog"])
def star(request: pytest.FixtureRequest, spark: Any,
         tmp_path: Path) -> Iterator[dict[str, Any]]:
    root = tmp_path / "stats_bound"
    _write(root)
    _open(spark, root, request.param)
    try:
        with spark_conf(spark, USER), enabled(spark, root) as session:
            yield {"session": session, "root": root, "kind": request.param}
    finally:
        for name in ("stock", "sales", "days"):
            spark.catalog.dropTempView(f"sb_{name}")
        for name in ("stock", "sales"):
            spark.sql(f"DROP TABLE IF EXISTS sb_{name}_cat")


def _run(spark: Any, session: Any, sql: str) -> tuple[list, list, Any]:
    with spark_conf(spark, OFF):
        expected = sorted(map(tuple, spark.sql(sql).collect()), key=repr)
    session.last_report = None
    got = sorted(map(tuple, spark.sql(sql).collect()), key=repr)
    return expected, got, session.last_report


def _row_filter(report: Any, table: str) -> Any:
    assert report is not None, "no report"
    found = [t for t in report.tables
             if t.table.split("/")[-1] in (table, f"sb_{table}_cat") and t.pruning == "applied"]
    assert found, (table, report.tables)
    return found[0].row_group_filter


def _max(root: Path, column: str) -> Any:
    return max(max(pq.read_table(f).column(column).to_pylist())
               for f in sorted((root / "sales").rglob("*.parquet")))


# stock is pruned by the open days (so dpp wraps it); its quantity compares with every sale's
Q_LT = ("SELECT s.item, i.qty, i.day, s.quantity FROM sb_sales s JOIN sb_stock i "
        "ON s.item = i.item AND i.qty < s.quantity JOIN sb_days d ON i.day = d.day "
        "WHERE d.open = 1")


def test_the_largest_value_in_the_footers_bounds_the_rows(spark: Any,
                                                          star: dict[str, Any]) -> None:
    expected, got, report = _run(spark, star["session"], Q_LT)
    assert got == expected and expected
    top = _max(star["root"], "quantity")
    assert _row_filter(report, "stock") == f"`qty` <= {top - 1}"
    labels = [f.build_column for f in report.filters]
    assert any("statistics" in (b or "") for b in labels), labels


def test_the_reversed_comparison_and_a_date_column(spark: Any, star: dict[str, Any]) -> None:
    """``s.shipped > i.since``: the stock's date below the latest shipping date."""
    sql = ("SELECT i.item, i.since, s.shipped FROM sb_sales s JOIN sb_stock i "
           "ON s.item = i.item AND s.shipped > i.since JOIN sb_days d ON i.day = d.day "
           "WHERE d.open = 1")
    expected, got, report = _run(spark, star["session"], sql)
    assert got == expected and expected
    latest = _max(star["root"], "shipped")
    assert _row_filter(report, "stock") == \
        f"`since` <= DATE '{(latest - dt.timedelta(days=1)).isoformat()}'"


def test_a_partition_column_below_the_bound(spark: Any, star: dict[str, Any]) -> None:
    """``i.day < s.small``: stock's days from the largest ``small`` on are never read."""
    sql = ("SELECT i.day, i.qty, s.small FROM sb_stock i JOIN sb_sales s "
           "ON i.item = s.item AND i.day < s.small")
    expected, got, report = _run(spark, star["session"], sql)
    assert got == expected and expected
    top = _max(star["root"], "small")
    assert report is not None
    kept = [t.partitions_kept for t in report.tables if t.pruning == "applied"]
    assert kept == [top], report.tables


def test_a_preserved_side_keeps_its_rows(spark: Any, star: dict[str, Any]) -> None:
    sql = ("SELECT i.item, i.qty, s.quantity FROM sb_stock i LEFT JOIN sb_sales s "
           "ON s.item = i.item AND i.qty < s.quantity JOIN sb_days d ON i.day = d.day "
           "WHERE d.open = 1")
    expected, got, report = _run(spark, star["session"], sql)
    assert got == expected and expected
    # sales, the side whose unmatched rows the join drops, may be bounded by stock's
    # files; stock itself never is
    assert report is None or all(t.row_group_filter is None for t in report.tables
                                 if "stock" in t.table), report.tables


def test_a_file_without_statistics_gives_no_bound(spark: Any, star: dict[str, Any]) -> None:
    """The footers cannot vouch for a file written without statistics: no filter, the
    report says why, the rows are Spark's."""
    root = star["root"]
    pq.write_table(_sales(1, 400), root / "sales" / "day=1" / "part-0.parquet",
                   write_statistics=False)
    _open(spark, root, star["kind"])
    if star["kind"] == "catalog":
        spark.sql("REFRESH TABLE sb_sales_cat")
    expected, got, report = _run(spark, star["session"], Q_LT)
    assert got == expected and expected
    assert _row_filter(report, "stock") is None
    reasons = [f.reason or "" for f in report.filters if "statistics" in (f.build_column or "")]
    assert reasons and "no statistics" in reasons[0], report.filters


def test_data_added_between_two_actions_moves_the_bound(spark: Any,
                                                        star: dict[str, Any]) -> None:
    """A sales file with larger quantities written after the first action: the second reads
    the bound again (as Spark's listing sees the table), and keeps the rows it admits."""
    session, root = star["session"], star["root"]
    first, got, _r = _run(spark, session, Q_LT)
    assert got == first
    pq.write_table(_sales(2, 280), root / "sales" / "day=2" / "part-1.parquet")
    _open(spark, root, star["kind"])
    if star["kind"] == "catalog":
        spark.sql("REFRESH TABLE sb_sales_cat")
    expected, got, report = _run(spark, session, Q_LT)
    assert got == expected and len(expected) > len(first)
    top = _max(root, "quantity")
    assert top > 60
    assert _row_filter(report, "stock") == f"`qty` <= {top - 1}"


def test_no_value_at_all_keeps_no_row(spark: Any, star: dict[str, Any]) -> None:
    """Every quantity NULL: no stock row compares true with any sale."""
    root = star["root"]
    shutil.rmtree(root / "sales")
    for day in range(DAYS):
        folder = root / "sales" / f"day={day}"
        folder.mkdir(parents=True)
        t = _sales(day, 60)
        t = t.set_column(1, "quantity", pa.nulls(len(t), pa.int64()))
        pq.write_table(t, folder / "part-0.parquet")
    _open(spark, root, star["kind"])
    if star["kind"] == "catalog":
        spark.sql("REFRESH TABLE sb_sales_cat")
    expected, got, report = _run(spark, star["session"], Q_LT)
    assert got == expected == []
    # the rule's filter admits no row: Spark drops the scan of stock from its plan (never
    # listed), so nothing of it is read
    assert report is None or not [t for t in report.tables
                                  if t.pruning == "applied" and t.files_kept], report.tables


def test_columns_found_by_field_id_give_no_bound(spark: Any, star: dict[str, Any]) -> None:
    """With Parquet field ids read, Spark finds a column by its id, not by the name the
    footers give: no bound."""
    with spark_conf(spark, {"spark.sql.parquet.fieldId.read.enabled": "true"}):
        expected, got, report = _run(spark, star["session"], Q_LT)
    assert got == expected and expected
    assert _row_filter(report, "stock") is None
    reasons = [f.reason or "" for f in report.filters if "statistics" in (f.build_column or "")]
    assert reasons and "field ids" in reasons[0], report.filters


# ---------------------------------------------------------------- the kept partitions' bound
# sales is itself pruned (its closed day, by a join above the comparison): where dpp lists
# its partitions (a catalog table, a declared folder), the bound is read from the footers of
# the days its own load keeps, once that load is over; the closed day's larger quantities do
# not loosen it. On Spark's reader of the folder it is read from every file Spark listed.
Q_KEPT = ("SELECT s.item, i.qty, s.day, s.quantity FROM sb_sales s JOIN sb_kstock i "
          "ON s.item = i.item AND i.qty < s.quantity JOIN sb_days e ON s.day = e.day "
          "JOIN sb_days d ON i.day = d.day WHERE e.open = 1 AND d.open = 1")
CLOSED_TOP = 250   # the closed day's sales quantities are drawn below this
# Spark's own pruning of sales by the days off: its subquery on sales would make sales' side of
# the comparison a build side of its own (a scan with a filter), as in TPC-DS q72 it is not;
# and a broadcast threshold below the stock's size: a table Spark broadcasts is no fact, and
# dpp filters no fact's rows there
NO_SPARK_DPP = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
                "spark.sql.autoBroadcastJoinThreshold": "1000",
                "spark.dpp.statsPruning.enabled": "true"}


# kinds: Spark's reader of the folder; the folder declared, read through the kept-partition
# index (any partition count here); a catalog table whose kept partitions dpp lists
# (statistics pruning on: sales' item filter may skip files), and one whose listing dpp leaves
# to Spark's catalog index (statistics pruning off: nothing can skip a file of sales), its
# kept partitions then located for the bound by the catalog
@pytest.fixture(params=["path", "declared", "catalog", "catalog-spark-lists"])
def kept_star(request: pytest.FixtureRequest, spark: Any,
              tmp_path: Path) -> Iterator[dict[str, Any]]:
    root = tmp_path / "kept_bound"
    _write(root)
    pq.write_table(_sales(1, CLOSED_TOP), root / "sales" / "day=1" / "part-0.parquet")
    # the stock, unpartitioned (as TPC-DS's inventory): its day is a data column, a row group
    # per day, whose filter the bound rides with
    (root / "kstock").mkdir()
    pq.write_table(pa.concat_tables([_stock(d).append_column("day", pa.array([d] * 40,
                                                                             pa.int32()))
                                     for d in range(DAYS)]),
                   root / "kstock" / "part-0.parquet", row_group_size=40)
    kind = request.param.split("-")[0]
    conf = dict(NO_SPARK_DPP)
    if request.param == "catalog-spark-lists":
        # statistics pruning at its default (auto: footers are sampled), a stock file per day
        # (sampled, the day filter is worth its footers, and the bound rides with it), and a
        # row of quantity -1000 in every sales file (sampled, sales' files each span most of
        # the quantities: no filter may skip one), so sales' load leaves its listing to
        # Spark's catalog index and its kept partitions carry no location
        conf["spark.dpp.statsPruning.enabled"] = "auto"
        stock = pq.read_table(root / "kstock" / "part-0.parquet")
        (root / "kstock" / "part-0.parquet").unlink()
        for d in range(DAYS):
            pq.write_table(stock.slice(40 * d, 40), root / "kstock" / f"part-{d}.parquet")
        for f in sorted((root / "sales").rglob("*.parquet")):
            t = pq.read_table(f)
            low = pa.table({c: pa.array([-1000 if c == "quantity" else t.column(c)[0].as_py()],
                                        t.schema.field(c).type) for c in t.column_names})
            pq.write_table(pa.concat_tables([t, low]), f)
    spark.read.parquet(str(root / "days")).createOrReplaceTempView("sb_days")
    if kind == "catalog":
        for name, cols, parts in (("sales", _SCHEMAS["sales"], " PARTITIONED BY (day)"),
                                  ("kstock", "item INT, qty INT, since DATE, day INT", "")):
            spark.sql(f"DROP TABLE IF EXISTS sb_{name}_cat")
            spark.sql(f"CREATE TABLE sb_{name}_cat ({cols}) USING parquet{parts} "
                      f"LOCATION '{root / name}'")
            spark.table(f"sb_{name}_cat").createOrReplaceTempView(f"sb_{name}")
        spark.sql("ALTER TABLE sb_sales_cat RECOVER PARTITIONS")
    else:
        for name in ("sales", "kstock"):
            spark.read.parquet(str(root / name)).createOrReplaceTempView(f"sb_{name}")
    try:
        with spark_conf(spark, USER), \
                enabled(spark, root, {"spark.dpp.declaredTables.keptListing": "1"}) as session:
            if kind == "declared":
                spark.catalog.dropTempView("sb_sales")
                session.register_table("sb_sales", str(root / "sales"))
                session.ensure_views(["sb_sales"])
            yield {"session": session, "root": root, "kind": kind, "conf": conf,
                   "spark_lists": request.param == "catalog-spark-lists"}
    finally:
        for name in ("sales", "kstock", "days"):
            spark.catalog.dropTempView(f"sb_{name}")
        for name in ("sales", "kstock"):
            spark.sql(f"DROP TABLE IF EXISTS sb_{name}_cat")


def _qty_term(filters: list[Any]) -> Any:
    """The stock's one row filter's term on ``qty`` (its other terms are the open days')."""
    assert len(filters) == 1 and filters[0], filters
    terms = [t for t in filters[0].split(" AND ") if t.startswith("`qty`")]
    return terms[0] if len(terms) == 1 else terms


def _top(root: Path, days: tuple[int, ...] = (0, 2, 3)) -> int:
    """The largest sales quantity of these days (default: the open ones)."""
    return max(max(pq.read_table(root / "sales" / f"day={d}").column("quantity").to_pylist())
               for d in days)


def test_the_bound_is_read_from_the_partitions_the_relation_keeps(
        spark: Any, kept_star: dict[str, Any]) -> None:
    root, kind = kept_star["root"], kept_star["kind"]
    with spark_conf(spark, kept_star["conf"]):
        expected, got, report = _run(spark, kept_star["session"], Q_KEPT)
    assert got == expected and expected
    assert report is not None
    sales = [t for t in report.tables if "sales" in t.table and t.pruning == "applied"]
    assert [t.partitions_kept for t in sales] == [3], report.tables
    if kept_star["spark_lists"]:   # the case it is about: the load listed no folder itself
        assert [t.folders_listed for t in sales] == [0], report.tables
    stock = [t.row_group_filter for t in report.tables if "kstock" in t.table]
    if kind == "path":   # Spark's reader: every file it listed
        every = _top(root, tuple(range(DAYS)))
        assert every > _top(root)
        assert _qty_term(stock) == f"`qty` <= {every - 1}", (report.tables, report.filters)
    else:
        top = _top(root)
        assert top < _top(root, (1,))
        assert _qty_term(stock) == f"`qty` <= {top - 1}", (report.tables, report.filters)


# (Spark's reader bounds by every file it listed: the test above)
@pytest.mark.parametrize("kept_star", ["declared", "catalog", "catalog-spark-lists"],
                         indirect=True)
def test_a_partition_added_to_a_closed_day_changes_nothing_kept(
        spark: Any, kept_star: dict[str, Any]) -> None:
    """Larger quantities written to the closed day between two actions: the second action's
    bound is still the open days' (the rows are Spark's); written to an open day, it moves."""
    root, kind, session = kept_star["root"], kept_star["kind"], kept_star["session"]
    pq.write_table(_sales(1, 290), root / "sales" / "day=1" / "part-1.parquet")
    pq.write_table(_sales(2, 120), root / "sales" / "day=2" / "part-1.parquet")
    if kind == "catalog":
        spark.sql("REFRESH TABLE sb_sales_cat")
    else:   # the declared folder's view, made again for the query (as a job opens it)
        session.ensure_views(["sb_sales"])
    with spark_conf(spark, kept_star["conf"]):
        expected, got, report = _run(spark, session, Q_KEPT)
    assert got == expected and expected
    top = max(_top(root),
              max(pq.read_table(root / "sales" / "day=2" / "part-1.parquet")
                  .column("quantity").to_pylist()))
    assert top > 60
    stock = [t.row_group_filter for t in report.tables if "kstock" in t.table]
    assert _qty_term(stock) == f"`qty` <= {top - 1}", (report.tables, report.filters)


def test_kept_partitions_without_a_location_leave_the_bound_to_every_file(
        tmp_path: Path) -> None:
    """A load that left the listing to Spark keeps partitions without their location: where
    nothing can locate them (no catalog to ask), their files are unknown, so the bound is
    not read from them (an empty file set would bound the key to nothing and drop every
    row); with locations, their files are. (A catalog table's are located by the catalog:
    ``test_the_bound_is_read_from_the_partitions_the_relation_keeps[catalog-spark-lists]``.)"""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from dpp.frontends.hook.optimizer_hook import _kept_files
    from hive_splits import table_from_path
    from hive_splits.listing import LocalLister
    from hive_splits.loader import KeptPartition, LoadResult

    folder = tmp_path / "day=1"
    folder.mkdir()
    pq.write_table(_sales(1, 60), folder / "part-0.parquet")
    table = table_from_path(str(tmp_path), name="t")
    done: Future = Future()
    done.set_result(LoadResult(table="t", partitions=[KeptPartition("", {"day": 1}, None,
                                                                    {"day": "1"})]))
    request = SimpleNamespace(loads={"tok": done})
    assert _kept_files(request, "tok", table, LocalLister()) is None
    located: Future = Future()
    located.set_result(LoadResult(table="t", partitions=[KeptPartition(str(folder),
                                                                       {"day": 1})]))
    request = SimpleNamespace(loads={"tok": located})
    files = _kept_files(request, "tok", table, LocalLister())
    assert files is not None and [f.path.split("/")[-1] for f in files] == ["part-0.parquet"]
