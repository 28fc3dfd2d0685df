"""The TPC-DS benchmark: modes ``off``, ``spark`` and ``dpp`` side by side on the same data.

Fair timing (DESIGN.md): a production job opens its tables afresh, so every measured query
first *opens* the tables it reads, in every mode, and the clock runs from there:

* path tables: ``spark.read.parquet(path)`` + a temp view per table (Spark lists the whole
  table eagerly here); in ``dpp`` mode the fact tables are ``dpp.register_table``-ed instead;
* catalog tables: ``spark.catalog.refreshTable`` per table, which drops Spark's cached
  relation and file listing so the query lists what it needs again.

The *listing* phase is that opening, the *execution* phase ``sql(q)`` + ``collect()``; both
and their sum are reported. Modes rotate per query and repetition (after one unmeasured
warm-up run per query), so no mode always runs first or on a cold cache. Every run's rows are
checked against DuckDB's over the same Parquet files; any difference fails the run.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from dpp.core.remote import is_remote
from hive_splits.metastore import partitions_fetched_metric
from hive_splits.storage_calls import storage_calls
from tpcds.generate import FACT_PARTITIONS, TABLES, read_manifest
from tpcds.metrics import JobWindow, QueryMetrics, collect_metrics
from tpcds.queries import Query, load_queries, select_queries
from tpcds.reference import DuckDBReference, baseline_mode, compare_rows, modes_agree

log = logging.getLogger(__name__)

MODES = ("off", "spark", "dpp", "dpp-nostats", "text")
# ``dpp``: the query as plain ``spark.sql`` with dpp's optimizer hook installed, as every job
# on a classic session runs (on a Spark Connect client: dpp's SQL-text analysis).
# ``dpp-nostats``: the same with statistics pruning off (spark.dpp.statsPruning.enabled=
# false), to measure what ``auto`` (or ``--conf ...=true``) costs or saves beside it.
# ``text``: dpp's SQL-text analysis (the Spark Connect client's front end) run on this classic
# session without the hook, to compare the two front ends side by side.
DPP_MODES = ("dpp", "dpp-nostats")
TEXT = "text"
# fact tables written without partitions: a Spark Connect client registers them with dpp's
# SQL-text analysis all the same (their joins filter row groups)
UNPARTITIONED_FACTS = ("inventory",)
HOOK_KEY = "spark.dpp.optimizerHook"
STATS_KEY = "spark.dpp.statsPruning.enabled"
TABLE_KINDS = ("path", "catalog")

#: ``off``: every kind of dynamic pruning and runtime filtering Spark has, switched off.
OFF_CONF = {
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.runtimeFilter.semiJoinReduction.enabled": "false",
}

Progress = Callable[[str], None]


class BenchError(RuntimeError):
    """The benchmark could not run (missing data, bad arguments)."""


@dataclass
class Run:
    """One measured execution of one query in one mode over one kind of table."""

    query: str
    mode: str
    kind: str
    rep: int
    ok: bool = False
    correct: Optional[bool] = None
    error: Optional[str] = None
    timed_out: bool = False
    mismatch: Optional[str] = None
    # without DuckDB's answers (--no-check): whether the rows equal the baseline mode's
    # (spark's) in the same query; None when not judged (see reference.modes_agree)
    agrees: Optional[bool] = None
    disagreement: Optional[str] = None
    rows: Optional[int] = None
    listing_s: Optional[float] = None
    # of the opening (``listing_s``), Spark's own readers of the tables every mode opens
    # alike: each dimension's ``spark.read.parquet`` (a job reads a footer for its schema),
    # a catalog table's refresh. Spark's mode does the same work for them
    readers_s: Optional[float] = None
    execution_s: Optional[float] = None
    total_s: Optional[float] = None
    metrics: dict[str, Any] = field(default_factory=dict)
    dpp_report: Optional[dict[str, Any]] = None
    # storage requests of the measured window (open + query): Spark's own LIST/HEAD (counted
    # by the filesystem), the loader's own where it listed outside Hadoop (os.scandir), and
    # partition objects fetched from the metastore; None where nothing could count them
    storage: Optional[dict[str, Any]] = None
    # the query's first measured run in this mode (rep 0), after dpp forgot what earlier
    # queries taught it (cached filters, footers, verdicts): what that forgetting found
    # ({kind: count}); None for a later (warm) run or where nothing could be forgotten here
    forgot: Optional[dict[str, int]] = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------- modes

def dpp_available() -> tuple[bool, Optional[str]]:
    """Whether ``dpp.DppSession`` can be imported (another package; it may not exist yet)."""
    try:
        from dpp import DppSession  # noqa: F401
    except Exception as e:
        return False, f"{type(e).__name__}: {e}"
    return True, None


@contextlib.contextmanager
def mode_conf(spark: Any, mode: str) -> Iterable[None]:
    """Spark conf of a mode for the duration of one run, restored after."""
    saved = {k: spark.conf.get(k, None) for k in (*OFF_CONF, STATS_KEY, HOOK_KEY)}
    try:
        for k, v in OFF_CONF.items():
            if mode == "off":
                spark.conf.set(k, v)
            else:
                spark.conf.unset(k)         # Spark's default
        if mode == "dpp-nostats":
            spark.conf.set(STATS_KEY, "false")
        # the hook's rule is installed on the session once a dpp run has been made: every
        # other mode switches it off per query
        spark.conf.set(HOOK_KEY, "true" if mode in DPP_MODES else "false")
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


# ------------------------------------------------------------------------- tables

def open_path_tables(spark: Any, data_dir: str | os.PathLike[str],
                     tables: Iterable[str]) -> None:
    """Temp views over the Parquet folders: Spark lists each table now (eager listing)."""
    for t in tables:
        spark.read.parquet(str(Path(data_dir) / t)).createOrReplaceTempView(t)


def drop_views(spark: Any, tables: Iterable[str]) -> None:
    for t in tables:
        spark.catalog.dropTempView(t)


def catalog_database(data_dir: str | os.PathLike[str]) -> str:
    """The Spark database holding the catalog tables of one data folder."""
    base = "".join(c if c.isalnum() else "_" for c in Path(data_dir).resolve().name.lower())
    return f"tpcds_{base}".strip("_")


def ensure_catalog_tables(spark: Any, data_dir: str | os.PathLike[str],
                          progress: Optional[Progress] = None,
                          tables: Optional[Iterable[str]] = None) -> str:
    """External Parquet tables over ``data_dir`` in Spark's catalog, partitions recovered.

    The files are not copied: the tables point at the generated folders, so every kind of
    table and DuckDB read the same bytes. Done once per metastore; existing tables whose
    location matches are kept. ``tables`` limits the work to the tables the queries read.
    """
    say = progress or (lambda m: log.info("%s", m))
    db = catalog_database(data_dir)
    layout = (read_manifest(data_dir) or {}).get("layout") or {}
    bucket_keys = layout.get("bucket_keys", {}) if layout.get("name") == "bucketed" else {}
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    wanted = set(tables) if tables is not None else set(TABLES)
    for t in [t for t in TABLES if t in wanted]:
        path = (Path(data_dir) / t).resolve()
        if not path.is_dir():
            continue
        if spark.catalog.tableExists(f"{db}.{t}"):
            loc = _table_location(spark, f"{db}.{t}")
            if loc and loc.rstrip("/").endswith(str(path)):
                continue
            spark.sql(f"DROP TABLE {db}.{t}")
        say(f"catalog: creating {db}.{t}")
        schema = spark.read.parquet(str(path)).schema   # one listing, at setup only
        cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields)
        part = FACT_PARTITIONS.get(t)
        spark.sql(f"CREATE TABLE {db}.{t} ({cols}) USING parquet "
                  + (f"PARTITIONED BY ({part}) " if part else "")
                  + (f"CLUSTERED BY ({bucket_keys[t]}) INTO {int(layout['buckets'])} BUCKETS "
                     if t in bucket_keys else "")
                  + f"LOCATION '{_sql_str(str(path))}'")
        if part:
            spark.sql(f"ALTER TABLE {db}.{t} RECOVER PARTITIONS")
    return db


def _table_location(spark: Any, name: str) -> Optional[str]:
    try:
        for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect():
            if r[0] == "Location":
                return str(r[1]).replace("file:", "")
    except Exception:
        log.debug("no location for %s", name, exc_info=True)
    return None


def _sql_str(s: str) -> str:
    return s.replace("\\", "\\\\").replace("'", "\\'")


# ------------------------------------------------------------------------- one run

class Runner:
    """Runs one query in one mode over one kind of table and measures it."""

    def __init__(self, spark: Any, data_dir: str, reference: Optional[DuckDBReference],
                 catalog_db: Optional[str] = None, timeout_s: Optional[float] = None) -> None:
        self.spark = spark
        self.timeout_s = timeout_s
        self.data_dir = str(Path(data_dir).resolve())
        self.reference = reference
        self.catalog_db = catalog_db
        self._dpp: Any = None
        self._hook: Any = None
        self._server_prunes: Optional[bool] = None
        #: the rows of the last run (None when it failed): modes compared without DuckDB
        self.last_rows: Optional[list[Any]] = None

    def dpp_session(self) -> Any:
        if self._dpp is None:
            from dpp import DppSession

            self._dpp = DppSession(self.spark)
        return self._dpp

    def hook_session(self) -> Any:
        """A DppSession with the optimizer hook installed on the bench's SparkSession."""
        if self._hook is None:
            from dpp import DppSession
            from dpp.frontends.hook.optimizer_hook import OptimizerHook

            session = DppSession(self.spark)
            session.optimizer_hook = OptimizerHook(session)
            self._hook = session
        return self._hook

    def forget_learned(self) -> Optional[dict[str, int]]:
        """A cold start for the next run: what dpp learned from earlier queries in this
        process forgotten (:meth:`dpp.runtime.services.Runtime.forget_learned`), in every dpp
        session the bench holds, summed. None through a Spark Connect server: its state is
        in the server's process."""
        sessions = [s for s in (self._hook, self._dpp) if s is not None]
        if not sessions or is_remote(self.spark):
            return None
        total: dict[str, int] = {}
        for session in sessions:
            for k, v in session.runtime.forget_learned(session.config).items():
                total[k] = total.get(k, 0) + max(v, 0)
        return total

    @property
    def server_prunes(self) -> bool:
        """A Spark Connect server with dpp inside (``dpp connect-server``): its hook prunes
        the client's plain queries; the client runs no analysis of its own."""
        if self._server_prunes is None:
            self._server_prunes = is_remote(self.spark) and str(
                self.spark.conf.get("spark.dpp.connectServer", "false")).lower() == "true"
        return self._server_prunes

    def _open(self, q: Query, mode: str, kind: str) -> float:
        """Opens the tables ``q`` reads as ``mode`` does; returns the seconds of it spent in
        Spark's readers of the tables every mode opens alike (``Run.readers_s``)."""
        tables = q.tables()
        hooked = mode in DPP_MODES and not is_remote(self.spark)
        if kind == "path" and mode in DPP_MODES and self.server_prunes:
            # the server's declared tables (views of parquet.`folder`, analysed per query): a
            # view over global_temp.<fact>; a fact it does not declare is read as a folder
            declared = [t for t in tables if t in FACT_PARTITIONS
                        and self.spark.conf.get(f"spark.dpp.tables.{t}", None)]
            for t in declared:
                self.spark.table(f"global_temp.{t}").createOrReplaceTempView(t)
            return self._readers(kind, [t for t in tables if t not in declared])
        if kind == "path" and hooked:
            hook = self.hook_session()
            facts = [t for t in tables if t in FACT_PARTITIONS]
            for t in facts:
                hook.register_table(t, str(Path(self.data_dir) / t))
            hook.ensure_views(facts)   # Spark's reader of each folder, made for this query
            return self._readers(kind, [t for t in tables if t not in FACT_PARTITIONS])
        if kind == "path" and (mode in DPP_MODES or mode == TEXT):
            dpp = self.dpp_session()
            # the facts, inventory included: unpartitioned, its joins on inv_date_sk
            # filter its row groups (dpp.runtime.row_groups)
            facts = [t for t in tables if t in FACT_PARTITIONS or t in UNPARTITIONED_FACTS]
            for t in facts:
                dpp.register_table(t, str(Path(self.data_dir) / t))
            return self._readers(kind, [t for t in tables if t not in facts])
        if kind == "path":
            # Spark's reader of each partitioned fact (its listing), then of the rest, timed
            # apart as in dpp's modes
            open_path_tables(self.spark, self.data_dir,
                             [t for t in tables if t in FACT_PARTITIONS])
            return self._readers(kind, [t for t in tables if t not in FACT_PARTITIONS])
        return self._readers(kind, tables)

    def _readers(self, kind: str, tables: list[str]) -> float:
        """Spark's readers of ``tables`` (path: a view over each folder; catalog: a refresh
        of each table), timed."""
        t0 = time.perf_counter()
        if kind == "path":
            open_path_tables(self.spark, self.data_dir, tables)
        else:
            for t in tables:
                self.spark.catalog.refreshTable(f"{self.catalog_db}.{t}")
        return time.perf_counter() - t0

    def run(self, q: Query, mode: str, kind: str, rep: int, measure: bool = True) -> Run:
        r = Run(q.name, mode, kind, rep)
        self.last_rows = None
        spark = self.spark
        drop_views(spark, TABLES)   # nothing opened by an earlier run may be reused
        if kind == "catalog":
            spark.catalog.setCurrentDatabase(self.catalog_db)
        # Spark Connect: the status store, the executed plan and the counting filesystem are
        # in the server's JVM; timings, rows and dpp's report are all a run measures there
        remote = is_remote(spark)
        window = _NoWindow() if remote else JobWindow(spark)
        df = None
        watchdog = _Watchdog(spark, self.timeout_s)
        calls0 = None if remote else storage_calls(spark)
        fetched0 = partitions_fetched_metric(spark)
        # a job makes its dpp session once (the hook's jar loaded, its callback server
        # started), not per query: the clock starts after, whichever mode came first
        if mode in DPP_MODES and not remote:
            self.hook_session()
        elif (mode in DPP_MODES or mode == TEXT) and not self.server_prunes:
            self.dpp_session()
        if measure and rep == 0 and (mode in DPP_MODES or mode == TEXT):
            r.forgot = self.forget_learned()
        try:
            with mode_conf(spark, mode), watchdog:
                window.start()
                t0 = time.perf_counter()
                readers = self._open(q, mode, kind)
                t1 = time.perf_counter()
                if mode in DPP_MODES and not remote:
                    self.hook_session().last_report = None
                    df = spark.sql(q.spark_sql)
                elif mode in DPP_MODES and self.server_prunes:
                    df = spark.sql(q.spark_sql)   # the server's hook prunes it
                elif mode in DPP_MODES or mode == TEXT:
                    df = self.dpp_session().sql(q.spark_sql)
                else:
                    df = spark.sql(q.spark_sql)
                rows = df.collect()
                t2 = time.perf_counter()
            if watchdog.fired:   # finished between two cancels: past the limit all the same
                raise TimeoutError("past the time limit")
            r.listing_s, r.execution_s, r.total_s = t1 - t0, t2 - t1, t2 - t0
            r.readers_s = readers
            r.rows = len(rows)
            r.ok = True
            self.last_rows = rows
            if measure:
                r.metrics = (QueryMetrics().to_dict() if remote else
                             collect_metrics(df, window.stop(), FACT_PARTITIONS,
                                             self.data_dir).to_dict())
                session = self._dpp if remote or mode == TEXT else self._hook
                if ((mode in DPP_MODES or mode == TEXT) and session is not None
                        and session.last_report is not None):
                    r.dpp_report = session.last_report.to_dict()
                r.storage = _storage(calls0, None if remote else storage_calls(spark), fetched0,
                                     partitions_fetched_metric(spark), r.dpp_report)
            if self.reference is not None:
                problem = compare_rows(rows, self.reference.rows(q), limit=q.limit,
                                       full=lambda: self.reference.rows(q, unlimited=True))
                r.correct = problem is None
                r.mismatch = problem
        except Exception as e:
            r.ok = False
            if watchdog.fired:
                r.timed_out = True
                r.error = f"timed out after {self.timeout_s:g}s (Spark jobs cancelled)"
                return r
            r.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:500] if str(e).strip() else ''}"
            log.debug("%s/%s/%s failed:\n%s", q.name, mode, kind, traceback.format_exc())
        finally:
            drop_views(spark, TABLES)
            if kind == "catalog":
                spark.catalog.setCurrentDatabase("default")
        return r


def _storage(before: Optional[tuple[int, int]], after: Optional[tuple[int, int]],
             fetched_before: Optional[int], fetched_after: Optional[int],
             dpp_report: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """One run's storage requests: the filesystem's counts (Spark's reader, the handoff, and
    the Hadoop lister when used) plus what dpp's loader listed with ``os.scandir`` (not seen
    by Hadoop), and the metastore's partition objects and names."""
    if before is None or after is None:
        return None
    lists, heads = after[0] - before[0], after[1] - before[1]
    names = None
    for t in (dpp_report or {}).get("tables", []):
        if t.get("lister") == "local":
            lists += t.get("list_calls") or 0
            heads += t.get("head_calls") or 0
        if t.get("metastore_names") is not None:
            names = (names or 0) + t["metastore_names"]
    fetched = None if fetched_before is None or fetched_after is None \
        else fetched_after - fetched_before
    return {"list": lists, "head": heads, "metastore_fetched": fetched,
            "metastore_names": names}


class _Watchdog:
    """Cancels every Spark job once a run passes its time limit, and keeps cancelling (every
    quarter second) until the run returns: a ``dpp`` run whose build jobs were cancelled goes on
    without pruning and would otherwise start the main query's jobs after the first cancel."""

    def __init__(self, spark: Any, timeout_s: Optional[float]) -> None:
        self.spark = spark
        self.timeout_s = timeout_s
        self.fired = False
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "_Watchdog":
        if self.timeout_s:
            self._thread = threading.Thread(target=self._watch, name="tpcds-watchdog",
                                            daemon=True)
            self._thread.start()
        return self

    def _watch(self) -> None:
        if self._done.wait(self.timeout_s):
            return
        self.fired = True
        while not self._done.is_set():
            try:
                if is_remote(self.spark):
                    self.spark.interruptAll()
                else:
                    self.spark.sparkContext.cancelAllJobs()
            except Exception:
                log.debug("cancelAllJobs failed", exc_info=True)
            self._done.wait(0.25)

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


# ------------------------------------------------------------------------- the benchmark

@dataclass
class BenchConfig:
    data_dir: str
    modes: list[str]
    queries: str = "all"
    repeat: int = 1
    table_kinds: list[str] = field(default_factory=lambda: ["path"])
    warmup: bool = True
    check: bool = True
    rules: list[str] = field(default_factory=list)
    #: per-run time limit in seconds (None: none); a run past it is cancelled and reported
    #: as not run, with the reason
    query_timeout_s: Optional[float] = None


def parse_modes(spec: str) -> list[str]:
    modes = [m.strip().lower() for m in spec.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise BenchError(f"unknown mode(s) {bad or spec!r}: expected a list of {', '.join(MODES)}")
    return list(dict.fromkeys(modes))


def parse_kinds(spec: str) -> list[str]:
    spec = spec.strip().lower()
    if spec == "both":
        return list(TABLE_KINDS)
    if spec not in TABLE_KINDS:
        raise BenchError(f"unknown table kind {spec!r}: expected path, catalog or both")
    return [spec]


def run_bench(spark: Any, cfg: BenchConfig, progress: Optional[Progress] = None,
              checkpoint: Optional[Callable[[dict[str, Any]], None]] = None,
              resume: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """Runs the benchmark and returns everything ``results.json`` holds.

    ``checkpoint`` gets the partial result after every query (all its modes and repetitions),
    so a long run that is stopped keeps what it measured; ``resume`` is such a partial result:
    the queries it finished are kept and not run again. The repetitions loop inside each query
    (warm-up, then the modes rotating per repetition) so a query is finished in one go.
    """
    say = progress or (lambda m: log.info("%s", m))
    manifest = read_manifest(cfg.data_dir)
    if manifest is None:
        raise BenchError(f"no TPC-DS data in {cfg.data_dir} (no manifest.json): run "
                         f"`tpcds generate --sf N --out {cfg.data_dir}` first")
    queries = [q for q in select_queries(cfg.queries, load_queries(cfg.rules))]
    untranslated = [q.name for q in queries if q.spark_sql is None]
    queries = [q for q in queries if q.spark_sql is not None]

    modes: list[str] = []
    unavailable: dict[str, str] = {}
    for m in cfg.modes:
        if m in DPP_MODES or m == TEXT:
            ok, why = dpp_available()
            if not ok:
                unavailable[m] = why or "unavailable"
                say(f"mode {m} unavailable ({why}); continuing without it")
                continue
        modes.append(m)

    runs: list[Run] = []
    done: list[list[str]] = []
    started = time.time()
    if resume is not None:
        _check_resumable(resume, cfg, modes)
        runs = [Run(**r) for r in resume.get("runs", [])]
        done = [list(d) for d in resume.get("done", [])]
        started = resume.get("started", started)
        say(f"resuming: {len(done)} query run(s) already done")
    finished = {tuple(d) for d in done}

    def result(complete: bool) -> dict[str, Any]:
        out = {
            "config": asdict(cfg),
            "complete": complete,
            "started": started,
            "finished": time.time(),
            "environment": _environment(spark),
            "data": {"sf": manifest.get("sf"), "generator": manifest.get("generator"),
                     "tables": manifest.get("tables")},
            "modes": modes,
            "unavailable_modes": unavailable,
            "untranslated_queries": untranslated,
            "done": done,
            "runs": [r.to_dict() for r in runs],
        }
        from tpcds.report import summarize

        out["summary"] = summarize(out)
        return out

    reference = DuckDBReference(cfg.data_dir) if cfg.check else None
    try:
        if reference is not None:
            t = time.perf_counter()
            for q in queries:
                reference.rows(q)
            cached = sum(1 for s in reference.sources.values() if s == "cache")
            say(f"duckdb reference answers for {len(queries)} queries in "
                f"{time.perf_counter() - t:.1f}s ({cached} from {reference.cache_dir})")
            reference.release()   # DuckDB's memory back before Spark runs
        for kind in cfg.table_kinds:
            todo = [q for q in queries if (kind, q.name) not in finished]
            if not todo:
                continue
            db = (ensure_catalog_tables(spark, cfg.data_dir, say,
                                       {t for q in queries for t in q.tables()})
                  if kind == "catalog" else None)
            runner = Runner(spark, cfg.data_dir, reference, db, cfg.query_timeout_s)
            first_use = [m for m in modes if m != _warmup_mode(modes)] if cfg.warmup else []
            for qi, q in enumerate(queries):
                if (kind, q.name) in finished:
                    continue
                if cfg.warmup and modes:   # unmeasured: JIT, codegen, page cache, metastore
                    w = runner.run(q, _warmup_mode(modes), kind, rep=-1, measure=False)
                    say(f"warm-up {kind} {q.name}: {'ok' if w.ok else w.error}")
                    if w.ok and first_use:
                        _warm_first_use(runner, q, first_use, kind, say)
                        first_use = []
                    if w.timed_out:        # would time out again in every mode: one record
                        runs.append(w)
                        modes_left: list[str] = []
                    else:
                        modes_left = modes
                else:
                    modes_left = modes
                ran: list[tuple[Run, Optional[list[Any]]]] = []
                for rep in range(cfg.repeat if modes_left else 0):
                    k = (qi + rep) % len(modes_left)
                    order = modes_left[k:] + modes_left[:k]   # rotate: no mode always first
                    for mode in order:
                        r = runner.run(q, mode, kind, rep)
                        runs.append(r)
                        ran.append((r, runner.last_rows))
                        say(_run_line(r))
                if reference is None and ran:
                    _agreement(ran, baseline_mode(modes_left), q.limit, say)
                done.append([kind, q.name])
                if checkpoint is not None:
                    checkpoint(result(complete=False))
    finally:
        if reference is not None:
            reference.close()
    return result(complete=True)


def _agreement(ran: list[tuple[Run, Optional[list[Any]]]], baseline: str,
               limit: Optional[int], say: Progress) -> None:
    """--no-check: each measured run of one query against the baseline mode's rows."""
    verdicts = modes_agree([(r.mode, r.rep, rows) for r, rows in ran], baseline, limit)
    for (r, _), (agrees, why) in zip(ran, verdicts):
        r.agrees, r.disagreement = agrees, why
        if why:
            say(f"{r.kind:<7} {r.query:<5} {r.mode:<5} rep {r.rep}: "
                + ("MODES DISAGREE: " if agrees is False else "") + why)


def _warm_first_use(runner: Runner, q: Query, modes: list[str], kind: str,
                    say: Progress) -> None:
    """Each other mode once, unmeasured, before the first measured query of a table kind: the
    first run of a mode loads its code paths (dpp's classes in the JVM, the hook's lazy
    tables, the first build clone), a cost paid once per application that would otherwise
    land on whichever query comes first. The filter cache is off meanwhile, so no filter
    built here serves a measured run."""
    key = "spark.dpp.filterCache.enabled"
    saved = runner.spark.conf.get(key, None)
    runner.spark.conf.set(key, "false")
    try:
        for mode in modes:
            w = runner.run(q, mode, kind, rep=-1, measure=False)
            say(f"first use {kind} {mode}: {'ok' if w.ok else w.error}")
    finally:
        if saved is None:
            runner.spark.conf.unset(key)
        else:
            runner.spark.conf.set(key, saved)


def _warmup_mode(modes: list[str]) -> str:
    """``spark`` when it runs: it compiles the same query plan shape as the others and is
    quicker than ``off``, and the files are in the page cache after any full read (the
    generator just wrote them, and each query's first mode reads what it needs)."""
    return "spark" if "spark" in modes else modes[0]


def _check_resumable(prev: dict[str, Any], cfg: BenchConfig, modes: list[str]) -> None:
    """A partial result is only continued with the same data, modes and repetitions: mixing
    runs measured under different settings would make one report lie."""
    pc = prev.get("config", {})
    for key, now in (("data_dir", cfg.data_dir), ("repeat", cfg.repeat),
                     ("warmup", cfg.warmup), ("check", cfg.check), ("rules", cfg.rules)):
        if pc.get(key) != now:
            raise BenchError(f"cannot resume: {key} was {pc.get(key)!r} in the earlier run, "
                             f"{now!r} now (use another --out folder)")
    if prev.get("modes") != modes:
        raise BenchError(f"cannot resume: modes were {prev.get('modes')!r} in the earlier run, "
                         f"{modes!r} now (use another --out folder)")


def _run_line(r: Run) -> str:
    if r.timed_out:
        return f"{r.kind:<7} {r.query:<5} {r.mode:<5} NOT RUN: {r.error}"
    if not r.ok:
        return f"{r.kind:<7} {r.query:<5} {r.mode:<5} ERROR {r.error}"
    m = r.metrics
    flag = "" if r.correct in (True, None) else f"  MISMATCH: {r.mismatch}"
    return (f"{r.kind:<7} {r.query:<5} {r.mode:<5} total {r.total_s:7.2f}s "
            f"(list {r.listing_s:6.2f}s, exec {r.execution_s:6.2f}s) "
            f"cpu {m.get('executor_cpu_ms', 0) / 1000:7.2f}s "
            f"fact read {m.get('fact_bytes_read', 0) / 1e6:9.1f} MB "
            f"files {m.get('fact_files_read', 0)}/{m.get('fact_files_listed', 0)} listed{flag}")


class _NoWindow:
    """Stands for :class:`JobWindow` on Spark Connect (no status store to read)."""

    def start(self) -> "_NoWindow":
        return self


def _environment(spark: Any) -> dict[str, Any]:
    every = (spark.conf.getAll.items() if is_remote(spark)
             else spark.sparkContext.getConf().getAll())
    conf = {k: v for k, v in every
            if k.startswith(("spark.sql.", "spark.master", "spark.driver.memory",
                             "spark.executor.memory", "spark.dpp."))}
    return {"spark": spark.version, "python": platform.python_version(),
            "machine": platform.machine(), "cpus": os.cpu_count(), "conf": conf}


def failures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs that erred or whose rows differ from DuckDB's: each one fails the command. A run
    cut by ``--query-timeout`` is not a failure: it is listed as not run, with the limit."""
    return [r for r in result["runs"]
            if (not r["ok"] and not r.get("timed_out")) or r.get("correct") is False
            or r.get("agrees") is False]


def timed_out(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in result["runs"] if r.get("timed_out")]


def write_outputs(result: dict[str, Any], out_dir: str | os.PathLike[str],
                  chart: bool = True) -> dict[str, Path]:
    """results.json, report.md and chart.png in ``out_dir``; each file is written to a
    temporary name and renamed, so a run stopped mid-write leaves the previous checkpoint."""
    from tpcds.report import render_markdown, render_chart

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "md": out / "report.md", "chart": out / "chart.png"}
    _write_atomic(paths["json"], json.dumps(result, indent=2, default=str))
    _write_atomic(paths["md"], render_markdown(result))
    if chart:
        tmp = out / "chart.tmp.png"
        render_chart(result, tmp)
        os.replace(tmp, paths["chart"])
    return paths


def read_partial(out_dir: str | os.PathLike[str]) -> Optional[dict[str, Any]]:
    """The result an earlier (possibly stopped) run left in ``out_dir``, if any."""
    p = Path(out_dir) / "results.json"
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise BenchError(f"cannot resume from {p}: not valid JSON ({e})") from e


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
