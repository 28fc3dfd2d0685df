"""What to prune, decided from a pruning plan alone: no Spark, no threads, no I/O.

From the analyzer's plan and the tables it names, :func:`decide` says which references stay
unpruned (and why), which dynamic filters to build (one per distinct build query), which
references share one listing (same table, same static domain, same filters: one DataFrame, so
Spark can still reuse the scan), and which registered tables need their plain view.

Whether a *data* column's filter is worth its build side and footer reads is the one question
asked outside: ``stats_pruning`` is a constant or a :data:`StatsPolicy` (the session's
``auto`` samples footers behind it, once per table and column).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional, Union

from dpp.core.domain import DataType, TupleDomain
from dpp.core.errors import DppError
from dpp.filter_runs import FilterSpec
from dpp.planner import DynamicFilterSpec, PruningPlan, TableRefPlan
from dpp.views import norm_name
from hive_splits import Table

__all__ = ["LoadGroup", "PruningDecision", "StatsPolicy", "decide", "table_columns",
           "static_for", "real_column", "is_bucket_column", "data_filter_verdict"]

# (table, data column) -> use Parquet statistics on it (build its filter, keep its static domain)
StatsPolicy = Callable[[Table, str], bool]
Stats = Union[bool, StatsPolicy]


def _policy(stats: Stats) -> StatsPolicy:
    if callable(stats):
        return stats
    flag = bool(stats)
    return lambda _table, _column: flag


@dataclass(frozen=True)
class LoadGroup:
    """References that read exactly the same splits: one listing, one DataFrame."""

    key: str
    refs: tuple[TableRefPlan, ...]
    table: Table
    static: TupleDomain
    filters: tuple[tuple[DynamicFilterSpec, FilterSpec], ...]


@dataclass(frozen=True)
class PruningDecision:
    unpruned: tuple[tuple[TableRefPlan, str], ...]
    filters: tuple[FilterSpec, ...]
    groups: tuple[LoadGroup, ...]
    plain_tables: frozenset[str]
    notes: tuple[str, ...] = ()         # for the report's analysis notes


def decide(plan: PruningPlan, tables: Mapping[str, Optional[Table]], *, query_id: str,
           stats_pruning: Stats, mentions: Callable[[str], Iterable[str]]) -> PruningDecision:
    """The decision for ``plan``. ``tables`` holds every table the analyzer resolved;
    ``mentions(text)`` names the registered tables a SQL text refers to (they need their plain
    view when read unpruned, or by a build side); ``stats_pruning`` says, per table and data
    column, whether statistics may prune by it (a constant, or a policy asked at most once
    per table and column here)."""
    asked: dict[tuple[int, str], bool] = {}
    ask = _policy(stats_pruning)

    def uses(table: Table, column: str) -> bool:
        key = (id(table), column.lower())
        if key not in asked:
            # a table's one bucket column prunes by hashing the values, whatever statistics say
            asked[key] = (is_bucket_column(table, column)
                          or bool(ask(table, real_column(table, column) or column)))
        return asked[key]

    unpruned: list[tuple[TableRefPlan, str]] = [
        (r, r.reason or "no usable predicate") for r in plan.refs if not r.pruning]
    pruned = [r for r in plan.refs if r.pruning]
    # every registered table the rewritten query still names needs its plain view
    unpruned_names = {r.table for r, _ in unpruned}
    plain = (unpruned_names | set(mentions(plan.sql))) - {
        r.table for r in pruned if r.table not in unpruned_names}
    if not pruned:
        return PruningDecision(tuple(unpruned), (), (), frozenset(plain))

    specs: dict[str, FilterSpec] = {}
    ref_filters: dict[str, list[tuple[DynamicFilterSpec, FilterSpec]]] = {}
    notes: list[str] = []
    for ref in pruned:
        table = _table(tables, ref)
        ref_filters[ref.ref_id] = []
        for dyn in ref.dynamic:
            if not _is_partition_column(table, dyn.probe_column):
                facts = [b for b in dyn.build_tables if _is_fact(tables.get(norm_name(b)))]
                worth, note = data_filter_verdict(table, dyn.probe_column, ref.table,
                                                  facts, stats_pruning, uses)
                if note and note not in notes:
                    notes.append(note)
                if not worth:
                    continue  # a data-column filter only helps statistics pruning
            spec = specs.get(dyn.build_query)
            if spec is None:
                spec = FilterSpec(filter_id=f"{query_id}-{dyn.filter_id}",
                                  build_label=dyn.build_column,
                                  probe_type=column_type(table, dyn.probe_column),
                                  build_query=dyn.build_query, probe_label=ref.table)
                specs[dyn.build_query] = spec
            elif ref.table not in spec.probe_label.split(", "):
                spec = dataclasses.replace(spec, probe_label=f"{spec.probe_label}, {ref.table}")
                specs[dyn.build_query] = spec
            ref_filters[ref.ref_id].append((dyn, spec))
    # A reference left with nothing to prune by (no usable dynamic filter, no static domain
    # on a partition column unless statistics pruning is on) reads the plain view: its own
    # listing and DataFrame would only cost time, and a relation of its own keeps Spark from
    # merging or reusing scans of the table (TPC-DS q9: fifteen scalar subqueries over
    # store_sales, merged into few scans when they read one relation).
    idle = [ref for ref in pruned if not ref_filters[ref.ref_id]
            and static_for(ref, _table(tables, ref), uses).is_all()]
    why_idle = ("no predicate on a partition column to prune by"
                + ("" if stats_pruning is True else
                   " (data-column filters need spark.dpp.statsPruning.enabled"
                   + (": auto judged statistics unable to pay here)" if callable(stats_pruning)
                      else ")")))
    unpruned += [(ref, why_idle) for ref in idle]
    plain |= {ref.table for ref in idle}
    pruned = [ref for ref in pruned if ref not in idle]
    if not pruned:
        return PruningDecision(tuple(unpruned), (), (), frozenset(plain), tuple(notes))

    grouped: dict[str, list[TableRefPlan]] = {}
    for ref in pruned:
        grouped.setdefault(_load_key(ref, tables, ref_filters, uses), []).append(ref)
    used = {s.build_query for fs in ref_filters.values() for _, s in fs}
    for q in used:
        if q is not None:
            plain |= set(mentions(q))
    groups = tuple(_group(k, refs, _table(tables, refs[0]), ref_filters, uses)
                   for k, refs in grouped.items())
    return PruningDecision(tuple(unpruned), tuple(specs.values()), groups, frozenset(plain),
                           tuple(notes))


def data_filter_verdict(table: Table, column: str, label: str, facts: list[str],
                        stats_pruning: Stats, uses: Optional[StatsPolicy] = None
                        ) -> tuple[bool, Optional[str]]:
    """Whether a dynamic filter on data column ``column`` of ``table`` is worth its build
    side and footer reads, and the report's note when it is refused: every front end asks
    this. ``facts`` names the partitioned tables its build side scans; ``uses`` is the
    caller's memo of ``stats_pruning`` (asked at most once per table and column).

    A data column only skips files (and row groups); paying a scan of another fact for it
    (TPC-DS q40: catalog_returns by catalog_sales' order numbers, 11 s of build for a
    144k-row table) rarely returns the cost, so it is built from a fact only when statistics
    pruning is ``true``. Spark's own DPP likewise only prunes from a build side it
    broadcasts anyway. A table's one bucket column prunes by hashing the values, whatever
    the statistics say."""
    if facts and stats_pruning is not True:
        return False, (f"{label}.{column}: no filter built, its build side scans fact table "
                       f"{', '.join(facts)} to prune a data column "
                       f"(statsPruning.enabled=true builds it)")
    if is_bucket_column(table, column):
        return True, None
    ask = uses or _policy(stats_pruning)
    return bool(ask(table, real_column(table, column) or column)), None


def _is_fact(table: Optional[Table]) -> bool:
    """A partitioned table, or one registered by path: a catalog table with no partition
    column that dpp reads by its files is a dimension to build from as much as a probe."""
    return table is not None and (bool(table.partition_columns) or table.catalog_name is None)


def _group(key: str, refs: list[TableRefPlan], table: Table,
           ref_filters: Mapping[str, list[tuple[DynamicFilterSpec, FilterSpec]]],
           stats_pruning: Stats) -> LoadGroup:
    """The group's loader inputs, with column names as the table spells them (the analyzer
    lower-cases them; a folder ``Part=...`` is column ``Part`` to the split loader)."""
    static = static_for(refs[0], table, stats_pruning)
    if not static.is_none() and static.domains:
        static = TupleDomain.of({real_column(table, c) or c: d
                                 for c, d in static.domains.items()})
    filters = tuple((dataclasses.replace(dyn, probe_column=real_column(table, dyn.probe_column)
                                         or dyn.probe_column), spec)
                    for dyn, spec in ref_filters[refs[0].ref_id])
    return LoadGroup(key=key, refs=tuple(refs), table=table, static=static, filters=filters)


def real_column(table: Table, name: str) -> Optional[str]:
    """The table's own spelling of a column: exact, else the one case-insensitive match
    (None when there is none, or more than one)."""
    names = [n for n, _ in table.all_columns()]
    if name in names:
        return name
    found = [n for n in names if n.lower() == name.lower()]
    return found[0] if len(found) == 1 else None


def static_for(ref: TableRefPlan, table: Table, stats_pruning: Stats) -> TupleDomain:
    """The static domain the split loader applies: data columns only where statistics are
    used for them."""
    td = ref.static
    if stats_pruning is True or td.is_none():
        return td
    uses = _policy(stats_pruning)
    parts = {c.name.lower() for c in table.partition_columns}
    doms = td.domains or {}
    return TupleDomain.of({k: v for k, v in doms.items()
                           if k.lower() in parts or is_bucket_column(table, k)
                           or uses(table, k)})


def table_columns(table: Table) -> list[tuple[str, Optional[DataType]]]:
    """(name, type) of every column of a table, partition columns included; None for types
    with no domain type (usable in the query, not for pruning)."""
    out: list[tuple[str, Optional[DataType]]] = []
    parts = {c.name: c.type for c in table.partition_columns}
    for name, typ in table.all_columns():
        if name in parts:
            out.append((name.lower(), parts[name]))
            continue
        try:
            out.append((name.lower(), DataType.from_catalog(str(typ))))
        except DppError:
            out.append((name.lower(), None))
    return out


def column_type(table: Table, column: str) -> Optional[DataType]:
    return dict(table_columns(table)).get(column.lower())


def is_bucket_column(table: Table, column: str) -> bool:
    """The table's one bucket column: a filter on it prunes by hashing the values."""
    spec = getattr(table, "bucketing", None)
    return (spec is not None and len(spec.columns) == 1
            and spec.columns[0].lower() == column.lower())


def _is_partition_column(table: Table, column: str) -> bool:
    return column.lower() in {c.name.lower() for c in table.partition_columns}


def _table(tables: Mapping[str, Optional[Table]], ref: TableRefPlan) -> Table:
    t = tables.get(norm_name(ref.table))
    if t is None:  # pragma: no cover - the analyzer prunes only tables it resolved
        raise DppError(f"table {ref.table!r} of reference {ref.ref_id} was not resolved")
    return t


def _load_key(ref: TableRefPlan, tables: Mapping[str, Optional[Table]],
              ref_filters: Mapping[str, list[tuple[DynamicFilterSpec, FilterSpec]]],
              stats_pruning: Stats) -> str:
    """References with equal keys read exactly the same splits."""
    static = static_for(ref, _table(tables, ref), stats_pruning)
    filters = sorted((dyn.probe_column.lower(), spec.filter_id)
                     for dyn, spec in ref_filters[ref.ref_id])
    return json.dumps([norm_name(ref.table), static.to_data(), filters], sort_keys=True,
                      default=str)
