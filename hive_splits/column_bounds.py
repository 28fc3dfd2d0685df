"""A data column's bounds over every file of a table, from the Parquet footers alone.

A join that compares two columns (``inventory.qty < sales.quantity``) can prune by the
build side's largest (or smallest) value; when that side is a whole table, nothing needs to
be scanned for it: the row groups' statistics bound every value it holds. The bounds are a
superset by construction (a row group's min and max enclose its values), so a row outside
them compares false with every row of the table. They are only as good as the file set:
every file of the table is listed here, at the query, as Spark lists it for its own scan.

Anything the statistics cannot vouch for gives no bounds at all (``None``): a row group with
values but no min/max, a file whose footer cannot be read, several columns answering to one
name, a type other than an integer or a date. A file without the column holds only NULLs
for it (Spark reads it so) and a row group of NULLs only has nothing to bound.
"""
from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from hive_splits.footers import FooterCache, read_footer
from hive_splits.listing import FileEntry

__all__ = ["ColumnBounds", "column_bounds", "BOUND_TYPES", "GREGORIAN"]

# the Spark types whose Parquet statistics compare as the values do (signed integers by
# their value, dates by their day number); not strings (collations, truncated statistics),
# floating types (NaN), decimals (a file's scale may differ from the table's) or timestamps
# (INT96 statistics are not ordered)
BOUND_TYPES = frozenset({"tinyint", "smallint", "int", "bigint", "date"})
# the first day after the Julian calendar's last (with a margin): no date from here on reads
# otherwise under Spark's legacy rebasing
GREGORIAN = dt.date(1583, 1, 1)


@dataclass(frozen=True)
class ColumnBounds:
    """The smallest and largest non-NULL value of a column over ``files`` files
    (``low``/``high`` None: no file holds a non-NULL value)."""

    low: Any
    high: Any
    files: int
    row_groups: int

    @property
    def empty(self) -> bool:
        return self.low is None


class _NoBounds(Exception):
    pass


def column_bounds(files: Iterable[FileEntry], column: str, type_name: str,
                  reader: Callable[[str, int], Any], cache: Optional[FooterCache] = None,
                  max_workers: int = 16) -> tuple[Optional[ColumnBounds], str]:
    """The bounds of ``column`` (Spark type ``type_name``) over ``files``, or None and why.
    ``max_workers`` footers are read at once (the lister's ``footer_workers``: few on a
    local disk, where parsing is the cost, many on a remote store)."""
    if type_name not in BOUND_TYPES:
        return None, f"type {type_name} (statistics bound integers and dates only)"
    entries = list(files)
    want = dt.date if type_name == "date" else int
    wanted = column.lower()

    def one(f: FileEntry) -> tuple[Any, Any, int]:
        meta = read_footer(f.path, f.size, f.mtime_ns, cache, reader, f.change)
        schema = meta.schema
        # the leaves' names in one call; only a leaf of that name can have the column's path
        # (a nested leaf of the same name has a longer one)
        found = [i for i, n in enumerate(schema.names)
                 if n.lower() == wanted and schema.column(i).path.lower() == wanted]
        if not found:
            return None, None, 0      # the file lacks the column: NULL for every row
        if len(found) > 1:
            raise _NoBounds(f"{f.path}: several columns named {column!r}")
        i = found[0]
        low = high = None
        groups = 0
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            if rg.num_rows == 0:
                continue
            groups += 1
            st = rg.column(i).statistics
            if st is not None and st.has_min_max:
                lo, hi = st.min, st.max
                if type(lo) is not want or type(hi) is not want:
                    raise _NoBounds(f"{f.path}: statistics of {column!r} are "
                                    f"{type(lo).__name__}, not {want.__name__}")
                low = lo if low is None or lo < low else low
                high = hi if high is None or hi > high else high
            elif st is not None and st.has_null_count and st.null_count == rg.num_rows:
                continue              # NULLs only: nothing to bound
            else:
                raise _NoBounds(f"{f.path}: row group {g} has no statistics for {column!r}")
        return low, high, groups

    low = high = None
    groups = 0
    try:
        if len(entries) <= 1:
            results = [one(f) for f in entries]
        else:
            with cf.ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(entries))),
                                       thread_name_prefix="dpp-bounds") as pool:
                results = list(pool.map(one, entries))
    except _NoBounds as exc:
        return None, str(exc)
    except Exception as exc:   # an unreadable footer: Spark's read will say what it is
        return None, f"footer unreadable: {type(exc).__name__}: {exc}"
    for lo, hi, n in results:
        groups += n
        if lo is not None:
            low = lo if low is None or lo < low else low
            high = hi if high is None or hi > high else high
    if want is dt.date and low is not None and low < GREGORIAN:
        # a file written in Spark's legacy calendar may be rebased as Spark reads it: its
        # values are then not the statistics' own
        return None, f"a date before {GREGORIAN.isoformat()} ({low.isoformat()})"
    return ColumnBounds(low, high, len(entries), groups), ""
