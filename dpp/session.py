"""``DppSession``: the user's entry point, joining analysis, build sides, the filter service and
the split loaders around an ordinary ``spark.sql`` call.

The flow of one query: analyze the SQL into a pruning plan; start every build-side job at
once (one thread each); start every split loader at once, each waiting on the filter service
for its dynamic filters (bounded by ``spark.dpp.waitTimeout``); substitute each pruned table
reference by a DataFrame over its surviving files, under a temporary view name of its own;
run the rewritten query through ``spark.sql`` with the user's settings. Anything that fails
on the pruning path falls back to *no pruning*, reported — never to a failed query or a
different answer.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType as SparkDataType

from collectors import BuildResult, build_filter, dataframe_files, job_group_id
from coordinator import FilterService, fingerprint, make_service
from dpp.config import DppConfig, redact_url
from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import ConfigError, DppError, LayoutError
from dpp.core.outcomes import FilterOutcome, WaitResult
from dpp.core.reconcile import reconcile
from dpp.core.spark_rules import SparkRules
from dpp.planner import DynamicFilterSpec, TableInfo, TableRefPlan, analyze, rewrite
from dpp.report import JobReport, append_jsonl
from dpp.spark_metrics import scan_metrics
from hive_splits import (DynamicFilter, LoadResult, SplitLoader, Table, table_from_catalog,
                         table_from_path, to_dataframe)

log = logging.getLogger(__name__)

_VIEW_PREFIX = "__dpp_"
# Registered before the build job knows its task count, so that no waiter can see the
# filter complete early; the build job sets the exact count (expect_parts) before it runs.
_PENDING_PARTS = 1 << 30
_JOIN_HOWS = {
    "inner": "inner", "cross": None, "left": "left", "leftouter": "left", "left_outer": "left",
    "right": "right", "rightouter": "right", "right_outer": "right", "full": "full",
    "outer": "full", "fullouter": "full", "full_outer": "full", "semi": "left_semi",
    "leftsemi": "left_semi", "left_semi": "left_semi", "anti": "left_anti",
    "leftanti": "left_anti", "left_anti": "left_anti",
}
# how the fact (left) side of dpp.join may be pruned: only where its rows are needed only
# when they match
_PRUNABLE_HOWS = {"inner", "left_semi", "right"}


@dataclass
class _FilterRun:
    """One dynamic filter of one query: its build job and what came of it."""

    filter_id: str
    build_query: Optional[str]
    build_label: str
    probe_type: Optional[DataType]
    started: float = 0.0
    future: Optional[cf.Future] = None
    build_result: Optional[BuildResult] = None
    cache_hit: bool = False
    error: Optional[str] = None
    build_seconds: Optional[float] = None
    wait_result: Optional[WaitResult] = None
    report: dict[str, Any] = field(default_factory=dict)


class DppSession:
    """Dynamic partition pruning around a SparkSession.

    >>> dpp = DppSession(spark)                            # doctest: +SKIP
    >>> dpp.register_table("store_sales", "data/tpcds/store_sales")   # doctest: +SKIP
    >>> dpp.sql("SELECT ... FROM store_sales JOIN date_dim ...")      # doctest: +SKIP
    """

    def __init__(self, spark: SparkSession, config: Optional[DppConfig] = None) -> None:
        self.spark = spark
        self._fixed_config = config
        self._tables: dict[str, Table] = {}         # registered path tables by name
        self._own_views: set[str] = set()           # plain views this session created
        self._lock = threading.RLock()
        self._service: Optional[FilterService] = None
        self._service_spec: Optional[tuple] = None
        self._local = threading.local()
        self.last_report: Optional[JobReport] = None
        self.config  # validate settings now: a bad value is an error at construction

    # ------------------------------------------------------------------ configuration
    @property
    def config(self) -> DppConfig:
        """The effective settings, re-read from the Spark conf so ``spark.conf.set`` applies."""
        if self._fixed_config is not None:
            return self._fixed_config
        return DppConfig.from_spark(self.spark)

    @property
    def app_id(self) -> str:
        return str(self.spark.sparkContext.applicationId)

    def _filter_service(self, cfg: DppConfig) -> FilterService:
        """One service per distinct set of service settings (re-made when they change)."""

        spec = (cfg.coordinator, cfg.max_distinct_values, cfg.bloom_enabled, cfg.bloom_fpp,
                cfg.max_filter_bytes, cfg.filter_ttl)
        with self._lock:
            if self._service is None or self._service_spec != spec:
                if self._service is not None:
                    try:
                        self._service.close()
                    except Exception:  # pragma: no cover
                        log.debug("closing the old filter service failed", exc_info=True)
                self._service = make_service(
                    cfg.coordinator, app_id=self.app_id,
                    max_distinct=cfg.max_distinct_values,
                    bloom_fpp=cfg.bloom_fpp if cfg.bloom_enabled else None,
                    max_bytes=cfg.max_filter_bytes, default_ttl=cfg.filter_ttl)
                self._service_spec = spec
            return self._service

    def close(self) -> None:
        with self._lock:
            if self._service is not None:
                self._service.close()
                self._service = None

    # ------------------------------------------------------------------ tables
    def register_table(self, name: str, path: str, *,
                       partition_types: Optional[dict[str, str]] = None) -> Table:
        """Registers a Hive-partitioned Parquet folder under ``name``.

        Nothing is listed beyond the first partition path and one footer; the Spark view of the
        same name is created only when a query needs the whole table (``spark.sql`` fallback).
        """

        key = _norm_name(name)
        table = table_from_path(path, name=key, partition_types=partition_types,
                                timestamp_type=SparkRules.from_spark(self.spark).timestamp_type)
        with self._lock:
            self._tables[key] = table
            stale = key in self._own_views
            self._own_views.discard(key)
        if stale:  # a view we made over the previous registration must not outlive it
            self.spark.catalog.dropTempView(key)
            with _DPP_VIEWS_LOCK:
                _DPP_VIEWS.discard((id(self.spark), key))
        return table

    def _table(self, name: str) -> Optional[Table]:
        """A registered path table, or a partitioned table of Spark's catalog, or None."""
        key = _norm_name(name)
        with self._lock:
            t = self._tables.get(key)
        if t is not None:
            return t
        if self._is_temp_view(key):
            return None  # the user's own view: never second-guessed
        try:
            if not self.spark.catalog.tableExists(key):
                return None
            cols = self.spark.catalog.listColumns(key)
        except Exception:
            return None
        if not any(c.isPartition for c in cols):
            return None

        try:
            return table_from_catalog(self.spark, key)
        except Exception as exc:
            log.warning("dpp: catalog table %s cannot be used for pruning: %s", key, exc)
            return None

    def _is_temp_view(self, name: str) -> bool:
        if "." in name:
            return False
        try:  # one JVM call: listTables() builds every table's row (0.15 s each at TPC-DS size)
            return bool(self.spark._jsparkSession.sessionState().catalog()
                        .getTempView(name).isDefined())
        except Exception:
            log.debug("getTempView unavailable, listing tables", exc_info=True)
        try:
            return any(t.isTemporary and t.name.lower() == name
                       for t in self.spark.catalog.listTables())
        except Exception:
            return False

    def _resolver(self, cache: dict[str, Optional[Table]]
                  ) -> Callable[[str], Optional[TableInfo]]:
        """Table name → TableInfo: registered and catalog tables that can be pruned (with
        their partition columns), and any other table or view Spark knows (columns only, so
        the analyzer can tell which relation an unqualified column belongs to)."""

        def resolve(name: str) -> Optional[TableInfo]:
            key = _norm_name(name)
            if key not in cache:
                cache[key] = self._table(key)
            t = cache[key]
            if t is not None:
                return TableInfo(name=key, columns=dict(_table_columns(t)),
                                 partition_columns=tuple(c.name for c in t.partition_columns))
            try:
                schema = self.spark.table(key).schema
            except Exception:
                return None
            cols: dict[str, Optional[DataType]] = {}
            for f in schema.fields:
                cols[f.name.lower()] = _spark_type_to_domain(f.dataType)
            return TableInfo(name=key, columns=cols, partition_columns=())

        return resolve

    def _ensure_views(self, names: Iterable[str]) -> None:
        """Creates the plain Spark view of each registered table the query needs unpruned.

        Only when no table or view of that name exists, or the view is one a DppSession made:
        a user's own view is never replaced. A view we made is made afresh once per query (a
        listing of the table's folders, as Spark's own reader would do): a view kept from an
        earlier query would read that query's file list — missing files added since, and
        feeding the filter cache a stale fingerprint — and a view another DppSession made
        over the same name would read that session's registration.
        """
        fresh: Optional[set[str]] = getattr(self._local, "fresh_views", None)
        for n in names:
            key = _norm_name(n)
            with self._lock:
                t = self._tables.get(key)
            if t is None or (fresh is not None and key in fresh):
                continue
            if self.spark.catalog.tableExists(key) and not _made_by_dpp(self.spark, key):
                continue
            full_dataframe(self.spark, t).createOrReplaceTempView(key)
            _mark_made_by_dpp(self.spark, key)
            with self._lock:
                self._own_views.add(key)
            if fresh is not None:
                fresh.add(key)

    # ------------------------------------------------------------------ public API
    def sql(self, query: str) -> DataFrame:
        """A DataFrame with exactly the rows of ``spark.sql(query)``, reading less."""
        df, _ = self._run_sql(query, execute=False)
        return df

    def collect(self, query: str) -> list[Row]:
        """Runs the query and returns its rows; the report then holds execution metrics."""
        rows, _ = self._run_sql(query, execute=True)
        return rows

    def explain(self, query: str) -> str:
        """The pruning plan as text: per table reference, what prunes it, or why nothing does."""

        cfg = self.config
        head = [f"dpp: enabled={cfg.enabled}, coordinator={_redact(cfg.coordinator)}, "
                f"waitTimeout={cfg.wait_timeout:g}s, maxDistinctValues={cfg.max_distinct_values}"]
        if not cfg.enabled:
            head.append("spark.dpp.enabled=false: the query runs as spark.sql(query), unpruned")
        plan = analyze(query, self._resolver({}), rules=SparkRules.from_spark(self.spark))
        return "\n".join(head + [plan.explain()])

    def join(self, fact: str, dim_df: DataFrame, on: Sequence[tuple[str, str]],
             how: str = "inner") -> DataFrame:
        """``fact ⋈ dim_df`` for jobs without SQL; the fact side pruned where that is sound.

        ``on`` pairs a fact column with a dimension column. The result has the columns of both
        sides, as ``fact_df.join(dim_df, cond, how)`` would.
        """
        return self._run_join(fact, dim_df, list(on), how)

    # ------------------------------------------------------------------ SQL path
    def _run_sql(self, query: str, execute: bool) -> tuple[Union[DataFrame, list[Row]], JobReport]:

        cfg = self.config
        report = JobReport.start(query_text=query, kind="sql", settings=cfg.as_settings(),
                                 enabled=cfg.enabled)
        t0 = time.perf_counter()
        temp_views: list[str] = []
        self._local.fresh_views = set()
        try:
            if not cfg.enabled:
                self._ensure_views(_referenced_names(query, self._tables))
                report.analysis_notes.append("spark.dpp.enabled=false: no pruning")
                df = self.spark.sql(query)
            else:
                df = self._plan_and_rewrite(query, cfg, report, temp_views)
            return self._finish(df, report, cfg, t0, execute)
        finally:
            self._local.fresh_views = None
            for v in temp_views:
                try:
                    self.spark.catalog.dropTempView(v)
                except Exception:  # pragma: no cover
                    log.debug("dropping %s failed", v, exc_info=True)

    def _plan_and_rewrite(self, query: str, cfg: DppConfig, report: JobReport,
                          temp_views: list[str]) -> DataFrame:

        ta = time.perf_counter()
        tables_cache: dict[str, Optional[Table]] = {}
        rules = SparkRules.from_spark(self.spark)
        try:
            plan = analyze(query, self._resolver(tables_cache), rules=rules)
        except Exception as exc:  # the analyzer must never cost the user their query
            log.warning("dpp: analysis failed, running unpruned: %s", exc)
            report.analysis_notes.append(f"analysis failed: {exc}")
            plan = None
        report.phases["analysis"] = time.perf_counter() - ta
        if plan is None or plan.parse_error:
            if plan is not None:
                report.analysis_notes.append(f"unparsable SQL: {plan.parse_error}")
            self._ensure_views(_referenced_names(query, self._tables))
            return self.spark.sql(query)
        report.analysis_notes.extend(plan.notes)
        pruned = [r for r in plan.refs if r.pruning]
        for r in plan.refs:
            if not r.pruning:
                report.add_table_unpruned(r.table, r.alias, r.reason or "no usable predicate")
        # every registered table the rewritten query still names needs its plain view
        unpruned_names = {r.table for r in plan.refs if not r.pruning}
        self._ensure_views(unpruned_names | set(_referenced_names(query, self._tables)) -
                           {r.table for r in pruned if r.table not in unpruned_names})
        if not pruned:
            return self.spark.sql(query)

        service = self._filter_service(cfg)
        qid = report.query_id[:8]
        runs: dict[str, _FilterRun] = {}
        ref_filters: dict[str, list[tuple[DynamicFilterSpec, _FilterRun]]] = {}
        for ref in pruned:
            table = tables_cache[_norm_name(ref.table)]
            ref_filters[ref.ref_id] = []
            for spec in ref.dynamic:
                col = _column_type(table, spec.probe_column)
                if not _is_partition_column(table, spec.probe_column) and not cfg.stats_pruning:
                    continue  # a data-column filter only helps statistics pruning
                run = runs.get(spec.build_query)
                if run is None:
                    run = _FilterRun(filter_id=f"{qid}-{spec.filter_id}",
                                     build_query=spec.build_query,
                                     build_label=spec.build_column, probe_type=col)
                    runs[spec.build_query] = run
                ref_filters[ref.ref_id].append((spec, run))
        # A reference left with nothing to prune by (no usable dynamic filter, no static domain
        # on a partition column unless statistics pruning is on) reads the plain view: its own
        # listing and DataFrame would only cost time, and a relation of its own keeps Spark
        # from merging or reusing scans of the table (TPC-DS q9: fifteen scalar subqueries
        # over store_sales, merged into few scans when they read one relation).
        idle = [ref for ref in pruned if not ref_filters[ref.ref_id] and self._static_for(
            ref, tables_cache[_norm_name(ref.table)], cfg).is_all()]
        for ref in idle:
            report.add_table_unpruned(
                ref.table, ref.alias, "no predicate on a partition column to prune by"
                + ("" if cfg.stats_pruning else
                   " (data-column filters need spark.dpp.statsPruning.enabled)"))
        if idle:
            self._ensure_views(sorted({ref.table for ref in idle}))
            pruned = [ref for ref in pruned if ref not in idle]
        if not pruned:
            return self.spark.sql(query)
        # References pruned by the same static domain and the same filters share one listing
        # and one DataFrame, so Spark can still reuse the scan between them.
        groups: dict[str, list[TableRefPlan]] = {}
        for ref in pruned:
            groups.setdefault(self._load_key(ref, tables_cache, ref_filters, cfg), []).append(ref)
        # all build sides at once; each in its own thread (Spark job groups are per thread)
        self._ensure_views(_referenced_names(" ".join(runs), self._tables))
        pool = cf.ThreadPoolExecutor(max_workers=max(1, len(runs) + len(pruned)),
                                     thread_name_prefix="dpp")
        try:
            for run in runs.values():
                run.started = time.perf_counter()
                try:
                    bdf = self.spark.sql(run.build_query)
                    key = bdf.columns[0]
                    self._register(run, bdf, key, service, cfg.filter_ttl)
                except Exception as exc:  # no filter: its waiters see "unavailable"
                    run.error = f"{type(exc).__name__}: {exc}"
                    log.warning("dpp: build side %s cannot start: %s", run.build_label, exc)
                    continue
                run.future = pool.submit(self._build_filter_df, run, bdf, key, cfg, service,
                                         run.build_query)
            loads = {key: pool.submit(self._load_ref, refs[0], tables_cache, ref_filters,
                                      cfg, service, rules) for key, refs in groups.items()}
            replacements: dict[str, str] = {}
            for key, refs in groups.items():
                try:
                    load = loads[key].result()
                except Exception as exc:
                    if isinstance(exc, LayoutError):
                        raise
                    log.warning("dpp: loading %s failed, not pruned: %s", refs[0].table, exc)
                    for ref in refs:
                        report.add_table_unpruned(ref.table, ref.alias,
                                                  f"split loader failed: {exc}")
                    self._ensure_views([refs[0].table])
                    continue
                table, result, df = load
                view = f"{_VIEW_PREFIX}{uuid.uuid4().hex[:12]}_{_safe(refs[0].table)}"
                df.createOrReplaceTempView(view)
                temp_views.append(view)
                for ref in refs:
                    replacements[ref.ref_id] = view
                    report.add_table_result(ref.table, ref.alias, table, result)
            for run in runs.values():
                self._settle_filter(run, service, cfg)
                report.add_filter(run.report)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        report.phases["build"] = max((r.build_seconds or 0.0 for r in runs.values()), default=0.0)
        report.phases["wait"] = max((t.get("wait_seconds") or 0.0 for t in report.tables),
                                    default=0.0)
        rewritten = rewrite(plan, replacements)
        for ref in pruned:
            if ref.ref_id not in replacements:
                self._ensure_views([ref.table])
        try:
            return self.spark.sql(rewritten)
        except Exception as exc:
            # the rewrite must never cost the user their query: run the original, unpruned
            log.warning("dpp: the rewritten query failed in Spark, running unpruned: %s",
                        _first_line(exc))
            report.analysis_notes.append(f"rewritten query failed in Spark, ran unpruned: "
                                         f"{_first_line(exc)}")
            for t in report.tables:
                if t.pruning == "applied":
                    t.pruning, t.reason = "none", "rewritten query failed in Spark"
            self._ensure_views(_referenced_names(query, self._tables))
            return self.spark.sql(query)

    # ------------------------------------------------------------------ build sides
    def _register(self, run: _FilterRun, df: DataFrame, key: str, service: FilterService,
                  ttl: float) -> None:
        """Registers the filter before any waiter can ask for it (pending until the build
        job announces its exact part count)."""
        key_type = _spark_type_to_domain(df.schema[key].dataType)
        if key_type is None:
            raise DppError(f"build key {run.build_label} has type "
                           f"{df.schema[key].dataType.simpleString()}, not supported")
        service.register(run.filter_id, _PENDING_PARTS, {key: key_type}, ttl)

    def _build_filter_df(self, run: _FilterRun, df: DataFrame, key: str, cfg: DppConfig,
                         service: FilterService, fingerprint_text: Optional[str]) -> None:
        """Runs one build side into the filter service; failures are recorded, never raised."""

        t0 = time.perf_counter()
        key_type = _spark_type_to_domain(df.schema[key].dataType)
        try:
            fp = None
            if cfg.filter_cache and fingerprint_text is not None:
                fp = fingerprint(fingerprint_text, [key], dataframe_files(df))
                cached = service.cache_get(fp)
                if cached is not None:
                    run.cache_hit = True
                    service.register(run.filter_id, 1, {key: key_type}, cfg.filter_ttl)
                    service.publish(run.filter_id, 0, cached)
                    run.build_seconds = time.perf_counter() - t0
                    return
            result = build_filter(
                df, [key], filter_id=run.filter_id, max_distinct=cfg.max_distinct_values,
                bloom_enabled=cfg.bloom_enabled, bloom_fpp=cfg.bloom_fpp,
                bloom_capacity=None, sink=service)
            run.build_result = result
            run.build_seconds = time.perf_counter() - t0
            if fp is not None:
                waited = service.wait(run.filter_id, 0.0)
                if waited.ok and waited.domain is not None:
                    service.cache_put(fp, waited.domain, cfg.filter_ttl)
        except Exception as exc:  # a failed build side means no pruning, reported
            run.error = f"{type(exc).__name__}: {exc}"
            run.build_seconds = time.perf_counter() - t0
            log.warning("dpp: build side %s failed, no pruning by it: %s", run.build_label, exc)
            try:
                service.fail(run.filter_id, run.error)
            except Exception:  # pragma: no cover
                log.debug("marking %s failed", run.filter_id, exc_info=True)

    def _waiter(self, run: _FilterRun, column: str, service: FilterService, deadline: float,
                rules: SparkRules) -> Callable[[float], WaitResult]:
        """The split loader's view of one filter: wait, then reconcile the build side's domain
        to the probe column's type, keyed by that column."""
        complete = FilterOutcome.COMPLETE

        def wait(timeout: float) -> WaitResult:
            res = service.wait(run.filter_id, max(0.0, min(timeout, deadline - time.monotonic())))
            run.wait_result = res
            if not res.ok or res.domain is None:
                return WaitResult(None, res.outcome, res.reason or run.error)
            td: TupleDomain = res.domain
            if td.is_none():
                return WaitResult(td, complete)
            cols = td.columns
            if not cols:
                return WaitResult(None, complete, "the build side constrains nothing")
            d = td.get(cols[0])
            assert d is not None
            if run.probe_type is None:
                return WaitResult(None, FilterOutcome.TYPE_MISMATCH, "probe column type unknown")
            # equi-joins never match NULL keys: the NULL partition is never needed by them
            d = Domain(d.type, d.value_set, False)
            conv, why = reconcile(d, run.probe_type, rules)
            if conv is None:
                return WaitResult(None, FilterOutcome.TYPE_MISMATCH, why)
            return WaitResult(TupleDomain.of({column: conv}), complete)

        return wait

    def _load_ref(self, ref: TableRefPlan, tables_cache: dict[str, Optional[Table]],
                  ref_filters: dict[str, list[tuple[DynamicFilterSpec, _FilterRun]]],
                  cfg: DppConfig, service: FilterService, rules: SparkRules
                  ) -> tuple[Table, LoadResult, DataFrame]:

        table = tables_cache[_norm_name(ref.table)]
        deadline = time.monotonic() + cfg.wait_timeout
        dyn = [DynamicFilter(filter_id=run.filter_id, column=spec.probe_column,
                             wait=self._waiter(run, spec.probe_column, service, deadline, rules))
               for spec, run in ref_filters[ref.ref_id]]
        static = self._static_for(ref, table, cfg)
        loader = SplitLoader(table, static, dyn, wait_timeout=cfg.wait_timeout,
                             stats_pruning=cfg.stats_pruning, rules=rules)
        result = loader.load()
        return table, result, to_dataframe(self.spark, table, result)

    @staticmethod
    def _static_for(ref: TableRefPlan, table: Table, cfg: DppConfig) -> TupleDomain:
        """The static domain the split loader applies: data columns only with statistics."""
        return ref.static if cfg.stats_pruning else _partition_only(ref.static, table)

    def _load_key(self, ref: TableRefPlan, tables_cache: dict[str, Optional[Table]],
                  ref_filters: dict[str, list[tuple[DynamicFilterSpec, _FilterRun]]],
                  cfg: DppConfig) -> str:
        """References with equal keys read exactly the same splits."""
        static = self._static_for(ref, tables_cache[_norm_name(ref.table)], cfg)
        filters = sorted((spec.probe_column.lower(), run.filter_id)
                         for spec, run in ref_filters[ref.ref_id])
        return json.dumps([_norm_name(ref.table), static.to_data(), filters], sort_keys=True,
                          default=str)

    def _settle_filter(self, run: _FilterRun, service: FilterService, cfg: DppConfig) -> None:
        """Fills the filter's report; stops a build side nobody waits for any more."""
        res = run.wait_result
        if res is None:
            res = service.wait(run.filter_id, 0.0)
            run.wait_result = res
        if run.future is not None and not run.future.done():
            try:

                self.spark.sparkContext.cancelJobGroup(job_group_id(run.filter_id))
            except Exception:  # pragma: no cover
                log.debug("cancel %s", run.filter_id, exc_info=True)
        td = res.domain if res.ok else None
        dom = None
        if td is not None and not td.is_none() and td.columns:
            dom = td.get(td.columns[0])
        br = run.build_result
        outcome = res.outcome
        if run.error and outcome in (FilterOutcome.TIMEOUT, FilterOutcome.FAILED):
            outcome = FilterOutcome.FAILED
        run.report.update(
            filter_id=run.filter_id, build_column=run.build_label, build_query=run.build_query,
            build_rows=br.rows if br is not None else None,
            distinct_values=dom.value_count() if dom is not None else
            (0 if td is not None and td.is_none() else None),
            kind=(dom.kind if dom is not None else ("none" if td is not None else "unknown")),
            encoded_bytes=res.encoded_bytes,
            parts_expected=res.parts_expected,
            parts_reported=res.parts_reported,
            cache_hit=run.cache_hit, outcome=str(outcome),
            reason=res.reason or run.error, build_seconds=run.build_seconds,
            wait_seconds=res.seconds)

    # ------------------------------------------------------------------ DataFrame path
    def _run_join(self, fact: str, dim_df: DataFrame, on: list[tuple[str, str]],
                  how: str) -> DataFrame:

        cfg = self.config
        rules = SparkRules.from_spark(self.spark)
        norm_how = _JOIN_HOWS.get(how.lower().replace(" ", ""))
        if norm_how is None or not on:
            raise ConfigError(f"dpp.join how={how!r} on={on!r}: expected an equi-join "
                              f"(inner, left, right, full, semi, anti) with at least one "
                              f"(fact_column, dim_column) pair")
        text = f"JOIN {fact} ON {on} HOW {norm_how}"
        report = JobReport.start(query_text=text, kind="join", settings=cfg.as_settings(),
                                 enabled=cfg.enabled)
        t0 = time.perf_counter()
        table = self._table(fact)
        if table is None:
            raise LayoutError(f"dpp.join: unknown table {fact!r}; register it with "
                              f"register_table(name, path) or create it in Spark's catalog")
        for fcol, dcol in on:
            if fcol not in dict(_table_columns(table)):
                raise ConfigError(f"dpp.join: table {fact!r} has no column {fcol!r}")
            if dcol not in dim_df.columns:
                raise ConfigError(f"dpp.join: the dimension DataFrame has no column {dcol!r}")

        def plain() -> DataFrame:
            return full_dataframe(self.spark, table)

        prunable = cfg.enabled and norm_how in _PRUNABLE_HOWS
        if not prunable:
            why = ("spark.dpp.enabled=false" if not cfg.enabled else
                   f"{norm_how} join: the fact side is preserved or anti-joined")
            report.add_table_unpruned(fact, None, why)
            fact_df = plain()
        else:
            service = self._filter_service(cfg)
            qid = report.query_id[:8]
            runs = []
            pool = cf.ThreadPoolExecutor(max_workers=len(on) + 1, thread_name_prefix="dpp")
            try:
                dyn = []
                deadline = time.monotonic() + cfg.wait_timeout
                for i, (fcol, dcol) in enumerate(on):
                    if not _is_partition_column(table, fcol) and not cfg.stats_pruning:
                        continue
                    run = _FilterRun(filter_id=f"{qid}-j{i + 1}", build_query=None,
                                     build_label=f"dataframe.{dcol}",
                                     probe_type=_column_type(table, fcol))
                    run.started = time.perf_counter()
                    bdf = dim_df.select(F.col(dcol))
                    try:
                        self._register(run, bdf, dcol, service, cfg.filter_ttl)
                    except Exception as exc:
                        run.error = f"{type(exc).__name__}: {exc}"
                        log.warning("dpp: build side %s cannot start: %s", run.build_label, exc)
                    else:
                        run.future = pool.submit(self._build_filter_df, run, bdf, dcol, cfg,
                                                 service, None)
                    runs.append(run)
                    dyn.append(self._dynamic(run, fcol, cfg, service, deadline, rules))

                result = SplitLoader(table, TupleDomain.all(), dyn, wait_timeout=cfg.wait_timeout,
                                     stats_pruning=cfg.stats_pruning, rules=rules).load()
                fact_df = to_dataframe(self.spark, table, result)
                report.add_table_result(fact, None, table, result)
                for run in runs:
                    self._settle_filter(run, service, cfg)
                    report.add_filter(run.report)
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
            report.phases["build"] = max((r.build_seconds or 0.0 for r in runs), default=0.0)
        cond = None
        for fcol, dcol in on:
            c = fact_df[fcol] == dim_df[dcol]
            cond = c if cond is None else cond & c
        df = fact_df.join(dim_df, cond, norm_how)
        out, _ = self._finish(df, report, cfg, t0, execute=False)
        return out

    def _dynamic(self, run: _FilterRun, column: str, cfg: DppConfig, service: FilterService,
                 deadline: float, rules: SparkRules) -> DynamicFilter:

        return DynamicFilter(filter_id=run.filter_id, column=column,
                             wait=self._waiter(run, column, service, deadline, rules))

    # ------------------------------------------------------------------ reporting
    def _finish(self, df: DataFrame, report: JobReport, cfg: DppConfig, t0: float,
                execute: bool) -> tuple[Union[DataFrame, list[Row]], JobReport]:
        rows = None
        if execute:
            te = time.perf_counter()
            rows = df.collect()
            report.phases["execution"] = time.perf_counter() - te

            m = scan_metrics(df)
            report.spark_scan = {"files_read": m.files_read, "bytes_read": m.bytes_read,
                                 "partitions_read": m.partitions_read}
        report.phases["total"] = time.perf_counter() - t0
        if "split_enumeration" not in report.phases:
            report.phases["split_enumeration"] = sum(
                (t.get("enumeration_seconds") or 0.0) for t in report.tables)
        self.last_report = report
        report.log(log)
        if cfg.report_path:

            try:
                append_jsonl(report, cfg.report_path)
            except OSError as exc:
                log.warning("dpp: could not append the report to %s: %s", cfg.report_path, exc)
        return (rows if execute else df), report


# ---------------------------------------------------------------------- helpers

# plain views of registered tables made by any DppSession, per SparkSession: such a view is
# ours to replace (a user's view of the same name is not)
_DPP_VIEWS: set[tuple[int, str]] = set()
_DPP_VIEWS_LOCK = threading.Lock()


def _made_by_dpp(spark: SparkSession, name: str) -> bool:
    with _DPP_VIEWS_LOCK:
        return (id(spark), name) in _DPP_VIEWS


def _mark_made_by_dpp(spark: SparkSession, name: str) -> None:
    with _DPP_VIEWS_LOCK:
        _DPP_VIEWS.add((id(spark), name))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _norm_name(name: str) -> str:
    return name.strip().strip("`").lower()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:40]


def _redact(url: str) -> str:

    return redact_url(url)


def _table_columns(table: Table) -> list[tuple[str, Optional[DataType]]]:
    """(name, type) of every column of a hive_splits Table, partition columns included."""
    out: list[tuple[str, Optional[DataType]]] = []
    parts = {c.name: c.type for c in table.partition_columns}
    for name, typ in table.all_columns():
        if name in parts:
            out.append((name.lower(), parts[name]))
            continue
        try:
            out.append((name.lower(), DataType.from_catalog(str(typ))))
        except DppError:  # nested or exotic types: usable in the query, not for pruning
            out.append((name.lower(), None))
    return out


def full_dataframe(spark: SparkSession, table: Table) -> DataFrame:
    """The whole table through the split loader (no domains): Spark's reader, all files."""

    return to_dataframe(spark, table,
                        SplitLoader(table, rules=SparkRules.from_spark(spark)).load())


def _column_type(table: Table, column: str) -> Optional[DataType]:
    return dict(_table_columns(table)).get(column.lower())


def _is_partition_column(table: Table, column: str) -> bool:
    return column.lower() in {c.name.lower() for c in table.partition_columns}


def _partition_only(td: TupleDomain, table: Table) -> TupleDomain:
    if td.is_none():
        return td
    parts = {c.name.lower() for c in table.partition_columns}
    doms = td.domains or {}
    return TupleDomain.of({k: v for k, v in doms.items() if k.lower() in parts})


def _referenced_names(query: str, registered: dict[str, Table]) -> list[str]:
    """Registered table names the query text mentions (a cheap, conservative scan)."""
    low = query.lower()
    return [n for n in registered if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", low)]


def _spark_type_to_domain(dt: SparkDataType) -> Optional[DataType]:
    try:
        return DataType.from_spark(dt)
    except DppError:
        return None
