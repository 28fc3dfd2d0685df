"""DuckDB's answers over the same Parquet files, and the row comparison every mode must pass.

The reference reads the very files Spark reads (views over ``read_parquet(...,
hive_partitioning=true)``), so a layout or type problem in the files shows up as a difference
instead of being hidden. It must answer at any scale on the machine that runs the benchmark:

* **bounded memory**: DuckDB's ``memory_limit`` (default :data:`DEFAULT_MEMORY_LIMIT`, or
  ``TPCDS_REFERENCE_MEMORY``) with a temporary directory to spill to, one query at a time,
  over views. Loading the tables (``CREATE TABLE … AS``, the old way) holds the whole data set
  in memory: at scale 10 it grew the benchmark process past 20 GB before a query ran.
* **answers cached next to the data** (:data:`CACHE_DIR` inside the data folder, one JSON file
  per query and kind of answer): the file name carries the scale, layout and query, and a key
  over the data's identity (its ``manifest.json``: scale, layout, generator, rows and files per
  table), the DuckDB version and the SQL text. A regenerated data set, another DuckDB or
  another query text misses the cache; a second benchmark over the same data computes nothing.
  Views re-read every file's footer in every query (slower than loaded tables at scale 1);
  DuckDB's Parquet metadata cache keeps the footers within one run, the answer cache across
  runs.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import decimal
import hashlib
import json
import logging
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import sqlglot

from tpcds.generate import FACT_PARTITIONS, TABLES, _sql_str, read_manifest

log = logging.getLogger(__name__)

#: Absolute and relative tolerance for numbers: Spark keeps decimals where DuckDB averages
#: into doubles, so the last digits of averages and ratios legitimately differ.
ABS_TOL = 1e-4
REL_TOL = 1e-6

#: DuckDB's memory limit for the reference: the benchmark's Spark driver (6 GB) runs beside
#: it, and at scale 10 the twelve-query subset answers within it by spilling.
DEFAULT_MEMORY_LIMIT = "4GB"
MEMORY_ENV = "TPCDS_REFERENCE_MEMORY"
#: the answer cache, inside the data folder (a leading ``_``: Spark and Hive skip it)
CACHE_DIR = "_reference_cache"
#: bumped when the cache files' format changes, so old files miss
CACHE_FORMAT = 1

Row = tuple[Any, ...]


class DuckDBReference:
    """DuckDB's answers to TPC-DS queries over ``data_dir``'s Parquet files.

    Views, a memory limit and a spill directory bound the memory at any scale; answers are
    cached in memory and, with ``cache`` (default), on disk next to the data. The DuckDB
    connection opens on the first answer not cached, so a fully cached run never starts DuckDB.
    ``materialize=True`` loads the tables instead of views (the old way: fast for many queries
    at small scale, memory proportional to the data; it fails when the data does not fit in
    ``memory_limit``).
    """

    def __init__(self, data_dir: str | os.PathLike[str], threads: Optional[int] = None,
                 materialize: bool = False, memory_limit: Optional[str] = None,
                 cache: bool = True) -> None:
        self.data_dir = Path(data_dir)
        self.threads = threads
        self.materialize = materialize
        self.memory_limit = memory_limit or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY_LIMIT
        self._identity = _data_identity(self.data_dir) if cache else None
        if cache and self._identity is None:
            log.info("no manifest in %s: reference answers are not cached on disk", data_dir)
        self._con: Any = None
        self._spill: Optional[Path] = None
        self._answers: dict[tuple[str, bool], list[Row]] = {}
        #: how the answers came: "cache" (read from disk) or "duckdb" (computed), per key
        self.sources: dict[tuple[str, bool], str] = {}
        #: seconds DuckDB spent per computed answer
        self.seconds: dict[tuple[str, bool], float] = {}

    # ------------------------------------------------------------------ connection

    @property
    def con(self) -> Any:
        """The DuckDB connection (opened on first use): views or tables over every table."""
        if self._con is None:
            self._con = self._connect()
        return self._con

    def _connect(self) -> Any:
        from tpcds.generate import connect

        con = connect(self.threads)
        base = self.cache_dir if self._identity is not None else None
        if base is not None:
            try:
                base.mkdir(parents=True, exist_ok=True)
            except OSError:
                base = None
        self._spill = Path(tempfile.mkdtemp(prefix="duckdb-spill-",
                                            dir=str(base) if base is not None else None))
        con.execute(f"SET memory_limit = '{_sql_str(self.memory_limit)}'")
        con.execute(f"SET temp_directory = '{_sql_str(str(self._spill))}'")
        # order of rows is never relied on (answers are compared as multisets), and keeping
        # it makes DuckDB buffer more
        con.execute("SET preserve_insertion_order = false")
        # footers read once per connection, not once per query (tens of thousands of files)
        con.execute("SET parquet_metadata_cache = true")
        what = "TABLE" if self.materialize else "VIEW"
        for t in TABLES:
            folder = self.data_dir / t
            if not folder.is_dir():
                continue
            g = _sql_str(str(folder / "**" / "*.parquet"))
            hive = "true" if t in FACT_PARTITIONS else "false"
            con.execute(f"CREATE OR REPLACE {what} {t} AS SELECT * FROM "
                        f"read_parquet('{g}', hive_partitioning={hive})")
        return con

    # ------------------------------------------------------------------ answers

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / CACHE_DIR

    def rows(self, query: Any, unlimited: bool = False) -> list[Row]:
        """DuckDB's rows for a :class:`tpcds.queries.Query` (without its outer LIMIT if asked):
        from memory, else from the disk cache, else computed (and then cached)."""
        key = (query.name, unlimited)
        if key in self._answers:
            return self._answers[key]
        sql = _without_limit(query.duckdb_sql) if unlimited else query.duckdb_sql
        path = self._cache_path(query.name, unlimited, sql)
        found = _read_answer(path) if path is not None else None
        if found is not None:
            self.sources[key] = "cache"
        else:
            t = time.perf_counter()
            found = [tuple(r) for r in self.con.execute(sql).fetchall()]
            self.seconds[key] = time.perf_counter() - t
            self.sources[key] = "duckdb"
            if path is not None:
                _write_answer(path, query.name, unlimited, sql, found)
        self._answers[key] = found
        return found

    def problem(self, query: Any, got: Iterable[Sequence[Any]]) -> Optional[str]:
        """None when ``got`` are the query's rows by DuckDB (:func:`compare_rows`, the outer
        LIMIT's ties checked against the rows without it), else a one-line reason."""
        return compare_rows(got, self.rows(query), limit=query.limit,
                            full=lambda: self.rows(query, unlimited=True))

    def _cache_path(self, name: str, unlimited: bool, sql: str) -> Optional[Path]:
        """``<data>/_reference_cache/sf<scale>-<layout>-<query>-<limit|full>-<key>.json``;
        the key hashes the data's identity, the DuckDB version and the SQL."""
        if self._identity is None:
            return None
        import duckdb

        ident, sf, layout = self._identity
        key = hashlib.sha256("\n".join(
            [str(CACHE_FORMAT), ident, duckdb.__version__, sql]).encode()).hexdigest()[:16]
        kind = "full" if unlimited else "limit"
        return self.cache_dir / f"sf{sf:g}-{layout}-{name}-{kind}-{key}.json"

    def release(self) -> None:
        """Closes DuckDB (its buffers and spill files go); answers stay, and a later answer
        not yet known opens it again."""
        if self._con is not None:
            self._con.close()
            self._con = None
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None

    def close(self) -> None:
        self.release()

    def __enter__(self) -> "DuckDBReference":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _data_identity(data_dir: Path) -> Optional[tuple[str, float, str]]:
    """(hash of the manifest, scale, layout name) or None without a manifest. The whole
    manifest is hashed: regenerating writes new row counts, files and timings, so answers
    of an earlier data set are never served for a new one."""
    m = read_manifest(data_dir)
    if m is None:
        return None
    text = json.dumps(m, sort_keys=True, default=str)
    layout = (m.get("layout") or {}).get("name", "default")
    safe = "".join(c if c.isalnum() else "_" for c in str(layout))
    return hashlib.sha256(text.encode()).hexdigest(), float(m.get("sf") or 0), safe


# ------------------------------------------------------------------ the cache files

def _encode(v: Any) -> Any:
    """A value as JSON that decodes to the same Python value (type included)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"$": "float", "v": repr(v)}
    if isinstance(v, decimal.Decimal):
        return {"$": "decimal", "v": str(v)}
    if isinstance(v, _dt.datetime):
        return {"$": "datetime", "v": v.isoformat()}
    if isinstance(v, _dt.date):
        return {"$": "date", "v": v.isoformat()}
    if isinstance(v, _dt.time):
        return {"$": "time", "v": v.isoformat()}
    raise TypeError(f"cannot cache a value of type {type(v).__name__}")


_DECODE: dict[str, Callable[[str], Any]] = {
    "float": float, "decimal": decimal.Decimal, "datetime": _dt.datetime.fromisoformat,
    "date": _dt.date.fromisoformat, "time": _dt.time.fromisoformat}


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        return _DECODE[v["$"]](v["v"])
    return v


def _read_answer(path: Path) -> Optional[list[Row]]:
    """The cached rows at ``path``; None when absent or unreadable (then recomputed)."""
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        return [tuple(_decode(v) for v in r) for r in doc["rows"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("unreadable reference answer %s (%s): recomputing", path, e)
        return None


def _write_answer(path: Path, name: str, unlimited: bool, sql: str, rows: list[Row]) -> None:
    """Writes the answer (temporary name, then rename: concurrent runs never read half a
    file) and removes this query's answers under older keys. A data folder that cannot be
    written only means no cache."""
    try:
        doc = {"format": CACHE_FORMAT, "query": name, "unlimited": unlimited, "sql": sql,
               "rows": [[_encode(v) for v in r] for r in rows]}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)
        stem = path.name.rsplit("-", 1)[0] + "-"
        for old in path.parent.glob(f"{stem}*.json"):
            if old != path:
                old.unlink(missing_ok=True)
    except (OSError, TypeError) as e:
        log.warning("reference answer of %s not cached (%s)", name, e)


def _without_limit(sql: str) -> str:
    tree = sqlglot.parse_one(sql, read="duckdb")
    tree.set("limit", None)
    return tree.sql(dialect="duckdb")


def _norm(v: Any) -> Any:
    """A value in a form both engines' answers share (numbers as floats, dates as dates)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float, decimal.Decimal)):
        f = float(v)
        return f if not math.isnan(f) else "NaN"
    if isinstance(v, _dt.datetime):
        return v.replace(tzinfo=None)
    if isinstance(v, str):
        return v
    return v


def _sort_key(row: Sequence[Any]) -> tuple[Any, ...]:
    """Orders rows the same way on both sides; numbers are rounded so noise cannot reorder."""
    key = []
    for v in row:
        if v is None:
            key.append((0, ""))
        elif isinstance(v, float):
            key.append((1, round(v, 2)))
        else:
            key.append((2, str(v)))
    return tuple(key)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def _same_rows(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> Optional[str]:
    """None when the two row lists are the same multiset (within tolerance), else why not."""
    if len(a) != len(b):
        return f"{len(a)} rows, expected {len(b)}"
    na = sorted(([_norm(v) for v in r] for r in a), key=_sort_key)
    nb = sorted(([_norm(v) for v in r] for r in b), key=_sort_key)
    for i, (ra, rb) in enumerate(zip(na, nb)):
        if len(ra) != len(rb):
            return f"{len(ra)} columns, expected {len(rb)}"
        if not all(_same_value(x, y) for x, y in zip(ra, rb)):
            return f"row {i} (sorted) differs: got {tuple(ra)!r}, expected {tuple(rb)!r}"
    return None


def _contained(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> bool:
    """Whether multiset ``a`` is inside ``b`` (rounded values: a LIMIT may cut any tie)."""
    def key(r: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(round(x, 2) if isinstance(x, float) else x for x in (_norm(v) for v in r))

    cb = Counter(key(r) for r in b)
    ca = Counter(key(r) for r in a)
    return all(cb[k] >= n for k, n in ca.items())


def compare_rows(got: Iterable[Sequence[Any]], expected: Sequence[Sequence[Any]], *,
                 limit: Optional[int] = None,
                 full: Optional[Callable[[], Sequence[Sequence[Any]]]] = None) -> Optional[str]:
    """None if ``got`` matches DuckDB's ``expected`` rows; otherwise a one-line reason.

    Rows are compared as sorted multisets with a numeric tolerance. When the query ends in
    ``ORDER BY … LIMIT n`` and n rows came back, ties at the cut may legitimately differ
    between engines; then ``got`` passes if it has the right size and every row is a row of
    DuckDB's unlimited answer (``full``).
    """
    got = [tuple(r) for r in got]
    problem = _same_rows(got, expected)
    if problem is None:
        return None
    if limit is not None and full is not None and len(got) == len(expected) == limit:
        if _contained(got, full()):
            log.info("rows differ only in ties cut by LIMIT %d", limit)
            return None
    return problem


# ------------------------------------------------------------------ modes against each other

def baseline_mode(modes: Sequence[str]) -> str:
    """The mode whose rows the others are compared with when DuckDB's answers are not
    computed (``--no-check``): Spark's own (``spark``), else ``off``, else the first."""
    for m in ("spark", "off"):
        if m in modes:
            return m
    return modes[0]


def modes_agree(runs: Sequence[tuple[str, int, Optional[Sequence[Sequence[Any]]]]],
                baseline: str, limit: Optional[int] = None
                ) -> list[tuple[Optional[bool], Optional[str]]]:
    """Without DuckDB: each run's rows (``(mode, repetition, rows)``, rows None for a run that
    failed) against the first rows of ``baseline`` (or, when that mode has none, of the first
    run with rows). Per run: ``(True, None)``; ``(False, why)``; ``(None, why)`` when both
    answers are cut at the query's LIMIT and differ, where two plans may break ties
    differently and only an unlimited answer could tell; ``(None, None)`` for a failed run.

    Agreement is not correctness: every mode may be wrong alike. It catches the wrong answers
    one mode alone gives, which is what pruning can cause.
    """
    base = next(((m, rep, rows) for m, rep, rows in runs if m == baseline and rows is not None),
                next(((m, rep, rows) for m, rep, rows in runs if rows is not None), None))
    out: list[tuple[Optional[bool], Optional[str]]] = []
    for mode, rep, rows in runs:
        if rows is None or base is None:
            out.append((None, None))
            continue
        got = [tuple(r) for r in rows]
        problem = _same_rows(got, base[2])
        if problem is None:
            out.append((True, None))
        elif limit is not None and len(got) == len(base[2]) == limit:
            out.append((None, f"differs from {base[0]}'s rows (repetition {base[1]}), both "
                              f"cut at LIMIT {limit}: ties may differ; not judged without "
                              f"DuckDB ({problem})"))
        else:
            out.append((False, f"differs from {base[0]}'s rows (repetition {base[1]}): "
                               f"{problem}"))
    return out


# ------------------------------------------------------------------ command line

def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m tpcds.reference --data D --queries q3,q7``: computes (or reads from the
    cache) DuckDB's answers, one query at a time, and prints the process's peak memory."""
    from tpcds.queries import load_queries, select_queries

    p = argparse.ArgumentParser(prog="python -m tpcds.reference", description=main.__doc__)
    p.add_argument("--data", required=True, help="generated data folder")
    p.add_argument("--queries", default="all", help="all, or e.g. q3,q7")
    p.add_argument("--memory-limit", default=None,
                   help=f"DuckDB memory_limit (default ${MEMORY_ENV} or {DEFAULT_MEMORY_LIMIT})")
    p.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    p.add_argument("--unlimited", action="store_true",
                   help="also the answers without the outer LIMIT (what ties are checked with)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--materialize", action="store_true",
                   help="load the tables into DuckDB first (the old way; memory ~ data)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    queries = [q for q in select_queries(args.queries, load_queries())]
    t0 = time.perf_counter()
    with DuckDBReference(args.data, threads=args.threads, materialize=args.materialize,
                         memory_limit=args.memory_limit, cache=not args.no_cache) as ref:
        for q in queries:
            for unlimited in ((False, True) if args.unlimited and q.limit else (False,)):
                t = time.perf_counter()
                rows = ref.rows(q, unlimited=unlimited)
                key = (q.name, unlimited)
                print(f"{q.name:<5} {'full ' if unlimited else 'limit'} {len(rows):>7} rows "
                      f"{ref.sources[key]:<6} {time.perf_counter() - t:7.2f}s "
                      f"peak rss {_peak_rss_mb():,.0f} MB", flush=True)
        print(f"{len(queries)} queries in {time.perf_counter() - t0:.1f}s; memory_limit "
              f"{ref.memory_limit}; peak RSS of this process {_peak_rss_mb():,.0f} MB")
    return 0


def _peak_rss_mb() -> float:
    """This process's peak resident memory (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
