"""TPC-DS data as Hive-partitioned Parquet, from DuckDB's ``dsdgen``.

Why DuckDB: its TPC-DS extension ships as a pinned wheel (``duckdb-extension-tpcds``), so data
generation needs no network, no C toolchain and gives the same rows on every machine. The
extension file inside that wheel is ``LOAD``-ed by path, never ``INSTALL``-ed from the network.

Layout (the Trino benchmark's): the six fact tables are partitioned by their date key, NULL keys
in ``__HIVE_DEFAULT_PARTITION__`` (DuckDB's name for it is Spark's too); dimensions and
``inventory`` are one plain Parquet folder each. A ``manifest.json`` in the output folder records
scale, generator versions, layout and row counts, so a second run skips tables already written;
every table's count is read back from its Parquet files and compared with the generator's.

Layout ``clustered`` (issue 15: file and row-group statistics that a join key can prune by)
writes the three sales facts with each date partition's rows sorted by the item key, in several
files of at most ``rows_per_file`` rows and row groups of at most ``row_group_rows``: the files
of a partition then cover disjoint item-key ranges. Same rows as the default layout; the other
tables are written as in the default layout.

Layout ``bucketed`` (issue 15: dynamic bucket pruning) writes the same three facts with Spark's
own ``bucketBy(buckets, item key)`` under the date partitioning (files named with their bucket
id, rows placed by Spark's hash), from the default layout's files, so the rows are the same;
``tpcds bench --table-kind catalog`` then declares them ``CLUSTERED BY (key) INTO n BUCKETS``.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1

#: fact table → its partition column (as in the Trino TPC-DS benchmark).
FACT_PARTITIONS: dict[str, str] = {
    "store_sales": "ss_sold_date_sk",
    "store_returns": "sr_returned_date_sk",
    "catalog_sales": "cs_sold_date_sk",
    "catalog_returns": "cr_returned_date_sk",
    "web_sales": "ws_sold_date_sk",
    "web_returns": "wr_returned_date_sk",
}

#: fact table → the join key its partitions are sorted by in the ``clustered`` layout.
CLUSTER_KEYS: dict[str, str] = {
    "store_sales": "ss_item_sk",
    "catalog_sales": "cs_item_sk",
    "web_sales": "ws_item_sk",
}

#: every table dsdgen writes (``reason`` included: query 9 reads it).
TABLES: tuple[str, ...] = (
    "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer",
    "customer_address", "customer_demographics", "date_dim", "household_demographics",
    "income_band", "inventory", "item", "promotion", "reason", "ship_mode", "store",
    "store_returns", "store_sales", "time_dim", "warehouse", "web_page", "web_returns",
    "web_sales", "web_site",
)

Progress = Callable[[str], None]

#: DuckDB's memory bound while generating (``--memory-limit``, or this environment variable).
#: Generation keeps the generator's tables in a database file beside the output and spills
#: past the bound, so scale 10 fits a 24 GB machine with room for Spark (an in-memory
#: database and DuckDB's default partitioned writers grew past 19 GB there).
MEMORY_ENV = "TPCDS_GENERATE_MEMORY"
DEFAULT_MEMORY_LIMIT = "4GB"
WORK_DIR = ".dsdgen"     # inside the output folder: the generator's database, spill files
# Partitioned COPY: DuckDB buffers up to ``flush_threshold`` rows per open partition writer
# (defaults 524,288 rows x 100 files), and past ``max_open_files`` it closes a writer and
# opens a *new file* when that partition gets rows again: a fact's ~1,800 date partitions in
# one COPY gave store_sales 95,865 files at SF10 with the defaults, and 700,000 with 32 open
# files. So a fact is written in chunks of :data:`_CHUNK_PARTITIONS` partitions (one COPY
# each, every writer of a chunk open at once: one file per partition and thread), and the
# buffers stay small enough for a chunk's writers to fit the memory bound.
_CHUNK_PARTITIONS = 256
_WRITE_SETTINGS = {"preserve_insertion_order": "false",
                   "partitioned_write_max_open_files": str(_CHUNK_PARTITIONS + 8),
                   "partitioned_write_flush_threshold": "65536"}


class GenerateError(RuntimeError):
    """Generation failed or wrote something other than what the generator produced."""


LAYOUTS = ("default", "clustered", "bucketed")


@dataclass(frozen=True)
class Layout:
    """How the fact tables are laid out on disk; recorded in the manifest.

    ``default``: one DuckDB-written file per date partition, rows in generator order.
    ``clustered``: the facts of :data:`CLUSTER_KEYS` sorted by that key inside each date
    partition, split into files of at most ``rows_per_file`` rows with row groups of at most
    ``row_group_rows`` (tight min/max per file and per row group).
    """

    name: str = "default"
    rows_per_file: int = 512
    row_group_rows: int = 128
    # bucketed: Spark's bucket count. 8 keeps a scale-1 partition's bucket files at ~200 rows
    # (store_sales: ~1,580 rows a day) while a handful of join keys still hits few buckets
    buckets: int = 8

    def __post_init__(self) -> None:
        if self.name not in LAYOUTS:
            raise GenerateError(f"layout must be one of {', '.join(LAYOUTS)}, got {self.name!r}")
        if self.rows_per_file < 1 or self.row_group_rows < 1:
            raise GenerateError(f"layout {self.name}: rows_per_file and row_group_rows must be "
                                f">= 1, got {self.rows_per_file} and {self.row_group_rows}")
        if self.buckets < 1:
            raise GenerateError(f"layout {self.name}: buckets must be >= 1, got {self.buckets}")

    def as_dict(self) -> dict[str, Any]:
        if self.name == "default":
            return {"name": "default"}
        if self.name == "bucketed":
            return {"name": "bucketed", "buckets": self.buckets,
                    "bucket_keys": dict(CLUSTER_KEYS)}
        return {"name": self.name, "rows_per_file": self.rows_per_file,
                "row_group_rows": self.row_group_rows, "cluster_keys": dict(CLUSTER_KEYS)}

    @staticmethod
    def of_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
        """The manifest's layout (manifests written before layouts existed are ``default``)."""
        return manifest.get("layout") or {"name": "default"}


@dataclass(frozen=True)
class Generator:
    """The pinned DuckDB + TPC-DS extension pair; versions go into the manifest."""

    duckdb_version: str
    extension_version: str
    extension_path: str

    def as_dict(self) -> dict[str, str]:
        return {"duckdb": self.duckdb_version, "tpcds_extension": self.extension_version}


def extension_path() -> Path:
    """The ``tpcds.duckdb_extension`` file shipped inside the installed wheel.

    The wheel has no Python API (its ``__init__`` is empty); the binary sits under
    ``extensions/v<duckdb version>/``. The one matching the running duckdb is preferred because
    DuckDB refuses extensions built for another version.
    """
    import duckdb
    import duckdb_extension_tpcds

    root = Path(duckdb_extension_tpcds.__file__).parent / "extensions"
    exact = root / f"v{duckdb.__version__}" / "tpcds.duckdb_extension"
    if exact.is_file():
        return exact
    found = sorted(root.glob("*/tpcds.duckdb_extension"))
    if not found:
        raise GenerateError(f"no tpcds.duckdb_extension under {root}: is duckdb-extension-tpcds "
                            "installed (pip install '.[tpcds]')?")
    log.warning("no extension for duckdb %s under %s; trying %s", duckdb.__version__, root,
                found[-1])
    return found[-1]


def connect(threads: Optional[int] = None, database: Optional[Path] = None,
            memory_limit: Optional[str] = None, temp_directory: Optional[Path] = None) -> Any:
    """A DuckDB connection with the TPC-DS extension loaded from the wheel (no network).

    ``database``: a file to hold the generated tables (in memory when None);
    ``memory_limit``/``temp_directory``: DuckDB's bound on its memory and where it spills
    beyond it."""
    import duckdb

    con = duckdb.connect(str(database) if database is not None else ":memory:",
                         config={"autoinstall_known_extensions": "false",
                                 "autoload_known_extensions": "false"})
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute(f"SET memory_limit = '{_sql_str(memory_limit)}'")
    if temp_directory is not None:
        temp_directory.mkdir(parents=True, exist_ok=True)
        con.execute(f"SET temp_directory = '{_sql_str(str(temp_directory))}'")
    path = extension_path()
    con.execute(f"LOAD '{_sql_str(str(path))}'")
    return con


def generator_info(con: Any) -> Generator:
    import duckdb

    row = con.execute("SELECT extension_version FROM duckdb_extensions() "
                      "WHERE extension_name = 'tpcds'").fetchone()
    return Generator(duckdb.__version__, str(row[0]) if row else "unknown", str(extension_path()))


def _sql_str(s: str) -> str:
    return s.replace("'", "''")


def read_manifest(out: str | os.PathLike[str]) -> Optional[dict[str, Any]]:
    """The manifest of ``out``, or None when there is none (or it is unreadable)."""
    p = Path(out) / MANIFEST
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        log.warning("unreadable manifest %s: regenerating", p)
        return None


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
    tmp.replace(out / MANIFEST)  # atomic: a crash never leaves half a manifest


def parquet_glob(out: str | os.PathLike[str], table: str) -> str:
    """The glob that reads every Parquet file of ``table`` (partitioned or not)."""
    return str(Path(out) / table / "**" / "*.parquet")


def count_parquet_rows(con: Any, out: str | os.PathLike[str], table: str) -> int:
    """Rows in the Parquet files of ``table``, read back (footers only, so cheap)."""
    g = _sql_str(parquet_glob(out, table))
    return int(con.execute(f"SELECT count(*) FROM read_parquet('{g}')").fetchone()[0])


def _copy_table(con: Any, table: str, dest: Path, layout: Layout = Layout()) -> None:
    """Writes one table into ``dest`` (a fresh folder), partitioned when it is a fact table."""
    if layout.name == "clustered" and table in CLUSTER_KEYS:
        _copy_clustered(con, table, dest, layout)
    elif layout.name == "bucketed" and table in CLUSTER_KEYS:
        _copy_bucketed(con, table, dest, layout)
    elif table in FACT_PARTITIONS:
        _copy_partitioned(con, table, dest, FACT_PARTITIONS[table])
    else:
        dest.mkdir(parents=True)
        con.execute(f"COPY {table} TO '{_sql_str(str(dest / 'part-0.parquet'))}' "
                    f"(FORMAT parquet, COMPRESSION snappy)")


def _copy_partitioned(con: Any, table: str, dest: Path, part: str) -> None:
    """A fact by its date key, :data:`_CHUNK_PARTITIONS` partitions per COPY (see
    :data:`_WRITE_SETTINGS`), the NULL partition last. DuckDB leaves the partition column out
    of the files (Hive style) and names NULL partitions __HIVE_DEFAULT_PARTITION__, which
    Spark reads back as NULL."""
    values = [int(r[0]) for r in con.execute(
        f"SELECT DISTINCT {part} FROM {table} WHERE {part} IS NOT NULL ORDER BY 1").fetchall()]
    chunks = [values[i:i + _CHUNK_PARTITIONS]
              for i in range(0, len(values), _CHUNK_PARTITIONS)]
    conds = [f"{part} BETWEEN {c[0]} AND {c[-1]}" for c in chunks] + [f"{part} IS NULL"]
    for cond in conds:
        if con.execute(f"SELECT count(*) FROM {table} WHERE {cond}").fetchone()[0] == 0:
            continue
        con.execute(f"COPY (SELECT * FROM {table} WHERE {cond}) TO '{_sql_str(str(dest))}' "
                    f"(FORMAT parquet, PARTITION_BY ({part}), COMPRESSION snappy, "
                    f"OVERWRITE_OR_IGNORE true)")
    if not dest.exists():   # no rows at all: an empty table is an empty folder
        dest.mkdir(parents=True)


def _copy_clustered(con: Any, table: str, dest: Path, layout: Layout) -> None:
    """A fact sorted by (partition, cluster key), one folder per partition value, each
    partition's rows in consecutive files of ``rows_per_file`` rows (so each file holds its own
    slice of the key range) and row groups of ``row_group_rows``. The partition column is left
    out of the files (Hive style), as in the default layout."""
    import numpy as np
    import pyarrow.parquet as pq

    from hive_splits.naming import DEFAULT_PARTITION_NAME

    part, key = FACT_PARTITIONS[table], CLUSTER_KEYS[table]
    data = con.execute(f"SELECT * FROM {table} ORDER BY {part} ASC NULLS LAST, "
                       f"{key} ASC NULLS LAST").fetch_arrow_table()
    pcol = data.column(part)
    rows = data.drop_columns([part])
    n_null = pcol.null_count
    n_valued = len(pcol) - n_null
    values = pcol.slice(0, n_valued).to_numpy()   # NULLS LAST: the valued rows come first
    starts = [0] + (np.flatnonzero(np.diff(values)) + 1).tolist() if n_valued else []
    runs = [(str(values[s]), s, (starts[i + 1] if i + 1 < len(starts) else n_valued))
            for i, s in enumerate(starts)]
    if n_null:
        runs.append((DEFAULT_PARTITION_NAME, n_valued, len(pcol)))
    dest.mkdir(parents=True)
    for value, start, end in runs:
        folder = dest / f"{part}={value}"
        folder.mkdir()
        for i, s in enumerate(range(start, end, layout.rows_per_file)):
            piece = rows.slice(s, min(layout.rows_per_file, end - s))
            pq.write_table(piece, folder / f"part-{i:05d}.parquet",
                           row_group_size=layout.row_group_rows, compression="snappy")


def _copy_bucketed(con: Any, table: str, dest: Path, layout: Layout) -> None:
    """The default layout's files, rewritten by Spark with ``bucketBy(buckets, key)`` under
    the same date partitioning: Spark's own writer, so bucket ids and file names are exactly
    what Spark's reader (and its literal bucket pruning) expects."""
    from pyspark.sql import SparkSession

    part, key = FACT_PARTITIONS[table], CLUSTER_KEYS[table]
    src = dest.parent / f".{table}.src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    # one file, the date key a column in it: Spark reads it without listing ~1,800 folders
    # (a partitioned source cost a fifth more here); the file name itself is not hidden
    con.execute(f"COPY {table} TO '{_sql_str(str(src / 'rows.parquet'))}' (FORMAT parquet, "
                f"COMPRESSION snappy)")
    spark = SparkSession.getActiveSession() or (
        SparkSession.builder.master("local[2]").appName("tpcds-generate")
        .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    name = f"tpcds_generate_{table}_{os.getpid()}"
    try:
        df = spark.read.parquet(str(src / "rows.parquet"))
        # one task per date partition: each partition gets at most `buckets` files
        (df.repartition(part).write.format("parquet").partitionBy(part)
         .bucketBy(layout.buckets, key).sortBy(key).option("path", str(dest))
         .option("compression", "snappy").saveAsTable(name))
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")   # external (a path): the files stay
        shutil.rmtree(src, ignore_errors=True)


def generate(sf: float, out: str | os.PathLike[str], *, force: bool = False,
             progress: Optional[Progress] = None, threads: Optional[int] = None,
             layout: Layout = Layout(), memory_limit: Optional[str] = None) -> dict[str, Any]:
    """Generates TPC-DS at scale ``sf`` into ``out`` and returns the manifest.

    Tables already recorded in a manifest of the same scale and generator are kept (unless
    ``force``); a manifest of another scale, generator or layout means the folder is
    rewritten. Raises :class:`GenerateError` naming the table when the rows read back differ
    from the generator's.

    Memory: the generator writes into a DuckDB database file under ``out/.dsdgen`` with
    ``memory_limit`` (default ``$TPCDS_GENERATE_MEMORY`` or :data:`DEFAULT_MEMORY_LIMIT`),
    spilling past it. An interrupted run keeps that database and the next run writes the
    missing tables from it instead of generating again; it is removed once every table is
    written.
    """
    if sf <= 0:
        raise GenerateError(f"scale factor must be > 0, got {sf}")
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda msg: log.info("%s", msg))
    work = outp / WORK_DIR
    limit = memory_limit or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY_LIMIT
    work.mkdir(exist_ok=True)
    try:
        con = connect(threads, database=work / "tpcds.duckdb", memory_limit=limit,
                      temp_directory=work / "spill")
    except Exception as exc:
        if "memory" in str(exc).lower() or "limit" in str(exc).lower():
            raise GenerateError(f"DuckDB rejects memory limit {limit!r} ({MEMORY_ENV} or "
                                f"--memory-limit): {exc}") from None
        raise
    for k, v in _WRITE_SETTINGS.items():
        con.execute(f"SET {k} = {v}")
    complete = False
    try:
        gen = generator_info(con)
        manifest = None if force else read_manifest(outp)
        if manifest is not None and (float(manifest.get("sf", -1)) != float(sf)
                                     or manifest.get("generator") != gen.as_dict()
                                     or manifest.get("format") != MANIFEST_FORMAT
                                     or Layout.of_manifest(manifest) != layout.as_dict()):
            log.warning("%s holds scale %s from %s, layout %s; rewriting for scale %s, layout "
                        "%s", outp, manifest.get("sf"), manifest.get("generator"),
                        Layout.of_manifest(manifest).get("name"), sf, layout.name)
            manifest = None
        if manifest is None:
            manifest = {"format": MANIFEST_FORMAT, "sf": sf, "generator": gen.as_dict(),
                        "layout": layout.as_dict(), "tables": {}, "complete": False}
        done: dict[str, Any] = manifest["tables"]
        todo = [t for t in TABLES if force or t not in done or not (outp / t).is_dir()]
        if not todo:
            say(f"tpcds sf={sf:g}: all {len(TABLES)} tables present in {outp} (manifest), skipped")
            complete = True
            return manifest
        marker = work / "generated.json"
        made = {"sf": float(sf), "generator": gen.as_dict()}
        if not force and _read_json(marker) == made and _has_tables(con):
            say(f"tpcds sf={sf:g}: the generator's tables from an earlier run are in {work}, "
                f"writing the {len(todo)} missing ones from them")
        else:
            say(f"tpcds sf={sf:g}: dsdgen (duckdb {gen.duckdb_version}, extension "
                f"{gen.extension_version}, memory limit {limit}) ...")
            marker.unlink(missing_ok=True)
            for table in TABLES:
                con.execute(f"DROP TABLE IF EXISTS {table}")
            t0 = time.perf_counter()
            con.execute(f"CALL dsdgen(sf={float(sf)!r})")
            con.execute("CHECKPOINT")
            marker.write_text(json.dumps(made))
            manifest["dsdgen_seconds"] = round(time.perf_counter() - t0, 3)
        for i, table in enumerate(todo, 1):
            t1 = time.perf_counter()
            say(f"[{i}/{len(todo)}] {table}: writing ...")
            expected = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            dest = outp / table
            tmp = outp / f".{table}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                _copy_table(con, table, tmp, layout)
            except Exception as exc:
                if type(exc).__name__ != "OutOfMemoryException":
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
                raise GenerateError(
                    f"table {table}: DuckDB ran out of its memory limit {limit} writing it "
                    f"(--memory-limit or ${MEMORY_ENV} raises it; a partitioned table needs "
                    f"about 0.5 MB per partition folder); the generator's tables stay in "
                    f"{work}, and a rerun writes the missing tables from them") from None
            got = count_parquet_rows(con, tmp, table="")  # tmp is the table folder itself
            if got != expected:
                shutil.rmtree(tmp, ignore_errors=True)
                raise GenerateError(f"table {table}: wrote {got} rows to Parquet but the "
                                    f"generator produced {expected}")
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
            files = sum(1 for _ in dest.rglob("*.parquet"))
            entry: dict[str, Any] = {"rows": expected, "files": files,
                                     "seconds": round(time.perf_counter() - t1, 3)}
            if table in FACT_PARTITIONS:
                entry["partition_column"] = FACT_PARTITIONS[table]
                entry["partitions"] = sum(1 for p in dest.iterdir() if p.is_dir())
            done[table] = entry
            manifest["complete"] = all(t in done for t in TABLES)
            _write_manifest(outp, manifest)  # after each table: an interrupted run resumes
            say(f"[{i}/{len(todo)}] {table}: {expected:,} rows, {files} files "
                f"({entry['seconds']:.1f}s)")
        manifest["complete"] = True
        _write_manifest(outp, manifest)
        complete = True
        return manifest
    finally:
        con.close()
        if complete:
            shutil.rmtree(work, ignore_errors=True)   # the generator's database: GBs at scale


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _has_tables(con: Any) -> bool:
    """Whether the generator's database holds every table (an earlier run got that far)."""
    names = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    return set(TABLES) <= names


def verify(out: str | os.PathLike[str]) -> dict[str, int]:
    """Re-counts every table in ``out`` against its manifest; raises naming a mismatch."""
    manifest = read_manifest(out)
    if manifest is None:
        raise GenerateError(f"no {MANIFEST} in {out}: run `tpcds generate` first")
    con = connect()
    try:
        counts = {}
        for table, entry in manifest["tables"].items():
            got = count_parquet_rows(con, out, table)
            if got != entry["rows"]:
                raise GenerateError(f"table {table}: {got} rows in {Path(out) / table}, "
                                    f"manifest says {entry['rows']}")
            counts[table] = got
        return counts
    finally:
        con.close()


@functools.lru_cache(maxsize=None)
def _ensure_cached(sf: float, out: str) -> str:
    return json.dumps(generate(sf, out))


def ensure_generated(sf: float, out: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of scale ``sf`` in ``out``, generating it first if needed.

    Cached per process (the demo and the bench may both ask); across processes the manifest
    makes the second call cheap.
    """
    return json.loads(_ensure_cached(float(sf), str(Path(out).resolve())))
