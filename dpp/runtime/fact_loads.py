"""A fact table's relation over the files that survive filters built from dimension
DataFrames: the runtime step behind ``DppSession.join`` (:mod:`dpp.frontends.dataframe.join`) and Spark Connect's
DataFrame plans (:mod:`dpp.frontends.connect.frames`). Which dimension may be built from (is it
deterministic) is each front end's question, asked through ``unstable``.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Optional

from pyspark.sql import DataFrame

from dpp.runtime.config import DppConfig
from dpp.runtime.connect_handoff import no_stats_on_connect_catalog
from dpp.core.domain import TupleDomain
from dpp.core.refusals import Code, Refusal
from dpp.core.remote import functions_for
from dpp.core.spark_rules import SparkRules
from dpp.runtime.decision import Probe, ProbeKey, plan_loads, real_column, table_columns
from dpp.runtime.filter_runs import FilterRuns, FilterSpec
from dpp.runtime.handoff import HandoffRefused
from dpp.runtime.remote_catalog import Unprunable, is_connect_catalog, quote_table
from dpp.runtime.report import JobReport
from hive_splits import DynamicFilter, SplitLoader, Table

if TYPE_CHECKING:
    from dpp.runtime.session_parts import SessionParts

__all__ = ["pruned_fact"]


def pruned_fact(session: SessionParts, fact: str, table: Table,
                on: list[tuple[str, DataFrame, str]], cfg: DppConfig, rules: SparkRules,
                report: JobReport, *, unstable: Callable[[DataFrame], Optional[str]],
                sized: bool = False) -> DataFrame:
    """The fact side over its surviving files: one filter per ``(fact column, dimension
    DataFrame, its column)``. ``unstable``: why a dimension DataFrame may give other rows
    when run again (the front end's own reader of its plans), None when it cannot; such a
    dimension is not built from. ``sized``: the caller holds the relation in a view (Spark
    Connect's DataFrame plans, :mod:`dpp.frontends.connect.frames`), so it is sized as the table, as
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
            why = unstable(dim_df)
            if why:
                # run again for its keys, it may keep others than the join sees
                report.refuse([Refusal.of(Code.BUILD_NONDETERMINISTIC, fcol, why=why)])
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
            try:
                fact_df = handoff.dataframe(
                    table, result,
                    handoff.partition_filtered(table, (), [d.column for d in dyn]))
            except HandoffRefused as exc:
                report.add_table_unpruned(fact, None, exc.refusal)
                runs.settle_into(report)
                return exc.whole
            if runtime.remote:
                runtime.note_once(report, "handoff_calls")
        report.add_table_result(fact, None, table, result)
        report.phases["handoff"] = result.handoff_seconds
        runs.settle_into(report)
    return fact_df
