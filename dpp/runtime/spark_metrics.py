"""Scan and job metrics of an executed Spark query, read through py4j after it ran.

One module serves the runtime's job report (``JobReport.spark_scan``) and the TPC-DS
benchmark, so both read the same figures the same way, whichever mode built the plan (pruning
off, Spark's DPP, this runtime handing Spark a list of kept files):

* **Scan nodes of the executed plan** (``df._jdf.queryExecution().executedPlan()``, walked
  through AQE stages, reused exchanges and subqueries): each ``FileSourceScanExec`` reports
  ``numFiles``, ``filesSize`` (bytes of the files it read), ``numPartitions`` and, when Spark's
  own DPP filtered it, ``staticFilesNum`` (the files left by static filters, i.e. listed).
* **Spark's status store** (``SparkContext.statusStore``, the data behind the UI, kept even
  with the UI off): every job started during a :class:`JobWindow`, whichever thread started it
  (this runtime's build-side jobs included), contributes its stages' ``executorCpuTime`` and
  ``inputBytes``. Job ids only grow, so "jobs with an id above the last one seen before the
  query" is exactly the query's jobs while one query runs at a time.
"""
from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional

log = logging.getLogger(__name__)

SCAN_CLASSES = ("FileSourceScanExec",)
_WALKERS: dict[int, Any] = {}   # id(driver JVM view) -> dpp.spark.PlanScans, or None


# ------------------------------------------------------------------------- plan walking

def _seq(s: Any) -> list[Any]:
    """A Scala Seq through py4j as a Python list."""
    out = []
    it = s.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def _simple_name(node: Any) -> str:
    try:
        return str(node.getClass().getSimpleName())
    except Exception:
        return ""


def _children(node: Any) -> list[Any]:
    kids = _seq(node.children())
    name = _simple_name(node)
    if name == "AdaptiveSparkPlanExec":
        kids = [node.executedPlan()]            # the final plan after the query ran
    elif name.endswith("QueryStageExec"):
        kids = [node.plan()]
    elif name in ("ReusedExchangeExec", "ReusedSubqueryExec"):
        kids = [node.child()]
    try:                                         # DPP / scalar subqueries live in expressions
        kids += _seq(node.subqueries())
    except Exception:
        pass
    return kids


def iter_plan(root: Any, jvm: Any) -> Iterable[Any]:
    """Every node of a physical plan once, AQE stages and subqueries included.

    Reused exchanges and subqueries point at a plan that also appears elsewhere; nodes are
    visited once by JVM identity, so a reused scan is counted once, as Spark ran it once.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        ident = int(jvm.System.identityHashCode(node))
        if ident in seen:
            continue
        seen.add(ident)
        yield node
        stack.extend(_children(node))


def _metric(node: Any, name: str) -> int:
    try:
        m = node.metrics()
        if m.contains(name):
            return int(m.apply(name).value())
    except Exception:
        log.debug("metric %s unreadable", name, exc_info=True)
    return 0


def _root_paths(node: Any) -> list[str]:
    try:
        return [str(p.toUri().getPath()) for p in _seq(node.relation().location().rootPaths())]
    except Exception:
        return []


def _table_identifier(node: Any) -> Optional[str]:
    try:
        opt = node.tableIdentifier()
        if opt.isDefined():
            return str(opt.get().table()).lower()
    except Exception:
        pass
    return None


def _files_listed(node: Any, files_read: int) -> int:
    """Files Spark listed for the scan.

    An ``InMemoryFileIndex`` (path tables, and catalog tables after static partition pruning)
    holds exactly the files its listing found. A ``CatalogFileIndex`` lists at execution only
    the partitions left by static filters, which ``staticFilesNum`` counts when a dynamic
    filter then cut them further; otherwise what was listed is what was read.
    """
    try:
        loc = node.relation().location()
        if "InMemoryFileIndex" in _simple_name(loc):
            return int(loc.allFiles().size())
    except Exception:
        log.debug("file index unreadable", exc_info=True)
    static = _metric(node, "staticFilesNum")
    return static or files_read


@dataclass
class ScanInfo:
    """One file scan in the executed plan."""

    table: str                      # catalog name, or the first root path
    files_read: int = 0
    bytes_read: int = 0             # bytes of the files selected (filesSize)
    partitions_read: int = 0
    files_listed: int = 0           # files Spark listed for this scan (see _files_listed)
    metadata_ms: int = 0            # Spark's "metadata time": listing done inside the scan
    rows: int = 0
    catalog_name: Optional[str] = field(default=None, repr=False)
    root_paths: list[str] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The figures, without the root paths (a pruned scan can have thousands)."""
        d = asdict(self)
        d.pop("root_paths")
        d.pop("catalog_name")
        return d


def _jvm_walker(spark: Any) -> Any:
    """``dpp.spark.PlanScans`` in the driver JVM (the hook's jar, loaded once), or None where
    it cannot be loaded (no JDK): the plan is then walked through py4j, node by node."""
    from dpp.runtime.jvm_build import load_into

    jvm = spark.sparkContext._jvm
    key = id(jvm)
    if key not in _WALKERS:
        try:
            load_into(spark)
            _WALKERS[key] = jvm.dpp.spark.PlanScans
        except Exception:   # HookUnavailable, or a JVM that refuses the jar
            log.debug("PlanScans unavailable, walking the plan through py4j", exc_info=True)
            _WALKERS[key] = None
    return _WALKERS[key]


def file_scans(df: Any) -> list[ScanInfo]:
    """The file scans of an executed DataFrame's plan (call after an action ran): one call
    into the JVM (:func:`_jvm_walker`), else the same walk through py4j."""
    plan = df._jdf.queryExecution().executedPlan()
    walker = _jvm_walker(df.sparkSession)
    if walker is not None:
        try:
            return [ScanInfo(**s) for s in json.loads(walker.describe(plan))]
        except Exception:
            log.debug("PlanScans failed, walking the plan through py4j", exc_info=True)
    return _file_scans_py4j(df, plan)


def _file_scans_py4j(df: Any, plan: Any) -> list[ScanInfo]:
    scans = []
    for node in iter_plan(plan, df.sparkSession.sparkContext._jvm):
        if _simple_name(node) not in SCAN_CLASSES:
            continue
        paths = _root_paths(node)
        ident = _table_identifier(node)
        files = _metric(node, "numFiles")
        scans.append(ScanInfo(
            table=ident or (paths[0] if paths else "?"),
            files_read=files,
            bytes_read=_metric(node, "filesSize"),
            partitions_read=_metric(node, "numPartitions"),
            files_listed=_files_listed(node, files),
            metadata_ms=_metric(node, "metadataTime"),
            rows=_metric(node, "numOutputRows"),
            catalog_name=ident,
            root_paths=paths,
        ))
    return scans


@dataclass
class ScanMetrics:
    """File scans of one query, summed: what ``JobReport.spark_scan`` shows."""

    files_read: int = 0
    bytes_read: int = 0
    partitions_read: int = 0
    rows_output: int = 0
    scans: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def scan_metrics(df: Any) -> ScanMetrics:
    """Sums file-scan metrics over the executed plan of ``df``; empty if it has none."""
    out = ScanMetrics()
    try:
        scans = file_scans(df)
    except Exception:
        log.debug("no executed plan", exc_info=True)
        return out
    for s in scans:
        out.scans.append(s.to_dict())
        out.files_read += s.files_read
        out.bytes_read += s.bytes_read
        out.partitions_read += s.partitions_read
        out.rows_output += s.rows
    return out


# ------------------------------------------------------------------------- status store

def _bytes_read(spark: Any) -> Optional[tuple[int, int, int]]:
    try:
        from hive_splits.storage_calls import bytes_read
        return bytes_read(spark)
    except Exception:
        log.debug("bytes read not counted", exc_info=True)
        return None


class JobWindow:
    """Executor CPU and input of every Spark job started between ``start()`` and ``stop()``."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._sc = spark.sparkContext._jsc.sc()
        self._first_job = 0
        self._read_at_start: Optional[tuple[int, int, int]] = None

    def _drain(self) -> None:
        """Waits until the listener bus has delivered every event to the status store."""
        try:
            self._sc.listenerBus().waitUntilEmpty(30_000)
        except Exception:
            log.debug("listener bus drain unavailable", exc_info=True)

    def _job_ids(self) -> list[int]:
        return [int(j.jobId()) for j in _seq(self._sc.statusStore().jobsList(None))]

    def start(self) -> "JobWindow":
        self._drain()
        ids = self._job_ids()
        self._first_job = (max(ids) + 1) if ids else 0
        self._read_at_start = _bytes_read(self._spark)
        return self

    def stop(self) -> dict[str, float]:
        """Sums over the window's jobs. ``query_input_bytes`` leaves out dpp's build-side jobs
        (job group ``dpp-build-*``): what the query itself read, comparable across modes, where
        Parquet row groups skipped inside kept files show (file sizes do not)."""
        self._drain()
        store = self._sc.statusStore()
        cpu_ns = run_ms = inp = query_inp = 0
        jobs = stages = 0
        seen: set[int] = set()
        for job in _seq(store.jobsList(None)):
            if int(job.jobId()) < self._first_job:
                continue
            jobs += 1
            try:
                group = job.jobGroup()
                build = group.isDefined() and str(group.get()).startswith("dpp-build-")
            except Exception:
                build = False
            for sid in _seq(job.stageIds()):
                sid = int(sid)
                if sid in seen:
                    continue
                seen.add(sid)
                try:
                    st = store.lastStageAttempt(sid)
                except Exception:  # skipped stages of reused shuffles have no attempt
                    continue
                stages += 1
                cpu_ns += int(st.executorCpuTime())
                run_ms += int(st.executorRunTime())
                inp += int(st.inputBytes())
                if not build:
                    query_inp += int(st.inputBytes())
        out = {"executor_cpu_ms": cpu_ns / 1e6, "executor_run_ms": float(run_ms),
               "input_bytes": inp, "query_input_bytes": query_inp, "jobs": jobs,
               "stages": stages, "input_counted": 0.0}
        end = _bytes_read(self._spark)
        if self._read_at_start is not None and end is not None:
            # the counting filesystem's bytes: Spark's task metric (Hadoop's per-thread
            # statistics) misses what a vectored read fetches on other threads, so a whole
            # column read shows as a few KB; these count at the call
            build, tasks, _driver = (e - s for e, s in zip(end, self._read_at_start))
            out.update(input_bytes=build + tasks, query_input_bytes=tasks,
                       spark_input_bytes=inp, spark_query_input_bytes=query_inp,
                       input_counted=1.0)
        return out
