"""Row-group filters without Spark: which references of a fact with no partition column the
analysis probes, which tables count as facts in a build side, and the ranges a filter's
values become (every value covered, never more than MAX_RANGES)."""
from __future__ import annotations

import datetime as dt
import random
from typing import Optional

import pytest

from dpp.core.domain import BIGINT, INT, STRING
from dpp.runtime.decision import _is_fact, decide
from dpp.frontends.sql.planner import TableInfo, analyze
from dpp.runtime.row_groups import MAX_RANGES, _runs
from hive_splits import PartitionColumn, Table

INV = Table(name="inv", location="/data/inv", columns=(("day", "int"), ("item", "int"),
                                                       ("qty", "int")), partition_columns=())
COLS = {"inv": {"day": INT, "item": INT, "qty": INT},
        "sales": {"amt": INT, "item": INT, "d": INT},
        "cal": {"c_day": BIGINT, "week": INT, "yr": INT, "flag": STRING},
        "items": {"i_id": INT, "color": STRING}}


def resolve(name: str) -> Optional[TableInfo]:
    cols = COLS.get(name)
    if cols is None:
        return None
    return TableInfo(name=name, columns=dict(cols),
                     partition_columns=("d",) if name == "sales" else (),
                     data_only=name == "inv")


def _inv_refs(sql: str):
    return [r for r in analyze(sql, resolve).refs if r.table == "inv"]


def test_a_join_to_a_filtered_side_makes_a_reference_with_a_data_column_filter():
    (ref,) = _inv_refs("SELECT * FROM inv JOIN cal ON day = c_day WHERE flag = 'y'")
    assert ref.data_only and ref.pruning and ref.static.is_all()
    (f,) = ref.dynamic
    assert f.probe_column == "day" and "flag = 'y'" in f.build_query and f.reason_kind == "inner"


def test_a_snowflake_build_side_reaches_the_fact_through_another_dimension():
    """TPC-DS q72's shape: inv's dates are d2's, whose weeks are d1's of one year (d2
    narrowed to the rows d1's weeks match, as find_prunes narrows it for every front end)."""
    (ref,) = _inv_refs("SELECT * FROM inv JOIN cal d2 ON day = d2.c_day JOIN cal d1 "
                       "ON d1.week = d2.week WHERE d1.yr = 1999")
    (f,) = ref.dynamic
    assert f.probe_column == "day"
    assert f.build_query == (
        "SELECT d2.c_day AS dpp_key FROM cal AS d2 WHERE EXISTS(SELECT 1 FROM (SELECT d1.week "
        "AS dpp_key FROM cal AS d1 WHERE d1.yr = 1999) AS dpp_narrow0 WHERE "
        "dpp_narrow0.dpp_key = d2.week)")


def test_a_semi_join_gives_a_filter():
    (ref,) = _inv_refs("SELECT * FROM inv WHERE day IN (SELECT c_day FROM cal WHERE yr = 1)")
    assert [f.reason_kind for f in ref.dynamic] == ["semi"]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM inv JOIN cal ON day = c_day",                           # nothing filters
    "SELECT * FROM inv WHERE day = 5 AND qty > 3",                         # Spark's own
    "SELECT * FROM inv LEFT JOIN cal ON day = c_day AND flag = 'y'",       # preserved side
    "SELECT * FROM cal LEFT JOIN inv ON day = c_day WHERE flag = 'y'",     # null-supplied
    "SELECT * FROM cal FULL JOIN inv ON day = c_day WHERE flag = 'y'",
    "SELECT * FROM cal WHERE c_day IN (SELECT day FROM inv) AND flag = 'y'",  # semi's right
    "SELECT * FROM inv WHERE day NOT IN (SELECT c_day FROM cal WHERE flag = 'y')",
    "SELECT * FROM inv JOIN cal ON day <=> c_day WHERE flag = 'y'",
], ids=["unfiltered", "static-only", "preserved", "null-supplied", "full", "semi-right",
        "anti", "null-safe"])
def test_no_reference_where_no_join_may_drop_its_rows(sql):
    assert _inv_refs(sql) == []


def test_a_fact_is_never_the_build_side_of_a_data_column_filter():
    plan = analyze("SELECT * FROM inv JOIN sales ON inv.item = sales.item WHERE sales.d = 3",
                   resolve)
    sales = Table(name="sales", location="/data/sales", columns=(("amt", "int"),
                  ("item", "int")), partition_columns=(PartitionColumn("d", "int"),))
    d = decide(plan, {"inv": INV, "sales": sales}, query_id="q", stats_pruning=lambda t, c: True,
               mentions=lambda text: [])
    assert d.filters == () and any("scans fact table sales" in n for n in d.notes), d.notes


def test_an_unpartitioned_table_is_a_fact_when_spark_would_not_broadcast_it():
    """The hook's rule (a relation Spark sizes at or above the broadcast threshold is a fact)
    holds for the tables of the SQL-text path too: a catalog table by its estimate, a
    registered one unmeasured counts as one."""
    def catalog(size):
        return Table(name="inv", location="/wh/inv", columns=(("day", "int"),),
                     partition_columns=(), catalog_name="inv", size_bytes=size)
    assert _is_fact(catalog(20 << 20), None) and not _is_fact(catalog(5 << 20), None)
    assert _is_fact(catalog(5 << 20), "4m") and not _is_fact(catalog(20 << 20), "64MB")
    assert _is_fact(catalog(20 << 20), "-1")     # broadcasts off: Spark's 10 MB default
    assert _is_fact(INV, None) and not _is_fact(None, None)


def test_runs_cover_every_value_and_stay_few():
    rnd = random.Random(7)
    for _ in range(200):
        values = sorted(rnd.sample(range(500), rnd.randint(1, 120)))
        runs = _runs(values, "int")
        assert runs is not None and 1 <= len(runs) <= MAX_RANGES
        assert all(any(lo <= v <= hi for lo, hi in runs) for v in values)
        assert all(a[1] < b[0] for a, b in zip(runs, runs[1:]))       # sorted, disjoint
        assert runs[0][0] == values[0] and runs[-1][1] == values[-1]  # no wider than the values
    assert _runs([3, 4, 5, 9, 10], "bigint") == [(3, 5), (9, 10)]
    days = [dt.date(2001, 1, 1) + dt.timedelta(days=i) for i in (0, 1, 2, 40)]
    assert _runs(days, "date") == [(days[0], days[2]), (days[3], days[3])]
    assert _runs(["a", "b"], "string") is None


def test_a_comparisons_domain_is_one_open_range() -> None:
    """``f.x < max(d.a)``: an integral strict bound is the inclusive one below it; the open
    side is null on the wire and absent from the text; both sides open is no filter."""
    from dpp.core.domain import Domain
    from dpp.runtime.row_groups import row_terms

    below = row_terms(Domain.values("int", [3, 8]).compared("<"))
    assert below is not None and below.ranges == ((None, 7),)
    assert below.text("x") == "`x` <= 7"
    assert below.to_wire() == {"type": "int", "ranges": [[None, "7"]]}
    above = row_terms(Domain.values("date", [dt.date(2024, 3, 1)]).compared(">"))
    assert above is not None and above.text("d") == "`d` >= DATE '2024-03-02'"
    assert above.to_wire()["ranges"] == [["2024-03-02", None]]
    assert row_terms(Domain.not_null("int").compared("<")) is None
    assert row_terms(Domain.none("int").compared("<")).values == ()
