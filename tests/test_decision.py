"""The session's decision step, without Spark: which references are pruned by what, which
filters are built, which references share one listing, which plain views are needed."""
from __future__ import annotations

from typing import Optional

from dpp.core.domain import INT, STRING, Domain, TupleDomain
from dpp.decision import decide, table_columns
from dpp.planner import TableInfo, analyze
from hive_splits import PartitionColumn, Table

SALES = Table(name="sales", location="/data/sales",
              columns=(("amt", "int"), ("item", "int")),
              partition_columns=(PartitionColumn("d", "int"),))
DIMS = {"dates": {"d_id": INT, "yr": INT}, "items": {"i_id": INT, "color": STRING}}


def resolve(name: str) -> Optional[TableInfo]:
    if name == "sales":
        return TableInfo(name="sales", columns=dict(table_columns(SALES)),
                         partition_columns=("d",))
    cols = DIMS.get(name)
    return None if cols is None else TableInfo(name=name, columns=dict(cols),
                                               partition_columns=())


def decision(sql: str, stats_pruning: bool = False):
    plan = analyze(sql, resolve)
    return decide(plan, {"sales": SALES}, query_id="q1", stats_pruning=stats_pruning,
                  mentions=lambda text: [n for n in ("sales",) if n in text.lower()])


def test_one_filter_per_build_query_and_one_listing_per_equal_references():
    d = decision("SELECT a.amt, b.amt FROM sales a JOIN dates t ON a.d = t.d_id "
                 "JOIN sales b ON b.d = t.d_id WHERE t.yr = 2000")
    assert [f.probe_type for f in d.filters] == [INT]
    assert d.filters[0].filter_id.startswith("q1-")
    assert "yr = 2000" in (d.filters[0].build_query or "")
    assert len(d.groups) == 1 and len(d.groups[0].refs) == 2
    assert d.unpruned == ()


def test_static_domain_on_the_partition_column_alone_prunes():
    d = decision("SELECT amt FROM sales WHERE d BETWEEN 3 AND 5 AND amt > 7")
    assert d.filters == ()
    (g,) = d.groups
    assert g.static == TupleDomain.of({"d": Domain.range(INT, 3, 5)})  # amt left out


def test_a_reference_with_only_a_data_column_filter_reads_the_plain_view():
    d = decision("SELECT s.amt FROM sales s JOIN items i ON s.item = i.i_id "
                 "WHERE i.color = 'red'")
    assert d.groups == () and d.filters == ()
    ((ref, why),) = d.unpruned
    assert ref.table == "sales" and "statsPruning" in why
    assert d.plain_tables == frozenset({"sales"})
    # with statistics pruning on, the same filter is built and the table listed
    on = decision("SELECT s.amt FROM sales s JOIN items i ON s.item = i.i_id "
                  "WHERE i.color = 'red'", stats_pruning=True)
    assert len(on.filters) == 1 and len(on.groups) == 1


def test_the_preserved_side_of_an_outer_join_is_unpruned_with_the_planners_reason():
    d = decision("SELECT s.amt FROM sales s LEFT JOIN dates t ON s.d = t.d_id "
                 "WHERE t.yr = 2000 OR t.yr IS NULL")
    assert d.groups == ()
    ((ref, why),) = d.unpruned
    assert "preserved" in why
    assert d.plain_tables == frozenset({"sales"})


def test_a_build_side_that_reads_the_fact_table_needs_its_plain_view():
    d = decision("SELECT a.amt FROM sales a WHERE a.d IN (SELECT b.d FROM sales b "
                 "WHERE b.amt > 100)")
    assert any("sales" in (f.build_query or "").lower() for f in d.filters)
    assert "sales" in d.plain_tables
