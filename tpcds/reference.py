"""DuckDB's answers over the same Parquet files, and the row comparison every mode must pass.

The reference reads the very files Spark reads (``read_parquet(..., hive_partitioning=true)``),
not DuckDB's in-memory tables, so a layout or type problem in the files shows up as a
difference instead of being hidden.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import logging
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import sqlglot

from tpcds.generate import FACT_PARTITIONS, TABLES, _sql_str

log = logging.getLogger(__name__)

#: Absolute and relative tolerance for numbers: Spark keeps decimals where DuckDB averages
#: into doubles, so the last digits of averages and ratios legitimately differ.
ABS_TOL = 1e-4
REL_TOL = 1e-6


class DuckDBReference:
    """DuckDB tables loaded from ``data_dir``'s Parquet files; answers cached per query.

    The tables are loaded once (``CREATE TABLE … AS SELECT * FROM read_parquet(…)``) rather
    than kept as views: a view over a fact table of ten thousand Hive folders opens every
    file's footer again in every query, which made the reference answers for the 99 queries
    at scale 1 take longer than the benchmark itself. The rows still come from the very files
    Spark reads. ``materialize=False`` keeps views (small data, or memory to spare).
    """

    def __init__(self, data_dir: str | os.PathLike[str], threads: Optional[int] = None,
                 materialize: bool = True) -> None:
        from tpcds.generate import connect

        self.data_dir = Path(data_dir)
        self.con = connect(threads)
        what = "TABLE" if materialize else "VIEW"
        for t in TABLES:
            folder = self.data_dir / t
            if not folder.is_dir():
                continue
            g = _sql_str(str(folder / "**" / "*.parquet"))
            hive = "true" if t in FACT_PARTITIONS else "false"
            self.con.execute(f"CREATE OR REPLACE {what} {t} AS SELECT * FROM "
                             f"read_parquet('{g}', hive_partitioning={hive})")
        self._cache: dict[tuple[str, bool], list[tuple[Any, ...]]] = {}

    def rows(self, query: Any, unlimited: bool = False) -> list[tuple[Any, ...]]:
        """DuckDB's rows for a :class:`tpcds.queries.Query` (without its outer LIMIT if asked)."""
        key = (query.name, unlimited)
        if key not in self._cache:
            sql = _without_limit(query.duckdb_sql) if unlimited else query.duckdb_sql
            self._cache[key] = [tuple(r) for r in self.con.execute(sql).fetchall()]
        return self._cache[key]

    def close(self) -> None:
        self.con.close()


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
