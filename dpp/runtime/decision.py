"""What to prune, decided from a pruning plan alone: no Spark, no threads, no I/O.

:func:`plan_loads` is the decision every front end takes once it has found what may prune what
(:func:`dpp.analysis.plan_pairs.find_prunes`): which keys are worth a filter (a data column's only
through statistics or buckets), which build sides are one filter (equal identity: the SQL
text's build query, the JVM's canonical build plan), which references share one listing (same
table, same static domain, same filters: one load, so Spark can still reuse the scan), and
which have nothing left to prune by. The hook calls it on the plans Spark optimizes;
:func:`decide` calls it on the SQL-text path's pruning plan, and adds what only that path
needs (the filter specs by build query, the registered tables that need their plain view).

Whether a *data* column's filter is worth its build side and footer reads is the one question
asked outside: ``stats_pruning`` is a constant or a :data:`StatsPolicy` (the session's
``auto`` samples footers behind it, once per table and column).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Mapping, Optional, Union

from dpp.core.domain import DataType, TupleDomain
from dpp.core.errors import DppError
from dpp.core.refusals import Code, Refusal
from dpp.runtime.filter_runs import FilterSpec
from dpp.analysis.pruning_plan import DynamicFilterSpec, PruningPlan, TableRefPlan
from dpp.analysis.rules import is_fact
from dpp.runtime.views import norm_name
from hive_splits import Table

__all__ = ["LoadGroup", "PruningDecision", "StatsPolicy", "decide", "table_columns",
           "static_for", "real_column", "is_bucket_column", "data_filter_verdict",
           "ProbeKey", "Probe", "Load", "LoadPlan", "plan_loads", "lists_whole_catalog_table"]

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
    unpruned: tuple[tuple[TableRefPlan, Refusal], ...]
    filters: tuple[FilterSpec, ...]
    groups: tuple[LoadGroup, ...]
    plain_tables: frozenset[str]
    notes: tuple[str, ...] = ()         # for the report's analysis notes


@dataclass(frozen=True)
class ProbeKey:
    """One key a reference may be pruned by: the values of build side ``build``."""

    build: Hashable             # the front end's handle on the build side
    column: str                 # the probe column (any case), or the first one ``expr`` reads
    data: bool = False          # a data column: statistics, buckets or row groups only
    build_facts: tuple[str, ...] = ()   # partitioned tables the build side scans
    expr: Optional[str] = None  # an expression key over partition columns, as written
    payload: Any = None         # the front end's own description (a Prune, a filter spec)
    rows: Union[bool, str] = False   # a data column whose row filter spares a costly join below
                                # the one it stands for (``Prune.rows_pay``): worth a build
                                # whatever the statistics say
    rows_only: bool = False     # set by ``plan_loads``: kept for its rows alone (statistics
                                # judged unable to skip a file by it)
    rider: bool = False         # kept only beside another kept key of the relation: a bound
                                # from file statistics never has dpp take a relation from
                                # Spark for its rows alone (TPC-DS q72's inventory is wrapped
                                # for its dates' row groups, and takes the bound with them)


@dataclass(frozen=True)
class Probe:
    """A relation reference a front end found keys for."""

    ref: Hashable
    table: Table
    label: str                  # the name reports give it
    table_key: str              # references with equal keys read the same table
    keys: tuple[ProbeKey, ...]
    static: TupleDomain = dataclasses.field(default_factory=TupleDomain.all)


@dataclass(frozen=True)
class Load:
    """References that read exactly the same splits: one listing, one load."""

    key: str
    members: tuple[tuple[Probe, tuple[ProbeKey, ...]], ...]   # each with the keys it keeps
    static: TupleDomain         # in the table's own column spelling


@dataclass(frozen=True)
class LoadPlan:
    builds: Mapping[Hashable, tuple[tuple[Probe, ProbeKey], ...]]   # by identity, in order
    identity: Mapping[Hashable, Hashable]   # a kept key's ``build`` -> its build's identity
    loads: tuple[Load, ...]
    idle: tuple[Probe, ...]     # nothing left to prune by
    notes: tuple[str, ...]


def plan_loads(probes: Iterable[Probe], stats_pruning: Stats,
               identity: Callable[[Hashable], Hashable] = lambda b: b) -> LoadPlan:
    """The decision over what a front end found: per probe, the keys worth a filter (a
    partition column's always; a data column's by :func:`data_filter_verdict`); one filter
    per distinct build identity (``identity(build)``, asked once per build, for kept keys
    only); one load per distinct (table, static domain, kept keys); probes left with no key
    and no static domain are idle. ``stats_pruning`` is asked at most once per table and
    column."""
    uses = _memo(stats_pruning)
    ids: dict[Hashable, Hashable] = {}
    builds: dict[Hashable, list[tuple[Probe, ProbeKey]]] = {}
    grouped: dict[str, list[tuple[Probe, tuple[ProbeKey, ...]]]] = {}
    statics: dict[str, TupleDomain] = {}
    idle: list[Probe] = []
    notes: list[str] = []
    for probe in probes:
        kept: list[ProbeKey] = []
        said: list[tuple[str, bool]] = []   # the verdicts' notes, each with its key's rider
        for key in probe.keys:
            if key.data and key.expr is None:
                worth, note = data_filter_verdict(probe.table, key.column, probe.label,
                                                  list(key.build_facts), stats_pruning, uses,
                                                  rows=key.rows)
                if note:
                    said.append((note, key.rider))
                if not worth:
                    continue
                if note is not None:   # kept for its rows alone
                    key = dataclasses.replace(key, rows_only=True)
            kept.append(key)
        alone = all(k.rider for k in kept)
        if alone:   # riders alone: the relation stays Spark's, their notes unsaid
            kept = []
        notes.extend(n for n, rider in said if not (alone and rider) and n not in notes)
        static = _static(probe.static, probe.table, uses)
        if not kept and static.is_all():
            idle.append(probe)
            continue
        for key in kept:
            if key.build not in ids:
                ids[key.build] = identity(key.build)
            builds.setdefault(ids[key.build], []).append((probe, key))
        filters = sorted({((k.column.lower() if k.expr is None else f"expr:{k.expr}"),
                           str(ids[k.build])) for k in kept})
        load_key = json.dumps([probe.table_key, static.to_data(), filters], sort_keys=True,
                              default=str)
        grouped.setdefault(load_key, []).append((probe, tuple(kept)))
        statics[load_key] = static
    loads = tuple(Load(key=k, members=tuple(m), static=_spelled(statics[k], m[0][0].table))
                  for k, m in grouped.items())
    return LoadPlan(builds={k: tuple(v) for k, v in builds.items()}, identity=ids,
                    loads=loads, idle=tuple(idle), notes=tuple(notes))


def lists_whole_catalog_table(enabled: bool, partition_filtered: bool, bucketed: bool) -> bool:
    """Whether dpp lists a partitioned catalog table with nothing to prune in Spark's place
    (``spark.dpp.listWholeCatalogTables``): only when no filter names a partition column
    (Spark would then ask the metastore for the matching partitions only) and the table is
    not bucketed (a listing of dpp's would lose the buckets Spark's joins use)."""
    return enabled and not partition_filtered and not bucketed


def decide(plan: PruningPlan, tables: Mapping[str, Optional[Table]], *, query_id: str,
           stats_pruning: Stats, mentions: Callable[[str], Iterable[str]],
           broadcast: Optional[str] = None) -> PruningDecision:
    """The decision for the SQL-text path's ``plan`` (:func:`plan_loads`, with a filter spec
    per build query). ``tables`` holds every table the analyzer resolved; ``mentions(text)``
    names the registered tables a SQL text refers to (they need their plain view when read
    unpruned, or by a build side); ``stats_pruning`` says, per table and data column, whether
    statistics may prune by it (a constant, or a policy asked at most once per table and
    column here); ``broadcast``: the session's ``spark.sql.autoBroadcastJoinThreshold`` text
    (which tables a build side reads are facts)."""
    unpruned: list[tuple[TableRefPlan, Refusal]] = [
        (r, r.reason or Refusal(Code.NO_USABLE_PREDICATE)) for r in plan.refs if not r.pruning]
    pruned = [r for r in plan.refs if r.pruning]
    # every registered table the rewritten query still names needs its plain view
    unpruned_names = {r.table for r, _ in unpruned}
    plain = (unpruned_names | set(mentions(plan.sql))) - {
        r.table for r in pruned if r.table not in unpruned_names}
    if not pruned:
        return PruningDecision(tuple(unpruned), (), (), frozenset(plain))

    probes = []
    for ref in pruned:
        table = _table(tables, ref)
        probes.append(Probe(
            ref=ref, table=table, label=ref.table, table_key=norm_name(ref.table),
            static=ref.static, keys=tuple(
                ProbeKey(build=dyn.build_query, column=dyn.probe_column,
                         data=not _is_partition_column(table, dyn.probe_column),
                         build_facts=tuple(b for b in dyn.build_tables
                                           if _is_fact(tables.get(norm_name(b)),
                                                       broadcast)),
                         payload=dyn)
                for dyn in ref.dynamic)))
    loads = plan_loads(probes, stats_pruning)
    # A reference left with nothing to prune by (no usable dynamic filter, no static domain
    # on a partition column unless statistics pruning is on) reads the plain view: its own
    # listing and DataFrame would only cost time, and a relation of its own keeps Spark from
    # merging or reusing scans of the table (TPC-DS q9: fifteen scalar subqueries over
    # store_sales, merged into few scans when they read one relation).
    why_idle = Refusal.of(Code.NO_PARTITION_PREDICATE, why=(
        "" if stats_pruning is True else
        " (data-column filters need spark.dpp.statsPruning.enabled"
        + (": auto judged statistics unable to pay here)" if callable(stats_pruning)
           else ")")))
    unpruned += [(probe.ref, why_idle) for probe in loads.idle]
    plain |= {probe.ref.table for probe in loads.idle}
    if not loads.loads:
        return PruningDecision(tuple(unpruned), (), (), frozenset(plain), loads.notes)

    specs: dict[Hashable, FilterSpec] = {}
    for query, uses in loads.builds.items():
        first, dyn = uses[0][0], uses[0][1].payload
        labels = list(dict.fromkeys(p.label for p, _k in uses))
        specs[query] = FilterSpec(filter_id=f"{query_id}-{dyn.filter_id}",
                                  build_label=dyn.build_column,
                                  probe_type=column_type(first.table, dyn.probe_column),
                                  build_query=query, probe_label=", ".join(labels))
        plain |= set(mentions(query))
    groups = tuple(
        LoadGroup(key=load.key, refs=tuple(p.ref for p, _k in load.members),
                  table=load.members[0][0].table, static=load.static,
                  filters=tuple((dataclasses.replace(
                      k.payload, probe_column=real_column(load.members[0][0].table, k.column)
                      or k.column), specs[loads.identity[k.build]])
                      for k in load.members[0][1]))
        for load in loads.loads)
    return PruningDecision(tuple(unpruned), tuple(specs.values()), groups, frozenset(plain),
                           loads.notes)


def _memo(stats_pruning: Stats) -> StatsPolicy:
    """``stats_pruning`` asked at most once per table and column (a table's one bucket
    column prunes by hashing the values, whatever statistics say)."""
    asked: dict[tuple[int, str], bool] = {}
    ask = _policy(stats_pruning)

    def uses(table: Table, column: str) -> bool:
        key = (id(table), column.lower())
        if key not in asked:
            asked[key] = (is_bucket_column(table, column)
                          or bool(ask(table, real_column(table, column) or column)))
        return asked[key]
    return uses


def data_filter_verdict(table: Table, column: str, label: str, facts: list[str],
                        stats_pruning: Stats, uses: Optional[StatsPolicy] = None,
                        rows: Union[bool, str] = False) -> tuple[bool, Optional[str]]:
    """Whether a dynamic filter on data column ``column`` of ``table`` is worth its build
    side and footer reads, and the report's note when it is refused: every front end asks
    this. ``facts`` names the partitioned tables its build side scans; ``uses`` is the
    caller's memo of ``stats_pruning`` (asked at most once per table and column).

    A data column only skips files (and row groups); paying a scan of another fact for it
    (TPC-DS q40: catalog_returns by catalog_sales' order numbers, 11 s of build for a
    144k-row table) rarely returns the cost, so it is built from a fact only when statistics
    pruning is ``true``. Spark's own DPP likewise only prunes from a build side it
    broadcasts anyway. A table's one bucket column prunes by hashing the values, whatever
    the statistics say. ``rows``: the filter's rows meet a costly join below the one it
    stands for (a row filter spares it): built whatever the statistics say, and noted (a
    text: the reason the note gives instead)."""
    if facts and stats_pruning is not True:
        return False, (f"{label}.{column}: no filter built, its build side scans fact table "
                       f"{', '.join(facts)} to prune a data column "
                       f"(statsPruning.enabled=true builds it)")
    if is_bucket_column(table, column):
        return True, None
    ask = uses or _policy(stats_pruning)
    if bool(ask(table, real_column(table, column) or column)):
        return True, None
    if rows:
        why = rows if isinstance(rows, str) else (
            "they meet a join with another large relation before the join it stands for")
        return True, f"{label}.{column}: filter built for its rows: {why}"
    return False, None


def _is_fact(table: Optional[Table], broadcast: Optional[str]) -> bool:
    """A table dpp knows that :func:`dpp.analysis.rules.is_fact` calls a fact."""
    return table is not None and is_fact(bool(table.partition_columns), table.size_bytes,
                                         broadcast)


def _spelled(static: TupleDomain, table: Table) -> TupleDomain:
    """A static domain with column names as the table spells them (the analyzer lower-cases
    them; a folder ``Part=...`` is column ``Part`` to the split loader)."""
    if static.is_none() or not static.domains:
        return static
    return TupleDomain.of({real_column(table, c) or c: d for c, d in static.domains.items()})


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
    return _static(ref.static, table, stats_pruning)


def _static(td: TupleDomain, table: Table, stats_pruning: Stats) -> TupleDomain:
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
