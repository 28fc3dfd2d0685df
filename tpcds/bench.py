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
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from tpcds.generate import FACT_PARTITIONS, TABLES, read_manifest
from tpcds.metrics import JobWindow, collect_metrics
from tpcds.queries import Query, load_queries, select_queries
from tpcds.reference import DuckDBReference, compare_rows

log = logging.getLogger(__name__)

MODES = ("off", "spark", "dpp")
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
    mismatch: Optional[str] = None
    rows: Optional[int] = None
    listing_s: Optional[float] = None
    execution_s: Optional[float] = None
    total_s: Optional[float] = None
    metrics: dict[str, Any] = field(default_factory=dict)
    dpp_report: Optional[dict[str, Any]] = None

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
    saved = {k: spark.conf.get(k, None) for k in OFF_CONF}
    try:
        for k, v in OFF_CONF.items():
            if mode == "off":
                spark.conf.set(k, v)
            else:
                spark.conf.unset(k)         # Spark's default
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
                 catalog_db: Optional[str] = None) -> None:
        self.spark = spark
        self.data_dir = str(Path(data_dir).resolve())
        self.reference = reference
        self.catalog_db = catalog_db
        self._dpp: Any = None

    def dpp_session(self) -> Any:
        if self._dpp is None:
            from dpp import DppSession

            self._dpp = DppSession(self.spark)
        return self._dpp

    def _open(self, q: Query, mode: str, kind: str) -> None:
        tables = q.tables()
        if kind == "path":
            if mode == "dpp":
                dpp = self.dpp_session()
                facts = [t for t in tables if t in FACT_PARTITIONS]
                for t in facts:
                    dpp.register_table(t, str(Path(self.data_dir) / t))
                open_path_tables(self.spark, self.data_dir,
                                 [t for t in tables if t not in FACT_PARTITIONS])
            else:
                open_path_tables(self.spark, self.data_dir, tables)
        else:
            for t in tables:
                self.spark.catalog.refreshTable(f"{self.catalog_db}.{t}")

    def run(self, q: Query, mode: str, kind: str, rep: int, measure: bool = True) -> Run:
        r = Run(q.name, mode, kind, rep)
        spark = self.spark
        drop_views(spark, TABLES)   # nothing opened by an earlier run may be reused
        if kind == "catalog":
            spark.catalog.setCurrentDatabase(self.catalog_db)
        window = JobWindow(spark)
        df = None
        try:
            with mode_conf(spark, mode):
                window.start()
                t0 = time.perf_counter()
                self._open(q, mode, kind)
                t1 = time.perf_counter()
                if mode == "dpp":
                    df = self.dpp_session().sql(q.spark_sql)
                else:
                    df = spark.sql(q.spark_sql)
                rows = df.collect()
                t2 = time.perf_counter()
            r.listing_s, r.execution_s, r.total_s = t1 - t0, t2 - t1, t2 - t0
            r.rows = len(rows)
            r.ok = True
            if measure:
                r.metrics = collect_metrics(df, window.stop(), FACT_PARTITIONS,
                                            self.data_dir).to_dict()
                if mode == "dpp" and self._dpp is not None and self._dpp.last_report is not None:
                    r.dpp_report = self._dpp.last_report.to_dict()
            if self.reference is not None:
                problem = compare_rows(rows, self.reference.rows(q), limit=q.limit,
                                       full=lambda: self.reference.rows(q, unlimited=True))
                r.correct = problem is None
                r.mismatch = problem
        except Exception as e:
            r.ok = False
            r.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:500] if str(e).strip() else ''}"
            log.debug("%s/%s/%s failed:\n%s", q.name, mode, kind, traceback.format_exc())
        finally:
            drop_views(spark, TABLES)
            if kind == "catalog":
                spark.catalog.setCurrentDatabase("default")
        return r


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


def run_bench(spark: Any, cfg: BenchConfig, progress: Optional[Progress] = None
              ) -> dict[str, Any]:
    """Runs the benchmark and returns everything ``results.json`` holds."""
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
        if m == "dpp":
            ok, why = dpp_available()
            if not ok:
                unavailable[m] = why or "unavailable"
                say(f"mode dpp unavailable ({why}); continuing without it")
                continue
        modes.append(m)

    reference = DuckDBReference(cfg.data_dir) if cfg.check else None
    runs: list[Run] = []
    started = time.time()
    try:
        if reference is not None:
            t = time.perf_counter()
            for q in queries:
                reference.rows(q)
            say(f"duckdb reference answers for {len(queries)} queries in "
                f"{time.perf_counter() - t:.1f}s")
        for kind in cfg.table_kinds:
            db = (ensure_catalog_tables(spark, cfg.data_dir, say,
                                       {t for q in queries for t in q.tables()})
                  if kind == "catalog" else None)
            runner = Runner(spark, cfg.data_dir, reference, db)
            if cfg.warmup and modes:
                for q in queries:   # unmeasured: JIT, page cache and metastore warm for all
                    w = runner.run(q, modes[0], kind, rep=-1, measure=False)
                    say(f"warm-up {kind} {q.name}: {'ok' if w.ok else w.error}")
            for rep in range(cfg.repeat):
                for qi, q in enumerate(queries):
                    k = (qi + rep) % len(modes) if modes else 0
                    order = modes[k:] + modes[:k]     # rotate: no mode is always first
                    for mode in order:
                        r = runner.run(q, mode, kind, rep)
                        runs.append(r)
                        say(_run_line(r))
    finally:
        if reference is not None:
            reference.close()
    result = {
        "config": asdict(cfg),
        "started": started,
        "finished": time.time(),
        "environment": _environment(spark),
        "data": {"sf": manifest.get("sf"), "generator": manifest.get("generator"),
                 "tables": manifest.get("tables")},
        "modes": modes,
        "unavailable_modes": unavailable,
        "untranslated_queries": untranslated,
        "runs": [r.to_dict() for r in runs],
    }
    from tpcds.report import summarize

    result["summary"] = summarize(result)
    return result


def _run_line(r: Run) -> str:
    if not r.ok:
        return f"{r.kind:<7} {r.query:<5} {r.mode:<5} ERROR {r.error}"
    m = r.metrics
    flag = "" if r.correct in (True, None) else f"  MISMATCH: {r.mismatch}"
    return (f"{r.kind:<7} {r.query:<5} {r.mode:<5} total {r.total_s:7.2f}s "
            f"(list {r.listing_s:6.2f}s, exec {r.execution_s:6.2f}s) "
            f"cpu {m.get('executor_cpu_ms', 0) / 1000:7.2f}s "
            f"fact read {m.get('fact_bytes_read', 0) / 1e6:9.1f} MB "
            f"files {m.get('fact_files_read', 0)}/{m.get('fact_files_listed', 0)} listed{flag}")


def _environment(spark: Any) -> dict[str, Any]:
    conf = {k: v for k, v in spark.sparkContext.getConf().getAll()
            if k.startswith(("spark.sql.", "spark.master", "spark.driver.memory",
                             "spark.executor.memory", "spark.dpp."))}
    return {"spark": spark.version, "python": platform.python_version(),
            "machine": platform.machine(), "cpus": os.cpu_count(), "conf": conf}


def failures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs that erred or whose rows differ from DuckDB's: each one fails the command."""
    return [r for r in result["runs"] if not r["ok"] or r.get("correct") is False]


def write_outputs(result: dict[str, Any], out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """results.json, report.md and chart.png in ``out_dir``."""
    from tpcds.report import render_markdown, render_chart

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "md": out / "report.md", "chart": out / "chart.png"}
    paths["json"].write_text(json.dumps(result, indent=2, default=str))
    paths["md"].write_text(render_markdown(result))
    render_chart(result, paths["chart"])
    return paths
