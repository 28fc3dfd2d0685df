"""Row-group filters through the optimizer hook: a data column's build values reach Parquet.

A partitioned fact whose files hold items in order, one row group per item, is joined on the
item (a data column) to a dimension filtered to a few items, or to a run of them. The hook
puts the build side's values above the relation as ``item IN (...)`` or ``item BETWEEN``;
Spark pushes it into Parquet, which skips the row groups it rules out. Every case is checked
against Spark with every pruning off on the same folders: same rows, the report names the
predicate, and the scan outputs only the rows of the row groups kept.
"""
from __future__ import annotations

import re
import time
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpp.enable import session_of
from tests.adversarial_support import OFF, enabled
from dpp.runtime.spark_metrics import file_scans
from tests.conftest import spark_conf

DAYS, ITEMS, PER_ITEM = 3, 40, 30     # per day one file: items 0..39, 30 rows each
ON = {"spark.dpp.statsPruning.enabled": "true"}


@pytest.fixture(scope="module")
def data(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hook_row_filters")
    sales = root / "sales"
    for day in range(DAYS):
        folder = sales / f"day={day}"
        folder.mkdir(parents=True)
        items = [i for i in range(ITEMS) for _ in range(PER_ITEM)]
        pq.write_table(pa.table({"item": pa.array(items, pa.int32()),
                                 "sitem": pa.array([f"i-{i:03d}" for i in items]),
                                 "amount": pa.array(range(len(items)), pa.int64())}),
                       folder / "part-0.parquet", row_group_size=PER_ITEM)
    dims = root / "items"
    dims.mkdir()
    cat = ["few" if i in (3, 27, 29) else "run" if 10 <= i < 22 else "none" if i == 99
           else "other" for i in range(ITEMS)]
    pq.write_table(pa.table({"item_id": pa.array(range(ITEMS), pa.int32()),
                             "sitem_id": [f"i-{i:03d}" for i in range(ITEMS)],
                             "cat": cat}), dims / "part-0.parquet")
    spark.read.parquet(str(sales)).createOrReplaceTempView("rf_sales")
    spark.read.parquet(str(dims)).createOrReplaceTempView("rf_items")
    try:
        with enabled(spark, root, ON):
            yield {"sales": str(sales)}
    finally:
        for v in ("rf_sales", "rf_items"):
            spark.catalog.dropTempView(v)


def _rows_scanned(df: Any, folder: str) -> int:
    scans = [s for s in file_scans(df) if any(folder in p for p in s.root_paths)]
    assert scans, [s.root_paths for s in file_scans(df)]
    return sum(s.rows for s in scans)


SQL = ("SELECT f.day, f.item, sum(f.amount) AS a, count(*) AS n FROM rf_sales f JOIN rf_items i "
       "ON f.{key} = i.{dim_key} WHERE i.cat = '{cat}' GROUP BY f.day, f.item")


@pytest.mark.parametrize("form", ["sql", "dataframe"])
@pytest.mark.parametrize("key,dim_key,cat,picked,expect", [
    ("item", "item_id", "few", 3, "`item` IN (3, 27, 29)"),
    ("item", "item_id", "run", 12, "`item` BETWEEN 10 AND 21"),
    ("sitem", "sitem_id", "few", 3, "`sitem` IN ('i-003', 'i-027', 'i-029')"),
])
def test_the_build_values_filter_the_row_groups_of_a_partitioned_fact(
        spark: Any, data: dict[str, Any], form: str, key: str, dim_key: str, cat: str,
        picked: int, expect: str) -> None:
    def job() -> Any:
        if form == "sql":
            return spark.sql(SQL.format(key=key, dim_key=dim_key, cat=cat))
        f = spark.table("rf_sales")
        i = spark.table("rf_items").where(f"cat = '{cat}'")
        return (f.join(i, f[key] == i[dim_key]).groupBy("day", "item")
                .agg({"amount": "sum", "*": "count"}))

    with spark_conf(spark, OFF):
        want = sorted(tuple(r) for r in job().collect())
    with spark_conf(spark, ON):
        df = job()
        got = sorted(tuple(r) for r in df.collect())
        report = session_of(spark).last_report
    assert got == want and len(want) == DAYS * picked
    table = report.tables[0]
    assert table.pruning == "applied", report.to_json()
    assert table.row_group_filter is not None and table.row_group_filter.startswith(expect)
    # only the kept items' row groups are read: PER_ITEM rows each, per day
    assert _rows_scanned(df, data["sales"]) == DAYS * picked * PER_ITEM


def test_a_relation_with_a_row_filter_leaves_no_build_to_sparks_keys(
        spark: Any, data: dict[str, Any], tmp_path: Any) -> None:
    """The fact joined to the items (a data column: a row filter) and to a day dimension (a
    partition column Spark's own pruning would prune): the rule waits for the relation's load
    to put the row filter in the plan, and Spark's keys only come when the scan lists, after
    the rule — so the day's build is not left to them (it would hold the load, and the row
    filter, until the wait timed out). Same rows, the row filter, the days pruned."""
    pq.write_table(pa.table({"d": pa.array(range(DAYS), pa.int32()),
                             "pick": ["y" if d == 1 else "n" for d in range(DAYS)]}),
                   tmp_path / "days.parquet")
    spark.read.parquet(str(tmp_path / "days.parquet")).createOrReplaceTempView("rf_days")
    sql = ("SELECT f.day, f.item, sum(f.amount) AS a FROM rf_sales f "
           "JOIN rf_items i ON f.item = i.item_id JOIN rf_days d ON f.day = d.d "
           "WHERE i.cat = 'few' AND d.pick = 'y' GROUP BY f.day, f.item")
    try:
        with spark_conf(spark, OFF):
            want = sorted(tuple(r) for r in spark.sql(sql).collect())
        settings = {**ON, "spark.dpp.sparkKeys.enabled": "true",
                    "spark.dpp.filterCache.enabled": "false", "spark.dpp.waitTimeout": "5s"}
        with spark_conf(spark, settings):
            session_of(spark).last_report = None
            got = sorted(tuple(r) for r in spark.sql(sql).collect())
            report = session_of(spark).last_report
    finally:
        spark.catalog.dropTempView("rf_days")
    assert got == want and len(want) == 3
    (table,) = report.tables
    assert table.row_group_filter == "`item` IN (3, 27, 29)", report.to_json()
    assert (table.partitions_kept, table.partitions_total) == (1, DAYS), report.to_json()
    assert not any(f.deferred for f in report.filters), report.to_json()


def test_switched_off_the_rows_are_the_same_and_every_row_group_is_read(
        spark: Any, data: dict[str, Any]) -> None:
    sql = SQL.format(key="item", dim_key="item_id", cat="few")
    with spark_conf(spark, {**ON, "spark.dpp.rowGroupFilter.enabled": "false"}):
        df = spark.sql(sql)
        rows = sorted(df.collect())
        report = session_of(spark).last_report
    with spark_conf(spark, OFF):
        assert rows == sorted(spark.sql(sql).collect())
    assert report.tables[0].row_group_filter is None
    assert _rows_scanned(df, data["sales"]) == DAYS * ITEMS * PER_ITEM


def test_a_row_group_filter_is_built_again_once_its_cached_filter_expired(
        spark: Any, data: dict[str, Any]) -> None:
    """A build side whose only gain was the row groups it filtered (no partition, no file
    dropped) did prune: once its cached filter expires it is built again, not skipped as one
    that "pruned nothing" (which would cost q72 at SF10 three times its time)."""
    # a build side no other test caches (an entry lives as long as the TTL it was put with)
    sql = SQL.format(key="item", dim_key="item_id", cat="few") \
        .replace("WHERE", "WHERE i.item_id < 1000 AND")
    with spark_conf(spark, OFF):
        want = sorted(spark.sql(sql).collect())
    cache = {**ON, "spark.dpp.filterCache.enabled": "true", "spark.dpp.filterTtl": "2s"}
    for run in range(2):
        with spark_conf(spark, cache):
            df = spark.sql(sql)
            assert sorted(df.collect()) == want
            report = session_of(spark).last_report
        assert report.filters and not report.filters[0].cache_hit, report.to_json()
        assert report.tables[0].row_group_filter == "`item` IN (3, 27, 29)", report.to_json()
        assert _rows_scanned(df, data["sales"]) == DAYS * 3 * PER_ITEM
        time.sleep(3.0)   # the cached filter expires


def test_a_build_side_with_no_rows_reads_no_row_group(spark: Any, data: dict[str, Any]) -> None:
    sql = SQL.format(key="item", dim_key="item_id", cat="none")
    with spark_conf(spark, ON):
        rows = spark.sql(sql).collect()
    assert rows == []


@pytest.mark.parametrize("how,pruned", [("left", False), ("right", True), ("left_semi", True),
                                        ("left_anti", False)])
def test_only_a_side_whose_rows_need_a_match_is_filtered(spark: Any, data: dict[str, Any],
                                                         how: str, pruned: bool) -> None:
    """The fact is the left side: a left outer or anti join keeps (or wants) its unmatched
    rows, so no filter may drop them."""
    def job() -> Any:
        f = spark.table("rf_sales")
        i = spark.table("rf_items").where("cat = 'few'")
        return f.join(i, f["item"] == i["item_id"], how).groupBy("day").count()

    with spark_conf(spark, OFF):
        want = sorted(job().collect())
    with spark_conf(spark, ON):
        df = job()
        got = sorted(df.collect())
    assert got == want
    scanned = _rows_scanned(df, data["sales"])
    assert (scanned < DAYS * ITEMS * PER_ITEM) == pruned, scanned


@pytest.fixture(scope="module")
def flat(spark: Any, data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[dict[str, Any]]:
    """``rf_flat``: the same rows with no partition column, one file, a row group per item
    (TPC-DS ``inventory``'s shape); also as a catalog table ``rf_flat_cat``."""
    root = tmp_path_factory.mktemp("hook_row_filters_flat") / "flat"
    root.mkdir()
    items = [i for _d in range(DAYS) for i in range(ITEMS) for _ in range(PER_ITEM)]
    items.sort()
    pq.write_table(pa.table({"item": pa.array(items, pa.int32()),
                             "amount": pa.array(range(len(items)), pa.int64())}),
                   root / "part-0.parquet", row_group_size=DAYS * PER_ITEM)
    spark.read.parquet(str(root)).createOrReplaceTempView("rf_flat")
    spark.sql("DROP TABLE IF EXISTS rf_flat_cat")
    spark.sql(f"CREATE TABLE rf_flat_cat (item INT, amount BIGINT) USING parquet "
              f"LOCATION '{root}'")
    try:
        yield {"flat": str(root)}
    finally:
        spark.catalog.dropTempView("rf_flat")
        spark.sql("DROP TABLE IF EXISTS rf_flat_cat")


# the unpartitioned fact is described only when Spark would not broadcast it
SMALL_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "1000"}
FLAT = "SELECT f.item, sum(f.amount) AS a, count(*) AS n FROM {fact} f JOIN rf_items i " \
       "ON f.item = i.item_id WHERE i.cat = 'few' GROUP BY f.item"


@pytest.mark.parametrize("fact", ["rf_flat", "rf_flat_cat"])
def test_an_unpartitioned_fact_gets_the_row_filter(spark: Any, flat: dict[str, Any],
                                                   fact: str) -> None:
    sql = FLAT.format(fact=fact)
    with spark_conf(spark, {**OFF, **SMALL_BROADCAST}):
        want = sorted(spark.sql(sql).collect())
    with spark_conf(spark, {**ON, **SMALL_BROADCAST}):
        session_of(spark).last_report = None
        df = spark.sql(sql)
        got = sorted(df.collect())
        report = session_of(spark).last_report
    assert got == want and len(want) == 3
    assert report is not None and report.tables[0].row_group_filter == "`item` IN (3, 27, 29)"
    assert _rows_scanned(df, flat["flat"]) == 3 * DAYS * PER_ITEM


def test_an_unpartitioned_relation_spark_would_broadcast_is_left_alone(
        spark: Any, flat: dict[str, Any]) -> None:
    sql = FLAT.format(fact="rf_flat")
    with spark_conf(spark, ON):
        session_of(spark).last_report = None
        df = spark.sql(sql)
        rows = df.collect()
        assert session_of(spark).last_report is None
    assert len(rows) == 3
    assert _rows_scanned(df, flat["flat"]) == DAYS * ITEMS * PER_ITEM


def test_a_build_side_that_filters_nothing_is_narrowed_by_its_joins_other_key(
        spark: Any, data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    """TPC-DS q72's shape: ``inv`` (partitioned by date) joins ``d2`` (all dates) on the date
    and on ``d1.week = d2.week``, d1 filtered on the other side. ``d2 ⋉ d1`` on the week
    holds every date a row of ``inv`` can match: only those partitions are read."""
    root = tmp_path_factory.mktemp("narrowing")
    for day in range(28):
        folder = root / "inv" / f"inv_date={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"inv_item": pa.array([day % 4, (day + 1) % 4], pa.int32()),
                                 "q": pa.array([day, day + 100], pa.int64())}),
                       folder / "part-0.parquet")
    (root / "cs").mkdir()
    pq.write_table(pa.table({"cs_date": pa.array(range(28), pa.int32()),
                             "cs_item": pa.array([d % 4 for d in range(28)], pa.int32())}),
                   root / "cs" / "part-0.parquet")
    (root / "dd").mkdir()
    pq.write_table(pa.table({"d_date": pa.array(range(28), pa.int32()),
                             "d_week": pa.array([d // 7 for d in range(28)], pa.int32()),
                             "d_year": pa.array([1 if d < 7 else 2 for d in range(28)],
                                                pa.int32())}),
                   root / "dd" / "part-0.parquet")
    for name in ("inv", "cs", "dd"):
        spark.read.parquet(str(root / name)).createOrReplaceTempView(f"nw_{name}")
    sql = ("SELECT d1.d_week, count(*) AS c, sum(q) AS s FROM nw_cs JOIN nw_inv "
           "ON cs_item = inv_item JOIN nw_dd d1 ON cs_date = d1.d_date "
           "JOIN nw_dd d2 ON inv_date = d2.d_date WHERE d1.d_week = d2.d_week "
           "AND d1.d_year = 1 GROUP BY d1.d_week")
    try:
        with spark_conf(spark, OFF):
            want = sorted(spark.sql(sql).collect())
        with spark_conf(spark, ON):
            session_of(spark).last_report = None
            got = sorted(spark.sql(sql).collect())
            report = session_of(spark).last_report
        assert got == want and want
        (inv,) = [t for t in report.tables if t.location.endswith("inv")]
        assert (inv.pruning, inv.partitions_total, inv.partitions_kept) == ("applied", 28, 7)
        assert any(f.build_column == "dd d2.d_date" for f in report.filters)
    finally:
        for name in ("inv", "cs", "dd"):
            spark.catalog.dropTempView(f"nw_{name}")


# --------------------------------------------------------------- rows spared a costly join

CUSTOMERS = 60
PICKED = [c for c in range(CUSTOMERS) if c % 5 in (1, 3)]   # 24, spread: no run to merge


@pytest.fixture(scope="module")
def shuffled(spark: Any, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, Any]]:
    """TPC-DS q72's shape, small: ``rs_sales`` (partitioned by day, customers in arrival
    order, so no file or row group can be skipped by them) joins ``rs_stock`` (another
    unpartitioned fact) on the item, then ``rs_customers`` filtered to some customers."""
    root = tmp_path_factory.mktemp("rows_spared")
    for day in range(DAYS):
        folder = root / "sales" / f"day={day}"
        folder.mkdir(parents=True)
        n = 600
        pq.write_table(pa.table({"item": pa.array([i % ITEMS for i in range(n)], pa.int32()),
                                 "cust": pa.array([(i * 7 + day) % CUSTOMERS for i in range(n)],
                                                  pa.int64()),
                                 "qty": pa.array([i % 9 for i in range(n)], pa.int32())}),
                       folder / "part-0.parquet")
    (root / "stock").mkdir()
    n = 16000
    pq.write_table(pa.table({"s_item": pa.array([i % ITEMS for i in range(n)], pa.int32()),
                             "on_hand": pa.array([i % 13 for i in range(n)], pa.int32()),
                             # incompressible: the file is large for Spark's estimate
                             "pad": pa.array([(i * 2654435761) % (1 << 61)
                                              for i in range(n)], pa.int64())}),
                   root / "stock" / "part-0.parquet")
    (root / "customers").mkdir()
    pq.write_table(pa.table({"c_id": pa.array(range(CUSTOMERS), pa.int64()),
                             "grade": ["a" if c in PICKED else "b" for c in range(CUSTOMERS)]}),
                   root / "customers" / "part-0.parquet")
    (root / "days").mkdir()
    pq.write_table(pa.table({"d": pa.array(range(DAYS), pa.int32()),
                             "open": ["y" if d != 1 else "n" for d in range(DAYS)]}),
                   root / "days" / "part-0.parquet")
    for name in ("sales", "stock", "customers", "days"):
        spark.read.parquet(str(root / name)).createOrReplaceTempView(f"rs_{name}")
    try:
        yield {"root": root}
    finally:
        for name in ("sales", "stock", "customers", "days"):
            spark.catalog.dropTempView(f"rs_{name}")


SPARED = ("SELECT f.day, count(*) AS n, sum(s.on_hand) AS h FROM rs_sales f "
          "JOIN rs_stock s ON f.item = s.s_item JOIN rs_customers c ON f.cust = c.c_id "
          "JOIN rs_days d ON f.day = d.d "
          "WHERE c.grade = 'a' AND s.on_hand < f.qty AND d.open = 'y' GROUP BY f.day")
OPEN_DAYS = DAYS - 1
# rs_stock (over 100 KB, 25 times the threshold: a join worth sparing rows) is a fact Spark
# would not broadcast under this threshold; the customers (under 1 KB) are still broadcast
SHUFFLE_STOCK = {"spark.sql.autoBroadcastJoinThreshold": "4k",
                 "spark.dpp.statsPruning.enabled": "auto"}


def _row_filter_note(report: Any) -> list[str]:
    return [n for n in report.analysis_notes if "filter built for its rows" in n]


@pytest.mark.parametrize("form", ["sql", "dataframe"])
def test_rows_that_meet_a_shuffle_join_first_are_filtered_by_every_build_value(
        spark: Any, shuffled: dict[str, Any], form: str) -> None:
    """The customers' filter cannot skip a file or a row group of the fact (statistics say
    so), but every row it removes is spared the shuffle join with the stock: dpp builds it
    for the rows and states every picked customer (Spark tests them as a hash set), not
    the few ranges Parquet's row groups need. Same rows as Spark alone."""
    def job() -> Any:
        if form == "sql":
            return spark.sql(SPARED)
        f, s = spark.table("rs_sales"), spark.table("rs_stock")
        c = spark.table("rs_customers").where("grade = 'a'")
        d = spark.table("rs_days").where("open = 'y'")
        return (f.join(s, f["item"] == s["s_item"]).join(c, f["cust"] == c["c_id"])
                .join(d, f["day"] == d["d"])
                .where(s["on_hand"] < f["qty"]).groupBy("day")
                .agg({"*": "count", "on_hand": "sum"}))

    with enabled(spark, shuffled["root"]):
        with spark_conf(spark, {**OFF, **SHUFFLE_STOCK}):
            want = sorted(tuple(r) for r in job().collect())
        with spark_conf(spark, {"spark.dpp.filterCache.enabled": "false", **SHUFFLE_STOCK}):
            session_of(spark).last_report = None
            df = job()
            got = sorted(tuple(r) for r in df.collect())
            report = session_of(spark).last_report
            plan = df._jdf.queryExecution().optimizedPlan().toString()
    assert got == want and len(want) == OPEN_DAYS
    assert report is not None, "no report"
    sales = next((t for t in report.tables if "sales" in (t.location or "")), None)
    assert sales is not None, report.to_json()
    lits = ", ".join(str(c) for c in PICKED[:10])
    # the row groups' ranges (pushed into Parquet), then every value, tested per row only
    assert sales.row_group_filter.startswith("(`cust` BETWEEN 1 AND ")
    # (a bound of qty from the stock's file statistics may follow: its own term)
    assert f" AND `cust` IN ({lits}, ... {len(PICKED)} values)" in sales.row_group_filter, \
        report.to_json()
    assert _row_filter_note(report), report.analysis_notes
    assert re.search(r"knownnullable\(cust#\d+L?\) INSET ", plan, re.I), plan
    pushed = df._jdf.queryExecution().executedPlan().toString()
    assert not re.search(r"In\(cust, \[", pushed), pushed
    assert sales.files_pruned_stats == 0 and sales.footers_read == 0, report.to_json()


def test_rows_that_meet_only_broadcast_joins_get_no_filter_of_their_own(
        spark: Any, shuffled: dict[str, Any]) -> None:
    """At Spark's default threshold the stock is broadcast: the customers' join costs a hash
    probe per row, as the filter would. Statistics cannot skip anything: no filter is built
    for the customers at all."""
    with enabled(spark, shuffled["root"]):
        with spark_conf(spark, {**OFF, "spark.dpp.statsPruning.enabled": "auto"}):
            want = sorted(tuple(r) for r in spark.sql(SPARED).collect())
        with spark_conf(spark, {"spark.dpp.filterCache.enabled": "false",
                                "spark.dpp.statsPruning.enabled": "auto"}):
            session_of(spark).last_report = None
            got = sorted(tuple(r) for r in spark.sql(SPARED).collect())
            report = session_of(spark).last_report
    assert got == want and len(want) == OPEN_DAYS
    assert report is not None and not _row_filter_note(report) and all(
        t.row_group_filter is None for t in report.tables), report.to_json()


def test_rows_of_a_relation_dpp_would_read_whole_get_no_filter_of_their_own(
        spark: Any, shuffled: dict[str, Any]) -> None:
    """Without the day dimension nothing prunes the fact's partitions: dpp does not take the
    relation from Spark for its rows alone (that cost more than it spared at TPC-DS SF1)."""
    sql = SPARED.replace("JOIN rs_days d ON f.day = d.d ", "").replace(" AND d.open = 'y'", "")
    with enabled(spark, shuffled["root"]):
        with spark_conf(spark, {**OFF, **SHUFFLE_STOCK}):
            want = sorted(tuple(r) for r in spark.sql(sql).collect())
        with spark_conf(spark, {"spark.dpp.filterCache.enabled": "false", **SHUFFLE_STOCK}):
            session_of(spark).last_report = None
            got = sorted(tuple(r) for r in spark.sql(sql).collect())
            report = session_of(spark).last_report
    assert got == want and len(want) == DAYS
    assert report is None or (not _row_filter_note(report) and all(
        t.row_group_filter is None for t in report.tables)), report.to_json()
