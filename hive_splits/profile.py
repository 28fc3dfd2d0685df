"""Can Parquet statistics on a column prune a table's files? Judged from a few footers.

Statistics pruning (``spark.dpp.statsPruning.enabled``) reads one footer per kept file and
skips a file when its min/max rule out the dynamic filter's values. That pays only where
files hold narrow slices of the column (data sorted or clustered by it); on files written in
arrival order every file spans nearly the whole key range, nothing can be skipped, and the
build side plus the footer reads are pure cost. ``auto`` decides per table and column from a
sample, before any build side is started:

* a handful of files spread over the table's partitions (first, middle, last partitions:
  layouts often change over time) have their footers read, through the table's own lister and
  the session's footer cache (so the same footers serve the pruning later);
* for each sampled file, the share of the *sampled* key range its [min, max] spans; the median
  share is the column's **spread**: about 1.0 for files in arrival order, about 1/k for a
  partition sorted by the key and cut into k files;
* statistics can pay when the spread is at most :data:`SPREAD_LIMIT`;
* the same share per **row group** (every row group of the sampled footers): a table kept in
  few files sorted by the key (TPC-DS ``inventory``: one file, each row group one date) has a
  file spread of 1.0 but narrow row groups. A filter on such a column still pays: the pruned
  relation carries the filter's values as a range predicate that Spark pushes into Parquet,
  which then skips the row groups (``dpp.runtime.handoff`` on the SQL-text path,
  ``dpp.frontends.hook.row_filters`` in the optimizer hook). At least
  :data:`MIN_ROW_GROUPS` sampled row groups are needed for that verdict.

Values are compared through a numeric proxy of their order (strings by their first 8 bytes),
which is all a spread needs. The verdict only chooses whether to *try* statistics: the loader
still tests every file soundly, and stops reading footers when a first sample of them skips
nothing (see ``SplitLoader``'s ``stats_sample``).
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from hive_splits.footers import FooterCache, read_footer
from hive_splits.listing import FileEntry, Lister, LocalLister
from hive_splits.table import Table

__all__ = ["KeyProfile", "SPREAD_LIMIT", "MIN_ROW_GROUPS", "SAMPLE_FILES", "sample_files",
           "key_profile", "profile_column"]

# A file spanning three quarters of the key range can still be skipped by a filter with a few
# values; above that (arrival order: ~0.99) a skip is luck. The loader's own sample bounds the
# cost of a wrong "yes".
SPREAD_LIMIT = 0.75
SAMPLE_FOLDERS = 4
SAMPLE_FILES = 8
# fewer row groups than this skip too little to repay a build side (a dimension written as
# one file of a few row groups)
MIN_ROW_GROUPS = 16


@dataclass(frozen=True)
class KeyProfile:
    """The verdict on one column of one table, and what it rests on."""

    table: str
    column: str
    files_sampled: int
    spread: Optional[float]          # median share of the sampled range one file spans
    why: Optional[str] = None        # when spread is None: why it is unknown
    # median share one row group spans, over the sampled footers' row groups (None: fewer
    # than MIN_ROW_GROUPS of them had min/max)
    row_group_spread: Optional[float] = None
    row_groups: int = 0

    @property
    def files_can_pay(self) -> bool:
        return self.spread is not None and self.spread <= SPREAD_LIMIT

    @property
    def row_groups_can_pay(self) -> bool:
        return self.row_group_spread is not None and self.row_group_spread <= SPREAD_LIMIT

    @property
    def can_pay(self) -> bool:
        return self.files_can_pay or self.row_groups_can_pay

    def describe(self) -> str:
        head = f"{self.table}.{self.column}"
        verdict = "used" if self.can_pay else f"not used (above {SPREAD_LIMIT:.0%})"
        parts = []
        if self.spread is not None:
            parts.append(f"a file spans {self.spread:.0%} of the key range (median of "
                         f"{self.files_sampled} sampled footers)")
        if self.row_group_spread is not None:
            parts.append(f"a row group spans {self.row_group_spread:.0%} (median of "
                         f"{self.row_groups})")
        if not parts:
            return f"{head}: not used ({self.why})"
        if self.spread is None:
            parts.insert(0, f"files: {self.why}")
        return f"{head}: {'; '.join(parts)}: {verdict}"


def _spread_picks(items: Sequence[Any], k: int) -> list[Any]:
    """Up to ``k`` items evenly spaced over ``items``, first and last included."""
    n = len(items)
    if n <= k:
        return list(items)
    if k == 1:
        return [items[0]]
    idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})
    return [items[i] for i in idx]


def sample_files(table: Table, lister: Lister, folders: int = SAMPLE_FOLDERS,
                 files: int = SAMPLE_FILES) -> list[FileEntry]:
    """Up to ``files`` data files from up to ``folders`` leaf partitions spread over the table.

    Walks the partition levels from the root (a catalog table with partition locations of its
    own samples those instead), listing only the folders it samples: a few LIST calls.
    """
    leaves: list[str]
    cps = [cp for cp in (table.catalog_partitions or ()) if cp.location]
    if cps:
        from hive_splits.table import local_path

        leaves = [local_path(cp.location) for cp in _spread_picks(cps, folders)]
    else:
        current = [table.location]
        for _ in table.partition_columns:
            children = []
            for folder in current:
                dirs, _files = lister.list(folder)
                children.extend(d.path for d in dirs)
            current = _spread_picks(children, folders)
            if not current:
                return []
        leaves = current
    per_leaf = max(1, math.ceil(files / max(1, len(leaves))))
    out: list[FileEntry] = []
    for folder in leaves:
        _dirs, found = lister.list(folder)
        out.extend(_spread_picks(found, per_leaf))
    return _spread_picks(out, files)


def _order_proxy(v: Any, skip: int = 0) -> Optional[float]:
    """A float that orders like ``v`` (enough for a share of a range); None if none.
    Strings and bytes: 8 bytes from offset ``skip`` (past a prefix every sampled value shares,
    ``item-000123``)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float, decimal.Decimal)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, dt.datetime):
        base = v if v.tzinfo is None else v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return (base - dt.datetime(1970, 1, 1)).total_seconds()
    if isinstance(v, dt.date):
        return float(v.toordinal())
    if isinstance(v, str):
        v = v.encode("utf-8")
    if isinstance(v, (bytes, bytearray)):
        return float(int.from_bytes(bytes(v[skip:skip + 8]).ljust(8, b"\0"), "big"))
    return None


def _file_range(meta: Any, column: str) -> Optional[tuple[Any, Any]]:
    """[min, max] of ``column`` over the file's row groups (None: unknown)."""
    schema = meta.schema
    idx = next((i for i in range(meta.num_columns) if schema.column(i).path == column), None)
    if idx is None:
        return None
    lo = hi = None
    try:
        for r in range(meta.num_row_groups):
            stats = meta.row_group(r).column(idx).statistics
            if stats is None or not stats.has_min_max:
                continue
            a, b = stats.min, stats.max
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    except TypeError:   # values that do not order (should not happen within one column)
        return None
    return None if lo is None or hi is None else (lo, hi)


def _row_group_ranges(meta: Any, column: str) -> list[tuple[Any, Any]]:
    """[min, max] of ``column`` in each row group that has both."""
    schema = meta.schema
    idx = next((i for i in range(meta.num_columns) if schema.column(i).path == column), None)
    if idx is None:
        return []
    out = []
    for r in range(meta.num_row_groups):
        stats = meta.row_group(r).column(idx).statistics
        if stats is not None and stats.has_min_max:
            out.append((stats.min, stats.max))
    return out


def _median_share(raw: Sequence[tuple[Any, Any]]) -> Optional[float]:
    """The median share of the whole range one [min, max] of ``raw`` spans (None: fewer than
    two comparable ranges)."""
    skip = _shared_prefix([v for r in raw for v in r])
    ranges = []
    for lo, hi in raw:
        a, b = _order_proxy(lo, skip), _order_proxy(hi, skip)
        if a is not None and b is not None:
            ranges.append((a, b))
    if len(ranges) < 2:
        return None
    lo = min(a for a, _ in ranges)
    hi = max(b for _, b in ranges)
    if hi <= lo:  # every range holds one and the same value
        return 0.0
    return statistics.median((b - a) / (hi - lo) for a, b in ranges)


def _shared_prefix(values: Sequence[Any]) -> int:
    """Bytes every string/bytes value starts with (0 for other types)."""
    raw = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
    if not raw or not all(isinstance(v, (bytes, bytearray)) for v in raw):
        return 0
    return len(os.path.commonprefix([bytes(v) for v in raw]))


def key_profile(table: str, column: str, metas: Sequence[Any]) -> KeyProfile:
    """The spread of ``column`` over the footers ``metas`` (see the module docstring)."""
    try:
        groups = [r for m in metas for r in _row_group_ranges(m, column)]
        rg_spread = _median_share(groups) if len(groups) >= MIN_ROW_GROUPS else None
    except TypeError:   # values that do not order (should not happen within one column)
        groups, rg_spread = [], None
    extra = {"row_group_spread": rg_spread, "row_groups": len(groups)}
    raw = [r for r in (_file_range(m, column) for m in metas) if r is not None]
    spread = _median_share(raw)
    if spread is None:
        return KeyProfile(table, column, len(metas), None,
                          f"{len(raw)} of {len(metas)} sampled footers have min/max for it; "
                          f"at least 2 needed", **extra)
    return KeyProfile(table, column, len(raw), spread, **extra)


def profile_column(table: Table, column: str, lister: Optional[Lister] = None,
                   cache: Optional[FooterCache] = None,
                   reader: Optional[Callable[[str, int], Any]] = None) -> KeyProfile:
    """Samples ``table``'s files and profiles ``column``; any failure is a "not used" verdict
    that says why (statistics are an optimisation: never an error for the query)."""
    lst = (lister or table.lister or LocalLister()).fresh()
    try:
        picked = sample_files(table, lst)
    except Exception as exc:
        return KeyProfile(table.name, column, 0, None, f"cannot sample files: {exc}")
    if not picked:
        return KeyProfile(table.name, column, 0, None, "no data file found to sample")
    metas = []
    for f in picked:
        try:
            metas.append(read_footer(f.path, f.size, f.mtime_ns, cache,
                                     reader or lst.read_footer, f.change))
        except Exception:  # an unreadable footer: judged by the others
            continue
    return key_profile(table.name, column, metas)
