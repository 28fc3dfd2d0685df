"""``DppSession.join``: a fact table joined to a dimension DataFrame without SQL, the fact side
pruned by the dimension's keys where :mod:`dpp.analysis.rules` allows it, through
:func:`dpp.runtime.fact_loads.pruned_fact` (which Spark Connect's DataFrame plans use too).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from dpp.analysis import rules as prune_rules
from dpp.core.errors import ConfigError, LayoutError
from dpp.core.refusals import Code, Refusal
from dpp.core.spark_rules import SparkRules
from dpp.runtime.decision import table_columns
from dpp.frontends.dataframe.determinism import nondeterminism
from dpp.runtime.fact_loads import pruned_fact
from dpp.runtime.handoff import full_dataframe
from dpp.runtime.report import JobReport
from dpp.runtime.views import norm_name

if TYPE_CHECKING:
    from dpp.runtime.session_parts import SessionParts

__all__ = ["run_join"]


# the join types ``DataFrame.join`` takes, by its own ``how`` names (a cross join has no key
# to prune by, an existence join is Spark's own)
_DATAFRAME_HOWS: dict[prune_rules.JoinType, str] = {
    prune_rules.JoinType.INNER: "inner", prune_rules.JoinType.LEFT_OUTER: "left",
    prune_rules.JoinType.RIGHT_OUTER: "right", prune_rules.JoinType.FULL_OUTER: "full",
    prune_rules.JoinType.LEFT_SEMI: "left_semi", prune_rules.JoinType.LEFT_ANTI: "left_anti",
}


def run_join(session: "SessionParts", fact: str, dim_df: DataFrame,
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
                              rules, report, unstable=nondeterminism)
    else:
        report.add_table_unpruned(fact, None, Refusal(Code.DISABLED) if not cfg.enabled else
                                  Refusal.of(Code.FACT_SIDE_PRESERVED, how=norm_how))
        fact_df = full_dataframe(session.spark, table, cfg.declared_kept_listing)
    cond = None
    for fcol, dcol in on:
        c = fact_df[fcol] == dim_df[dcol]
        cond = c if cond is None else cond & c
    df = fact_df.join(dim_df, cond, norm_how)
    out, _ = session.finish(df, report, cfg, t0, execute=False)
    return out
