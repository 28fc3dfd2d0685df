"""``DppSession``: the user's entry point, a facade over the parts every front end shares.

The parts, each with a public name other modules use: :attr:`DppSession.catalog`
(:class:`~dpp.runtime.catalog.TableCatalog`: declared and catalog tables, the analysis' resolver),
:attr:`~DppSession.runtime` (:class:`~dpp.runtime.services.Runtime`: filter service, listers,
statistics settings, environment notes), :attr:`~DppSession.handoff`
(:class:`~dpp.runtime.handoff.Handoff`: kept files to Spark, sized as the table) and
:attr:`~DppSession.connect` (:class:`~dpp.runtime.connect_handoff.ConnectHandoff`: the same on Spark
Connect). ``dpp.join`` is :mod:`dpp.frontends.dataframe.join`; the optimizer hook and Connect's DataFrame plans
are :mod:`dpp.frontends.hook.optimizer_hook` and :mod:`dpp.frontends.connect.frames`.

What stays here is the SQL-text path of one query: analyze the SQL into a pruning plan; start
every build-side job at once (one thread each); start every split loader at once, each waiting
on the filter service for its dynamic filters (bounded by ``spark.dpp.waitTimeout``);
substitute each pruned table reference by a DataFrame over its surviving files, under a
temporary view name of its own; run the rewritten query through ``spark.sql`` with the user's
settings. Anything that fails on the pruning path falls back to *no pruning*, reported — never
to a failed query or a different answer.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from pyspark.sql import DataFrame, Row, SparkSession

from dpp.frontends.sql import planner
from dpp.runtime.catalog import TableCatalog
from dpp.runtime.config import DppConfig, redact_url
from dpp.runtime.connect_handoff import (CONNECT_CATALOG_LEFT, CONNECT_NOTES, ConnectHandoff,
                                 drop_views_with, no_stats_on_connect_catalog)
from dpp.core.errors import LayoutError
from dpp.core.refusals import Code, Refusal
from dpp.core.spark_rules import SparkRules
from dpp.runtime.decision import LoadGroup, PruningDecision, decide
from dpp.runtime.filter_runs import FilterRuns
from dpp.runtime.handoff import Handoff, HandoffRefused, full_dataframe
from dpp.frontends.dataframe.join import run_join
from dpp.frontends.sql.planner import PruningPlan, rewrite
from dpp.runtime.remote_catalog import is_connect_catalog
from dpp.runtime.report import JobReport, append_jsonl
from dpp.runtime.services import Runtime, first_line, temp_view, unwrapped_sql
from dpp.runtime.spark_metrics import scan_metrics
from dpp.runtime.views import norm_name
from dpp.frontends.sql.whole_tables import read_whole, whole_catalog_refs
from hive_splits import DynamicFilter, LoadResult, SplitLoader, Table

__all__ = ["DppSession", "CONNECT_CATALOG_LEFT", "CONNECT_NOTES", "SERVER_PRUNES",
           "full_dataframe", "unwrapped_sql"]

log = logging.getLogger(__name__)

SERVER_PRUNES = ("the Spark Connect server runs dpp's optimizer hook (dpp connect-server, "
                 "spark.dpp.connectServer=true): it prunes this query and writes its report; "
                 "the client-side analysis stays off")


def _console(spark: Any, line: str) -> None:
    """``line`` on the driver's stderr. A driver Python that ``spark-submit`` started has its
    stderr merged into the JVM's stdout (Spark's ``PythonRunner``), where a job's own output
    goes: the line is written by the JVM's ``System.err`` then."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        try:
            spark.sparkContext._jvm.System.err.println(line)
            return
        except Exception:  # a session without a JVM of its own: this Python's stderr
            pass
    print(line, file=sys.stderr, flush=True)


class DppSession:
    """Dynamic partition pruning around a SparkSession.

    >>> dpp = DppSession(spark)                            # doctest: +SKIP
    >>> dpp.register_table("store_sales", "data/tpcds/store_sales")   # doctest: +SKIP
    >>> dpp.sql("SELECT ... FROM store_sales JOIN date_dim ...")      # doctest: +SKIP
    """

    def __init__(self, spark: SparkSession, config: Optional[DppConfig] = None) -> None:
        self.spark = spark
        self._fixed_config = config
        self.runtime = Runtime(spark)
        self.catalog = TableCatalog(spark, self.runtime, lambda: self.config, self._whole_table)
        self.connect = ConnectHandoff(spark, self.runtime)
        self.handoff = Handoff(spark, self.runtime, self.catalog, self.connect)
        # the optimizer hook (dpp.enable on a classic session): declared tables become Spark's
        # reader of their folder, which it prunes
        self.optimizer_hook: Optional[Any] = None
        self.connect_frames: Optional[Any] = None   # Spark Connect: dpp.frontends.connect.frames
        self.last_report: Optional[JobReport] = None
        self.config  # validate settings now: a bad value is an error at construction

    # ------------------------------------------------------------------ configuration
    @property
    def config(self) -> DppConfig:
        """The effective settings, re-read from the Spark conf so ``spark.conf.set`` applies."""
        return self.config_from(None)

    def config_from(self, settings: Optional[Mapping[str, str]]) -> DppConfig:
        """:attr:`config`, from the session's settings the caller already read (``None``:
        read them)."""
        if self._fixed_config is not None:
            return self._fixed_config
        return DppConfig.from_spark(self.spark, settings)

    @property
    def app_id(self) -> str:
        return self.runtime.app_id

    def _whole_table(self, table: Table) -> DataFrame:
        """A registered table's plain view: Spark's reader of the folder (or the catalog's
        table), made afresh for each query (:mod:`dpp.runtime.views`): the relation is Spark's
        own, with the hook or without it."""
        return full_dataframe(self.spark, table, self.catalog.kept_listing())

    def ensure_views(self, names: Iterable[str]) -> None:
        """Makes the plain views of these registered tables now (``spark.table(name)`` in a
        DataFrame job needs them before any query names them)."""
        self.catalog.views.ensure(names)

    def close(self) -> None:
        hook, self.optimizer_hook = self.optimizer_hook, None
        if hook is not None:
            hook.close()
        frames, self.connect_frames = self.connect_frames, None
        if frames is not None:
            frames.uninstall()
        if self.runtime.remote:   # this session's clones end with it
            self.connect.end_clones()
        self.runtime.close()

    # ------------------------------------------------------------------ tables
    def register_table(self, name: str, path: str, *,
                       partition_types: Optional[dict[str, str]] = None) -> Table:
        """Registers a Hive-partitioned Parquet folder under ``name`` (or a fact with no
        partition column: its joins on data columns then filter its files and row groups,
        :mod:`dpp.runtime.row_groups`).

        Nothing is listed beyond the first partition path and one footer; the Spark view of the
        same name is created only when a query needs the whole table (``spark.sql`` fallback).
        """
        return self.catalog.register(name, path, partition_types=partition_types)

    def unregister_table(self, name: str) -> None:
        """Forgets a registered table, and drops the plain view this session made of it (a
        user's own view of that name is left alone)."""
        self.catalog.unregister(name)

    # ------------------------------------------------------------------ public API
    def sql(self, query: str) -> DataFrame:
        """A DataFrame with exactly the rows of ``spark.sql(query)``, reading less. With the
        optimizer hook installed (a classic session after ``dpp.enable``) that is
        ``spark.sql(query)`` itself, pruned by the hook like every other query; the SQL-text
        analysis serves sessions without it (Spark Connect clients)."""
        if self.optimizer_hook is not None:
            self.config   # a bad spark.dpp.* value fails the query, as it fails spark.sql
            return self.plain_sql(query)
        df, _ = self._run_sql(query, execute=False)
        return df

    def collect(self, query: str) -> list[Row]:
        """Runs the query and returns its rows; the report then holds execution metrics."""
        if self.optimizer_hook is not None:
            self.config   # a bad spark.dpp.* value fails the query, as it fails spark.sql
            return self.plain_sql(query).collect()
        rows, _ = self._run_sql(query, execute=True)
        return rows

    def explain(self, query: str) -> str:
        """The pruning plan as text: per table reference, what prunes it, or why nothing does
        (with the optimizer hook, the hook's own decisions on Spark's plan; nothing runs)."""
        cfg = self.config
        head = [f"dpp: enabled={cfg.enabled}, coordinator={redact_url(cfg.coordinator)}, "
                f"waitTimeout={cfg.wait_timeout:g}s, maxDistinctValues={cfg.max_distinct_values}, "
                f"statsPruning={cfg.stats_pruning}"]
        head += [f"statistics pruning (auto), judged so far: {v}" for v in self.runtime.judged()]
        if not cfg.enabled:
            head.append("spark.dpp.enabled=false: the query runs as spark.sql(query), unpruned")
        if self.optimizer_hook is not None:   # what the hook decides on Spark's plan
            body = (self.optimizer_hook.explain(query) if cfg.enabled else [])
            return "\n".join(head + self.catalog.views.declined() + body)
        plan = planner.analyze(query, self.catalog.resolver({}),
                               rules=SparkRules.from_spark(self.spark))
        return "\n".join(head + self.catalog.views.declined() + [plan.explain()])

    def join(self, fact: str, dim_df: DataFrame, on: Sequence[tuple[str, str]],
             how: str = "inner") -> DataFrame:
        """``fact ⋈ dim_df`` for jobs without SQL; the fact side pruned where that is sound.

        ``on`` pairs a fact column with a dimension column. The result has the columns of both
        sides, as ``fact_df.join(dim_df, cond, how)`` would.
        """
        return run_join(self, fact, dim_df, list(on), how)

    def plain_sql(self, query: str, *args: object, **kwargs: object) -> DataFrame:
        """``spark.sql(query, ...)`` itself: no analysis, no pruning, no report. Registered
        tables the query names get their plain views first, so it reads them as Spark would
        (what :func:`dpp.enable` runs while ``spark.dpp.enabled`` is false)."""
        with self.catalog.views.query():
            return self._unpruned(query, *args, **kwargs)

    def _unpruned(self, query: str, *args: object, **kwargs: object) -> DataFrame:
        """The query as Spark's own, over the plain views of the declared tables it names."""
        self.catalog.views.ensure(self.catalog.mentions(query))
        return self.runtime.spark_sql(query, *args, **kwargs)

    # ------------------------------------------------------------------ SQL path
    def _run_sql(self, query: str, execute: bool
                 ) -> tuple[Union[DataFrame, list[Row]], JobReport]:
        cfg = self.config
        report = JobReport.start(query_text=query, kind="sql", settings=cfg.as_settings(),
                                 enabled=cfg.enabled)
        self.runtime.remote_notes(cfg, report)
        t0 = time.perf_counter()
        temp_views: list[str] = []
        if self.runtime.remote:   # views whose DataFrames are garbage, queued by their finalizers
            from dpp.runtime.connect_lifecycle import lifecycle_of

            lifecycle_of(self.spark).drain()
        with self.catalog.views.query():
            try:
                if not cfg.enabled:
                    report.analysis_notes.append("spark.dpp.enabled=false: no pruning")
                    df = self._unpruned(query)
                elif cfg.connect_server:
                    report.analysis_notes.append(SERVER_PRUNES)
                    df = self._unpruned(query)
                else:
                    df = self._plan_and_rewrite(query, cfg, report, temp_views)
                out = self.finish(df, report, cfg, t0, execute)
                if self.runtime.remote and not execute and temp_views:
                    drop_views_with(df, self.spark, temp_views, query)
                    temp_views = []
                return out
            finally:
                for v in temp_views:
                    try:
                        self.spark.catalog.dropTempView(v)
                    except Exception:  # pragma: no cover
                        log.debug("dropping %s failed", v, exc_info=True)

    def _plan_and_rewrite(self, query: str, cfg: DppConfig, report: JobReport,
                          temp_views: list[str]) -> DataFrame:
        """analyze → decide → build and load → substitute → run; unpruned on any failure."""
        rules = SparkRules.from_spark(self.spark)
        tables: dict[str, Optional[Table]] = {}
        unusable: dict[str, Refusal] = {}
        metas: dict[str, Any] = {}   # catalog metadata read for this query, by table
        ta = time.perf_counter()
        tree, _ = planner.parse(query)   # parsed once: the look below and the analysis
        if tree is not None and self._nothing_to_prune(planner.table_names(tree), tables,
                                                       unusable, report, metas):
            report.phases["analysis"] = time.perf_counter() - ta
            self._report_unusable(report, unusable)
            return self._unpruned(query)
        plan = self._analyze(query, tree, ta, tables, unusable, rules, report, metas)
        self._report_unusable(report, unusable)
        if plan is None:
            return self._unpruned(query)
        stats = self.runtime.stats_policy(cfg, report)
        if self.runtime.remote and any(is_connect_catalog(t) for t in tables.values()):
            stats = no_stats_on_connect_catalog(stats)
        decision = decide(plan, tables, query_id=report.query_id[:8],
                          stats_pruning=stats, mentions=self.catalog.mentions,
                          broadcast=rules.broadcast)
        report.analysis_notes.extend(decision.notes)
        for ref, why in decision.unpruned:
            if not ref.data_only:   # a table without partitions is reported when filtered
                report.add_table_unpruned(ref.table, ref.alias, why)
        self.catalog.views.ensure(sorted(decision.plain_tables))
        whole = whole_catalog_refs(plan, decision.unpruned, tables,
                                   cfg.list_whole_catalog_tables)
        # on Spark Connect a catalog table read whole stays Spark's: dpp would list it on the
        # client only for the server to list it again
        whole = {k: v for k, v in whole.items() if not is_connect_catalog(v[0])}
        if not decision.groups:
            if not whole:
                return self.runtime.spark_sql(query)
            replacements = read_whole(self, whole, cfg, rules, report, temp_views)
            return self._run_rewritten(query, plan, decision, replacements, report)
        workers = (len(decision.filters) + sum(len(g.refs) for g in decision.groups)
                   + (1 if whole else 0))
        with FilterRuns(self.spark, self.runtime.filter_service(cfg), cfg, rules, workers,
                        self.runtime.env_notes, self.runtime.filter_memory) as runs:
            for spec in decision.filters:  # every build side at once, each in its thread
                build = spec.build_query
                if self.runtime.remote:
                    spec = self.connect.cache_key(spec, cfg)
                runs.start(spec, lambda q=build: self.runtime.spark_sql(q))
            # tables read whole are listed while the build sides run
            whole_views = (runs.submit(read_whole, self, whole, cfg, rules, report, temp_views)
                           if whole else None)
            replacements = self._substitute(decision, runs, cfg, rules, report, temp_views)
            if whole_views is not None:
                replacements.update(whole_views.result())
            runs.settle_into(report)
        report.phases["wait"] = max((t.get("wait_seconds") or 0.0 for t in report.tables),
                                    default=0.0)
        report.phases["handoff"] = max((t.get("handoff_seconds") or 0.0
                                        for t in report.tables), default=0.0)
        return self._run_rewritten(query, plan, decision, replacements, report)

    def _report_unusable(self, report: JobReport, unusable: dict[str, Refusal]) -> None:
        """Tables that could not be pruned, with why; a catalog table left to Spark on
        Spark Connect also puts that note in the session's first report that meets one."""
        for name, why in unusable.items():
            report.add_table_unpruned(name, None, why)
            if why.code is Code.CONNECT_CATALOG_LEFT:
                self.runtime.note_once(report, "catalog")

    def _nothing_to_prune(self, names: set[str], tables: dict[str, Optional[Table]],
                          unusable: dict[str, Refusal], report: JobReport,
                          metas: Optional[dict[str, Any]] = None) -> bool:
        """True (noted in the report) when none of the tables a query reads can be pruned:
        none is registered with this session or a partitioned catalog table. The analysis,
        which looks up every relation's columns through Spark, is then skipped."""
        if not names:
            return False
        for key in sorted(norm_name(n) for n in names):
            if key not in tables:
                tables[key] = self.catalog.table(key, unusable, metas)
            if tables[key] is not None:
                return False
        report.analysis_notes.append(
            "no table to prune: none of " + ", ".join(sorted(names)) + " is registered or a "
            "partitioned catalog table (analysis skipped)")
        return True

    def _analyze(self, query: str, tree: Any, started: float,
                 tables: dict[str, Optional[Table]], unusable: dict[str, Refusal],
                 rules: SparkRules, report: JobReport,
                 metas: Optional[dict[str, Any]] = None) -> Optional[PruningPlan]:
        """The pruning plan, or None (reported) when the query cannot be analysed. ``tree``:
        the query as ``planner.parse`` gave it (None: let the analysis say why it is not one);
        ``started``: when the parse began, so the analysis phase counts it."""
        try:
            plan: Optional[PruningPlan] = planner.analyze(
                query, self.catalog.resolver(tables, unusable, metas), rules=rules, tree=tree)
        except Exception as exc:  # the analyzer must never cost the user their query
            log.warning("dpp: analysis failed, running unpruned: %s", exc)
            report.analysis_notes.append(f"analysis failed: {exc}")
            plan = None
        report.phases["analysis"] = time.perf_counter() - started
        if plan is not None and plan.parse_error:
            report.analysis_notes.append(f"unparsable SQL: {plan.parse_error}")
            return None
        if plan is not None:
            report.analysis_notes.extend(plan.notes)
        return plan

    def _substitute(self, decision: PruningDecision, runs: FilterRuns, cfg: DppConfig,
                    rules: SparkRules, report: JobReport, temp_views: list[str]
                    ) -> dict[str, str]:
        """Loads every group at once; each survivor's DataFrame under a view of its own.
        Returns reference id → view name; a group whose load failed stays unpruned."""
        deadline = time.monotonic() + cfg.wait_timeout
        loads = {g.key: runs.submit(self._load_group, g, runs, cfg, rules, deadline, report)
                 for g in decision.groups}
        replacements: dict[str, str] = {}
        enumeration = 0.0
        for g in decision.groups:
            try:
                result, df = loads[g.key].result()
            except LayoutError:
                raise
            except HandoffRefused as exc:
                # the loader's reading of the table is not Spark's now: nothing removed
                for ref in g.refs:
                    report.add_table_unpruned(ref.table, ref.alias, exc.refusal)
                self.catalog.views.ensure([g.refs[0].table])
                continue
            except Exception as exc:
                log.warning("dpp: loading %s failed, not pruned: %s", g.table.name, exc)
                for ref in g.refs:
                    report.add_table_unpruned(ref.table, ref.alias,
                                              Refusal.of(Code.LOADER_FAILED, error=exc))
                self.catalog.views.ensure([g.refs[0].table])
                continue
            # on Spark Connect the server lists the handed paths when the view is made
            view = temp_view(df, g.refs[0].table, temp_views,
                              self.spark if self.runtime.remote else None, len(result.splits))
            self.connect.release_global(df)
            # once per group: its references share one load (a CTE inlined three times in
            # TPC-DS q27 is one enumeration, not three)
            enumeration += max(0.0, result.elapsed_seconds - result.wait_seconds)
            for ref in g.refs:
                replacements[ref.ref_id] = view
                report.add_table_result(ref.table, ref.alias, g.table, result)
        report.phases["split_enumeration"] = enumeration
        if self.runtime.remote and replacements:
            self.runtime.note_once(report, "handoff_calls")
            if any(is_connect_catalog(g.table) for g in decision.groups
                   if g.refs[0].ref_id in replacements):
                self.runtime.note_once(report, "catalog_predicate")
        return replacements

    def _load_group(self, g: LoadGroup, runs: FilterRuns, cfg: DppConfig, rules: SparkRules,
                    deadline: float, report: Optional[JobReport] = None
                    ) -> tuple[LoadResult, DataFrame]:
        dyn = [DynamicFilter(filter_id=spec.filter_id, column=d.probe_column,
                             wait=runs.waiter(spec.filter_id, d.probe_column, deadline))
               for d, spec in g.filters]
        if is_connect_catalog(g.table):
            return self.connect.catalog_load(g.table, g.static, dyn, cfg, rules,
                                             sized=report is not None)
        result = SplitLoader(g.table, g.static, dyn, wait_timeout=cfg.wait_timeout,
                             rules=rules, lister=self.runtime.lister(g.table.location, cfg),
                             **self.runtime.loader_stats(cfg)).load()
        filtered = self.handoff.partition_filtered(
            g.table, () if g.static.is_none() else g.static.columns,
            [d.probe_column for d, _ in g.filters])
        df = self.handoff.dataframe(g.table, result, filtered)
        return result, (self.handoff.row_group_filter(df, result) if cfg.row_group_filter else df)

    def _run_rewritten(self, query: str, plan: PruningPlan, decision: PruningDecision,
                       replacements: dict[str, str], report: JobReport) -> DataFrame:
        rewritten = rewrite(plan, replacements)
        for g in decision.groups:
            for ref in g.refs:
                if ref.ref_id not in replacements:
                    self.catalog.views.ensure([ref.table])
        try:
            df = self.runtime.spark_sql(rewritten)
            if self.runtime.remote:
                # Spark Connect resolves a query only when it runs: resolve it now, so a
                # rewrite Spark rejects still falls back here, not in the user's collect()
                df.schema
            else:
                # Spark prunes a catalog relation's partitions (asking the metastore) while it
                # optimizes, at the first action: optimize now (the action reuses the plan),
                # so a narrowing Spark cannot plan falls back here too
                df._jdf.queryExecution().optimizedPlan()
            return df
        except Exception as exc:
            # the rewrite must never cost the user their query: run the original, unpruned
            log.warning("dpp: the rewritten query failed in Spark, running unpruned: %s",
                        first_line(exc))
            report.analysis_notes.append(f"rewritten query failed in Spark, ran unpruned: "
                                         f"{first_line(exc)}")
            failed = Refusal(Code.REWRITE_FAILED)
            for t in report.tables:
                if t.pruning == "applied":
                    t.pruning, t.reason = "none", failed.words()
                    t.reason_code = failed.code.value
            return self._unpruned(query)

    # ------------------------------------------------------------------ reporting
    def finish(self, df: DataFrame, report: JobReport, cfg: DppConfig, t0: float,
               execute: bool) -> tuple[Union[DataFrame, list[Row]], JobReport]:
        """Ends a job begun at ``t0`` (every front end's, so their reports read alike): runs
        ``df`` when ``execute`` (with Spark's scan metrics), fills the phases left open and
        publishes the report. Returns the rows (or ``df``) and the report."""
        rows = None
        if execute:
            te = time.perf_counter()
            rows = df.collect()
            report.phases["execution"] = time.perf_counter() - te
            if self.runtime.remote:   # the executed plan's metrics are in the server's JVM
                self.runtime.note_once(report, "scan_metrics")
            else:
                m = scan_metrics(df)
                report.spark_scan = {"files_read": m.files_read, "bytes_read": m.bytes_read,
                                     "partitions_read": m.partitions_read}
        report.phases["total"] = time.perf_counter() - t0
        if "split_enumeration" not in report.phases:
            report.phases["split_enumeration"] = sum(
                (t.get("enumeration_seconds") or 0.0) for t in report.tables)
        self.publish(report, cfg)
        return (rows if execute else df), report

    def publish(self, report: JobReport, cfg: DppConfig) -> None:
        """A finished job's report: this session's ``last_report``, the log, and one line of
        ``spark.dpp.report.path`` (both paths, SQL text and the optimizer hook, end here)."""
        self.last_report = report
        # names the user's objects hold
        report.analysis_notes.extend(self.catalog.views.take_notes())
        report.log(log)
        if cfg.report_console:
            _console(self.spark, report.console_line())
        if cfg.report_path:
            try:
                append_jsonl(report, cfg.report_path)
            except OSError as exc:
                log.warning("dpp: could not append the report to %s: %s", cfg.report_path, exc)
