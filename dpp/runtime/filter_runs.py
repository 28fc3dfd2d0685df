"""The dynamic filters of one query: their build jobs, their waiters, and what came of them.

Shared by the SQL path and ``dpp.join``. Every build side starts at once, each in a thread of
its own (Spark job groups are per thread), and returns an immutable :class:`BuildOutcome`; the
only state written from other threads is the last wait result, under a lock. ``settle`` turns
each filter into its report entry and stops build jobs nobody waits for any more. Nothing here
raises for a build side or a filter service that fails: that is "no pruning", reported.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from pyspark.sql import DataFrame, SparkSession

from collectors import BuildResult, build_filter, dataframe_files, job_group_id
from collectors.native import KEY_ARROW_TYPES, build_filter_native, publish_keys
from coordinator import FilterService, fingerprint
from dpp.runtime.cache_proof import relations_signature, settings_signature
from dpp.runtime.config import DppConfig
from dpp.core.domain import DataType, Domain, TupleDomain
from dpp.core.errors import DppError
from dpp.core.outcomes import FilterOutcome, WaitResult
from dpp.core.reconcile import reconcile
from dpp.core.remote import is_remote
from dpp.core.spark_rules import SparkRules
from hive_splits.loader import OPEN_WAIT_S

__all__ = ["INTERNAL", "mark_internal", "FilterSpec", "BuildOutcome", "FilterRuns",
           "EnvironmentNotes", "FilterMemory",
           "environment_problem"]

log = logging.getLogger(__name__)

#: Spark local property on threads that run dpp's own queries (read by the optimizer hook's rule)
INTERNAL = "spark.dpp.internal"


def mark_internal(spark: Any) -> None:
    """Marks the calling thread's Spark jobs and optimizer runs as dpp's own (a no-op where the
    session has no SparkContext in Python: Spark Connect, where there is no hook either)."""
    try:
        spark.sparkContext.setLocalProperty(INTERNAL, "true")
    except Exception:
        log.debug("cannot mark a dpp thread as internal", exc_info=True)


# Registered before the build job knows its task count, so that no waiter can see the
# filter complete early; the build job sets the exact count (expect_parts) before it runs.
_PENDING_PARTS = 1 << 30


@dataclass(frozen=True)
class FilterSpec:
    """One dynamic filter to build: ``build_query`` (SQL path) also fingerprints it for the
    filter cache; ``probe_type`` is the type of the column it prunes (None: unknown)."""

    filter_id: str
    build_label: str
    probe_type: Optional[DataType]
    build_query: Optional[str] = None
    probe_label: str = ""           # the table (or tables) it prunes, for Spark's UI
    # no text, but a build side made of Spark's own plan (the optimizer hook's) reading files
    # only: fingerprinted by that plan made canonical, for the filter cache
    cache_plan: bool = False

    @property
    def description(self) -> str:
        """What Spark's UI and event log show for the build job."""
        target = f" for {self.probe_label}" if self.probe_label else ""
        return f"dpp build: {self.build_label}{target}"


@dataclass(frozen=True)
class BuildOutcome:
    """What one build job came to."""

    result: Optional[BuildResult] = None
    cache_hit: bool = False
    error: Optional[str] = None
    seconds: Optional[float] = None
    spark_keys: bool = False        # the keys of Spark's own dynamic pruning, no job of dpp's


# Failures that say the executors' Python cannot run the Arrow collector (not a Spark error in
# the build query itself): a missing module, no interpreter, a worker that cannot start.
_ENVIRONMENT_SIGNS = ("No module named", "ModuleNotFoundError", "Cannot run program",
                      "Python worker exited unexpectedly", "Python in worker has different version",
                      "PYTHON_VERSION_MISMATCH", "ImportError")


def environment_problem(error: str) -> Optional[str]:
    """The environment note for an Arrow build failure (``error``: the whole text, causes
    included), or None if it is not one."""
    lines = [ln.strip() for ln in error.splitlines()
             if any(sign in ln for sign in _ENVIRONMENT_SIGNS)]
    if not lines:
        return None
    first = lines[-1][:300]  # the innermost cause: "ModuleNotFoundError: No module named ..."
    return ("the Arrow build side cannot run in the executors' Python "
            f"({first}); set spark.dpp.collector=native (or auto), which needs nothing on "
            "executors, or point spark.pyspark.python (PYSPARK_PYTHON) at a Python that has "
            "dpp-spark and pyarrow installed")


class EnvironmentNotes:
    """Environment problems seen by a session's build sides, each said once per session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[str] = []

    def add(self, note: str) -> bool:
        """Records ``note``; True the first time (the caller reports and logs it then)."""
        with self._lock:
            if note in self._seen:
                return False
            self._seen.append(note)
            return True

    def all(self) -> list[str]:
        with self._lock:
            return list(self._seen)


class FilterMemory:
    """Whether a build side pruned anything the last time it ran, by its fingerprint (its
    query, the session's rules and its files' sizes and mtimes) and the table it pruned.

    A build side that pruned nothing last time, over the very same dimension files, is not
    built again: its job and the loader's wait cost time and cannot pay (Trino drops runtime
    filters that pass more than 70% of rows for the same reason; here the bar is stricter,
    "pruned nothing", because a skipped partition saves its listing and its whole read). The
    fact table may have gained partitions since, so this only ever costs pruning, never rows.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._lock = threading.Lock()
        self._pruned: dict[tuple[str, str], bool] = {}
        self._capacity = capacity

    def pruned_nothing(self, fp: str, probe: str) -> bool:
        with self._lock:
            return self._pruned.get((fp, probe)) is False

    def record(self, fp: str, probe: str, pruned: bool) -> None:
        with self._lock:
            if len(self._pruned) >= self._capacity:
                self._pruned.pop(next(iter(self._pruned)))
            self._pruned[(fp, probe)] = pruned

    def clear(self) -> None:
        with self._lock:
            self._pruned.clear()


class _Run:
    def __init__(self, spec: FilterSpec) -> None:
        self.spec = spec
        self.start_error: Optional[str] = None      # set before any waiter exists
        self.skip_reason: Optional[str] = None      # set before the service is told
        self.fingerprint: Optional[str] = None
        self.future: Optional[cf.Future[BuildOutcome]] = None
        # a build kept for Spark's keys or a late start: (frame, key, key type, Spark type)
        self.deferred: Optional[tuple[Any, str, DataType, str]] = None
        self.was_deferred = False   # left to Spark's keys at planning (reported)
        # set when a deferred build is answered, started or given up (its scan listed, or the
        # query ended without listing it): its waiters' time counts from then
        self.released = threading.Event()
        self.released_at: Optional[float] = None
        self._lock = threading.Lock()
        self._wait_result: Optional[WaitResult] = None

    def release(self) -> None:
        if self.released_at is None:
            self.released_at = time.monotonic()
        self.released.set()

    def record_wait(self, res: WaitResult) -> None:
        with self._lock:
            self._wait_result = res

    def last_wait(self) -> Optional[WaitResult]:
        with self._lock:
            return self._wait_result

    def outcome(self) -> Optional[BuildOutcome]:
        if self.start_error is not None:
            return BuildOutcome(error=self.start_error)
        if self.future is not None and self.future.done() and not self.future.cancelled():
            return self.future.result()
        return None


class FilterRuns:
    """Owns the thread pool of one query: build jobs, and the loads that wait on them."""

    def __init__(self, spark: SparkSession, service: FilterService, cfg: DppConfig,
                 rules: SparkRules, max_workers: int,
                 env_notes: Optional[EnvironmentNotes] = None,
                 memory: Optional[FilterMemory] = None,
                 thread_setup: Optional[Callable[[], None]] = None) -> None:
        """``thread_setup`` runs once in each pool thread; by default it marks the thread as
        dpp's own (:data:`INTERNAL`), so the optimizer hook's rule leaves build queries (and
        anything else dpp runs there) alone, whichever path started them."""
        self.spark = spark
        self.service = service
        self.cfg = cfg
        self.rules = rules
        self.env_notes = env_notes if env_notes is not None else EnvironmentNotes()
        self.new_env_notes: list[str] = []   # said for the first time by this query
        self.memory = memory if memory is not None else FilterMemory()
        self._pool = cf.ThreadPoolExecutor(max_workers=max(1, max_workers),
                                           thread_name_prefix="dpp",
                                           initializer=thread_setup or (lambda: mark_internal(spark)))
        self._runs: dict[str, _Run] = {}
        self._deferral = threading.Lock()   # a deferred build is answered or started once

    def __enter__(self) -> "FilterRuns":
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ builds
    def start(self, spec: FilterSpec, make_df: Callable[[], DataFrame],
              key: Optional[str] = None) -> None:
        """Registers the filter, then runs its build side in the pool. ``key`` is the build
        key column (the DataFrame's first column when not given)."""
        self._register(spec, make_df, key, defer=False)

    def defer(self, spec: FilterSpec, make_df: Callable[[], DataFrame],
              key: Optional[str] = None) -> None:
        """Registers the filter as :meth:`start` does but keeps its build for later: the keys
        Spark's own dynamic pruning resolves for the scan may answer it
        (:meth:`publish_spark_keys`), else :meth:`start_deferred` runs it. A key not of an
        integer type (Spark's keys come as numbers) starts now."""
        self._register(spec, make_df, key, defer=True)

    def _register(self, spec: FilterSpec, make_df: Callable[[], DataFrame],
                  key: Optional[str], defer: bool) -> None:
        run = _Run(spec)
        self._runs[spec.filter_id] = run
        try:
            df = make_df()
            col = key or df.columns[0]
            key_type = _key_type(spec, df, col)
            spark_type = df.schema[col].dataType.simpleString() if defer else ""
            self.service.register(spec.filter_id, _PENDING_PARTS, {col: key_type},
                                  self.cfg.filter_ttl)
        except Exception as exc:  # no filter: its waiters see "unavailable"
            run.start_error = f"{type(exc).__name__}: {exc}"
            log.warning("dpp: build side %s cannot start: %s", spec.build_label, exc)
            return
        if spark_type in KEY_ARROW_TYPES:
            run.deferred = (df, col, key_type, spark_type)
            run.was_deferred = True
        else:
            run.future = self._pool.submit(self._build, run, df, col, key_type)

    def start_computed(self, spec: FilterSpec, key: str, key_type: DataType,
                       compute: Callable[[], tuple[Optional[Domain], str]]) -> None:
        """Registers the filter and computes its domain in the pool without a Spark job:
        ``compute()`` returns the build key's domain (None: no filter, and why). A bound
        read from file statistics is such a build (``hive_splits.column_bounds``)."""
        run = _Run(spec)
        self._runs[spec.filter_id] = run
        try:
            self.service.register(spec.filter_id, 1, {key: key_type}, self.cfg.filter_ttl)
        except Exception as exc:  # no filter: its waiters see "unavailable"
            run.start_error = f"{type(exc).__name__}: {exc}"
            return

        def work() -> BuildOutcome:
            t0 = time.perf_counter()
            try:
                domain, why = compute()
                if domain is None:
                    self.service.fail(spec.filter_id, why)
                    return BuildOutcome(error=why, seconds=time.perf_counter() - t0)
                td = TupleDomain.none() if domain.is_none() else TupleDomain.of({key: domain})
                self.service.publish(spec.filter_id, 0, td)
                return BuildOutcome(seconds=time.perf_counter() - t0)
            except Exception as exc:  # no pruning by it, reported
                error = f"{type(exc).__name__}: {exc}"
                log.warning("dpp: %s failed, no pruning by it: %s", spec.build_label, exc)
                self.service.fail(spec.filter_id, error)
                return BuildOutcome(error=error, seconds=time.perf_counter() - t0)

        run.future = self._pool.submit(work)

    def start_deferred(self, filter_id: str) -> None:
        """Runs a deferred build now (no keys of Spark's answered it)."""
        run = self._runs.get(filter_id)
        with self._deferral:
            if run is None or run.deferred is None:
                return
            df, col, key_type, _t = run.deferred
            run.deferred = None
        run.future = self._pool.submit(self._build, run, df, col, key_type)
        run.release()

    def publish_spark_keys(self, filter_id: str, spark_type: str, values: list[int]) -> bool:
        """Answers a deferred build with the keys Spark's dynamic pruning resolved for its
        scan, when they are of the build key's own type; False (nothing done) otherwise."""
        run = self._runs.get(filter_id)
        with self._deferral:
            if run is None or run.deferred is None or run.deferred[3] != spark_type:
                return False
            _df, col, _kt, _t = run.deferred
            run.deferred = None
        t0 = time.perf_counter()
        try:
            cfg = self.cfg
            result = publish_keys(values, col, spark_type, filter_id=run.spec.filter_id,
                                  max_distinct=cfg.max_distinct_values,
                                  bloom_enabled=cfg.bloom_enabled, bloom_fpp=cfg.bloom_fpp,
                                  bloom_capacity=None, sink=self.service)
            outcome = BuildOutcome(result=result, seconds=time.perf_counter() - t0,
                                   spark_keys=True)
        except Exception as exc:  # the filter fails: no pruning by it, reported
            error = f"{type(exc).__name__}: {exc}"
            log.warning("dpp: Spark's keys for %s not published: %s", run.spec.build_label,
                        exc)
            self.service.fail(run.spec.filter_id, error)
            outcome = BuildOutcome(error=error, seconds=time.perf_counter() - t0)
        done: cf.Future[BuildOutcome] = cf.Future()
        done.set_result(outcome)
        run.future = done
        run.release()
        return True

    def build_future(self, filter_id: str) -> "Optional[cf.Future[BuildOutcome]]":
        """The running build of ``filter_id`` (None: never started, or it could not start)."""
        run = self._runs.get(filter_id)
        return run.future if run is not None else None

    def submit(self, fn: Callable[..., Any], *args: Any) -> "cf.Future[Any]":
        """Runs ``fn`` in the same pool (split loads wait there while builds run)."""
        return self._pool.submit(fn, *args)

    def _build(self, run: _Run, df: DataFrame, key: str, key_type: DataType) -> BuildOutcome:
        spec = run.spec
        cfg, service = self.cfg, self.service
        t0 = time.perf_counter()
        try:
            fp = None
            ident = _identity(spec, df) if cfg.filter_cache else None
            files = dataframe_files(df) if ident is not None else []
            # a build side that reads no files (local rows, a redefined view over them)
            # cannot be fingerprinted by its files: never cached; nor one whose relations
            # (schemas, reader options) or session settings cannot be read: no proof
            proof = _proof(df) if ident is not None and files else None
            if proof is not None:
                # the session's settings change its rows (hour(t) in the session zone, a
                # cast under ANSI, a rebased date): part of the key, with its relations
                settings, relations = proof
                fp = fingerprint(f"{ident}\n-- {self.rules.signature()}", [key], files,
                                 settings=settings, relations=relations)
                run.fingerprint = fp
                cached = service.cache_get(fp)
                if cached is None and self.memory.pruned_nothing(fp, spec.probe_label):
                    run.skip_reason = ("skipped: the last run of this build side over the same "
                                       "dimension files pruned nothing")
                    service.fail(spec.filter_id, run.skip_reason)
                    return BuildOutcome(seconds=time.perf_counter() - t0)
                if cached is not None:
                    service.register(spec.filter_id, 1, {key: key_type}, cfg.filter_ttl)
                    service.publish(spec.filter_id, 0, cached)
                    return BuildOutcome(cache_hit=True, seconds=time.perf_counter() - t0)
            result = self._run_collector(spec, df, key)
            seconds = time.perf_counter() - t0
            if fp is not None:
                waited = service.wait(spec.filter_id, 0.0)
                if waited.ok and waited.domain is not None:
                    service.cache_put(fp, waited.domain, cfg.filter_ttl)
            return BuildOutcome(result=result, seconds=seconds)
        except Exception as exc:  # a failed build side means no pruning, reported
            error = f"{type(exc).__name__}: {exc}"
            note = (environment_problem(_whole_text(exc)) if self.collector == "arrow"
                    else None)
            if note is not None:
                if self.env_notes.add(note):
                    self.new_env_notes.append(note)
                    log.warning("dpp: %s", note)
                    error = f"environment: {note}"
                else:  # said in full once per session (the report's ``environment``)
                    error = ("environment: the executors' Python cannot run the Arrow "
                             "collector, as reported earlier in this session; set "
                             "spark.dpp.collector=native")
            log.warning("dpp: build side %s failed, no pruning by it: %s", spec.build_label, exc)
            try:
                service.fail(spec.filter_id, error)
            except Exception:  # pragma: no cover
                log.debug("marking %s failed", spec.filter_id, exc_info=True)
            return BuildOutcome(error=error, seconds=time.perf_counter() - t0)

    @property
    def collector(self) -> str:
        """The collector build sides use: ``auto`` is ``native`` (see ``coordinator.bench``:
        Spark's own DISTINCT costs no more than the Arrow tasks warm, far less on a
        process's first query, and needs nothing on executors)."""
        if self.cfg.collector == "arrow" and is_remote(self.spark):
            return "native"   # no RDD API on Spark Connect; noted by the session
        return "arrow" if self.cfg.collector == "arrow" else "native"

    def _run_collector(self, spec: FilterSpec, df: DataFrame, key: str) -> BuildResult:
        cfg = self.cfg
        if self.collector == "native":
            return build_filter_native(
                df, key, filter_id=spec.filter_id, max_distinct=cfg.max_distinct_values,
                bloom_enabled=cfg.bloom_enabled, bloom_fpp=cfg.bloom_fpp, bloom_capacity=None,
                sink=self.service, description=spec.description)
        return build_filter(
            df, [key], filter_id=spec.filter_id, max_distinct=cfg.max_distinct_values,
            bloom_enabled=cfg.bloom_enabled, bloom_fpp=cfg.bloom_fpp,
            bloom_capacity=None, sink=self.service, description=spec.description)

    # ------------------------------------------------------------------ waiting
    def waiter(self, filter_id: str, column: str, deadline: float, compare: str = "="
               ) -> Callable[[float], WaitResult]:
        """The split loader's view of one filter: wait (never past ``deadline``), then bring
        the build side's domain into the probe column's type, keyed by ``column``. With
        ``compare`` (``<``, ``<=``, ``>``, ``>=``: the join compares the column so with the
        build key) the domain is first the values that comparison admits
        (:meth:`~dpp.core.domain.Domain.compared`)."""
        run = self._runs[filter_id]
        complete = FilterOutcome.COMPLETE

        def wait(timeout: float) -> WaitResult:
            if run.was_deferred:
                # the keys, or the build left to them, come when the scan is listed, however
                # long after planning: the wait for the domain counts from then
                run.released.wait(OPEN_WAIT_S)
                limit = (run.released_at or time.monotonic()) + self.cfg.wait_timeout
            else:
                limit = min(time.monotonic() + timeout, deadline)
            res = self.service.wait(filter_id, max(0.0, limit - time.monotonic()))
            if run.skip_reason is not None:
                res = WaitResult(None, FilterOutcome.SKIPPED, run.skip_reason)
            run.record_wait(res)
            if not res.ok or res.domain is None:
                return WaitResult(None, res.outcome, res.reason or run.start_error)
            td: TupleDomain = res.domain
            if td.is_none():
                return WaitResult(td, complete)
            cols = td.columns
            if not cols:
                return WaitResult(None, complete, "the build side constrains nothing")
            d = td.get(cols[0])
            assert d is not None
            if run.spec.probe_type is None:
                return WaitResult(None, FilterOutcome.TYPE_MISMATCH, "probe column type unknown")
            # equi-joins never match NULL keys: the NULL partition is never needed by them
            d = Domain(d.type, d.value_set, False)
            if compare != "=":
                d = d.compared(compare)
            conv, why = reconcile(d, run.spec.probe_type, self.rules)
            if conv is None:
                return WaitResult(None, FilterOutcome.TYPE_MISMATCH, why)
            return WaitResult(TupleDomain.of({column: conv}), complete)

        return wait

    # ------------------------------------------------------------------ settling
    def settle_into(self, report: Any) -> None:
        """Ends the run in ``report`` (every front end's, so their reports read alike): what
        each build side pruned is remembered, each filter's entry added, the build phase and
        the environment notes said for the first time filled in."""
        self.learn(report.tables)
        for entry in self.settle():
            report.add_filter(entry)
        report.phases["build"] = self.build_seconds()
        report.environment.extend(self.new_env_notes)

    def settle(self) -> list[dict[str, Any]]:
        """Each filter's report entry, in start order; stops build jobs still running."""
        return [self._settle(run) for run in self._runs.values()]

    def learn(self, tables: list[Any]) -> None:
        """Remembers, per build side, whether it pruned anything on its tables (report
        entries); only where a table had that one filter, so the credit is certain."""
        by_id = {run.spec.filter_id: run for run in self._runs.values()}
        for t in tables:
            filters = t.get("filters") or []
            if len(filters) != 1 or filters[0].get("outcome") != "complete":
                continue
            run = by_id.get(filters[0].get("filter_id"))
            if run is None or run.fingerprint is None:
                continue
            # partitions, files by statistics or buckets, row groups: any of them paid
            if ((t.get("pruned_dynamic") or 0) > 0 or (t.get("files_pruned_stats") or 0) > 0
                    or (t.get("files_pruned_buckets") or 0) > 0 or t.get("row_group_filter")):
                self.memory.record(run.fingerprint, run.spec.probe_label, True)
            elif not t.get("pruned_static"):
                # it admitted every partition of the table: no other query's static
                # domain can make it prune more
                self.memory.record(run.fingerprint, run.spec.probe_label, False)

    def build_seconds(self) -> float:
        outs = [run.outcome() for run in self._runs.values()]
        return max((o.seconds or 0.0 for o in outs if o is not None), default=0.0)

    def _settle(self, run: _Run) -> dict[str, Any]:
        spec = run.spec
        res = run.last_wait()
        if res is None:
            res = self.service.wait(spec.filter_id, 0.0)
            run.record_wait(res)
        if run.future is not None and not run.future.done():
            try:
                if is_remote(self.spark):  # Connect: the build's operations carry the tag
                    self.spark.interruptTag(job_group_id(spec.filter_id))
                else:
                    self.spark.sparkContext.cancelJobGroup(job_group_id(spec.filter_id))
            except Exception:  # pragma: no cover
                log.debug("cancel %s", spec.filter_id, exc_info=True)
        if run.deferred is not None:   # left to Spark's keys, and its scan never listed
            with self._deferral:
                if run.deferred is not None:
                    run.deferred = None
                    run.skip_reason = ("left to the keys of Spark's own dynamic pruning; the "
                                       "scan was never listed")
                    self.service.fail(spec.filter_id, run.skip_reason)
                    run.release()
        built = run.outcome() or BuildOutcome()
        td = res.domain if res.ok else None
        dom = None
        if td is not None and not td.is_none() and td.columns:
            dom = td.get(td.columns[0])
        outcome = res.outcome
        if built.error and outcome in (FilterOutcome.TIMEOUT, FilterOutcome.FAILED):
            outcome = FilterOutcome.FAILED
        if run.skip_reason is not None:
            outcome, res = FilterOutcome.SKIPPED, WaitResult(None, FilterOutcome.SKIPPED,
                                                             run.skip_reason)
        return dict(
            filter_id=spec.filter_id, build_column=spec.build_label,
            build_query=spec.build_query,
            build_rows=built.result.rows if built.result is not None else None,
            distinct_values=dom.value_count() if dom is not None else
            (0 if td is not None and td.is_none() else None),
            kind=(dom.kind if dom is not None else ("none" if td is not None else "unknown")),
            encoded_bytes=res.encoded_bytes, parts_expected=res.parts_expected,
            parts_reported=res.parts_reported, cache_hit=built.cache_hit,
            spark_keys=built.spark_keys, deferred=run.was_deferred,
            outcome=str(outcome), reason=res.reason or built.error,
            build_seconds=built.seconds, wait_seconds=res.seconds)


def _whole_text(exc: BaseException) -> str:
    """The messages of ``exc`` and its causes (a Spark task's Python traceback is there)."""
    parts: list[str] = []
    seen: Optional[BaseException] = exc
    while seen is not None and len(parts) < 8:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


def _key_type(spec: FilterSpec, df: DataFrame, key: str) -> DataType:
    spark_type = df.schema[key].dataType
    try:
        return DataType.from_spark(spark_type)
    except DppError:
        raise DppError(f"build key {spec.build_label} has type "
                       f"{spark_type.simpleString()}, not supported") from None


# Spark's tree patterns of expressions that run code the plan does not show (Python, Scala
# and Java functions, user aggregations, SQL functions): redefined under the same name, the
# plan text stays the same. Each is asked of the plan's pattern bits (one cheap call; a
# Spark line without a pattern simply has no such expression).
_USER_CODE_PATTERNS = ("PYTHON_UDF", "SCALA_UDF", "EXTERNAL_UDF", "USER_DEFINED_AGGREGATION",
                       "SQL_SCALAR_FUNCTION", "SQL_TABLE_FUNCTION", "TRANSPILED_PYTHON_UDF")
_patterns_by_jvm: dict[int, tuple[Any, ...]] = {}


def _calls_user_code(df: DataFrame, plan: Any) -> bool:
    """Whether ``plan`` (a JVM logical plan of ``df``'s session) calls user code."""
    jvm = df.sparkSession._jvm  # type: ignore[attr-defined]
    patterns = _patterns_by_jvm.get(id(jvm))
    if patterns is None:
        holder = getattr(getattr(jvm, "org.apache.spark.sql.catalyst.trees.TreePattern$"),
                         "MODULE$")
        found = []
        for name in _USER_CODE_PATTERNS:
            try:
                found.append(getattr(holder, name)())
            except Exception:   # not a pattern of this Spark line
                continue
        patterns = _patterns_by_jvm[id(jvm)] = tuple(found)
    return any(plan.containsPattern(p) for p in patterns)


def _proof(df: DataFrame) -> Optional[tuple[str, str]]:
    """What must also be equal for a cached filter to be reused (:mod:`dpp.runtime.cache_proof`):
    the value-changing settings of the session the build runs in, and every relation's
    schema and reader options. None: one cannot be read, the build side is not cached."""
    relations = relations_signature(df)
    if relations is None:
        return None
    settings = settings_signature(df)
    return None if settings is None else (settings, relations)


def _identity(spec: FilterSpec, df: DataFrame) -> Optional[str]:
    """What a build side computes, as the filter cache keys it: its SQL text, or for a build
    side cut from Spark's plan (the optimizer hook's) that plan made canonical (attribute ids
    normalized, so the same build side of two queries is one entry; the files it reads and
    the session's rules complete the key). None: not cached — among others a build side
    that calls a user-defined function, whose code can change under the same name (a
    function ``spark.udf.register`` defines again would keep the old function's keys)."""
    if spec.build_query is not None:
        # only the SQL-text path has a build query: the hook's road never loads sqlglot
        from dpp.analysis.functions import calls_unknown_function

        return None if calls_unknown_function(spec.build_query) else spec.build_query
    if not spec.cache_plan:
        return None
    try:
        plan = df._jdf.queryExecution().analyzed().canonicalized()  # type: ignore[attr-defined]
        text = str(plan.toString())
        user_code = _calls_user_code(df, plan)
    except Exception:   # no JVM plan to read (Spark Connect): not cached
        log.debug("no canonical plan for %s", spec.build_label, exc_info=True)
        return None
    if user_code:
        return None
    # a subquery's relations are not among the files that key the entry
    return None if "subquery" in text.lower() else f"-- canonical plan\n{text}"
