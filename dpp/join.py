"""``DppSession.join``: a fact table joined to a dimension DataFrame without SQL, the fact side
pruned by the dimension's keys where :mod:`dpp.rules` allows it. Spark Connect's DataFrame
plans (:mod:`dpp.connect_frames`) prune their fact reads through :func:`pruned_fact` too.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, Union

from pyspark.sql import DataFrame, Row

from dpp import rules as prune_rules
from dpp.config import DppConfig
from dpp.connect_handoff import no_stats_on_connect_catalog
from dpp.core.refusals import Code, Refusal
from dpp.core.domain import TupleDomain
from dpp.core.errors import ConfigError, LayoutError
from dpp.core.remote import functions_for
from dpp.core.spark_rules import SparkRules
from dpp.decision import Probe, ProbeKey, plan_loads, real_column, table_columns
from dpp.determinism import nondeterminism
from dpp.filter_runs import FilterRuns, FilterSpec
from dpp.handoff import full_dataframe
from dpp.remote_catalog import Unprunable, is_connect_catalog, quote_table
from dpp.report import JobReport
from dpp.views import norm_name
from hive_splits import DynamicFilter, SplitLoader, Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from dpp.catalog import TableCatalog
    from dpp.connect_handoff import ConnectHandoff
    from dpp.handoff import Handoff
    from dpp.runtime import Runtime

__all__ = ["JoinSession", "run_join", "pruned_fact"]


class JoinSession(Protocol):
    """What a join uses of the session it runs in: :class:`dpp.session.DppSession`
    implements it (and :mod:`dpp.connect_frames` hands one). Declared here, not imported from
    there, so the import arrow points one way: the session calls this module."""

    spark: SparkSession
    runtime: Runtime
    catalog: TableCatalog
    handoff: Handoff
    connect: ConnectHandoff

    @property
    def config(self) -> DppConfig: ...

    def finish(self, df: DataFrame, report: JobReport, cfg: DppConfig, t0: float,
               execute: bool) -> tuple[Union[DataFrame, list[Row]], JobReport]: ...


# the join types ``DataFrame.join`` takes, by its own ``how`` names (a cross join has no key
# to prune by, an existence join is Spark's own)
_DATAFRAME_HOWS: dict[prune_rules.JoinType, str] = {
    prune_rules.JoinType.INNER: "inner", prune_rules.JoinType.LEFT_OUTER: "left",
    prune_rules.JoinType.RIGHT_OUTER: "right", prune_rules.JoinType.FULL_OUTER: "full",
    prune_rules.JoinType.LEFT_SEMI: "left_semi", prune_rules.JoinType.LEFT_ANTI: "left_anti",
}


def run_join(session: JoinSession, fact: str, dim_df: DataFrame,
             on: list[tuple[str, str]], how: str) -> DataFrame:
    """``fact ⋈ dim_df`` (``on``: fact column, dimension column pairs), the fact being the
    left side: pruned when the rules let a join of type ``how`` prune its left side."""
    cfg = session.config
    rules = SparkRules.from_spark(session.spark)
    jt = prune_rules.join_type(how)
    norm_how = _DATAFRAME_HOWS.get(jt) if jt is not None else None
    if norm_how is None or not on:
        raise ConfigError(f"dpp.join how={how!r} on={on!r}: expected an equi-join "
                          f"(inner, left, right, full, semi, anti) with at least one "
                          f"(fact_column, dim_column) pair")
    text = f"JOIN {fact} ON {on} HOW {norm_how}"
    report = JobReport.start(query_text=text, kind="join", settings=cfg.as_settings(),
                             enabled=cfg.enabled)
    session.runtime.remote_notes(cfg, report)
    t0 = time.perf_counter()
    unusable: dict[str, Refusal] = {}
    table = session.catalog.table(fact, unusable)
    if table is None:
        # a table Spark knows that cannot be pruned (not partitioned, CHAR columns): read
        # whole, by name, and say why
        try:
            whole = session.spark.table(fact)
        except Exception:
            raise LayoutError(f"dpp.join: unknown table {fact!r}; register it with "
                              f"register_table(name, path) or create it in Spark's "
                              f"catalog") from None
        columns = {c.lower(): None for c in whole.columns}
    else:
        columns = dict(table_columns(table))
    for fcol, dcol in on:
        if fcol.lower() not in columns:
            raise ConfigError(f"dpp.join: table {fact!r} has no column {fcol!r}")
        if dcol not in dim_df.columns:
            raise ConfigError(f"dpp.join: the dimension DataFrame has no column {dcol!r}")
    if table is None:
        why = unusable.get(norm_name(fact), Refusal(Code.NOT_PARTITIONED))
        report.add_table_unpruned(fact, None, why)
        if why.code is Code.CONNECT_CATALOG_LEFT:
            session.runtime.note_once(report, "catalog")
        fact_df = whole
    elif cfg.enabled and prune_rules.may_prune(jt, "left"):
        fact_df = pruned_fact(session, fact, table, [(f, dim_df, d) for f, d in on], cfg,
                              rules, report)
    else:
        report.add_table_unpruned(fact, None, Refusal(Code.DISABLED) if not cfg.enabled else
                                  Refusal.of(Code.FACT_SIDE_PRESERVED, how=norm_how))
        fact_df = full_dataframe(session.spark, table)
    cond = None
    for fcol, dcol in on:
        c = fact_df[fcol] == dim_df[dcol]
        cond = c if cond is None else cond & c
    df = fact_df.join(dim_df, cond, norm_how)
    out, _ = session.finish(df, report, cfg, t0, execute=False)
    return out


def pruned_fact(session: JoinSession, fact: str, table: Table,
                on: list[tuple[str, DataFrame, str]], cfg: DppConfig, rules: SparkRules,
                report: JobReport, sized: bool = False) -> DataFrame:
    """The fact side over its surviving files: one filter per ``(fact column, dimension
    DataFrame, its column)``. ``sized``: the caller holds the relation in a view (Spark
    Connect's DataFrame plans, :mod:`dpp.connect_frames`), so it is sized as the table, as
    a ``spark.sql`` query's is."""
    runtime, handoff = session.runtime, session.handoff
    parts = {c.name.lower() for c in table.partition_columns}
    columns = dict(table_columns(table))
    qid = report.query_id[:8]
    with FilterRuns(session.spark, runtime.filter_service(cfg), cfg, rules, len(on) + 1,
                    runtime.env_notes, runtime.filter_memory) as runs:
        deadline = time.monotonic() + cfg.wait_timeout
        policy = runtime.stats_policy(cfg, report)
        connect_catalog = is_connect_catalog(table)
        keys = []
        for i, (fcol, dim_df, dcol) in enumerate(on):
            unstable = nondeterminism(dim_df)
            if unstable:
                # run again for its keys, it may keep others than the join sees
                report.refuse([Refusal.of(Code.BUILD_NONDETERMINISTIC, fcol, why=unstable)])
                continue
            keys.append(ProbeKey(build=i, column=real_column(table, fcol) or fcol,
                                 data=fcol.lower() not in parts, payload=(fcol, dim_df, dcol)))
        # the decision every front end takes: which keys are worth a filter
        decided = plan_loads([Probe(ref=fact, table=table, label=fact, table_key=fact,
                                    keys=tuple(keys))],
                             no_stats_on_connect_catalog(policy) if connect_catalog else policy)
        report.analysis_notes.extend(n for n in decided.notes
                                     if n not in report.analysis_notes)
        dyn = []
        for load in decided.loads:
            for _probe, kept in load.members:
                for key in kept:
                    fcol, dim_df, dcol = key.payload
                    spec = FilterSpec(filter_id=f"{qid}-j{key.build + 1}",
                                      build_label=f"dataframe.{dcol}",
                                      probe_type=columns.get(fcol.lower()), probe_label=fact)
                    runs.start(spec, lambda c=dcol, d=dim_df: d.select(
                        functions_for(d).col(c)), key=dcol)
                    dyn.append(DynamicFilter(filter_id=spec.filter_id, column=key.column,
                                             wait=runs.waiter(spec.filter_id, key.column,
                                                              deadline)))
        if connect_catalog:
            try:
                result, fact_df = session.connect.catalog_load(
                    table, TupleDomain.all(), dyn, cfg, rules, sized=sized)
            except Unprunable as exc:
                report.add_table_unpruned(fact, None,
                                          Refusal.of(Code.CONNECT_CATALOG_LEFT, fact, why=exc))
                return session.spark.table(quote_table(table.catalog_name or fact))
            runtime.note_once(report, "catalog_predicate")
        else:
            result = SplitLoader(table, TupleDomain.all(), dyn,
                                 wait_timeout=cfg.wait_timeout, rules=rules,
                                 lister=runtime.lister(table.location, cfg),
                                 **runtime.loader_stats(cfg)).load()
            fact_df = handoff.dataframe(
                table, result, handoff.partition_filtered(table, (), [d.column for d in dyn]),
                report if sized else None)
            if runtime.remote:   # dpp.join hands a DataFrame, no view: sized by its bytes
                if not sized:
                    runtime.note_once(report, "size")
                runtime.note_once(report, "handoff_calls")
        report.add_table_result(fact, None, table, result)
        report.phases["handoff"] = result.handoff_seconds
        runs.settle_into(report)
    return fact_df
