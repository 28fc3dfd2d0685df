"""The differential suite: ``dpp.sql(q)`` must equal ``spark.sql(q)`` with all pruning off.

A small star schema written as real Parquet: facts Hive-partitioned by int, bigint, string
(with special characters and NULL), date, decimal and two-level keys; dimensions with int,
bigint and string keys and NULL keys. Each query states where pruning is sound (and so must
apply) and where it must not.
"""
from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# every query runs, under one of the listers and a third of the others besides (the listers'
# agreement has its own tests): tests/conftest.py; DPP_ALL_VARIANTS=1 runs them all
SAMPLE_VARIANTS = 16
SAMPLE_CASES = ("qid",)

D = decimal.Decimal


def _write(root: Path, name: str, rows: list[dict[str, Any]], partition_cols: list[str],
           schema: pa.Schema) -> Path:
    path = root / name
    table = pa.Table.from_pylist(rows, schema=schema)
    if partition_cols:
        pq.write_to_dataset(table, str(path), partition_cols=partition_cols,
                            existing_data_behavior="overwrite_or_ignore")
    else:
        path.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path / "part-0.parquet")
    return path


@pytest.fixture(scope="module")
def star(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("star")
    paths: dict[str, Path] = {}
    # date_dim: 40 days, int key
    dates = [{"d_date_sk": 100 + i, "d_year": 2000 + i // 20, "d_moy": 1 + (i // 5) % 4,
              "d_date": dt.date(2000, 1, 1) + dt.timedelta(days=i)} for i in range(40)]
    dates.append({"d_date_sk": None, "d_year": 1999, "d_moy": 1, "d_date": None})
    paths["date_dim"] = _write(root, "date_dim", dates, [], pa.schema(
        [("d_date_sk", pa.int32()), ("d_year", pa.int32()), ("d_moy", pa.int32()),
         ("d_date", pa.date32())]))
    # item: bigint key, string category (the store table partition is a string)
    items = [{"i_item_sk": 1000 + i, "i_category": ["Books", "Music", "Home"][i % 3],
              "i_price": D(f"{i}.50")} for i in range(12)]
    paths["item"] = _write(root, "item", items, [], pa.schema(
        [("i_item_sk", pa.int64()), ("i_category", pa.string()), ("i_price", pa.decimal128(7, 2))]))
    # store: string key with special characters, NULL store name
    store_names = ["north", "south", "a:b", "x y", "50%", "ünï", "a/b"]
    stores = [{"s_store_id": n, "s_state": "CA" if i % 2 else "TX", "s_store_num": i}
              for i, n in enumerate(store_names)]
    paths["store"] = _write(root, "store", stores, [], pa.schema(
        [("s_store_id", pa.string()), ("s_state", pa.string()), ("s_store_num", pa.int64())]))
    # sales: fact partitioned by int date key, with a NULL partition
    sales = []
    for i in range(600):
        dk = None if i % 37 == 0 else 100 + (i * 7) % 40
        sales.append({"ss_sold_date_sk": dk, "ss_item_sk": 1000 + i % 12,
                      "ss_store": store_names[i % len(store_names)], "ss_qty": i % 10,
                      "ss_amount": D(f"{i % 50}.25")})
    sales_schema = pa.schema([("ss_item_sk", pa.int64()), ("ss_store", pa.string()),
                              ("ss_qty", pa.int32()), ("ss_amount", pa.decimal128(9, 2)),
                              ("ss_sold_date_sk", pa.int32())])
    paths["sales"] = _write(root, "sales", sales, ["ss_sold_date_sk"], sales_schema)
    # returns: fact partitioned by bigint item key (int vs bigint joins)
    rets = [{"r_item_sk": 1000 + (i * 5) % 12, "r_date_sk": 100 + i % 40, "r_qty": i % 3}
            for i in range(200)]
    paths["returns"] = _write(root, "returns", rets, ["r_item_sk"], pa.schema(
        [("r_date_sk", pa.int64()), ("r_qty", pa.int32()), ("r_item_sk", pa.int64())]))
    # visits: two-level partitions: string store (special chars, NULL) then date
    visits = []
    for i in range(300):
        visits.append({"v_store": None if i % 29 == 0 else store_names[i % len(store_names)],
                       "v_day": dt.date(2000, 1, 1) + dt.timedelta(days=i % 15),
                       "v_count": i})
    paths["visits"] = _write(root, "visits", visits, ["v_store", "v_day"], pa.schema(
        [("v_count", pa.int64()), ("v_store", pa.string()), ("v_day", pa.date32())]))
    # prices: partitioned by decimal
    prices = [{"p_price": D(f"{i % 12}.50"), "p_note": f"n{i}"} for i in range(60)]
    paths["prices"] = _write(root, "prices", prices, ["p_price"], pa.schema(
        [("p_note", pa.string()), ("p_price", pa.decimal128(7, 2))]))
    return paths


PARTITION_TYPES = {
    "sales": {"ss_sold_date_sk": "int"},
    "returns": {"r_item_sk": "bigint"},
    "visits": {"v_store": "string", "v_day": "date"},
    "prices": {"p_price": "decimal(7,2)"},
}
FACTS = set(PARTITION_TYPES)


@pytest.fixture(scope="module", params=["local", "hadoop", "local-auto"])
def dpp_env(request, spark, star):
    """A session over the star's path tables, listed by each lister in turn
    (``spark.dpp.lister``): the same rows and the same pruning counters from both. The cases
    were written for partition pruning, so statistics pruning is off there; ``local-auto``
    runs them again with ``statsPruning=auto`` (the default), where files may also be skipped
    by statistics on data columns."""
    from dpp import DppSession
    from dpp.runtime.config import DppConfig

    # reference views: Spark over the same folders, every dynamic pruning off
    for name, path in star.items():
        reader = spark.read
        if name in PARTITION_TYPES:
            reader = reader.option("basePath", str(path))
        df = spark.read.parquet(str(path))
        if name in PARTITION_TYPES:
            for col, typ in PARTITION_TYPES[name].items():
                df = df.withColumn(col, df[col].cast(typ))
        df.createOrReplaceTempView(f"ref_{name}")
    lister, _, stats = request.param.partition("-")
    dpp = DppSession(spark, config=DppConfig(wait_timeout=60.0, filter_cache=False,
                                             lister=lister, stats_pruning=stats or "false"))
    for name, path in star.items():
        dpp.register_table(name, str(path), partition_types=PARTITION_TYPES.get(name))
    return dpp


_REFERENCE_ROWS: dict[str, list[tuple]] = {}


def _reference(spark, query: str) -> list[tuple]:
    """Spark's rows for the query, pruning off; once per query (each lister compares against
    the same reference: the views are the same folders every time)."""
    if query not in _REFERENCE_ROWS:
        _REFERENCE_ROWS[query] = _reference_rows(spark, query)
    return _REFERENCE_ROWS[query]


def _reference_rows(spark, query: str) -> list[tuple]:
    import re

    q = query
    for name in ["date_dim", "item", "store", "sales", "returns", "visits", "prices"]:
        q = re.sub(rf"(?<![\w.]){name}(?!\w)", f"ref_{name}", q)
    keys = ["spark.sql.optimizer.dynamicPartitionPruning.enabled",
            "spark.sql.optimizer.runtime.bloomFilter.enabled",
            "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled"]
    old = {k: spark.conf.get(k, None) for k in keys}
    try:
        for k in keys:
            spark.conf.set(k, "false")
        return [tuple(r) for r in spark.sql(q).collect()]
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


# (id, query, tables that must be pruned, tables that must not be)
QUERIES: list[tuple[str, str, set[str], set[str]]] = [
    ("inner_on", "SELECT s.ss_qty, d.d_year FROM sales s JOIN date_dim d ON s.ss_sold_date_sk = d.d_date_sk WHERE d.d_year = 2000 AND d.d_moy = 2", {"sales"}, set()),
    ("inner_comma", "SELECT count(*) FROM sales, date_dim WHERE ss_sold_date_sk = d_date_sk AND d_moy = 3", {"sales"}, set()),
    ("inner_no_dim_filter", "SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk", set(), {"sales"}),
    ("static_eq", "SELECT sum(ss_qty) FROM sales WHERE ss_sold_date_sk = 105", {"sales"}, set()),
    ("static_in", "SELECT ss_sold_date_sk, count(*) FROM sales WHERE ss_sold_date_sk IN (101, 102, 139) GROUP BY ss_sold_date_sk", {"sales"}, set()),
    ("static_between_or", "SELECT count(*) FROM sales WHERE ss_sold_date_sk BETWEEN 110 AND 115 OR ss_sold_date_sk > 135", {"sales"}, set()),
    ("static_is_null", "SELECT count(*), sum(ss_qty) FROM sales WHERE ss_sold_date_sk IS NULL", {"sales"}, set()),
    ("static_and_dynamic", "SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 2000 AND ss_sold_date_sk < 110", {"sales"}, set()),
    ("semi_in", "SELECT count(*) FROM sales WHERE ss_sold_date_sk IN (SELECT d_date_sk FROM date_dim WHERE d_moy = 4)", {"sales"}, set()),
    ("semi_exists", "SELECT count(*) FROM sales s WHERE EXISTS (SELECT 1 FROM date_dim d WHERE d.d_date_sk = s.ss_sold_date_sk AND d.d_year = 2001)", {"sales"}, set()),
    ("left_semi_join", "SELECT ss_qty FROM sales LEFT SEMI JOIN date_dim ON ss_sold_date_sk = d_date_sk AND d_moy = 1", {"sales"}, set()),
    ("anti_not_in", "SELECT count(*) FROM sales WHERE ss_sold_date_sk NOT IN (SELECT d_date_sk FROM date_dim WHERE d_moy = 1 AND d_date_sk IS NOT NULL)", set(), {"sales"}),
    ("anti_not_exists", "SELECT count(*) FROM sales s WHERE NOT EXISTS (SELECT 1 FROM date_dim d WHERE d.d_date_sk = s.ss_sold_date_sk AND d.d_year = 2000)", set(), {"sales"}),
    ("left_anti_join", "SELECT count(*) FROM sales LEFT ANTI JOIN date_dim ON ss_sold_date_sk = d_date_sk AND d_year = 2000", set(), {"sales"}),
    ("outer_preserved", "SELECT count(*), count(d_year) FROM sales LEFT JOIN date_dim ON ss_sold_date_sk = d_date_sk AND d_year = 2000", set(), {"sales"}),
    ("outer_preserved_where", "SELECT count(*) FROM sales s LEFT JOIN (SELECT * FROM date_dim WHERE d_moy = 2) d ON s.ss_sold_date_sk = d.d_date_sk", set(), {"sales"}),
    ("outer_non_preserved", "SELECT d_date_sk, count(ss_qty) FROM (SELECT * FROM date_dim WHERE d_moy = 2) d LEFT JOIN sales s ON s.ss_sold_date_sk = d.d_date_sk GROUP BY d_date_sk", {"sales"}, set()),
    ("right_outer_non_preserved", "SELECT count(*), count(ss_qty) FROM sales RIGHT JOIN (SELECT * FROM date_dim WHERE d_year = 2001) d ON ss_sold_date_sk = d.d_date_sk", {"sales"}, set()),
    ("full_outer", "SELECT count(*) FROM sales FULL JOIN (SELECT * FROM date_dim WHERE d_year = 2001) d ON ss_sold_date_sk = d.d_date_sk", set(), {"sales"}),
    ("cte", "WITH d AS (SELECT d_date_sk FROM date_dim WHERE d_moy = 2 AND d_year = 2001) SELECT count(*) FROM sales JOIN d ON ss_sold_date_sk = d.d_date_sk", {"sales"}, set()),
    ("cte_fact", "WITH f AS (SELECT * FROM sales WHERE ss_qty > 3) SELECT count(*) FROM f JOIN date_dim ON f.ss_sold_date_sk = d_date_sk WHERE d_year = 2000", set(), set()),
    ("union_all", "SELECT count(*) FROM (SELECT ss_qty q FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_moy = 1 UNION ALL SELECT ss_qty FROM sales WHERE ss_sold_date_sk = 120) u", {"sales"}, set()),
    ("fact_twice", "SELECT a.c, b.c FROM (SELECT count(*) c FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 2000) a CROSS JOIN (SELECT count(*) c FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 2001 AND d_moy = 3) b", {"sales"}, set()),
    ("fact_twice_one_unconstrained", "SELECT (SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_moy = 1) a, (SELECT count(*) FROM sales) b", set(), set()),
    ("snowflake", "SELECT count(*) FROM sales JOIN date_dim d1 ON ss_sold_date_sk = d1.d_date_sk JOIN item ON ss_item_sk = i_item_sk WHERE d1.d_year = 2001 AND i_category = 'Music'", {"sales"}, set()),
    ("null_keys_dim", "SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 1999", {"sales"}, set()),
    ("null_safe_eq", "SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk <=> d_date_sk WHERE d_year = 1999", set(), set()),
    ("bigint_key_int_dim", "SELECT count(*), sum(r_qty) FROM returns JOIN item ON r_item_sk = i_item_sk WHERE i_category = 'Books'", {"returns"}, set()),
    ("bigint_partition_static", "SELECT count(*) FROM returns WHERE r_item_sk IN (1001, 1003)", {"returns"}, set()),
    ("int_fact_bigint_dim_col", "SELECT count(*) FROM sales JOIN returns ON ss_sold_date_sk = r_date_sk WHERE r_qty = 2", {"sales"}, set()),
    ("string_partition_dim", "SELECT v_store, sum(v_count) FROM visits JOIN store ON v_store = s_store_id WHERE s_state = 'CA' GROUP BY v_store", {"visits"}, set()),
    ("string_special_static", "SELECT count(*) FROM visits WHERE v_store IN ('a:b', 'x y', '50%', 'ünï', 'a/b')", {"visits"}, set()),
    ("multi_level_static_date", "SELECT v_store, count(*) FROM visits WHERE v_day BETWEEN DATE'2000-01-03' AND DATE'2000-01-05' GROUP BY v_store", {"visits"}, set()),
    ("multi_level_both", "SELECT count(*) FROM visits JOIN store ON v_store = s_store_id JOIN date_dim ON v_day = d_date WHERE s_state = 'TX' AND d_moy = 1", {"visits"}, set()),
    ("multi_level_null_static", "SELECT count(*) FROM visits WHERE v_store IS NULL", {"visits"}, set()),
    ("date_partition_dim", "SELECT count(*) FROM visits JOIN date_dim ON v_day = d_date WHERE d_date_sk < 105", {"visits"}, set()),
    ("decimal_partition_dim", "SELECT count(*) FROM prices JOIN item ON p_price = i_price WHERE i_category = 'Home'", {"prices"}, set()),
    ("decimal_partition_static", "SELECT count(*) FROM prices WHERE p_price >= 3.5 AND p_price < 6", {"prices"}, set()),
    ("int_vs_bigint_dim_col", "SELECT count(*) FROM sales JOIN store ON ss_sold_date_sk = s_store_num WHERE s_state = 'CA'", set(), set()),
    ("non_equi", "SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk < d_date_sk WHERE d_date_sk = 103", set(), {"sales"}),
    ("empty_dim_result", "SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 3000", {"sales"}, set()),
    ("exists_over_aggregate_is_always_true", "SELECT count(*) FROM sales s WHERE EXISTS (SELECT count(*) FROM date_dim d WHERE d.d_date_sk = s.ss_sold_date_sk AND d.d_year = 2001)", set(), {"sales"}),
    ("random_build_predicate", "SELECT count(*) FROM sales JOIN date_dim d ON ss_sold_date_sk = d.d_date_sk WHERE d.d_year = 2000 AND rand(7) < 2", set(), set()),
    ("limit_in_build_side", "SELECT count(*) FROM sales JOIN (SELECT * FROM date_dim WHERE d_year = 2000 ORDER BY d_date_sk LIMIT 3) d ON ss_sold_date_sk = d.d_date_sk", set(), {"sales"}),
    ("in_subquery_over_cte", "WITH c AS (SELECT d_date_sk, d_year FROM date_dim WHERE d_moy = 2) SELECT count(*) FROM sales WHERE ss_sold_date_sk IN (SELECT d_date_sk FROM c WHERE d_year = 2000)", {"sales"}, set()),
    ("group_order", "SELECT d_moy, sum(ss_amount) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 2001 GROUP BY d_moy ORDER BY d_moy", {"sales"}, set()),
    ("data_column_only", "SELECT count(*), sum(ss_amount) FROM sales WHERE ss_qty > 3", set(), {"sales"}),
    ("scalar_subqueries_one_fact", "SELECT (SELECT count(*) FROM sales WHERE ss_qty BETWEEN 1 AND 3) a, (SELECT avg(ss_amount) FROM sales WHERE ss_qty BETWEEN 4 AND 6) b, (SELECT max(ss_item_sk) FROM sales WHERE ss_qty > 7) c", set(), {"sales"}),
    ("fact_twice_same_filter", "SELECT a.c, b.s FROM (SELECT count(*) c FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 2000 AND d_moy = 2) a CROSS JOIN (SELECT sum(ss_qty) s FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk WHERE d_year = 2000 AND d_moy = 2) b", {"sales"}, set()),
]


def _pruned_tables(report) -> tuple[set[str], set[str]]:
    d = report.to_dict()
    applied = {t["table"] for t in d["tables"] if t["pruning"] == "applied"}
    none = {t["table"] for t in d["tables"] if t["pruning"] != "applied"}
    return applied, none


@pytest.mark.parametrize("qid,query,must_prune,must_not", QUERIES, ids=[q[0] for q in QUERIES])
def test_dpp_equals_spark_without_pruning(spark, dpp_env, qid, query, must_prune, must_not):
    expected = Counter(_reference(spark, query))
    got_rows = dpp_env.collect(query)
    assert Counter(tuple(r) for r in got_rows) == expected, f"{qid}: rows differ"
    applied, _ = _pruned_tables(dpp_env.last_report)
    for t in must_prune:
        assert t in applied, f"{qid}: expected pruning of {t}, report: {dpp_env.last_report.to_dict()['tables']}"
    if dpp_env.config.stats_pruning != "false":
        # no partition of these may be pruned; files may be, by statistics on data columns
        applied = {t["table"] for t in dpp_env.last_report.to_dict()["tables"]
                   if t["pruned_static"] + t["pruned_dynamic"] > 0}
    for t in must_not:
        assert t not in applied, f"{qid}: {t} must not be pruned here"


def test_suite_is_big_enough():
    assert len(QUERIES) >= 30
    assert sum(1 for q in QUERIES if q[2]) >= 20


def test_pruning_reads_fewer_partitions(spark, dpp_env):
    dpp_env.collect("SELECT count(*) FROM sales JOIN date_dim ON ss_sold_date_sk = d_date_sk "
                    "WHERE d_year = 2000 AND d_moy = 2")
    t = [x for x in dpp_env.last_report.to_dict()["tables"] if x["table"] == "sales"][0]
    # d_moy = 2 in 2000 keeps 5 of the 40 days; the NULL partition is never needed
    assert t["partitions_kept"] == 5
    assert t["partitions_total"] == 41
    assert t["pruned_dynamic"] == 36
    # the lister asked for did the listing, and it counted one LIST per folder listed
    assert t["lister"] == dpp_env.config.lister
    assert t["list_calls"] == t["folders_listed"] == 1 + 5


def test_sql_the_analyzer_cannot_parse_fails_exactly_like_spark(spark, dpp_env):
    """Invalid SQL: the user gets Spark's own error, and explain says why nothing is pruned."""
    from pyspark.errors import ParseException

    q = "SELECT count(* FROM sales WHERE"
    assert "unparsable SQL" in dpp_env.explain(q)
    with pytest.raises(ParseException):
        dpp_env.collect(q)


def test_a_query_with_no_table_to_prune_skips_the_analysis(spark, dpp_env, monkeypatch):
    """Only temp views (and a CTE named like a registered table): nothing can be pruned, so
    the analysis, which resolves every relation through Spark, is not run at all; the rows
    are Spark's and the report says why."""
    import dpp.frontends.sql.planner

    def broken(sql, resolve, **kw):
        raise RuntimeError("analyzer called")

    monkeypatch.setattr(dpp.frontends.sql.planner, "analyze", broken)
    for q in ("SELECT d.d_year, count(*) FROM ref_sales s JOIN ref_date_dim d "
              "ON s.ss_sold_date_sk = d.d_date_sk WHERE d.d_moy = 2 GROUP BY d.d_year",
              "WITH sales AS (SELECT * FROM ref_sales WHERE ss_sold_date_sk = 105) "
              "SELECT count(*) FROM sales"):
        assert Counter(tuple(r) for r in dpp_env.collect(q)) == \
            Counter(tuple(r) for r in spark.sql(q).collect())
        rep = dpp_env.last_report.to_dict()
        assert not any("analyzer called" in n for n in rep["analysis_notes"]), rep
        assert any("analysis skipped" in n and "ref_sales" in n
                   for n in rep["analysis_notes"]), rep["analysis_notes"]
        assert rep["tables"] == []
    # a registered table in the query: analysed as before
    q = "SELECT count(*) FROM ref_date_dim d JOIN sales s ON s.ss_sold_date_sk = d.d_date_sk"
    assert Counter(tuple(r) for r in dpp_env.collect(q)) == Counter(_reference(spark, q))
    assert any("analyzer called" in n for n in dpp_env.last_report.to_dict()["analysis_notes"])


def test_analysis_failure_runs_unpruned_with_reason(spark, dpp_env, monkeypatch):
    """If the analyzer itself breaks, the query still runs, unpruned, and the report says so."""
    import dpp.frontends.sql.planner

    def broken(sql, resolve, **kw):  # **kw: the session's rules (issue 18)
        raise RuntimeError("analyzer bug")

    monkeypatch.setattr(dpp.frontends.sql.planner, "analyze", broken)
    q = "SELECT count(*) FROM sales WHERE ss_sold_date_sk = 105"
    assert Counter(tuple(r) for r in dpp_env.collect(q)) == Counter(_reference(spark, q))
    rep = dpp_env.last_report.to_dict()
    assert any("analyzer bug" in n for n in rep["analysis_notes"])
    assert not any(t["pruning"] == "applied" for t in rep["tables"])
    assert dpp_env.last_report.summary_line().startswith("dpp: no pruning")


def test_sampled_and_column_aliased_references_are_never_pruned(spark, dpp_env):
    # the first column (an item key) is renamed to the partition column's name: pruning by
    # name would drop every row
    q = "SELECT count(*) FROM sales s (ss_sold_date_sk, b, c, d, e) WHERE ss_sold_date_sk = 1001"
    plan = dpp_env.explain(q)
    assert "NOT pruned" in plan and "column aliases" in plan
    expected = Counter(_reference(spark, q))
    assert expected[(50,)] == 1  # 600 rows, item keys cycle through 12 values
    assert Counter(tuple(r) for r in dpp_env.collect(q)) == expected
    q = "SELECT count(*) FROM sales TABLESAMPLE (100 PERCENT) WHERE ss_sold_date_sk = 105"
    assert "TABLESAMPLE" in dpp_env.explain(q)


def test_explain_names_reasons(dpp_env):
    text = dpp_env.explain("SELECT count(*) FROM sales LEFT JOIN date_dim ON "
                           "ss_sold_date_sk = d_date_sk AND d_year = 2000")
    assert "NOT pruned" in text and "preserved side of an outer join" in text
    text = dpp_env.explain("SELECT count(*) FROM sales JOIN date_dim ON "
                           "ss_sold_date_sk = d_date_sk WHERE d_moy = 2")
    assert "pruned" in text and "build side: SELECT" in text and "d_moy = 2" in text


def test_disabled_is_plain_spark_sql(spark, dpp_env):
    from dpp.runtime.config import DppConfig
    from dpp import DppSession

    off = DppSession(spark, config=DppConfig(enabled=False))
    for name, path in dpp_env.catalog.tables.items():
        off.catalog.tables[name] = path
    q = "SELECT count(*) FROM ref_sales WHERE ss_sold_date_sk = 105"
    assert Counter(tuple(r) for r in off.collect(q)) == Counter(_reference(spark, q))
    rep = off.last_report.to_dict()
    assert rep["enabled"] is False and rep["tables"] == [] and rep["filters"] == []


def _count_loads(dpp_env, monkeypatch) -> list[str]:
    from dpp.session import DppSession

    loads: list[str] = []
    real = DppSession._load_group  # one listing per group of references pruned alike

    def counting(self, group, *a, **k):
        loads.append(group.refs[0].table)
        return real(self, group, *a, **k)

    monkeypatch.setattr(DppSession, "_load_group", counting)
    return loads


def test_references_with_nothing_to_prune_by_share_the_plain_table(spark, dpp_env, monkeypatch):
    """Filters on data columns only (statistics pruning off): no listing of its own per
    reference, the report says why, and Spark sees one relation it can merge scans over."""
    if dpp_env.config.stats_pruning != "false":
        pytest.skip("about statistics pruning off (auto may read footers for ss_qty here)")
    loads = _count_loads(dpp_env, monkeypatch)
    q = [x[1] for x in QUERIES if x[0] == "scalar_subqueries_one_fact"][0]
    assert Counter(tuple(r) for r in dpp_env.collect(q)) == Counter(_reference(spark, q))
    assert loads == []
    tables = dpp_env.last_report.to_dict()["tables"]
    assert len(tables) == 3 and all(t["pruning"] == "none" for t in tables)
    assert all("no predicate on a partition column" in t["reason"] for t in tables)
    assert all("statsPruning" in t["reason"] for t in tables)


def test_references_pruned_alike_share_one_listing(spark, dpp_env, monkeypatch):
    loads = _count_loads(dpp_env, monkeypatch)
    same = [x[1] for x in QUERIES if x[0] == "fact_twice_same_filter"][0]
    assert Counter(tuple(r) for r in dpp_env.collect(same)) == Counter(_reference(spark, same))
    assert loads == ["sales"]
    tables = [t for t in dpp_env.last_report.to_dict()["tables"] if t["table"] == "sales"]
    assert len(tables) == 2 and all(t["pruning"] == "applied" for t in tables)
    assert {t["partitions_kept"] for t in tables} == {5}
    # the query's enumeration phase counts the shared load once, not once per reference
    enum = dpp_env.last_report.to_dict()["phases"]["split_enumeration"]
    assert enum == pytest.approx(tables[0]["enumeration_seconds"])
    assert tables[0]["enumeration_seconds"] > 0
    loads.clear()
    other = [x[1] for x in QUERIES if x[0] == "fact_twice"][0]   # different filters
    assert Counter(tuple(r) for r in dpp_env.collect(other)) == Counter(_reference(spark, other))
    assert loads == ["sales", "sales"]
