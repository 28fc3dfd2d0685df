"""Parquet footers: a bounded, thread-safe cache and the statistics test.

A file is skipped only when :func:`cannot_match` says so: every row group's min/max and null
count rule out every value the domain allows. Anything unknown (no statistics, a value that does
not convert to the column's type, a nested column) answers "might match".
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Callable, Mapping, Optional

from dpp.core.domain import Domain

__all__ = ["FooterCache", "read_footer", "might_match", "cannot_match"]

log = logging.getLogger(__name__)


class FooterCache:
    """LRU cache of Parquet footers keyed by (path, size, mtime_ns, change); safe across
    threads.

    Size and modification time alone do not show a file unchanged (rewritten in place with the
    same size, its modification time set back): ``change`` is the storage's proof beyond them
    (a local file's inode and change time), and a file without one is never served from here
    (:func:`read_footer`). ``max_entries`` bounds memory (a footer is a few KB per row group
    and column).
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._items: "OrderedDict[tuple, Any]" = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> Optional[Any]:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: tuple, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def read_footer(path: str, size: int, mtime_ns: int, cache: Optional[FooterCache],
                reader: Optional[Callable[[str, int], Any]] = None,
                change: Optional[tuple] = None) -> Any:
    """The file's ``pyarrow.parquet.FileMetaData``, from the cache when shown unchanged.

    ``reader(path, size)`` reads it (a lister's ``read_footer``: local or through Hadoop);
    default: pyarrow on a local path. ``change`` is the listing's proof beyond size and time
    (:class:`hive_splits.listing.FileEntry`); without one the cache is neither read nor
    filled. Raises whatever it raises for an unreadable file; the loader keeps such files.
    """
    if change is None:
        cache = None
    key = (path, size, mtime_ns, change)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    if reader is None:
        import pyarrow.parquet as pq

        meta = pq.read_metadata(path)
    else:
        meta = reader(path, size)
    if cache is not None:
        cache.put(key, meta)
    return meta


def _column_index(meta: Any) -> dict[str, int]:
    """Top-level, non-nested columns by name → column chunk index."""
    schema = meta.schema
    out = {}
    for i in range(meta.num_columns):
        p = schema.column(i).path
        if "." not in p:
            out[p] = i
    return out


def _row_group_might_match(rg: Any, idx: int, domain: Domain) -> bool:
    col = rg.column(idx)
    stats = col.statistics
    if stats is None:
        return True
    num_values = rg.num_rows
    null_count = stats.null_count if stats.has_null_count else None
    if domain.null_allowed and (null_count is None or null_count > 0):
        return True
    if not stats.has_min_max:
        # no min/max: either all NULL (then only NULL could match, ruled out above) or unknown
        return not (null_count is not None and null_count == num_values)
    try:
        return domain.overlaps(stats.min, stats.max)
    except Exception:  # a value the domain's type cannot take: stay sound
        return True


def might_match(meta: Any, domains: Mapping[str, Domain]) -> bool:
    """Whether any row of the file might satisfy every column's domain (AND)."""
    if not domains:
        return True
    index = _column_index(meta)
    # a constrained column the footer lacks (or holds nested) is not used: Spark may match
    # names case-insensitively or fill it with NULLs; either way we cannot rule the file out
    usable = {c: index[c] for c in domains if c in index}
    if not usable:
        return True
    if meta.num_row_groups == 0:
        return meta.num_rows != 0  # an empty file has no matching row
    for r in range(meta.num_row_groups):
        rg = meta.row_group(r)
        if all(_row_group_might_match(rg, i, domains[c]) for c, i in usable.items()):
            return True
    return False


def cannot_match(meta: Any, domains: Mapping[str, Domain]) -> bool:
    """The negation of :func:`might_match`: the file may be skipped."""
    return not might_match(meta, domains)
