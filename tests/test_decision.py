"""The decision step, without Spark: which references are pruned by what, which filters are
built, which references share one listing, which plain views are needed (the SQL-text path's
:func:`decide`, and :func:`plan_loads` that it and the optimizer hook share)."""
from __future__ import annotations

from typing import Optional

import pytest

from dpp.core.refusals import Code, Refusal
from dpp.core.domain import INT, STRING, Domain, TupleDomain
from dpp.runtime.decision import Probe, ProbeKey, decide, plan_loads, table_columns
from dpp.frontends.sql.planner import TableInfo, analyze
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
    assert ref.table == "sales" and "statsPruning" in why.words()
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
    assert why.code is Code.PRESERVED_SIDE
    assert d.plain_tables == frozenset({"sales"})


def test_a_build_side_that_reads_the_fact_table_needs_its_plain_view():
    d = decision("SELECT a.amt FROM sales a WHERE a.d IN (SELECT b.d FROM sales b "
                 "WHERE b.amt > 100)")
    assert any("sales" in (f.build_query or "").lower() for f in d.filters)
    assert "sales" in d.plain_tables


# ---------------------------------------------------------------- plan_loads: every front end's

FACT = Table(name="fact", location="/data/fact",
             columns=(("amt", "int"), ("item", "int")),
             partition_columns=(PartitionColumn("d", "int"),))
OTHER = Table(name="other", location="/data/other", columns=(("amt", "int"),),
              partition_columns=(PartitionColumn("d", "int"),))


def probe(ref: str, *keys: ProbeKey, table: Table = FACT,
          static: TupleDomain = TupleDomain.all()) -> Probe:
    return Probe(ref=ref, table=table, label=table.name, table_key=table.name, keys=keys,
                 static=static)


def test_builds_with_one_identity_are_one_filter_and_their_probes_one_load():
    asked = []

    def identity(build: object) -> object:
        asked.append(build)
        return "same" if build in ("b1", "b2") else build

    plan = plan_loads([probe("r1", ProbeKey(build="b1", column="D")),
                       probe("r2", ProbeKey(build="b2", column="d")),
                       probe("r3", ProbeKey(build="b3", column="d"))], False, identity)
    assert list(plan.builds) == ["same", "b3"]
    assert [p.ref for p, _k in plan.builds["same"]] == ["r1", "r2"]
    assert asked == ["b1", "b2", "b3"]            # once per build handle
    assert [[p.ref for p, _k in load.members] for load in plan.loads] == [["r1", "r2"], ["r3"]]
    assert plan.idle == () and plan.notes == ()


def test_a_data_column_key_is_kept_only_when_statistics_may_prune_by_it():
    keys = (ProbeKey(build="b1", column="d"), ProbeKey(build="b2", column="item", data=True))
    off = plan_loads([probe("r1", *keys)], False, lambda b: b)
    on = plan_loads([probe("r1", *keys)], True, lambda b: b)
    assert list(off.builds) == ["b1"] and list(on.builds) == ["b1", "b2"]
    # a reference with only a refused data key has nothing to prune by
    idle = plan_loads([probe("r1", keys[1])], False, lambda b: pytest.fail("not asked"))
    assert idle.loads == () and [p.ref for p in idle.idle] == ["r1"]


def test_a_data_key_built_from_another_fact_is_refused_with_a_note_unless_statistics_are_on():
    key = ProbeKey(build="b1", column="item", data=True, build_facts=("other",))
    policy_calls = []

    def policy(table: Table, column: str) -> bool:
        policy_calls.append(column)
        return True
    plan = plan_loads([probe("r1", key)], policy)
    assert plan.loads == () and "fact table other" in plan.notes[0]
    assert len(plan_loads([probe("r1", key)], True).loads) == 1


def test_the_statistics_policy_is_asked_once_per_table_and_column():
    calls = []

    def policy(table: Table, column: str) -> bool:
        calls.append((table.name, column))
        return True
    plan_loads([probe("r1", ProbeKey(build="b1", column="item", data=True)),
                probe("r2", ProbeKey(build="b2", column="ITEM", data=True)),
                probe("r3", ProbeKey(build="b1", column="amt", data=True), table=OTHER)],
               policy)
    assert calls == [("fact", "item"), ("other", "amt")]


def test_equal_keys_on_other_static_domains_or_tables_are_separate_loads():
    key = ProbeKey(build="b1", column="d")
    two = TupleDomain.of({"d": Domain.range(INT, 1, 2)})
    plan = plan_loads([probe("r1", key), probe("r2", key, static=two),
                       probe("r3", key, table=OTHER), probe("r4", key)], False)
    assert [[p.ref for p, _k in load.members] for load in plan.loads] == [
        ["r1", "r4"], ["r2"], ["r3"]]
    assert list(plan.builds) == ["b1"]


def test_a_static_domain_alone_keeps_a_reference_and_a_data_columns_only_with_statistics():
    on_part = TupleDomain.of({"d": Domain.range(INT, 1, 2)})
    on_data = TupleDomain.of({"amt": Domain.range(INT, 1, 2)})
    assert [p.ref for p, _k in plan_loads([probe("r1", static=on_part)], False)
            .loads[0].members] == ["r1"]
    assert [p.ref for p in plan_loads([probe("r1", static=on_data)], False).idle] == ["r1"]
    assert plan_loads([probe("r1", static=on_data)], True).loads[0].static == on_data


def test_an_expression_key_is_not_a_data_column_and_groups_by_its_text():
    a = ProbeKey(build="b1", column="d", expr="d + 1", data=True)
    b = ProbeKey(build="b1", column="d")
    plan = plan_loads([probe("r1", a), probe("r2", b), probe("r3", a)], False)
    assert [[p.ref for p, _k in load.members] for load in plan.loads] == [["r1", "r3"], ["r2"]]


def test_a_catalog_table_is_listed_whole_only_unfiltered_and_unbucketed():
    from dpp.runtime.decision import lists_whole_catalog_table

    assert lists_whole_catalog_table(True, partition_filtered=False, bucketed=False)
    assert not lists_whole_catalog_table(False, partition_filtered=False, bucketed=False)
    assert not lists_whole_catalog_table(True, partition_filtered=True, bucketed=False)
    assert not lists_whole_catalog_table(True, partition_filtered=False, bucketed=True)
